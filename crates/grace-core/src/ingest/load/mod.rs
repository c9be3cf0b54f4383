//! Loaders: bytes of one file → a [`Document`] of sections, each with the
//! path of headings above it. One module per format; [`load`] picks one by
//! the file's extension and rejects what is not a document it can read.
//!
//! The text formats (Markdown, text, reStructuredText, HTML, man pages, Q&A
//! tables) are read as UTF-8; PDF, DOCX, ODT and EPUB are binary. Every
//! format may arrive gzipped (`bash.1.gz`, `standards.pdf.gz`). Whatever
//! expands (gzip, ZIP entries, PDF streams) is bounded by [`Limits`]: the
//! expanded size, the compression ratio, the ZIP entries and the pages.

mod bounded;
mod docx;
mod epub;
mod html;
mod man;
mod markdown;
mod odt;
mod pdf;
mod qa;
mod rst;
mod tables;
mod text;
mod xml;

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
    /// PDF (`.pdf`): text by page, headings from the outline or the font
    /// sizes.
    Pdf,
    /// Word (`.docx`): headings from the paragraph styles, tables as text.
    Docx,
    /// OpenDocument text (`.odt`).
    Odt,
    /// EPUB (`.epub`): the chapters in reading order.
    Epub,
    /// A man page's roff source (`ls.1`, `bash.1.gz`, `git-config.1`,
    /// `Foo::Bar.3pm`).
    Man,
    /// A Q&A table (`.csv`): one row a passage, its question the heading.
    QaCsv,
    /// A Q&A table as JSON lines (`.jsonl`).
    QaJsonl,
}

impl Format {
    /// The format for a file name, by extension (after a `.gz`); `None`
    /// for other files.
    pub fn from_path(path: &Path) -> Option<Self> {
        let name = path.file_name()?.to_str()?.to_ascii_lowercase();
        let name = name.strip_suffix(".gz").unwrap_or(&name);
        let (_, ext) = name.rsplit_once('.')?;
        match ext {
            "md" | "markdown" | "mdown" | "mkd" => Some(Self::Markdown),
            "txt" | "text" => Some(Self::Text),
            "rst" | "rest" => Some(Self::ReStructuredText),
            "html" | "htm" | "xhtml" => Some(Self::Html),
            "pdf" => Some(Self::Pdf),
            "docx" => Some(Self::Docx),
            "odt" => Some(Self::Odt),
            "epub" => Some(Self::Epub),
            "man" => Some(Self::Man),
            "csv" => Some(Self::QaCsv),
            "jsonl" => Some(Self::QaJsonl),
            // Man sections: a digit, then at most a few letters (`3pm`, `1ssl`).
            _ if man_section(ext) => Some(Self::Man),
            _ => None,
        }
    }

    /// Whether the format is read as UTF-8 text (the others are binary).
    fn is_text(self) -> bool {
        !matches!(self, Self::Pdf | Self::Docx | Self::Odt | Self::Epub)
    }
}

/// `1`…`9`, optionally followed by up to four ASCII letters.
fn man_section(ext: &str) -> bool {
    let mut chars = ext.chars();
    chars.next().is_some_and(|c| ('1'..='9').contains(&c))
        && ext.len() <= 5
        && chars.all(|c| c.is_ascii_alphabetic())
}

/// Bounds on what a file may expand to, and the columns of a Q&A table.
#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    /// Most bytes a file may have once decompressed (`ingest.max_file_bytes`):
    /// a gzip stream, the ZIP entries read, the text a PDF yields.
    pub max_bytes: u64,
    /// Most times a compressed stream may expand
    /// (`ingest.max_compression_ratio`).
    pub max_ratio: u64,
    /// Most entries a ZIP archive (DOCX, ODT, EPUB) may list
    /// (`ingest.max_archive_entries`).
    pub max_entries: usize,
    /// Most pages of a PDF, chapters of an EPUB or rows of a Q&A table
    /// (`ingest.max_pages`).
    pub max_pages: usize,
    /// The question column of a Q&A table (`ingest.qa_question_column`).
    pub qa_question: String,
    /// The answer column of a Q&A table (`ingest.qa_answer_column`).
    pub qa_answer: String,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_bytes: 10_000_000,
            max_ratio: 100,
            max_entries: 10_000,
            max_pages: 5_000,
            qa_question: "question".into(),
            qa_answer: "answer".into(),
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
    /// The page it is on (from 1), for formats with pages (PDF).
    pub page: Option<u32>,
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
    /// The file expands past `ingest.max_file_bytes`.
    #[error(
        "expands to more than {limit} bytes (ingest.max_file_bytes): a decompression bomb, or raise the limit"
    )]
    TooLarge {
        /// The limit, in bytes.
        limit: u64,
    },
    /// A compressed stream expands more than `ingest.max_compression_ratio`
    /// times.
    #[error(
        "{what} expands more than {limit} times (ingest.max_compression_ratio): a decompression bomb, or raise the limit"
    )]
    Ratio {
        /// The stream (`gzip`, a ZIP entry's name).
        what: String,
        /// The limit.
        limit: u64,
    },
    /// More pages, chapters, rows or archive entries than allowed.
    #[error("more than {limit} {what} ({key})")]
    TooMany {
        /// What was counted (`pages`, `ZIP entries`, …).
        what: &'static str,
        /// The limit.
        limit: usize,
        /// The setting that holds it.
        key: &'static str,
    },
    /// The file is not a well-formed instance of its format.
    #[error("not a readable {format} file: {message}")]
    Malformed {
        /// The format's name.
        format: &'static str,
        /// What is wrong, as the parser said it.
        message: String,
    },
    /// A PDF whose pages have no text (a scan): it needs OCR first.
    #[error(
        "a PDF without text on any of its {pages} pages (a scan?): run OCR on it first (for example ocrmypdf), then ingest the result"
    )]
    NoText {
        /// Its pages.
        pages: usize,
    },
    /// An encrypted PDF.
    #[error("an encrypted PDF: save an unencrypted copy to ingest it")]
    Encrypted,
    /// A Q&A table without the configured question or answer column.
    #[error("a Q&A table needs a `{column}` column ({key}); it has {found}")]
    MissingColumn {
        /// The column looked for.
        column: String,
        /// The setting that names it.
        key: &'static str,
        /// The columns it has (or `no header`).
        found: String,
    },
}

/// Loads `bytes` as `format`, within `limits`. A gzipped file (by its magic
/// bytes) is decompressed first.
pub fn load(bytes: &[u8], format: Format, limits: &Limits) -> Result<Document, LoadError> {
    let unzipped;
    let bytes = if bytes.starts_with(&[0x1f, 0x8b]) {
        unzipped = bounded::gunzip(bytes, limits)?;
        &unzipped[..]
    } else {
        bytes
    };
    let mut doc = if format.is_text() {
        load_text(bytes, format, limits)?
    } else {
        match format {
            Format::Pdf => pdf::load(bytes, limits)?,
            Format::Docx => docx::load(bytes, limits)?,
            Format::Odt => odt::load(bytes, limits)?,
            _ => epub::load(bytes, limits)?,
        }
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

/// The text formats: UTF-8 (a BOM dropped), no NUL in the first 8 KiB.
fn load_text(bytes: &[u8], format: Format, limits: &Limits) -> Result<Document, LoadError> {
    let probe = &bytes[..bytes.len().min(8192)];
    if probe.contains(&0) {
        return Err(LoadError::Binary);
    }
    let text = std::str::from_utf8(bytes).map_err(|e| LoadError::InvalidUtf8 {
        offset: e.valid_up_to(),
    })?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    Ok(match format {
        Format::Markdown => markdown::load(text),
        Format::ReStructuredText => rst::load(text),
        Format::Html => html::load(text),
        Format::Man => man::load(text),
        Format::QaCsv => qa::load_csv(text, limits)?,
        Format::QaJsonl => qa::load_jsonl(text, limits)?,
        _ => text::load(text),
    })
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

    /// Ends the current line (a list item, a term before its description).
    pub(crate) fn line_break(&mut self) {
        if !self.current.is_empty() && !self.current.ends_with('\n') {
            self.current.push('\n');
        }
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
                page: None,
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
        for (name, format) in [
            ("x.pdf", Some(Format::Pdf)),
            ("standards.PDF.gz", Some(Format::Pdf)),
            ("a.docx", Some(Format::Docx)),
            ("a.odt", Some(Format::Odt)),
            ("a.epub", Some(Format::Epub)),
            ("ls.1", Some(Format::Man)),
            ("bash.1.gz", Some(Format::Man)),
            ("Foo::Bar.3pm.gz", Some(Format::Man)),
            ("openssl.1ssl", Some(Format::Man)),
            ("faq.csv", Some(Format::QaCsv)),
            ("faq.jsonl", Some(Format::QaJsonl)),
            ("x.0", None),
            ("x.1toolong", None),
            ("x.gz", None),
            ("Makefile", None),
            ("x.png", None),
        ] {
            assert_eq!(Format::from_path(Path::new(name)), format, "{name}");
        }
    }

    #[test]
    fn rejects_binary_invalid_utf8_and_empty() {
        assert_eq!(
            load(b"ab\0cd", Format::Text, &Limits::default()),
            Err(LoadError::Binary)
        );
        assert_eq!(
            load(b"caf\xe9 au lait", Format::Text, &Limits::default()),
            Err(LoadError::InvalidUtf8 { offset: 3 })
        );
        assert_eq!(
            load(b"", Format::Markdown, &Limits::default()),
            Err(LoadError::Empty)
        );
        assert_eq!(
            load(b"  \n\n \t\n", Format::Text, &Limits::default()),
            Err(LoadError::Empty)
        );
        assert_eq!(
            load(b"# Only a heading\n", Format::Markdown, &Limits::default()),
            Err(LoadError::Empty)
        );
    }

    #[test]
    fn strips_bom_and_tidies_whitespace() {
        let doc = load(
            "\u{feff}one   two\n\n\n\nthree".as_bytes(),
            Format::Text,
            &Limits::default(),
        )
        .unwrap();
        assert_eq!(doc.sections[0].text, "one two\n\nthree");
    }
}
