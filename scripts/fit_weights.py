"""Fits GRACE's default confidence weights (grace_config.yml,
confidence.weights) on its own training questions in users' words: the
same logistic model `grace calibrate` fits, on `examples/factor_probe.rs`
output for the users' words train split (eval/users-words), with L2
strength chosen by stratified 5-fold cross-validation as `grace calibrate`
chooses it.

    fit_weights.py OFF.jsonl [ON.jsonl]

OFF.jsonl: the probe with the reader off. Its factors fit the bias and the
retrieval and answer weights. Weights the train split cannot fit stay as
set by hand (HELD): identifier coverage (a third of its questions that name
an identifier name one the answer page never mentions -- the asker's own
file or host -- so the split would teach that a missing identifier is no
evidence, which git-config's questions about a variable the knowledge base
lacks contradict), groundedness (the extractive answerer copies sentences,
so its answers are grounded by construction and the weight cannot be told
from the bias; 6 keeps a model's ungrounded answer far below a grounded
one), the result count (a wider search after a weak first one returns 10
passages, so a fitted weight rewards the recovery for its size), a
follow-up's coverage (no conversations), the generator's self-assessment
(no language model offline) and the score statistics left at 0.
ON.jsonl (optional): the probe with the reader on; the reader's two weights
are then fitted with every other weight held at its fitted value.

Prints the weights as YAML for grace_config.yml, and the cross-validated
figures.
"""

import json
import math
import sys

import numpy as np

# Factor order and the feature transform of crates/grace-core/src/confidence/mod.rs.
FITTED = ["max_score", "margin", "neighbour_score", "query_coverage", "abstained"]
HELD = {"result_count": 0.5, "groundedness": 6.0, "mean_score": 0.0, "score_variance": 0.0, "min_score": 0.0, "citation_validity": 1.0,
        "self_assessment": 1.0, "identifier_coverage": 8.0, "follow_up_coverage": 10.0,
        # Only people's ratings make it (crates/grace/src/learn/mod.rs fits it).
        "document_history": 0.0}
READER = ["reader", "reader_margin"]
L2_GRID = [0.01, 0.1, 1.0, 10.0]
FOLDS = 5


def feature(name, value):
    if name == "result_count":
        return min(value / 10.0, 1.0)
    if name == "neighbour_score":
        return max(value - 0.5, 0.0)
    if name in ("identifier_coverage", "follow_up_coverage"):
        return value - 1.0
    if name == "reader":
        return value - 0.5
    return value


def load(path):
    rows = [json.loads(line) for line in open(path, encoding="utf-8") if line.strip()]
    # A question whose run produced no answer step is scored 0 (no factors).
    return [r for r in rows if r["factors"]], len(rows)


def design(rows, names):
    return np.array([[feature(n, r["factors"][n]) if n in r["factors"] else 0.0 for n in names]
                     for r in rows], dtype=float)


def offsets(rows):
    return np.array([sum(w * feature(n, r["factors"][n]) for n, w in HELD.items()
                         if n in r["factors"]) for r in rows], dtype=float)


def fit(X, y, offset, l2, bias=True):
    """L2 logistic regression by Newton's method, the bias unpenalised."""
    n, d = X.shape
    A = np.hstack([np.ones((n, 1)), X]) if bias else X
    w = np.zeros(A.shape[1])
    reg = np.eye(A.shape[1]) * l2
    if bias:
        reg[0, 0] = 0.0
    def objective(w):
        z = A @ w + offset
        return float(np.sum(np.logaddexp(0, z) - y * z) + 0.5 * w @ reg @ w)

    for _ in range(100):
        p = 1 / (1 + np.exp(-np.clip(A @ w + offset, -500, 500)))
        g = A.T @ (p - y) + reg @ w
        H = (A * (p * (1 - p))[:, None]).T @ A + reg + np.eye(A.shape[1]) * 1e-9
        step = np.linalg.solve(H, g)
        # Damped: halve the step until the penalised log loss falls.
        t, before = 1.0, objective(w)
        while t > 1e-6 and objective(w - t * step) > before:
            t /= 2
        w -= t * step
        if np.abs(t * step).max() < 1e-10:
            break
    return w


def folds(y):
    rng = np.random.default_rng(20261125)
    f = np.zeros(len(y), dtype=int)
    for label in (0, 1):
        idx = rng.permutation(np.flatnonzero(y == label))
        f[idx] = np.arange(len(idx)) % FOLDS
    return f


def log_loss(p, y):
    p = np.clip(p, 1e-12, 1 - 1e-12)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


def auroc(p, y):
    pos, neg = p[y == 1], p[y == 0]
    return float(((pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum())
                 / (len(pos) * len(neg)))


def ece(p, y, bins=10):
    err = 0.0
    for b in range(bins):
        m = (p >= b / bins) & ((p < (b + 1) / bins) | ((b == bins - 1) & (p == 1.0)))
        if m.any():
            err += m.mean() * abs(p[m].mean() - y[m].mean())
    return err


def cross_validated(X, y, offset, bias=True):
    """The L2 strength with the lowest out-of-fold log loss, and its
    out-of-fold probabilities."""
    f = folds(y)
    best = None
    for l2 in L2_GRID:
        p = np.zeros(len(y))
        for k in range(FOLDS):
            tr, te = f != k, f == k
            w = fit(X[tr], y[tr], offset[tr], l2, bias)
            A = np.hstack([np.ones((te.sum(), 1)), X[te]]) if bias else X[te]
            p[te] = 1 / (1 + np.exp(-np.clip(A @ w + offset[te], -500, 500)))
        loss = log_loss(p, y)
        if best is None or loss < best[1]:
            best = (l2, loss, p)
    return best


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    rows, total = load(sys.argv[1])
    y = np.array([1.0 if r["right"] else 0.0 for r in rows])
    X = design(rows, FITTED)
    off = offsets(rows)
    l2, loss, p = cross_validated(X, y, off)
    w = fit(X, y, off, l2)
    weights = {"bias": w[0], **dict(zip(FITTED, w[1:])), **HELD}
    print(f"# fitted on {total} questions ({len(rows)} with an answer step, {int(y.sum())} right); "
          f"L2 {l2}; out of fold: AUROC {auroc(p, y):.3f}, ECE {ece(p, y):.3f}, log loss {loss:.3f}")
    if len(sys.argv) == 3:
        on, _ = load(sys.argv[2])
        y_on = np.array([1.0 if r["right"] else 0.0 for r in on])
        base = np.array([weights["bias"] + sum(weights[n] * feature(n, r["factors"][n])
                                               for n in FITTED + list(HELD) if n in r["factors"])
                         for r in on])
        Xr = design(on, READER)
        l2r, loss_r, pr = cross_validated(Xr, y_on, base, bias=False)
        wr = fit(Xr, y_on, base, l2r, bias=False)
        weights.update(dict(zip(READER, wr)))
        print(f"# reader weights fitted with the others held, on the run with the reader on; "
              f"L2 {l2r}; out of fold: AUROC {auroc(pr, y_on):.3f}, ECE {ece(pr, y_on):.3f}")
    order = ["bias", "result_count", "max_score", "mean_score", "score_variance", "min_score",
             "margin", "neighbour_score", "query_coverage", "groundedness", "citation_validity",
             "self_assessment", "abstained", "reader", "reader_margin", "identifier_coverage",
             "follow_up_coverage", "document_history"]
    print("  weights:")
    for n in order:
        if n in weights:
            held = "  # held" if n in HELD else ""
            print(f"    {n}: {round(float(weights[n]), 2)}{held}")


if __name__ == "__main__":
    main()
