//! PDF, Word, OpenDocument, EPUB, man pages and Q&A tables, ingested with
//! the real embedded store and the real local model: each is found by a
//! question in its own words, under its own headings, a PDF passage with
//! its page; a scan and hostile files are skipped with a reason that says
//! what to do, and the files beside them are ingested.

use crate::support::common;

use std::io::Write;
use std::path::{Path, PathBuf};

use grace::KnowledgeBase;
use grace::ingest::{IngestOptions, IngestReport};
use grace::search::Passage;
use grace::store::PayloadFilter;

fn ingest(kb: &KnowledgeBase, paths: &[PathBuf]) -> IngestReport {
    kb.ingest(paths, &IngestOptions::default(), &mut |_| {})
        .unwrap()
}

fn top(kb: &KnowledgeBase, question: &str) -> Passage {
    kb.search(question, Some(1), None).unwrap().remove(0)
}

fn file_name(p: &Passage) -> &str {
    Path::new(&p.source)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
}

#[test]
fn every_document_format_is_found_under_its_own_headings() {
    let data = tempfile::tempdir().unwrap();
    let kb = common::open(common::config(data.path()));
    let documents = common::repo().join("tests/fixtures/documents");
    let r = ingest(
        &kb,
        &[common::repo().join("examples/kb"), documents.clone()],
    );
    assert_eq!((r.files_seen, r.added), (15, 14), "{r:?}");
    assert_eq!(r.skipped.len(), 1, "{r:?}");
    assert!(r.skipped[0].path.ends_with("scan.pdf"), "{r:?}");
    assert!(
        r.skipped[0]
            .reason
            .contains("without text on any of its 1 pages")
            && r.skipped[0].reason.contains("OCR"),
        "{r:?}"
    );

    // PDF: the outline's headings, and the page.
    let p = top(&kb, "How long are nightly backups kept?");
    assert_eq!(file_name(&p), "handbook.pdf", "{p:?}");
    assert_eq!(p.section, "2 Backups > 2.1 Retention");
    assert_eq!(p.page, Some(2));
    assert!(p.text.contains("35 days"), "{p:?}");

    // Word: headings from its styles, the two-column table as terms and
    // their descriptions.
    let p = top(&kb, "Which cluster versions does Orbit 4.2 support?");
    assert_eq!(file_name(&p), "release-notes.docx", "{p:?}");
    assert_eq!(p.section, "Orbit 4.2 > Supported clusters");
    assert!(p.text.contains("1.29\n: until March 2027"), "{p:?}");
    assert_eq!(p.page, None);

    // The same notes as ODT, under the same headings.
    let odt = std::fs::canonicalize(documents.join("release-notes.odt")).unwrap();
    let only = PayloadFilter::source(&odt.to_string_lossy());
    let p = kb
        .search(
            "Which cluster versions are supported?",
            Some(1),
            Some(&only),
        )
        .unwrap()
        .remove(0);
    assert_eq!(p.section, "Orbit 4.2 > Supported clusters");
    assert!(p.text.contains("1.29\n: until March 2027"), "{p:?}");

    // Man pages, plain and gzipped: NAME, OPTIONS, EXIT STATUS as sections.
    let p = top(
        &kb,
        "What exit code does orbit return when the server cannot be reached?",
    );
    assert_eq!(
        (file_name(&p), p.section.as_str()),
        ("orbit.1", "EXIT STATUS"),
        "{p:?}"
    );
    let p = top(&kb, "How often does the node agent report to the API?");
    assert_eq!(
        (file_name(&p), p.section.as_str()),
        ("orbit-agent.8.gz", "OPTIONS"),
        "{p:?}"
    );
    assert!(p.text.contains("--heartbeat seconds"), "{p:?}");

    // A Q&A table: the question is the heading.
    let p = top(&kb, "Am I allowed to deploy on a Friday afternoon?");
    assert_eq!(
        (file_name(&p), p.section.as_str()),
        ("faq.csv", "Can I deploy on Fridays?"),
        "{p:?}"
    );

    // EPUB: a chapter and its heading.
    let p = top(&kb, "Can a service write to its mounted volumes?");
    assert_eq!(
        (file_name(&p), p.section.as_str()),
        ("guide.epub", "Mounting volumes"),
        "{p:?}"
    );
}

#[tokio::test]
async fn an_answer_from_the_pdf_cites_its_page() {
    let data = tempfile::tempdir().unwrap();
    let grace = common::sample_service(common::config(data.path())).await;
    let outcome = grace
        .ask("How long are nightly backups kept?", Default::default())
        .await
        .unwrap();
    let answer = outcome.report.answer.expect("an answer");
    let cited = answer
        .citations
        .iter()
        .find(|c| {
            c.source
                .as_deref()
                .is_some_and(|s| s.ends_with("handbook.pdf"))
        })
        .unwrap_or_else(|| panic!("the handbook is cited: {answer:?}"));
    assert_eq!(cited.page, Some(2), "{answer:?}");
    assert!(answer.text.contains("35 days"), "{answer:?}");
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn zip_of(entries: &[(&str, Vec<u8>)]) -> Vec<u8> {
    zip_with(entries, zip::CompressionMethod::Deflated)
}

fn zip_with(entries: &[(&str, Vec<u8>)], method: zip::CompressionMethod) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default().compression_method(method);
    for (name, data) in entries {
        w.start_file(*name, options).unwrap();
        w.write_all(data).unwrap();
    }
    w.finish().unwrap().into_inner()
}

#[test]
fn bombs_and_broken_documents_are_skipped_with_reasons_and_the_rest_ingested() {
    let docs = tempfile::tempdir().unwrap();
    let d = docs.path();
    let write = |name: &str, bytes: &[u8]| std::fs::write(d.join(name), bytes).unwrap();
    write("good.md", b"# Good\n\nThe canteen opens at 11:30.\n");
    // 50 MB of zeros in a few tens of kilobytes, as a man page and as Word.
    let zeros = vec![0u8; 50_000_000];
    write("bomb.1.gz", &gzip(&zeros));
    write(
        "bomb.docx",
        &zip_of(&[("word/document.xml", zeros.clone())]),
    );
    // More entries than ingest.max_archive_entries (lowered below).
    let many: Vec<(String, Vec<u8>)> = (0..60)
        .map(|i| (format!("f{i}.xml"), b"<a/>".to_vec()))
        .collect();
    let many: Vec<(&str, Vec<u8>)> = many.iter().map(|(n, b)| (n.as_str(), b.clone())).collect();
    write("many.odt", &zip_of(&many));
    // A PDF cut in half, a ZIP that is not one, and text posing as a PDF.
    let pdf = std::fs::read(common::repo().join("examples/kb/handbook.pdf")).unwrap();
    write("cut.pdf", &pdf[..pdf.len() / 2]);
    write("fake.epub", b"PK\x03\x04 not really");
    write("fake.pdf", b"%PDF-1.7 and then nothing");
    // Word XML nested 100,000 deep (stored: deflated, its repetition would
    // pass for a bomb), and a Q&A table without its columns.
    let deep = format!(
        "<w:document><w:body>{}<w:p><w:r><w:t>deep text</w:t></w:r></w:p>{}</w:body></w:document>",
        "<w:sdt>".repeat(100_000),
        "</w:sdt>".repeat(100_000)
    );
    let stored = zip::CompressionMethod::Stored;
    write(
        "deep.docx",
        &zip_with(&[("word/document.xml", deep.into_bytes())], stored),
    );
    write("table.csv", b"title,body\nx,y\n");

    let data = tempfile::tempdir().unwrap();
    let mut config = common::config(data.path());
    config.ingest.max_archive_entries = 50;
    let kb = common::open(config);
    let r = ingest(&kb, &[d.to_path_buf()]);
    let reason = |name: &str| {
        r.skipped
            .iter()
            .find(|s| s.path.ends_with(name))
            .map(|s| s.reason.clone())
            .unwrap_or_else(|| panic!("{name} is not skipped: {r:?}"))
    };
    assert!(
        reason("bomb.1.gz").contains("ingest.max_compression_ratio"),
        "{r:?}"
    );
    assert!(
        reason("bomb.docx").contains("ingest.max_compression_ratio"),
        "{r:?}"
    );
    assert!(
        reason("many.odt").contains("ingest.max_archive_entries"),
        "{r:?}"
    );
    assert!(reason("fake.epub").contains("not a ZIP archive"), "{r:?}");
    assert!(reason("fake.pdf").contains("not a readable PDF"), "{r:?}");
    assert!(
        reason("table.csv").contains("ingest.qa_question_column"),
        "{r:?}"
    );
    // What could be read was: the good file, the deep one, and what pdf
    // recovers of the cut PDF (or a reason for it).
    let cut_read = !r.skipped.iter().any(|s| s.path.ends_with("cut.pdf"));
    assert_eq!(r.added, 2 + usize::from(cut_read), "{r:?}");
    assert_eq!(r.skipped.len(), 9 - r.added, "{r:?}");
    assert!(
        top(&kb, "When does the canteen open?")
            .text
            .contains("11:30")
    );
    let deep = kb.search("deep text", Some(5), None).unwrap();
    assert!(deep.iter().any(|p| file_name(p) == "deep.docx"), "{deep:?}");
}
