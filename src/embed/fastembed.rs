//! Local embeddings with fastembed over ONNX Runtime, loaded from files that
//! `scripts/setup` installs (nothing is downloaded at run time).
//!
//! The ONNX Runtime library is loaded dynamically (`ort-load-dynamic`). `ort`
//! panics when it has to find the library itself and cannot, so the library
//! is checked and loaded explicitly (`ort::init_from`, which reports a
//! missing file or a too-old version as an error) before fastembed touches
//! `ort`. The model session is created on first use: commands that embed
//! nothing (an unchanged re-ingest, `grace status`) never load it.
//!
//! With `embedding.threads: 0` (the default) there is one single-threaded
//! session per core (at most [`MAX_SESSIONS`]), and a call with several
//! texts splits them between the sessions, which run at once. Measured on
//! 2 cores (822 sentences of debian-faq, MiniLM): 166-184 sentences/s,
//! against 123-140 for one session using both cores; and a text's vector
//! no longer depends on the machine's load (one thread per session does
//! the same arithmetic every time). A single text (a question) uses one
//! session; the others load only when a call first needs them.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use fastembed::{
    InitOptionsUserDefined, Pooling, TextEmbedding, TokenizerFiles, UserDefinedEmbeddingModel,
};

use super::{EmbedError, Embedder, Result, SimilarityScale};
use crate::config::EmbeddingConfig;

/// The ONNX file of a model folder (the embedder's and the reader's).
pub(crate) const MODEL_FILE: &str = "model.onnx";
/// The tokenizer files beside it, in [`TokenizerFiles`] field order.
pub(crate) const TOKENIZER_FILES: [&str; 4] = [
    "tokenizer.json",
    "config.json",
    "special_tokens_map.json",
    "tokenizer_config.json",
];

/// The optional file of a model folder that says how to use the model
/// (`scripts/e5_convert.py` writes one for multilingual-e5-small); without
/// it, a folder is used as MiniLM is (mean pooling, no prefixes).
pub const MODEL_CARD_FILE: &str = "grace-model.yml";

/// The most sessions `embedding.threads: 0` opens (each holds the model:
/// about 25 MB for MiniLM, 470 MB for multilingual-e5-small).
pub const MAX_SESSIONS: usize = 4;

/// The longest model card read.
const MAX_MODEL_CARD_BYTES: u64 = 64 * 1024;

/// How a model folder's model is used (`grace-model.yml`).
#[derive(Debug, Clone, Default, serde::Deserialize)]
pub struct ModelCard {
    /// The model's name (`multilingual-e5-small`).
    #[serde(default)]
    pub name: Option<String>,
    /// Put before a question (`"query: "`).
    #[serde(default)]
    pub query_prefix: String,
    /// Put before a passage (`"passage: "`).
    #[serde(default)]
    pub passage_prefix: String,
    /// The model's longest input in tokens (caps `embedding.max_length`).
    #[serde(default)]
    pub max_length: Option<usize>,
    /// The languages it reads (`multilingual`, or a list in words).
    #[serde(default)]
    pub languages: Option<String>,
    /// The pooling it was trained with; only `mean` is supported.
    #[serde(default)]
    pub pooling: Option<String>,
    /// How its cosines map onto GRACE's similarity scale; absent: as they
    /// are (MiniLM's).
    #[serde(default)]
    pub similarity: Option<SimilarityScale>,
}

impl ModelCard {
    /// The card of the model folder `dir`, or the default (MiniLM's way)
    /// when there is none.
    pub fn of(dir: &Path) -> Result<Self> {
        let path = dir.join(MODEL_CARD_FILE);
        let Ok(meta) = std::fs::metadata(&path) else {
            return Ok(Self::default());
        };
        let bad = |message: String| EmbedError::ModelFile {
            path: path.clone(),
            message,
        };
        if meta.len() > MAX_MODEL_CARD_BYTES {
            return Err(bad(format!(
                "{} bytes, more than the {MAX_MODEL_CARD_BYTES} a model card may have",
                meta.len()
            )));
        }
        let card: ModelCard = serde_yaml::from_slice(&read(&path)?)
            .map_err(|e| bad(format!("not a model card: {e}")))?;
        if let Some(p) = card.pooling.as_deref().filter(|p| *p != "mean") {
            return Err(bad(format!("pooling `{p}` is not supported (only `mean`)")));
        }
        if card.query_prefix.chars().count() > 64 || card.passage_prefix.chars().count() > 64 {
            return Err(bad("a prefix longer than 64 characters".into()));
        }
        if let Some(scale) = &card.similarity {
            scale.check().map_err(bad)?;
        }
        Ok(card)
    }
}

/// A sentence-embedding model (all-MiniLM-L6-v2 by default) run locally.
pub struct FastEmbedder {
    config: EmbeddingConfig,
    card: ModelCard,
    dimension: usize,
    model_id: String,
    /// Loaded on first use, one per parallel part of a call.
    sessions: Vec<Mutex<Option<TextEmbedding>>>,
    /// Intra-op threads of each session.
    session_threads: usize,
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
        let (sessions, session_threads) = match config.threads {
            0 => (
                std::thread::available_parallelism()
                    .map_or(1, |n| n.get())
                    .min(MAX_SESSIONS),
                1,
            ),
            n => (1, n),
        };
        Ok(Self {
            dimension,
            model_id: format!(
                "{name}:{dimension}d:{onnx_len}b:mean:max{}{prefixes}",
                config.max_length
            ),
            config,
            card,
            sessions: unloaded(sessions),
            session_threads,
        })
    }

    /// As [`FastEmbedder::new`], with `sessions` single-threaded sessions
    /// whatever the cores (benchmarks and tests compare the ways).
    pub fn with_sessions(config: &EmbeddingConfig, sessions: usize) -> Result<Self> {
        let mut embedder = Self::new(config)?;
        embedder.sessions = unloaded(sessions.clamp(1, MAX_SESSIONS));
        embedder.session_threads = 1;
        Ok(embedder)
    }

    /// Model sessions a call's texts are split between.
    pub fn sessions(&self) -> usize {
        self.sessions.len()
    }

    fn load(&self) -> Result<TextEmbedding> {
        init_runtime(&self.config.runtime_path)?;
        let dir = &self.config.model_dir;
        let files = tokenizer_files(dir, read)?;
        let model = UserDefinedEmbeddingModel::new(read(&dir.join(MODEL_FILE))?, files)
            // MiniLM and e5 are trained with mean pooling; fastembed's
            // default (CLS) is wrong for them.
            .with_pooling(Pooling::Mean);
        let options = InitOptionsUserDefined::new()
            .with_max_length(self.config.max_length)
            // Spinning worker threads fight for the cores on a busy machine;
            // measured about 1.5x faster on 2 cores with spinning off.
            .with_session_config("session.intra_op.allow_spinning", "0")
            .with_intra_threads(self.session_threads);
        let started = std::time::Instant::now();
        let embedding = TextEmbedding::try_new_from_user_defined(model, options)
            .map_err(|e| EmbedError::Model(format!("cannot load {}: {e}", dir.display())))?;
        tracing::debug!(model = %dir.display(), elapsed = ?started.elapsed(), "embedding model loaded");
        Ok(embedding)
    }
}

/// `n` session slots, each loaded on first use.
fn unloaded(n: usize) -> Vec<Mutex<Option<TextEmbedding>>> {
    (0..n).map(|_| Mutex::new(None)).collect()
}

/// Loads and version-checks the ONNX Runtime library at `path` (once per
/// process; later calls are no-ops). `ort` panics when it has to find the
/// library itself, so every model loads it through here first. The
/// environment builder `ort` returns is not needed (sessions use its
/// default environment).
pub(crate) fn init_runtime(path: &Path) -> Result<()> {
    let runtime = std::fs::canonicalize(path).map_err(|_| EmbedError::RuntimeMissing {
        path: path.to_path_buf(),
    })?;
    let _environment = ort::init_from(&runtime).map_err(|e| EmbedError::Runtime {
        path: runtime.clone(),
        message: e.to_string(),
    })?;
    Ok(())
}

/// Reads the tokenizer files of the model folder `dir` with `read`.
pub(crate) fn tokenizer_files<E>(
    dir: &Path,
    read: impl Fn(&Path) -> std::result::Result<Vec<u8>, E>,
) -> std::result::Result<TokenizerFiles, E> {
    Ok(TokenizerFiles {
        tokenizer_file: read(&dir.join(TOKENIZER_FILES[0]))?,
        config_file: read(&dir.join(TOKENIZER_FILES[1]))?,
        special_tokens_map_file: read(&dir.join(TOKENIZER_FILES[2]))?,
        tokenizer_config_file: read(&dir.join(TOKENIZER_FILES[3]))?,
    })
}

fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| EmbedError::ModelFile {
        path: PathBuf::from(path),
        message: e.to_string(),
    })
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
}

impl FastEmbedder {
    /// Embeds `texts` as given (prefixes already applied): split into one
    /// part per session (at most one part per text), the parts at once.
    fn run(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let parts = self.sessions.len().min(texts.len());
        if parts == 1 {
            return self.run_on(self.free_session(), texts);
        }
        let size = texts.len().div_ceil(parts);
        let mut chunks = texts.chunks(size).enumerate();
        let Some((_, first)) = chunks.next() else {
            return Ok(Vec::new());
        };
        let results: Vec<Result<Vec<Vec<f32>>>> = std::thread::scope(|scope| {
            let others: Vec<_> = chunks
                .map(|(i, part)| scope.spawn(move || self.run_on(i, part)))
                .collect();
            let mut results = vec![self.run_on(0, first)];
            for handle in others {
                results.push(handle.join().unwrap_or_else(|_| {
                    Err(EmbedError::Model("an embedding thread panicked".into()))
                }));
            }
            results
        });
        // Each part was checked to have one vector per text.
        let mut vectors = Vec::with_capacity(texts.len());
        for part in results {
            vectors.extend(part?);
        }
        Ok(vectors)
    }

    /// The first session no other call is using (a question asked while
    /// another is being answered need not wait), or the first one.
    fn free_session(&self) -> usize {
        self.sessions
            .iter()
            .position(|slot| !matches!(slot.try_lock(), Err(std::sync::TryLockError::WouldBlock)))
            .unwrap_or(0)
    }

    /// Embeds `texts` on session `index`, loading it on first use.
    fn run_on(&self, index: usize, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        let slot = self
            .sessions
            .get(index)
            .ok_or_else(|| EmbedError::Model(format!("no embedding session {index}")))?;
        let mut guard = slot
            .lock()
            .map_err(|_| EmbedError::Model("a previous embedding call panicked".into()))?;
        if guard.is_none() {
            *guard = Some(self.load()?);
        }
        let Some(session) = guard.as_mut() else {
            return Err(EmbedError::Model("the model is not loaded".into()));
        };
        let vectors = session
            .embed(texts, Some(self.config.batch_size))
            .map_err(|e| EmbedError::Model(e.to_string()))?;
        if vectors.len() != texts.len() {
            return Err(EmbedError::Model(format!(
                "{} vectors for {} texts",
                vectors.len(),
                texts.len()
            )));
        }
        Ok(vectors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn card(text: &[u8]) -> Result<ModelCard> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(MODEL_CARD_FILE), text).unwrap();
        ModelCard::of(dir.path())
    }

    #[test]
    fn a_model_card_is_read_and_a_bad_one_is_an_error_naming_the_file() {
        let none = ModelCard::of(Path::new("/nonexistent")).unwrap();
        assert!(none.query_prefix.is_empty() && none.name.is_none());
        let ok = card(b"name: e5\nquery_prefix: \"query: \"\npassage_prefix: \"passage: \"\nmax_length: 512\nlanguages: multilingual\npooling: mean\nextra: ignored\n").unwrap();
        assert_eq!(ok.query_prefix, "query: ");
        assert_eq!(ok.max_length, Some(512));
        assert_eq!(ok.similarity, None, "no map: cosines as they are");
        let scaled = card(b"similarity:\n  query: {scale: 7.36, shift: -5.93}\n  passage: {scale: 5.79, shift: -4.61}\n").unwrap();
        let map = scaled.similarity.expect("the map is read");
        assert!((map.query.apply(0.9) - (7.36 * 0.9 - 5.93)).abs() < 1e-5);
        assert!((map.passage.apply(0.9) - (5.79 * 0.9 - 4.61)).abs() < 1e-5);
        for (bad, says) in [
            (
                b"similarity:\n  query: {scale: 0, shift: 0}\n  passage: {scale: 1, shift: 0}\n"
                    .to_vec(),
                "similarity.query.scale must be in (0, 100]",
            ),
            (
                b"similarity:\n  query: {scale: 1, shift: 0}\n  passage: {scale: -2, shift: 0}\n"
                    .to_vec(),
                "similarity.passage.scale",
            ),
            (
                b"similarity:\n  query: {scale: 1, shift: .nan}\n  passage: {scale: 1, shift: 0}\n"
                    .to_vec(),
                "similarity.query.shift must be in -100..=100",
            ),
            (
                b"similarity:\n  query: {scale: 1, shift: 0}\n".to_vec(),
                "not a model card",
            ),
            (
                b"similarity:\n  query: {scale: 1, shift: 0, tilt: 2}\n  passage: {scale: 1, shift: 0}\n"
                    .to_vec(),
                "not a model card",
            ),
            // Numbers beyond f32 and nesting beyond the parser's depth.
            (
                b"similarity:\n  query: {scale: 1e300, shift: 0}\n  passage: {scale: 1, shift: 0}\n"
                    .to_vec(),
                "similarity.query.scale",
            ),
            (
                b"similarity:\n  query: {scale: 1, shift: -1e40}\n  passage: {scale: 1, shift: 0}\n"
                    .to_vec(),
                "similarity.query.shift",
            ),
            (
                [b"similarity: ".to_vec(), vec![b'['; 60_000]].concat(),
                "not a model card",
            ),
            (b"pooling: cls\n".to_vec(), "pooling `cls`"),
            (b"query_prefix: [1, 2\n".to_vec(), "not a model card"),
            (
                format!("query_prefix: \"{}\"\n", "x".repeat(65)).into_bytes(),
                "longer than 64",
            ),
            (vec![b'#'; 70_000], "bytes, more than"),
            (vec![0xff, 0xfe, 0x00], "not a model card"),
        ] {
            let e = card(&bad).unwrap_err().to_string();
            assert!(e.contains(MODEL_CARD_FILE) && e.contains(says), "{e}");
        }
    }
}
