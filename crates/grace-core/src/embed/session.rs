//! One ONNX Runtime session of the sentence-embedding model, and what turns
//! its output into sentence vectors: mean pooling over the text's tokens,
//! then L2 normalisation, in the order fastembed 7.5 did that arithmetic,
//! so that a text's vector stays bit for bit what it was.
//!
//! Sessions of one model share its weights (given as initializers,
//! `weights.rs`) and their packed copies ([`PrepackedWeights`]): ONNX
//! Runtime packs each matrix-multiply weight once for the CPU and every
//! later session uses that copy, so a session beyond the first costs
//! little memory (measured in `docs/src/performance.md`).

use std::path::Path;
use std::sync::Arc;

use ort::environment::Environment;
use ort::session::Session;
use ort::session::builder::{GraphOptimizationLevel, PrepackedWeights, SessionBuilder};
use ort::value::{DynValue, Tensor};
use tokenizers::Tokenizer;

use super::{EmbedError, Result};

/// The model outputs fastembed looked for, in its order, after "the only
/// output there is".
const OUTPUT_NAMES: [&str; 3] = ["text_embeds", "last_hidden_state", "sentence_embedding"];

/// A loaded model session.
pub(super) struct ModelSession {
    session: Session,
    /// Whether the model takes `token_type_ids` (BERT-style models do).
    type_ids: bool,
    /// The output read.
    output: String,
}

impl ModelSession {
    /// A session of the model file `model` with `threads` intra-op threads
    /// (1: the call runs on the caller's thread alone), whose idle threads
    /// wait spinning when `spin` (else asleep), given the weights `shared`
    /// (which it then does not read from the model) and their packed copies
    /// in `packed`.
    pub(super) fn open(
        environment: &Environment,
        model: &Path,
        threads: usize,
        spin: bool,
        shared: &[(String, Arc<DynValue>)],
        packed: &PrepackedWeights,
    ) -> Result<Self> {
        let fail = |e: String| EmbedError::Model(format!("cannot load {}: {e}", model.display()));
        let step = |e: ort::Error<SessionBuilder>| fail(e.to_string());
        let mut builder = Session::builder(environment)
            .map_err(|e| fail(e.to_string()))?
            .with_optimization_level(GraphOptimizationLevel::Level3)
            .map_err(step)?
            .with_intra_threads(threads)
            .map_err(step)?
            .with_config_entry(
                "session.intra_op.allow_spinning",
                if spin { "1" } else { "0" },
            )
            .map_err(step)?
            .with_prepacked_weights(packed)
            .map_err(step)?
            // The planned memory of one input shape helps a model fed one
            // shape; texts come in every length, and without it a session
            // kept 23 MB less after a batch, at the same speed (measured).
            .with_memory_pattern(false)
            .map_err(step)?;
        for (name, value) in shared {
            builder = builder
                .with_initializer(name, Arc::clone(value))
                .map_err(step)?;
        }
        let session = builder
            .commit_from_file(model)
            .map_err(|e| fail(e.to_string()))?;
        let type_ids = session
            .inputs()
            .iter()
            .any(|input| input.name() == "token_type_ids");
        let outputs: Vec<&str> = session.outputs().iter().map(|o| o.name()).collect();
        let output = match outputs.as_slice() {
            [only] => (*only).to_string(),
            _ => OUTPUT_NAMES
                .iter()
                .find(|name| outputs.contains(name))
                .map(|name| (*name).to_string())
                .ok_or_else(|| {
                    fail(format!(
                        "none of its outputs ({}) is one of {}",
                        outputs.join(", "),
                        OUTPUT_NAMES.join(", ")
                    ))
                })?,
        };
        Ok(Self {
            session,
            type_ids,
            output,
        })
    }

    /// The vectors of `texts`, `batch` texts to a model run.
    pub(super) fn embed(
        &mut self,
        tokenizer: &Tokenizer,
        texts: &[String],
        batch: usize,
    ) -> Result<Vec<Vec<f32>>> {
        let mut vectors = Vec::with_capacity(texts.len());
        for part in texts.chunks(batch.max(1)) {
            vectors.extend(self.run(tokenizer, part)?);
        }
        Ok(vectors)
    }

    /// One model run over `texts`, padded to the longest.
    fn run(&mut self, tokenizer: &Tokenizer, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        let model = |e: String| EmbedError::Model(e);
        let encodings = tokenizer
            .encode_batch(texts.iter().map(String::as_str).collect::<Vec<_>>(), true)
            .map_err(|e| model(format!("cannot tokenize: {e}")))?;
        let rows = encodings.len();
        let width = encodings.first().map_or(0, |e| e.len());
        let (mut ids, mut mask, mut types) = (
            Vec::with_capacity(rows * width),
            Vec::with_capacity(rows * width),
            Vec::with_capacity(rows * width),
        );
        for encoding in &encodings {
            ids.extend(encoding.get_ids().iter().map(|&x| i64::from(x)));
            mask.extend(encoding.get_attention_mask().iter().map(|&x| i64::from(x)));
            types.extend(encoding.get_type_ids().iter().map(|&x| i64::from(x)));
        }
        if ids.len() != rows * width || width == 0 {
            return Err(model("the tokenizer returned ragged or empty rows".into()));
        }
        let shape = [rows, width];
        let tensor = |data: Vec<i64>| {
            Tensor::from_array((shape, data)).map_err(|e| model(format!("input tensor: {e}")))
        };
        let mut inputs = ort::inputs![
            "input_ids" => tensor(ids)?,
            "attention_mask" => tensor(mask.clone())?,
        ];
        if self.type_ids {
            inputs.push(("token_type_ids".into(), tensor(types)?.into()));
        }
        let outputs = self
            .session
            .run(inputs)
            .map_err(|e| model(format!("run: {e}")))?;
        let (out_shape, data) = outputs
            .get(self.output.as_str())
            .ok_or_else(|| model(format!("no output `{}`", self.output)))?
            .try_extract_tensor::<f32>()
            .map_err(|e| model(format!("output `{}`: {e}", self.output)))?;
        let dims: Vec<usize> = out_shape.iter().map(|&d| d.max(0) as usize).collect();
        let pooled = match dims.as_slice() {
            // Already one vector a text.
            [r, dim] if *r == rows && *dim > 0 => data.chunks(*dim).map(<[f32]>::to_vec).collect(),
            [r, t, dim] if *r == rows && *t == width && *dim > 0 => {
                mean_pool(data, &mask, width, *dim)
            }
            _ => {
                return Err(model(format!(
                    "output `{}` has shape {dims:?}, not [{rows}, ({width},) dim]",
                    self.output
                )));
            }
        };
        Ok(pooled.iter().map(|v| normalise(v)).collect())
    }
}

/// The mean of each row's token vectors over its attention mask.
/// `hidden` is `[rows, width, dim]`, `mask` `[rows, width]`. The sum runs
/// token by token from zero, as ndarray's `sum_axis` did in fastembed.
fn mean_pool(hidden: &[f32], mask: &[i64], width: usize, dim: usize) -> Vec<Vec<f32>> {
    hidden
        .chunks(width * dim)
        .zip(mask.chunks(width))
        .map(|(tokens, mask)| {
            let mut sum = vec![0.0f32; dim];
            let mut count = 0.0f32;
            for (token, &m) in tokens.chunks(dim).zip(mask) {
                let m = m as f32;
                for (s, &x) in sum.iter_mut().zip(token) {
                    *s += m * x;
                }
                count += m;
            }
            let count = if count == 0.0 { 1.0 } else { count };
            sum.iter().map(|s| s / count).collect()
        })
        .collect()
}

/// `v` scaled to length 1 (as fastembed's `normalize`).
fn normalise(v: &[f32]) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter().map(|x| x / (norm + 1e-12)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_pooling_skips_masked_tokens_and_normalising_gives_length_one() {
        // Two rows of three tokens, dim 2; the second row's last token is
        // padding.
        let hidden = [
            1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 1.0, 1.0, 3.0, 3.0, 100.0, 100.0,
        ];
        let mask = [1, 1, 1, 1, 1, 0];
        let pooled = mean_pool(&hidden, &mask, 3, 2);
        assert_eq!(pooled, vec![vec![3.0, 4.0], vec![2.0, 2.0]]);
        let unit = normalise(&pooled[0]);
        assert!((unit[0] - 0.6).abs() < 1e-6 && (unit[1] - 0.8).abs() < 1e-6);
        // A row with no real token is divided by one, not zero.
        assert_eq!(mean_pool(&[1.0, 1.0], &[0], 1, 2), vec![vec![0.0, 0.0]]);
    }
}
