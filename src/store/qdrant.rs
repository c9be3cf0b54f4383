//! The Qdrant server backend: the same collection layout as
//! [`super::edge::EdgeStore`] (named dense vector `dense`, cosine; sparse
//! vector `lexical` with the IDF modifier; a keyword index on `source`),
//! kept in a Qdrant server or cluster and reached over gRPC with
//! `qdrant-client`.
//!
//! The [`VectorStore`] trait is synchronous, the client is async: the
//! store owns a small tokio runtime, runs every call as a task on it and
//! waits for the answer on a channel. That works from plain threads, from
//! tokio's `spawn_blocking` threads and from inside another runtime, and it
//! never calls `block_on` on someone else's async worker. (Called directly
//! on an async worker, a call blocks that worker for one round trip, like
//! any other synchronous store; async callers use `spawn_blocking`.)
//!
//! Writes wait until the server has applied them (`wait = true`), so
//! [`VectorStore::flush`] has nothing left to do: the server's own
//! write-ahead log makes an applied update durable. Index building is the
//! server's optimizer's job, so [`VectorStore::optimize`] does nothing.

use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;

use qdrant_client::qdrant::r#match::MatchValue;
use qdrant_client::qdrant::{
    Condition, CountPoints, CreateCollection, CreateFieldIndexCollection, DeletePoints,
    DenseVector, Distance, FieldType, Filter, GetPoints, Modifier, NamedVectors, PointId,
    PointStruct, PointsOperationResponse, PointsSelector, Query, QueryPoints, ScrollPoints,
    SparseVectorConfig, SparseVectorParams, UpdateStatus, UpsertPoints, Vector, VectorInput,
    VectorParams, VectorParamsMap, Vectors, VectorsConfig, VectorsOutput, VectorsSelector,
    WithPayloadSelector, WithVectorsSelector, point_id, points_selector, query, vector_input,
    vector_output, vectors_config, with_payload_selector, with_vectors_selector,
};
use qdrant_client::{Payload, Qdrant, QdrantError};
use tokio::runtime::Runtime;

use super::{
    ChunkPayload, ChunkPoint, DENSE_VECTOR, LEXICAL_VECTOR, PayloadFilter, QueryVector, Result,
    ScrollPage, StoreError, StoreInfo, StoreQuery, StoredHit, VectorStore,
};
use crate::config::QdrantConfig;
use crate::lexical::SparseVector;

/// The `qdrant-client` version GRACE is built with.
pub const CLIENT_VERSION: &str = "1.20.0";

/// Server versions (`major.minor`) GRACE's tests run against: the store
/// suite, the end-to-end evaluation and the cluster-survival test run on
/// the Qdrant 1.16.3 server in `../shared/qdrant` (`scripts/setup --qdrant`).
pub const TESTED_VERSIONS: &[(u64, u64)] = &[(1, 16)];

/// The oldest server GRACE accepts: the oldest tested one. Everything
/// GRACE uses (named dense and sparse vectors, the IDF modifier, the query
/// API, keyword payload indexes) is older than it.
const OLDEST: (u64, u64) = TESTED_VERSIONS[0];

/// The newest server GRACE accepts: one minor version past the client's
/// (Qdrant's own rule).
fn newest() -> (u64, u64) {
    parse_version(CLIENT_VERSION).map_or(OLDEST, |(major, minor)| (major, minor + 1))
}

/// The versions GRACE accepts, for messages: `1.16 to 1.21 (tested: 1.16)`.
pub fn supported() -> String {
    let tested: Vec<String> = TESTED_VERSIONS
        .iter()
        .map(|(major, minor)| format!("{major}.{minor}"))
        .collect();
    let (newest_major, newest_minor) = newest();
    format!(
        "{}.{} to {newest_major}.{newest_minor} (tested: {})",
        OLDEST.0,
        OLDEST.1,
        tested.join(", ")
    )
}

/// Points sent per upsert request (a request stays well below gRPC's
/// message limits: 256 MiniLM chunks are about 1 MB).
const UPSERT_BATCH: usize = 256;

/// Where a server collection is and how to reach it.
#[derive(Debug, Clone)]
struct Target {
    url: String,
    collection: String,
}

impl Target {
    fn location(&self) -> PathBuf {
        PathBuf::from(format!(
            "{}/collections/{}",
            self.url.trim_end_matches('/'),
            self.collection
        ))
    }

    /// Turns a client error into a [`StoreError`] that names the server.
    fn error(&self, e: QdrantError) -> StoreError {
        use tonic::Code;
        match &e {
            QdrantError::ResponseError { status }
            | QdrantError::ResourceExhaustedError { status, .. } => {
                let message = format!("{:?}: {}", status.code(), status.message());
                match status.code() {
                    Code::Unavailable
                    | Code::DeadlineExceeded
                    | Code::ResourceExhausted
                    | Code::Cancelled
                    | Code::Aborted => StoreError::Unavailable {
                        url: self.url.clone(),
                        message,
                    },
                    Code::Unauthenticated | Code::PermissionDenied => StoreError::Unauthorized {
                        url: self.url.clone(),
                        message,
                    },
                    // The client reports a refused connection this way.
                    Code::Internal if status.message().starts_with("Failed to connect") => {
                        StoreError::Unavailable {
                            url: self.url.clone(),
                            message: self.explain_tls(message),
                        }
                    }
                    // A cluster whose shard has no live replica left.
                    Code::Internal
                        if status.message().contains("operations failed")
                            && status.message().contains("Unavailable") =>
                    {
                        StoreError::Unavailable {
                            url: self.url.clone(),
                            message: format!(
                                "a shard of `{}` has no replica the cluster can reach (more nodes lost than \
                                 the collection's replication factor allows?); {message}",
                                self.collection
                            ),
                        }
                    }
                    Code::NotFound => StoreError::CollectionNotFound {
                        url: self.url.clone(),
                        collection: self.collection.clone(),
                    },
                    _ => self.server(message),
                }
            }
            QdrantError::InvalidUri(_) => StoreError::Unavailable {
                url: self.url.clone(),
                message: e.to_string(),
            },
            _ => self.server(e.to_string()),
        }
    }

    /// A connection that failed in the TLS handshake says so: `https://`
    /// to a server without TLS, or a certificate the client does not trust.
    fn explain_tls(&self, message: String) -> String {
        let m = message.to_ascii_lowercase();
        let tls = [
            "invalidcontenttype",
            "invalidmessage",
            "certificate",
            "tls",
            "handshake",
        ];
        if self.url.starts_with("https://") && tls.iter().any(|t| m.contains(t)) {
            format!(
                "the TLS handshake failed: the server does not answer TLS on this port (use http:// for a \
                 server without TLS) or its certificate is not trusted; {message}"
            )
        } else {
            message
        }
    }

    fn server(&self, message: impl Into<String>) -> StoreError {
        StoreError::Server {
            url: self.url.clone(),
            collection: self.collection.clone(),
            message: message.into(),
        }
    }
}

/// A collection on a Qdrant server.
pub struct QdrantStore {
    client: Qdrant,
    // `Option` so that `Drop` can shut it down without blocking.
    runtime: Option<Runtime>,
    target: Target,
    layout: Layout,
    dimension: usize,
    server_version: String,
}

/// How a new collection is spread over a cluster (`qdrant.shard_number`,
/// `qdrant.replication_factor`, `qdrant.write_consistency_factor`; 0: the
/// server's default, and not checked on an existing collection).
#[derive(Debug, Clone, Copy)]
struct Layout {
    shard_number: u32,
    replication_factor: u32,
    write_consistency_factor: u32,
}

impl std::fmt::Debug for QdrantStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QdrantStore")
            .field("url", &self.target.url)
            .field("collection", &self.target.collection)
            .field("dimension", &self.dimension)
            .field("server_version", &self.server_version)
            .finish()
    }
}

impl QdrantStore {
    /// Opens `config.collection` on the server at `config.url`, creating it
    /// for `dimension`-sized dense vectors (with the lexical vector and the
    /// `source` index) if it does not exist yet.
    pub fn open_or_create(config: &QdrantConfig, dimension: usize) -> Result<Self> {
        let mut store = Self::connect(config)?;
        let target = store.target.clone();
        let client = store.client.clone();
        let name = target.collection.clone();
        let exists = store.run(async move { client.collection_exists(name).await })?;
        if !exists {
            store.create_collection(dimension)?;
        }
        store.dimension = store.check_collection()?;
        if store.dimension != dimension {
            return Err(StoreError::DimensionMismatch {
                path: target.location(),
                found: store.dimension,
                expected: dimension,
            });
        }
        Ok(store)
    }

    /// Opens an existing collection; [`StoreError::CollectionNotFound`] if
    /// the server has none of that name.
    pub fn open_existing(config: &QdrantConfig) -> Result<Self> {
        let mut store = Self::connect(config)?;
        let client = store.client.clone();
        let name = store.target.collection.clone();
        if !store.run(async move { client.collection_exists(name).await })? {
            return Err(StoreError::CollectionNotFound {
                url: store.target.url.clone(),
                collection: store.target.collection.clone(),
            });
        }
        store.dimension = store.check_collection()?;
        Ok(store)
    }

    /// Deletes `config.collection` from the server; returns whether it
    /// existed.
    pub fn drop_collection(config: &QdrantConfig) -> Result<bool> {
        let store = Self::connect(config)?;
        let client = store.client.clone();
        let name = store.target.collection.clone();
        if !store.run(async move { client.collection_exists(name).await })? {
            return Ok(false);
        }
        let client = store.client.clone();
        let name = store.target.collection.clone();
        let response = store.run(async move { client.delete_collection(name).await })?;
        Ok(response.result)
    }

    /// The client, its runtime, and a health check that proves the server
    /// answers and speaks a compatible protocol version.
    fn connect(config: &QdrantConfig) -> Result<Self> {
        let target = Target {
            url: config.url.clone(),
            collection: config.collection.clone(),
        };
        let timeout = Duration::try_from_secs_f64(config.timeout_seconds)
            .map_err(|e| target.server(format!("qdrant.timeout_seconds: {e}")))?;
        let api_key = (!config.api_key.is_empty()).then(|| config.api_key.clone());
        // The client's own compatibility check only prints to stdout and
        // runs a second runtime; the check below fails instead.
        let client = Qdrant::from_url(&config.url)
            .api_key(api_key)
            .timeout(timeout)
            .connect_timeout(timeout)
            .skip_compatibility_check()
            .build()
            .map_err(|e| target.error(e))?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("grace-qdrant")
            .enable_all()
            .build()
            .map_err(|e| target.server(format!("cannot start the client's runtime: {e}")))?;
        let mut store = Self {
            client,
            runtime: Some(runtime),
            target,
            layout: Layout {
                shard_number: config.shard_number,
                replication_factor: config.replication_factor,
                write_consistency_factor: config.write_consistency_factor,
            },
            dimension: 0,
            server_version: String::new(),
        };
        let client = store.client.clone();
        let reply = store
            .run(async move { client.health_check().await })
            .map_err(|e| match e {
                StoreError::Server {
                    url,
                    collection,
                    message,
                } => StoreError::Server {
                    url,
                    collection,
                    message: format!(
                        "the health check failed ({message}); is this a Qdrant server's gRPC port?"
                    ),
                },
                other => other,
            })?;
        if !check_version(&store.target.url, &reply.version)? {
            tracing::warn!(
                url = %store.target.url,
                version = %reply.version,
                "this Qdrant server version has not been tested with grace (supported: {})",
                supported()
            );
        }
        store.server_version = reply.version;
        Ok(store)
    }

    /// The server's version, as its health check reported it.
    pub fn server_version(&self) -> &str {
        &self.server_version
    }

    /// Whether the server's version is one GRACE is tested against
    /// ([`TESTED_VERSIONS`]).
    pub fn version_tested(&self) -> bool {
        parse_version(&self.server_version).is_some_and(|v| TESTED_VERSIONS.contains(&v))
    }

    /// The server URL.
    pub fn url(&self) -> &str {
        &self.target.url
    }

    /// The collection's name.
    pub fn collection(&self) -> &str {
        &self.target.collection
    }

    /// Size of the dense vectors.
    pub fn dimension(&self) -> usize {
        self.dimension
    }

    /// Runs one client call on the store's runtime and waits for it.
    fn run<T, F>(&self, call: F) -> Result<T>
    where
        T: Send + 'static,
        F: Future<Output = std::result::Result<T, QdrantError>> + Send + 'static,
    {
        let Some(runtime) = &self.runtime else {
            return Err(self.target.server("the store is closed"));
        };
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        runtime.spawn(async move {
            let _ = tx.send(call.await);
        });
        match rx.recv() {
            Ok(result) => result.map_err(|e| self.target.error(e)),
            Err(_) => Err(self
                .target
                .server("the client task stopped before answering")),
        }
    }

    fn create_collection(&self, dimension: usize) -> Result<()> {
        let name = self.target.collection.clone();
        let request = CreateCollection {
            collection_name: name.clone(),
            vectors_config: Some(VectorsConfig {
                config: Some(vectors_config::Config::ParamsMap(VectorParamsMap {
                    map: [(
                        DENSE_VECTOR.to_string(),
                        VectorParams {
                            size: dimension as u64,
                            distance: Distance::Cosine as i32,
                            ..Default::default()
                        },
                    )]
                    .into(),
                })),
            }),
            sparse_vectors_config: Some(SparseVectorConfig {
                map: [(
                    LEXICAL_VECTOR.to_string(),
                    SparseVectorParams {
                        index: None,
                        modifier: Some(Modifier::Idf as i32),
                    },
                )]
                .into(),
            }),
            shard_number: nonzero(self.layout.shard_number),
            replication_factor: nonzero(self.layout.replication_factor),
            write_consistency_factor: nonzero(self.layout.write_consistency_factor),
            ..Default::default()
        };
        let client = self.client.clone();
        let created = self.run(async move { client.create_collection(request).await });
        if let Err(e) = created {
            // Another process may have created it in the meantime.
            let client = self.client.clone();
            let again = name.clone();
            if self.run(async move { client.collection_exists(again).await })? {
                return Ok(());
            }
            return Err(e);
        }
        tracing::info!(url = %self.target.url, collection = %name, dimension, "created the collection");
        // A keyword index on `source` makes delete-by-source and source
        // filters cheap once the collection is large.
        let request = CreateFieldIndexCollection {
            collection_name: name,
            wait: Some(true),
            field_name: "source".to_string(),
            field_type: Some(FieldType::Keyword as i32),
            ..Default::default()
        };
        let client = self.client.clone();
        let response = self.run(async move { client.create_field_index(request).await })?;
        self.check_applied(&response, "create the `source` index")
    }

    /// The `dense` vector size of the collection, checking that it has the
    /// vectors GRACE writes, with the parameters GRACE needs (cosine, the
    /// IDF modifier) and the configured layout: a collection that exists
    /// with other parameters is a [`StoreError::ParametersDiffer`].
    fn check_collection(&self) -> Result<usize> {
        let client = self.client.clone();
        let name = self.target.collection.clone();
        let info = self.run(async move { client.collection_info(name).await })?;
        let params = info
            .result
            .and_then(|i| i.config)
            .and_then(|c| c.params)
            .ok_or_else(|| {
                self.target
                    .server("the server sent no collection parameters")
            })?;
        let dense = params
            .vectors_config
            .as_ref()
            .and_then(|v| v.config.as_ref())
            .and_then(|c| match c {
                vectors_config::Config::ParamsMap(m) => m.map.get(DENSE_VECTOR),
                vectors_config::Config::Params(_) => None,
            });
        let lexical = params
            .sparse_vectors_config
            .as_ref()
            .and_then(|s| s.map.get(LEXICAL_VECTOR));
        let (Some(dense), Some(lexical)) = (dense, lexical) else {
            return Err(self.target.server(format!(
                "the collection has no `{DENSE_VECTOR}` and `{LEXICAL_VECTOR}` vectors; it was not written by grace"
            )));
        };
        let mut differences = Vec::new();
        if dense.distance != Distance::Cosine as i32 {
            let found = Distance::try_from(dense.distance)
                .map(|d| d.as_str_name())
                .unwrap_or("unknown");
            differences.push(format!(
                "`{DENSE_VECTOR}` uses distance {found}, grace needs Cosine"
            ));
        }
        if lexical.modifier != Some(Modifier::Idf as i32) {
            differences.push(format!(
                "`{LEXICAL_VECTOR}` has no IDF modifier, which grace's lexical ranking needs"
            ));
        }
        let layout = [
            (
                "qdrant.shard_number",
                self.layout.shard_number,
                params.shard_number,
                "shards are fixed when a collection is created",
            ),
            (
                "qdrant.replication_factor",
                self.layout.replication_factor,
                params.replication_factor.unwrap_or(1),
                "change it on the server (PATCH /collections/NAME) or in the setting",
            ),
            (
                "qdrant.write_consistency_factor",
                self.layout.write_consistency_factor,
                params.write_consistency_factor.unwrap_or(1),
                "change it on the server (PATCH /collections/NAME) or in the setting",
            ),
        ];
        for (key, wanted, found, how) in layout {
            if wanted != 0 && wanted != found {
                differences.push(format!(
                    "{key} is {wanted} but the collection has {found} ({how}; 0 accepts what it has)"
                ));
            }
        }
        if !differences.is_empty() {
            return Err(StoreError::ParametersDiffer {
                path: self.target.location(),
                differences: differences.join("; "),
            });
        }
        Ok(dense.size as usize)
    }

    /// An update sent with `wait = true` must come back applied.
    fn check_applied(&self, response: &PointsOperationResponse, what: &str) -> Result<()> {
        let status = response
            .result
            .as_ref()
            .map(|r| r.status)
            .unwrap_or(UpdateStatus::Completed as i32);
        match UpdateStatus::try_from(status) {
            Ok(UpdateStatus::Completed) | Ok(UpdateStatus::Acknowledged) => Ok(()),
            Ok(UpdateStatus::WaitTimeout) => Err(StoreError::Unavailable {
                url: self.target.url.clone(),
                message: format!(
                    "could not {what}: the server accepted it but did not apply it in time"
                ),
            }),
            _ => Err(self
                .target
                .server(format!("could not {what}: update status {status}"))),
        }
    }

    fn filter(filter: Option<&PayloadFilter>) -> Option<Filter> {
        let f = filter.filter(|f| !f.is_empty())?;
        // An explicit keyword match: `MatchValue::from(String)` would turn a
        // value with a space into a full-text match.
        let mut filter = Filter::must(f.must.iter().map(|(field, value)| {
            Condition::matches(field.as_str(), MatchValue::Keyword(value.clone()))
        }));
        if !f.exclude_ids.is_empty() {
            filter.must_not = vec![Condition::has_id(
                f.exclude_ids.iter().map(|id| PointId::from(*id)),
            )];
        }
        Some(filter)
    }
}

impl Drop for QdrantStore {
    fn drop(&mut self) {
        // Never blocks, so dropping the store inside async code is safe.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// `major.minor` of a `major.minor.patch[-suffix]` version.
fn parse_version(v: &str) -> Option<(u64, u64)> {
    let mut parts = v.trim_start_matches('v').splitn(3, '.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    let patch = parts.next()?;
    patch
        .starts_with(|c: char| c.is_ascii_digit())
        .then_some((major, minor))
}

/// Checks a server's version: from the oldest tested one ([`OLDEST`]) to
/// one minor version past the client's (Qdrant's own rule: minor versions
/// at most one apart). `Ok(true)` for a tested version, `Ok(false)` for an
/// accepted but untested one (worth a warning), an error otherwise.
pub fn check_version(url: &str, server: &str) -> Result<bool> {
    let incompatible = || StoreError::Incompatible {
        url: url.to_string(),
        server: server.to_string(),
    };
    let Some(version) = parse_version(server) else {
        return Err(incompatible());
    };
    if version < OLDEST || version > newest() {
        return Err(incompatible());
    }
    Ok(TESTED_VERSIONS.contains(&version))
}

/// `Some(n)` for a setting given, `None` (the server's default) for 0.
fn nonzero(n: u32) -> Option<u32> {
    (n != 0).then_some(n)
}

fn to_point(p: ChunkPoint) -> Result<PointStruct> {
    let payload = serde_json::to_value(&p.payload)
        .ok()
        .and_then(|v| Payload::try_from(v).ok())
        .ok_or_else(|| StoreError::BadPayload {
            id: p.id.to_string(),
            message: "the payload is not a JSON object".into(),
        })?;
    let vectors = NamedVectors {
        vectors: [
            (DENSE_VECTOR.to_string(), Vector::new_dense(p.dense)),
            (
                LEXICAL_VECTOR.to_string(),
                Vector::new_sparse(p.lexical.indices, p.lexical.values),
            ),
        ]
        .into(),
    };
    Ok(PointStruct {
        id: Some(PointId::from(p.id)),
        payload: payload.into(),
        vectors: Some(Vectors::from(vectors)),
    })
}

fn numeric_id(id: Option<PointId>) -> Result<u64> {
    match id.and_then(|p| p.point_id_options) {
        Some(point_id::PointIdOptions::Num(n)) => Ok(n),
        Some(point_id::PointIdOptions::Uuid(u)) => Err(StoreError::BadPayload {
            id: u,
            message: "point id is not numeric".into(),
        }),
        None => Err(StoreError::BadPayload {
            id: "?".into(),
            message: "the server sent a point without an id".into(),
        }),
    }
}

fn to_payload(
    id: u64,
    payload: std::collections::HashMap<String, qdrant_client::qdrant::Value>,
) -> Result<ChunkPayload> {
    let json = serde_json::Value::from(Payload::from(payload));
    serde_json::from_value(json).map_err(|e| StoreError::BadPayload {
        id: id.to_string(),
        message: e.to_string(),
    })
}

fn dense_of(vectors: Option<&VectorsOutput>) -> Option<Vec<f32>> {
    match vectors?.get_vector_by_name(DENSE_VECTOR)? {
        vector_output::Vector::Dense(d) => Some(d.data),
        _ => None,
    }
}

fn lexical_of(vectors: Option<&VectorsOutput>) -> Option<SparseVector> {
    match vectors?.get_vector_by_name(LEXICAL_VECTOR)? {
        vector_output::Vector::Sparse(s) => Some(SparseVector {
            indices: s.indices,
            values: s.values,
        }),
        _ => None,
    }
}

/// A stored point with both vectors, as scroll and retrieve return it.
fn chunk_point(
    id: Option<PointId>,
    vectors: Option<&VectorsOutput>,
    payload: std::collections::HashMap<String, qdrant_client::qdrant::Value>,
) -> Result<ChunkPoint> {
    let id = numeric_id(id)?;
    let missing = |what: &str| StoreError::BadPayload {
        id: id.to_string(),
        message: format!("the point has no `{what}` vector"),
    };
    Ok(ChunkPoint {
        id,
        dense: dense_of(vectors).ok_or_else(|| missing(DENSE_VECTOR))?,
        lexical: lexical_of(vectors).ok_or_else(|| missing(LEXICAL_VECTOR))?,
        payload: to_payload(id, payload)?,
    })
}

fn all_payload() -> Option<WithPayloadSelector> {
    Some(WithPayloadSelector {
        selector_options: Some(with_payload_selector::SelectorOptions::Enable(true)),
    })
}

impl VectorStore for QdrantStore {
    fn upsert(&self, points: Vec<ChunkPoint>) -> Result<()> {
        let mut batch = Vec::with_capacity(points.len().min(UPSERT_BATCH));
        let mut points = points.into_iter().peekable();
        while let Some(p) = points.next() {
            if p.dense.len() != self.dimension {
                return Err(StoreError::DimensionMismatch {
                    path: self.target.location(),
                    found: self.dimension,
                    expected: p.dense.len(),
                });
            }
            batch.push(to_point(p)?);
            if batch.len() == UPSERT_BATCH || points.peek().is_none() {
                let request = UpsertPoints {
                    collection_name: self.target.collection.clone(),
                    wait: Some(true),
                    points: std::mem::take(&mut batch),
                    ..Default::default()
                };
                let client = self.client.clone();
                let response = self.run(async move { client.upsert_points(request).await })?;
                self.check_applied(&response, "upsert points")?;
            }
        }
        Ok(())
    }

    fn search(&self, query: &StoreQuery<'_>) -> Result<Vec<StoredHit>> {
        let (input, using) = match query.vector {
            QueryVector::Dense(v) => (
                vector_input::Variant::Dense(DenseVector { data: v.to_vec() }),
                DENSE_VECTOR,
            ),
            QueryVector::Lexical(s) => {
                if s.is_empty() {
                    return Ok(Vec::new());
                }
                (
                    vector_input::Variant::Sparse(qdrant_client::qdrant::SparseVector {
                        indices: s.indices.clone(),
                        values: s.values.clone(),
                    }),
                    LEXICAL_VECTOR,
                )
            }
        };
        let with_vectors = query.with_dense.then(|| WithVectorsSelector {
            selector_options: Some(with_vectors_selector::SelectorOptions::Include(
                VectorsSelector {
                    names: vec![DENSE_VECTOR.to_string()],
                },
            )),
        });
        let request = QueryPoints {
            collection_name: self.target.collection.clone(),
            query: Some(Query {
                variant: Some(query::Variant::Nearest(VectorInput {
                    variant: Some(input),
                })),
            }),
            using: Some(using.to_string()),
            filter: Self::filter(query.filter),
            limit: Some(query.limit as u64),
            with_payload: if query.with_payload {
                all_payload()
            } else {
                None
            },
            with_vectors,
            params: query.exact.then(|| qdrant_client::qdrant::SearchParams {
                exact: Some(true),
                ..Default::default()
            }),
            ..Default::default()
        };
        let client = self.client.clone();
        let response = self.run(async move { client.query(request).await })?;
        let mut hits = response
            .result
            .into_iter()
            .map(|p| {
                let id = numeric_id(p.id)?;
                Ok(StoredHit {
                    id,
                    score: p.score,
                    dense: dense_of(p.vectors.as_ref()),
                    payload: if query.with_payload {
                        Some(to_payload(id, p.payload)?)
                    } else {
                        None
                    },
                })
            })
            .collect::<Result<Vec<_>>>()?;
        super::sort_hits(&mut hits);
        Ok(hits)
    }

    fn retrieve(&self, ids: &[u64]) -> Result<Vec<ChunkPoint>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let request = GetPoints {
            collection_name: self.target.collection.clone(),
            ids: ids.iter().map(|&id| PointId::from(id)).collect(),
            with_payload: all_payload(),
            with_vectors: Some(WithVectorsSelector {
                selector_options: Some(with_vectors_selector::SelectorOptions::Enable(true)),
            }),
            ..Default::default()
        };
        let client = self.client.clone();
        let response = self.run(async move { client.get_points(request).await })?;
        response
            .result
            .into_iter()
            .map(|p| chunk_point(p.id, p.vectors.as_ref(), p.payload))
            .collect()
    }

    fn delete_by_source(&self, source: &str) -> Result<()> {
        let Some(filter) = Self::filter(Some(&PayloadFilter::source(source))) else {
            return Ok(());
        };
        let request = DeletePoints {
            collection_name: self.target.collection.clone(),
            wait: Some(true),
            points: Some(PointsSelector {
                points_selector_one_of: Some(points_selector::PointsSelectorOneOf::Filter(filter)),
            }),
            ..Default::default()
        };
        let client = self.client.clone();
        let response = self.run(async move { client.delete_points(request).await })?;
        self.check_applied(&response, "delete points")
    }

    fn count(&self, filter: Option<&PayloadFilter>) -> Result<usize> {
        let request = CountPoints {
            collection_name: self.target.collection.clone(),
            filter: Self::filter(filter),
            exact: Some(true),
            ..Default::default()
        };
        let client = self.client.clone();
        let response = self.run(async move { client.count(request).await })?;
        Ok(response.result.map(|r| r.count).unwrap_or(0) as usize)
    }

    fn flush(&self) -> Result<()> {
        // Every write waited until the server applied it; the server's
        // write-ahead log keeps it.
        Ok(())
    }

    fn optimize(&self) -> Result<bool> {
        // The server's optimizer builds indexes on its own schedule.
        Ok(false)
    }

    fn info(&self) -> Result<StoreInfo> {
        let client = self.client.clone();
        let name = self.target.collection.clone();
        let response = self.run(async move { client.collection_info(name).await })?;
        let info = response
            .result
            .ok_or_else(|| self.target.server("the server sent no collection info"))?;
        Ok(StoreInfo {
            points: info.points_count.unwrap_or(0) as usize,
            indexed_vectors: info.indexed_vectors_count.unwrap_or(0) as usize,
            segments: info.segments_count as usize,
            dimension: self.dimension,
            index: None,
        })
    }

    fn scroll(&self, offset: Option<u64>, limit: usize) -> Result<ScrollPage> {
        let request = ScrollPoints {
            collection_name: self.target.collection.clone(),
            offset: offset.map(PointId::from),
            limit: Some(u32::try_from(limit.max(1)).unwrap_or(u32::MAX)),
            with_payload: all_payload(),
            with_vectors: Some(WithVectorsSelector {
                selector_options: Some(with_vectors_selector::SelectorOptions::Enable(true)),
            }),
            ..Default::default()
        };
        let client = self.client.clone();
        let response = self.run(async move { client.scroll(request).await })?;
        let points = response
            .result
            .into_iter()
            .map(|p| chunk_point(p.id, p.vectors.as_ref(), p.payload))
            .collect::<Result<Vec<_>>>()?;
        let next = match response.next_page_offset {
            Some(id) => Some(numeric_id(Some(id))?),
            None => None,
        };
        Ok(ScrollPage { points, next })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_from_the_tested_one_to_one_past_the_client_are_accepted() {
        for tested in ["1.16.3", "1.16.0", "v1.16.1"] {
            assert!(check_version("http://x", tested).unwrap(), "{tested}");
        }
        for untested in ["1.17.0", "1.19.3", "1.20.0", "1.21.0"] {
            assert!(!check_version("http://x", untested).unwrap(), "{untested}");
        }
        for bad in [
            "1.15.9", "1.10.0", "1.22.0", "2.20.0", "0.16.3", "1.16", "dev", "",
        ] {
            let err = check_version("http://x", bad);
            assert!(matches!(err, Err(StoreError::Incompatible { .. })), "{bad}");
        }
        let m = check_version("http://x:6334", "1.9.0")
            .unwrap_err()
            .to_string();
        assert!(m.contains("1.9.0") && m.contains(&supported()), "{m}");
        assert_eq!(supported(), "1.16 to 1.21 (tested: 1.16)");
    }

    #[test]
    fn source_filters_are_exact_keyword_matches() {
        use qdrant_client::qdrant::condition::ConditionOneOf;
        let f = QdrantStore::filter(Some(&PayloadFilter::source("/kb/a b.md"))).unwrap();
        let Some(ConditionOneOf::Field(field)) = &f.must[0].condition_one_of else {
            panic!("{f:?}");
        };
        assert_eq!(field.key, "source");
        assert_eq!(
            field.r#match.as_ref().unwrap().match_value,
            Some(MatchValue::Keyword("/kb/a b.md".into()))
        );
        assert!(QdrantStore::filter(Some(&PayloadFilter::default())).is_none());
        assert!(QdrantStore::filter(None).is_none());
    }
}
