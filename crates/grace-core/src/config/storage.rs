//! The `storage` section: where the knowledge base is kept, by which
//! vector store, and how that store indexes and compresses its vectors.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Where and how the knowledge base is stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StorageConfig {
    /// Folder holding the vector store and the ingest manifest.
    pub data_dir: PathBuf,
    /// Vector store backend. `edge`: embedded qdrant-edge, on disk, in
    /// process; `qdrant`: a Qdrant server (or cluster) at `qdrant.url`.
    pub backend: Backend,
    /// Threads the embedded store uses to search its segments in parallel
    /// within one query; `0`: one per CPU. 1 searches on the caller's
    /// thread: lowest latency on a small machine, and concurrent requests
    /// already run in parallel with each other.
    pub search_threads: usize,
    /// How the embedded store keeps the dense vectors it searches in
    /// memory: `int8` (a quarter of the size), `binary` (a thirty-second)
    /// or `none` (the full vectors). Quantised candidates are scored again
    /// with the full vectors, so scores stay exact cosines.
    pub quantization: Quantization,
    /// With quantisation, the candidates taken from the quantised vectors
    /// per result wanted (≥ 1), then scored again with the full vectors.
    pub oversampling: f64,
    /// Keep the full dense vectors on disk (memory-mapped, read when
    /// needed) instead of loaded in memory. Meant with quantisation: the
    /// search runs on the quantised copy in memory.
    pub vectors_on_disk: bool,
    /// Keep the lexical (BM25) index on disk (memory-mapped) instead of
    /// loaded in memory.
    pub lexical_on_disk: bool,
    /// Links per point in the dense index graph (HNSW `m`): more is more
    /// accurate, bigger and slower to build.
    pub hnsw_m: usize,
    /// Candidates considered per point while building the graph (HNSW
    /// `ef_construct`): more is more accurate and slower to build.
    pub hnsw_ef_construct: usize,
    /// Candidates a dense search keeps while walking the graph (HNSW `ef`);
    /// at least the candidates asked for. More is more accurate and slower.
    pub hnsw_ef: usize,
    /// Points per segment at most. Writing indexes what it has every this
    /// many points, so a large ingest never holds more than one segment's
    /// worth unindexed, and the indexed segments are merged up to this size.
    pub segment_points: usize,
    /// MiB the embedded store leaves free on its disk: it refuses a write,
    /// or an index build, that could take the free space below this. Its
    /// files are memory-mapped, and a memory-mapped write to a full disk
    /// kills the process instead of failing (SIGBUS); this check turns
    /// that into an error that writes nothing. 0: no check.
    pub min_free_mb: u64,
    /// Where GRACE keeps its state besides the vectors (review queue,
    /// sessions, keys, feedback, fits, tools, audit log, and the manifest
    /// when the vectors are on a Qdrant server; the book, "Running several
    /// servers"): `sqlite`, files in `data_dir`, or `postgres`, one
    /// database several servers share (`storage.postgres`).
    pub state: StateBackend,
    /// The PostgreSQL database of `state: postgres`.
    pub postgres: PostgresConfig,
}

/// Where GRACE's state is kept (`storage.state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StateBackend {
    /// SQLite files in `storage.data_dir`: one machine, one server.
    Sqlite,
    /// A PostgreSQL database: several servers share it.
    Postgres,
}

/// The PostgreSQL database of `storage.state: postgres`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PostgresConfig {
    /// `postgres://USER@HOST:PORT/DATABASE`, without a password (that is
    /// read from the variable `password_env` names). The connection is not
    /// encrypted (no TLS yet): keep the database on a private network.
    pub url: String,
    /// The environment variable holding the password; unset or empty: no
    /// password (trust or peer authentication).
    pub password_env: String,
    /// The schema (namespace) GRACE's tables live in; knowledge base
    /// `NAME` other than `default` uses `<schema>_NAME` (`-` read as `_`).
    pub schema: String,
    /// Connections per store, knowledge base and server at most (1..=64),
    /// opened as requests need them; listening for the others' writes, a
    /// leader's lock and an ingest's lock hold one more each.
    pub pool_size: usize,
    /// Seconds to wait for a connection, a new one or a free one from
    /// the pool, before a request fails as unavailable (1..=60).
    pub connect_timeout_seconds: f64,
}

impl Default for PostgresConfig {
    fn default() -> Self {
        Self {
            url: String::new(),
            password_env: "GRACE_POSTGRES_PASSWORD".into(),
            schema: "grace".into(),
            pool_size: 8,
            connect_timeout_seconds: 5.0,
        }
    }
}

/// How the embedded store compresses the dense vectors it keeps in memory
/// (`storage.quantization`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Quantization {
    /// The full 32-bit vectors.
    None,
    /// One byte per dimension (scalar quantisation).
    Int8,
    /// One bit per dimension.
    Binary,
}

/// The vector store implementations GRACE can use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Backend {
    /// Embedded qdrant-edge shard in `storage.data_dir`.
    Edge,
    /// A Qdrant server or cluster over gRPC (`qdrant.url`); the ingest
    /// manifest stays in `storage.data_dir`.
    Qdrant,
}

impl Backend {
    /// The name used in the configuration (`edge`, `qdrant`).
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Edge => "edge",
            Backend::Qdrant => "qdrant",
        }
    }
}

impl Default for StorageConfig {
    fn default() -> Self {
        Self {
            data_dir: PathBuf::from(".grace"),
            backend: Backend::Edge,
            search_threads: 1,
            quantization: Quantization::Int8,
            oversampling: 2.0,
            vectors_on_disk: true,
            lexical_on_disk: true,
            hnsw_m: 16,
            hnsw_ef_construct: 100,
            hnsw_ef: 128,
            segment_points: 50_000,
            min_free_mb: 64,
            state: StateBackend::Sqlite,
            postgres: PostgresConfig::default(),
        }
    }
}
