//! A run as the feedback store keeps it: everything a refit of the
//! confidence weights reads, so that no question is ever run again.

use serde::{Deserialize, Serialize};

use crate::confidence::{Factors, Scorer};
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
    /// The weights it was scored with ([`Scorer::version`]).
    pub weights_version: String,
    /// The collection (knowledge base) that answered.
    pub collection: String,
    /// The documents the answer cites, in order.
    #[serde(default)]
    pub sources: Vec<String>,
}

impl RecordedRun {
    /// The record of a finished run of `config`'s knowledge base, scored
    /// by `scorer`.
    pub fn of(report: &RunReport, config: &Config, scorer: &Scorer) -> Self {
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
            weights_version: scorer.version(),
            collection: config.collection.name.clone(),
            sources,
        }
    }

    /// Whether an asker was shown an answer to rate.
    pub fn answered(&self) -> bool {
        matches!(self.decision, Decision::Answer | Decision::Caveat) && self.answer.is_some()
    }
}
