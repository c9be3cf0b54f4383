"""GRACE's questions in users' own words: the sections they were written for,
and the evaluation-set folders built from them (eval/users-words/README.md).

The questions themselves are hand-written (eval/users-words/questions/*.jsonl);
this script only does the mechanical parts, deterministically:

    users_words.py sections --out FILE
        Every section of the manuals below (documentation Debian packages
        ship), one JSON object a line: id, manual, split, file, title, body.
        Section ids are stable for the pinned package versions.
    users_words.py batches --sections FILE --out DIR
        The sections chosen to be written for (seeded, spread over files),
        as numbered batches a writer reads: id, title, text.
    users_words.py build --sections FILE --questions DIR --split train|dev --out DIR
        One split as an evaluation set in GRACE's format (corpus/ +
        questions.jsonl). Its corpus holds every section of its
        split's manuals (one Markdown file each, title as heading); a fixed
        share of the question sections is held out of the corpus, so their
        questions become in-domain unanswerable ones.

Manuals are split by whole manual: the dev manuals (bash-reference, sed-faq,
the GNU core utilities' manual) share no text with the training ones.
"""

import argparse
import glob
import hashlib
import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from train_reader import (  # noqa: E402  (the same parsers the reader's pairs use)
    Sections, clean, pod_sections, read_text, strip_numbering, text_sections,
)

SEED = 20261125

# Man pages, rendered by mandoc to HTML: (page file, package).
MAN_TRAIN = [
    "man8/apt-get.8", "man8/apt-cache.8", "man8/apt.8", "man8/apt-mark.8",
    "man5/apt.conf.5", "man5/sources.list.5", "man5/apt_preferences.5",
    "man1/dpkg.1", "man1/dpkg-query.1", "man1/ssh.1", "man5/ssh_config.5",
    "man1/ssh-keygen.1", "man1/scp.1", "man1/rsync.1", "man1/tar.1",
    "man1/find.1", "man1/grep.1", "man1/systemctl.1", "man1/journalctl.1",
    "man5/systemd.unit.5", "man5/systemd.service.5", "man5/journald.conf.5",
    "man8/ip.8", "man8/mount.8", "man5/fstab.5", "man8/useradd.8",
    "man1/passwd.1", "man1/ps.1", "man1/top.1", "man1/xz.1", "man1/gzip.1",
    "man1/curl.1", "man1/less.1", "man1/wget.1", "man1/make.1", "man1/tmux.1",
    "man1/gpg.1", "man1/zip.1", "man1/unzip.1", "man8/ss.8", "man8/lsof.8",
]
MAN_ROOT = "/usr/share/man"
PYTHON_DOC = "/usr/share/doc/python3.11/html"
APACHE_DOC = "/usr/share/doc/apache2-doc/manual/en"

# (manual, split, files, format). Formats: html, pod, text, man, info.
MANUALS = [
    ("debian-reference", "train", ["/usr/share/debian-reference/ch*.en.html"], "html"),
    ("apt-guide", "train", ["/usr/share/doc/apt-doc/guide.html/ch*.html",
                            "/usr/share/doc/apt-doc/offline.html/ch*.html"], "html"),
    ("git", "train", ["/usr/share/doc/git-doc/git-*.html"], "html"),
    ("postgresql", "train", ["/usr/share/doc/postgresql-doc-15/html/*.html"], "html"),
    ("perl-faq", "train", ["/usr/share/perl/5*/pod/perlfaq[1-9].pod"], "pod"),
    ("fetchmail-faq", "train", ["/usr/share/doc/fetchmail/fetchmail-FAQ.html"], "html"),
    ("ffmpeg-faq", "train", ["/usr/share/doc/ffmpeg/manual/faq.html"], "html"),
    ("lsof-faq", "train", ["/usr/share/doc/lsof/00FAQ.gz"], "text"),
    ("xz-faq", "train", ["/usr/share/doc/xz-utils/faq.txt.gz"], "text"),
    ("zlib-faq", "train", ["/usr/share/doc/zlib1g-dev/FAQ.gz"], "text"),
    ("man-admin", "train", [f"{MAN_ROOT}/{p}" for p in MAN_TRAIN], "man"),
    ("bash-reference", "dev", ["/usr/share/doc/bash-doc/bashref.html"], "html"),
    ("sed-faq", "dev", ["/usr/share/doc/sed/sedfaq.txt.gz"], "text"),
    ("coreutils", "dev", ["/usr/share/info/coreutils.info.gz"], "info"),
    # Held-out corpora, one evaluation set each, for choosing the fusion by
    # holding out one corpus at a time: another language's FAQ and
    # reference, another project's manual, a database's SQL reference.
    ("python-faq", "python", [f"{PYTHON_DOC}/faq/*.html"], "html"),
    ("python-reference", "python", [f"{PYTHON_DOC}/reference/*.html"], "html"),
    ("apache", "apache", [f"{APACHE_DOC}/{d}*.html" for d in
                          ("", "howto/", "rewrite/", "ssl/", "vhosts/")], "html"),
    ("sqlite", "sqlite", ["/usr/share/doc/sqlite3/faq.html",
                          "/usr/share/doc/sqlite3/lang_*.html",
                          "/usr/share/doc/sqlite3/pragma.html",
                          "/usr/share/doc/sqlite3/cli.html"], "html"),
]
# Debian packages the manuals come from (installed by scripts/build-users-words).
PACKAGES = [
    "debian-reference-en", "apt-doc", "git-doc", "postgresql-doc-15", "perl-doc",
    "fetchmail", "ffmpeg-doc", "lsof", "xz-utils", "zlib1g-dev", "bash-doc", "sed",
    "mandoc", "apt", "dpkg", "openssh-client", "rsync", "tar", "findutils", "grep",
    "systemd", "iproute2", "mount", "util-linux", "passwd", "procps", "gzip",
    "curl", "less", "wget", "make", "tmux", "gnupg", "zip", "unzip", "coreutils",
    "diffutils", "python3.11-doc", "apache2-doc", "sqlite3-doc",
]
# Git's configuration variables make up GRACE's own set eval/git-config;
# PostgreSQL's release notes repeat one heading per release.
EXCLUDED_FILES = re.compile(r"^(git-config\.html|release-.*)$")
GENERIC = re.compile(
    r"^(name|synopsis|see also|bugs|authors?|copyright|reporting bugs|colophon|"
    r"history|table of contents|contents|index|footnotes|legal notice|"
    r"availability|standards|conforming to|git|[\W\d_]*)$", re.I)
MIN_WORDS = 25
# Words of a section's body a writer is shown (the corpus keeps them all).
SHOWN_WORDS = 400

# Questions to write per manual (sections sampled, spread over files).
WANTED = {
    "debian-reference": 400, "apt-guide": 23, "git": 360, "postgresql": 330,
    "perl-faq": 160, "fetchmail-faq": 30, "ffmpeg-faq": 25, "lsof-faq": 50,
    "xz-faq": 17, "zlib-faq": 23, "man-admin": 320,
    "bash-reference": 200, "sed-faq": 37, "coreutils": 200,
    "python-faq": 70, "python-reference": 60, "apache": 130, "sqlite": 110,
}
# Every split: one evaluation set each.
SPLITS = sorted({split for _, split, _, _ in MANUALS})
# Share of a split's question sections left out of its corpus.
HELD_OUT = 0.2


class ManSections(Sections):
    """mandoc's HTML: h1 (section) and h2 (subsection) headings, and every
    tagged-list term that starts with an option or is short becomes a
    section of its own."""

    def handle_endtag(self, tag):
        if self.heading is not None and tag == "dt" and tag == self.heading[0]:
            text = clean(" ".join(self.heading[1]))
            self.heading = None
            if text.startswith("-") or (len(text.split()) <= 6 and len(text) <= 60):
                self.sections.append(self.current)
                self.current = [text, []]
            else:
                self.current[1].append("\n" + text + "\n")
            return
        super().handle_endtag(tag)


UNDERLINE = re.compile(r"^([=*.-])\1{2,}$")


def info_sections(text):
    """A GNU Info manual: nodes split at \\x1f, each cut at its underlined
    headings (a title line followed by a line of = * - or . as long)."""
    out = []
    for node in text.split("\x1f"):
        lines = node.splitlines()
        if not lines or not lines[0].strip() and len(lines) < 2:
            continue
        body_lines = [ln for ln in lines if not ln.startswith("File: ")]
        heading, body = None, []
        i = 0
        while i < len(body_lines):
            line = body_lines[i]
            nxt = body_lines[i + 1] if i + 1 < len(body_lines) else ""
            if line.strip() and UNDERLINE.match(nxt.strip()) and abs(len(nxt.strip()) - len(line.strip())) <= 2:
                if heading:
                    out.append((heading, body))
                heading, body = clean(line), []
                i += 2
                continue
            if line.startswith("* Menu:"):
                break
            if heading is not None:
                body.append(line)
            i += 1
        if heading:
            out.append((heading, body))
    result = []
    for heading, body in out:
        paragraphs = [clean(p) for p in re.split(r"\n\s*\n", "\n".join(body)) if clean(p)]
        heading = re.sub("[\u2018\u2019]", "'", heading)
        result.append((heading, "\n".join(paragraphs)))
    return result


def man_html(path):
    out = subprocess.run(["mandoc", "-Thtml", "-Ofragment", path], capture_output=True,
                         check=True)
    return out.stdout.decode("utf-8", errors="replace")


def page_title(path):
    """`tar(1)` for /usr/share/man/man1/tar.1.gz."""
    name = os.path.basename(path)
    name = re.sub(r"\.gz$", "", name)
    page, _, section = name.rpartition(".")
    return f"{page}({section})"


def html_title(manual, path):
    name = os.path.basename(path)
    if manual == "git":
        return re.sub(r"\.html$", "", name)
    return None


def load_sections():
    """Every section: dicts with id, manual, split, file, title, body."""
    rows = []
    for manual, split, patterns, fmt in MANUALS:
        files = []
        for p in patterns:
            matched = sorted(glob.glob(p) + glob.glob(p + ".gz"))
            # One file reached through two folders (perl's 5.36 -> 5.36.0) is read once.
            files.extend(os.path.realpath(f) for f in matched if os.path.isfile(f))
        files = sorted(set(files), key=lambda f: patterns_index(f, patterns))
        names = [os.path.basename(f) for f in files]
        count = 0
        for f in files:
            name = os.path.basename(f)
            if names.count(name) > 1:
                # Two guides with the same chapter names (apt-doc's guide and offline).
                name = f"{re.sub(r'[.]html$', '', os.path.basename(os.path.dirname(f)))}-{name}"
            if EXCLUDED_FILES.match(os.path.basename(f)):
                continue
            if fmt == "html" and html_lang(f) not in (None, "en"):
                # apache2-doc's en/ folder holds a few pages only in Portuguese.
                continue
            prefix = None
            if fmt == "pod":
                found = pod_sections(read_text(f))
            elif fmt == "text":
                found = text_sections(read_text(f))
            elif fmt == "info":
                found = info_sections(read_text(f))
            elif fmt == "man":
                parser = ManSections()
                parser.feed(man_html(f))
                found = parser.result()
                prefix = page_title(f)
            else:
                parser = Sections()
                parser.feed(read_text(f))
                found = parser.result()
                prefix = html_title(manual, f)
            parent = None
            for index, (heading, body) in enumerate(found):
                # Sphinx's and Apache's permalinks ("The raise statement ¶").
                heading = heading.replace("\u00b6", "").strip()
                heading = strip_numbering(re.sub(r"\s*#\s*TOC$", "", heading))
                if fmt == "man" and heading.isupper():
                    parent = heading.title()
                if not heading or GENERIC.match(heading) or len(body.split()) < MIN_WORDS:
                    continue
                title = heading
                if prefix:
                    title = f"{prefix}: {heading}"
                rows.append({
                    "id": f"{manual}/{name}/{index}",
                    "manual": manual,
                    "split": split,
                    "file": name,
                    "title": title,
                    "parent": parent if fmt == "man" else None,
                    "body": body,
                })
                count += 1
        print(f"users-words: {manual}: {len(files)} files, {count} sections", file=sys.stderr)
    return rows


def html_lang(path):
    """The language an HTML page declares (`<html lang="pt-br">`), if any."""
    found = re.search(r'<html[^>]*\blang="([^"]+)"', read_text(path)[:4000])
    return found.group(1).lower().split("-")[0] if found else None


def patterns_index(path, patterns):
    for i, p in enumerate(patterns):
        p = os.path.realpath(os.path.dirname(p)) + "/" + os.path.basename(p)
        if glob.fnmatch.fnmatch(path, p) or glob.fnmatch.fnmatch(path, p + ".gz"):
            return (i, path)
    return (len(patterns), path)


def write_jsonl(path, rows):
    data = "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows)
    Path(path).write_text(data, encoding="utf-8")
    return hashlib.sha256(data.encode("utf-8")).hexdigest()


def read_jsonl(path):
    rows = []
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                sys.exit(f"{path}:{n}: not JSON: {e}")
    return rows


def choose(sections):
    """The sections to write questions for: per manual, files in turn (a
    round robin over shuffled files), so no one page dominates."""
    rng = random.Random(SEED)
    chosen = []
    by_manual = {}
    for s in sections:
        by_manual.setdefault(s["manual"], []).append(s)
    for manual, rows in by_manual.items():
        by_file = {}
        for s in rows:
            if len(s["body"].split()) >= 40:
                by_file.setdefault(s["file"], []).append(s)
        files = sorted(by_file)
        rng.shuffle(files)
        for f in files:
            rng.shuffle(by_file[f])
        want = WANTED.get(manual, 0)
        taken = []
        while len(taken) < want and any(by_file[f] for f in files):
            for f in files:
                if by_file[f] and len(taken) < want:
                    taken.append(by_file[f].pop())
        chosen.extend(sorted(taken, key=lambda s: s["id"]))
    return chosen


def shown(body):
    words = body.split(" ")
    text = body if len(words) <= SHOWN_WORDS else " ".join(words[:SHOWN_WORDS]) + " [...]"
    return text


def cmd_sections(args):
    rows = load_sections()
    digest = write_jsonl(args.out, rows)
    print(f"users-words: {len(rows)} sections -> {args.out} (sha256 {digest})", file=sys.stderr)


def cmd_batches(args):
    sections = read_jsonl(args.sections)
    chosen = choose(sections)
    if args.manual:
        chosen = [s for s in chosen if s["manual"] in args.manual]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    size = args.size
    for b in range(0, len(chosen), size):
        batch = chosen[b:b + size]
        lines = []
        for s in batch:
            lines.append(f"=== {s['id']}\nmanual: {s['manual']}\ntitle: {s['title']}\n"
                         + (f"part of: {s['parent']}\n" if s.get("parent") else "")
                         + f"text:\n{shown(s['body'])}\n")
        (out / f"batch-{b // size:03d}.txt").write_text("\n".join(lines), encoding="utf-8")
    print(f"users-words: {len(chosen)} sections in {(len(chosen) + size - 1) // size} batches",
          file=sys.stderr)


def corpus_name(section_id):
    manual, file, index = section_id.split("/")
    stem = re.sub(r"[^A-Za-z0-9]+", "-", re.sub(r"\.(html|pod|gz|txt)$", "", file)).strip("-")
    return f"{manual}--{stem}--{int(index):04d}.md"


def cmd_build(args):
    sections = {s["id"]: s for s in read_jsonl(args.sections)}
    questions = []
    for path in sorted(Path(args.questions).glob("*.jsonl")):
        for n, q in enumerate(read_jsonl(path), 1):
            if "skip" in q:
                continue
            q["_where"] = f"{path.name}:{n}"
            questions.append(q)
    # Which split a question belongs to: its section's, or (out of domain) its own.
    # A question whose section is unknown (a manual whose installed version
    # differs from the pinned one) is left out, with a warning; the committed
    # splits are compared with what this gives (scripts/build-users-words).
    split_of = {manual: split for manual, split, _, _ in MANUALS}
    problems = []
    for q in questions:
        if q.get("kind") == "out-of-domain":
            if q.get("split") not in SPLITS:
                problems.append(f"{q['_where']}: an out-of-domain question needs split "
                                + "|".join(SPLITS))
        elif q.get("section") not in sections:
            manual = str(q.get("section")).split("/")[0]
            if split_of.get(manual) == args.split:
                print(f"users-words: warning: {q['_where']}: unknown section "
                      f"{q.get('section')!r} (the installed manual differs from the "
                      "pinned one?); the question is left out", file=sys.stderr)
            q["kind"] = "unknown-section"
    if problems:
        sys.exit("\n".join(problems[:50]))
    questions = [q for q in questions if q.get("kind") != "unknown-section"]
    for split in [args.split]:
        rng = random.Random(f"{SEED}-{split}")
        qs = [q for q in questions
              if (q.get("kind") == "out-of-domain" and q["split"] == split)
              or (q.get("kind") != "out-of-domain" and sections[q["section"]]["split"] == split)]
        asked = sorted({q["section"] for q in qs if q.get("kind") != "out-of-domain"})
        held = set(rng.sample(asked, round(len(asked) * HELD_OUT)))
        folder = Path(args.out)
        corpus = folder / "corpus"
        corpus.mkdir(parents=True, exist_ok=True)
        for old in corpus.glob("*.md"):
            old.unlink()
        files = 0
        for s in sections.values():
            if s["split"] != split or s["id"] in held:
                continue
            (corpus / corpus_name(s["id"])).write_text(
                f"# {s['title']}\n\n{s['body']}\n", encoding="utf-8")
            files += 1
        rows = []
        for q in qs:
            if q.get("kind") == "out-of-domain":
                rows.append({"id": q["id"], "question": q["question"], "answerable": False,
                             "gold_sources": [], "gold_answer": None, "kind": "out-of-domain",
                             "origin": "written for GRACE", "style": q.get("style")})
                continue
            s = sections[q["section"]]
            answerable = q["section"] not in held
            rows.append({
                "id": q["id"], "question": q["question"], "answerable": answerable,
                "gold_sources": [corpus_name(s["id"])] if answerable else [],
                "gold_answer": " ".join(s["body"].split()[:60]),
                "kind": "in-corpus" if answerable else "held-out-section",
                "origin": f"{s['manual']}: {s['title']}", "section": s["id"],
                "style": q.get("style"),
            })
        rows.sort(key=lambda r: r["id"])
        digest = write_jsonl(folder / "questions.jsonl", rows)
        kinds = {}
        for r in rows:
            kinds[r["kind"]] = kinds.get(r["kind"], 0) + 1
        print(f"users-words: {split}: {files} corpus files, {len(rows)} questions {kinds} "
              f"(sha256 {digest})", file=sys.stderr)


STOP = set("""a an the of to in on for and or with by is are was be it its this that
these those i my me we our you your how what why when where which who can do does did
should would could will not no from at as into about any some there their them they
if then than so but just get got want need use using set up out""".split())
STYLES = {"situation", "casual", "command", "error"}


def content_words(text):
    return [w for w in re.findall(r"[a-z0-9][a-z0-9_.+-]*", text.lower()) if w not in STOP]


def longest_run(a, b):
    """Length of the longest run of consecutive equal items in a and b."""
    best, prev = 0, {}
    for x in a:
        cur = {}
        for j, y in enumerate(b):
            if x == y:
                cur[j] = prev.get(j - 1, 0) + 1
                best = max(best, cur[j])
        prev = cur
    return best


def cmd_check(args):
    """Checks a written batch: JSON, ids, known sections, styles, and
    warns on wording copied from the title or the passage."""
    sections = {s["id"]: s for s in read_jsonl(args.sections)}
    errors, warnings, seen = [], [], set()
    rows = read_jsonl(args.file)
    styles = {}
    for n, q in enumerate(rows, 1):
        where = f"{args.file}:{n}"
        if "skip" in q:
            if q.get("section") not in sections:
                errors.append(f"{where}: unknown section {q.get('section')!r}")
            continue
        if q.get("kind") == "out-of-domain":
            if q.get("split") not in SPLITS or not q.get("question"):
                errors.append(f"{where}: out-of-domain rows need split and question")
            continue
        for key in ("id", "section", "question", "style"):
            if not q.get(key):
                errors.append(f"{where}: missing {key}")
        if q.get("id") in seen:
            errors.append(f"{where}: duplicate id {q.get('id')}")
        seen.add(q.get("id"))
        if q.get("section") not in sections:
            errors.append(f"{where}: unknown section {q.get('section')!r}")
            continue
        if q.get("style") not in STYLES:
            errors.append(f"{where}: style must be one of {sorted(STYLES)}")
        styles[q.get("style")] = styles.get(q.get("style"), 0) + 1
        question = q.get("question", "")
        s = sections[q["section"]]
        title = re.sub(r"^[^:]*\(\d\w*\): |^git-[\w-]+: ", "", s["title"])
        run = longest_run(content_words(question), content_words(title))
        if run >= 3:
            warnings.append(f"{where}: {run} content words in a row from the title: {question!r} / {title!r}")
        words = lambda t: re.findall(r"\w+", t.lower())
        copied = longest_run(words(question), words(shown(s["body"])))
        if copied >= 7:
            warnings.append(f"{where}: {copied} words in a row copied from the passage: {question!r}")
    for e in errors:
        print("error:", e)
    for w in warnings:
        print("warning:", w)
    print(f"{len(rows)} rows, styles {styles}, {len(errors)} errors, {len(warnings)} warnings")
    sys.exit(1 if errors else 0)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("sections")
    p.add_argument("--out", required=True)
    p = sub.add_parser("batches")
    p.add_argument("--sections", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--size", type=int, default=60)
    p.add_argument("--manual", action="append",
                   help="only these manuals' sections (default: every manual)")
    p = sub.add_parser("build")
    p.add_argument("--sections", required=True)
    p.add_argument("--questions", required=True)
    p.add_argument("--split", required=True, choices=SPLITS)
    p.add_argument("--out", required=True)
    p = sub.add_parser("check")
    p.add_argument("--sections", required=True)
    p.add_argument("file")
    args = parser.parse_args()
    {"sections": cmd_sections, "batches": cmd_batches, "build": cmd_build,
     "check": cmd_check}[args.command](args)


if __name__ == "__main__":
    main()
