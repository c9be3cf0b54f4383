//! Reading, hashing and chunking one file, unless the manifest says it is
//! unchanged.

use std::path::Path;

use sha2::{Digest, Sha256};

use super::chunk::{self, ChunkParams};
use super::load::{self, Format, LoadError};
use super::manifest::{EntryState, SourceEntry};
use super::{Ingestor, Prepared, limits, walk};

impl Ingestor<'_> {
    /// Reads, hashes and chunks a file; `Ok(None)` when it is unchanged,
    /// `Err(reason)` when it cannot be ingested.
    pub(super) fn prepare(
        &self,
        candidate: &walk::Candidate,
        source: &str,
        previous: Option<&SourceEntry>,
        pipeline_changed: bool,
    ) -> std::result::Result<Option<Prepared>, String> {
        let path = &candidate.path;
        let bytes = read_capped(path, self.config.max_file_bytes)?;
        let hash = crate::durable::hex(&Sha256::digest(&bytes));
        if let Some(prev) = previous
            && prev.state == EntryState::Committed
            && prev.content_hash == hash
            && !pipeline_changed
        {
            return Ok(None);
        }
        let format = match Format::from_path(path) {
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
        Ok(Some(Prepared {
            source: source.to_string(),
            path: path.clone(),
            hash,
            chunks,
            title: doc.title,
            existed: previous.is_some(),
            bytes: 0,
        }))
    }
}

/// Reads at most `max` bytes of `path`: a file over it (or one that grows
/// past it while it is read) is refused, without reading more than `max`
/// + 1 bytes, whatever its size said a moment before.
fn read_capped(path: &Path, max: u64) -> std::result::Result<Vec<u8>, String> {
    use std::io::Read;
    let too_large =
        |len: u64| format!("too large: {len} bytes, over ingest.max_file_bytes = {max}");
    let file = std::fs::File::open(path).map_err(|e| format!("unreadable: {e}"))?;
    let len = file
        .metadata()
        .map_err(|e| format!("unreadable: {e}"))?
        .len();
    if len > max {
        return Err(too_large(len));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    file.take(max.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| format!("unreadable: {e}"))?;
    if bytes.len() as u64 > max {
        return Err(too_large(bytes.len() as u64));
    }
    Ok(bytes)
}
