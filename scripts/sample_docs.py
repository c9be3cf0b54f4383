#!/usr/bin/env python3
"""Writes the sample knowledge base's binary documents (examples/kb):
handbook.pdf (an outline and five pages), release-notes.docx (Word's own
heading styles and a table); and, for the loaders' tests
(tests/fixtures/documents/), the same release notes as release-notes.odt,
a two-chapter guide.epub and scan.pdf, a page with a drawing and no text.
The files are committed; run this only to change them.

Needs python-docx 1.2, fpdf2 2.8 and odfpy 1.4 (PyPI):

    python3 -m venv ~/.cache/grace/docgen
    ~/.cache/grace/docgen/bin/pip install python-docx==1.2.0 fpdf2==2.8.9 odfpy==1.4.1
    ~/.cache/grace/docgen/bin/python scripts/sample_docs.py
"""

import datetime
import os
import zipfile

import docx
from fpdf import FPDF
from odf.opendocument import OpenDocumentText
from odf.table import Table, TableCell, TableColumn, TableRow
from odf.text import H, P

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
KB = os.path.join(ROOT, "examples", "kb")
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "documents")
# Fixed dates keep the files byte-identical from run to run.
WHEN = datetime.datetime(2026, 11, 27, tzinfo=datetime.timezone.utc)

HANDBOOK = [
    (
        "1 About this handbook",
        1,
        [
            "This handbook describes how the platform team runs Orbit, the "
            "internal deployment service: backups, incident severities and data "
            "retention. It is reviewed every quarter by the platform team.",
        ],
    ),
    (
        "2 Backups",
        1,
        [
            "Orbit backs up its deployment database and every project's "
            "deployment history nightly at 02:00 UTC. Backups are encrypted and "
            "copied to a second region.",
        ],
    ),
    (
        "2.1 Retention",
        2,
        [
            "Nightly backups are kept for 35 days. The backup taken on the first "
            "day of each month is kept for one year.",
            "To restore a project's deployment history from a backup, run orbit "
            "restore history --project <name> --date <YYYY-MM-DD>; a restore "
            "needs the approval of a second platform engineer.",
        ],
    ),
    (
        "3 Incident severities",
        1,
        [
            "SEV1: production deployments fail for every team, or the deployment "
            "API is down. The on-call engineer responds within 15 minutes, around "
            "the clock.",
            "SEV2: one team cannot deploy to production. Response within one "
            "hour during working hours.",
            "SEV3: staging or tooling problems. Handled through the PLAT ticket "
            "queue within one working day.",
        ],
    ),
    (
        "4 Data retention",
        1,
        [
            "Deployment logs are kept for 90 days and audit logs for seven "
            "years. Pod logs fetched with orbit logs come from the cluster and "
            "are only available for 7 days.",
        ],
    ),
]


def handbook_pdf(path):
    pdf = FPDF()
    pdf.set_creation_date(WHEN)
    pdf.set_title("Orbit platform handbook")
    pdf.set_author("Platform team")
    pdf.set_font("Helvetica", size=11)
    pdf.add_page()
    pdf.set_font("Helvetica", "B", 20)
    pdf.cell(0, 12, "Orbit platform handbook", new_x="LMARGIN", new_y="NEXT")
    for title, level, paragraphs in HANDBOOK:
        if level == 1 and title != HANDBOOK[0][0]:
            pdf.add_page()
        pdf.start_section(title, level=level - 1)
        pdf.set_font("Helvetica", "B", 16 if level == 1 else 13)
        pdf.cell(0, 10, title, new_x="LMARGIN", new_y="NEXT")
        pdf.set_font("Helvetica", size=11)
        for text in paragraphs:
            pdf.multi_cell(0, 6, text, new_x="LMARGIN", new_y="NEXT")
            pdf.ln(3)
    pdf.output(path)


def release_notes():
    return [
        ("Orbit release notes", 0, None),
        ("Orbit 4.2", 1, "Released on 3 November 2026."),
        (
            "New in 4.2",
            2,
            "Deployments can wait for a manual approval step: add "
            "approval: required to the environment in orbit.yml. The orbit "
            "status command shows the approver.",
        ),
        (
            "Supported clusters",
            2,
            None,
        ),
        ("Orbit 4.1", 1, "Released on 8 September 2026. Canary deployments "
         "send 5% of traffic to the new release for ten minutes before the rest."),
    ]


CLUSTERS = [("Cluster version", "Supported by Orbit 4.2"), ("1.31", "yes"), ("1.30", "yes"), ("1.29", "until March 2027")]


def release_notes_docx(path):
    d = docx.Document()
    d.core_properties.created = WHEN.replace(tzinfo=None)
    d.core_properties.modified = WHEN.replace(tzinfo=None)
    d.core_properties.author = "Platform team"
    for title, level, text in release_notes():
        d.add_heading(title, level=level)
        if text:
            d.add_paragraph(text)
        if title == "Supported clusters":
            table = d.add_table(rows=0, cols=2)
            for a, b in CLUSTERS:
                cells = table.add_row().cells
                cells[0].text, cells[1].text = a, b
    d.save(path)


def release_notes_odt(path):
    d = OpenDocumentText()
    for title, level, text in release_notes():
        d.text.addElement(H(outlinelevel=max(level, 1), text=title))
        if text:
            d.text.addElement(P(text=text))
        if title == "Supported clusters":
            table = Table(name="clusters")
            table.addElement(TableColumn(numbercolumnsrepeated=2))
            for a, b in CLUSTERS:
                row = TableRow()
                for value in (a, b):
                    cell = TableCell()
                    cell.addElement(P(text=value))
                    row.addElement(cell)
                table.addElement(row)
            d.text.addElement(table)
    d.save(path)


def scan_pdf(path):
    """A 'scanned' page: shapes only, no text layer."""
    pdf = FPDF()
    pdf.set_creation_date(WHEN)
    pdf.add_page()
    pdf.set_fill_color(60, 60, 60)
    for i in range(12):
        pdf.rect(20, 20 + i * 12, 150 - i * 5, 6, style="F")
    pdf.output(path)


CHAPTERS = [
    ("Mounting volumes", "Volumes are mounted read-only unless the service "
     "sets volumes.writable: true in orbit.yml."),
    ("Scheduled jobs", "A scheduled job runs at most once at a time; a run "
     "that is still going when the next is due is skipped, not queued."),
]


def guide_epub(path):
    """An EPUB 3 by hand: mimetype first and stored, a container, a
    package with its spine, one XHTML file a chapter."""
    manifest = "".join(
        f'<item id="c{i}" href="text/chapter{i}.xhtml" media-type="application/xhtml+xml"/>'
        for i in range(len(CHAPTERS))
    )
    spine = "".join(f'<itemref idref="c{i}"/>' for i in range(len(CHAPTERS)))
    opf = (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id">'
        '<metadata xmlns:dc="http://purl.org/dc/elements/1.1/">'
        '<dc:identifier id="id">orbit-guide</dc:identifier><dc:title>Orbit service guide</dc:title>'
        f'<dc:language>en</dc:language></metadata><manifest>{manifest}</manifest>'
        f'<spine>{spine}</spine></package>'
    )
    container = (
        '<?xml version="1.0"?><container version="1.0" '
        'xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles>'
        '<rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
        "</rootfiles></container>"
    )
    stamp = (2026, 11, 27, 0, 0, 0)
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(zipfile.ZipInfo("mimetype", stamp), "application/epub+zip")
        for name, data in [("META-INF/container.xml", container), ("OEBPS/content.opf", opf)] + [
            (
                f"OEBPS/text/chapter{i}.xhtml",
                '<?xml version="1.0" encoding="UTF-8"?><html xmlns="http://www.w3.org/1999/xhtml">'
                f"<head><title>{t}</title></head><body><h1>{t}</h1><p>{p}</p></body></html>",
            )
            for i, (t, p) in enumerate(CHAPTERS)
        ]:
            info = zipfile.ZipInfo(name, stamp)
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)


def main():
    os.makedirs(FIXTURES, exist_ok=True)
    handbook_pdf(os.path.join(KB, "handbook.pdf"))
    release_notes_docx(os.path.join(KB, "release-notes.docx"))
    release_notes_odt(os.path.join(FIXTURES, "release-notes.odt"))
    guide_epub(os.path.join(FIXTURES, "guide.epub"))
    scan_pdf(os.path.join(FIXTURES, "scan.pdf"))


if __name__ == "__main__":
    main()
