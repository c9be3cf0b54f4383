//! # A TEST HARNESS — NOT A QDRANT SERVER
//!
//! No Qdrant server can be installed where GRACE is built and tested (it is
//! not in Debian, PyPI, npm or crates.io, Docker does not run, and building
//! the server needs git-only dependencies). So that the Qdrant backend is
//! still tested over the real protocol against the real engine, this file
//! implements the gRPC services `qdrant-client` 1.20 ships the server side
//! of (`qdrant_server::Qdrant`, `collections_server::Collections`,
//! `points_server::Points`) with tonic, on top of qdrant-edge — the engine
//! Qdrant's own server is built from — with one `EdgeShard` per collection
//! in a temporary folder. The unmodified client then talks real gRPC
//! (HTTP/2, protobuf) to real segments, indexes and scoring.
//!
//! What it implements: the health check (reporting version
//! [`HARNESS_VERSION`], or another one to test the version check);
//! collections create / get / exists / delete / list; points upsert,
//! query (nearest by a dense or sparse vector, `using`, filter, limit,
//! offset, score threshold, payload and vector selection), delete by ids or
//! filter, count, scroll, get, and keyword/integer/float/bool/uuid payload
//! indexes; keyword/integer/bool match conditions in `must`, `should` and
//! `must_not`; and, optionally, an `api-key` check on collection and point
//! calls. Everything else answers `UNIMPLEMENTED`, so a client call the
//! harness does not cover fails loudly instead of passing by accident.
//!
//! What it does NOT cover (ARCHITECTURE.md keeps the same list): collection
//! level semantics (optimizer, HNSW, WAL, quantization and strict-mode
//! settings, collection updates, aliases, sharding and shard keys, on-disk
//! options); more than one node: replication, write consistency and
//! ordering, read consistency; snapshots; server-side fusion (prefetch,
//! RRF/DBSF), recommend/discover/groups/facets/formulas; full-text, range,
//! geo, nested and `min_should` conditions; conditional upserts;
//! `wait = false` (every update is applied before it answers); the
//! server's own limits, error texts and performance. Passing through it
//! shows that GRACE speaks the protocol correctly to the engine, not how a
//! Qdrant deployment behaves.

#![allow(dead_code)]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use qdrant_client::Payload;
use qdrant_client::qdrant as pb;
use qdrant_client::qdrant::collections_server::{Collections, CollectionsServer};
use qdrant_client::qdrant::points_server::{Points, PointsServer};
use qdrant_client::qdrant::qdrant_server::{Qdrant, QdrantServer};
use qdrant_edge as edge;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Server;
use tonic::transport::server::TcpIncoming;
use tonic::{Request, Response, Status};

/// The version the harness reports by default: the client's own, so
/// `qdrant-client`'s compatibility rule holds.
pub const HARNESS_VERSION: &str = "1.20.0";

/// How to start a harness.
#[derive(Debug, Clone, Default)]
pub struct HarnessOptions {
    /// Version the health check reports ([`HARNESS_VERSION`] when `None`).
    pub version: Option<String>,
    /// Refuse collection and point calls whose `api-key` metadata differs.
    pub api_key: Option<String>,
}

/// A running harness: a tonic gRPC server on 127.0.0.1 (a free port) on
/// its own thread and tokio runtime, so tests of any kind (plain `#[test]`s
/// included) can use it. Stopped and its data deleted on drop.
pub struct QdrantHarness {
    url: String,
    engine: Arc<Engine>,
    stop: Option<std::sync::mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    _dir: tempfile::TempDir,
}

impl QdrantHarness {
    /// Starts a harness that reports [`HARNESS_VERSION`] and checks no key.
    pub fn start() -> Self {
        Self::start_with(HarnessOptions::default())
    }

    /// Starts a harness with `options`.
    pub fn start_with(options: HarnessOptions) -> Self {
        let dir = tempfile::tempdir().expect("harness temp dir");
        let engine = Arc::new(Engine {
            root: dir.path().to_path_buf(),
            version: options
                .version
                .clone()
                .unwrap_or_else(|| HARNESS_VERSION.to_string()),
            collections: Mutex::new(HashMap::new()),
            calls: Mutex::new(HashMap::new()),
            next_dir: AtomicU64::new(0),
        });
        let (addr_tx, addr_rx) = std::sync::mpsc::channel::<SocketAddr>();
        let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
        let served = engine.clone();
        let auth = ApiKeyCheck(options.api_key.clone());
        let thread = std::thread::Builder::new()
            .name("qdrant-harness".into())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .enable_all()
                    .build()
                    .expect("harness runtime");
                let incoming = {
                    let _entered = runtime.enter();
                    TcpIncoming::bind("127.0.0.1:0".parse().expect("address"))
                        .expect("bind the harness port")
                };
                addr_tx
                    .send(incoming.local_addr().expect("harness address"))
                    .expect("report the address");
                let router = Server::builder()
                    .add_service(QdrantServer::from_arc(served.clone()))
                    .add_service(InterceptedService::new(
                        CollectionsServer::new(Handle(served.clone())),
                        auth.clone(),
                    ))
                    .add_service(InterceptedService::new(
                        // The generated server refuses messages over 4 MB
                        // by default; the client sends any size.
                        PointsServer::new(Handle(served)).max_decoding_message_size(usize::MAX),
                        auth,
                    ));
                runtime.spawn(router.serve_with_incoming(incoming));
                // Serve until the harness is dropped, then stop abruptly.
                let _ = stop_rx.recv();
                runtime.shutdown_timeout(Duration::from_secs(2));
            })
            .expect("harness thread");
        let addr = addr_rx
            .recv_timeout(Duration::from_secs(10))
            .expect("the harness did not start");
        Self {
            url: format!("http://{addr}"),
            engine,
            stop: Some(stop_tx),
            thread: Some(thread),
            _dir: dir,
        }
    }

    /// The URL to give `qdrant-client` (`http://127.0.0.1:PORT`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// How many times the RPC `name` (e.g. `"query"`, `"health_check"`)
    /// has been served: proof that a call went over gRPC.
    pub fn calls(&self, name: &str) -> usize {
        self.engine
            .calls
            .lock()
            .expect("calls lock")
            .get(name)
            .copied()
            .unwrap_or(0)
    }
}

impl Drop for QdrantHarness {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The `api-key` check a Qdrant server does when it has a key configured.
#[derive(Clone)]
struct ApiKeyCheck(Option<String>);

impl tonic::service::Interceptor for ApiKeyCheck {
    fn call(&mut self, request: Request<()>) -> Result<Request<()>, Status> {
        let Some(expected) = &self.0 else {
            return Ok(request);
        };
        match request.metadata().get("api-key").map(|v| v.to_str()) {
            Some(Ok(key)) if key == expected => Ok(request),
            _ => Err(Status::unauthenticated("Invalid api-key")),
        }
    }
}

/// One collection: a qdrant-edge shard and its folder.
struct Collection {
    shard: edge::EdgeShard,
    dir: PathBuf,
}

struct Engine {
    root: PathBuf,
    version: String,
    collections: Mutex<HashMap<String, Arc<Collection>>>,
    calls: Mutex<HashMap<&'static str, usize>>,
    next_dir: AtomicU64,
}

/// The engine as the collection and point services hold it (a local type,
/// so the foreign service traits can be implemented for it).
#[derive(Clone)]
struct Handle(Arc<Engine>);

impl std::ops::Deref for Handle {
    type Target = Engine;

    fn deref(&self) -> &Engine {
        &self.0
    }
}

type Rpc<T> = Result<Response<T>, Status>;

fn unimplemented(rpc: &str) -> Status {
    Status::unimplemented(format!(
        "`{rpc}` is not implemented by the qdrant-edge test harness (it is not a Qdrant server)"
    ))
}

fn engine_error(e: impl std::fmt::Display) -> Status {
    // Qdrant answers bad input with INVALID_ARGUMENT; the engine's errors
    // here are all about the request.
    Status::invalid_argument(format!("Wrong input: {e}"))
}

fn seconds(started: Instant) -> f64 {
    started.elapsed().as_secs_f64()
}

/// Runs engine work (synchronous, possibly slow) off the async workers.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, Status> + Send + 'static,
) -> Result<T, Status> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| Status::internal(format!("harness task failed: {e}")))?
}

impl Engine {
    fn record(&self, rpc: &'static str) {
        *self
            .calls
            .lock()
            .expect("calls lock")
            .entry(rpc)
            .or_default() += 1;
    }

    fn collection(&self, name: &str) -> Result<Arc<Collection>, Status> {
        self.collections
            .lock()
            .expect("collections lock")
            .get(name)
            .cloned()
            .ok_or_else(|| {
                Status::not_found(format!("Not found: Collection `{name}` doesn't exist!"))
            })
    }

    fn create_collection(&self, request: pb::CreateCollection) -> Result<(), Status> {
        let name = request.collection_name.clone();
        if name.is_empty() {
            return Err(Status::invalid_argument("collection name is empty"));
        }
        if request.shard_number.is_some_and(|n| n > 1)
            || request.replication_factor.is_some_and(|n| n > 1)
            || request.sharding_method.is_some()
        {
            return Err(unimplemented("create (sharding / replication)"));
        }
        let mut config = edge::EdgeConfig::builder();
        match request.vectors_config.and_then(|v| v.config) {
            Some(pb::vectors_config::Config::ParamsMap(map)) => {
                for (vector, params) in map.map {
                    config = config.vector(
                        vector.as_str(),
                        edge::EdgeVectorParams::builder(
                            params.size as usize,
                            distance(params.distance)?,
                        )
                        .build(),
                    );
                }
            }
            Some(pb::vectors_config::Config::Params(_)) => {
                return Err(unimplemented("create (an unnamed vector)"));
            }
            None => {}
        }
        for (vector, params) in request
            .sparse_vectors_config
            .map(|s| s.map)
            .unwrap_or_default()
        {
            let mut sparse = edge::EdgeSparseVectorParams::builder();
            if params.modifier == Some(pb::Modifier::Idf as i32) {
                sparse = sparse.modifier(edge::Modifier::Idf);
            }
            config = config.sparse_vector(vector.as_str(), sparse.build());
        }
        let mut collections = self.collections.lock().expect("collections lock");
        if collections.contains_key(&name) {
            return Err(Status::invalid_argument(format!(
                "Wrong input: Collection `{name}` already exists!"
            )));
        }
        let n = self.next_dir.fetch_add(1, Ordering::Relaxed);
        let dir = self.root.join(format!("{name}-{n}"));
        std::fs::create_dir_all(&dir).map_err(|e| Status::internal(e.to_string()))?;
        let shard = edge::EdgeShard::new(&dir, config.build()).map_err(engine_error)?;
        collections.insert(name, Arc::new(Collection { shard, dir }));
        Ok(())
    }

    fn collection_info(&self, name: &str) -> Result<pb::CollectionInfo, Status> {
        let c = self.collection(name)?;
        let info = c.shard.info().map_err(engine_error)?;
        let config = c.shard.config();
        let vectors = config
            .vectors
            .iter()
            .map(|(name, p)| {
                (
                    name.to_string(),
                    pb::VectorParams {
                        size: p.size as u64,
                        distance: distance_to_pb(p.distance) as i32,
                        ..Default::default()
                    },
                )
            })
            .collect();
        let sparse = config
            .sparse_vectors
            .iter()
            .map(|(name, p)| {
                (
                    name.to_string(),
                    pb::SparseVectorParams {
                        index: None,
                        modifier: p.modifier.map(|m| match m {
                            edge::Modifier::Idf => pb::Modifier::Idf as i32,
                            _ => pb::Modifier::None as i32,
                        }),
                    },
                )
            })
            .collect();
        let payload_schema = info
            .payload_schema
            .iter()
            .map(|(field, index)| {
                (
                    field.to_string(),
                    pb::PayloadSchemaInfo {
                        data_type: schema_to_pb(index.data_type) as i32,
                        params: None,
                        points: Some(index.points as u64),
                    },
                )
            })
            .collect();
        Ok(pb::CollectionInfo {
            status: pb::CollectionStatus::Green as i32,
            segments_count: info.segments_count as u64,
            points_count: Some(info.points_count as u64),
            indexed_vectors_count: Some(info.indexed_vectors_count as u64),
            payload_schema,
            config: Some(pb::CollectionConfig {
                params: Some(pb::CollectionParams {
                    shard_number: 1,
                    vectors_config: Some(pb::VectorsConfig {
                        config: Some(pb::vectors_config::Config::ParamsMap(pb::VectorParamsMap {
                            map: vectors,
                        })),
                    }),
                    sparse_vectors_config: Some(pb::SparseVectorConfig { map: sparse }),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        })
    }
}

fn distance(d: i32) -> Result<edge::Distance, Status> {
    match pb::Distance::try_from(d) {
        Ok(pb::Distance::Cosine) => Ok(edge::Distance::Cosine),
        Ok(pb::Distance::Euclid) => Ok(edge::Distance::Euclid),
        Ok(pb::Distance::Dot) => Ok(edge::Distance::Dot),
        Ok(pb::Distance::Manhattan) => Ok(edge::Distance::Manhattan),
        _ => Err(Status::invalid_argument(format!("unknown distance {d}"))),
    }
}

fn distance_to_pb(d: edge::Distance) -> pb::Distance {
    match d {
        edge::Distance::Cosine => pb::Distance::Cosine,
        edge::Distance::Euclid => pb::Distance::Euclid,
        edge::Distance::Dot => pb::Distance::Dot,
        edge::Distance::Manhattan => pb::Distance::Manhattan,
    }
}

fn schema_to_pb(t: edge::PayloadSchemaType) -> pb::PayloadSchemaType {
    use edge::PayloadSchemaType as E;
    match t {
        E::Keyword => pb::PayloadSchemaType::Keyword,
        E::Integer => pb::PayloadSchemaType::Integer,
        E::Float => pb::PayloadSchemaType::Float,
        E::Geo => pb::PayloadSchemaType::Geo,
        E::Text => pb::PayloadSchemaType::Text,
        E::Bool => pb::PayloadSchemaType::Bool,
        E::Datetime => pb::PayloadSchemaType::Datetime,
        E::Uuid => pb::PayloadSchemaType::Uuid,
    }
}

fn id_to_edge(id: Option<pb::PointId>) -> Result<edge::PointId, Status> {
    match id.and_then(|p| p.point_id_options) {
        Some(pb::point_id::PointIdOptions::Num(n)) => Ok(edge::PointId::NumId(n)),
        Some(pb::point_id::PointIdOptions::Uuid(u)) => edge::external::uuid::Uuid::parse_str(&u)
            .map(edge::PointId::Uuid)
            .map_err(|e| Status::invalid_argument(format!("bad point id {u:?}: {e}"))),
        None => Err(Status::invalid_argument("a point id is missing")),
    }
}

fn id_to_pb(id: &edge::PointId) -> pb::PointId {
    match id {
        edge::PointId::NumId(n) => pb::PointId::from(*n),
        edge::PointId::Uuid(u) => pb::PointId {
            point_id_options: Some(pb::point_id::PointIdOptions::Uuid(u.to_string())),
        },
    }
}

fn json_path(field: &str) -> Result<edge::JsonPath, Status> {
    edge::JsonPath::try_from(field)
        .map_err(|_| Status::invalid_argument(format!("bad payload key {field:?}")))
}

fn filter_to_edge(filter: Option<pb::Filter>) -> Result<Option<edge::Filter>, Status> {
    let Some(f) = filter else {
        return Ok(None);
    };
    if f.min_should.is_some() {
        return Err(unimplemented("filter (min_should)"));
    }
    let conditions = |list: Vec<pb::Condition>| -> Result<Option<Vec<edge::Condition>>, Status> {
        if list.is_empty() {
            return Ok(None);
        }
        list.into_iter()
            .map(condition_to_edge)
            .collect::<Result<_, _>>()
            .map(Some)
    };
    Ok(Some(edge::Filter {
        must: conditions(f.must)?,
        should: conditions(f.should)?,
        must_not: conditions(f.must_not)?,
        ..Default::default()
    }))
}

fn condition_to_edge(c: pb::Condition) -> Result<edge::Condition, Status> {
    use pb::r#match::MatchValue;
    let Some(pb::condition::ConditionOneOf::Field(field)) = c.condition_one_of else {
        return Err(unimplemented(
            "filter (conditions other than field matches)",
        ));
    };
    let other_clauses = field.range.is_some()
        || field.geo_bounding_box.is_some()
        || field.geo_radius.is_some()
        || field.values_count.is_some()
        || field.geo_polygon.is_some()
        || field.datetime_range.is_some()
        || field.is_empty.is_some()
        || field.is_null.is_some();
    if other_clauses {
        return Err(unimplemented("filter (range, geo, count, empty, null)"));
    }
    let value = match field.r#match.and_then(|m| m.match_value) {
        Some(MatchValue::Keyword(s)) => edge::ValueVariants::String(s),
        Some(MatchValue::Integer(i)) => edge::ValueVariants::Integer(i),
        Some(MatchValue::Boolean(b)) => edge::ValueVariants::Bool(b),
        // Notably full-text (`MatchValue::Text`), which needs a text index.
        Some(other) => {
            return Err(unimplemented(&format!("filter (match {other:?})")));
        }
        None => return Err(Status::invalid_argument("a field condition has no match")),
    };
    Ok(edge::Condition::Field(edge::FieldCondition::new_match(
        json_path(&field.key)?,
        edge::Match::new_value(value),
    )))
}

fn with_payload(
    selector: Option<pb::WithPayloadSelector>,
    default: bool,
) -> Result<edge::WithPayloadInterface, Status> {
    use pb::with_payload_selector::SelectorOptions;
    Ok(match selector.and_then(|s| s.selector_options) {
        None => edge::WithPayloadInterface::Bool(default),
        Some(SelectorOptions::Enable(b)) => edge::WithPayloadInterface::Bool(b),
        Some(SelectorOptions::Include(fields)) => edge::WithPayloadInterface::Fields(
            fields
                .fields
                .iter()
                .map(|f| json_path(f))
                .collect::<Result<_, _>>()?,
        ),
        Some(SelectorOptions::Exclude(_)) => return Err(unimplemented("with_payload (exclude)")),
    })
}

fn with_vectors(selector: Option<pb::WithVectorsSelector>) -> edge::WithVector {
    use pb::with_vectors_selector::SelectorOptions;
    match selector.and_then(|s| s.selector_options) {
        None => edge::WithVector::Bool(false),
        Some(SelectorOptions::Enable(b)) => edge::WithVector::Bool(b),
        Some(SelectorOptions::Include(v)) => edge::WithVector::Selector(v.names),
    }
}

fn payload_to_pb(payload: Option<edge::Payload>) -> HashMap<String, pb::Value> {
    payload
        .map(|p| {
            p.0.into_iter()
                .map(|(k, v)| (k, pb::Value::from(v)))
                .collect()
        })
        .unwrap_or_default()
}

fn vector_to_pb(v: &edge::VectorInternal) -> Option<pb::VectorOutput> {
    let vector = match v {
        edge::VectorInternal::Dense(d) => {
            pb::vector_output::Vector::Dense(pb::DenseVector { data: d.clone() })
        }
        edge::VectorInternal::Sparse(s) => pb::vector_output::Vector::Sparse(pb::SparseVector {
            values: s.values.clone(),
            indices: s.indices.clone(),
        }),
        edge::VectorInternal::MultiDense(_) => return None,
    };
    Some(pb::VectorOutput {
        vector: Some(vector),
        ..Default::default()
    })
}

fn vectors_to_pb(vectors: Option<edge::VectorStructInternal>) -> Option<pb::VectorsOutput> {
    use pb::vectors_output::VectorsOptions;
    let options = match vectors? {
        edge::VectorStructInternal::Named(map) => VectorsOptions::Vectors(pb::NamedVectorsOutput {
            vectors: map
                .iter()
                .filter_map(|(name, v)| Some((name.to_string(), vector_to_pb(v)?)))
                .collect(),
        }),
        edge::VectorStructInternal::Single(d) => {
            VectorsOptions::Vector(vector_to_pb(&edge::VectorInternal::Dense(d))?)
        }
        edge::VectorStructInternal::MultiDense(_) => return None,
    };
    Some(pb::VectorsOutput {
        vectors_options: Some(options),
    })
}

fn record_to_pb(r: edge::Record) -> pb::RetrievedPoint {
    pb::RetrievedPoint {
        id: Some(id_to_pb(&r.id)),
        payload: payload_to_pb(r.payload),
        vectors: vectors_to_pb(r.vector),
        shard_key: None,
        order_value: None,
    }
}

/// A gRPC point → an engine point, checking vector names and sizes as the
/// server does.
fn point_to_edge(c: &Collection, p: pb::PointStruct) -> Result<edge::PointStructPersisted, Status> {
    use pb::vectors::VectorsOptions;
    let id = id_to_edge(p.id)?;
    let named = match p.vectors.and_then(|v| v.vectors_options) {
        Some(VectorsOptions::Vectors(named)) => named.vectors,
        Some(VectorsOptions::Vector(_)) => return Err(unimplemented("upsert (an unnamed vector)")),
        None => HashMap::new(),
    };
    let config = c.shard.config();
    let mut vectors: HashMap<String, edge::Vector> = HashMap::new();
    for (name, v) in named {
        if let Some(params) = config.vectors.get(name.as_str()) {
            let dense = v
                .try_into_dense()
                .map_err(|e| Status::invalid_argument(format!("vector `{name}`: {e}")))?;
            if dense.len() != params.size {
                return Err(Status::invalid_argument(format!(
                    "Wrong input: Vector dimension error: expected dim: {}, got {}",
                    params.size,
                    dense.len()
                )));
            }
            vectors.insert(name, edge::Vector::new_dense(dense));
        } else if config.sparse_vectors.contains_key(name.as_str()) {
            let (indices, values) = v
                .try_into_sparse()
                .map_err(|e| Status::invalid_argument(format!("vector `{name}`: {e}")))?;
            vectors.insert(
                name,
                edge::Vector::new_sparse(indices, values).map_err(engine_error)?,
            );
        } else {
            return Err(Status::invalid_argument(format!(
                "Wrong input: Not existing vector name error: {name}"
            )));
        }
    }
    drop(config);
    let payload = serde_json::Value::from(Payload::from(p.payload));
    Ok(edge::PointStruct::new(id, edge::Vectors::from(vectors), payload).into())
}

fn completed(started: Instant) -> pb::PointsOperationResponse {
    pb::PointsOperationResponse {
        result: Some(pb::UpdateResult {
            operation_id: None,
            status: pb::UpdateStatus::Completed as i32,
        }),
        time: seconds(started),
        usage: None,
    }
}

fn update(c: &Collection, op: edge::UpdateOperation) -> Result<(), Status> {
    c.shard.update(op).map_err(engine_error)
}

#[tonic::async_trait]
impl Qdrant for Engine {
    async fn health_check(
        &self,
        _request: Request<pb::HealthCheckRequest>,
    ) -> Rpc<pb::HealthCheckReply> {
        self.record("health_check");
        Ok(Response::new(pb::HealthCheckReply {
            title: "qdrant-edge test harness (not a Qdrant server)".into(),
            version: self.version.clone(),
            commit: None,
        }))
    }
}

/// Implements a tonic service trait: the given methods, and every other
/// listed RPC as `UNIMPLEMENTED`.
macro_rules! service {
    (
        impl $service:ident for $engine:ty {
            $($implemented:item)*
        }
        unimplemented { $($rpc:ident($request:ty) -> $response:ty;)* }
    ) => {
        #[tonic::async_trait]
        impl $service for $engine {
            $($implemented)*
            $(
                async fn $rpc(&self, _request: Request<$request>) -> Rpc<$response> {
                    Err(unimplemented(stringify!($rpc)))
                }
            )*
        }
    };
}

service! {
    impl Collections for Handle {
        async fn get(&self, request: Request<pb::GetCollectionInfoRequest>) -> Rpc<pb::GetCollectionInfoResponse> {
            self.record("get_collection");
            let started = Instant::now();
            let name = request.into_inner().collection_name;
            let engine = self.clone();
            let info = blocking(move || engine.collection_info(&name)).await?;
            Ok(Response::new(pb::GetCollectionInfoResponse { result: Some(info), time: seconds(started) }))
        }

        async fn list(&self, _request: Request<pb::ListCollectionsRequest>) -> Rpc<pb::ListCollectionsResponse> {
            self.record("list_collections");
            let mut names: Vec<String> = self.collections.lock().expect("collections lock").keys().cloned().collect();
            names.sort();
            Ok(Response::new(pb::ListCollectionsResponse {
                collections: names.into_iter().map(|name| pb::CollectionDescription { name }).collect(),
                time: 0.0,
            }))
        }

        async fn create(&self, request: Request<pb::CreateCollection>) -> Rpc<pb::CollectionOperationResponse> {
            self.record("create_collection");
            let started = Instant::now();
            let engine = self.clone();
            let request = request.into_inner();
            blocking(move || engine.create_collection(request)).await?;
            Ok(Response::new(pb::CollectionOperationResponse { result: true, time: seconds(started) }))
        }

        async fn delete(&self, request: Request<pb::DeleteCollection>) -> Rpc<pb::CollectionOperationResponse> {
            self.record("delete_collection");
            let name = request.into_inner().collection_name;
            let removed = self.collections.lock().expect("collections lock").remove(&name);
            let existed = removed.is_some();
            if let Some(c) = removed {
                // The folder goes once no call holds the shard any more.
                if let Ok(c) = Arc::try_unwrap(c) {
                    let dir = c.dir.clone();
                    drop(c);
                    let _ = std::fs::remove_dir_all(dir);
                }
            }
            Ok(Response::new(pb::CollectionOperationResponse { result: existed, time: 0.0 }))
        }

        async fn collection_exists(&self, request: Request<pb::CollectionExistsRequest>) -> Rpc<pb::CollectionExistsResponse> {
            self.record("collection_exists");
            let name = request.into_inner().collection_name;
            let exists = self.collections.lock().expect("collections lock").contains_key(&name);
            Ok(Response::new(pb::CollectionExistsResponse {
                result: Some(pb::CollectionExists { exists }),
                time: 0.0,
            }))
        }
    }
    unimplemented {
        update(pb::UpdateCollection) -> pb::CollectionOperationResponse;
        update_aliases(pb::ChangeAliases) -> pb::CollectionOperationResponse;
        list_collection_aliases(pb::ListCollectionAliasesRequest) -> pb::ListAliasesResponse;
        list_aliases(pb::ListAliasesRequest) -> pb::ListAliasesResponse;
        collection_cluster_info(pb::CollectionClusterInfoRequest) -> pb::CollectionClusterInfoResponse;
        update_collection_cluster_setup(pb::UpdateCollectionClusterSetupRequest) -> pb::UpdateCollectionClusterSetupResponse;
        create_shard_key(pb::CreateShardKeyRequest) -> pb::CreateShardKeyResponse;
        delete_shard_key(pb::DeleteShardKeyRequest) -> pb::DeleteShardKeyResponse;
        list_shard_keys(pb::ListShardKeysRequest) -> pb::ListShardKeysResponse;
    }
}

service! {
    impl Points for Handle {
        async fn upsert(&self, request: Request<pb::UpsertPoints>) -> Rpc<pb::PointsOperationResponse> {
            self.record("upsert");
            let started = Instant::now();
            let request = request.into_inner();
            if request.update_filter.is_some() || request.shard_key_selector.is_some() || request.update_mode.is_some() {
                return Err(unimplemented("upsert (conditional, shard keys, update mode)"));
            }
            let c = self.collection(&request.collection_name)?;
            blocking(move || {
                let points = request
                    .points
                    .into_iter()
                    .map(|p| point_to_edge(&c, p))
                    .collect::<Result<Vec<_>, _>>()?;
                update(&c, edge::UpdateOperation::PointOperation(edge::PointOperations::UpsertPoints(
                    edge::PointInsertOperations::PointsList(points),
                )))
            })
            .await?;
            Ok(Response::new(completed(started)))
        }

        async fn delete(&self, request: Request<pb::DeletePoints>) -> Rpc<pb::PointsOperationResponse> {
            use pb::points_selector::PointsSelectorOneOf;
            self.record("delete");
            let started = Instant::now();
            let request = request.into_inner();
            let c = self.collection(&request.collection_name)?;
            let op = match request.points.and_then(|p| p.points_selector_one_of) {
                Some(PointsSelectorOneOf::Points(list)) => edge::PointOperations::DeletePoints {
                    ids: list.ids.into_iter().map(|id| id_to_edge(Some(id))).collect::<Result<_, _>>()?,
                },
                Some(PointsSelectorOneOf::Filter(f)) => match filter_to_edge(Some(f))? {
                    Some(f) => edge::PointOperations::DeletePointsByFilter(f),
                    None => return Err(Status::invalid_argument("an empty filter")),
                },
                None => return Err(Status::invalid_argument("no points selected")),
            };
            blocking(move || update(&c, edge::UpdateOperation::PointOperation(op))).await?;
            Ok(Response::new(completed(started)))
        }

        async fn get(&self, request: Request<pb::GetPoints>) -> Rpc<pb::GetResponse> {
            self.record("get");
            let started = Instant::now();
            let request = request.into_inner();
            let c = self.collection(&request.collection_name)?;
            let mut retrieve = edge::RetrieveRequest::new(
                request.ids.into_iter().map(|id| id_to_edge(Some(id))).collect::<Result<_, _>>()?,
            );
            retrieve.with_payload = Some(with_payload(request.with_payload, true)?);
            retrieve.with_vector = Some(with_vectors(request.with_vectors));
            let records = blocking(move || c.shard.retrieve(retrieve).map_err(engine_error)).await?;
            Ok(Response::new(pb::GetResponse {
                result: records.into_iter().map(record_to_pb).collect(),
                time: seconds(started),
                usage: None,
            }))
        }

        async fn create_field_index(&self, request: Request<pb::CreateFieldIndexCollection>) -> Rpc<pb::PointsOperationResponse> {
            self.record("create_field_index");
            let started = Instant::now();
            let request = request.into_inner();
            if request.field_index_params.is_some() {
                return Err(unimplemented("create_field_index (index parameters)"));
            }
            let schema = match request.field_type.map(pb::FieldType::try_from) {
                Some(Ok(pb::FieldType::Keyword)) => edge::PayloadSchemaType::Keyword,
                Some(Ok(pb::FieldType::Integer)) => edge::PayloadSchemaType::Integer,
                Some(Ok(pb::FieldType::Float)) => edge::PayloadSchemaType::Float,
                Some(Ok(pb::FieldType::Bool)) => edge::PayloadSchemaType::Bool,
                Some(Ok(pb::FieldType::Uuid)) => edge::PayloadSchemaType::Uuid,
                _ => return Err(unimplemented("create_field_index (this field type)")),
            };
            let c = self.collection(&request.collection_name)?;
            let field_name = json_path(&request.field_name)?;
            blocking(move || {
                update(&c, edge::UpdateOperation::FieldIndexOperation(edge::FieldIndexOperations::CreateIndex(
                    edge::CreateIndex {
                        field_name,
                        field_schema: Some(edge::PayloadFieldSchema::FieldType(schema)),
                    },
                )))
            })
            .await?;
            Ok(Response::new(completed(started)))
        }

        async fn scroll(&self, request: Request<pb::ScrollPoints>) -> Rpc<pb::ScrollResponse> {
            self.record("scroll");
            let started = Instant::now();
            let request = request.into_inner();
            if request.order_by.is_some() || request.shard_key_selector.is_some() {
                return Err(unimplemented("scroll (order_by, shard keys)"));
            }
            let c = self.collection(&request.collection_name)?;
            let mut scroll = edge::ScrollRequest::new();
            scroll.offset = request.offset.map(|id| id_to_edge(Some(id))).transpose()?;
            scroll.limit = Some(request.limit.unwrap_or(10) as usize);
            scroll.filter = filter_to_edge(request.filter)?;
            scroll.with_payload = Some(with_payload(request.with_payload, true)?);
            scroll.with_vector = with_vectors(request.with_vectors);
            let (records, next) = blocking(move || c.shard.scroll(scroll).map_err(engine_error)).await?;
            Ok(Response::new(pb::ScrollResponse {
                next_page_offset: next.as_ref().map(id_to_pb),
                result: records.into_iter().map(record_to_pb).collect(),
                time: seconds(started),
                usage: None,
            }))
        }

        async fn count(&self, request: Request<pb::CountPoints>) -> Rpc<pb::CountResponse> {
            self.record("count");
            let started = Instant::now();
            let request = request.into_inner();
            let c = self.collection(&request.collection_name)?;
            let mut count = edge::CountRequest::new();
            count.filter = filter_to_edge(request.filter)?;
            count.exact = request.exact.unwrap_or(true);
            let n = blocking(move || c.shard.count(count).map_err(engine_error)).await?;
            Ok(Response::new(pb::CountResponse {
                result: Some(pb::CountResult { count: n as u64 }),
                time: seconds(started),
                usage: None,
            }))
        }

        async fn query(&self, request: Request<pb::QueryPoints>) -> Rpc<pb::QueryResponse> {
            use pb::vector_input::Variant;
            self.record("query");
            let started = Instant::now();
            let request = request.into_inner();
            if !request.prefetch.is_empty() {
                return Err(unimplemented("query (prefetch and fusion)"));
            }
            if request.lookup_from.is_some() || request.shard_key_selector.is_some() {
                return Err(unimplemented("query (lookup_from, shard keys)"));
            }
            let input = match request.query.and_then(|q| q.variant) {
                Some(pb::query::Variant::Nearest(input)) => input.variant,
                _ => return Err(unimplemented("query (anything but nearest)")),
            };
            let vector = match input {
                Some(Variant::Dense(d)) => edge::VectorInternal::from(d.data),
                Some(Variant::Sparse(s)) => edge::VectorInternal::from(edge::SparseVector {
                    indices: s.indices,
                    values: s.values,
                }),
                _ => return Err(unimplemented("query (by id, multi-vector or inference)")),
            };
            let c = self.collection(&request.collection_name)?;
            let mut query = edge::QueryRequest::new(request.limit.unwrap_or(10) as usize);
            query.offset = request.offset.unwrap_or(0) as usize;
            query.score_threshold = request.score_threshold;
            query.query = Some(edge::ScoringQuery::Vector(edge::QueryEnum::Nearest(edge::NamedQuery {
                query: vector,
                using: request.using,
            })));
            query.filter = filter_to_edge(request.filter)?;
            query.with_payload = with_payload(request.with_payload, false)?;
            query.with_vector = with_vectors(request.with_vectors);
            let points = blocking(move || c.shard.query(query).map_err(engine_error)).await?;
            Ok(Response::new(pb::QueryResponse {
                result: points
                    .into_iter()
                    .map(|p| pb::ScoredPoint {
                        id: Some(id_to_pb(&p.id)),
                        payload: payload_to_pb(p.payload),
                        score: p.score,
                        version: p.version,
                        vectors: vectors_to_pb(p.vector),
                        shard_key: None,
                        order_value: None,
                    })
                    .collect(),
                time: seconds(started),
                usage: None,
            }))
        }
    }
    unimplemented {
        update_vectors(pb::UpdatePointVectors) -> pb::PointsOperationResponse;
        delete_vectors(pb::DeletePointVectors) -> pb::PointsOperationResponse;
        set_payload(pb::SetPayloadPoints) -> pb::PointsOperationResponse;
        overwrite_payload(pb::SetPayloadPoints) -> pb::PointsOperationResponse;
        delete_payload(pb::DeletePayloadPoints) -> pb::PointsOperationResponse;
        clear_payload(pb::ClearPayloadPoints) -> pb::PointsOperationResponse;
        delete_field_index(pb::DeleteFieldIndexCollection) -> pb::PointsOperationResponse;
        create_vector_name(pb::CreateVectorNameRequest) -> pb::PointsOperationResponse;
        delete_vector_name(pb::DeleteVectorNameRequest) -> pb::PointsOperationResponse;
        search(pb::SearchPoints) -> pb::SearchResponse;
        search_batch(pb::SearchBatchPoints) -> pb::SearchBatchResponse;
        search_groups(pb::SearchPointGroups) -> pb::SearchGroupsResponse;
        recommend(pb::RecommendPoints) -> pb::RecommendResponse;
        recommend_batch(pb::RecommendBatchPoints) -> pb::RecommendBatchResponse;
        recommend_groups(pb::RecommendPointGroups) -> pb::RecommendGroupsResponse;
        discover(pb::DiscoverPoints) -> pb::DiscoverResponse;
        discover_batch(pb::DiscoverBatchPoints) -> pb::DiscoverBatchResponse;
        update_batch(pb::UpdateBatchPoints) -> pb::UpdateBatchResponse;
        query_batch(pb::QueryBatchPoints) -> pb::QueryBatchResponse;
        query_groups(pb::QueryPointGroups) -> pb::QueryGroupsResponse;
        facet(pb::FacetCounts) -> pb::FacetResponse;
        search_matrix_pairs(pb::SearchMatrixPoints) -> pb::SearchMatrixPairsResponse;
        search_matrix_offsets(pb::SearchMatrixPoints) -> pb::SearchMatrixOffsetsResponse;
    }
}
