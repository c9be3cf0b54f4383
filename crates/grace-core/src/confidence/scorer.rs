//! What scores a step: the configured model with the weights in use.

use sha2::{Digest, Sha256};

use super::{Factors, Score, score, v1};
use crate::config::{ConfidenceConfig, ConfidenceModel, V1Weights, Weights};

/// How a step's factors become its score: `confidence.model` with the
/// weights in use, which are `confidence.weights` unless a calibration or a
/// fit on feedback replaced them at run time. The configuration stays what
/// was set; whoever scores holds a `Scorer` (the knowledge base, from the
/// calibration it opened with; the service, with a fit made while serving)
/// and hands it to the executor.
#[derive(Debug, Clone, PartialEq)]
pub struct Scorer {
    model: ConfidenceModel,
    weights: Weights,
    grace_v1: V1Weights,
}

impl Scorer {
    /// Scores as `confidence` says, with `fitted` in place of its
    /// `weights` when there is a fit.
    pub fn new(confidence: &ConfidenceConfig, fitted: Option<Weights>) -> Self {
        Self {
            model: confidence.model,
            weights: fitted.unwrap_or(confidence.weights),
            grace_v1: confidence.grace_v1.clone(),
        }
    }

    /// Scores with the configured weights (no calibration).
    pub fn configured(confidence: &ConfidenceConfig) -> Self {
        Self::new(confidence, None)
    }

    /// This scorer with `weights` instead of its own.
    pub fn with_weights(&self, weights: Weights) -> Self {
        Self {
            weights,
            ..self.clone()
        }
    }

    /// The logistic model's weights in use.
    pub fn weights(&self) -> &Weights {
        &self.weights
    }

    /// Which weights these are: the confidence model and the first 16 hex
    /// digits of the SHA-256 of its weights, so that a refit can tell
    /// labels scored with other weights (`logistic:0123456789abcdef`).
    pub fn version(&self) -> String {
        let weights = match self.model {
            ConfidenceModel::Logistic => serde_json::to_vec(&self.weights),
            ConfidenceModel::GraceV1 => serde_json::to_vec(&self.grace_v1),
        }
        .unwrap_or_default();
        let model = serde_json::to_value(self.model)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        let digest = crate::durable::hex(&Sha256::digest(&weights));
        format!("{model}:{}", &digest[..16])
    }

    /// The score of one step's factors.
    pub fn score(&self, factors: &Factors) -> Score {
        match self.model {
            ConfidenceModel::Logistic => score(factors, &self.weights),
            ConfidenceModel::GraceV1 => v1::score(factors, &self.grace_v1),
        }
    }
}
