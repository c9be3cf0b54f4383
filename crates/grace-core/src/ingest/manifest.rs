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
//! With `storage.state: postgres` and the points on a Qdrant server, it is
//! a row in PostgreSQL instead ([`crate::state::Documents`]), which every
//! server reads: the ingest leader writes it, and a new leader continues
//! from it (a pending entry is rebuilt, as after a crash).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{IngestError, Result};
use crate::config::Config;
use crate::state::{Document, DocumentError, Documents, Scope};

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
    /// Whether `readers` came from the document itself (`access:` in
    /// Markdown front matter): unchanged bytes then mean unchanged readers.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub from_document: bool,
    /// The file's size and modification time when its bytes were read,
    /// if it had settled by then ([`FileStat::settled`]): while they stay
    /// the same, a later run takes the file as unchanged without reading
    /// it. `None` (and in manifests written before): read and hash it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stat: Option<FileStat>,
}

/// What a re-ingest compares a file by before reading it: its size, its
/// modification time, its change time (which nothing can set back: a tool
/// that restores an old modification time moves it) and its inode (a file
/// replaced by another is another inode).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileStat {
    /// Bytes.
    pub size: u64,
    /// Modification time, nanoseconds since the Unix epoch.
    pub mtime_ns: u64,
    /// Change time (of the contents or the metadata), nanoseconds since
    /// the Unix epoch (0 in a stat recorded without it: never equal to a
    /// file's, so the file is read once).
    #[serde(default)]
    pub ctime_ns: u64,
    /// The inode number (0 likewise).
    #[serde(default)]
    pub ino: u64,
}

/// A file changed this recently may change again within its times'
/// resolution (whole seconds, two on some file systems) without them
/// moving: its stat is not trusted, so the next run reads it again (git's
/// "racily clean" entries).
pub const SETTLE: std::time::Duration = std::time::Duration::from_secs(2);

impl FileStat {
    /// The stat of a file in `meta`, taken no earlier than `now`, when its
    /// modification and change times are at least [`SETTLE`] before `now`;
    /// `None` when either is newer (or unknown): then its bytes decide.
    pub fn settled(meta: &std::fs::Metadata, now: std::time::SystemTime) -> Option<Self> {
        use std::os::unix::fs::MetadataExt;
        let ns = |secs: i64, nanos: i64| -> Option<u64> {
            u64::try_from(secs)
                .ok()?
                .checked_mul(1_000_000_000)?
                .checked_add(u64::try_from(nanos).ok()?)
        };
        let mtime_ns = ns(meta.mtime(), meta.mtime_nsec())?;
        let ctime_ns = ns(meta.ctime(), meta.ctime_nsec())?;
        let now_ns =
            u64::try_from(now.duration_since(std::time::UNIX_EPOCH).ok()?.as_nanos()).ok()?;
        let settle = u64::try_from(SETTLE.as_nanos()).ok()?;
        // A time in the future (or beyond u64) is never settled.
        if mtime_ns.max(ctime_ns).checked_add(settle)? > now_ns {
            return None;
        }
        Some(Self {
            size: meta.len(),
            mtime_ns,
            ctime_ns,
            ino: meta.ino(),
        })
    }
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

    /// The manifest of `config`'s collection, where it is kept
    /// ([`ManifestStore`]); `None` when there is none yet.
    pub fn load_for(config: &Config) -> Result<Option<Self>> {
        ManifestStore::open(config)?.load()
    }

    /// The manifest in `bytes`, read from `place` (named in errors).
    fn parse(bytes: &[u8], place: &str) -> Result<Self> {
        let manifest: Manifest =
            serde_json::from_slice(bytes).map_err(|e| IngestError::Manifest {
                path: PathBuf::from(place),
                message: e.to_string(),
            })?;
        if manifest.version != MANIFEST_VERSION {
            return Err(IngestError::Manifest {
                path: PathBuf::from(place),
                message: format!(
                    "format version {} is not {MANIFEST_VERSION}; this grace cannot read it",
                    manifest.version
                ),
            });
        }
        Ok(manifest)
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

/// Where a collection's manifest is kept: its file
/// ([`Config::manifest_path`]), or its row in PostgreSQL.
#[derive(Debug)]
pub struct ManifestStore {
    docs: Documents,
    doc: Document,
    /// The writers' lock the ingest holds (checked before each save).
    writer: Option<crate::state::ClusterLock>,
}

impl ManifestStore {
    /// Where `config`'s collection keeps its manifest.
    pub fn open(config: &Config) -> Result<Self> {
        Ok(Self {
            docs: Documents::open(config, Scope::Collection)?,
            doc: Document {
                name: format!("manifest/{}", config.collection.name),
                file: config.manifest_path(),
            },
            writer: None,
        })
    }

    /// The store, saved only while `writer` (the servers' writers' lock)
    /// is held: an ingest whose lock was lost stops instead of writing
    /// over another's manifest.
    pub fn guarded_by(mut self, writer: crate::state::ClusterLock) -> Self {
        self.writer = Some(writer);
        self
    }

    /// The manifest's file, or its row, for messages.
    pub fn place(&self) -> String {
        self.docs.place(&self.doc)
    }

    /// The manifest; `None` when there is none yet.
    pub fn load(&self) -> Result<Option<Manifest>> {
        match self
            .docs
            .read(&self.doc)
            .map_err(|e| self.error(e, "read"))?
        {
            Some(bytes) => Manifest::parse(&bytes, &self.place()).map(Some),
            None => Ok(None),
        }
    }

    /// Writes `manifest` whole (a crash leaves the old one or the new one).
    pub fn save(&self, manifest: &Manifest) -> Result<()> {
        if let Some(writer) = &self.writer {
            writer.check()?;
        }
        let bytes = serde_json::to_vec(manifest).map_err(|e| IngestError::Manifest {
            path: PathBuf::from(self.place()),
            message: e.to_string(),
        })?;
        self.docs
            .write(&self.doc, &bytes)
            .map_err(|e| self.error(e, "write"))
    }

    /// Deletes the manifest; whether there was one.
    pub fn remove(&self) -> Result<bool> {
        self.docs
            .remove(&self.doc)
            .map_err(|e| self.error(e, "delete"))
    }

    fn error(&self, e: DocumentError, action: &'static str) -> IngestError {
        match e {
            DocumentError::Io { path, source, .. } => IngestError::Io {
                action: match action {
                    "read" => "read the manifest",
                    "write" => "write the manifest",
                    _ => "delete the manifest",
                },
                path,
                source,
            },
            DocumentError::State(e) => IngestError::State(e),
        }
    }
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

    fn store(dir: &std::path::Path) -> ManifestStore {
        let mut config = Config::default();
        config.storage.data_dir = dir.to_path_buf();
        ManifestStore::open(&config).unwrap()
    }

    #[test]
    fn save_and_load_round_trip() {
        let d = tempfile::tempdir().unwrap();
        let store = store(d.path());
        assert_eq!(store.load().unwrap(), None);
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
                from_document: false,
                stat: Some(FileStat {
                    size: 10,
                    mtime_ns: 7,
                    ctime_ns: 8,
                    ino: 9,
                }),
            },
        );
        store.save(&m).unwrap();
        assert_eq!(store.load().unwrap(), Some(m.clone()));
        assert_eq!(m.committed_points(), 2);
        let file = std::path::PathBuf::from(store.place());
        assert!(file.exists() && file.starts_with(d.path()));
        assert!(!file.with_extension("json.tmp").exists());
    }

    #[test]
    fn only_a_settled_file_has_a_stat() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.md");
        std::fs::write(&p, b"text").unwrap();
        let now = std::time::SystemTime::now();
        let meta = std::fs::metadata(&p).unwrap();
        assert_eq!(FileStat::settled(&meta, now), None, "just written");
        let later = now + SETTLE + std::time::Duration::from_millis(10);
        let stat = FileStat::settled(&meta, later).unwrap();
        assert_eq!(stat.size, 4);
        // A time before the epoch, or unknown, is never trusted.
        let f = std::fs::File::options().write(true).open(&p).unwrap();
        f.set_modified(std::time::UNIX_EPOCH - std::time::Duration::from_secs(5))
            .unwrap();
        let meta = std::fs::metadata(&p).unwrap();
        assert_eq!(FileStat::settled(&meta, later), None);
        // Nor one far in the future (a hostile file in a watched folder).
        let far = now + std::time::Duration::from_secs(100 * 365 * 86_400);
        f.set_modified(far).unwrap();
        let meta = std::fs::metadata(&p).unwrap();
        assert_eq!(FileStat::settled(&meta, later), None);
        // An old modification time put back moves the change time: the
        // file is not settled until that is old too.
        f.set_modified(now - std::time::Duration::from_secs(3600))
            .unwrap();
        let meta = std::fs::metadata(&p).unwrap();
        assert_eq!(FileStat::settled(&meta, std::time::SystemTime::now()), None);
        let stat = FileStat::settled(&meta, later + SETTLE).unwrap();
        assert!(stat.ctime_ns > stat.mtime_ns && stat.ino > 0, "{stat:?}");
    }

    #[test]
    fn corrupt_manifest_is_an_error_naming_the_file() {
        let d = tempfile::tempdir().unwrap();
        let store = store(d.path());
        let p = std::path::PathBuf::from(store.place());
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, b"{not json").unwrap();
        let err = store.load().unwrap_err().to_string();
        assert!(err.contains("grace.json"), "{err}");
    }
}
