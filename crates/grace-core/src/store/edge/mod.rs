//! The embedded vector store: one qdrant-edge shard per collection, on disk
//! in `<data_dir>/collections/<name>`, in this process.
//!
//! qdrant-edge writes every update to its write-ahead log and replays the
//! log on load, so updates accepted before a crash are not lost; [`flush`]
//! makes them part of the segments. A lock file (`<dir>.lock`) keeps a
//! second process from opening the same shard.
//!
//! [`flush`]: VectorStore::flush

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use qdrant_edge::{
    AnyVariants, Condition, CountRequest, CreateIndex, Distance, EdgeConfig, EdgeShard,
    EdgeSparseVectorParams, EdgeVectorParams, FieldCondition, FieldIndexOperations, Filter,
    HasIdCondition, IdfCorpusParams, IdfParams, IsEmptyCondition, JsonPath,
    KeywordIndexParamsBuilder, Match, Memory, Modifier, NamedQuery, PayloadFieldSchema, PayloadOps,
    PayloadSchemaParams, PointId, PointInsertOperations, PointOperations, PointStruct,
    QuantizationConfig, QueryEnum, QueryRequest, Record, RetrieveRequest, ScoredPoint,
    ScoringQuery, ScrollRequest, SearchParams, SetPayloadOp, UpdateOperation, ValueVariants,
    VectorInternal, VectorRef, VectorStorageDatatype, VectorStructInternal, Vectors,
    WithPayloadInterface, WithVector,
};

use super::{
    ChunkPayload, ChunkPoint, DENSE_VECTOR, LEXICAL_VECTOR, PayloadFilter, QueryVector, Result,
    ScrollPage, StoreError, StoreInfo, StoreQuery, StoredHit, VectorStore,
};
use crate::access::READERS_FIELD;
use crate::config::StorageConfig;
use crate::lexical::SparseVector;

mod rescore;
mod settings;
mod space;

pub use self::settings::IndexSettings;
use self::settings::{
    index_settings, keep_quantised_placement, pool_size, quantised_only, search_params, tuned,
};

/// Segments' worth of points (`storage.segment_points`) up to which the
/// engine scores quantised candidates again per segment
/// ([`EdgeStore::choose_rescoring`]).
const ENGINE_RESCORES_SEGMENTS: usize = 3;

/// A qdrant-edge shard holding one collection.
#[derive(Debug)]
pub struct EdgeStore {
    shard: EdgeShard,
    path: PathBuf,
    dimension: usize,
    /// The search-time settings (`storage.hnsw_ef`, `storage.oversampling`).
    params: SearchParams,
    /// `params` ranking by the quantised scores alone, and the
    /// oversampling of that first pass (`rescore.rs`): made once, not at
    /// every search.
    first_pass: (SearchParams, f64),
    /// Whether a dense ranking scores its quantised candidates again once
    /// for the whole collection (`rescore.rs`) rather than in the engine,
    /// segment by segment: set while the store quantises to int8 and holds
    /// more than [`ENGINE_RESCORES_SEGMENTS`] segments' worth of points.
    rescore_once: AtomicBool,
    /// `storage.segment_points`: the writes after which the store indexes
    /// what it was given.
    segment_points: usize,
    /// Points written since the last optimisation.
    unindexed: AtomicUsize,
    /// `storage.min_free_mb`.
    min_free_mb: u64,
    // Held for the store's lifetime: the OS releases the lock when it closes.
    _lock: File,
}

impl EdgeStore {
    /// Opens the collection at `path`, creating it for `dimension`-sized
    /// dense vectors if it does not exist yet, with the index `settings`
    /// (`storage.*`). An existing store whose saved index settings differ
    /// rebuilds its segments with them before this returns: the next
    /// `grace ingest` after a setting changed applies it.
    pub fn open_or_create(path: &Path, dimension: usize, settings: &StorageConfig) -> Result<Self> {
        let lock = lock(path)?;
        let (shard, before) = if has_shard(path) {
            let saved = stored_config(path)?;
            let shard = load(path, settings, Some(&saved))?;
            // A collection written before readers existed gets their index;
            // one that has it keeps it as it was made (an index asked for
            // again with other parameters would be rebuilt).
            let indexed = shard
                .info()
                .map_err(|e| engine_error(path, e))?
                .payload_schema;
            if !indexed.contains_key(&json_path(path, READERS_FIELD)?) {
                keyword_index(&shard, path, READERS_FIELD)?;
            }
            (shard, Some(saved))
        } else {
            (create(path, dimension, settings)?, None)
        };
        let store = Self::new(shard, path, lock, settings)?;
        if store.dimension != dimension {
            return Err(StoreError::DimensionMismatch {
                path: path.to_path_buf(),
                found: store.dimension,
                expected: dimension,
            });
        }
        if let Some(before) = before {
            let before = index_settings(&before, store.dimension);
            let now = IndexSettings::wanted(settings, store.dimension);
            if before != now {
                tracing::info!(
                    path = %path.display(),
                    ?before,
                    ?now,
                    "the index settings changed: rebuilding the segments with them"
                );
                VectorStore::optimize(&store)?;
            }
        }
        Ok(store)
    }

    /// Opens an existing collection; [`StoreError::NotFound`] if there is
    /// none. The index keeps the settings saved with it (a changed setting
    /// applies at the next [`open_or_create`](Self::open_or_create), as
    /// `grace ingest` opens it); the search-time ones (`hnsw_ef`,
    /// `oversampling`, `search_threads`) apply at once.
    pub fn open_existing(path: &Path, settings: &StorageConfig) -> Result<Self> {
        if !has_shard(path) {
            return Err(StoreError::NotFound {
                path: path.to_path_buf(),
            });
        }
        let lock = lock(path)?;
        let shard = load(path, settings, None)?;
        Self::new(shard, path, lock, settings)
    }

    fn new(shard: EdgeShard, path: &Path, lock: File, settings: &StorageConfig) -> Result<Self> {
        let dimension = shard
            .config()
            .vectors
            .get(DENSE_VECTOR)
            .map(|v| v.size)
            .ok_or_else(|| StoreError::Engine {
                path: path.to_path_buf(),
                message: format!(
                    "the collection has no `{DENSE_VECTOR}` vector; it was not written by grace"
                ),
            })?;
        let params = search_params(settings);
        let store = Self {
            shard,
            path: path.to_path_buf(),
            dimension,
            first_pass: quantised_only(&params),
            params,
            rescore_once: AtomicBool::new(false),
            segment_points: settings.segment_points,
            unindexed: AtomicUsize::new(0),
            min_free_mb: settings.min_free_mb,
            _lock: lock,
        };
        store.choose_rescoring()?;
        Ok(store)
    }

    /// Chooses where int8 candidates are scored again, from the points the
    /// store holds now. Up to [`ENGINE_RESCORES_SEGMENTS`] segments' worth
    /// the engine scores each segment's candidates (with the defaults 80 a
    /// segment, of a store small enough that its full vectors stay in the
    /// page cache), which saves a pass through the segments (0.07 ms at
    /// 100k points); past it, once for the collection, as the
    /// per-segment reads grow with the segments (1,680 at 1M) and go to
    /// the disk once the store outgrows the cache
    /// (docs/src/measurements.md, "A million chunks in 1 GiB").
    fn choose_rescoring(&self) -> Result<()> {
        // Binary scores are not cosines and do not compare across segments
        // as int8's do: per segment, they are scored again among their own.
        let int8 = matches!(
            self.shard.config().quantization_config,
            Some(QuantizationConfig::Scalar(_))
        );
        let points = self.shard.info().map_err(|e| self.engine(e))?.points_count;
        let segment_points = self.index_settings().segment_points;
        let once = int8 && points > ENGINE_RESCORES_SEGMENTS * segment_points;
        self.rescore_once.store(once, Ordering::Relaxed);
        Ok(())
    }

    /// [`choose_rescoring`](Self::choose_rescoring) after a write that
    /// succeeded: a failure to count keeps the choice made before rather
    /// than report the write as failed.
    fn choose_rescoring_after_write(&self) {
        if let Err(e) = self.choose_rescoring() {
            tracing::warn!(path = %self.path.display(), error = %e, "cannot count the store's points; rescoring as before");
        }
    }

    /// Size of the dense vectors.
    pub fn dimension(&self) -> usize {
        self.dimension
    }

    /// The index settings saved with the collection at `path`, read
    /// without opening it; `None` if there is no collection there.
    pub fn saved_index_settings(path: &Path) -> Result<Option<IndexSettings>> {
        if !has_shard(path) {
            return Ok(None);
        }
        let config = stored_config(path)?;
        let dimension = config.vectors.get(DENSE_VECTOR).map_or(0, |v| v.size);
        Ok(Some(index_settings(&config, dimension)))
    }

    /// The index settings the store holds now (as saved in its folder).
    pub fn index_settings(&self) -> IndexSettings {
        index_settings(&self.shard.config(), self.dimension)
    }

    fn engine<E: std::fmt::Display>(&self, e: E) -> StoreError {
        engine_error(&self.path, e)
    }

    /// `query` as the engine ranks it.
    fn ranked(&self, query: &StoreQuery<'_>) -> Result<Vec<StoredHit>> {
        self.ranked_with(query, &self.params)
    }

    /// `query` as the engine ranks it, a dense ranking with `params`.
    fn ranked_with(&self, query: &StoreQuery<'_>, params: &SearchParams) -> Result<Vec<StoredHit>> {
        let (vector, using, params) = match query.vector {
            QueryVector::Dense(v) => (
                VectorInternal::from(v.to_vec()),
                DENSE_VECTOR,
                Some(if query.exact {
                    SearchParams {
                        exact: true,
                        ..SearchParams::default()
                    }
                } else {
                    params.clone()
                }),
            ),
            QueryVector::Lexical(s) => {
                if s.is_empty() {
                    return Ok(Vec::new());
                }
                let sparse = qdrant_edge::SparseVector {
                    indices: s.indices.clone(),
                    values: s.values.clone(),
                };
                // The terms' rarity counted over what the caller may read:
                // a word only a restricted document holds moves no one
                // else's scores.
                let idf = match query.filter.and_then(|f| f.readers.as_deref()) {
                    Some(readers) => Some(SearchParams {
                        idf: Some(IdfParams::Corpus(IdfCorpusParams {
                            corpus: readers_filter(&self.path, readers)?,
                        })),
                        ..SearchParams::default()
                    }),
                    None => None,
                };
                (VectorInternal::from(sparse), LEXICAL_VECTOR, idf)
            }
        };
        let mut request = QueryRequest::new(query.limit);
        request.params = params;
        request.query = Some(ScoringQuery::Vector(QueryEnum::Nearest(NamedQuery {
            query: vector,
            using: Some(using.to_string()),
        })));
        request.filter = match query.filter {
            Some(f) => to_filter(&self.path, f)?,
            None => None,
        };
        self.hits(request, query)
    }

    /// `request` run, with what `query` asks each hit to carry, best first.
    fn hits(&self, mut request: QueryRequest, query: &StoreQuery<'_>) -> Result<Vec<StoredHit>> {
        request.with_payload = WithPayloadInterface::Bool(query.with_payload);
        request.with_vector = if query.with_dense {
            WithVector::Selector(vec![DENSE_VECTOR.to_string()])
        } else {
            WithVector::Bool(false)
        };
        let points = self.shard.query(request).map_err(|e| self.engine(e))?;
        let mut hits = points.into_iter().map(to_hit).collect::<Result<Vec<_>>>()?;
        super::sort_hits(&mut hits);
        Ok(hits)
    }
}

fn engine_error<E: std::fmt::Display>(path: &Path, e: E) -> StoreError {
    StoreError::Engine {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}

fn has_shard(path: &Path) -> bool {
    path.join("edge_config.json").is_file()
}

fn create(path: &Path, dimension: usize, settings: &StorageConfig) -> Result<EdgeShard> {
    let config = EdgeConfig::builder()
        .vector(
            DENSE_VECTOR,
            EdgeVectorParams::builder(dimension, Distance::Cosine).build(),
        )
        .sparse_vector(
            LEXICAL_VECTOR,
            // The indexed segments' posting lists keep each weight in a
            // byte: the lexical index a third smaller at 1M points (323
            // against 496 MB, what lets a 1M store serve in 1 GiB), and the
            // docs corpus's 80 questions rank exactly as with 4 bytes.
            EdgeSparseVectorParams::builder()
                .modifier(Modifier::Idf)
                .datatype(VectorStorageDatatype::Uint8)
                .build(),
        )
        .build();
    let config = tuned(config, settings);
    let shard = EdgeShard::new(path, config).map_err(|e| engine_error(path, e))?;
    // A keyword index on `source` makes delete-by-source and source filters
    // cheap once the collection is large.
    keyword_index(&shard, path, "source")?;
    keyword_index(&shard, path, READERS_FIELD)?;
    shard.flush().map_err(|e| engine_error(path, e))?;
    Ok(shard)
}

/// Creates a keyword index on `field` (nothing changes when it exists).
fn keyword_index(shard: &EdgeShard, path: &Path, field: &str) -> Result<()> {
    shard
        .update(UpdateOperation::FieldIndexOperation(
            FieldIndexOperations::CreateIndex(CreateIndex {
                field_name: json_path(path, field)?,
                // On disk: at 1M points in memory these two indexes held
                // 150 MB of heap; a delete or a readers filter reads the
                // few pages it needs.
                field_schema: Some(PayloadFieldSchema::FieldParams(
                    PayloadSchemaParams::Keyword(
                        KeywordIndexParamsBuilder::new()
                            .memory(Memory::Cold)
                            .build(),
                    ),
                )),
            }),
        ))
        .map_err(|e| engine_error(path, e))?;
    Ok(())
}

/// The engine configuration saved in a shard's folder (empty if none).
fn stored_config(path: &Path) -> Result<EdgeConfig> {
    Ok(EdgeConfig::load(path)
        .transpose()
        .map_err(|e| engine_error(path, e))?
        .unwrap_or_default())
}

/// Loads a shard with its search pool sized by `settings`. Opened for
/// writing (`saved`: the configuration saved in its folder), its index
/// settings are laid over the saved ones too: they are saved, and the
/// segments converge to them at the next optimisation. For reading the
/// saved index settings stay, so a reader never changes what a writer
/// built.
fn load(path: &Path, settings: &StorageConfig, saved: Option<&EdgeConfig>) -> Result<EdgeShard> {
    if settings.min_free_mb > 0
        && let Some(bytes) = space::tmpfs_open_bytes(path)
    {
        space::ensure(path, settings.min_free_mb, || bytes)?;
    }
    let overlay = match saved {
        None => EdgeConfig::builder()
            .max_search_threads(pool_size(settings.search_threads))
            .build(),
        Some(saved) => keep_quantised_placement(
            tuned(
                EdgeConfig::builder()
                    .vectors(saved.vectors.clone())
                    .sparse_vectors(saved.sparse_vectors.clone())
                    .build(),
                settings,
            ),
            saved,
        ),
    };
    EdgeShard::load(path, Some(overlay)).map_err(|e| engine_error(path, e))
}

/// Takes the exclusive lock beside the collection folder, recording our pid
/// so a second process can say who holds it.
fn lock(path: &Path) -> Result<File> {
    let lock_path = path.with_extension("lock");
    if let Some(parent) = lock_path.parent() {
        std::fs::create_dir_all(parent).map_err(|source| StoreError::Io {
            action: "create the folder",
            path: parent.to_path_buf(),
            source,
        })?;
    }
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&lock_path)
        .map_err(|source| StoreError::Io {
            action: "open the lock file",
            path: lock_path.clone(),
            source,
        })?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            let mut holder = String::new();
            let _ = file.read_to_string(&mut holder);
            let holder = holder.trim();
            return Err(StoreError::Busy {
                path: path.to_path_buf(),
                holder: if holder.is_empty() {
                    String::new()
                } else {
                    format!(" (pid {holder})")
                },
            });
        }
        Err(TryLockError::Error(source)) => {
            return Err(StoreError::Io {
                action: "lock",
                path: lock_path,
                source,
            });
        }
    }
    let pid = std::process::id().to_string();
    let written = file
        .set_len(0)
        .and_then(|()| file.rewind())
        .and_then(|()| file.write_all(pid.as_bytes()));
    written.map_err(|source| StoreError::Io {
        action: "write the lock file",
        path: lock_path,
        source,
    })?;
    Ok(file)
}

fn json_path(store: &Path, field: &str) -> Result<JsonPath> {
    JsonPath::try_from(field).map_err(|_| StoreError::Engine {
        path: store.to_path_buf(),
        message: format!("`{field}` is not a valid payload field name"),
    })
}

fn to_filter(store: &Path, filter: &PayloadFilter) -> Result<Option<Filter>> {
    if filter.is_empty() {
        return Ok(None);
    }
    let mut conditions = Vec::with_capacity(filter.must.len());
    for (field, value) in &filter.must {
        conditions.push(Condition::Field(FieldCondition::new_match(
            json_path(store, field)?,
            Match::new_value(ValueVariants::String(value.clone())),
        )));
    }
    if let Some(readers) = &filter.readers {
        conditions.push(Condition::Filter(readers_filter(store, readers)?));
    }
    let must_not = (!filter.exclude_ids.is_empty()).then(|| {
        let ids: HasIdCondition = filter
            .exclude_ids
            .iter()
            .map(|id| PointId::NumId(*id))
            .collect();
        vec![Condition::HasId(ids)]
    });
    Ok(Some(Filter {
        must: (!conditions.is_empty()).then_some(conditions),
        must_not,
        ..Default::default()
    }))
}

/// Points one of `readers` may read: the readers field holds one of them,
/// or is empty (a chunk written before readers existed is everyone's).
fn readers_filter(store: &Path, readers: &[String]) -> Result<Filter> {
    let field = json_path(store, READERS_FIELD)?;
    let any = AnyVariants::Strings(readers.iter().cloned().collect());
    Ok(Filter {
        should: Some(vec![
            Condition::Field(FieldCondition::new_match(
                field.clone(),
                Match::new_any(any),
            )),
            Condition::IsEmpty(IsEmptyCondition::from(field)),
        ]),
        ..Default::default()
    })
}

fn id_string(id: &PointId) -> String {
    match id {
        PointId::NumId(n) => n.to_string(),
        PointId::Uuid(u) => u.to_string(),
    }
}

fn numeric_id(id: PointId) -> Result<u64> {
    match id {
        PointId::NumId(n) => Ok(n),
        other => Err(StoreError::BadPayload {
            id: id_string(&other),
            message: "point id is not numeric".into(),
        }),
    }
}

fn to_payload(id: u64, payload: Option<qdrant_edge::Payload>) -> Result<ChunkPayload> {
    let map = payload.map(|p| p.0).unwrap_or_default();
    serde_json::from_value(serde_json::Value::Object(map.into_iter().collect())).map_err(|e| {
        StoreError::BadPayload {
            id: id.to_string(),
            message: e.to_string(),
        }
    })
}

/// A stored point with both vectors, as [`VectorStore::scroll`] returns it.
fn to_chunk_point(record: Record) -> Result<ChunkPoint> {
    let id = numeric_id(record.id)?;
    let missing = |what: &str| StoreError::BadPayload {
        id: id.to_string(),
        message: format!("the point has no `{what}` vector"),
    };
    let Some(VectorStructInternal::Named(mut vectors)) = record.vector else {
        return Err(missing(DENSE_VECTOR));
    };
    let dense = match vectors.remove(DENSE_VECTOR) {
        Some(VectorInternal::Dense(d)) => d,
        _ => return Err(missing(DENSE_VECTOR)),
    };
    let lexical = match vectors.remove(LEXICAL_VECTOR) {
        Some(VectorInternal::Sparse(s)) => SparseVector {
            indices: s.indices,
            values: s.values,
        },
        _ => return Err(missing(LEXICAL_VECTOR)),
    };
    Ok(ChunkPoint {
        id,
        dense,
        lexical,
        payload: to_payload(id, record.payload)?,
    })
}

fn to_hit(point: ScoredPoint) -> Result<StoredHit> {
    let id = numeric_id(point.id)?;
    let payload = point.payload.map(|p| to_payload(id, Some(p))).transpose()?;
    let dense = point
        .vector
        .as_ref()
        .and_then(|v| match v.get(DENSE_VECTOR) {
            Some(VectorRef::Dense(d)) => Some(d.to_vec()),
            _ => None,
        });
    Ok(StoredHit {
        id,
        score: point.score,
        payload,
        dense,
    })
}

impl VectorStore for EdgeStore {
    fn upsert(&self, points: Vec<ChunkPoint>) -> Result<()> {
        if points.is_empty() {
            return Ok(());
        }
        self.ensure_space(&points)?;
        let mut batch = Vec::with_capacity(points.len());
        for p in points {
            if p.dense.len() != self.dimension {
                return Err(StoreError::DimensionMismatch {
                    path: self.path.clone(),
                    found: self.dimension,
                    expected: p.dense.len(),
                });
            }
            let payload = serde_json::to_value(&p.payload).map_err(|e| self.engine(e))?;
            let sparse = qdrant_edge::SparseVector {
                indices: p.lexical.indices,
                values: p.lexical.values,
            };
            let vectors = Vectors::new_named([
                (DENSE_VECTOR, qdrant_edge::Vector::from(p.dense)),
                (LEXICAL_VECTOR, qdrant_edge::Vector::from(sparse)),
            ]);
            batch.push(PointStruct::new(p.id, vectors, payload).into());
        }
        let written = batch.len();
        self.shard
            .update(UpdateOperation::PointOperation(
                PointOperations::UpsertPoints(PointInsertOperations::PointsList(batch)),
            ))
            .map_err(|e| self.engine(e))?;
        // Bounded writing: unindexed points sit in the appendable segment,
        // whose vectors, lexical index and payload are all in memory, and
        // indexing it maps a copy of it. Indexing every `segment_points`
        // keeps both to one segment's worth, however large the ingest.
        if self.unindexed.fetch_add(written, Ordering::Relaxed) + written >= self.segment_points {
            self.unindexed.store(0, Ordering::Relaxed);
            self.shard.flush().map_err(|e| self.engine(e))?;
            self.shard.optimize().map_err(|e| self.engine(e))?;
            self.choose_rescoring_after_write();
        }
        Ok(())
    }

    fn ensure_space(&self, points: &[ChunkPoint]) -> Result<()> {
        space::ensure(&self.path, self.min_free_mb, || {
            let mut needed = space::points_bytes(points);
            // Past `segment_points` the upsert also builds an index.
            if self.unindexed.load(Ordering::Relaxed) + points.len() >= self.segment_points {
                needed += space::build_bytes(&self.path, self.segment_points);
            }
            needed
        })
    }

    fn search(&self, query: &StoreQuery<'_>) -> Result<Vec<StoredHit>> {
        match query.vector {
            QueryVector::Dense(v) if !query.exact && self.rescore_once.load(Ordering::Relaxed) => {
                self.rescored(v, query)
            }
            _ => self.ranked(query),
        }
    }

    fn retrieve(&self, ids: &[u64]) -> Result<Vec<ChunkPoint>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut request = RetrieveRequest::new(ids.iter().map(|&id| PointId::NumId(id)).collect());
        request.with_payload = Some(WithPayloadInterface::Bool(true));
        request.with_vector = Some(WithVector::Bool(true));
        let records = self.shard.retrieve(request).map_err(|e| self.engine(e))?;
        records.into_iter().map(to_chunk_point).collect()
    }

    fn retrieve_terms(&self, ids: &[u64]) -> Result<Vec<(u64, Vec<u32>)>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut request = RetrieveRequest::new(ids.iter().map(|&id| PointId::NumId(id)).collect());
        request.with_payload = Some(WithPayloadInterface::Bool(false));
        request.with_vector = Some(WithVector::Selector(vec![LEXICAL_VECTOR.to_string()]));
        let records = self.shard.retrieve(request).map_err(|e| self.engine(e))?;
        records
            .into_iter()
            .map(|record| {
                let id = numeric_id(record.id)?;
                match record.vector {
                    Some(VectorStructInternal::Named(mut vectors)) => {
                        match vectors.remove(LEXICAL_VECTOR) {
                            Some(VectorInternal::Sparse(s)) => Ok((id, s.indices)),
                            _ => Err(StoreError::BadPayload {
                                id: id.to_string(),
                                message: format!("the point has no `{LEXICAL_VECTOR}` vector"),
                            }),
                        }
                    }
                    _ => Err(StoreError::BadPayload {
                        id: id.to_string(),
                        message: format!("the point has no `{LEXICAL_VECTOR}` vector"),
                    }),
                }
            })
            .collect()
    }

    fn delete_by_source(&self, source: &str) -> Result<()> {
        let Some(filter) = to_filter(&self.path, &PayloadFilter::source(source))? else {
            return Ok(());
        };
        space::ensure(&self.path, self.min_free_mb, || space::UPDATE_BYTES)?;
        self.shard
            .update(UpdateOperation::PointOperation(
                PointOperations::DeletePointsByFilter(filter),
            ))
            .map_err(|e| self.engine(e))
    }

    fn set_readers(&self, source: &str, readers: &[String]) -> Result<()> {
        let Some(filter) = to_filter(&self.path, &PayloadFilter::source(source))? else {
            return Ok(());
        };
        space::ensure(&self.path, self.min_free_mb, || space::UPDATE_BYTES)?;
        let mut payload = qdrant_edge::Payload::default();
        payload.0.insert(
            READERS_FIELD.to_string(),
            serde_json::Value::from(readers.to_vec()),
        );
        self.shard
            .update(UpdateOperation::PayloadOperation(PayloadOps::SetPayload(
                SetPayloadOp {
                    payload,
                    points: None,
                    filter: Some(filter),
                    key: None,
                },
            )))
            .map_err(|e| self.engine(e))
    }

    fn count(&self, filter: Option<&PayloadFilter>) -> Result<usize> {
        let mut request = CountRequest::new();
        request.filter = match filter {
            Some(f) => to_filter(&self.path, f)?,
            None => None,
        };
        request.exact = true;
        self.shard.count(request).map_err(|e| self.engine(e))
    }

    fn flush(&self) -> Result<()> {
        self.shard.flush().map_err(|e| self.engine(e))
    }

    fn optimize(&self) -> Result<bool> {
        space::ensure(&self.path, self.min_free_mb, || {
            space::build_bytes(&self.path, self.segment_points)
        })?;
        self.unindexed.store(0, Ordering::Relaxed);
        let optimized = self.shard.optimize().map_err(|e| self.engine(e))?;
        self.choose_rescoring_after_write();
        Ok(optimized)
    }

    fn info(&self) -> Result<StoreInfo> {
        let info = self.shard.info().map_err(|e| self.engine(e))?;
        Ok(StoreInfo {
            points: info.points_count,
            indexed_vectors: info.indexed_vectors_count,
            segments: info.segments_count,
            dimension: self.dimension,
            index: Some(self.index_settings()),
        })
    }

    fn scroll(&self, offset: Option<u64>, limit: usize) -> Result<ScrollPage> {
        let mut request = ScrollRequest::new();
        request.offset = offset.map(PointId::NumId);
        request.limit = Some(limit.max(1));
        request.with_payload = Some(WithPayloadInterface::Bool(true));
        request.with_vector = WithVector::Bool(true);
        let (records, next) = self.shard.scroll(request).map_err(|e| self.engine(e))?;
        Ok(ScrollPage {
            points: records
                .into_iter()
                .map(to_chunk_point)
                .collect::<Result<_>>()?,
            next: next.map(numeric_id).transpose()?,
        })
    }
}
