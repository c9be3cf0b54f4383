//! Sections from page texts and headings, word matching, and whole PDFs
//! (outlines, cycles, font-size headings, limits, damaged files).

use super::sections::{find_words, sections, word_spans};
use super::*;
use crate::ingest::load::Section;

fn mark(page: usize, level: usize, title: &str) -> Mark {
    Mark {
        page,
        level,
        title: title.into(),
    }
}

fn outline(sections: &[Section]) -> Vec<(Option<u32>, String, String)> {
    sections
        .iter()
        .map(|s| (s.page, s.headings.join(" > "), s.text.trim().to_string()))
        .collect()
}

#[test]
fn pages_are_cut_at_their_headings() {
    let texts = [
        "Preface text.\n1 Getting started\nInstall it.".to_string(),
        "More on installing.\n1.1 Keys\nRotate keys.".to_string(),
        "Still keys.".to_string(),
    ];
    let marks = [mark(0, 1, "1 Getting started"), mark(1, 2, "1.1 Keys")];
    assert_eq!(
        outline(&sections(&texts, &marks)),
        [
            (Some(1), "".into(), "Preface text.".into()),
            (Some(1), "1 Getting started".into(), "Install it.".into()),
            (
                Some(2),
                "1 Getting started".into(),
                "More on installing.".into()
            ),
            (
                Some(2),
                "1 Getting started > 1.1 Keys".into(),
                "Rotate keys.".into()
            ),
            (
                Some(3),
                "1 Getting started > 1.1 Keys".into(),
                "Still keys.".into()
            ),
        ]
    );
}

#[test]
fn a_heading_missing_from_the_text_starts_where_the_last_one_ended() {
    let texts = ["Body of a page.".to_string()];
    let marks = [mark(0, 1, "Not In The Text"), mark(0, 1, "Nor This")];
    assert_eq!(
        outline(&sections(&texts, &marks)),
        [(Some(1), "Nor This".into(), "Body of a page.".into())]
    );
}

#[test]
fn words_match_across_line_breaks_and_on_char_boundaries() {
    let text = "héllo wörld\nthe  Big\nTitle here";
    let words = word_spans(text);
    assert_eq!(find_words(text, &words, 0, &["Big", "Title"]), Some(3));
    assert_eq!(find_words(text, &words, 4, &["Big", "Title"]), None);
    assert_eq!(find_words(text, &words, 0, &[]), None);
}

fn pages_and_headings(doc: &Document) -> Vec<(Option<u32>, String)> {
    doc.sections
        .iter()
        .map(|s| (s.page, s.headings.join(" > ")))
        .collect()
}

/// A PDF of `pages` pages (each with its text), whose catalog gets
/// `outline` (objects from number 100 on, written as given).
fn pdf(pages: &[&str], outline: &[(u32, String)]) -> Vec<u8> {
    let n = pages.len() as u32;
    let mut objects: Vec<(u32, String)> = vec![
        (
            1,
            format!(
                "<< /Type /Catalog /Pages 2 0 R{} >>",
                if outline.is_empty() {
                    ""
                } else {
                    " /Outlines 100 0 R"
                }
            ),
        ),
        (
            2,
            format!(
                "<< /Type /Pages /Kids [{}] /Count {n} >>",
                (0..n)
                    .map(|i| format!("{} 0 R", 10 + i))
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
        ),
        (
            3,
            "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".into(),
        ),
    ];
    for (i, text) in pages.iter().enumerate() {
        let i = i as u32;
        // A page's text, or its whole content stream when it starts
        // with BT.
        let stream = if text.starts_with("BT") {
            text.to_string()
        } else {
            format!("BT /F1 12 Tf 72 720 Td ({text}) Tj ET")
        };
        objects.push((
            10 + i,
            format!("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents {} 0 R >>", 50 + i),
        ));
        objects.push((
            50 + i,
            format!(
                "<< /Length {} >>\nstream\n{stream}\nendstream",
                stream.len()
            ),
        ));
    }
    objects.extend(outline.iter().cloned());
    objects.sort_by_key(|(id, _)| *id);
    let mut out = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (id, body) in &objects {
        offsets.push((*id, out.len()));
        out.extend(format!("{id} 0 obj\n{body}\nendobj\n").as_bytes());
    }
    let size = objects.iter().map(|(id, _)| id + 1).max().unwrap_or(1);
    let xref = out.len();
    out.extend(format!("xref\n0 {size}\n0000000000 65535 f \n").as_bytes());
    for id in 1..size {
        match offsets.iter().find(|(i, _)| *i == id) {
            Some((_, off)) => out.extend(format!("{off:010} 00000 n \n").as_bytes()),
            None => out.extend(b"0000000000 65535 f \n"),
        }
    }
    out.extend(
        format!("trailer\n<< /Size {size} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n").as_bytes(),
    );
    out
}

#[test]
fn headings_come_from_the_outline_and_pages_from_the_page_tree() {
    let outline = vec![
        (100, "<< /Type /Outlines /First 101 0 R /Last 102 0 R >>".to_string()),
        (101, "<< /Title (Intro) /Parent 100 0 R /Next 102 0 R /Dest [10 0 R /Fit] >>".into()),
        (102, "<< /Title (Keys) /Parent 100 0 R /Prev 101 0 R /First 103 0 R /A << /S /GoTo /D [11 0 R /Fit] >> >>".into()),
        (103, "<< /Title (Rotating) /Parent 102 0 R /Dest [12 0 R /Fit] >>".into()),
    ];
    let bytes = pdf(
        &[
            "Welcome text.",
            "Keys Keys are secrets.",
            "Rotating Rotate them monthly.",
        ],
        &outline,
    );
    let doc = load(&bytes, &Limits::default()).unwrap();
    let got = pages_and_headings(&doc);
    assert_eq!(
        got,
        [
            (Some(1), "Intro".to_string()),
            (Some(2), "Keys".to_string()),
            (Some(3), "Keys > Rotating".to_string()),
        ],
        "{doc:?}"
    );
}

#[test]
fn an_outline_with_cycles_ends() {
    // /Next back to itself, a child whose /First is its parent, and a
    // page tree whose kid is the tree: pdf_oxide's own outline reader
    // looped or overflowed its stack on such files (found by fuzzing).
    let outline = vec![
        (100, "<< /First 101 0 R >>".to_string()),
        (
            101,
            "<< /Title (Loop) /Next 101 0 R /First 102 0 R /Dest [10 0 R /Fit] >>".into(),
        ),
        (
            102,
            "<< /Title (Child) /Next 101 0 R /First 101 0 R /Dest [10 0 R /Fit] >>".into(),
        ),
    ];
    let bytes = pdf(&["Some text."], &outline);
    let doc = load(&bytes, &Limits::default()).unwrap();
    assert_eq!(doc.sections[0].headings, ["Loop", "Child"]);
    assert_eq!(doc.sections.len(), 1);
}

#[test]
fn without_an_outline_larger_type_gives_the_headings() {
    let page = |title: &str, size: u32, body: &str| {
        format!(
            "BT /F1 {size} Tf 72 720 Td ({title}) Tj ET BT /F1 11 Tf 72 690 Td ({body}) Tj ET BT /F1 11 Tf 72 676 Td (More body text on the page.) Tj ET"
        )
    };
    let p1 = page("Backups", 20, "Nightly at two.");
    let p2 = page("Retention", 15, "Kept for 35 days.");
    let doc = load(&pdf(&[&p1, &p2], &[]), &Limits::default()).unwrap();
    let got = pages_and_headings(&doc);
    assert_eq!(
        got,
        [
            (Some(1), "Backups".to_string()),
            (Some(2), "Backups > Retention".to_string())
        ],
        "{doc:?}"
    );
    assert!(
        doc.sections[1].text.contains("Kept for 35 days."),
        "{doc:?}"
    );
}

#[test]
fn too_many_pages_are_refused() {
    let bytes = pdf(&["a", "b", "c"], &[]);
    let few = Limits {
        max_pages: 2,
        ..Limits::default()
    };
    let err = load(&bytes, &few).unwrap_err();
    assert!(
        err.to_string()
            .contains("more than 2 pages (ingest.max_pages)"),
        "{err}"
    );
}

#[test]
fn garbage_and_truncated_pdfs_are_errors_not_panics() {
    let limits = Limits::default();
    for bytes in [
        &b""[..],
        b"%PDF-1.7\n",
        b"%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF",
        b"not a pdf at all",
    ] {
        assert!(load(bytes, &limits).is_err());
    }
}
