"""Which confidence factors tell "the passage that answers" from "a passage
about the same thing"? For each set: examples/factor_probe.rs output (what
GRACE's confidence saw, per question) joined with examples/ranking_probe.rs
output (chunks, lexical terms, rankings) for the same set.

    factor_study.py --train NAME [NAME=FACTORS.jsonl:PROBE_DIR ...]

Prints, per candidate signal and set, its AUROC alone (answerable vs
unanswerable, all and in-domain), then the out-of-fold AUROC of "right"
(answered from a gold source) of a logistic model on GRACE's factors with
and without each candidate (5 folds within each set, as `grace calibrate`
fits), and the same model fitted on the train set and scored on the others.

The factors are read as the confidence model sees them, from the probe's
"features" (GRACE's own transform, Factor::feature): probe output written
before the probe wrote them (2026-11-30) must be made again.
"""

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fusion_study import load  # noqa: E402

# GRACE's factors as its confidence model sees them (Factor::feature).
BASE = ["result_count", "max_score", "margin", "neighbour_score", "query_coverage",
        "groundedness", "citation_validity", "abstained", "identifier_coverage"]


def auroc(scores, labels):
    pos = np.array([s for s, y in zip(scores, labels) if y])
    neg = np.array([s for s, y in zip(scores, labels) if not y])
    if len(pos) == 0 or len(neg) == 0:
        return float("nan")
    greater = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(greater) / (len(pos) * len(neg))


def candidates(row, probe, tables):
    """New signals for one question. `tables`: IDF and chunk lookups."""
    out = {}
    chunks, index, idf, n = probe["chunks"], probe["index"], probe["idf"], probe["n"]
    ps = row["passages"]
    terms = tables["terms"][row["id"]]
    if not ps:
        return {k: 0.0 for k in ("lexical_agreement", "idf_coverage", "missing_rare",
                                 "unknown_terms", "top5_overlap")}
    top = chunks[index[ps[0]["id"]]]
    have = top["termset"]
    unseen = math.log(1 + (n + 0.5) / 0.5)
    weights = {t: idf.get(t, unseen) for t in terms}
    total = sum(weights.values()) or 1.0
    out["idf_coverage"] = sum(w for t, w in weights.items() if t in have) / total
    # Terms the knowledge base has, rare ones (IDF above the median of all
    # terms), that the top passage lacks: "payments", "winter".
    rare_cut = tables["rare_cut"]
    missing = [w for t, w in weights.items() if t in idf and w >= rare_cut and t not in have]
    out["missing_rare"] = sum(missing) / total
    out["unknown_terms"] = sum(1 for t in terms if t not in idf) / max(1, len(terms))
    lr = ps[0].get("lexical_rank")
    out["lexical_agreement"] = 1.0 / lr if lr else 0.0
    r = tables["rank"][row["id"]]
    d5 = set(i for i, _ in r["dense"][:5])
    l5 = set(i for i, _ in r["lexical"][:5])
    out["top5_overlap"] = len(d5 & l5) / 5.0
    return out


def folds(labels, k=5, seed=7):
    rng = np.random.default_rng(seed)
    idx = np.arange(len(labels))
    pos = rng.permutation(idx[np.array(labels, dtype=bool)])
    neg = rng.permutation(idx[~np.array(labels, dtype=bool)])
    f = np.zeros(len(labels), dtype=int)
    for i, j in enumerate(pos):
        f[j] = i % k
    for i, j in enumerate(neg):
        f[j] = i % k
    return f


def fit(X, y, l2=1.0):
    from sklearn.linear_model import LogisticRegression
    return LogisticRegression(C=1.0 / l2, max_iter=5000).fit(X, y)


def oof_auroc(X, y, k=5):
    y = np.array(y, dtype=int)
    if y.sum() < k or (1 - y).sum() < k:
        return float("nan")
    f = folds(y, k)
    p = np.zeros(len(y))
    for i in range(k):
        m = fit(X[f != i], y[f != i])
        p[f == i] = m.predict_proba(X[f == i])[:, 1]
    return auroc(p, y)


def matrix(rows, names):
    X = []
    for r in rows:
        X.append([r["x"].get(n, 0.0) for n in names])
    return np.array(X, dtype=float)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--train", required=True)
    ap.add_argument("sets", nargs="+", help="NAME=FACTORS.jsonl:PROBE_DIR")
    args = ap.parse_args()
    data = {}
    for s in args.sets:
        name, rest = s.split("=", 1)
        factors_path, probe_dir = rest.split(":", 1)
        probe = load(probe_dir)
        ranks = {r["id"]: r for r in probe["rows"]}
        idfs = sorted(probe["idf"].values())
        tables = {"terms": {r["id"]: r["terms"] for r in probe["rows"]}, "rank": ranks,
                  "rare_cut": idfs[len(idfs) // 2]}
        sims_path = Path(factors_path).with_suffix(".anssim.json")
        sims = json.loads(sims_path.read_text()) if sims_path.exists() else None
        reads_path = Path(factors_path).with_suffix(".reader.json")
        reads = json.loads(reads_path.read_text()) if reads_path.exists() else None
        rows = []
        for line in open(factors_path):
            r = json.loads(line)
            # GRACE's own transform (Factor::feature), as the probe wrote it.
            x = dict(r["features"])
            for k in BASE:
                x.setdefault(k, 0.0 if k != "identifier_coverage" else 0.0)
            x.update(candidates(r, probe, tables))
            if sims is not None:
                x["answer_similarity"] = sims.get(r["id"], -1.0)
            if reads is not None:
                got = reads.get(r["id"], {})
                x["reader_first"] = got.get("reader_first", 0.0) - 0.5
                x["reader_top"] = got.get("reader_top", 0.0) - 0.5
                x["reader_margin_new"] = got.get("reader_margin", 0.0)
            rows.append({"x": x, "answerable": r["answerable"], "in_domain": r["in_domain"],
                         "right": r["right"], "answered": bool(r["factors"]),
                         "confidence": r["confidence"]})
        data[name] = rows
        print(f"{name}: {len(rows)} questions", file=sys.stderr)
    cands = ["lexical_agreement", "idf_coverage", "missing_rare", "unknown_terms", "top5_overlap",
             "answer_similarity", "reader_first", "reader_top", "reader_margin_new"]
    names = list(data)
    print("\n## Alone: AUROC answerable vs unanswerable, all / in-domain (higher = more "
          "answerable; below 0.5 = the signal points the other way)\n")
    print("| signal | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for c in ["confidence", "max_score", "query_coverage", "groundedness", "neighbour_score"] + cands:
        cells = []
        for n in names:
            rows = data[n]
            v = [r["confidence"] if c == "confidence" else r["x"].get(c, 0.0) for r in rows]
            a = auroc(v, [r["answerable"] for r in rows])
            ind = [(vv, r["answerable"]) for vv, r in zip(v, rows) if r["answerable"] or r["in_domain"]]
            b = auroc([p for p, _ in ind], [y for _, y in ind])
            cells.append(f"{a:.3f} / {b:.3f}")
        print(f"| {c} | " + " | ".join(cells) + " |")

    print("\n## Out of fold (5 folds within each set): AUROC of \"right\", GRACE's factors "
          "+ one candidate\n")
    print("| model | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    variants = [("GRACE's factors", BASE)] + [(f"+ {c}", BASE + [c]) for c in cands] + [
        ("+ all candidates", BASE + cands)]
    for label, cols in variants:
        cells = []
        for n in names:
            rows = data[n]
            cells.append(f"{oof_auroc(matrix(rows, cols), [r['right'] for r in rows]):.3f}")
        print(f"| {label} | " + " | ".join(cells) + " |")

    print(f"\n## Fitted on {args.train}, scored on each set: AUROC of \"right\" / answerable "
          "in-domain\n")
    print("| model | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for label, cols in variants:
        train = data[args.train]
        m = fit(matrix(train, cols), [int(r["right"]) for r in train])
        cells = []
        for n in names:
            rows = data[n]
            p = m.predict_proba(matrix(rows, cols))[:, 1]
            p = [pp if r["answered"] else 0.0 for pp, r in zip(p, rows)]
            a = auroc(p, [r["right"] for r in rows])
            ind = [(pp, r["answerable"]) for pp, r in zip(p, rows) if r["answerable"] or r["in_domain"]]
            b = auroc([q for q, _ in ind], [y for _, y in ind])
            cells.append(f"{a:.3f} / {b:.3f}")
        print(f"| {label} | " + " | ".join(cells) + " |")
    report_models(data, args.train, [
        ("hand-set weights (GRACE today)", hand_set),
        ("fitted on train: GRACE's factors", fitted_scorer(BASE)),
        ("fitted on train: + lexical_agreement", fitted_scorer(BASE + ["lexical_agreement"])),
        ("fitted on train: + lexical_agreement, top5_overlap",
         fitted_scorer(BASE + ["lexical_agreement", "top5_overlap"])),
        ("fitted on train: + reader_first", fitted_scorer(BASE + ["reader_first"])),
        ("fitted on train, identifier_coverage held at 8", fixed_scorer(BASE, {"identifier_coverage": 8.0})),
        ("... + lexical_agreement", fixed_scorer(BASE + ["lexical_agreement"], {"identifier_coverage": 8.0})),
        ("... + lexical_agreement, top5_overlap", fixed_scorer(BASE + ["lexical_agreement", "top5_overlap"], {"identifier_coverage": 8.0})),
    ])




def passing_at(scores, labels, recall=0.8):
    """Share of negatives at or above the threshold keeping `recall` of positives."""
    pos = sorted((s for s, y in zip(scores, labels) if y), reverse=True)
    neg = [s for s, y in zip(scores, labels) if not y]
    if not pos or not neg:
        return float("nan")
    k = max(1, math.ceil(recall * len(pos)))
    t = pos[k - 1]
    return sum(1 for s in neg if s >= t) / len(neg)


def ece(scores, labels, bins=10):
    total, err = len(scores), 0.0
    for b in range(bins):
        lo, hi = b / bins, (b + 1) / bins
        idx = [i for i, s in enumerate(scores) if (lo <= s < hi) or (b == bins - 1 and s == 1.0)]
        if idx:
            conf = sum(scores[i] for i in idx) / len(idx)
            acc = sum(labels[i] for i in idx) / len(idx)
            err += len(idx) / total * abs(conf - acc)
    return err


def report_models(data, train_name, models):
    """Eval-style figures of confidence models: AUROC all / in-domain of
    answerable, unanswerable passing at 80%, ECE against "right"."""
    names = list(data)
    print("\n## Confidence models: AUROC answerable all / in-domain, unanswerable passing @80%, "
          "ECE (right)\n")
    print("| model | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for label, scorer in models:
        cells = []
        for n in names:
            rows = data[n]
            p = scorer(rows, data[train_name])
            a = auroc(p, [r["answerable"] for r in rows])
            ind = [(pp, r["answerable"]) for pp, r in zip(p, rows) if r["answerable"] or r["in_domain"]]
            b = auroc([q for q, _ in ind], [y for _, y in ind])
            pas = passing_at(p, [r["answerable"] for r in rows])
            e = ece(list(p), [int(r["right"]) for r in rows])
            cells.append(f"{a:.3f} / {b:.3f}, {pas:.2f}, {e:.3f}")
        print(f"| {label} | " + " | ".join(cells) + " |")


def fitted_scorer(cols, l2=1.0):
    def score(rows, train):
        m = fit(matrix(train, cols), [int(r["right"]) for r in train], l2)
        p = m.predict_proba(matrix(rows, cols))[:, 1]
        return [pp if r["answered"] else 0.0 for pp, r in zip(p, rows)]
    return score


def hand_set(rows, train):
    return [r["confidence"] for r in rows]



def fit_offset(X, y, offset, l2=1.0, iters=200):
    """L2 logistic regression (Newton) with a fixed offset in the logit."""
    n, d = X.shape
    A = np.hstack([np.ones((n, 1)), X])
    w = np.zeros(d + 1)
    y = np.asarray(y, dtype=float)
    reg = np.eye(d + 1) * l2
    reg[0, 0] = 0.0
    for _ in range(iters):
        z = A @ w + offset
        p = 1 / (1 + np.exp(-z))
        g = A.T @ (p - y) + reg @ w
        H = (A * (p * (1 - p))[:, None]).T @ A + reg
        step = np.linalg.solve(H, g)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w


def fixed_scorer(cols, fixed):
    """Fitted on train with some weights held at given values."""
    def score(rows, train):
        free = [c for c in cols if c not in fixed]
        off_t = sum(fixed[c] * matrix(train, [c])[:, 0] for c in fixed)
        w = fit_offset(matrix(train, free), [int(r["right"]) for r in train], off_t)
        off = sum(fixed[c] * matrix(rows, [c])[:, 0] for c in fixed)
        z = w[0] + matrix(rows, free) @ w[1:] + off
        p = 1 / (1 + np.exp(-z))
        return [pp if r["answered"] else 0.0 for pp, r in zip(p, rows)]
    return score


if __name__ == "__main__":
    main()
