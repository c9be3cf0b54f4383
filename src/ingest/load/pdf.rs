//! PDF: the text of each page in reading order (pdf_oxide), one section per
//! page and heading, so a citation can name its page. Headings come from the
//! document's outline (bookmarks) where it has one, else from lines set in
//! a larger font than the body text. A PDF without any text (a scan) is an
//! error, not an empty document.
//!
//! pdf_oxide was chosen over pdf-extract (README, "Formats"): on 31 damaged
//! copies of a Debian PDF pdf-extract panicked on 14 and read nothing of a
//! truncated one; pdf_oxide read all of them, and it bounds decompression.

use std::collections::{HashMap, HashSet};
use std::panic::{AssertUnwindSafe, catch_unwind};

use pdf_oxide::PdfDocument;
use pdf_oxide::object::{Object, ObjectRef};
use pdf_oxide::optional_content::decode_pdf_text_string;

use super::{Document, Limits, LoadError, Section};

const FORMAT: &str = "PDF";

/// Most outline entries read (a bookmark tree is small; a hostile one is not).
const MAX_OUTLINE: usize = 10_000;

/// Deepest heading level kept from an outline or from font sizes.
const MAX_LEVEL: usize = 6;

/// Longest line taken as a heading by its font size.
const MAX_HEADING_CHARS: usize = 120;

/// Pages sampled to find the body text's font size.
const FONT_SAMPLE_PAGES: usize = 30;

/// A heading that starts on a page: its level (1 = top) and title.
#[derive(Debug, Clone, PartialEq)]
struct Mark {
    page: usize,
    level: usize,
    title: String,
}

pub(super) fn load(bytes: &[u8], limits: &Limits) -> Result<Document, LoadError> {
    // pdf_oxide survives every damaged file we fed it, but it is a large
    // parser of hostile input: a panic in it is one bad file, not a crash.
    catch_unwind(AssertUnwindSafe(|| load_unguarded(bytes, limits))).unwrap_or_else(|_| {
        Err(LoadError::Malformed {
            format: FORMAT,
            message: "the PDF parser failed on it".into(),
        })
    })
}

fn load_unguarded(bytes: &[u8], limits: &Limits) -> Result<Document, LoadError> {
    let malformed = |e: pdf_oxide::Error| LoadError::Malformed {
        format: FORMAT,
        message: e.to_string(),
    };
    let doc = PdfDocument::from_bytes(bytes.to_vec()).map_err(malformed)?;
    if doc.is_encrypted() && !doc.is_authenticated() {
        return Err(LoadError::Encrypted);
    }
    let pages = doc.page_count().map_err(malformed)?;
    if pages > limits.max_pages {
        return Err(LoadError::TooMany {
            what: "pages",
            limit: limits.max_pages,
            key: "ingest.max_pages",
        });
    }
    let mut texts = Vec::with_capacity(pages);
    let mut total = 0u64;
    for page in 0..pages {
        // A page that cannot be read is left out; the others still count.
        let text = doc.extract_text(page).unwrap_or_default();
        total += text.len() as u64;
        if total > limits.max_bytes {
            return Err(LoadError::TooLarge {
                limit: limits.max_bytes,
            });
        }
        texts.push(text);
    }
    if texts.iter().all(|t| t.trim().is_empty()) {
        return Err(LoadError::NoText { pages });
    }
    let marks = match outline_marks(&doc, pages) {
        marks if !marks.is_empty() => marks,
        _ => font_marks(&doc, pages),
    };
    Ok(Document {
        title: None,
        sections: sections(&texts, &marks),
    })
}

/// The outline's entries that point at a page, in document order, with
/// their depth. Read here rather than with pdf_oxide's `get_outline`, which
/// recurses without a limit and follows `/Next` cycles for ever (found by
/// fuzzing): every object is visited once, at most `MAX_OUTLINE` of them.
fn outline_marks(doc: &PdfDocument, pages: usize) -> Vec<Mark> {
    let Some(catalog) = doc.catalog().ok() else {
        return Vec::new();
    };
    let Some(outlines) = catalog.as_dict().and_then(|d| d.get("Outlines")) else {
        return Vec::new();
    };
    let Some(first) = resolve(doc, outlines)
        .as_ref()
        .and_then(|o| o.as_dict()?.get("First")?.as_reference())
    else {
        return Vec::new();
    };
    let pages_by_ref = page_refs(doc, &catalog, pages);
    let mut names = None; // the named destinations, read on first need
    let mut marks = Vec::new();
    let mut seen = HashSet::new();
    // Depth first: a node's children before its next sibling.
    let mut stack = vec![(1usize, first)];
    while let Some((level, node_ref)) = stack.pop() {
        if !seen.insert(node_ref) || seen.len() > MAX_OUTLINE {
            continue;
        }
        let Ok(node) = doc.load_object(node_ref) else {
            continue;
        };
        let Some(dict) = node.as_dict() else {
            continue;
        };
        if let Some(next) = dict.get("Next").and_then(Object::as_reference) {
            stack.push((level, next));
        }
        if let Some(child) = dict.get("First").and_then(Object::as_reference) {
            stack.push((level + 1, child));
        }
        let title = dict
            .get("Title")
            .and_then(|t| resolve(doc, t))
            .and_then(|t| t.as_string().map(decode_pdf_text_string))
            .unwrap_or_default();
        let title = title.split_whitespace().collect::<Vec<_>>().join(" ");
        let dest = dict.get("Dest").cloned().or_else(|| {
            let action = resolve(doc, dict.get("A")?)?;
            action.as_dict()?.get("D").cloned()
        });
        let page =
            dest.and_then(|d| destination_page(doc, &catalog, &d, &pages_by_ref, &mut names));
        if let Some(page) = page
            && !title.is_empty()
        {
            marks.push(Mark {
                page,
                level: level.min(MAX_LEVEL),
                title,
            });
        }
    }
    // Outlines are not always in page order; a stable sort keeps the order
    // of entries on the same page.
    marks.sort_by_key(|m| m.page);
    marks
}

/// `object`, or the object it refers to.
fn resolve(doc: &PdfDocument, object: &Object) -> Option<Object> {
    match object {
        Object::Reference(r) => doc.load_object(*r).ok(),
        other => Some(other.clone()),
    }
}

/// Page object → page index, from the page tree (each node once, at most
/// `pages` leaves).
fn page_refs(doc: &PdfDocument, catalog: &Object, pages: usize) -> HashMap<ObjectRef, usize> {
    let mut found = HashMap::new();
    let Some(root) = catalog
        .as_dict()
        .and_then(|d| d.get("Pages"))
        .and_then(Object::as_reference)
    else {
        return found;
    };
    let mut seen = HashSet::new();
    let mut stack = vec![root];
    while let Some(r) = stack.pop() {
        if found.len() >= pages || !seen.insert(r) || seen.len() > MAX_OUTLINE + pages {
            continue;
        }
        let Ok(node) = doc.load_object(r) else {
            continue;
        };
        match node
            .as_dict()
            .and_then(|d| d.get("Kids"))
            .and_then(|k| resolve(doc, k))
        {
            Some(Object::Array(kids)) => {
                stack.extend(kids.iter().rev().filter_map(Object::as_reference));
            }
            _ => {
                let index = found.len();
                found.insert(r, index);
            }
        }
    }
    found
}

/// The page a destination points at: an array whose first element is a
/// page, a dictionary with `/D`, or a name looked up in the catalog's
/// `/Dests` or `/Names /Dests` tree.
fn destination_page(
    doc: &PdfDocument,
    catalog: &Object,
    dest: &Object,
    pages: &HashMap<ObjectRef, usize>,
    names: &mut Option<HashMap<Vec<u8>, Object>>,
) -> Option<usize> {
    let mut dest = resolve(doc, dest)?;
    // A name → its destination → perhaps a dictionary with /D → an array.
    for _ in 0..4 {
        dest = match dest {
            Object::Array(items) => {
                return items
                    .first()?
                    .as_reference()
                    .and_then(|r| pages.get(&r).copied());
            }
            Object::Dictionary(d) => resolve(doc, d.get("D")?)?,
            Object::String(name) => {
                let names = names.get_or_insert_with(|| named_destinations(doc, catalog));
                resolve(doc, names.get(&name)?)?
            }
            Object::Name(name) => {
                let names = names.get_or_insert_with(|| named_destinations(doc, catalog));
                resolve(doc, names.get(name.as_bytes())?)?
            }
            _ => return None,
        };
    }
    None
}

/// Every named destination: the catalog's `/Dests` dictionary and the
/// `/Names /Dests` name tree (each node once, at most `MAX_OUTLINE` × 10
/// names).
fn named_destinations(doc: &PdfDocument, catalog: &Object) -> HashMap<Vec<u8>, Object> {
    let limit = MAX_OUTLINE * 10;
    let mut out = HashMap::new();
    let Some(catalog) = catalog.as_dict() else {
        return out;
    };
    if let Some(Object::Dictionary(dests)) = catalog.get("Dests").and_then(|d| resolve(doc, d)) {
        for (k, v) in dests.into_iter().take(limit) {
            out.insert(k.into_bytes(), v);
        }
    }
    let tree = catalog
        .get("Names")
        .and_then(|n| resolve(doc, n))
        .and_then(|n| n.as_dict()?.get("Dests").cloned());
    let mut stack: Vec<Object> = tree.into_iter().collect();
    let mut seen = HashSet::new();
    while let Some(node) = stack.pop() {
        if out.len() >= limit || seen.len() > limit {
            break;
        }
        if let Object::Reference(r) = node
            && !seen.insert(r)
        {
            continue;
        }
        let Some(node) = resolve(doc, &node) else {
            continue;
        };
        let Some(dict) = node.as_dict() else {
            continue;
        };
        if let Some(Object::Array(pairs)) = dict.get("Names").and_then(|n| resolve(doc, n)) {
            for pair in pairs.chunks(2) {
                if let [Object::String(k), v] = pair {
                    out.insert(k.clone(), v.clone());
                }
            }
        }
        if let Some(Object::Array(kids)) = dict.get("Kids").and_then(|k| resolve(doc, k)) {
            stack.extend(
                kids.into_iter()
                    .filter(|k| matches!(k, Object::Reference(_))),
            );
        }
    }
    out
}

/// Headings by font size: runs of text in a font clearly larger than the
/// body's (the size that sets the most characters), short enough to be a
/// title. The largest such size is level 1.
fn font_marks(doc: &PdfDocument, pages: usize) -> Vec<Mark> {
    let mut spans_by_page = Vec::with_capacity(pages);
    for page in 0..pages {
        spans_by_page.push(doc.extract_spans(page).unwrap_or_default());
    }
    // Font sizes in tenths of a point, weighted by characters.
    let mut weight: std::collections::HashMap<i64, usize> = Default::default();
    for spans in spans_by_page.iter().take(FONT_SAMPLE_PAGES) {
        for s in spans {
            *weight.entry(tenths(s.font_size)).or_default() += s.text.chars().count();
        }
    }
    let Some(body) = weight
        .iter()
        .max_by_key(|(size, n)| (**n, -**size))
        .map(|(s, _)| *s)
    else {
        return Vec::new();
    };
    let is_heading = |size: i64, text: &str| {
        size * 10 >= body * 12
            && (2..=MAX_HEADING_CHARS).contains(&text.chars().count())
            && text.chars().any(char::is_alphabetic)
    };
    let mut candidates = Vec::new();
    for (page, spans) in spans_by_page.iter().enumerate() {
        // Neighbouring spans of one size on one line are one heading.
        let mut current: Option<(i64, f32, String)> = None;
        for s in spans {
            let size = tenths(s.font_size);
            match &mut current {
                Some((sz, y, text)) if *sz == size && (s.bbox.y - *y).abs() < 1.0 => {
                    text.push(' ');
                    text.push_str(s.text.trim());
                }
                _ => {
                    if let Some((sz, _, text)) = current.take() {
                        candidates.push((page, sz, text));
                    }
                    current = Some((size, s.bbox.y, s.text.trim().to_string()));
                }
            }
        }
        if let Some((sz, _, text)) = current {
            candidates.push((page, sz, text));
        }
    }
    candidates.retain(|(_, size, text)| is_heading(*size, text));
    let mut sizes: Vec<i64> = candidates.iter().map(|(_, s, _)| *s).collect();
    sizes.sort_unstable_by(|a, b| b.cmp(a));
    sizes.dedup();
    candidates
        .into_iter()
        .take(MAX_OUTLINE)
        .map(|(page, size, text)| Mark {
            page,
            level: (sizes.iter().position(|s| *s == size).unwrap_or(0) + 1).min(MAX_LEVEL),
            title: text.split_whitespace().collect::<Vec<_>>().join(" "),
        })
        .collect()
}

fn tenths(size: f32) -> i64 {
    if size.is_finite() {
        (size.clamp(0.0, 10_000.0) * 10.0).round() as i64
    } else {
        0
    }
}

/// One section per page and heading: each page's text is cut where a
/// heading that starts on it is found (by its words); a heading not found
/// in the text starts where the previous one ended.
fn sections(texts: &[String], marks: &[Mark]) -> Vec<Section> {
    let mut out = Vec::new();
    let mut path: Vec<(usize, String)> = Vec::new();
    let mut marks = marks.iter().peekable();
    for (page, text) in texts.iter().enumerate() {
        let words = word_spans(text);
        let mut cursor = 0; // a word index
        let mut start = 0; // a byte offset into `text`
        while let Some(mark) = marks.next_if(|m| m.page <= page) {
            let title: Vec<&str> = mark.title.split_whitespace().collect();
            let found = find_words(text, &words, cursor, &title);
            let (cut, resume) = match found {
                Some(at) => (words[at].0, at + title.len()),
                None => (words.get(cursor).map_or(text.len(), |w| w.0), cursor),
            };
            push(&mut out, &path, &text[start..cut], page);
            while path.last().is_some_and(|(l, _)| *l >= mark.level) {
                path.pop();
            }
            path.push((mark.level, mark.title.clone()));
            cursor = resume;
            start = words.get(resume).map_or(text.len(), |w| w.0);
        }
        push(&mut out, &path, &text[start..], page);
    }
    out
}

fn push(out: &mut Vec<Section>, path: &[(usize, String)], text: &str, page: usize) {
    if !text.trim().is_empty() {
        out.push(Section {
            headings: path.iter().map(|(_, t)| t.clone()).collect(),
            text: text.to_string(),
            page: u32::try_from(page + 1).ok(),
        });
    }
}

/// The byte ranges of the whitespace-separated words of `text`.
fn word_spans(text: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices() {
        match (c.is_whitespace(), start) {
            (true, Some(s)) => {
                spans.push((s, i));
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    if let Some(s) = start {
        spans.push((s, text.len()));
    }
    spans
}

/// The index of the first word, from `from`, where `title`'s words follow
/// one another in `text`.
fn find_words(text: &str, words: &[(usize, usize)], from: usize, title: &[&str]) -> Option<usize> {
    if title.is_empty() || words.len() < title.len() {
        return None;
    }
    (from..=words.len() - title.len()).find(|&i| {
        title
            .iter()
            .zip(&words[i..])
            .all(|(t, (s, e))| text[*s..*e] == **t)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
            format!("trailer\n<< /Size {size} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n")
                .as_bytes(),
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
}
