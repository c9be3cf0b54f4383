//! Reading, hashing and chunking one file, unless the manifest says it is
//! unchanged.

use std::path::Path;

use sha2::{Digest, Sha256};

use super::chunk::{self, ChunkParams};
use super::load::{self, Format, LoadError};
use super::manifest::{EntryState, SourceEntry};
use super::{Ingestor, Prepared, limits, walk};
use crate::access::Readers;
use crate::access::file::{AccessFiles, front_matter_access};
use crate::durable::CappedReadError;

impl Ingestor<'_> {
    /// Reads, hashes and chunks a file; `Ok(None)` when it is unchanged,
    /// `Err(reason)` when it cannot be ingested.
    pub(super) fn prepare(
        &self,
        candidate: &walk::Candidate,
        source: &str,
        previous: Option<&SourceEntry>,
        pipeline_changed: bool,
        access: &mut Access,
    ) -> std::result::Result<Outcome, String> {
        let path = &candidate.path;
        let bytes = read_capped(path, self.config.max_file_bytes)?;
        let hash = crate::durable::hex(&Sha256::digest(&bytes));
        let format = Format::from_path(path);
        let (readers, pinned) = access.readers(path, format, &bytes, previous)?;
        if let Some(prev) = previous
            && prev.state == EntryState::Committed
            && prev.content_hash == hash
            && !pipeline_changed
        {
            return Ok(
                if Readers::stored(&prev.readers) == readers && prev.pinned == pinned {
                    Outcome::Unchanged
                } else {
                    Outcome::Relabel { readers, pinned }
                },
            );
        }
        let format = match format {
            Some(f) => f,
            None if candidate.explicit => Format::Text,
            None => return Err("unsupported file type".into()),
        };
        let doc = load::load(&bytes, format, &limits(self.config))
            .map_err(|e: LoadError| e.to_string())?;
        let params = ChunkParams {
            size: self.config.chunk_size,
            overlap: self.config.chunk_overlap,
        };
        let chunks = chunk::chunk_sections(&doc.sections, params);
        Ok(Outcome::Changed(Prepared {
            source: source.to_string(),
            path: path.clone(),
            hash,
            chunks,
            title: doc.title,
            readers,
            pinned,
            existed: previous.is_some(),
            bytes: 0,
        }))
    }
}

/// What [`Ingestor::prepare`] found a file to need.
pub(super) enum Outcome {
    /// The store holds it as it is, for the same readers.
    Unchanged,
    /// The same text for other readers: its chunks are re-labelled, not
    /// embedded again.
    Relabel {
        /// The readers now.
        readers: Readers,
        /// Whether a request gave them.
        pinned: bool,
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
    /// The readers of the file at `path` (its bytes, and its format when
    /// known), and whether a request gave them (now, or when it was
    /// ingested before: `previous`). An access file or front matter that
    /// cannot be read is the file's error: it is not ingested, never as
    /// public.
    fn readers(
        &mut self,
        path: &Path,
        format: Option<Format>,
        bytes: &[u8],
        previous: Option<&SourceEntry>,
    ) -> std::result::Result<(Readers, bool), String> {
        if let Some(r) = &self.request {
            return Ok((r.clone(), true));
        }
        if let Some(prev) = previous.filter(|p| p.pinned) {
            return Ok((Readers::stored(&prev.readers), true));
        }
        if format == Some(Format::Markdown)
            && let Ok(text) = std::str::from_utf8(bytes)
            && let Some(r) = front_matter_access(path, text).map_err(|e| e.to_string())?
        {
            return Ok((r, false));
        }
        match path.parent().and_then(|dir| self.files.nearest(dir)) {
            Some(found) => found.map(|r| (r, false)).map_err(|e| e.to_string()),
            None => Ok((self.default.clone(), false)),
        }
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
