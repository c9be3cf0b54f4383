//! PDF: the text of each page in reading order (pdf_oxide), without its
//! running header and footer (`running`) and with identifiers as printed
//! (`identifiers`: `asn1_der_decoding`, not `asn1 der decoding`), one
//! section per page and heading, so a citation can name its page. Headings come from the
//! document's outline (bookmarks) where it has one, else from lines set in
//! a larger font than the body text. A PDF without any text (a scan) is an
//! error, not an empty document.
//!
//! pdf_oxide was chosen over pdf-extract (the book, "Formats"): on 31 damaged
//! copies of a Debian PDF pdf-extract panicked on 14 and read nothing of a
//! truncated one; pdf_oxide read all of them, and it bounds decompression.

mod fonts;
mod identifiers;
mod outline;
mod running;
mod sections;

use std::panic::{AssertUnwindSafe, catch_unwind};

use pdf_oxide::PdfDocument;
use pdf_oxide::converters::ConversionOptions;

use self::fonts::font_marks;
use self::outline::outline_marks;
use self::running::without_running_lines;
use self::sections::sections;
use super::{Document, Limits, LoadError};

const FORMAT: &str = "PDF";

/// Most outline entries read (a bookmark tree is small; a hostile one is not).
const MAX_OUTLINE: usize = 10_000;

/// Deepest heading level kept from an outline or from font sizes.
const MAX_LEVEL: usize = 6;

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
    // The reading order of the whole pipeline (columns found by XY-cut):
    // `extract_text`'s row order put an indented paragraph of a manual
    // after the next heading (libtasn1.pdf, p. 23).
    let options = ConversionOptions {
        extract_tables: true,
        ..ConversionOptions::default()
    };
    let mut texts = Vec::with_capacity(pages);
    let mut total = 0u64;
    for page in 0..pages {
        // A page that cannot be read is left out; the others still count.
        let text = doc
            .to_plain_text(page, &options)
            .map(|t| rejoin(&t))
            .unwrap_or_default();
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
    let texts = without_running_lines(&texts);
    let known = identifiers::known(&texts);
    let texts: Vec<String> = texts
        .iter()
        .map(|t| identifiers::restore(t, &known))
        .collect();
    let mut marks = match outline_marks(&doc, pages) {
        marks if !marks.is_empty() => marks,
        _ => font_marks(&doc, pages),
    };
    for mark in &mut marks {
        mark.title = identifiers::restore(&mark.title, &known);
    }
    Ok(Document {
        title: None,
        sections: sections(&texts, &marks),
    })
}

/// A page's paragraphs with those a line break split in two joined again:
/// one that stops without closing its sentence, before one that starts in
/// lower case or with a mark (`--date` / `<YYYY-MM-DD>; a restore …`).
fn rejoin(page: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    for para in page.split("\n\n") {
        let para = para.trim();
        if para.is_empty() {
            continue;
        }
        let continues = out.last().is_some_and(|prev: &String| {
            !prev.ends_with(['.', '!', '?', ':', ';', '。', '！', '？'])
                && para
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_lowercase() || matches!(c, '<' | '(' | '[' | '-' | ','))
        });
        match out.last_mut() {
            Some(prev) if continues => {
                prev.push(' ');
                prev.push_str(para);
            }
            _ => out.push(para.to_string()),
        }
    }
    out.join("\n\n")
}

#[cfg(test)]
mod tests;
