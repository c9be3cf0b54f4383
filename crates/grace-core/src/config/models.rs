//! The `embedding` and `reader` sections: the local models, the sentence
//! embedder and the answerability reader.

use std::path::PathBuf;

use super::Result;
use super::check::{in_range, invalid};
use serde::{Deserialize, Serialize};

/// The local sentence-embedding model (installed by `scripts/setup`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EmbeddingConfig {
    /// Folder with `model.onnx`, `tokenizer.json`, `config.json`,
    /// `special_tokens_map.json` and `tokenizer_config.json`.
    pub model_dir: PathBuf,
    /// The ONNX Runtime shared library (version 1.24 or newer).
    pub runtime_path: PathBuf,
    /// Longest input in model tokens; longer text is truncated.
    pub max_length: usize,
    /// Texts embedded per call to the model.
    pub batch_size: usize,
    /// 0: a lone text (a question) on a session with a thread per core,
    /// several texts split between single-threaded sessions, one per core
    /// (at most 4), sharing one copy of the weights; N: one session with N
    /// intra-op threads. A text's vector is the same bit for bit either way.
    pub threads: usize,
    /// Vectors of recently embedded questions and passage sentences kept
    /// for answering (one generation; at most twice this many are held,
    /// about 1.6 KiB each with MiniLM); 0 turns the cache off. `grace
    /// serve` keeps the passage sentences' vectors across a restart in
    /// `<data_dir>/vector-cache/<collection>.bin` (saved every 30 s while
    /// new ones come in, and when it stops; a damaged file or one of
    /// another model is refused with a warning).
    pub cache_size: usize,
}

impl Default for EmbeddingConfig {
    fn default() -> Self {
        Self {
            model_dir: PathBuf::from("models/minilm"),
            runtime_path: PathBuf::from("models/libonnxruntime.so"),
            max_length: 256,
            batch_size: 1,
            threads: 0,
            cache_size: 8192,
        }
    }
}

/// The answerability reader: a cross-encoder that reads the question and a
/// passage together and gives the probability that the passage answers it
/// (GRACE's own, `scripts/train-reader`; see `models/reader/MODEL_CARD.md`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReaderConfig {
    /// Folder with `model.onnx` and the tokenizer files (`tokenizer.json`,
    /// `config.json`, `special_tokens_map.json`, `tokenizer_config.json`).
    pub model_dir: PathBuf,
    /// Longest question + passage in model tokens; longer passages are
    /// truncated.
    pub max_length: usize,
    /// ONNX Runtime intra-op threads; 0 uses every core.
    pub threads: usize,
}

impl Default for ReaderConfig {
    fn default() -> Self {
        Self {
            model_dir: PathBuf::from("models/reader"),
            max_length: 64,
            threads: 0,
        }
    }
}

/// The `reader` section.
pub(super) fn validate_reader(r: &ReaderConfig) -> Result<()> {
    if r.model_dir.as_os_str().is_empty() {
        return Err(invalid("reader.model_dir", "must not be empty"));
    }
    in_range(
        "reader.max_length",
        r.max_length,
        16..=512,
        " (the model's position limit)",
    )?;
    in_range("reader.threads", r.threads, 0..=1024, " (0 = all cores)")?;
    Ok(())
}

/// The `embedding` section.
pub(super) fn validate_embedding(e: &super::EmbeddingConfig) -> Result<()> {
    if e.model_dir.as_os_str().is_empty() {
        return Err(invalid("embedding.model_dir", "must not be empty"));
    }
    if e.runtime_path.as_os_str().is_empty() {
        return Err(invalid("embedding.runtime_path", "must not be empty"));
    }
    in_range("embedding.max_length", e.max_length, 16..=8192, "")?;
    in_range("embedding.batch_size", e.batch_size, 1..=4096, "")?;
    in_range("embedding.threads", e.threads, 0..=1024, " (0 = all cores)")?;
    in_range(
        "embedding.cache_size",
        e.cache_size,
        0..=1000000,
        " (0 = off)",
    )?;
    Ok(())
}
