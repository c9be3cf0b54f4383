//! The `ingest` section: how documents are found, read, chunked and
//! committed, and the limits that keep a hostile file out.

use std::path::PathBuf;

use super::Result;
use super::check::{in_range, invalid};
use serde::{Deserialize, Serialize};

/// How documents are found, split and chunked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IngestConfig {
    /// Target chunk length in words.
    pub chunk_size: usize,
    /// Words repeated from the end of one chunk at the start of the next.
    pub chunk_overlap: usize,
    /// Glob patterns (relative to the folder given to `grace ingest`) of the
    /// files to load; a file named explicitly on the command line is always
    /// loaded.
    pub include: Vec<String>,
    /// Glob patterns of files and folders to skip.
    pub exclude: Vec<String>,
    /// Files larger than this many bytes are reported and skipped; also the
    /// most a file may expand to (a gzipped man page, a DOCX's XML, a
    /// PDF's text).
    pub max_file_bytes: u64,
    /// Most times a compressed stream (gzip, a ZIP entry) may expand; more
    /// is taken for a decompression bomb and the file is skipped.
    pub max_compression_ratio: u64,
    /// Most entries a ZIP-based file (DOCX, ODT, EPUB) may list.
    pub max_archive_entries: usize,
    /// Most pages of a PDF, chapters of an EPUB or rows of a Q&A table.
    pub max_pages: usize,
    /// The column (CSV) or key (JSONL) of a Q&A table that holds the
    /// question; it becomes the passage's heading.
    pub qa_question_column: String,
    /// The column or key of a Q&A table that holds the answer.
    pub qa_answer_column: String,
    /// Chunks embedded and committed together (store flush + manifest
    /// save). Smaller loses less work to a crash; larger is faster.
    pub commit_chunks: usize,
    /// Most files one ingest may walk; past it the ingest is refused.
    pub max_files: usize,
    /// Times a store write (upsert, delete) that failed for a moment (a
    /// Qdrant server unreachable or timing out) is tried again before the
    /// ingest stops. Writes are idempotent, so a retry never duplicates.
    pub store_retries: u32,
    /// Seconds before the first retry; each next wait doubles (at most 30).
    pub store_retry_seconds: f64,
    /// Folders that remote callers (HTTP `/v1/ingest`, MCP `ingest`) may
    /// name files and folders in; empty: they may only upload. Symbolic
    /// links that lead out of them are not followed. The CLI is not bound
    /// by it.
    pub allowed_roots: Vec<PathBuf>,
    /// Seconds without a file-system event that end a batch of changes
    /// (`grace ingest --watch`, `server.watch`); the batch is then
    /// ingested.
    pub watch_debounce_seconds: f64,
    /// Who may read a document whose readers nothing else names (no
    /// `access` in the request or the front matter, no `.grace-access.yml`
    /// at or above its folder): `public`, `group:NAME`, `user:NAME`.
    pub default_access: Vec<String>,
}

impl Default for IngestConfig {
    fn default() -> Self {
        Self {
            chunk_size: 200,
            chunk_overlap: 30,
            include: [
                "**/*.md",
                "**/*.markdown",
                "**/*.txt",
                "**/*.rst",
                "**/*.html",
                "**/*.htm",
                "**/*.pdf",
                "**/*.pdf.gz",
                "**/*.docx",
                "**/*.odt",
                "**/*.epub",
                "**/*.[1-9]",
                "**/*.[1-9].gz",
                "**/*.csv",
                "**/*.jsonl",
            ]
            .map(String::from)
            .to_vec(),
            exclude: ["**/.git/**", "**/node_modules/**", "**/target/**"]
                .map(String::from)
                .to_vec(),
            max_file_bytes: 10_000_000,
            max_compression_ratio: 100,
            max_archive_entries: 10_000,
            max_pages: 5_000,
            qa_question_column: "question".into(),
            qa_answer_column: "answer".into(),
            commit_chunks: 256,
            max_files: 100_000,
            store_retries: 5,
            store_retry_seconds: 1.0,
            allowed_roots: Vec::new(),
            watch_debounce_seconds: 0.5,
            default_access: vec![super::access::PUBLIC.to_string()],
        }
    }
}

/// The `ingest` section.
pub(super) fn validate_ingest(i: &super::IngestConfig) -> Result<()> {
    in_range("ingest.chunk_size", i.chunk_size, 20..=4000, " words")?;
    if i.chunk_overlap * 2 > i.chunk_size {
        return Err(invalid(
            "ingest.chunk_overlap",
            format!(
                "{} must be at most half of ingest.chunk_size ({})",
                i.chunk_overlap, i.chunk_size
            ),
        ));
    }
    super::access::check_readers(&i.default_access)
        .map_err(|m| invalid("ingest.default_access", m))?;
    if i.include.is_empty() {
        return Err(invalid("ingest.include", "needs at least one glob pattern"));
    }
    for (key, patterns) in [
        ("ingest.include", &i.include),
        ("ingest.exclude", &i.exclude),
    ] {
        for p in patterns {
            globset::Glob::new(p)
                .map_err(|e| invalid(key, format!("`{p}` is not a valid glob: {e}")))?;
        }
    }
    in_range("ingest.store_retries", i.store_retries, 0..=20, "")?;
    in_range(
        "ingest.store_retry_seconds",
        i.store_retry_seconds,
        0.0..=60.0,
        " seconds",
    )?;
    in_range("ingest.commit_chunks", i.commit_chunks, 1..=100000, "")?;
    if i.max_file_bytes == 0 {
        return Err(invalid("ingest.max_file_bytes", "must be greater than 0"));
    }
    for (key, value) in [
        (
            "ingest.max_compression_ratio",
            i.max_compression_ratio as usize,
        ),
        ("ingest.max_archive_entries", i.max_archive_entries),
        ("ingest.max_pages", i.max_pages),
    ] {
        if value == 0 {
            return Err(invalid(key, "must be greater than 0"));
        }
    }
    for (key, value) in [
        ("ingest.qa_question_column", &i.qa_question_column),
        ("ingest.qa_answer_column", &i.qa_answer_column),
    ] {
        if value.trim().is_empty() {
            return Err(invalid(key, "must name a column"));
        }
    }
    if i.qa_question_column
        .trim()
        .eq_ignore_ascii_case(i.qa_answer_column.trim())
    {
        return Err(invalid(
            "ingest.qa_answer_column",
            "must differ from ingest.qa_question_column",
        ));
    }
    in_range("ingest.max_files", i.max_files, 1..=10000000, "")?;
    in_range(
        "ingest.watch_debounce_seconds",
        i.watch_debounce_seconds,
        0.05..=60.0,
        " seconds",
    )?;
    for (n, root) in i.allowed_roots.iter().enumerate() {
        if !root.is_dir() {
            return Err(invalid(
                &format!("ingest.allowed_roots[{n}]"),
                format!("{} is not an existing folder", root.display()),
            ));
        }
    }
    Ok(())
}
