"""Fits the map that puts a second embedding model's cosines on GRACE's
similarity scale (MiniLM's), for its model card's `similarity:` (see
`SimilarityScale` in crates/grace-core/src/embed/mod.rs).

GRACE's lexical weight, confidence weights, score threshold and the
extractive answerer's minimum similarity are in MiniLM's cosine units. A
model that spreads its cosines differently (multilingual-e5-small: a
question's best passages within 0.03 of each other around 0.85) needs them
mapped first. The map is affine and matches moments over the same questions
and passages embedded by both models:

- query: each question's 40 nearest passages (the fusion's candidates) by
  each model, the mean and standard deviation of their cosines;
- passage: a seeded sample of 400 passages, each one's mean cosine to its
  10 nearest others (the neighbour-similarity factor).

Two steps:

    cosine_alignment.py subset TRAIN OUT
        a seeded evaluation set from GRACE's users'-words train split
        (~/.cache/grace/users-words/train, scripts/build-users-words): 450
        answerable and 120 unanswerable questions, their gold sections and
        1,800 other sections of the same manuals (2,245 files, 2.5 MB).
    cosine_alignment.py fit MINILM_PROBE OTHER_PROBE
        each PROBE an examples/ranking_probe output folder for OUT, one per
        model (`GRACE_EMBEDDING__MODEL_DIR=models/e5` for the other); prints
        the card's `similarity:` block and the checks.

scripts/e5-model writes the figures fitted this way into models/e5's card.
"""

import json
import os
import random
import shutil
import sys

SEED = 7
CANDIDATES = 40
NEIGHBOURS = 10
PASSAGE_SAMPLE = 400


def subset(train, out):
    questions = [json.loads(line) for line in open(os.path.join(train, "questions.jsonl"))]
    rng = random.Random(SEED)
    answerable = [q for q in questions if q["answerable"]]
    unanswerable = [q for q in questions if not q["answerable"]]
    rng.shuffle(answerable)
    rng.shuffle(unanswerable)
    picked = answerable[:450] + unanswerable[:120]
    gold = {os.path.basename(s) for q in picked for s in q["gold_sources"]}
    files = sorted(os.listdir(os.path.join(train, "corpus")))
    others = [f for f in files if f not in gold]
    rng.shuffle(others)
    keep = sorted(gold | set(others[:1800]))
    os.makedirs(os.path.join(out, "corpus"), exist_ok=True)
    for name in keep:
        shutil.copy(os.path.join(train, "corpus", name), os.path.join(out, "corpus", name))
    with open(os.path.join(out, "questions.jsonl"), "w") as f:
        for q in picked:
            f.write(json.dumps(q, ensure_ascii=False) + "\n")
    print(f"{out}: {len(keep)} files, {len(picked)} questions", file=sys.stderr)


def load(folder):
    import numpy as np

    chunks = [json.loads(line) for line in open(os.path.join(folder, "chunks.jsonl"))]
    vectors = np.fromfile(os.path.join(folder, "chunk_vectors.f32"), dtype="<f4")
    vectors = vectors.reshape(len(chunks), -1)
    rows = [json.loads(line) for line in open(os.path.join(folder, "rankings.jsonl"))]
    questions = np.fromfile(os.path.join(folder, "question_vectors.f32"), dtype="<f4")
    return chunks, vectors, questions.reshape(len(rows), -1)


def moments(x, y):
    """The affine map taking x's mean and spread to y's."""
    scale = float(y.std() / x.std())
    return scale, float(y.mean() - scale * x.mean())


def fit(base_folder, other_folder):
    import numpy as np

    base, other = load(base_folder), load(other_folder)
    key = lambda c: (c["file"], c["text"])  # noqa: E731
    at = {key(c): i for i, c in enumerate(other[0])}
    pairs = [(i, at[key(c)]) for i, c in enumerate(base[0]) if key(c) in at]
    if len(pairs) < len(base[0]) * 0.95:
        sys.exit(f"only {len(pairs)} of {len(base[0])} chunks match: not the same set?")
    a = base[1][[i for i, _ in pairs]]
    b = other[1][[j for _, j in pairs]]
    sa, sb = base[2] @ a.T, other[2] @ b.T  # questions x passages

    def top(s, k):
        return np.concatenate([np.sort(row)[-k:] for row in s])

    q_scale, q_shift = moments(top(sb, CANDIDATES), top(sa, CANDIDATES))

    picked = np.random.default_rng(SEED).choice(len(pairs), PASSAGE_SAMPLE, replace=False)

    def neighbours(m):
        s = m[picked] @ m.T
        s[np.arange(len(picked)), picked] = -9.0
        return np.sort(s, axis=1)[:, -NEIGHBOURS:].mean(axis=1)

    na, nb = neighbours(a), neighbours(b)
    p_scale, p_shift = moments(nb, na)
    print("similarity:  # fitted by scripts/cosine_alignment.py")
    print(f"  query: {{scale: {q_scale:.2f}, shift: {q_shift:.2f}}}")
    print(f"  passage: {{scale: {p_scale:.2f}, shift: {p_shift:.2f}}}")
    first = lambda s: np.array([row.max() for row in s])  # noqa: E731
    margin = lambda s: np.array([np.diff(np.sort(row)[-2:])[0] for row in s])  # noqa: E731
    print(f"# {len(pairs)} passages, {sa.shape[0]} questions", file=sys.stderr)
    print(f"# top-1 cosine: base {first(sa).mean():.3f}, other {first(sb).mean():.3f}, "
          f"mapped {q_scale * first(sb).mean() + q_shift:.3f}", file=sys.stderr)
    print(f"# top-1 margin: base {margin(sa).mean():.4f}, other {margin(sb).mean():.4f}, "
          f"mapped {q_scale * margin(sb).mean():.4f}", file=sys.stderr)
    print(f"# neighbour similarity: base {na.mean():.3f}, other {nb.mean():.3f}, "
          f"mapped {p_scale * nb.mean() + p_shift:.3f}", file=sys.stderr)


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "subset":
        subset(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 4 and sys.argv[1] == "fit":
        fit(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
