//! Copying a collection between the embedded store and a Qdrant server
//! (`grace migrate --to qdrant`, and back with `--to edge`) without
//! embedding anything again: every point is read with its dense and
//! lexical vectors and its payload ([`VectorStore::scroll`](crate::store::VectorStore::scroll)), written to
//! the other store in batches (each retried under `ingest.store_retries`),
//! and counted there at the end. The ingest manifest is copied too, so a
//! later `grace ingest` on the other backend knows what it holds and only
//! writes what changed.

use std::path::PathBuf;
use std::time::Instant;

use serde::Serialize;

use crate::config::{Backend, Config};
use crate::error::{Error, Result};
use crate::ingest::manifest::{Manifest, ManifestStore};
use crate::kb::{OpenMode, open_store};
use crate::store::StoreError;
use crate::store::edge::EdgeStore;
use crate::store::retry::{RetryPolicy, with_retries};

/// How to copy.
#[derive(Debug, Clone)]
pub struct MigrateOptions {
    /// Points read and written per request.
    pub batch_size: usize,
    /// Delete the server's collection first if it exists. Without it, a
    /// collection that already holds points is refused.
    pub replace: bool,
}

impl Default for MigrateOptions {
    fn default() -> Self {
        Self {
            batch_size: 256,
            replace: false,
        }
    }
}

/// Progress of a migration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MigrateEvent {
    /// The source is open: it holds `points` points.
    Started {
        /// Points in the embedded collection.
        points: usize,
    },
    /// `copied` points of the total are on the server.
    Copied {
        /// Points copied so far.
        copied: usize,
    },
    /// Counting the server's points.
    Verifying,
}

/// What a migration did.
#[derive(Debug, Clone, Serialize)]
pub struct MigrateReport {
    /// The backend copied from (`edge`, `qdrant`).
    pub from_backend: &'static str,
    /// The collection copied from (its folder, or `<url>/collections/<name>`).
    pub from: String,
    /// The backend copied to.
    pub to_backend: &'static str,
    /// The collection copied to.
    pub to: String,
    /// The collection name (the same on both sides).
    pub collection: String,
    /// Points copied (and counted in the target).
    pub points: usize,
    /// Size of the dense vectors.
    pub dimension: usize,
    /// Sources in the copied manifest (0 when the source had none).
    pub sources: usize,
    /// Where the manifest was copied to, if there was one.
    pub manifest: Option<std::path::PathBuf>,
    /// The target collection existed and was deleted first (`replace`).
    pub replaced: bool,
    /// Writes that failed for a moment and were tried again.
    pub retries: usize,
    /// Wall time in seconds.
    pub seconds: f64,
}

/// Copies collection `config.collection.name` from the other backend to
/// `to` (`Backend::Qdrant`: from `config.storage.data_dir` to the server at
/// `config.qdrant.url`; `Backend::Edge`: back), whatever
/// `config.storage.backend` says.
pub fn migrate(
    config: &Config,
    to: Backend,
    options: &MigrateOptions,
    on_event: &mut dyn FnMut(MigrateEvent),
) -> Result<MigrateReport> {
    if options.batch_size == 0 {
        return Err(Error::InvalidInput(
            "the batch size must be at least 1".into(),
        ));
    }
    let started = Instant::now();
    let from = match to {
        Backend::Qdrant => Backend::Edge,
        Backend::Edge => Backend::Qdrant,
    };
    let (mut source_config, mut target_config) = (config.clone(), config.clone());
    source_config.storage.backend = from;
    target_config.storage.backend = to;

    let source = open_store(&source_config, OpenMode::Existing, 0)?;
    let total = source.count(None)?;
    on_event(MigrateEvent::Started { points: total });
    let dimension = source.info()?.dimension;

    let replaced = options.replace && drop_collection(&target_config)?;
    let target = open_store(&target_config, OpenMode::Create, dimension)?;
    let already = target.count(None)?;
    let target_location = target_config.collection_location().display().to_string();
    if already > 0 {
        return Err(Error::InvalidInput(format!(
            "the collection {target_location} already holds {already} points; \
             pass --replace to delete it and copy again, or choose another collection.name",
        )));
    }

    let policy = RetryPolicy::new(
        config.ingest.store_retries,
        config.ingest.store_retry_seconds,
    );
    let (mut copied, mut retries) = (0, 0);
    let mut offset = None;
    loop {
        let page = source.scroll(offset, options.batch_size)?;
        copied += page.points.len();
        with_retries(policy, &mut |_| retries += 1, || {
            target.upsert(page.points.clone())
        })?;
        on_event(MigrateEvent::Copied { copied });
        match page.next {
            Some(next) => offset = Some(next),
            None => break,
        }
    }
    target.flush()?;
    target.optimize()?;

    on_event(MigrateEvent::Verifying);
    let in_target = target.count(None)?;
    if copied != total || in_target != total {
        return Err(StoreError::Engine {
            path: target_config.collection_location(),
            message: format!(
                "the copy is incomplete: the source holds {total} points, \
                 {copied} were read and the target holds {in_target}; run the migration again with --replace"
            ),
        }
        .into());
    }

    // The manifest says what the store holds per source; the target now
    // holds exactly what the source held.
    let (sources, manifest) = match Manifest::load_for(&source_config)? {
        Some(m) => {
            let to = ManifestStore::open(&target_config)?;
            to.save(&m)?;
            (m.sources.len(), Some(PathBuf::from(to.place())))
        }
        None => (0, None),
    };
    tracing::info!(points = total, from = from.as_str(), to = to.as_str(), collection = %config.collection.name, "migrated");
    Ok(MigrateReport {
        from_backend: from.as_str(),
        from: source_config.collection_location().display().to_string(),
        to_backend: to.as_str(),
        to: target_location,
        collection: config.collection.name.clone(),
        points: total,
        dimension,
        sources,
        manifest,
        replaced,
        retries,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// Deletes the target collection (and its manifest); whether it existed.
fn drop_collection(config: &Config) -> Result<bool> {
    let existed = match config.storage.backend {
        Backend::Qdrant => crate::kb::drop_server_collection(&config.qdrant, &config.collection)?,
        Backend::Edge => {
            let dir = config.collection_dir();
            if !dir.exists() {
                false
            } else {
                // Opening takes the store's lock: a collection another
                // process uses is refused (Busy), not deleted under it.
                drop(EdgeStore::open_existing(&dir, &config.storage)?);
                std::fs::remove_dir_all(&dir).map_err(|source| StoreError::Io {
                    action: "delete",
                    path: dir.clone(),
                    source,
                })?;
                true
            }
        }
    };
    if existed {
        ManifestStore::open(config)?.remove()?;
    }
    Ok(existed)
}
