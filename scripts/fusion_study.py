"""How should GRACE fuse its dense and lexical rankings? Every variant on
the same raw rankings (examples/ranking_probe.rs writes them), side by side.

    fusion_study.py --train DIR [--set NAME=DIR ...]

Each DIR is a ranking_probe output folder. Parameters of the variants that
have any are chosen on --train only (a grid, best mean of recall@1 and
recall@5 there); every set is then scored with them. Recall is GRACE's:
a set's answerable questions, the corpus file of the first passage (of
any of the first five) among the gold files.
"""

import argparse
import json
import math
import re
import sys
from pathlib import Path

import numpy as np


def load(folder):
    folder = Path(folder)
    chunks = [json.loads(line) for line in open(folder / "chunks.jsonl")]
    dim = 384
    vectors = np.fromfile(folder / "chunk_vectors.f32", dtype="<f4").reshape(-1, dim)
    rows = [json.loads(line) for line in open(folder / "rankings.jsonl")]
    qv = np.fromfile(folder / "question_vectors.f32", dtype="<f4").reshape(-1, dim)
    index = {c["id"]: i for i, c in enumerate(chunks)}
    # Document frequency of each lexical term, for IDF.
    df = {}
    for c in chunks:
        for t in set(c["terms"]):
            df[t] = df.get(t, 0) + 1
    n = len(chunks)
    idf = {t: math.log(1 + (n - d + 0.5) / (d + 0.5)) for t, d in df.items()}
    for c in chunks:
        c["termset"] = set(c["terms"])
        c["lower"] = (c["section"] + "\n" + c["text"]).lower()
    return {"chunks": chunks, "vectors": vectors, "rows": rows, "qv": qv, "index": index,
            "idf": idf, "n": n}


def occurs_whole(text, needle):
    for m in re.finditer(re.escape(needle), text):
        before = text[m.start() - 1] if m.start() > 0 else ""
        after = text[m.end():m.end() + 2]
        if before and (before.isalnum() or before == "_"):
            continue
        if after[:1] and (after[:1].isalnum() or after[:1] == "_"):
            continue
        if after[:1] in (".", "-") and after[1:2] and (after[1:2].isalnum() or after[1:2] == "_"):
            continue
        return True
    return False


class Query:
    """One question's candidates with their features."""

    def __init__(self, data, r, qi, depth):
        self.row = r
        self.gold = set(r["gold"])
        self.answerable = r["answerable"]
        chunks, index = data["chunks"], data["index"]
        dense = [(index[i], s) for i, s in r["dense"][:depth] if i in index]
        lexical = [(index[i], s) for i, s in r["lexical"][:depth] if i in index]
        self.dense_rank = {c: k + 1 for k, (c, _) in enumerate(dense)}
        self.lex_rank = {c: k + 1 for k, (c, _) in enumerate(lexical)}
        self.bm25 = dict(lexical)
        cands = list(dict.fromkeys([c for c, _ in dense] + [c for c, _ in lexical]))
        self.cands = cands
        q = data["qv"][qi]
        self.cos = {c: float(data["vectors"][c] @ q) for c in cands}
        self.files = {c: chunks[c]["file"] for c in cands}
        self.ids = r["identifiers"]
        self.qterms = [t for t in r["terms"]]
        idf = data["idf"]
        self.qidf = {t: idf.get(t, math.log(1 + (data["n"] + 0.5) / 0.5)) for t in self.qterms}
        self.known = {t: t in idf for t in self.qterms}
        self.pins = {}
        if self.ids:
            for c, _ in lexical[:10]:
                found = sum(1 for w in self.ids if occurs_whole(chunks[c]["lower"], w))
                if found:
                    self.pins[c] = found
        self.chunks = chunks

    def coverage(self, c):
        """IDF-weighted share of the question's terms in chunk c."""
        total = sum(self.qidf.values())
        if total == 0:
            return 0.0
        have = self.chunks[c]["termset"]
        return sum(w for t, w in self.qidf.items() if t in have) / total


def recall(queries, order_fn):
    a1 = a5 = n = 0
    for q in queries:
        if not q.answerable:
            continue
        order = order_fn(q)
        n += 1
        if order and q.files[order[0]] in q.gold:
            a1 += 1
        if any(q.files[c] in q.gold for c in order[:5]):
            a5 += 1
    return a1 / max(n, 1), a5 / max(n, 1)


def pinned(q, order, on=True):
    if not on or not q.pins:
        return order
    return sorted(order, key=lambda c: -q.pins.get(c, 0))


# --------------------------------------------------------------- variants --
def v_dense(q, p):
    return sorted(q.dense_rank, key=lambda c: q.dense_rank[c])


def v_lexical(q, p):
    return sorted(q.lex_rank, key=lambda c: q.lex_rank[c])


def v_rrf(q, p):
    k = p.get("k", 60.0)
    wl = p["id_w"] if q.ids else p["w"]
    score = {}
    for c in q.cands:
        s = 0.0
        if c in q.dense_rank:
            s += 1.0 / (k + q.dense_rank[c])
        if c in q.lex_rank:
            s += wl / (k + q.lex_rank[c])
        score[c] = s
    order = sorted(q.cands, key=lambda c: (-score[c], q.cands.index(c)))
    return pinned(q, order, p.get("pin", True))


def v_convex(q, p):
    """cosine + beta * BM25 / best BM25 (cosines of lexical-only hits from
    their stored vectors)."""
    top = max(q.bm25.values()) if q.bm25 else 1.0
    beta = p["id_beta"] if q.ids else p["beta"]
    score = {c: q.cos[c] + beta * q.bm25.get(c, 0.0) / top for c in q.cands}
    return pinned(q, sorted(q.cands, key=lambda c: -score[c]), p.get("pin", True))


def v_coverage(q, p):
    """cosine + beta * IDF-weighted coverage of the question's terms."""
    beta = p["id_beta"] if q.ids else p["beta"]
    score = {c: q.cos[c] + beta * q.coverage(c) for c in q.cands}
    return pinned(q, sorted(q.cands, key=lambda c: -score[c]), p.get("pin", True))


def v_guard(q, p):
    """RRF, but the dense first hit keeps first place unless the fused
    winner's lexical evidence is strong (an identifier pin, or its BM25
    coverage of the question's IDF mass at least `cov` more than the dense
    first's)."""
    order = v_rrf(q, p)
    if not order:
        return order
    dense_first = min(q.dense_rank, key=q.dense_rank.get) if q.dense_rank else None
    if dense_first is None or order[0] == dense_first or order[0] in q.pins:
        return order
    if q.coverage(order[0]) - q.coverage(dense_first) >= p["cov"]:
        return order
    return [dense_first] + [c for c in order if c != dense_first]


VARIANTS = {
    "dense": (v_dense, [{}]),
    "lexical": (v_lexical, [{}]),
    "rrf (GRACE today: 0.3 / 2.0, k 60)": (v_rrf, [{"w": 0.3, "id_w": 2.0}]),
    "rrf, weights fitted": (v_rrf, [{"w": w, "id_w": i, "k": k}
                                    for w in (0.0, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0)
                                    for i in (0.5, 1.0, 2.0, 3.0) for k in (10.0, 60.0)]),
    "convex cos + b*bm25/max": (v_convex, [{"beta": b, "id_beta": i}
                                          for b in (0.0, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3)
                                          for i in (0.05, 0.1, 0.2, 0.3, 0.5)]),
    "convex cos + b*coverage": (v_coverage, [{"beta": b, "id_beta": i}
                                            for b in (0.0, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3)
                                            for i in (0.05, 0.1, 0.2, 0.3, 0.5)]),
    "rrf + dense-first guard": (v_guard, [{"w": w, "id_w": 2.0, "cov": c}
                                          for w in (0.3, 0.5, 1.0)
                                          for c in (0.1, 0.2, 0.3, 0.5)]),
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--train", required=True)
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--depth", type=int, default=40)
    ap.add_argument("--only", default=None)
    args = ap.parse_args()
    sets = [("train", args.train)] + [tuple(s.split("=", 1)) for s in args.set]
    data = {}
    for name, folder in sets:
        d = load(folder)
        data[name] = [Query(d, r, i, args.depth) for i, r in enumerate(d["rows"])]
        print(f"{name}: {len(data[name])} questions, {d['n']} chunks", file=sys.stderr)
    names = [n for n, _ in sets]
    learned_variant(data["train"])
    print("| variant | params (fitted on train) | " + " | ".join(f"{n} r@1 / r@5" for n in names) + " |")
    print("|---|---|" + "---|" * len(names))
    for label, (fn, grid) in VARIANTS.items():
        if args.only and args.only not in label:
            continue
        best, best_p = None, None
        for p in grid:
            r1, r5 = recall(data["train"], lambda q: fn(q, p))
            if best is None or (r1 + r5) > best:
                best, best_p = r1 + r5, p
        cells = []
        for n in names:
            r1, r5 = recall(data[n], lambda q: fn(q, best_p))
            cells.append(f"{r1:.3f} / {r5:.3f}")
        shown = {k: v for k, v in best_p.items() if not isinstance(v, list)}
        print(f"| {label} | {json.dumps(shown)} | " + " | ".join(cells) + " |", flush=True)


# ------------------------------------------------------------ more variants --
def v_convex2(q, p):
    """cosine + beta * BM25/max + gamma * coverage."""
    top = max(q.bm25.values()) if q.bm25 else 1.0
    beta = p["id_beta"] if q.ids else p["beta"]
    score = {c: q.cos[c] + beta * q.bm25.get(c, 0.0) / top + p["gamma"] * q.coverage(c)
             for c in q.cands}
    return pinned(q, sorted(q.cands, key=lambda c: -score[c]), p.get("pin", True))


def v_convex_peak(q, p):
    """cosine + beta(q) * BM25/max, beta growing with how far the best BM25
    score stands above the rest (z-score of the top over the top 40)."""
    if not q.bm25:
        return v_dense(q, p)
    vals = sorted(q.bm25.values(), reverse=True)
    top = vals[0]
    mean = sum(vals) / len(vals)
    sd = (sum((v - mean) ** 2 for v in vals) / len(vals)) ** 0.5 or 1.0
    z = (top - mean) / sd
    beta = (p["id_beta"] if q.ids else p["beta"]) * min(max(z / p["z0"], 0.0), p["cap"])
    score = {c: q.cos[c] + beta * q.bm25.get(c, 0.0) / top for c in q.cands}
    return pinned(q, sorted(q.cands, key=lambda c: -score[c]), p.get("pin", True))


VARIANTS.update({
    "convex cos + b*bm25/max + g*coverage": (v_convex2, [
        {"beta": b, "id_beta": i, "gamma": g}
        for b in (0.0, 0.05, 0.1, 0.15, 0.2) for i in (0.2, 0.3, 0.5)
        for g in (0.0, 0.1, 0.2, 0.3)]),
    "convex, weight by BM25 peak": (v_convex_peak, [
        {"beta": b, "id_beta": i, "z0": z, "cap": c}
        for b in (0.1, 0.15, 0.2, 0.3) for i in (0.3, 0.5) for z in (2.0, 3.0, 4.0)
        for c in (1.0, 2.0)]),
    "convex cos + b*bm25/max, no pin": (v_convex, [{"beta": b, "id_beta": i, "pin": False}
                                                   for b in (0.05, 0.1, 0.15, 0.2)
                                                   for i in (0.2, 0.3, 0.5, 1.0)]),
})



def v_agree(q, p):
    """A per-query choice between the rankings by their agreement: the
    convex fusion when the dense and lexical top 5 share at least `t`
    passages (or the question names an identifier), else the dense ranking
    alone."""
    dense_top = set(sorted(q.dense_rank, key=q.dense_rank.get)[:5])
    lex_top = set(sorted(q.lex_rank, key=q.lex_rank.get)[:5])
    if q.ids or len(dense_top & lex_top) >= p["t"]:
        return v_convex(q, p)
    return pinned(q, v_dense(q, p))


VARIANTS["choose by agreement: convex when the top 5 share t passages, else dense"] = (
    v_agree, [{"t": t, "beta": b, "id_beta": i}
              for t in (1, 2, 3, 4, 5) for b in (0.1, 0.15, 0.2, 0.3) for i in (0.3, 0.5)])



QUOTED = re.compile(r"[\"“`][^\"”`]{6,}[\"”`]|(?<![A-Za-z])['‘][^'’]{6,}['’](?![A-Za-z])")


def v_quoted(q, p):
    """The convex fusion, with a quoted string in the question (an error
    message pasted in) weighing the lexical side like an identifier."""
    top = max(q.bm25.values()) if q.bm25 else 1.0
    if q.ids:
        beta = p["id_beta"]
    elif QUOTED.search(q.row["question"]):
        beta = p["quote_beta"]
    else:
        beta = p["beta"]
    score = {c: q.cos[c] + beta * q.bm25.get(c, 0.0) / top for c in q.cands}
    return pinned(q, sorted(q.cands, key=lambda c: -score[c]))


def v_rare(q, p):
    """The convex fusion with the lexical weight scaled by the question's
    rarest term (its IDF over `r0`, capped): rare words are where exact
    matching knows more than the embedding."""
    top = max(q.bm25.values()) if q.bm25 else 1.0
    rarest = max(q.qidf.values()) if q.qidf else 0.0
    scale = min(rarest / p["r0"], p["cap"])
    beta = (p["id_beta"] if q.ids else p["beta"]) * scale
    score = {c: q.cos[c] + beta * q.bm25.get(c, 0.0) / top for c in q.cands}
    return pinned(q, sorted(q.cands, key=lambda c: -score[c]))


VARIANTS["convex, quoted strings weigh like identifiers"] = (
    v_quoted, [{"beta": 0.15, "id_beta": 0.3, "quote_beta": b}
               for b in (0.0, 0.1, 0.15, 0.2, 0.3, 0.5)])
VARIANTS["convex, weight by the rarest question term"] = (
    v_rare, [{"beta": b, "id_beta": 0.3, "r0": r, "cap": c}
             for b in (0.1, 0.15, 0.2, 0.3) for r in (4.0, 6.0, 8.0) for c in (1.0, 1.5, 2.0)])

# ------------------------------------------------------------ learned --
def features(q, c):
    """One candidate's features for the learned pointwise ranking."""
    top = max(q.bm25.values()) if q.bm25 else 1.0
    return [
        q.cos[c],
        q.bm25.get(c, 0.0) / top,
        1.0 / math.log2(1 + q.dense_rank[c]) if c in q.dense_rank else 0.0,
        1.0 / math.log2(1 + q.lex_rank[c]) if c in q.lex_rank else 0.0,
        float(c in q.dense_rank and c in q.lex_rank),
        q.coverage(c),
        float(q.pins.get(c, 0)),
        float(bool(q.ids)) * q.bm25.get(c, 0.0) / top,
    ]


def fit_pointwise(queries, l2):
    """L2 logistic regression (Newton) on every candidate of the answerable
    questions: is its corpus file a gold one."""
    xs, ys = [], []
    for q in queries:
        if not q.answerable:
            continue
        for c in q.cands:
            xs.append([1.0] + features(q, c))
            ys.append(float(q.files[c] in q.gold))
    x, y = np.array(xs), np.array(ys)
    w = np.zeros(x.shape[1])
    reg = l2 * np.eye(x.shape[1])
    reg[0, 0] = 0.0
    for _ in range(25):
        pr = 1.0 / (1.0 + np.exp(-(x @ w)))
        grad = x.T @ (pr - y) + reg @ w
        hess = (x * (pr * (1 - pr))[:, None]).T @ x + reg
        w -= np.linalg.solve(hess, grad)
    return [float(v) for v in w]


def v_learned(q, p):
    w = p["w"]
    score = {c: w[0] + sum(a * b for a, b in zip(w[1:], features(q, c))) for c in q.cands}
    return sorted(q.cands, key=lambda c: -score[c])


def learned_variant(train):
    """Registered once the train split is loaded: its weights are fitted on
    it, one fit per L2 strength."""
    VARIANTS["learned pointwise (logistic on 8 features)"] = (
        v_learned, [{"l2": l2, "w": fit_pointwise(train, l2)} for l2 in (0.1, 10.0)])


if __name__ == "__main__":
    main()
