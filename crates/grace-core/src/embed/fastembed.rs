//! Local sentence embeddings over ONNX Runtime, from model files that
//! `scripts/setup` installs (nothing is downloaded at run time). The model
//! folder's layout is fastembed's, and so are the tokenizer and the
//! pooling (`tokenizer.rs`, `session.rs`); the sessions are GRACE's own, so
//! that they can share one copy of the weights.
//!
//! The ONNX Runtime library is loaded dynamically (`ort-load-dynamic`). `ort`
//! panics when it has to find the library itself and cannot, so the library
//! is checked and loaded explicitly (`ort::init_from`, which reports a
//! missing file or a too-old version as an error) before anything touches
//! `ort`. Sessions are created on first use: commands that embed nothing
//! (an unchanged re-ingest, `grace status`) never load the model.
//!
//! With `embedding.threads: 0` (the default) a call with one text (a
//! question) runs on a session with an intra-op thread on every core when
//! no other call is embedding (else on a one-thread session, so that
//! concurrent requests keep the cores), and a call with several texts is
//! shared between single-threaded sessions, one per core (at most
//! [`MAX_SESSIONS`]), which run at once, each taking the next text as it
//! finishes one. Measured on 2 cores: a question embeds in 2.2–2.5 ms on
//! both cores against 3.9 ms on one, while a batch runs about 15% faster
//! on one-thread sessions side by side than on one session using both
//! cores (`docs/src/performance.md`). The vectors are the same bit for bit
//! whichever session computes them (ONNX Runtime splits its work between
//! threads without changing any sum's order; `tests/embedder.rs` checks
//! it), so a text always gets the same vector. Every session is given the
//! prepared model's weights, read once, and shares their packed copy
//! (`prepared.rs`, `weights.rs`), so a session beyond the first costs
//! tens of megabytes, not another copy of the model.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use ort::environment::Environment;
use ort::session::builder::PrepackedWeights;
use tokenizers::Tokenizer;

use super::files::{MODEL_FILE, TOKENIZER_FILES, read, tokenizer_files};
use super::model_card::ModelCard;
use super::session::ModelSession;
use super::weights::{Part, Shared};
use super::{EmbedError, Embedder, Result, SimilarityScale};
use crate::config::EmbeddingConfig;

/// The most single-threaded batch sessions `embedding.threads: 0` opens.
pub const MAX_SESSIONS: usize = 4;

/// A sentence-embedding model (all-MiniLM-L6-v2 by default) run locally.
pub struct FastEmbedder {
    config: EmbeddingConfig,
    card: ModelCard,
    dimension: usize,
    model_id: String,
    /// What every session is made from, on first use.
    model: Mutex<Option<Arc<Model>>>,
    /// The session of a call with one text.
    single: Mutex<Option<ModelSession>>,
    /// Its intra-op threads.
    single_threads: usize,
    /// Whether they leave a core free (known once, not at each search; on
    /// one core a second thread costs little, as with other embedders).
    leaves_a_core_free: bool,
    /// The single-threaded sessions a call's texts are split between
    /// (none with `embedding.threads` set: the one session does all).
    batch: Vec<Mutex<Option<ModelSession>>>,
    /// The cache folder the prepared model goes in (`None`: the model is
    /// loaded as it is).
    cache: Option<PathBuf>,
    /// Calls embedding now.
    in_flight: AtomicUsize,
}

/// Counts a call in [`FastEmbedder::in_flight`] while it lives.
struct InFlight<'a>(&'a AtomicUsize);

impl<'a> InFlight<'a> {
    fn enter(count: &'a AtomicUsize) -> Self {
        count.fetch_add(1, Ordering::Relaxed);
        Self(count)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// What the sessions of one embedder share.
struct Model {
    environment: Environment,
    tokenizer: Tokenizer,
    /// The prepared model, or the model folder's own when it could not be
    /// prepared.
    file: PathBuf,
    /// The prepared model's multiplied weights, read once, given to every
    /// session (so that their packed copies are shared too).
    shared: Shared,
    /// Its other weights (the token embedding table), read when the first
    /// batch session opens and given to the batch sessions: a session that
    /// maps the table from the file reads most of it (50 MB of MiniLM's),
    /// and each session's pages count again, so past one session one copy
    /// in memory costs less. Empty without a prepared model.
    rest: Mutex<Option<Shared>>,
    /// The weights ONNX Runtime packed for the first session, used by all.
    packed: PrepackedWeights,
}

impl std::fmt::Debug for FastEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FastEmbedder")
            .field("model_dir", &self.config.model_dir)
            .field("dimension", &self.dimension)
            .finish()
    }
}

impl FastEmbedder {
    /// Checks that the model files and the runtime library exist and reads
    /// the vector size from the model's `config.json`. Cheap: the model is
    /// loaded on first use.
    pub fn new(config: &EmbeddingConfig) -> Result<Self> {
        let dir = &config.model_dir;
        for name in std::iter::once(MODEL_FILE).chain(TOKENIZER_FILES) {
            let path = dir.join(name);
            if !path.is_file() {
                return Err(EmbedError::ModelMissing { path });
            }
        }
        if !config.runtime_path.is_file() {
            return Err(EmbedError::RuntimeMissing {
                path: config.runtime_path.clone(),
            });
        }
        let config_path = dir.join("config.json");
        let model_config: serde_json::Value = serde_json::from_slice(&read(&config_path)?)
            .map_err(|e| EmbedError::ModelFile {
                path: config_path.clone(),
                message: e.to_string(),
            })?;
        let dimension = model_config
            .get("hidden_size")
            .and_then(serde_json::Value::as_u64)
            .ok_or_else(|| EmbedError::ModelFile {
                path: config_path.clone(),
                message: "no integer `hidden_size`".into(),
            })? as usize;
        let onnx_len = std::fs::metadata(dir.join(MODEL_FILE))
            .map(|m| m.len())
            .unwrap_or_default();
        let card = ModelCard::of(dir)?;
        let name = card.name.clone().unwrap_or_else(|| {
            dir.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "model".into())
        });
        let mut config = config.clone();
        if let Some(max) = card.max_length {
            config.max_length = config.max_length.min(max);
        }
        // A model used with prefixes is another model as far as stored
        // vectors go; MiniLM's id stays what it always was.
        let prefixes = if card.query_prefix.is_empty() && card.passage_prefix.is_empty() {
            String::new()
        } else {
            format!(":{:?}/{:?}", card.query_prefix, card.passage_prefix)
        };
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let (single_threads, batch) = match config.threads {
            // Measured on 2 cores; more spinning threads than sessions
            // are not asked for until measured.
            0 => (cores.min(MAX_SESSIONS), cores.min(MAX_SESSIONS)),
            n => (n, 0),
        };
        Ok(Self {
            dimension,
            model_id: format!(
                "{name}:{dimension}d:{onnx_len}b:mean:max{}{prefixes}",
                config.max_length
            ),
            config,
            card,
            model: Mutex::new(None),
            single: Mutex::new(None),
            single_threads,
            leaves_a_core_free: single_threads < cores.max(2),
            batch: unloaded(batch),
            cache: crate::config::cache_home(&text_vars()),
            in_flight: AtomicUsize::new(0),
        })
    }

    /// The same embedder with its prepared model in `cache` (`None`: the
    /// model loaded as it is); before the first call only (tests compare
    /// the ways).
    pub fn with_cache(mut self, cache: Option<PathBuf>) -> Self {
        self.cache = cache;
        self
    }

    /// As [`FastEmbedder::new`], with `sessions` single-threaded sessions
    /// for batches and a single-threaded one for a lone text, whatever the
    /// cores (benchmarks and tests compare the ways).
    pub fn with_sessions(config: &EmbeddingConfig, sessions: usize) -> Result<Self> {
        let mut embedder = Self::new(config)?;
        embedder.batch = unloaded(sessions.clamp(1, MAX_SESSIONS));
        embedder.single_threads = 1;
        embedder.leaves_a_core_free = true;
        Ok(embedder)
    }

    /// Model sessions a call's texts are split between.
    pub fn sessions(&self) -> usize {
        self.batch.len().max(1)
    }

    /// Intra-op threads of the session a lone text runs on.
    pub fn single_text_threads(&self) -> usize {
        self.single_threads
    }

    /// What the sessions share: made on the first call.
    fn model(&self) -> Result<Arc<Model>> {
        let mut slot = self
            .model
            .lock()
            .map_err(|_| EmbedError::Model("a previous model load panicked".into()))?;
        if let Some(model) = slot.as_ref() {
            return Ok(Arc::clone(model));
        }
        let environment = init_runtime(&self.config.runtime_path)?;
        let dir = &self.config.model_dir;
        let files = tokenizer_files(dir, read)?;
        let tokenizer = super::tokenizer::load(&files, self.config.max_length).map_err(|e| {
            EmbedError::ModelFile {
                path: dir.clone(),
                message: e,
            }
        })?;
        let original = dir.join(MODEL_FILE);
        let prepared = match &self.cache {
            Some(cache) => {
                super::prepared::prepared(&environment, &original, &self.config.runtime_path, cache)
            }
            None => Err("no cache folder (neither HOME nor XDG_CACHE_HOME is set)".into()),
        }
        .and_then(|graph| Ok((super::weights::shared(&graph, Part::Packed)?, graph)));
        let (shared, file) = prepared.unwrap_or_else(|why| {
            tracing::warn!(
                model = %original.display(),
                "the embedding model is loaded as it is, with more memory per session: {why}"
            );
            (Vec::new(), original)
        });
        let model = Arc::new(Model {
            environment,
            tokenizer,
            file,
            shared,
            rest: Mutex::new(None),
            packed: PrepackedWeights::new(),
        });
        *slot = Some(Arc::clone(&model));
        Ok(model)
    }

    /// A new session of `slot`'s kind.
    fn open(&self, slot: Slot, threads: usize) -> Result<ModelSession> {
        let model = self.model()?;
        let started = std::time::Instant::now();
        let mut shared = model.shared.clone();
        if matches!(slot, Slot::Batch(_)) && !model.shared.is_empty() {
            shared.extend(model.rest()?);
        }
        // The lone-text session's second thread waits spinning between the
        // steps of a run rather than asleep: a question embedded in 2.2 ms
        // instead of 2.8 (2 cores). Only there: with every session spinning
        // (`embedding.threads: N` for a batch), spinning threads fought for
        // the cores, about 1.5x slower.
        let spin = slot == Slot::Single && self.config.threads == 0 && threads > 1;
        let session = ModelSession::open(
            &model.environment,
            &model.file,
            threads,
            spin,
            &shared,
            &model.packed,
        )?;
        tracing::debug!(model = %model.file.display(), threads, elapsed = ?started.elapsed(), "embedding session loaded");
        Ok(session)
    }
}

impl Model {
    /// The weights other than the multiplied ones, read on first use.
    fn rest(&self) -> Result<Shared> {
        let mut rest = self
            .rest
            .lock()
            .map_err(|_| EmbedError::Model("a previous model load panicked".into()))?;
        if rest.is_none() {
            let read = super::weights::shared(&self.file, Part::Rest)
                .map_err(|e| EmbedError::Model(format!("cannot read the prepared model: {e}")))?;
            *rest = Some(read);
        }
        Ok(rest.clone().unwrap_or_default())
    }
}

/// The process's environment variables whose names and values are text
/// (`std::env::vars` panics on one that is not).
fn text_vars() -> Vec<(String, String)> {
    std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect()
}

/// `n` session slots, each loaded on first use.
fn unloaded(n: usize) -> Vec<Mutex<Option<ModelSession>>> {
    (0..n).map(|_| Mutex::new(None)).collect()
}

/// Loads and version-checks the ONNX Runtime library at `path` (once per
/// process) and gives its environment, which every session (the
/// embedder's and the reader's) must be made in: ONNX Runtime allows one
/// per process. `ort` panics when it has to find the library itself, so
/// every model loads it through here first.
pub(crate) fn init_runtime(path: &Path) -> Result<Environment> {
    static ENVIRONMENT: OnceLock<Environment> = OnceLock::new();
    if let Some(environment) = ENVIRONMENT.get() {
        return Ok(environment.clone());
    }
    static LOADING: Mutex<()> = Mutex::new(());
    let _turn = LOADING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(environment) = ENVIRONMENT.get() {
        return Ok(environment.clone());
    }
    let runtime = std::fs::canonicalize(path).map_err(|_| EmbedError::RuntimeMissing {
        path: path.to_path_buf(),
    })?;
    let failed = |message: String| EmbedError::Runtime {
        path: runtime.clone(),
        message,
    };
    let environment = ort::init_from(&runtime)
        .map_err(|e| failed(e.to_string()))?
        .with_name("grace")
        .build()
        .map_err(|e| failed(e.to_string()))?;
    Ok(ENVIRONMENT.get_or_init(|| environment).clone())
}

impl Embedder for FastEmbedder {
    fn dimension(&self) -> usize {
        self.dimension
    }

    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        if self.card.passage_prefix.is_empty() {
            self.run(texts)
        } else {
            let prefixed: Vec<String> = texts
                .iter()
                .map(|t| format!("{}{t}", self.card.passage_prefix))
                .collect();
            self.run(&prefixed)
        }
    }

    fn embed_query(&self, text: &str) -> Result<Vec<f32>> {
        self.run(&[format!("{}{text}", self.card.query_prefix)])?
            .pop()
            .ok_or_else(|| EmbedError::Model("the model returned no vector".into()))
    }

    fn languages(&self) -> &str {
        self.card.languages.as_deref().unwrap_or("English")
    }

    fn similarity_scale(&self) -> SimilarityScale {
        self.card.similarity.unwrap_or(SimilarityScale::IDENTITY)
    }

    fn query_leaves_a_core_free(&self) -> bool {
        self.leaves_a_core_free
    }
}

/// The vectors one session made for a call, each run's with the index of
/// its first text.
type Taken = Vec<(usize, Vec<Vec<f32>>)>;

/// Which session a call runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// The lone-text session (every core).
    Single,
    /// Batch session `i` (one thread).
    Batch(usize),
}

impl FastEmbedder {
    /// Embeds `texts` as given (prefixes already applied): one text on the
    /// lone-text session (or, while another call holds it, on a free batch
    /// session); several split into one part per batch session (at most one
    /// part per text), the parts at once.
    fn run(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let _counted = InFlight::enter(&self.in_flight);
        if texts.len() == 1 || self.batch.is_empty() {
            return self.run_on(self.single_or_free(), texts);
        }
        let parts = self.batch.len().min(texts.len());
        if parts == 1 {
            return self.run_on(Slot::Batch(0), texts);
        }
        // Each session takes the next texts as it finishes the last, so the
        // sessions finish together however the texts' lengths fall (split
        // into fixed halves, one waited for the other: ingest ran at 0.92
        // of the raw embedder's speed).
        let step = self.config.batch_size.max(1);
        let next = AtomicUsize::new(0);
        let take = |i: usize| {
            self.with_session(Slot::Batch(i), |session, tokenizer| {
                let mut done = Vec::new();
                loop {
                    let start = next.fetch_add(step, Ordering::Relaxed);
                    let Some(part) = texts.get(start..(start + step).min(texts.len())) else {
                        return Ok(done);
                    };
                    if part.is_empty() {
                        return Ok(done);
                    }
                    done.push((start, session.embed(tokenizer, part, step)?));
                }
            })
        };
        let results: Vec<Result<Taken>> = std::thread::scope(|scope| {
            let others: Vec<_> = (1..parts)
                .map(|i| {
                    let take = &take;
                    scope.spawn(move || take(i))
                })
                .collect();
            let mut results = vec![take(0)];
            for handle in others {
                results.push(handle.join().unwrap_or_else(|_| {
                    Err(EmbedError::Model("an embedding thread panicked".into()))
                }));
            }
            results
        });
        let mut placed: Vec<Option<Vec<f32>>> = vec![None; texts.len()];
        for part in results {
            for (start, vectors) in part? {
                for (offset, vector) in vectors.into_iter().enumerate() {
                    if let Some(slot) = placed.get_mut(start + offset) {
                        *slot = Some(vector);
                    }
                }
            }
        }
        placed
            .into_iter()
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| EmbedError::Model("a text was left without a vector".into()))
    }

    /// The lone-text session when no other call is embedding; else a
    /// one-thread batch session, the first no other call is using (or the
    /// first, waiting for it), as every text ran before.
    fn single_or_free(&self) -> Slot {
        let busy = |slot: &Mutex<Option<ModelSession>>| {
            matches!(slot.try_lock(), Err(std::sync::TryLockError::WouldBlock))
        };
        // While another call embeds, the cores are not free for the
        // lone-text session's spinning threads: with 8 asks at once,
        // letting lone texts take it whenever it was free answered 20%
        // fewer a second (191 against 236, `scripts/load`); kept to calls
        // alone, about as many as before (docs/src/performance.md). ONNX
        // Runtime's `session.force_spinning_stop` would stop the spinning
        // after each run, but made a whole ask's p50 10-12 ms instead of 8.
        let alone = self.in_flight.load(Ordering::Relaxed) <= 1;
        if alone && !busy(&self.single) || self.batch.is_empty() {
            return Slot::Single;
        }
        Slot::Batch(self.batch.iter().position(|slot| !busy(slot)).unwrap_or(0))
    }

    /// Embeds `texts` on session `slot`, loading it on first use.
    fn run_on(&self, slot: Slot, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        let vectors = self.with_session(slot, |session, tokenizer| {
            session.embed(tokenizer, texts, self.config.batch_size)
        })?;
        if vectors.len() != texts.len() {
            return Err(EmbedError::Model(format!(
                "{} vectors for {} texts",
                vectors.len(),
                texts.len()
            )));
        }
        Ok(vectors)
    }

    /// Runs `work` on session `slot` (loaded on first use) while holding it.
    fn with_session<T>(
        &self,
        slot: Slot,
        work: impl FnOnce(&mut ModelSession, &Tokenizer) -> Result<T>,
    ) -> Result<T> {
        let (mutex, threads) = match slot {
            Slot::Single => (&self.single, self.single_threads),
            Slot::Batch(i) => (
                self.batch
                    .get(i)
                    .ok_or_else(|| EmbedError::Model(format!("no embedding session {i}")))?,
                1,
            ),
        };
        let mut guard = mutex
            .lock()
            .map_err(|_| EmbedError::Model("a previous embedding call panicked".into()))?;
        if guard.is_none() {
            *guard = Some(self.open(slot, threads)?);
        }
        let Some(session) = guard.as_mut() else {
            return Err(EmbedError::Model("the model is not loaded".into()));
        };
        let model = self.model()?;
        work(session, &model.tokenizer)
    }
}
