//! The original GRACE's confidence formula, kept as a baseline for the
//! evaluation (`confidence.model: grace_v1`).
//!
//! `search_quality = max` when the best passage similarity is at least 0.6,
//! else `0.7·max + 0.3·mean − min(0.15, 0.3·variance)`; the score is the
//! weighted mean (`confidence.grace_v1`) of the search quality and of the
//! answer factors present (the generator's self-assessment, citation
//! validity), clamped to [0, 1]. It has no notion of grounding, coverage or
//! abstention: an answer the generator declined, or one that cites nothing
//! the passages say, scores as high as the passages are similar.

use super::{Contribution, Factor, Factors, Score};
use crate::config::V1Weights;

/// The original search-quality term from passage similarity statistics.
pub fn search_quality(max: f64, mean: f64, variance: f64) -> f64 {
    if max >= 0.6 {
        max
    } else {
        0.7 * max + 0.3 * mean - (0.3 * variance).min(0.15)
    }
}

/// Scores factors with the original formula. The [`Score`]'s terms are
/// each factor's share of the weighted mean (they add up to the score; the
/// search quality is reported under [`Factor::MaxScore`]), its bias is 0
/// and its logit is the score's log-odds.
pub fn score(factors: &Factors, weights: &V1Weights) -> Score {
    let mut parts: Vec<(Factor, f64, f64, f64)> = Vec::new(); // factor, value, feature, weight
    if let Some(max) = factors.get(Factor::MaxScore) {
        let mean = factors.get(Factor::MeanScore).unwrap_or(max);
        let variance = factors.get(Factor::ScoreVariance).unwrap_or(0.0);
        parts.push((
            Factor::MaxScore,
            max,
            search_quality(max, mean, variance),
            weights.search_quality,
        ));
    }
    for (factor, weight) in [
        (Factor::SelfAssessment, weights.self_assessment),
        (Factor::CitationValidity, weights.citation_validity),
    ] {
        if let Some(value) = factors.get(factor) {
            parts.push((factor, value, value, weight));
        }
    }
    let total: f64 = parts.iter().map(|p| p.3).sum();
    let contributions: Vec<Contribution> = parts
        .iter()
        .map(|&(factor, value, feature, weight)| {
            let share = if total > 0.0 { weight / total } else { 0.0 };
            Contribution {
                factor,
                value,
                feature,
                weight: share,
                term: share * feature,
            }
        })
        .collect();
    let value = contributions
        .iter()
        .map(|c| c.term)
        .sum::<f64>()
        .clamp(0.0, 1.0);
    let clamped = value.clamp(1e-9, 1.0 - 1e-9);
    Score {
        score: value,
        logit: (clamped / (1.0 - clamped)).ln(),
        bias: 0.0,
        contributions,
        model: crate::config::ConfidenceModel::GraceV1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn factors(pairs: &[(Factor, f64)]) -> Factors {
        let mut f = Factors::default();
        for (k, v) in pairs {
            f.set(*k, *v);
        }
        f
    }

    #[test]
    fn search_quality_follows_the_original() {
        assert_eq!(search_quality(0.7, 0.2, 0.5), 0.7);
        // 0.7·0.5 + 0.3·0.3 − min(0.15, 0.3·0.1) = 0.35 + 0.09 − 0.03
        assert!((search_quality(0.5, 0.3, 0.1) - 0.41).abs() < 1e-12);
        // The variance penalty is capped at 0.15.
        assert!((search_quality(0.5, 0.3, 2.0) - 0.29).abs() < 1e-12);
    }

    #[test]
    fn weighted_mean_of_the_factors_present() {
        let w = V1Weights::default();
        let f = factors(&[
            (Factor::MaxScore, 0.8),
            (Factor::MeanScore, 0.5),
            (Factor::CitationValidity, 1.0),
        ]);
        let s = score(&f, &w);
        // (0.5·0.8 + 0.2·1.0) / 0.7
        assert!((s.score - 0.6 / 0.7).abs() < 1e-12, "{s:?}");
        let sum: f64 = s.contributions.iter().map(|c| c.term).sum();
        assert!((sum - s.score).abs() < 1e-12);
    }

    #[test]
    fn a_confident_wrong_answer_is_what_the_original_cannot_see() {
        // An abstained, ungrounded answer over similar passages: the
        // original formula knows nothing of abstention or grounding.
        let f = factors(&[
            (Factor::MaxScore, 0.65),
            (Factor::MeanScore, 0.6),
            (Factor::CitationValidity, 1.0),
            (Factor::Groundedness, 0.0),
            (Factor::Abstained, 1.0),
        ]);
        assert!(score(&f, &V1Weights::default()).score > 0.7);
    }
}
