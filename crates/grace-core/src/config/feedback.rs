//! The `feedback` section: what GRACE keeps so that askers can rate its
//! answers.

use super::Result;
use super::check::in_range;
use serde::{Deserialize, Serialize};

/// Most days of questions a gap report may read (`feedback.gap_days`, and
/// a report's own window).
pub const MAX_GAP_DAYS: u32 = 3_650;

/// The largest document boost (`feedback.document_boost`): a fused score
/// moves by less than this for its document's ratings.
pub const MAX_DOCUMENT_BOOST: f64 = 0.2;

/// The longest half-life of a rating's weight in the document boost
/// (`feedback.document_boost_half_life_days`).
pub const MAX_BOOST_HALF_LIFE_DAYS: u32 = 3_650;

/// Askers' ratings, kept in `feedback.sqlite3` in the data folder with
/// what a refit of the confidence weights reads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FeedbackConfig {
    /// Record every run (its question, answer, confidence factors, decision, weights and cited documents) under an id it can be rated by; false: nothing is recorded and ratings are refused.
    pub enabled: bool,
    /// Ratings one asker may give in an hour (a change of a rating counts); more are refused (HTTP 429).
    pub max_ratings_per_hour: usize,
    /// Runs kept; past it the oldest runs nobody rated and that were not escalated are removed.
    pub max_runs: usize,
    /// A "wrong" rating puts the question to a person: it is asked again and escalated, the rated answer's draft for the reviewer to fix (and promote into the knowledge base), and the reviewer's verdict labels the rated run.
    pub escalate_on_wrong: bool,
    /// The gap report's grouping: two groups merge while the average similarity between their questions' embeddings is at least this, on GRACE's similarity scale (MiniLM's cosines; another model's are mapped onto it by its model card).
    pub gap_similarity: f64,
    /// Days of questions the gap report reads when not told.
    pub gap_days: u32,
    /// Documents' ratings reorder the passages a search returns: a document rated up moves up, one rated down moves down, by at most this much of the fused score (0: off). Measured before it may be switched on: `grace eval DIR --feedback N --document-boost B`.
    pub document_boost: f64,
    /// Days after which a rating weighs half as much in a document's rating history (the `document_history` confidence factor, and the document boost).
    pub document_boost_half_life_days: u32,
}

impl Default for FeedbackConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            max_ratings_per_hour: 60,
            max_runs: 100_000,
            escalate_on_wrong: true,
            gap_similarity: 0.25,
            gap_days: 30,
            document_boost: 0.0,
            document_boost_half_life_days: 30,
        }
    }
}

pub(super) fn validate_feedback(f: &super::FeedbackConfig) -> Result<()> {
    for (key, value, max) in [
        (
            "feedback.max_ratings_per_hour",
            f.max_ratings_per_hour,
            1_000_000,
        ),
        ("feedback.max_runs", f.max_runs, 100_000_000),
        (
            "feedback.gap_days",
            f.gap_days as usize,
            MAX_GAP_DAYS as usize,
        ),
        (
            "feedback.document_boost_half_life_days",
            f.document_boost_half_life_days as usize,
            MAX_BOOST_HALF_LIFE_DAYS as usize,
        ),
    ] {
        in_range(key, value, 1..=max, "")?;
    }
    use std::ops::Bound::Excluded;
    in_range(
        "feedback.gap_similarity",
        f.gap_similarity,
        (Excluded(0.0), Excluded(1.0)),
        " (a cosine)",
    )?;
    in_range(
        "feedback.document_boost",
        f.document_boost,
        0.0..=MAX_DOCUMENT_BOOST,
        " (0 switches it off)",
    )?;
    Ok(())
}
