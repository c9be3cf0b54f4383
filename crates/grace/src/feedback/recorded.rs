//! A run as the feedback store keeps it: everything a refit of the
//! confidence weights reads, so that no question is ever run again.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::confidence::Factors;
use crate::config::Config;
use crate::exec::{Decision, RunReport};

/// Characters of a question or answer a record keeps.
const MAX_TEXT_CHARS: usize = 8_000;
/// Cited documents a record keeps.
const MAX_SOURCES: usize = 20;

/// One run, as recorded when it ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RecordedRun {
    /// The question as the asker wrote it.
    pub question: String,
    /// The question as run, when a follow-up was rewritten.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub standalone: Option<String>,
    /// The answer given (the draft, when escalated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// What GRACE did.
    pub decision: Decision,
    /// The run's confidence.
    pub confidence: f64,
    /// The answer step's factors as scored (what a refit fits on); `None`
    /// when no answer step finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub factors: Option<Factors>,
    /// The weights it was scored with ([`weights_version`]).
    pub weights_version: String,
    /// The collection (knowledge base) that answered.
    pub collection: String,
    /// The documents the answer cites, in order.
    #[serde(default)]
    pub sources: Vec<String>,
}

impl RecordedRun {
    /// The record of a finished run scored with `config`.
    pub fn of(report: &RunReport, config: &Config) -> Self {
        let answer = report.answer.as_ref().filter(|a| !a.abstained);
        let mut sources = report.cited_sources();
        sources.truncate(MAX_SOURCES);
        let cut = |t: &str| crate::text::truncate_chars(t, MAX_TEXT_CHARS).to_string();
        Self {
            question: cut(&report.question),
            standalone: report.rewrite.as_ref().map(|r| cut(&r.question)),
            answer: answer.map(|a| cut(&a.text)),
            decision: report.decision,
            confidence: report.confidence,
            factors: report.answer_factors().cloned(),
            weights_version: weights_version(config),
            collection: config.qdrant.collection.clone(),
            sources,
        }
    }

    /// Whether an asker was shown an answer to rate.
    pub fn answered(&self) -> bool {
        matches!(self.decision, Decision::Answer | Decision::Caveat) && self.answer.is_some()
    }
}

/// The version of the weights `config` scores with: the confidence model
/// and the first 16 hex digits of the SHA-256 of its weights, so that a
/// refit can tell labels scored with other weights.
pub fn weights_version(config: &Config) -> String {
    let c = &config.confidence;
    let weights = match c.model {
        crate::config::ConfidenceModel::Logistic => serde_json::to_vec(c.effective_weights()),
        crate::config::ConfidenceModel::GraceV1 => serde_json::to_vec(&c.grace_v1),
    }
    .unwrap_or_default();
    let model = serde_json::to_value(c.model)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    let digest = crate::durable::hex(&Sha256::digest(&weights));
    format!("{model}:{}", &digest[..16])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_weights_version_changes_with_the_weights_and_only_with_them() {
        let config = Config::default();
        let same = weights_version(&Config::default());
        assert_eq!(weights_version(&config), same);
        assert!(same.starts_with("logistic:"), "{same}");
        let mut refit = Config::default();
        let mut weights = *refit.confidence.effective_weights();
        weights.bias += 0.5;
        refit.confidence.fitted_weights = Some(weights);
        assert_ne!(weights_version(&refit), same);
    }
}
