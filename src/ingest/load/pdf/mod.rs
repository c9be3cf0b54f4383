//! PDF: the text of each page in reading order (pdf_oxide), one section per
//! page and heading, so a citation can name its page. Headings come from the
//! document's outline (bookmarks) where it has one, else from lines set in
//! a larger font than the body text. A PDF without any text (a scan) is an
//! error, not an empty document.
//!
//! pdf_oxide was chosen over pdf-extract (the book, "Formats"): on 31 damaged
//! copies of a Debian PDF pdf-extract panicked on 14 and read nothing of a
//! truncated one; pdf_oxide read all of them, and it bounds decompression.

mod fonts;
mod outline;
mod sections;

use std::panic::{AssertUnwindSafe, catch_unwind};

use pdf_oxide::PdfDocument;

use self::fonts::font_marks;
use self::outline::outline_marks;
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

#[cfg(test)]
mod tests;
