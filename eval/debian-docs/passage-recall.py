#!/usr/bin/env python3
"""Per-question retrieval for eval/debian-docs/{original,html}, down to the passage.

`grace eval` counts a question when a gold FILE is among the top-k passages'
files. A PDF manual is one file, so that cannot tell whether the PDF loader
finds the right place inside it. This script ingests a set's corpus into a
scratch store, asks every question with `grace ask --json`, takes the same
passages `grace eval` scores (the first search, top k), and reports

  file recall@1/@k     as `grace eval` does (a check that both agree), and
  passage recall@1/@k  a passage of a gold file that contains the question's
                       evidence (any 6 consecutive words of it, after case,
                       quotes and punctuation are folded), so the answer
                       itself was retrieved, not just its file,

overall and for the git pages and the four manuals apart, plus a TSV of
every answerable question (--tsv). Python 3 standard library only.

Usage: eval/debian-docs/passage-recall.py SET_DIR [--grace BIN] [-k 5]
           [--data-dir DIR] [--tsv FILE]
  SET_DIR is eval/debian-docs/original or eval/debian-docs/html; the evidence
  is read from ../questions-source.jsonl. GRACE_CONFIG and other GRACE_*
  variables pass through to grace.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

ASCII = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"',
                       "\u2026": "...", "\u00a0": " ", "\u200b": "", "\u2013": "-",
                       "\u2014": "-", "\u2010": "-", "\u2011": "-", "\u2212": "-"})
WINDOW = 6
# The four manuals (bash.pdf / bash.html, ...); every other file is a git page.
MANUALS = {"bash", "bashref", "standards", "maintain"}


def words(text):
    return re.findall(r"[a-z0-9]+", text.translate(ASCII).casefold())


def contains(passage, evidence):
    hay = " " + " ".join(words(passage)) + " "
    ew = words(evidence)
    if len(ew) <= WINDOW:
        return " " + " ".join(ew) + " " in hay
    return any(" " + " ".join(ew[i:i + WINDOW]) + " " in hay for i in range(len(ew) - WINDOW + 1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    ap.add_argument("set_dir")
    ap.add_argument("--grace", default="grace")
    ap.add_argument("-k", type=int, default=5)
    ap.add_argument("--data-dir", help="scratch store (default: a temporary folder; "
                    "an existing one is reused without ingesting again)")
    ap.add_argument("--tsv")
    args = ap.parse_args()

    set_dir = os.path.abspath(args.set_dir)
    with open(os.path.join(os.path.dirname(set_dir), "questions-source.jsonl"), encoding="utf-8") as f:
        evidence = {}
        for line in f:
            if line.strip():
                r = json.loads(line)
                ev = r.get("evidence")
                evidence[r["id"]] = [ev] if isinstance(ev, str) else (ev or [])
    with open(os.path.join(set_dir, "questions.jsonl"), encoding="utf-8") as f:
        questions = [json.loads(line) for line in f if line.strip()]

    tmp = None
    data_dir = args.data_dir
    if not data_dir:
        tmp = tempfile.TemporaryDirectory(prefix="grace-passage-recall-")
        data_dir = tmp.name
    env = dict(os.environ, GRACE_STORAGE__DATA_DIR=data_dir)
    if not os.path.isdir(os.path.join(data_dir, "collections")):
        subprocess.run([args.grace, "ingest", os.path.join(set_dir, "corpus")], env=env, check=True)

    rows = []
    for q in questions:
        if not q["answerable"]:
            continue
        out = subprocess.run([args.grace, "ask", "--json", q["question"]], env=env,
                             capture_output=True, text=True)
        run = json.loads(out.stdout)
        search = next((s for s in run.get("steps", []) if s["action"] == "rag_search"), None)
        passages = (search["result"]["output"]["data"] if search else [])[: args.k]
        gold = set(q["gold_sources"])
        files = [os.path.basename(p["source"]) for p in passages]
        exact = [os.path.basename(p["source"]) in gold and any(contains(p["text"], e) for e in evidence[q["id"]])
                 for p in passages]
        rows.append({
            "id": q["id"],
            "group": "manual" if any(g.split(".")[0] in MANUALS for g in gold) else "git",
            "file1": bool(files) and files[0] in gold,
            "filek": any(f in gold for f in files),
            "passage1": bool(exact) and exact[0],
            "passagek": any(exact),
            "files": files,
            "question": q["question"],
        })

    def share(rs, key):
        return sum(r[key] for r in rs) / len(rs) if rs else float("nan")

    k = args.k
    for name, rs in (("all", rows), ("git pages", [r for r in rows if r["group"] == "git"]),
                     ("manuals", [r for r in rows if r["group"] == "manual"])):
        print(f"{args.set_dir} {name} ({len(rs)} answerable): file recall@1 {share(rs, 'file1'):.3f}, "
              f"@{k} {share(rs, 'filek'):.3f}; passage recall@1 {share(rs, 'passage1'):.3f}, "
              f"@{k} {share(rs, 'passagek'):.3f}")
    if args.tsv:
        with open(args.tsv, "w", encoding="utf-8") as f:
            f.write("id\tgroup\tfile@1\tfile@k\tpassage@1\tpassage@k\ttop files\tquestion\n")
            for r in rows:
                f.write("\t".join([r["id"], r["group"]] + [str(int(r[c])) for c in
                                  ("file1", "filek", "passage1", "passagek")]
                                  + [" ".join(r["files"]), r["question"]]) + "\n")
    if tmp:
        tmp.cleanup()


if __name__ == "__main__":
    sys.exit(main())
