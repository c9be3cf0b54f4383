//! Text embedding: the [`Embedder`] trait, the local fastembed (ONNX)
//! implementation, [`FastEmbedder`], and [`CachedEmbedder`], which answering
//! uses to embed recurring texts once.

mod cache;
mod fastembed;
mod files;
mod model_card;
mod prepared;
mod quantised;
mod session;
mod tokenizer;
mod weights;

pub use self::cache::{CachedEmbedder, SAVE_EVERY};
pub(crate) use self::fastembed::init_runtime;
pub use self::fastembed::{FastEmbedder, MAX_SESSIONS};
pub(crate) use self::files::{MODEL_FILE, TOKENIZER_FILES, tokenizer_files};
pub use self::model_card::{MODEL_CARD_FILE, ModelCard};
pub use self::prepared::PREPARED_FILES;
pub use self::quantised::{dequantise, quantise};

use std::path::PathBuf;

/// Result of embedding operations.
pub type Result<T> = std::result::Result<T, EmbedError>;

/// What went wrong while loading or running the embedding model.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// A model file is missing.
    #[error(
        "embedding model file {path} not found: run `scripts/setup` (it puts the models in the repository's models/ and in GRACE's per-user folder, $GRACE_HOME or ~/.local/share/grace), or point embedding.model_dir at a folder with model.onnx and its tokenizer files"
    )]
    ModelMissing {
        /// The file that was looked for.
        path: PathBuf,
    },
    /// The ONNX Runtime library is missing.
    #[error(
        "ONNX Runtime library {path} not found: run `scripts/setup` (it puts the library in the repository's models/ and in GRACE's per-user folder, $GRACE_HOME or ~/.local/share/grace), or point embedding.runtime_path at libonnxruntime.so 1.24 or newer"
    )]
    RuntimeMissing {
        /// The library path that was looked for (`embedding.runtime_path`).
        path: PathBuf,
    },
    /// The ONNX Runtime library could not be used.
    #[error("ONNX Runtime library {path} cannot be used: {message}")]
    Runtime {
        /// The library that was loaded.
        path: PathBuf,
        /// Why it cannot be used.
        message: String,
    },
    /// A model file could not be read or parsed.
    #[error("cannot read embedding model file {path}: {message}")]
    ModelFile {
        /// The model file.
        path: PathBuf,
        /// Why it could not be read or parsed.
        message: String,
    },
    /// The model failed to load or to run.
    #[error("embedding model: {0}")]
    Model(String),
    /// The vector cache's file could not be written, or was refused when
    /// read (see [`CachedEmbedder::load`]).
    #[error("vector cache file {path}: {message}")]
    CacheFile {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
}

/// Turns texts into fixed-size vectors whose cosine similarity reflects
/// meaning. Implementations return L2-normalised vectors, one per text, in
/// order.
pub trait Embedder: Send + Sync {
    /// Length of every vector.
    fn dimension(&self) -> usize;
    /// A name for the model, recorded with the data it embedded.
    fn model_id(&self) -> &str;
    /// Embeds documents (or passages).
    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>>;
    /// Embeds a query. The default is the same as a document.
    fn embed_query(&self, text: &str) -> Result<Vec<f32>> {
        self.embed(&[text.to_string()])?
            .pop()
            .ok_or_else(|| EmbedError::Model("the model returned no vector".into()))
    }
    /// The languages the model reads, in words (`grace status`).
    fn languages(&self) -> &str {
        "English"
    }
    /// How this model's cosines are put on GRACE's similarity scale
    /// ([`SimilarityScale`]); the default (MiniLM's) leaves them as they are.
    fn similarity_scale(&self) -> SimilarityScale {
        SimilarityScale::IDENTITY
    }
    /// Whether a lone query's embedding leaves a core free (true unless
    /// the model runs a lone text on every core). A search runs its lexical
    /// ranking beside the embedding only then.
    fn query_leaves_a_core_free(&self) -> bool {
        true
    }
}

/// One affine map of cosine similarities: `scale * cosine + shift`.
#[derive(Debug, Clone, Copy, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Affine {
    /// Multiplies the cosine (positive: the order is kept).
    pub scale: f32,
    /// Added after.
    pub shift: f32,
}

impl Affine {
    /// The map that changes nothing.
    pub const IDENTITY: Self = Self {
        scale: 1.0,
        shift: 0.0,
    };

    /// `cosine` on the common scale.
    pub fn apply(&self, cosine: f32) -> f32 {
        self.scale * cosine + self.shift
    }

    /// The cosine that [`Affine::apply`] puts at `similarity` (a card's
    /// scale is positive: `ModelCard::of` checks it).
    pub fn invert(&self, similarity: f32) -> f32 {
        (similarity - self.shift) / self.scale
    }
}

/// GRACE's similarity scale is MiniLM's cosine: the fusion's lexical bonus,
/// the confidence weights, `search.score_threshold` and the extractive
/// answerer's `min_similarity` were all fitted in its units. Another model
/// spreads its cosines differently (multilingual-e5-small's best passages
/// for a question lie within 0.03 of each other, around 0.85; MiniLM's
/// within 0.3, around 0.4), so its model card (`grace-model.yml`,
/// `similarity:`) carries the map that puts them on MiniLM's scale, fitted
/// on GRACE's training questions (`scripts/cosine_alignment.py`).
/// Similarities on this scale may leave -1..=1 for near-duplicates; only
/// their order and distances matter.
#[derive(Debug, Clone, Copy, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimilarityScale {
    /// A question against a passage (search, the extractive answerer).
    pub query: Affine,
    /// A passage against another (neighbour similarity, near-duplicates).
    pub passage: Affine,
}

impl SimilarityScale {
    /// MiniLM's: cosines as they are.
    pub const IDENTITY: Self = Self {
        query: Affine::IDENTITY,
        passage: Affine::IDENTITY,
    };

    /// Why this scale cannot be used, if it cannot: a scale must be
    /// positive (the order of passages is kept) and both numbers finite
    /// and within +-100.
    pub fn check(&self) -> std::result::Result<(), String> {
        for (name, a) in [("query", self.query), ("passage", self.passage)] {
            if !(a.scale.is_finite() && a.scale > 0.0 && a.scale <= 100.0) {
                return Err(format!(
                    "similarity.{name}.scale must be in (0, 100], got {}",
                    a.scale
                ));
            }
            if !(a.shift.is_finite() && a.shift.abs() <= 100.0) {
                return Err(format!(
                    "similarity.{name}.shift must be in -100..=100, got {}",
                    a.shift
                ));
            }
        }
        Ok(())
    }
}

/// Cosine similarity of two vectors (their dot product when both are
/// L2-normalised, as an [`Embedder`]'s are).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let (na, nb) = (dot(a, a).sqrt(), dot(b, b).sqrt());
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot(a, b) / (na * nb)
    }
}

/// The dot product of two vectors (their cosine when both are unit vectors).
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// [`dot`] summed in eight lanes, which the compiler turns into vector
/// instructions: several times faster on long runs of dot products (the
/// gap report's grouping), rounded differently in the last bits. Search
/// scores keep [`dot`], so that they do not move.
pub fn dot_lanes(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut lanes = [0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ca.zip(cb) {
        for ((lane, x), y) in lanes.iter_mut().zip(x).zip(y) {
            *lane += x * y;
        }
    }
    lanes.iter().sum::<f32>() + tail
}

/// Scales `v` to unit length in place (a zero vector stays zero).
pub fn normalise(v: &mut [f32]) {
    let norm = dot(v, v).sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

#[cfg(test)]
mod tests {
    use super::cosine;

    #[test]
    fn cosine_of_known_vectors() {
        assert!((cosine(&[1.0, 0.0], &[1.0, 0.0]) - 1.0).abs() < 1e-6);
        assert!(cosine(&[1.0, 0.0], &[0.0, 1.0]).abs() < 1e-6);
        assert!((cosine(&[3.0, 4.0], &[6.0, 8.0]) - 1.0).abs() < 1e-6);
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 0.0]), 0.0);
    }
}
