//! Deciding whether one file changed, and reading, hashing and chunking it
//! when it did.
//!
//! A file whose size and modification time are those the manifest
//! recorded when its bytes were last read is taken as unchanged without
//! reading it ([`FileStat`]); any other is read and hashed, and only a
//! different hash makes it changed. So a run over a large folder reads
//! the files that were touched, not all of them.

use std::path::Path;

use sha2::{Digest, Sha256};

use super::chunk::{self, Chunk, ChunkParams};
use super::load::{self, Format, LoadError};
use super::manifest::{EntryState, FileStat, SourceEntry};
use super::{Ingestor, Prepared, limits, walk};
use crate::access::Readers;
use crate::access::file::{AccessFiles, front_matter_access};
use crate::config::IngestConfig;
use crate::durable::CappedReadError;

impl Ingestor<'_> {
    /// What `candidate` (whose stat is `stat`, when settled) needs, given
    /// its manifest entry `previous`, and whether its bytes were read;
    /// `Err(reason)` when it cannot be ingested.
    pub(super) fn prepare(
        &self,
        candidate: &walk::Candidate,
        stat: Option<FileStat>,
        source: &str,
        previous: Option<&SourceEntry>,
        pipeline_changed: bool,
        access: &mut Access,
    ) -> std::result::Result<(Outcome, bool), String> {
        let path = &candidate.path;
        let current = previous.filter(|p| p.state == EntryState::Committed && !pipeline_changed);
        if let Some(prev) = current
            && let Some(now) = stat
            && prev.stat == stat
            // A lowered `ingest.max_file_bytes` applies to unchanged files too.
            && now.size <= self.config.max_file_bytes
        {
            let labels = access.labels_unread(path, prev)?;
            return Ok((unchanged(prev, labels, stat), false));
        }
        let bytes = read_capped(path, self.config.max_file_bytes)?;
        let hash = crate::durable::hex(&Sha256::digest(&bytes));
        let format = Format::from_path(path);
        let labels = access.labels(path, format, &bytes, previous)?;
        if let Some(prev) = current
            && prev.content_hash == hash
        {
            return Ok((unchanged(prev, labels, stat), true));
        }
        let (chunks, title) = chunks_of(&bytes, format, candidate.explicit, self.config)?;
        let prepared = Prepared {
            source: source.to_string(),
            path: path.clone(),
            hash,
            chunks,
            title,
            labels,
            stat,
            existed: previous.is_some(),
            bytes: 0,
        };
        Ok((Outcome::Changed(prepared), true))
    }
}

/// The chunks (and title) of a file's `bytes` in `format` (unknown: text
/// when the file was named, else not ingested).
fn chunks_of(
    bytes: &[u8],
    format: Option<Format>,
    explicit: bool,
    config: &IngestConfig,
) -> std::result::Result<(Vec<Chunk>, Option<String>), String> {
    let format = match format {
        Some(f) => f,
        None if explicit => Format::Text,
        None => return Err("unsupported file type".into()),
    };
    let doc = load::load(bytes, format, &limits(config)).map_err(|e: LoadError| e.to_string())?;
    let params = ChunkParams {
        size: config.chunk_size,
        overlap: config.chunk_overlap,
    };
    Ok((chunk::chunk_sections(&doc.sections, params), doc.title))
}

/// What an ingest of the file at `path` would record now, without
/// embedding it (for `grace doctor`, which checks a manifest rebuilt from
/// the store against the files).
#[derive(Debug, Clone, PartialEq)]
pub struct Inspected {
    /// Hex SHA-256 of its bytes.
    pub hash: String,
    /// Its chunks.
    pub chunks: usize,
    /// Its readers from its front matter or folder (no request's).
    pub readers: Readers,
    /// Whether its own front matter gave them.
    pub from_document: bool,
}

/// Reads, hashes and chunks the file at `path` as an ingest would;
/// `Err(reason)` when it cannot be ingested.
pub fn inspect(config: &IngestConfig, path: &Path) -> std::result::Result<Inspected, String> {
    let default = Readers::parse(&config.default_access)
        .map_err(|m| format!("ingest.default_access: {m}"))?;
    let mut access = Access {
        request: None,
        files: AccessFiles::default(),
        default,
    };
    let bytes = read_capped(path, config.max_file_bytes)?;
    let format = Format::from_path(path);
    let labels = access.labels(path, format, &bytes, None)?;
    let (chunks, _) = chunks_of(&bytes, format, true, config)?;
    Ok(Inspected {
        hash: crate::durable::hex(&Sha256::digest(&bytes)),
        chunks: chunks.len(),
        readers: labels.readers,
        from_document: labels.from_document,
    })
}

/// The outcome for a file whose bytes are those of `prev`, labelled
/// `labels` now.
fn unchanged(prev: &SourceEntry, labels: Labels, stat: Option<FileStat>) -> Outcome {
    if Readers::stored(&prev.readers) == labels.readers && prev.pinned == labels.pinned {
        // Where the same readers came from is the manifest's alone.
        Outcome::Unchanged {
            stat,
            from_document: labels.from_document,
        }
    } else {
        Outcome::Relabel { labels, stat }
    }
}

/// Who may read a document, and where that came from.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Labels {
    /// The readers.
    pub readers: Readers,
    /// Whether a request gave them (they then stay).
    pub pinned: bool,
    /// Whether the document's own front matter gave them.
    pub from_document: bool,
}

/// What [`Ingestor::prepare`] found a file to need.
pub(super) enum Outcome {
    /// The store holds it as it is, for the same readers; `stat` is its
    /// stat now, for the manifest.
    Unchanged {
        /// Its settled stat, if any.
        stat: Option<FileStat>,
        /// Whether its own front matter gives its readers.
        from_document: bool,
    },
    /// The same text for other readers: its chunks are re-labelled, not
    /// embedded again.
    Relabel {
        /// The readers now.
        labels: Labels,
        /// Its settled stat, if any.
        stat: Option<FileStat>,
    },
    /// New or changed: read and chunked, to be embedded and written.
    Changed(Prepared),
}

/// Where one run takes documents' readers from, first to last: the
/// request's `access`, `access:` in Markdown front matter, the nearest
/// `.grace-access.yml`, `ingest.default_access`.
pub(super) struct Access {
    /// The request's `access` (`grace ingest --access`, the library's
    /// `IngestOptions::access`).
    pub request: Option<Readers>,
    /// The `.grace-access.yml` files read so far.
    pub files: AccessFiles,
    /// `ingest.default_access`.
    pub default: Readers,
}

impl Access {
    /// The labels of the file at `path` (its bytes, and its format when
    /// known; `previous`, its entry, holds a request's readers when it was
    /// ingested before). An access file or front matter that cannot be
    /// read is the file's error: it is not ingested, never as public.
    fn labels(
        &mut self,
        path: &Path,
        format: Option<Format>,
        bytes: &[u8],
        previous: Option<&SourceEntry>,
    ) -> std::result::Result<Labels, String> {
        if let Some(labels) = self.pinned(previous) {
            return Ok(labels);
        }
        if format == Some(Format::Markdown)
            && let Ok(text) = std::str::from_utf8(bytes)
            && let Some(readers) = front_matter_access(path, text).map_err(|e| e.to_string())?
        {
            return Ok(Labels {
                readers,
                pinned: false,
                from_document: true,
            });
        }
        self.folder_labels(path)
    }

    /// The labels of the file at `path`, whose bytes are those `prev` was
    /// made from, without reading them: the document says what it said.
    fn labels_unread(
        &mut self,
        path: &Path,
        prev: &SourceEntry,
    ) -> std::result::Result<Labels, String> {
        if let Some(labels) = self.pinned(Some(prev)) {
            return Ok(labels);
        }
        if prev.from_document {
            return Ok(Labels {
                readers: Readers::stored(&prev.readers),
                pinned: false,
                from_document: true,
            });
        }
        self.folder_labels(path)
    }

    /// A request's readers, now or when `previous` was ingested.
    fn pinned(&self, previous: Option<&SourceEntry>) -> Option<Labels> {
        let readers = match (&self.request, previous.filter(|p| p.pinned)) {
            (Some(r), _) => r.clone(),
            (None, Some(prev)) => Readers::stored(&prev.readers),
            (None, None) => return None,
        };
        Some(Labels {
            readers,
            pinned: true,
            from_document: false,
        })
    }

    /// The nearest `.grace-access.yml`'s readers, else the default.
    fn folder_labels(&mut self, path: &Path) -> std::result::Result<Labels, String> {
        let readers = match path.parent().and_then(|dir| self.files.nearest(dir)) {
            Some(found) => found.map_err(|e| e.to_string())?,
            None => self.default.clone(),
        };
        Ok(Labels {
            readers,
            pinned: false,
            from_document: false,
        })
    }
}

/// Reads at most `max` bytes of `path` (`ingest.max_file_bytes`).
fn read_capped(path: &Path, max: u64) -> std::result::Result<Vec<u8>, String> {
    crate::durable::read_capped(path, max).map_err(|e| match e {
        CappedReadError::TooLarge { len, max } => {
            format!("too large: {len} bytes, over ingest.max_file_bytes = {max}")
        }
        e @ CappedReadError::Io(_) => e.to_string(),
    })
}
