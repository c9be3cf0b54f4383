//! The answerability reader: a cross-encoder that reads a question and a
//! passage together and gives the probability that the passage answers the
//! question.
//!
//! Similarity statistics cannot tell an answer from a neighbouring passage
//! about the same thing; a model that reads both texts at once can. GRACE
//! trains its own (a MiniLM-L6 cross-encoder, int8 ONNX, `scripts/train-reader`,
//! `models/reader/MODEL_CARD.md`) and runs it through fastembed's
//! user-defined reranker on the same ONNX Runtime as the embedder. It is used
//! at question time only: to rerank the fused passages (`search.rerank`), as
//! the `reader` confidence factors, and by the extractive answerer to draw
//! sentences from answering passages only.
//!
//! `confidence.reader` decides what a missing or broken model means: `auto`
//! warns once and GRACE scores without the reader; `on` makes it an error;
//! `off` never loads it. The session is created on first use and kept for
//! the life of the process.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use fastembed::{RerankInitOptionsUserDefined, TextRerank, UserDefinedRerankingModel};

use crate::config::{ReaderConfig, ReaderMode};
use crate::embed::{MODEL_FILE, TOKENIZER_FILES, init_runtime, tokenizer_files};

/// Result of reader operations.
pub type Result<T> = std::result::Result<T, ReaderError>;

/// What went wrong with the reader model.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ReaderError {
    /// A model file is missing.
    #[error(
        "reader model file {path} not found: check out models/reader/ from the repository (scripts/setup verifies it), point reader.model_dir at it, or set confidence.reader to `off`"
    )]
    ModelMissing {
        /// The file that was looked for.
        path: PathBuf,
    },
    /// The model or the runtime could not be loaded or run.
    #[error("reader model {dir}: {message}")]
    Model {
        /// The model folder (`reader.model_dir`).
        dir: PathBuf,
        /// What failed.
        message: String,
    },
}

/// Passages read per model call: one. The int8 model quantises its
/// activations per call with one scale over the whole batch (padding
/// included), so in a batch a passage's score would depend on the other
/// passages beside it; read alone, a pair always gets the same score. Five
/// single calls cost about what one batch of five does on 2 cores.
const BATCH: usize = 1;

enum State {
    NotLoaded,
    Loaded(Box<TextRerank>),
    /// Loading failed: in `auto` mode the reader stays off for the process.
    Failed(ReaderError),
}

/// The reader, loaded on first use.
pub struct Reader {
    mode: ReaderMode,
    config: ReaderConfig,
    runtime_path: PathBuf,
    state: Mutex<State>,
}

impl std::fmt::Debug for Reader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reader")
            .field("mode", &self.mode)
            .field("model_dir", &self.config.model_dir)
            .finish()
    }
}

impl Reader {
    /// A reader over `config.model_dir` on the ONNX Runtime library at
    /// `runtime_path`. Cheap: nothing is read until the first question.
    pub fn new(mode: ReaderMode, config: &ReaderConfig, runtime_path: &Path) -> Self {
        Self {
            mode,
            config: config.clone(),
            runtime_path: runtime_path.to_path_buf(),
            state: Mutex::new(State::NotLoaded),
        }
    }

    /// Whether the reader may be used at all (`confidence.reader` is not `off`).
    pub fn enabled(&self) -> bool {
        self.mode != ReaderMode::Off
    }

    /// The probability that each passage answers `question`, in the order
    /// given. `Ok(None)` when the reader is off, or unavailable in `auto`
    /// mode (the reason is logged once, at the first failure).
    pub fn probabilities(&self, question: &str, passages: &[&str]) -> Result<Option<Vec<f32>>> {
        if self.mode == ReaderMode::Off {
            return Ok(None);
        }
        let mut state = match self.state.lock() {
            Ok(guard) => guard,
            // A panic inside the model while another thread held the lock:
            // the session may be in any state, so do not use it again.
            Err(_) => {
                return self.unavailable(ReaderError::Model {
                    dir: self.config.model_dir.clone(),
                    message: "a previous reader call panicked".into(),
                });
            }
        };
        if matches!(*state, State::NotLoaded) {
            *state = match self.load() {
                Ok(model) => State::Loaded(Box::new(model)),
                Err(e) => {
                    if self.mode == ReaderMode::Auto {
                        tracing::warn!(
                            "the answerability reader is unavailable, so GRACE scores without it (confidence.reader: auto): {e}"
                        );
                    }
                    State::Failed(e)
                }
            };
        }
        let model = match &mut *state {
            State::Loaded(model) => model,
            State::Failed(e) => return self.unavailable(e.clone()),
            State::NotLoaded => return Ok(None),
        };
        if passages.is_empty() {
            return Ok(Some(Vec::new()));
        }
        let results = model
            .rerank(question, passages, false, Some(BATCH))
            .map_err(|e| ReaderError::Model {
                dir: self.config.model_dir.clone(),
                message: e.to_string(),
            })?;
        let mut probabilities = vec![0.0; passages.len()];
        for r in results {
            if let Some(p) = probabilities.get_mut(r.index) {
                *p = sigmoid(r.score);
            }
        }
        Ok(Some(probabilities))
    }

    /// `Ok(None)` in `auto` mode, the error in `on` mode.
    fn unavailable(&self, e: ReaderError) -> Result<Option<Vec<f32>>> {
        match self.mode {
            ReaderMode::On => Err(e),
            ReaderMode::Auto | ReaderMode::Off => Ok(None),
        }
    }

    fn load(&self) -> Result<TextRerank> {
        let dir = &self.config.model_dir;
        for name in std::iter::once(MODEL_FILE).chain(TOKENIZER_FILES) {
            let path = dir.join(name);
            if !path.is_file() {
                return Err(ReaderError::ModelMissing { path });
            }
        }
        let model_error = |message: String| ReaderError::Model {
            dir: dir.clone(),
            message,
        };
        // The embedder's runtime and environment (loaded once a process).
        let environment =
            init_runtime(&self.runtime_path).map_err(|e| model_error(e.to_string()))?;
        let read = |path: &Path| {
            std::fs::read(path)
                .map_err(|e| model_error(format!("cannot read {}: {e}", path.display())))
        };
        let files = tokenizer_files(dir, read)?;
        let model = UserDefinedRerankingModel::new(read(&dir.join(MODEL_FILE))?, files);
        let mut options = RerankInitOptionsUserDefined::new()
            .with_environment(environment)
            .with_max_length(self.config.max_length)
            // As for the embedder: spinning threads fight for 2 cores.
            .with_session_config("session.intra_op.allow_spinning", "0");
        if self.config.threads > 0 {
            options = options.with_intra_threads(self.config.threads);
        }
        let started = std::time::Instant::now();
        let reranker = TextRerank::try_new_from_user_defined(model, options)
            .map_err(|e| model_error(format!("cannot load the model: {e}")))?;
        tracing::debug!(model = %dir.display(), elapsed = ?started.elapsed(), "reader loaded");
        Ok(reranker)
    }
}

fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

/// Reorders `passages` by their `reader_score`, highest first, keeping
/// pinned passages (exact identifier matches) above the rest; ties keep the
/// given order, and a passage the reader did not read counts 0.
pub fn rerank(passages: &mut [crate::search::Passage]) {
    passages.sort_by(|a, b| {
        b.pinned.cmp(&a.pinned).then_with(|| {
            let (a, b) = (a.reader_score.unwrap_or(0.0), b.reader_score.unwrap_or(0.0));
            b.total_cmp(&a)
        })
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::Passage;

    #[test]
    fn rerank_orders_by_probability_below_pinned_passages() {
        let mut ps = vec![
            Passage::for_tests(1, false),
            Passage::for_tests(2, false),
            Passage::for_tests(3, true),
            Passage::for_tests(4, false),
        ];
        for (p, prob) in ps.iter_mut().zip([0.1, 0.9, 0.2, 0.9]) {
            p.reader_score = Some(prob);
        }
        rerank(&mut ps);
        let ids: Vec<u64> = ps.iter().map(|p| p.id).collect();
        // 3 is pinned; 2 and 4 tie and keep their order; 1 is last.
        assert_eq!(ids, vec![3, 2, 4, 1]);
        assert_eq!(ps[0].reader_score, Some(0.2));
    }

    #[test]
    fn off_mode_reads_nothing() {
        let reader = Reader::new(
            ReaderMode::Off,
            &ReaderConfig::default(),
            Path::new("/nonexistent/libonnxruntime.so"),
        );
        assert!(!reader.enabled());
        assert_eq!(reader.probabilities("q", &["p"]).unwrap(), None);
    }

    #[test]
    fn missing_model_is_an_error_when_on_and_a_fallback_when_auto() {
        let dir = tempfile::tempdir().unwrap();
        let config = ReaderConfig {
            model_dir: dir.path().join("reader"),
            ..ReaderConfig::default()
        };
        let runtime = Path::new("/nonexistent/libonnxruntime.so");
        let on = Reader::new(ReaderMode::On, &config, runtime);
        let err = on.probabilities("q", &["p"]).unwrap_err();
        assert!(matches!(err, ReaderError::ModelMissing { .. }), "{err}");
        assert!(err.to_string().contains("model.onnx"), "{err}");
        // Asked again, the same error (not a silent None).
        assert!(on.probabilities("q", &["p"]).is_err());
        let auto = Reader::new(ReaderMode::Auto, &config, runtime);
        assert_eq!(auto.probabilities("q", &["p"]).unwrap(), None);
        assert_eq!(auto.probabilities("q", &["p"]).unwrap(), None);
    }
}
