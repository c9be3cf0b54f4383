//! Local embeddings with fastembed over ONNX Runtime, loaded from files that
//! `scripts/setup` installs (nothing is downloaded at run time).
//!
//! The ONNX Runtime library is loaded dynamically (`ort-load-dynamic`). `ort`
//! panics when it has to find the library itself and cannot, so the library
//! is checked and loaded explicitly (`ort::init_from`, which reports a
//! missing file or a too-old version as an error) before fastembed touches
//! `ort`. The model session is created on first use: commands that embed
//! nothing (an unchanged re-ingest, `grace status`) never load it.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use fastembed::{
    InitOptionsUserDefined, Pooling, TextEmbedding, TokenizerFiles, UserDefinedEmbeddingModel,
};

use super::{EmbedError, Embedder, Result};
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

/// A sentence-embedding model (all-MiniLM-L6-v2 by default) run locally.
pub struct FastEmbedder {
    config: EmbeddingConfig,
    dimension: usize,
    model_id: String,
    session: Mutex<Option<TextEmbedding>>,
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
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "model".into());
        Ok(Self {
            config: config.clone(),
            dimension,
            model_id: format!(
                "{name}:{dimension}d:{onnx_len}b:mean:max{}",
                config.max_length
            ),
            session: Mutex::new(None),
        })
    }

    fn load(&self) -> Result<TextEmbedding> {
        init_runtime(&self.config.runtime_path)?;
        let dir = &self.config.model_dir;
        let files = tokenizer_files(dir, read)?;
        let model = UserDefinedEmbeddingModel::new(read(&dir.join(MODEL_FILE))?, files)
            // MiniLM is trained with mean pooling; fastembed's default (CLS) is wrong for it.
            .with_pooling(Pooling::Mean);
        let mut options = InitOptionsUserDefined::new()
            .with_max_length(self.config.max_length)
            // Spinning worker threads fight for the cores on a busy machine;
            // measured about 1.5x faster on 2 cores with spinning off.
            .with_session_config("session.intra_op.allow_spinning", "0");
        if self.config.threads > 0 {
            options = options.with_intra_threads(self.config.threads);
        }
        let started = std::time::Instant::now();
        let embedding = TextEmbedding::try_new_from_user_defined(model, options)
            .map_err(|e| EmbedError::Model(format!("cannot load {}: {e}", dir.display())))?;
        tracing::debug!(model = %dir.display(), elapsed = ?started.elapsed(), "embedding model loaded");
        Ok(embedding)
    }
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
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let mut guard = self
            .session
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
