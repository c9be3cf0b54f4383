//! Copying the embedded collection to a Qdrant server (`grace migrate --to
//! qdrant`) without embedding anything again: every point is read from the
//! qdrant-edge shard with its dense and lexical vectors and its payload
//! ([`VectorStore::scroll`]), written to the server in batches, and counted
//! there at the end. The ingest manifest is copied too, so a later `grace
//! ingest` with `storage.backend: qdrant` knows what the server holds and
//! only writes what changed.

use std::path::PathBuf;
use std::time::Instant;

use serde::Serialize;

use crate::config::{Backend, Config};
use crate::ingest::manifest::Manifest;
use crate::store::edge::EdgeStore;
use crate::store::qdrant::QdrantStore;
use crate::store::{StoreError, VectorStore};
use crate::{Error, Result};

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
    /// The embedded collection's folder.
    pub from: PathBuf,
    /// The server's URL.
    pub url: String,
    /// The collection name (the same on both sides).
    pub collection: String,
    /// Points copied (and counted on the server).
    pub points: usize,
    /// Size of the dense vectors.
    pub dimension: usize,
    /// Sources in the copied manifest (0 when the embedded collection had
    /// no manifest).
    pub sources: usize,
    /// Where the manifest was copied to, if there was one.
    pub manifest: Option<PathBuf>,
    /// The server's collection existed and was deleted first (`replace`).
    pub replaced: bool,
    /// Wall time in seconds.
    pub seconds: f64,
}

/// Copies the embedded collection `config.qdrant.collection` (in
/// `config.storage.data_dir`) to the Qdrant server at `config.qdrant.url`,
/// whatever `config.storage.backend` says.
pub fn to_qdrant(
    config: &Config,
    options: &MigrateOptions,
    on_event: &mut dyn FnMut(MigrateEvent),
) -> Result<MigrateReport> {
    if options.batch_size == 0 {
        return Err(Error::InvalidInput(
            "the batch size must be at least 1".into(),
        ));
    }
    let started = Instant::now();
    let mut edge = config.clone();
    edge.storage.backend = Backend::Edge;
    let mut server = config.clone();
    server.storage.backend = Backend::Qdrant;

    let source = EdgeStore::open_existing(&edge.collection_dir(), config.storage.search_threads)?;
    let total = source.count(None)?;
    on_event(MigrateEvent::Started { points: total });

    let replaced = options.replace && QdrantStore::drop_collection(&server.qdrant)?;
    let target = QdrantStore::open_or_create(&server.qdrant, source.dimension())?;
    let already = target.count(None)?;
    if already > 0 {
        return Err(Error::InvalidInput(format!(
            "the collection `{}` on the Qdrant server at {} already holds {already} points; \
             pass --replace to delete it and copy again, or choose another qdrant.collection",
            target.collection(),
            target.url()
        )));
    }

    let mut copied = 0;
    let mut offset = None;
    loop {
        let page = source.scroll(offset, options.batch_size)?;
        copied += page.points.len();
        target.upsert(page.points)?;
        on_event(MigrateEvent::Copied { copied });
        match page.next {
            Some(next) => offset = Some(next),
            None => break,
        }
    }

    on_event(MigrateEvent::Verifying);
    let on_server = target.count(None)?;
    if copied != total || on_server != total {
        return Err(StoreError::Server {
            url: target.url().to_string(),
            collection: target.collection().to_string(),
            message: format!(
                "the copy is incomplete: the embedded collection holds {total} points, \
                 {copied} were read and the server holds {on_server}; run the migration again with --replace"
            ),
        }
        .into());
    }

    // The manifest says what the store holds per source; the server now
    // holds exactly what the embedded store held.
    let (sources, manifest) = match Manifest::load(&edge.manifest_path())? {
        Some(m) => {
            let to = server.manifest_path();
            m.save(&to)?;
            (m.sources.len(), Some(to))
        }
        None => (0, None),
    };
    tracing::info!(points = total, url = %target.url(), collection = %target.collection(), "migrated");
    Ok(MigrateReport {
        from: edge.collection_dir(),
        url: target.url().to_string(),
        collection: target.collection().to_string(),
        points: total,
        dimension: source.dimension(),
        sources,
        manifest,
        replaced,
        seconds: started.elapsed().as_secs_f64(),
    })
}
