#!/usr/bin/env python3
"""The knowledge bases GRACE's default confidence weights are fitted on
(self-calibration), built from documentation that Debian packages ship.
scripts/defaults-corpora downloads and extracts the packages; this file
says which, and lays out their corpora.

    python3 scripts/defaults_corpora.py packages
        the pinned packages, one "NAME VERSION" a line (a knowledge base's
        own package, then the one its licence comes from where that differs)
    python3 scripts/defaults_corpora.py layout --cache DIR
        from the packages extracted under DIR/pkgs/NAME_VERSION, writes
        DIR/<kb>/corpus (copies, the relative paths kept; .md.gz unpacked)
        and DIR/<kb>/SOURCE, then prints a table of the corpora

Standard library only. Exit status: 0 done, 1 a package is missing or a
corpus is out of its bounds, 2 a bad argument.
"""

import argparse
import gzip
import html.parser
import os
import re
import shutil
import sys

# GRACE's defaults (crates/grace-core/src/config/mod.rs, IngestConfig): files over this are
# skipped by an ingest, so they are left out here (none are, today).
MAX_FILE_BYTES = 10_000_000
# GRACE chunks about 200 words with 30 repeated: words / 180 estimates chunks.
WORDS_PER_CHUNK = 180
# Pages with fewer words are redirects or empty stubs.
MIN_WORDS = 30
# Bounds a corpus (estimated chunks) and all of them together must keep.
KB_CHUNKS = (500, 3_000)
TOTAL_CHUNKS = 10_000

# Each knowledge base: the package and its pinned bookworm version, the
# folder inside the package that is the corpus's root (relative paths below
# it are kept), the file names taken (a regular expression on the relative
# path), those left out (and why, in the comments), and where the licence
# comes from.
KBS = [
    {
        "name": "nodejs-api",
        "package": "nodejs-doc",
        "version": "18.20.4+dfsg-1~deb12u3",
        "subject": "JavaScript runtime API reference (Markdown)",
        "root": "usr/share/doc/nodejs",
        # The Markdown sources (gzipped by dh_compress); the .html and .json
        # pages are renderings of the same text.
        "take": r"^api/[^/]+\.md(\.gz)?$",
        # index.md: a list of links.
        "drop": r"^api/index\.md",
    },
    {
        "name": "sqlite",
        "package": "sqlite3-doc",
        "version": "3.40.1-2+deb12u2",
        "subject": "embedded SQL database: SQL dialect, internals, tools (hand-written HTML)",
        "root": "usr/share/doc/sqlite3",
        # Top-level articles only: c3ref/ and session/ are one page per C
        # symbol, syntax/ railroad diagrams, releaselog/ release notes.
        "take": r"^[^/]+\.html$",
        "drop": r"^(" + "|".join([
            # generated lists: requirement ids, the one-page C API (c3ref/
            # again), cross-reference and keyword indexes, opcode table
            "requirements", "capi3ref", r"doc_\w+_crossref", "keyword_index", "opcode",
            # release history and news
            "changes", "oldnews", "news", "chronology",
            # tables of contents and site maps
            "index", "docs", "sitemap", "toc",
            # a byte-for-byte copy of fileformat.html
            "fileformat2",
        ]) + r")\.html$",
    },
    {
        "name": "postfix",
        "package": "postfix-doc",
        "version": "3.7.11-0+deb12u1",
        "subject": "mail server administration: READMEs and manual pages (HTML)",
        "root": "usr/share/doc/postfix",
        # html/ holds the READMEs and the manual pages; the README files
        # beside it are plain-text copies of the same READMEs.
        "take": r"^html/[^/]+\.html$",
        "drop": r"^html/index\.html$",
    },
    {
        "name": "gimp",
        "package": "gimp-help-en",
        "version": "2.10.34-2",
        "subject": "image editing application: user manual (DocBook HTML)",
        "root": "usr/share/gimp/2.0/help/en",
        "take": r"^[^/]+\.html$",
        # The GFDL's text and the legal notice, the table of contents, the
        # bibliography (a list of links) and the "help is missing" page.
        "drop": r"^(gfdl-.*|legal|index|bibliography|help-missing)\.html$",
        # /usr/share/doc/gimp-help-en is a link to gimp-help-common.
        "licence_package": "gimp-help-common",
        "licence_version": "2.10.34-2",
    },
    {
        "name": "gnucash",
        "package": "gnucash-docs",
        "version": "4.13-1",
        "subject": "personal and business accounting: tutorial guide and help manual (DocBook HTML)",
        "root": "usr/share/doc/gnucash-docs",
        # English only: the -de, -it, -ja and -pt translations are left out.
        "take": r"^gnucash-(guide|help)-en/[^/]+\.html$",
        # The GFDL's text, the tables of contents, the authors list.
        "drop": r"/(fdl.*|index|authors)\.html$",
    },
]


def packages():
    """(name, version) of every package the corpora need, each once."""
    seen = []
    for kb in KBS:
        for pv in ((kb["package"], kb["version"]),
                   (kb.get("licence_package"), kb.get("licence_version"))):
            if pv[0] and pv not in seen:
                seen.append(pv)
    return seen


class Text(html.parser.HTMLParser):
    """Visible text of a page, as GRACE's HTML loader reads it
    (crates/grace-core/src/ingest/load/html.rs): these elements' content is dropped, the
    <title> kept."""

    SKIPPED = {"script", "style", "noscript", "template", "svg", "nav", "iframe", "object",
               "canvas"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts, self.skip, self.head, self.title = [], 0, False, False

    def handle_starttag(self, tag, attrs):
        if tag in self.SKIPPED:
            self.skip += 1
        elif tag == "head":
            self.head = True
        elif tag == "title":
            self.title = True
        elif tag == "body":
            self.head = False

    def handle_endtag(self, tag):
        if tag in self.SKIPPED and self.skip:
            self.skip -= 1
        elif tag == "head":
            self.head = False
        elif tag == "title":
            self.title = False

    def handle_data(self, data):
        if not self.skip and (not self.head or self.title):
            self.parts.append(data)


def count_words(data, is_html):
    text = data.decode("utf-8", "replace")
    if is_html:
        p = Text()
        p.feed(text)
        p.close()
        text = " ".join(p.parts)
    return len(text.split())


def licence_line(path):
    """The licence of a copyright file: the License: line of the
    `Files: *` stanza (machine-readable format), else the first sentence
    that speaks of a licence, up to its first comma."""
    text = open(path, encoding="utf-8", errors="replace").read()
    stanzas = re.split(r"\n\s*\n", text)
    for s in stanzas:
        if re.search(r"^Files:\s*\*\s*$", s, re.M):
            m = re.search(r"^License:\s*(.+)$", s, re.M)
            if m:
                return m.group(1).strip()
    for s in stanzas:
        flat = " ".join(s.split())
        m = re.search(r"[^.]*\blicen[cs]ed\b.*?(?=[.,;:](\s|$))", flat, re.I)
        if m:
            return m.group(0).strip()
    return "unknown (see the package's copyright file)"


def same(src_bytes, dst):
    try:
        if os.path.getsize(dst) != len(src_bytes):
            return False
        with open(dst, "rb") as f:
            return f.read() == src_bytes
    except OSError:
        return False


def layout(cache):
    """Writes every corpus and SOURCE; returns a row of figures per KB."""
    rows = []
    for kb in KBS:
        pkgdir = os.path.join(cache, "pkgs", f"{kb['package']}_{kb['version']}")
        root = os.path.join(pkgdir, kb["root"])
        if not os.path.isdir(root):
            sys.exit(f"defaults_corpora: {root} is missing: run scripts/defaults-corpora")
        take, drop = re.compile(kb["take"]), re.compile(kb["drop"])
        kbdir = os.path.join(cache, kb["name"])
        corpus = os.path.join(kbdir, "corpus")
        wanted, words, dropped = set(), 0, {}
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            for f in sorted(filenames):
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, root)
                if not take.search(rel) or os.path.islink(path):
                    continue
                if drop.search(rel):
                    dropped.setdefault("left out by name", []).append(rel)
                    continue
                with open(path, "rb") as fh:
                    data = fh.read()
                if rel.endswith(".gz"):
                    data, rel = gzip.decompress(data), rel[:-3]
                if len(data) > MAX_FILE_BYTES:
                    dropped.setdefault(f"over {MAX_FILE_BYTES} bytes", []).append(rel)
                    continue
                n = count_words(data, rel.endswith(".html"))
                if n < MIN_WORDS:
                    dropped.setdefault(f"under {MIN_WORDS} words", []).append(rel)
                    continue
                words += n
                wanted.add(rel)
                dst = os.path.join(corpus, rel)
                if not same(data, dst):
                    os.makedirs(os.path.dirname(dst), exist_ok=True)
                    with open(dst + ".part", "wb") as out:
                        out.write(data)
                    os.replace(dst + ".part", dst)
        # What an earlier layout left that is no longer wanted.
        for dirpath, _, filenames in os.walk(corpus, topdown=False):
            for f in filenames:
                rel = os.path.relpath(os.path.join(dirpath, f), corpus)
                if rel not in wanted:
                    os.remove(os.path.join(dirpath, f))
            if dirpath != corpus and not os.listdir(dirpath):
                os.rmdir(dirpath)
        lp = kb.get("licence_package", kb["package"])
        lv = kb.get("licence_version", kb["version"])
        copyright_file = os.path.join(cache, "pkgs", f"{lp}_{lv}", "usr/share/doc", lp,
                                      "copyright")
        licence = licence_line(copyright_file)
        source = (f"package: {kb['package']}\nversion: {kb['version']}\n"
                  f"licence: {licence} (/usr/share/doc/{lp}/copyright)\n")
        path = os.path.join(kbdir, "SOURCE")
        if not os.path.exists(path) or open(path).read() != source:
            with open(path, "w") as out:
                out.write(source)
        rows.append({"kb": kb, "files": len(wanted), "words": words,
                     "chunks": round(words / WORDS_PER_CHUNK), "licence": licence,
                     "dropped": dropped})
    return rows


def report(rows):
    print("| name | package | version | files | words | est. chunks | licence | subject |")
    print("| --- | --- | --- | ---: | ---: | ---: | --- | --- |")
    for r in rows:
        kb = r["kb"]
        print(f"| {kb['name']} | {kb['package']} | {kb['version']} | {r['files']} | "
              f"{r['words']} | {r['chunks']} | {r['licence']} | {kb['subject']} |")
    total = sum(r["chunks"] for r in rows)
    print(f"| total | | | {sum(r['files'] for r in rows)} | {sum(r['words'] for r in rows)} "
          f"| {total} | | |")
    for r in rows:
        for why, files in sorted(r["dropped"].items()):
            shown = ", ".join(files[:12]) + (f", … ({len(files)} in all)" if len(files) > 12 else "")
            print(f"{r['kb']['name']}: {why}: {shown}", file=sys.stderr)
    bad = [r["kb"]["name"] for r in rows if not KB_CHUNKS[0] <= r["chunks"] <= KB_CHUNKS[1]]
    if bad or total > TOTAL_CHUNKS:
        print(f"defaults_corpora: out of bounds: {', '.join(bad) or 'the total'} "
              f"(each {KB_CHUNKS[0]}..{KB_CHUNKS[1]}, all {TOTAL_CHUNKS} estimated chunks)",
              file=sys.stderr)
        return 1
    return 0


def main(argv):
    ap = argparse.ArgumentParser(prog="defaults_corpora.py")
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("packages")
    lay = sub.add_parser("layout")
    lay.add_argument("--cache", required=True)
    args = ap.parse_args(argv)
    if args.cmd == "packages":
        for name, version in packages():
            print(name, version)
        return 0
    return report(layout(args.cache))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
