"""How well does a reader model rerank and judge GRACE's passages? On
ranking_probe outputs (examples/ranking_probe.rs), for each question the
best --depth passages of GRACE's fusion (cosine + beta * BM25/best BM25) are
read by an int8 ONNX reader, one pair per call as GRACE reads them, and the
script prints, per set: recall@1 and @5 of the fused order and of the order
reranked by the reader (fused rank as a tie-break prior), and the AUROC of
the reader's best probability for answerable vs unanswerable questions
(all, in-domain).

    reader_study.py --model DIR [--max-length N] [--depth 5] NAME=DIR ...

Scores are cached per (model, question, passage) in --cache.
"""

import argparse
import hashlib
import json
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fusion_study import Query, load, v_convex  # noqa: E402

FUSION = {"beta": 0.15, "id_beta": 0.3}


def auroc(pairs):
    pos = [s for s, y in pairs if y]
    neg = [s for s, y in pairs if not y]
    if not pos or not neg:
        return float("nan")
    wins = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


class Reader:
    def __init__(self, folder, max_length, cache):
        import onnxruntime as ort
        from tokenizers import Tokenizer
        folder = Path(folder)
        so = ort.SessionOptions()
        so.intra_op_num_threads = 2
        self.session = ort.InferenceSession(str(folder / "model.onnx"), so)
        self.tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tok.enable_truncation(max_length, strategy="longest_first")
        self.key = hashlib.sha256((folder / "model.onnx").read_bytes()).hexdigest()[:12] + f"-{max_length}"
        self.cache_path = Path(cache) / f"reader-{self.key}.json"
        self.cache = json.loads(self.cache_path.read_text()) if self.cache_path.exists() else {}

    def logit(self, question, passage):
        k = hashlib.sha256((question + "\x00" + passage).encode()).hexdigest()[:20]
        if k not in self.cache:
            enc = self.tok.encode(question, passage)
            feed = {
                "input_ids": np.array([enc.ids], dtype=np.int64),
                "attention_mask": np.array([enc.attention_mask], dtype=np.int64),
                "token_type_ids": np.array([enc.type_ids], dtype=np.int64),
            }
            self.cache[k] = float(self.session.run(["logits"], feed)[0][0][0])
        return self.cache[k]

    def save(self):
        self.cache_path.write_text(json.dumps(self.cache))


def study(name, folder, reader, depth, prior):
    data = load(folder)
    rows = []
    for i, r in enumerate(data["rows"]):
        q = Query(data, r, i, 40)
        fused = v_convex(q, FUSION)[:depth]
        logits = [reader.logit(r["question"], data["chunks"][c]["text"]) for c in fused]
        rows.append((q, fused, logits))
    out = {}
    for label, key in (("fused", None), ("reranked", "rerank")):
        a1 = a5 = n = 0
        for q, fused, logits in rows:
            if not q.answerable:
                continue
            order = fused
            if key:
                order = [c for _, c in sorted(
                    ((-(l - prior * math.log(1 + k)), c) for k, (c, l) in enumerate(zip(fused, logits))),
                    key=lambda x: x[0])]
            n += 1
            a1 += bool(order) and q.files[order[0]] in q.gold
            a5 += any(q.files[c] in q.gold for c in order[:5])
        out[label] = (a1 / max(n, 1), a5 / max(n, 1))
    best = [(max(l) if l else -20.0, q) for q, _, l in rows]
    out["auroc"] = auroc([(s, q.answerable) for s, q in best])
    out["auroc_in_domain"] = auroc([(s, q.answerable) for s, q in best
                                    if q.answerable or q.row["in_domain"]])
    top1 = [(q.cos[f[0]] if f else -1.0, q) for q, f, _ in rows]
    out["cos_auroc_in_domain"] = auroc([(s, q.answerable) for s, q in top1
                                        if q.answerable or q.row["in_domain"]])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--max-length", type=int, default=128)
    ap.add_argument("--depth", type=int, default=5)
    ap.add_argument("--prior", type=float, default=1.0,
                    help="rerank by logit - prior * ln(1 + fused rank)")
    ap.add_argument("--cache", default=str(Path.home() / ".cache/grace/reader-study"))
    ap.add_argument("sets", nargs="+")
    args = ap.parse_args()
    Path(args.cache).mkdir(parents=True, exist_ok=True)
    reader = Reader(args.model, args.max_length, args.cache)
    print(f"| set | fused r@1 / r@5 | reranked r@1 / r@5 | reader AUROC all / in-domain | top-1 cosine in-domain |")
    print("|---|---|---|---|---|")
    for s in args.sets:
        name, folder = s.split("=", 1)
        f = study(name, folder, reader, args.depth, args.prior)
        reader.save()
        print(f"| {name} | {f['fused'][0]:.3f} / {f['fused'][1]:.3f} | {f['reranked'][0]:.3f} / "
              f"{f['reranked'][1]:.3f} | {f['auroc']:.3f} / {f['auroc_in_domain']:.3f} | "
              f"{f['cos_auroc_in_domain']:.3f} |", flush=True)


if __name__ == "__main__":
    main()
