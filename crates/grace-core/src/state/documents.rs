//! Documents a knowledge base keeps whole: the ingest manifest, the
//! self-calibration, the fits on feedback. Each is a file in the data
//! folder, or, with `storage.state: postgres`, a row of one table that
//! every server reads, so that a fit one server made scores the others'
//! runs and a new ingest leader continues the manifest the old one left.
//!
//! What describes a collection's points (the manifest, its
//! self-calibration) is shared only when the points are (`storage.backend:
//! qdrant`: every server on one Qdrant cluster); with the embedded store
//! each server has its own points, so its own file.

use std::path::{Path, PathBuf};

use super::{Result, Schema, StateError, Store, params};
use crate::config::{Backend, Config, StateBackend};

/// The documents' schema, at version 1.
const SCHEMA: Schema = Schema {
    name: "documents",
    what: "documents",
    ddl: "
CREATE TABLE IF NOT EXISTS documents (
    name       TEXT PRIMARY KEY,
    body       BLOB NOT NULL,
    updated_at INTEGER NOT NULL            -- Unix milliseconds
);
",
    version: 1,
    migrations: &[],
    durable: true,
};

/// Whether the servers of `config` share its collection's points and
/// what describes them (the manifest): state in PostgreSQL and the points
/// on a Qdrant server or cluster.
pub fn shares_collection(config: &Config) -> bool {
    config.storage.state == StateBackend::Postgres && config.storage.backend == Backend::Qdrant
}

/// Whose a document is: the knowledge base's, or its collection's points'.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The knowledge base's (the fits on feedback): shared whenever state
    /// is in PostgreSQL.
    KnowledgeBase,
    /// The collection's points' (the manifest, the self-calibration):
    /// shared when the points are too (a Qdrant server or cluster).
    Collection,
}

/// One document: its name in PostgreSQL, its file on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    /// Its row's name (`manifest/<collection>`).
    pub name: String,
    /// Its file in the data folder.
    pub file: PathBuf,
}

/// Where documents are kept: files, or PostgreSQL's table.
#[derive(Debug)]
pub struct Documents {
    store: Option<Store>,
}

/// What went wrong reading or writing a document.
#[derive(Debug, thiserror::Error)]
pub enum DocumentError {
    /// The file could not be read or written.
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        /// What was being done.
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// PostgreSQL failed.
    #[error(transparent)]
    State(#[from] StateError),
}

impl Documents {
    /// Where `config` keeps `scope`'s documents: PostgreSQL's table when
    /// its state is there (and, for a collection's, its points are on a
    /// Qdrant server), else files.
    pub fn open(config: &Config, scope: Scope) -> Result<Self> {
        let shared = match scope {
            Scope::KnowledgeBase => config.storage.state == StateBackend::Postgres,
            Scope::Collection => shares_collection(config),
        };
        let store = match shared {
            true => Some(Store::open(
                config,
                SCHEMA,
                // Not used: PostgreSQL's table.
                Path::new(""),
            )?),
            false => None,
        };
        Ok(Self { store })
    }

    /// Where `doc` is, for messages: its file, or its row in PostgreSQL.
    pub fn place(&self, doc: &Document) -> String {
        match &self.store {
            None => doc.file.display().to_string(),
            Some(store) => format!("{} ({})", doc.name, store.place()),
        }
    }

    /// `doc`'s bytes; `None` when there is none.
    pub fn read(&self, doc: &Document) -> std::result::Result<Option<Vec<u8>>, DocumentError> {
        match &self.store {
            None => unless_missing(std::fs::read(&doc.file), "read", doc),
            Some(store) => Ok(store.read(|c| {
                c.query_opt(
                    "SELECT body FROM documents WHERE name = ?1",
                    params![doc.name],
                )?
                .map(|r| r.get::<Vec<u8>>(0))
                .transpose()
            })?),
        }
    }

    /// Replaces `doc` with `bytes` whole: a crash leaves the old one or the
    /// new one.
    pub fn write(&self, doc: &Document, bytes: &[u8]) -> std::result::Result<(), DocumentError> {
        match &self.store {
            None => {
                let dir = doc.file.parent().unwrap_or(Path::new("."));
                std::fs::create_dir_all(dir).map_err(|source| DocumentError::Io {
                    action: "create the folder of",
                    path: doc.file.clone(),
                    source,
                })?;
                let mut tmp = doc.file.clone().into_os_string();
                tmp.push(".tmp");
                crate::durable::replace_file(&doc.file, Path::new(&tmp), bytes).map_err(|e| {
                    DocumentError::Io {
                        action: e.action,
                        path: e.path,
                        source: e.source,
                    }
                })
            }
            Some(store) => Ok(store.write(|c| {
                c.execute(
                    "INSERT INTO documents (name, body, updated_at) VALUES (?1, ?2, ?3) \
                     ON CONFLICT (name) DO UPDATE SET body = excluded.body, updated_at = excluded.updated_at",
                    params![doc.name, bytes, super::now_ms()],
                )
            })
            .map(|_| ())?),
        }
    }

    /// Deletes `doc`; whether there was one.
    pub fn remove(&self, doc: &Document) -> std::result::Result<bool, DocumentError> {
        match &self.store {
            None => Ok(unless_missing(std::fs::remove_file(&doc.file), "delete", doc)?.is_some()),
            Some(store) => Ok(store.write(|c| {
                c.execute("DELETE FROM documents WHERE name = ?1", params![doc.name])
            })? > 0),
        }
    }

    /// Calls `wake` when another server changed a document (PostgreSQL);
    /// with files, never.
    pub fn watch(&self, wake: impl Fn() + Send + Sync + 'static) {
        if let Some(store) = &self.store {
            store.watch(wake);
        }
    }
}

/// A file operation's result; `None` when the file is not there.
fn unless_missing<T>(
    done: std::io::Result<T>,
    action: &'static str,
    doc: &Document,
) -> std::result::Result<Option<T>, DocumentError> {
    match done {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(DocumentError::Io {
            action,
            path: doc.file.clone(),
            source,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn on_files_a_document_is_replaced_whole_and_removed() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = Config::default();
        config.storage.data_dir = dir.path().to_path_buf();
        let docs = Documents::open(&config, Scope::KnowledgeBase).unwrap();
        let doc = Document {
            name: "fits".into(),
            file: dir.path().join("sub/fits.json"),
        };
        assert_eq!(docs.read(&doc).unwrap(), None);
        docs.write(&doc, b"one").unwrap();
        docs.write(&doc, b"two").unwrap();
        assert_eq!(docs.read(&doc).unwrap().as_deref(), Some(&b"two"[..]));
        assert_eq!(docs.place(&doc), doc.file.display().to_string());
        assert!(docs.remove(&doc).unwrap());
        assert!(!docs.remove(&doc).unwrap());
        assert!(!dir.path().join("sub/fits.json.tmp").exists());
    }
}
