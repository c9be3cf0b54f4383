//! Documents' rating histories from askers' ratings, and the boosts made
//! from them. A history is in (−1, 1), decaying (a rating weighs half
//! after `document_boost_half_life_days`), one vote per asker and document
//! (an asker's newest): one person's flood moves a document by one vote.
//! Every answer is scored with its cited documents' histories (the
//! `document_history` confidence factor). The boost (`feedback.document_boost`,
//! off by default) scales a history into the passages' order: a document
//! whose answers were rated up moves up in the passages a search returns,
//! one rated down moves down, bounded by `document_boost` either way.
//! Applied by [`crate::search::apply_document_boosts`].

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};

use crate::config::FeedbackConfig;

/// Newest ratings the histories (and boosts) are made from: older ones
/// have decayed (a month's half-life) and reading them all would cost
/// every refresh.
pub const MAX_BOOST_RATINGS: usize = 10_000;

/// One rating of an answer, for one document it cited.
#[derive(Debug, Clone, PartialEq)]
pub struct DocumentRating {
    /// Who rated (`session:<id>` or `asker:<name>`).
    pub asker: String,
    /// The cited document's path.
    pub source: String,
    /// Rated up (else down).
    pub up: bool,
    /// When.
    pub at: DateTime<Utc>,
}

/// Each document's rating history at `now`: `(u − d) / (u + d + 1)`, in
/// (−1, 1), with `u` and `d` its up and down votes weighed by their age
/// (half after `half_life_days`). `ratings` newest first (an asker's later
/// vote on the same document is dropped). A document whose votes cancel
/// out has none. What the `document_history` confidence factor reads, and
/// what the boost scales.
pub fn document_history(
    ratings: &[DocumentRating],
    now: DateTime<Utc>,
    half_life_days: u32,
) -> HashMap<String, f32> {
    let half_life = f64::from(half_life_days.max(1));
    let mut seen: HashSet<(&str, &str)> = HashSet::new();
    // (up, down) weights per document.
    let mut votes: HashMap<&str, (f64, f64)> = HashMap::new();
    for r in ratings {
        if !seen.insert((r.asker.as_str(), r.source.as_str())) {
            continue;
        }
        let age_days = (now - r.at).num_seconds().max(0) as f64 / 86_400.0;
        let weight = 0.5f64.powf(age_days / half_life);
        let v = votes.entry(r.source.as_str()).or_default();
        if r.up {
            v.0 += weight;
        } else {
            v.1 += weight;
        }
    }
    votes
        .into_iter()
        .map(|(source, (up, down))| (source.to_string(), ((up - down) / (up + down + 1.0)) as f32))
        .filter(|(_, history)| *history != 0.0)
        .collect()
}

/// Each document's boost: its [`document_history`] scaled by
/// `document_boost` (so less than it either way), with the history's
/// half-life `document_boost_half_life_days`. Empty when the boost is off.
pub fn document_boosts(
    history: &HashMap<String, f32>,
    config: &FeedbackConfig,
) -> HashMap<String, f32> {
    let max = config.document_boost;
    if max <= 0.0 {
        return HashMap::new();
    }
    history
        .iter()
        .map(|(source, h)| (source.clone(), (max * f64::from(*h)) as f32))
        .filter(|(_, boost)| *boost != 0.0)
        .collect()
}

#[cfg(test)]
mod tests {
    use chrono::Duration;

    use super::*;

    fn rating(asker: &str, source: &str, up: bool, days_ago: i64) -> DocumentRating {
        DocumentRating {
            asker: asker.into(),
            source: source.into(),
            up,
            at: now() - Duration::days(days_ago),
        }
    }

    fn now() -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000, 0).unwrap()
    }

    /// The boosts as the service makes them: the history, scaled.
    fn boosts(
        ratings: &[DocumentRating],
        now: DateTime<Utc>,
        config: &FeedbackConfig,
    ) -> HashMap<String, f32> {
        let history = document_history(ratings, now, config.document_boost_half_life_days);
        document_boosts(&history, config)
    }

    fn on(boost: f64) -> FeedbackConfig {
        FeedbackConfig {
            document_boost: boost,
            ..FeedbackConfig::default()
        }
    }

    #[test]
    fn off_by_default_and_nothing_without_ratings() {
        let ratings = [rating("a", "x.md", true, 0)];
        assert!(boosts(&ratings, now(), &FeedbackConfig::default()).is_empty());
        assert!(boosts(&[], now(), &on(0.05)).is_empty());
    }

    #[test]
    fn up_moves_up_down_moves_down_and_a_tie_not_at_all() {
        let ratings = [
            rating("a", "up.md", true, 0),
            rating("b", "up.md", true, 0),
            rating("a", "down.md", false, 0),
            rating("a", "tie.md", true, 0),
            rating("b", "tie.md", false, 0),
        ];
        let b = boosts(&ratings, now(), &on(0.06));
        assert!((b["up.md"] - 0.04).abs() < 1e-6, "{b:?}");
        assert!((b["down.md"] + 0.03).abs() < 1e-6, "{b:?}");
        assert!(!b.contains_key("tie.md"));
    }

    #[test]
    fn hostile_sources_and_dates_stay_bounded_and_are_keyed_as_given() {
        // A document's name is keyed byte for byte: non-ASCII, a path
        // outside every root, a name differing only in case or in Unicode
        // normalisation are each a document of their own.
        let names = [
            "経費精算.md",
            "../../etc/passwd",
            "CAFÉ.md",
            "café.md",
            "cafe\u{301}.md",
        ];
        let ratings: Vec<DocumentRating> = names
            .iter()
            .enumerate()
            .map(|(k, n)| rating(&format!("asker{k}"), n, k % 2 == 0, 0))
            .collect();
        let b = boosts(&ratings, now(), &on(0.2));
        assert_eq!(b.len(), names.len(), "{b:?}");
        assert!((b["経費精算.md"] - 0.1).abs() < 1e-6, "{b:?}");
        assert!((b["CAFÉ.md"] - 0.1).abs() < 1e-6, "{b:?}");
        assert!((b["café.md"] + 0.1).abs() < 1e-6, "{b:?}");
        // Dates a forged or broken clock could write: 10,000 years old
        // weighs nothing but is finite; far in the future weighs as fresh.
        let ancient = boosts(&[rating("a", "x.md", true, 3_650_000)], now(), &on(0.2));
        assert!(
            ancient
                .get("x.md")
                .is_none_or(|b| b.is_finite() && *b >= 0.0)
        );
        let future = boosts(&[rating("a", "x.md", true, -3_650_000)], now(), &on(0.2));
        assert!((future["x.md"] - 0.1).abs() < 1e-6, "{future:?}");
    }

    #[test]
    fn a_rating_weighs_half_after_the_half_life() {
        let fresh = boosts(&[rating("a", "x.md", true, 0)], now(), &on(0.1));
        let old = boosts(&[rating("a", "x.md", true, 30)], now(), &on(0.1));
        // 0.1 × 1/2 against 0.1 × 0.5/1.5.
        assert!((fresh["x.md"] - 0.05).abs() < 1e-6);
        assert!((old["x.md"] - 0.1 / 3.0).abs() < 1e-6);
    }

    #[test]
    fn a_flood_is_one_vote_and_many_askers_stay_below_the_bound() {
        // One asker's 10,000 ratings of the same document: its newest counts.
        let flood: Vec<DocumentRating> = (0..10_000)
            .map(|i| rating("mallory", "x.md", i == 0, 0))
            .collect();
        let b = boosts(&flood, now(), &on(0.1));
        assert!((b["x.md"] - 0.05).abs() < 1e-6, "{b:?}");
        // 10,000 askers: close to the bound, never past it.
        let many: Vec<DocumentRating> = (0..10_000)
            .map(|i| rating(&format!("asker{i}"), "x.md", false, 0))
            .collect();
        let b = boosts(&many, now(), &on(0.1));
        assert!(b["x.md"] > -0.1 && b["x.md"] < -0.0999, "{b:?}");
        // A rating from the future (a clock step) weighs as a fresh one.
        let b = boosts(&[rating("a", "x.md", true, -5)], now(), &on(0.1));
        assert!((b["x.md"] - 0.05).abs() < 1e-6);
    }
}
