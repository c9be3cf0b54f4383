//! Loaders: bytes of one file → a [`Document`] of sections, each with the
//! path of headings above it. One module per format; [`load`] picks one by
//! the file's extension and rejects what is not a text document.

mod html;
mod markdown;
mod rst;
mod text;

use std::path::Path;

/// The formats GRACE reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Markdown (`.md`, `.markdown`, `.mdown`, `.mkd`).
    Markdown,
    /// Plain text (`.txt`, `.text`; also a file named explicitly whose
    /// extension GRACE does not know).
    Text,
    /// reStructuredText (`.rst`, `.rest`).
    ReStructuredText,
    /// HTML (`.html`, `.htm`, `.xhtml`).
    Html,
}

impl Format {
    /// The format for a file name, by extension; `None` for other files.
    pub fn from_path(path: &Path) -> Option<Self> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "md" | "markdown" | "mdown" | "mkd" => Some(Self::Markdown),
            "txt" | "text" => Some(Self::Text),
            "rst" | "rest" => Some(Self::ReStructuredText),
            "html" | "htm" | "xhtml" => Some(Self::Html),
            _ => None,
        }
    }
}

/// A loaded document: its sections in reading order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Document {
    /// The document's title where the format has one (HTML `<title>`).
    pub title: Option<String>,
    /// The sections in reading order (none empty).
    pub sections: Vec<Section>,
}

/// Text under one heading. `headings` is the path from the top-level
/// heading down to this section's own heading (empty before the first one).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Section {
    /// Headings from the top level down to this section's own.
    pub headings: Vec<String>,
    /// The section's text, whitespace tidied; paragraphs separated by a blank
    /// line.
    pub text: String,
}

/// Why a file could not be loaded. These are per-file problems: the file is
/// reported and skipped, the rest of the ingest goes on.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LoadError {
    /// The file contains NUL bytes in its first 8 KiB.
    #[error("binary file (contains NUL bytes)")]
    Binary,
    /// The file is not valid UTF-8.
    #[error("not valid UTF-8 (first bad byte at offset {offset})")]
    InvalidUtf8 {
        /// Byte offset of the first invalid byte.
        offset: usize,
    },
    /// No section has any text.
    #[error("empty: no text to index")]
    Empty,
}

/// Loads `bytes` as `format`.
pub fn load(bytes: &[u8], format: Format) -> Result<Document, LoadError> {
    let probe = &bytes[..bytes.len().min(8192)];
    if probe.contains(&0) {
        return Err(LoadError::Binary);
    }
    let text = std::str::from_utf8(bytes).map_err(|e| LoadError::InvalidUtf8 {
        offset: e.valid_up_to(),
    })?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut doc = match format {
        Format::Markdown => markdown::load(text),
        Format::Text => text::load(text),
        Format::ReStructuredText => rst::load(text),
        Format::Html => html::load(text),
    };
    for s in &mut doc.sections {
        s.text = tidy(&s.text);
    }
    doc.sections.retain(|s| !s.text.is_empty());
    if doc.sections.is_empty() {
        return Err(LoadError::Empty);
    }
    Ok(doc)
}

/// Collapses runs of spaces inside lines and of blank lines, trims the ends;
/// paragraph breaks (a blank line) are kept because the chunker uses them.
fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank_run = 0;
    for line in text.lines() {
        let line = line.split_whitespace().collect::<Vec<_>>().join(" ");
        if line.is_empty() {
            blank_run += 1;
            continue;
        }
        if !out.is_empty() {
            out.push_str(if blank_run > 0 { "\n\n" } else { "\n" });
        }
        blank_run = 0;
        out.push_str(&line);
    }
    out
}

/// Collects sections while a loader walks a document: text is appended to
/// the current section; a heading closes it and opens the next.
#[derive(Debug, Default)]
pub(crate) struct SectionBuilder {
    stack: Vec<(usize, String)>,
    current: String,
    sections: Vec<Section>,
}

impl SectionBuilder {
    pub(crate) fn push_text(&mut self, text: &str) {
        self.current.push_str(text);
    }

    /// Ends the current paragraph.
    pub(crate) fn paragraph_break(&mut self) {
        if !self.current.ends_with("\n\n") && !self.current.is_empty() {
            self.current.push_str("\n\n");
        }
    }

    /// Starts a section under a heading of `level` (1 = top).
    pub(crate) fn heading(&mut self, level: usize, title: &str) {
        self.close();
        let title = title.split_whitespace().collect::<Vec<_>>().join(" ");
        while self.stack.last().is_some_and(|(l, _)| *l >= level) {
            self.stack.pop();
        }
        if !title.is_empty() {
            self.stack.push((level, title));
        }
    }

    fn close(&mut self) {
        let text = std::mem::take(&mut self.current);
        if !text.trim().is_empty() {
            self.sections.push(Section {
                headings: self.stack.iter().map(|(_, t)| t.clone()).collect(),
                text,
            });
        }
    }

    pub(crate) fn finish(mut self, title: Option<String>) -> Document {
        self.close();
        Document {
            title,
            sections: self.sections,
        }
    }
}

/// A document's `(headings, text)` pairs, for compact test assertions.
#[cfg(test)]
pub(crate) fn outline(doc: &Document) -> Vec<(Vec<&str>, &str)> {
    doc.sections
        .iter()
        .map(|s| {
            (
                s.headings.iter().map(String::as_str).collect(),
                s.text.as_str(),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_by_extension() {
        assert_eq!(
            Format::from_path(Path::new("a/B.MD")),
            Some(Format::Markdown)
        );
        assert_eq!(
            Format::from_path(Path::new("x.rst")),
            Some(Format::ReStructuredText)
        );
        assert_eq!(Format::from_path(Path::new("x.htm")), Some(Format::Html));
        assert_eq!(Format::from_path(Path::new("x.txt")), Some(Format::Text));
        assert_eq!(Format::from_path(Path::new("x.pdf")), None);
        assert_eq!(Format::from_path(Path::new("Makefile")), None);
    }

    #[test]
    fn rejects_binary_invalid_utf8_and_empty() {
        assert_eq!(load(b"ab\0cd", Format::Text), Err(LoadError::Binary));
        assert_eq!(
            load(b"caf\xe9 au lait", Format::Text),
            Err(LoadError::InvalidUtf8 { offset: 3 })
        );
        assert_eq!(load(b"", Format::Markdown), Err(LoadError::Empty));
        assert_eq!(load(b"  \n\n \t\n", Format::Text), Err(LoadError::Empty));
        assert_eq!(
            load(b"# Only a heading\n", Format::Markdown),
            Err(LoadError::Empty)
        );
    }

    #[test]
    fn strips_bom_and_tidies_whitespace() {
        let doc = load("\u{feff}one   two\n\n\n\nthree".as_bytes(), Format::Text).unwrap();
        assert_eq!(doc.sections[0].text, "one two\n\nthree");
    }
}
