//! The `feedback` section: what GRACE keeps so that askers can rate its
//! answers.

use serde::{Deserialize, Serialize};

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
}

impl Default for FeedbackConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            max_ratings_per_hour: 60,
            max_runs: 100_000,
        }
    }
}
