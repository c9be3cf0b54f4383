//! [`KnowledgeBase`]: one collection with its store, embedder and lexical
//! encoder, opened from a [`Config`]. The CLI and (later) the services are
//! thin layers over it.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, PoisonError, RwLock};

use serde::Serialize;

use crate::confidence::Scorer;
use crate::confidence::calibration::Calibration;
use crate::config::Rerank;
use crate::config::{Backend, Config};
use crate::embed::{CachedEmbedder, Embedder, FastEmbedder};
use crate::error::Result;
use crate::ingest::manifest::{EntryState, Manifest};
use crate::ingest::{IngestEvent, IngestOptions, IngestReport, Ingestor};
use crate::lexical::LexicalEncoder;
use crate::reader::{self, Reader};
use crate::search::{Passage, SearchRequest, apply_document_boosts};
use crate::store::edge::{EdgeStore, IndexSettings};
use crate::store::{PayloadFilter, QueryVector, StoreInfo, StoreQuery, VectorStore};

/// An opened knowledge base.
pub struct KnowledgeBase {
    config: Config,
    store: Box<dyn VectorStore>,
    /// Embeds chunks for ingest: each is new, so nothing is cached.
    embedder: Arc<dyn Embedder>,
    /// The same model behind a cache, for questions and passage sentences,
    /// which recur from one question to the next.
    answering: Arc<CachedEmbedder>,
    lexical: LexicalEncoder,
    /// The answerability reader (loaded on the first question).
    reader: Reader,
    /// The confidence calibration that applies (`confidence.calibration`,
    /// a fit on feedback, or a self-calibration), if any.
    calibration: Option<Calibration>,
    /// Scores steps: `confidence.model` with the calibration's weights,
    /// else `confidence.weights`.
    scorer: Scorer,
    /// Documents' boosts from their ratings (`feedback.document_boost`),
    /// set by whoever reads the ratings; empty: none.
    document_boosts: RwLock<Arc<HashMap<String, f32>>>,
}

/// How to open the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenMode {
    /// The collection must exist (search, status).
    Existing,
    /// Create the collection if it does not exist (ingest).
    Create,
}

impl KnowledgeBase {
    /// Opens the configured collection with the configured local model.
    pub fn open(config: Config, mode: OpenMode) -> Result<Self> {
        let embedder: Arc<dyn Embedder> = Arc::new(FastEmbedder::new(&config.embedding)?);
        Self::with_embedder(config, embedder, mode)
    }

    /// Opens the configured collection with a given embedder.
    pub fn with_embedder(
        config: Config,
        embedder: Arc<dyn Embedder>,
        mode: OpenMode,
    ) -> Result<Self> {
        check_writable(&config.storage.data_dir)?;
        let calibration = crate::confidence::calibration::load(&config)?;
        let scorer = Scorer::new(&config.confidence, calibration.as_ref().map(|c| c.weights));
        // A shared collection is checked whatever the mode: a server
        // configured with another model would re-embed it under the others.
        if mode == OpenMode::Existing || crate::state::shares_collection(&config) {
            check_model(&config, embedder.model_id())?;
        }
        let store = open_store(&config, mode, embedder.dimension())?;
        let answering = Arc::new(CachedEmbedder::new(
            embedder.clone(),
            config.embedding.cache_size,
        ));
        let reader = Reader::new(
            config.confidence.reader,
            &config.reader,
            &config.embedding.runtime_path,
        );
        let kb = Self {
            config,
            store,
            embedder,
            answering,
            lexical: LexicalEncoder::new()?,
            reader,
            calibration,
            scorer,
            document_boosts: RwLock::new(Arc::new(HashMap::new())),
        };
        if let Some(why) = kb.calibration_mismatch() {
            tracing::warn!("{why}");
        }
        Ok(kb)
    }

    /// The groups the documents' readers name (`group:NAME` → `NAME`), from
    /// the manifest, sorted.
    pub fn reader_groups(&self) -> Result<Vec<String>> {
        let manifest = Manifest::load_for(&self.config)?;
        let mut groups: Vec<String> = manifest
            .iter()
            .flat_map(|m| m.sources.values())
            .flat_map(|e| e.readers.iter())
            .filter_map(|r| r.strip_prefix("group:"))
            .map(str::to_string)
            .collect();
        groups.sort();
        groups.dedup();
        Ok(groups)
    }

    /// Content hashes of the collection's documents (from its manifest),
    /// sorted and without repeats.
    pub fn source_hashes(&self) -> Result<Vec<String>> {
        let manifest = Manifest::load_for(&self.config)?;
        let mut hashes: Vec<String> = manifest
            .map(|m| {
                m.sources
                    .into_values()
                    .map(|entry| entry.content_hash)
                    .collect()
            })
            .unwrap_or_default();
        hashes.sort();
        hashes.dedup();
        Ok(hashes)
    }

    /// Why the configured confidence calibration may not fit this knowledge
    /// base (see [`Calibration::mismatch`]); `None` when it does or when
    /// none is configured.
    ///
    /// [`Calibration::mismatch`]: crate::confidence::calibration::Calibration::mismatch
    pub fn calibration_mismatch(&self) -> Option<String> {
        let calibration = self.calibration.as_ref()?;
        let sources = match self.source_hashes() {
            Ok(hashes) => hashes.into_iter().collect(),
            Err(e) => {
                tracing::debug!("cannot read the manifest to check the calibration: {e}");
                Default::default()
            }
        };
        calibration.mismatch(
            &self.config.collection.name,
            self.embedder.model_id(),
            self.config.llm.provider.as_str(),
            &sources,
        )
    }

    /// The configuration it was opened with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// What its answers are scored with: the calibration's weights when one
    /// applies, else the configured ones (hand them to
    /// [`Executor::new`](crate::exec::Executor::new)).
    pub fn scorer(&self) -> &Scorer {
        &self.scorer
    }

    /// The vector store.
    pub fn store(&self) -> &dyn VectorStore {
        self.store.as_ref()
    }

    /// The embedder used for questions (cached: see [`CachedEmbedder`]).
    pub fn embedder(&self) -> &dyn Embedder {
        self.answering.as_ref()
    }

    /// A shared handle to the cached embedder, for generators that embed
    /// the question and passage sentences too.
    pub fn embedder_handle(&self) -> Arc<dyn Embedder> {
        self.answering.clone()
    }

    /// Gets a long-running server ready to answer at full speed: loads the
    /// vector cache it saved before ([`KnowledgeBase::save_vector_cache`])
    /// and runs the embedding model, a search and the reader once, so that
    /// the first questions pay neither for the models' first run nor for
    /// embedding every passage sentence again. A refused cache file is a
    /// warning: the cache starts empty and the next save replaces it.
    pub fn warm_up(&self) -> Result<()> {
        let path = self.config.vector_cache_path();
        match self.answering.load(&path) {
            Ok(vectors) => tracing::info!(vectors, path = %path.display(), "vector cache loaded"),
            Err(e) => tracing::warn!("{e}; the vector cache starts empty"),
        }
        // The model itself, not the cache: a made-up text is not kept.
        let query = "warm-up";
        let passages = self.fused(self.embedder.as_ref(), query, 1, None)?;
        let text = passages.first().map_or(query, |p| p.text.as_str());
        // Two texts: the sessions that embed an answer's sentences (a
        // batch) load now too, not on the first question.
        self.embedder
            .embed(&[text.to_string(), query.to_string()])?;
        self.reader.probabilities(query, &[text])?;
        Ok(())
    }

    /// The fused search of `query` with `embedder`, as configured: the
    /// `limit` best passages, before boosts and the reader.
    fn fused(
        &self,
        embedder: &dyn Embedder,
        query: &str,
        limit: usize,
        filter: Option<&PayloadFilter>,
    ) -> Result<Vec<Passage>> {
        let request = SearchRequest {
            query,
            limit,
            filter,
        };
        Ok(crate::search::search(
            self.store.as_ref(),
            embedder,
            &self.lexical,
            &self.config.search,
            &request,
        )?)
    }

    /// Saves the answering vector cache for the next start
    /// ([`CachedEmbedder::save`]) when vectors were added since the last
    /// save; returns whether it wrote.
    pub fn save_vector_cache(&self) -> Result<bool> {
        Ok(self.answering.save(&self.config.vector_cache_path())?)
    }

    /// The lexical encoder.
    pub fn lexical(&self) -> &LexicalEncoder {
        &self.lexical
    }

    /// Ingests files and folders (see [`crate::ingest`]).
    pub fn ingest(
        &self,
        paths: &[PathBuf],
        options: &IngestOptions,
        on_event: &mut dyn FnMut(IngestEvent<'_>),
    ) -> Result<IngestReport> {
        // One ingest at a time across the servers sharing the state (at
        // once with SQLite: one server per data folder).
        let writer = crate::state::ClusterLock::writer(&self.config)?;
        let manifest =
            crate::ingest::manifest::ManifestStore::open(&self.config)?.guarded_by(writer);
        let ingestor = Ingestor {
            store: self.store.as_ref(),
            embedder: self.embedder.as_ref(),
            lexical: &self.lexical,
            config: &self.config.ingest,
            manifest: &manifest,
        };
        let report = ingestor.run(paths, options, on_event)?;
        record_ingest(&report);
        Ok(report)
    }

    /// Searches the collection; `limit` defaults to `search.limit`.
    /// With `search.rerank: reader` and the reader available, it reads the
    /// best `search.rerank_depth` fused passages (at least `limit`) and
    /// reorders them by its probability (pinned passages stay first) before
    /// the best `limit` are kept; with `rerank: none` it reads only those
    /// `limit`. Each passage read has its `reader_score`.
    pub fn search(
        &self,
        query: &str,
        limit: Option<usize>,
        filter: Option<&PayloadFilter>,
    ) -> Result<Vec<Passage>> {
        let limit = limit.unwrap_or(self.config.search.limit);
        // Before the depth to rerank replaces it: 0 would pass as the depth.
        crate::search::check_limit(limit)?;
        let rerank = self.config.search.rerank == Rerank::Reader && self.reader.enabled();
        let depth = if rerank {
            limit.max(self.config.search.rerank_depth)
        } else {
            limit
        };
        let mut passages = self.fused(self.answering.as_ref(), query, depth, filter)?;
        apply_document_boosts(&mut passages, &self.document_boosts());
        let texts: Vec<&str> = passages.iter().map(|p| p.text.as_str()).collect();
        let reading = std::time::Instant::now();
        let read = self.reader.probabilities(query.trim(), &texts)?;
        if read.is_some() {
            crate::telemetry::phase(crate::telemetry::Phase::Read, reading.elapsed());
        }
        if let Some(probabilities) = read {
            for (p, prob) in passages.iter_mut().zip(probabilities) {
                p.reader_score = Some(prob);
            }
            if rerank {
                reader::rerank(&mut passages);
            }
        }
        passages.truncate(limit);
        Ok(passages)
    }

    /// Documents' boosts from now on (by document path): a search moves
    /// each returned passage by its document's ([`apply_document_boosts`]).
    pub fn set_document_boosts(&self, boosts: HashMap<String, f32>) {
        // A writer that panicked left a whole value (one pointer): replace it.
        *self
            .document_boosts
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Arc::new(boosts);
    }

    /// The documents' boosts searches use now.
    pub fn document_boosts(&self) -> Arc<HashMap<String, f32>> {
        self.document_boosts
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Mean cosine similarity of `passage` to its `k` nearest other passages
    /// in the collection (`None` when it has no other passage): how generic
    /// the passage is. Uses the passage's stored vector (a search returns
    /// it), else embeds its text again (close, not equal: the stored vector
    /// was embedded with the section heading). Only points `filter` lets
    /// through count as neighbours.
    pub fn neighbour_similarity(
        &self,
        passage: &Passage,
        k: usize,
        filter: Option<&PayloadFilter>,
    ) -> Result<Option<f64>> {
        let vector = match &passage.vector {
            Some(v) => v.clone(),
            None => self
                .answering
                .embed(&[crate::text::blocks::unmarked(&passage.text)])?
                .pop()
                .unwrap_or_default(),
        };
        let hits = self.store.search(&StoreQuery {
            filter,
            ..StoreQuery::ranking(QueryVector::Dense(&vector), k + 1)
        })?;
        let similarity = self.embedder.similarity_scale().passage;
        let scores: Vec<f64> = hits
            .iter()
            .filter(|h| h.id != passage.id)
            .take(k)
            .map(|h| f64::from(similarity.apply(h.score)))
            .collect();
        Ok((!scores.is_empty()).then(|| scores.iter().sum::<f64>() / scores.len() as f64))
    }

    /// Size and provenance of the collection.
    pub fn status(&self) -> Result<Status> {
        collect_status(
            &self.config,
            self.store.as_ref(),
            Ok((self.embedder.model_id(), self.embedder.languages())),
        )
    }
}

/// Fails with [`crate::error::Error::DataDirReadOnly`] when a file cannot be made in
/// `dir` (created if missing): a read-only folder is said at start, not as
/// the first write fails. A full disk is not a read-only folder: reads go
/// on, and each write says the disk is full.
pub(crate) fn check_writable(dir: &std::path::Path) -> Result<()> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static PROBES: AtomicU64 = AtomicU64::new(0);
    // The process and a count: unique within a machine's pid namespace;
    // `create_new` refuses a name taken by another's.
    let probe = dir.join(format!(
        ".grace-write-check-{}-{}",
        std::process::id(),
        PROBES.fetch_add(1, Ordering::Relaxed)
    ));
    let written = std::fs::create_dir_all(dir).and_then(|()| {
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&probe)
            .map(drop)
    });
    let _ = std::fs::remove_file(&probe);
    match written {
        Ok(()) => Ok(()),
        Err(e)
            if matches!(
                e.kind(),
                // A full disk is not a read-only folder, and a name another
                // process holds means names can be made.
                std::io::ErrorKind::StorageFull
                    | std::io::ErrorKind::QuotaExceeded
                    | std::io::ErrorKind::AlreadyExists
            ) =>
        {
            Ok(())
        }
        Err(source) => Err(crate::error::Error::DataDirReadOnly {
            path: dir.to_path_buf(),
            source,
        }),
    }
}

/// Opens the store `config.storage.backend` names: an existing collection,
/// or one created for `dimension`-sized dense vectors if missing.
pub(crate) fn open_store(
    config: &Config,
    mode: OpenMode,
    dimension: usize,
) -> Result<Box<dyn VectorStore>> {
    Ok(match (config.storage.backend, mode) {
        (Backend::Edge, OpenMode::Existing) => Box::new(EdgeStore::open_existing(
            &config.collection_dir(),
            &config.storage,
        )?),
        (Backend::Edge, OpenMode::Create) => Box::new(EdgeStore::open_or_create(
            &config.collection_dir(),
            dimension,
            &config.storage,
        )?),
        (Backend::Qdrant, mode) => server_store(config, mode, dimension)?,
    })
}

/// The collection on a Qdrant server (`storage.backend: qdrant`).
#[cfg(feature = "qdrant-server")]
fn server_store(config: &Config, mode: OpenMode, dimension: usize) -> Result<Box<dyn VectorStore>> {
    use crate::store::qdrant::QdrantStore;
    let (server, collection) = (&config.qdrant, &config.collection);
    Ok(match mode {
        OpenMode::Existing => Box::new(QdrantStore::open_existing(server, collection)?),
        OpenMode::Create => Box::new(QdrantStore::open_or_create(server, collection, dimension)?),
    })
}

#[cfg(not(feature = "qdrant-server"))]
fn server_store(_: &Config, _: OpenMode, _: usize) -> Result<Box<dyn VectorStore>> {
    Err(qdrant_server_off())
}

/// Deletes collection `collection.name` on the Qdrant server `server`;
/// whether it existed.
pub fn drop_server_collection(
    server: &crate::config::QdrantConfig,
    collection: &crate::config::CollectionConfig,
) -> Result<bool> {
    #[cfg(feature = "qdrant-server")]
    return Ok(crate::store::qdrant::QdrantStore::drop_collection(
        server, collection,
    )?);
    #[cfg(not(feature = "qdrant-server"))]
    {
        let _ = (server, collection);
        Err(qdrant_server_off())
    }
}

#[cfg(not(feature = "qdrant-server"))]
fn qdrant_server_off() -> crate::error::Error {
    crate::error::Error::FeatureOff {
        key: "storage.backend: qdrant",
        feature: "qdrant-server",
    }
}

/// Counts an ingest run's files and chunks (see [`crate::telemetry`]).
fn record_ingest(report: &IngestReport) {
    use crate::telemetry::{ingest_chunks, ingest_files};
    ingest_files("added", report.added);
    ingest_files("updated", report.updated);
    ingest_files("unchanged", report.unchanged);
    ingest_files("removed", report.removed.len());
    ingest_files("skipped", report.skipped.len());
    ingest_chunks(report.chunks_written);
}

/// The status of the configured collection without loading the embedding
/// model, so it also answers when the model files are missing (the problem
/// is then reported in [`Status::model`]).
pub fn status(config: &Config) -> Result<Status> {
    // The dimension only matters when creating.
    let store = open_store(config, OpenMode::Existing, 0)?;
    let embedder = FastEmbedder::new(&config.embedding);
    let model = match &embedder {
        Ok(e) => Ok((e.model_id(), e.languages())),
        Err(e) => Err(e.to_string()),
    };
    collect_status(config, store.as_ref(), model)
}

/// Fails when the collection's manifest records another embedding model
/// than `model_id`: its vectors would be compared with vectors of another
/// space (MiniLM and multilingual-e5-small both give 384 numbers). An
/// ingest re-embeds instead, so only opening an existing collection checks,
/// and any opening of one the servers share (`state::shares_collection`).
fn check_model(config: &Config, model_id: &str) -> Result<()> {
    let Some(manifest) = Manifest::load_for(config)? else {
        return Ok(());
    };
    let stored = crate::ingest::pipeline_model(&manifest.pipeline);
    if stored.is_empty() || stored == model_id {
        return Ok(());
    }
    Err(crate::error::Error::ModelMismatch {
        collection: config.collection.name.clone(),
        stored: stored.to_string(),
        configured: model_id.to_string(),
    })
}

fn collect_status(
    config: &Config,
    store: &dyn VectorStore,
    model: std::result::Result<(&str, &str), String>,
) -> Result<Status> {
    let manifest = Manifest::load_for(config)?;
    let (sources, pipeline, pending) = match &manifest {
        Some(m) => (
            m.sources.len(),
            Some(m.pipeline.clone()),
            m.sources
                .values()
                .filter(|e| e.state == EntryState::Pending)
                .count(),
        ),
        None => (0, None, 0),
    };
    let (model, model_languages, model_error) = match model {
        Ok((id, languages)) => (Some(id.to_string()), Some(languages.to_string()), None),
        Err(e) => (None, None, Some(e)),
    };
    let hashes: std::collections::BTreeSet<String> = manifest
        .as_ref()
        .map(|m| m.sources.values().map(|e| e.content_hash.clone()).collect())
        .unwrap_or_default();
    let confidence = confidence_status(config, &hashes);
    let store_info = store.info()?;
    // A changed index setting applies at the next write-open.
    let index = store_info.index.clone().map(|built| IndexStatus {
        rebuild_pending: built != IndexSettings::wanted(&config.storage, store_info.dimension),
        built,
    });
    Ok(Status {
        collection: config.collection.name.clone(),
        backend: config.storage.backend.as_str().to_string(),
        path: config.collection_location(),
        store: store_info,
        index,
        sources,
        pending_sources: pending,
        pipeline,
        model,
        model_error,
        model_languages,
        model_dir: config.embedding.model_dir.clone(),
        hybrid: config.search.hybrid,
        confidence,
    })
}

/// Which weights score answers, and how the fit in use was made.
fn confidence_status(
    config: &Config,
    hashes: &std::collections::BTreeSet<String>,
) -> ConfidenceStatus {
    use crate::confidence::calibration::{Configured, Source, configured};
    let sc = &config.confidence.self_calibration;
    let mut status = ConfidenceStatus {
        weights: "configured",
        self_calibration: sc.mode.as_str(),
        fit: None,
        note: None,
    };
    match configured(config) {
        Ok(Some((source, c))) => {
            // A fit on feedback describes people's questions, not the
            // documents: it does not go stale with them.
            let changed_share = if source == Source::Feedback {
                0.0
            } else {
                c.changed_share(hashes)
            };
            status.weights = source.as_str();
            status.fit = Some(FitStatus {
                file: source.file(config),
                created: c.created.clone(),
                questions: c.fitted_on.questions,
                questions_by_kind: c.self_calibration.clone(),
                ece: c.cross_validated.ece,
                auroc: c.cross_validated.auroc,
                changed_share,
                stale: source != Source::Feedback && changed_share > sc.refit_share,
            });
        }
        Ok(None) if sc.mode == crate::config::SelfCalibrationMode::Off => {
            status.note = Some("self-calibration is off: scored with confidence.weights".into());
        }
        Ok(None) => {
            status.note = Some(
                "not fitted to this knowledge base yet: `grace calibrate --self` (or an ingest, with enough sections) fits it"
                    .into(),
            );
        }
        Err(Configured::Labelled(e) | Configured::SelfFit(e)) => {
            status.note = Some(format!("{e}; scored with confidence.weights"));
        }
    }
    status
}

/// How answers are scored: which weights, and the fit in use.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ConfidenceStatus {
    /// `labelled` (`confidence.calibration`), `feedback` (fitted on
    /// people's ratings and verdicts, `confidence.feedback_calibration`),
    /// `self` (the collection's self-calibration) or `configured`
    /// (`confidence.weights`).
    pub weights: &'static str,
    /// `confidence.self_calibration.mode`.
    pub self_calibration: &'static str,
    /// The fit in use, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fit: Option<FitStatus>,
    /// Why no fit is in use, or what is wrong with it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// A calibration in use and how well it still describes the knowledge base.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct FitStatus {
    /// Its file; left out of the HTTP API's view.
    #[serde(skip_serializing_if = "is_empty_path")]
    #[schema(value_type = String)]
    pub file: PathBuf,
    /// When it was fitted.
    pub created: String,
    /// Questions it was fitted on.
    pub questions: usize,
    /// For a self-calibration: how those questions were made.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub questions_by_kind: Option<crate::confidence::calibration::SelfFit>,
    /// Out-of-fold expected calibration error.
    pub ece: Option<f64>,
    /// Out-of-fold AUROC of "right".
    pub auroc: Option<f64>,
    /// Share of documents added, changed or removed since the fit.
    pub changed_share: f64,
    /// More has changed than `confidence.self_calibration.refit_share`.
    pub stale: bool,
}

/// What `grace status` reports.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[schema(as = KnowledgeBaseStatus)]
pub struct Status {
    /// The collection's name (`collection.name`).
    pub collection: String,
    /// The storage backend (`edge` or `qdrant`).
    pub backend: String,
    /// Where the collection lives: its folder (`edge`), or
    /// `<url>/collections/<name>` on a Qdrant server (`qdrant`); left out
    /// of the HTTP API's view ([`Status::for_clients`]).
    #[serde(skip_serializing_if = "is_empty_path")]
    #[schema(value_type = String)]
    pub path: PathBuf,
    /// Size and index state of the collection.
    pub store: StoreInfo,
    /// The embedded store's index settings; `None` on a Qdrant server
    /// (its collection's own settings apply).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index: Option<IndexStatus>,
    /// Sources (documents) in the manifest, pending ones included.
    pub sources: usize,
    /// Sources an interrupted ingest left half-written (the next ingest repairs them).
    pub pending_sources: usize,
    /// Model and chunking the collection was built with.
    pub pipeline: Option<String>,
    /// The model configured now, if its files are in place.
    pub model: Option<String>,
    /// Why the configured model cannot be used, if it cannot.
    pub model_error: Option<String>,
    /// The languages the configured model reads (`multilingual`, `English`).
    pub model_languages: Option<String>,
    /// The configured model folder (`embedding.model_dir`); left out of the
    /// HTTP API's view.
    #[serde(skip_serializing_if = "is_empty_path")]
    #[schema(value_type = String)]
    pub model_dir: PathBuf,
    /// Whether searches fuse a lexical ranking with the dense one
    /// (`search.hybrid`).
    pub hybrid: bool,
    /// Which confidence weights score answers, and their fit.
    pub confidence: ConfidenceStatus,
}

/// The index settings an embedded store was built with.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct IndexStatus {
    /// What the store saved (`storage.quantization`, `hnsw_*`, ...).
    #[serde(flatten)]
    pub built: IndexSettings,
    /// The configuration asks for other settings: the next write-open
    /// (`grace ingest`, or the service starting) rebuilds the index with
    /// them.
    pub rebuild_pending: bool,
}

fn is_empty_path(p: &std::path::Path) -> bool {
    p.as_os_str().is_empty()
}

impl Status {
    /// The status without the server's paths (the collection's folder or
    /// URL, the model folder) and with a model error reduced to its fact:
    /// what a remote client may see.
    pub fn for_clients(mut self) -> Self {
        self.path = PathBuf::new();
        self.model_dir = PathBuf::new();
        if let Some(fit) = &mut self.confidence.fit {
            fit.file = PathBuf::new();
        }
        if self.model_error.is_some() {
            self.model_error =
                Some("the embedding model cannot be loaded (see the server's log)".into());
        }
        self
    }
}

#[cfg(test)]
mod tests {
    /// In a build without the Qdrant client (the `qdrant-server` feature
    /// off), `storage.backend: qdrant` is refused naming both, before any
    /// connection is tried. (With the feature, the server backend's own
    /// tests run against a real Qdrant: tests/store_suite.rs.)
    #[cfg(not(feature = "qdrant-server"))]
    #[test]
    fn a_qdrant_backend_the_build_lacks_is_refused_naming_the_key_and_the_feature() {
        let mut config = crate::Config::default();
        config.storage.backend = crate::config::Backend::Qdrant;
        let Err(e) = super::open_store(&config, super::OpenMode::Create, 384) else {
            panic!("a store opened without the Qdrant client");
        };
        assert!(
            matches!(
                e,
                crate::error::Error::FeatureOff {
                    key: "storage.backend: qdrant",
                    feature: "qdrant-server"
                }
            ),
            "{e}"
        );
        assert!(
            e.to_string().contains("features = [\"qdrant-server\"]"),
            "{e}"
        );
    }
}
