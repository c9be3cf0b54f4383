//! Vector store: the [`VectorStore`] trait and its implementations.
//!
//! A point is one chunk: a dense vector (`dense`, cosine), a sparse lexical
//! vector (`lexical`, with the IDF modifier) and a [`ChunkPayload`]. The
//! embedded implementation is [`edge::EdgeStore`] (qdrant-edge, on disk, in
//! process); `qdrant::QdrantStore` (the `qdrant-server` feature) keeps the
//! same collection in a Qdrant server over gRPC. Ranking fusion is not a
//! store concern: the store answers one
//! ranking per query and [`fusion`] combines them, so every backend fuses
//! the same way.

pub mod edge;
pub mod fusion;
#[cfg(feature = "qdrant-server")]
pub mod qdrant;
pub mod retry;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::lexical::SparseVector;

/// Name of the dense vector of a point.
pub const DENSE_VECTOR: &str = "dense";
/// Name of the sparse (lexical) vector of a point.
pub const LEXICAL_VECTOR: &str = "lexical";

/// Result of store operations.
pub type Result<T> = std::result::Result<T, StoreError>;

/// What went wrong in the vector store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Nothing has been ingested into this collection yet.
    #[error(
        "no knowledge base at {path}: run `grace ingest PATH...` first (or check storage.data_dir and collection.name)"
    )]
    NotFound {
        /// The collection's folder in the embedded store.
        path: PathBuf,
    },
    /// The collection holds vectors of another size than the model gives.
    #[error(
        "the collection at {path} holds {found}-dimensional vectors but the embedding model gives {expected}: \
         use another collection.name or storage.data_dir, or delete {path} and ingest again"
    )]
    DimensionMismatch {
        /// The collection (its folder, or `<url>/collections/<name>` on a server).
        path: PathBuf,
        /// Length of the dense vectors the collection holds.
        found: usize,
        /// Length of the vectors being written (the model's dimension).
        expected: usize,
    },
    /// Another process holds the store.
    #[error(
        "the knowledge base at {path} is in use by another grace process{holder}; wait for it to finish (a running `grace serve` keeps it open: use its API instead)"
    )]
    Busy {
        /// The collection's folder.
        path: PathBuf,
        /// ` (pid N)` when the lock file names the holding process; else empty.
        holder: String,
    },
    /// The engine reported an error.
    #[error("vector store at {path}: {message}")]
    Engine {
        /// The collection's folder.
        path: PathBuf,
        /// The engine's message.
        message: String,
    },
    /// A file operation around the store failed.
    #[error("cannot {action} {path}: {source}")]
    Io {
        /// What was being done (`create the folder`, `lock`, …).
        action: &'static str,
        /// The file or folder it was done to.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The Qdrant server has no collection of that name.
    #[error(
        "no collection `{collection}` on the Qdrant server at {url}: run `grace ingest PATH...` with storage.backend qdrant, \
         or `grace migrate --to qdrant` to copy the embedded one (or check qdrant.url and collection.name)"
    )]
    CollectionNotFound {
        /// The server's gRPC URL (`qdrant.url`).
        url: String,
        /// The collection looked for (`collection.name`).
        collection: String,
    },
    /// The Qdrant server cannot be reached, is overloaded, or timed out;
    /// trying again later may work.
    #[error(
        "cannot reach the Qdrant server at {url} ({message}); check qdrant.url (GRACE_QDRANT__URL), \
         that the server runs, and that the URL names its gRPC port (6334, not the REST port 6333)"
    )]
    Unavailable {
        /// The server's gRPC URL (`qdrant.url`).
        url: String,
        /// What failed.
        message: String,
    },
    /// The Qdrant server refused the API key.
    #[error(
        "the Qdrant server at {url} refused the request ({message}); check qdrant.api_key (GRACE_QDRANT__API_KEY)"
    )]
    Unauthorized {
        /// The server's gRPC URL (`qdrant.url`).
        url: String,
        /// The server's message.
        message: String,
    },
    /// The Qdrant server's version is not one GRACE supports.
    #[error(
        "the Qdrant server at {url} reports version {server:?}; grace works with Qdrant {supported}: \
         upgrade the server, or use a grace release made for it"
    )]
    Incompatible {
        /// The server's gRPC URL (`qdrant.url`).
        url: String,
        /// The version the server reports.
        server: String,
        /// The versions this build works with (`qdrant::supported`).
        supported: String,
    },
    /// A collection exists with parameters other than GRACE needs or the
    /// configuration asks for.
    #[error(
        "the collection {path} exists with other parameters: {differences}. Use another collection.name, \
         or delete it (or `grace migrate --replace`) and ingest again"
    )]
    ParametersDiffer {
        /// `<url>/collections/<name>`.
        path: PathBuf,
        /// What differs, and what to do about each.
        differences: String,
    },
    /// The Qdrant server answered with an error.
    #[error("Qdrant server at {url}, collection `{collection}`: {message}")]
    Server {
        /// The server's gRPC URL (`qdrant.url`).
        url: String,
        /// The collection the request was for.
        collection: String,
        /// The server's message.
        message: String,
    },
    /// The embedded store's disk has too little free space for a write
    /// (`storage.min_free_mb`): nothing was written.
    #[error(
        "the disk holding {path} has {free_mib} MiB free, under the {needed_mib} MiB this write needs \
         with storage.min_free_mb kept free; nothing was written. Free space on that disk and run it again"
    )]
    DiskFull {
        /// The collection's folder.
        path: PathBuf,
        /// MiB free (for this user).
        free_mib: u64,
        /// MiB the write needs, with `storage.min_free_mb`.
        needed_mib: u64,
    },
    /// A stored point does not have the payload GRACE writes.
    #[error(
        "stored point {id} has a malformed payload ({message}); was this collection written by another program?"
    )]
    BadPayload {
        /// The point's id.
        id: String,
        /// What is wrong with it.
        message: String,
    },
}

impl StoreError {
    /// Whether the same call may succeed if tried again (the store is busy,
    /// or the server is unreachable or overloaded for now).
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            StoreError::Busy { .. } | StoreError::Unavailable { .. }
        )
    }
}

/// What GRACE stores with every chunk.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChunkPayload {
    /// The document: its canonical absolute path.
    pub source: String,
    /// Heading path joined with ` > `.
    pub section: String,
    /// Position of the chunk in its document, from 0.
    pub chunk_index: usize,
    /// The chunk's text.
    pub text: String,
    /// sha256 of the document's bytes when the chunk was made.
    pub content_hash: String,
    /// The page the chunk is on, from 1, for documents with pages (PDF).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page: Option<u32>,
    /// Who may read it (`public`, `group:NAME`, `user:NAME`; see
    /// [`crate::access`]); empty on chunks written before readers
    /// existed, which everyone may read. Indexed: searches filter on it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub readers: Vec<String>,
}

/// One point to upsert (or read back by [`VectorStore::scroll`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ChunkPoint {
    /// Deterministic id ([`point_id`]).
    pub id: u64,
    /// The chunk's embedding (dense vector).
    pub dense: Vec<f32>,
    /// The chunk's lexical (sparse) vector.
    pub lexical: SparseVector,
    /// What GRACE stores with the chunk.
    pub payload: ChunkPayload,
}

/// Deterministic point id of a chunk: the same source, position and content
/// always give the same id, so re-ingesting overwrites instead of duplicating.
pub fn point_id(source: &str, chunk_index: usize, content_hash: &str) -> u64 {
    let mut h = Sha256::new();
    h.update(source.as_bytes());
    h.update([0]);
    h.update(chunk_index.to_le_bytes());
    h.update([0]);
    h.update(content_hash.as_bytes());
    let digest = h.finalize();
    let mut id = [0u8; 8];
    id.copy_from_slice(&digest[..8]);
    u64::from_le_bytes(id)
}

/// Keyword equality conditions on payload fields, all of which must hold,
/// and points to leave out.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PayloadFilter {
    /// `(field, value)` pairs, e.g. `("source", "/kb/a.md")`.
    pub must: Vec<(String, String)>,
    /// Ids of points no result may be (self-calibration withholds a
    /// section this way to ask a question the collection cannot answer,
    /// without re-ingesting anything).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclude_ids: Vec<u64>,
    /// Only points one of these readers may read (a principal's
    /// [`crate::access::Principal::tokens`]); a point with no readers is
    /// everyone's. `None`: any point. On the embedded store the lexical
    /// ranking's term statistics are counted over these points alone, so
    /// what others may not read does not move the scores.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub readers: Option<Vec<String>>,
}

impl PayloadFilter {
    /// Points of one source document.
    pub fn source(source: &str) -> Self {
        Self {
            must: vec![("source".to_string(), source.to_string())],
            ..Self::default()
        }
    }

    /// Every point but these.
    pub fn excluding(ids: Vec<u64>) -> Self {
        Self {
            exclude_ids: ids,
            ..Self::default()
        }
    }

    /// Only what one of `readers` may read; `None`: everything.
    pub fn readable_by(readers: Option<Vec<String>>) -> Option<Self> {
        readers.map(|r| Self {
            readers: Some(r),
            ..Self::default()
        })
    }

    /// True when the filter has no condition.
    pub fn is_empty(&self) -> bool {
        self.must.is_empty() && self.exclude_ids.is_empty() && self.readers.is_none()
    }
}

/// The vector a query ranks by.
#[derive(Debug, Clone, Copy)]
pub enum QueryVector<'a> {
    /// Rank by cosine similarity to this dense vector.
    Dense(&'a [f32]),
    /// Rank by BM25 score against this sparse lexical vector.
    Lexical(&'a SparseVector),
}

/// One ranking request.
#[derive(Debug, Clone)]
pub struct StoreQuery<'a> {
    /// The vector to rank by.
    pub vector: QueryVector<'a>,
    /// Hits returned at most.
    pub limit: usize,
    /// Only points matching this; `None`: all points.
    pub filter: Option<&'a PayloadFilter>,
    /// Also return each hit's payload. A ranking that only needs ids and
    /// scores leaves it out and fetches the few points it keeps with
    /// [`VectorStore::retrieve`]: reading and decoding payloads is most of a
    /// search's cost in the store.
    pub with_payload: bool,
    /// Also return each hit's dense vector (to score lexical hits by cosine).
    pub with_dense: bool,
    /// Score every point with the full vectors: no graph, no quantisation.
    /// Slow; what the index's recall is measured against.
    pub exact: bool,
}

impl<'a> StoreQuery<'a> {
    /// The usual ranking: the `limit` best points of the whole collection
    /// by `vector`, ids and scores only, from the served index. Set the
    /// other fields with struct update syntax (`..StoreQuery::ranking(v, k)`).
    pub fn ranking(vector: QueryVector<'a>, limit: usize) -> Self {
        Self {
            vector,
            limit,
            filter: None,
            with_payload: false,
            with_dense: false,
            exact: false,
        }
    }
}

/// One ranked point.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredHit {
    /// The point's id.
    pub id: u64,
    /// The ranking's own score: cosine for dense, BM25 for lexical.
    pub score: f32,
    /// The chunk's payload when `with_payload` was asked; else `None`.
    pub payload: Option<ChunkPayload>,
    /// The point's dense vector when `with_dense` was asked; else `None`.
    pub dense: Option<Vec<f32>>,
}

/// Orders hits best first, ties by ascending id. Engines return equal
/// scores (two chunks with the same matching terms) in no fixed order,
/// which would make rankings, and so fused results, differ between runs and
/// between backends; every store sorts its hits with this.
pub fn sort_hits(hits: &mut [StoredHit]) {
    hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.id.cmp(&b.id)));
}

/// Size and index state of a collection.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct StoreInfo {
    /// Points in the collection.
    pub points: usize,
    /// Vectors the engine reports as indexed.
    pub indexed_vectors: usize,
    /// Segments the engine stores the collection in.
    pub segments: usize,
    /// Length of the dense vectors.
    pub dimension: usize,
    /// The embedded store's index settings as it holds them; `None` on a
    /// Qdrant server (its collection's own settings apply). Status shows
    /// them apart, with whether the configuration asks for others.
    #[serde(skip)]
    pub index: Option<edge::IndexSettings>,
}

/// One page of [`VectorStore::scroll`].
#[derive(Debug, Clone, PartialEq)]
pub struct ScrollPage {
    /// Points in ascending id order, with both vectors and the payload.
    pub points: Vec<ChunkPoint>,
    /// The id to pass as `offset` for the next page; `None` after the last.
    pub next: Option<u64>,
}

/// A collection of chunk points.
///
/// Implementations are safe to share between threads.
pub trait VectorStore: Send + Sync {
    /// Inserts or replaces points (by id).
    fn upsert(&self, points: Vec<ChunkPoint>) -> Result<()>;

    /// Fails with [`StoreError::DiskFull`] when writing `points` could
    /// fill the store's disk (the embedded store: `storage.min_free_mb`);
    /// checked before a write deletes anything. A server's store: `Ok`.
    fn ensure_space(&self, _points: &[ChunkPoint]) -> Result<()> {
        Ok(())
    }
    /// Ranks points by one vector, best first, equal scores by ascending
    /// id (see [`sort_hits`]).
    fn search(&self, query: &StoreQuery<'_>) -> Result<Vec<StoredHit>>;
    /// Reads the points with these ids, with both vectors and the payload,
    /// in no particular order; ids with no point are left out.
    fn retrieve(&self, ids: &[u64]) -> Result<Vec<ChunkPoint>>;
    /// The lexical term ids of the points with these ids, without their
    /// payload or dense vector (what the search's lexical gate compares:
    /// reading every candidate whole would cost ten times the kept
    /// passages); ids with no point are left out.
    fn retrieve_terms(&self, ids: &[u64]) -> Result<Vec<(u64, Vec<u32>)>> {
        Ok(self
            .retrieve(ids)?
            .into_iter()
            .map(|p| (p.id, p.lexical.indices))
            .collect())
    }
    /// Deletes every point of `source`.
    fn delete_by_source(&self, source: &str) -> Result<()>;
    /// Sets the readers of every point of `source` (its text unchanged).
    fn set_readers(&self, source: &str, readers: &[String]) -> Result<()>;
    /// Counts points matching `filter` (all points when `None`).
    fn count(&self, filter: Option<&PayloadFilter>) -> Result<usize>;
    /// Makes every accepted change durable.
    fn flush(&self) -> Result<()>;
    /// Builds search indexes and vacuums deletions where the engine's
    /// thresholds call for it; returns whether anything was rebuilt.
    fn optimize(&self) -> Result<bool>;
    /// Size and index state.
    fn info(&self) -> Result<StoreInfo>;
    /// Reads up to `limit` points with their vectors and payload, in id
    /// order, starting at id `offset` (the first point when `None`): what
    /// copying a collection to another store needs, without embedding
    /// anything again.
    fn scroll(&self, offset: Option<u64>, limit: usize) -> Result<ScrollPage>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn point_ids_are_deterministic_and_distinct() {
        let a = point_id("/kb/a.md", 0, "h1");
        assert_eq!(a, point_id("/kb/a.md", 0, "h1"));
        assert_ne!(a, point_id("/kb/a.md", 1, "h1"));
        assert_ne!(a, point_id("/kb/a.md", 0, "h2"));
        assert_ne!(a, point_id("/kb/b.md", 0, "h1"));
    }
}
