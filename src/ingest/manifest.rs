//! The ingest manifest: per source, the content hash and point ids of what
//! the store holds, so re-ingesting skips unchanged files and replaces or
//! prunes the chunks of changed or deleted ones.
//!
//! Crash safety rests on one rule: a source is marked `pending` (and the
//! manifest saved) before its points are touched, and marked `committed`
//! only after the store has flushed them. A pending entry found at start-up
//! means the store's state for that source is unknown, so it is rebuilt
//! (delete by source, then upsert) — never trusted, never duplicated.
//! The file is replaced atomically (write a temporary file, fsync, rename).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{IngestError, Result};

/// Format version of the manifest file.
pub const MANIFEST_VERSION: u32 = 1;

/// Whether a source's points are known to match its entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryState {
    /// Being written: the store may hold any subset of old and new points.
    Pending,
    /// The store holds exactly `point_ids` for `content_hash`.
    Committed,
}

/// What the store holds for one source.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SourceEntry {
    /// Hex SHA-256 of the file's bytes as ingested.
    pub content_hash: String,
    /// Ids of the source's points, in chunk order.
    pub point_ids: Vec<u64>,
    /// Whether the store is known to hold exactly these points.
    pub state: EntryState,
    /// Seconds since the Unix epoch of the last change.
    pub updated_at: u64,
    /// Who may read it, as applied to its chunks (empty in manifests
    /// written before readers existed: everyone).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub readers: Vec<String>,
    /// Whether `readers` came from an ingest request (`--access`, an
    /// API's `access`): they stay until a request gives others, whatever
    /// the document or its folder says later.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pinned: bool,
}

/// The manifest of one collection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Format version of the file ([`MANIFEST_VERSION`]).
    pub version: u32,
    /// Identifies how chunks were made and embedded (model, chunking,
    /// lexical encoding). When it changes, every source is re-ingested.
    pub pipeline: String,
    /// One entry per source (canonical path), in path order.
    pub sources: BTreeMap<String, SourceEntry>,
}

impl Manifest {
    /// An empty manifest for `pipeline`.
    pub fn new(pipeline: &str) -> Self {
        Self {
            version: MANIFEST_VERSION,
            pipeline: pipeline.to_string(),
            sources: BTreeMap::new(),
        }
    }

    /// Reads the manifest at `path`; an absent file is an empty manifest.
    pub fn load(path: &Path) -> Result<Option<Self>> {
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => {
                return Err(IngestError::Io {
                    action: "read the manifest",
                    path: path.to_path_buf(),
                    source,
                });
            }
        };
        let manifest: Manifest =
            serde_json::from_slice(&bytes).map_err(|e| IngestError::Manifest {
                path: path.to_path_buf(),
                message: e.to_string(),
            })?;
        if manifest.version != MANIFEST_VERSION {
            return Err(IngestError::Manifest {
                path: path.to_path_buf(),
                message: format!(
                    "format version {} is not {MANIFEST_VERSION}; this grace cannot read it",
                    manifest.version
                ),
            });
        }
        Ok(Some(manifest))
    }

    /// Writes the manifest atomically.
    pub fn save(&self, path: &Path) -> Result<()> {
        let io = |action: &'static str, p: &Path| {
            let p = p.to_path_buf();
            move |source| IngestError::Io {
                action,
                path: p,
                source,
            }
        };
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(io("create the folder", dir))?;
        let bytes = serde_json::to_vec(self).map_err(|e| IngestError::Manifest {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        crate::durable::replace_file(path, &tmp_path(path), &bytes).map_err(|e| IngestError::Io {
            action: e.action,
            path: e.path,
            source: e.source,
        })
    }

    /// Total points over committed sources.
    pub fn committed_points(&self) -> usize {
        self.sources
            .values()
            .filter(|e| e.state == EntryState::Committed)
            .map(|e| e.point_ids.len())
            .sum()
    }
}

fn tmp_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".tmp");
    path.with_file_name(name)
}

/// Seconds since the Unix epoch.
pub fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn save_and_load_round_trip() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("m/grace.json");
        assert_eq!(Manifest::load(&p).unwrap(), None);
        let mut m = Manifest::new("p1");
        m.sources.insert(
            "/a.md".into(),
            SourceEntry {
                content_hash: "h".into(),
                point_ids: vec![1, 2],
                state: EntryState::Committed,
                updated_at: 5,
                readers: Vec::new(),
                pinned: false,
            },
        );
        m.save(&p).unwrap();
        assert_eq!(Manifest::load(&p).unwrap(), Some(m.clone()));
        assert_eq!(m.committed_points(), 2);
        assert!(!tmp_path(&p).exists());
    }

    #[test]
    fn corrupt_manifest_is_an_error_naming_the_file() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("grace.json");
        std::fs::write(&p, b"{not json").unwrap();
        let err = Manifest::load(&p).unwrap_err().to_string();
        assert!(err.contains("grace.json"), "{err}");
    }
}
