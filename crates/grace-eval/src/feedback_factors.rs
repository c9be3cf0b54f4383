//! The factors only feedback makes possible, measured before one is kept
//! (`grace eval DIR --feedback N`, the `factors` of its curve):
//!
//! - **nearest rated**: the ratings of the rated questions nearest to the
//!   question (by embedding, at a similarity of at least [`NEAR`] on
//!   GRACE's similarity scale, the [`NEAREST`] nearest), each weighed by
//!   its cosine: `Σ c·(±1) / (Σ c + 1)`, 0 with none. A question like one
//!   answered wrongly before is a warning. Not kept: it did not raise the
//!   AUROC.
//! - **document history**: the rating history of the documents the answer
//!   cites ([`grace::feedback::document_history`]), averaged over the cited
//!   documents that have one, 0 when none has. Kept: GRACE scores it as
//!   the `document_history` factor ([`document_history_factor`]); here it
//!   is measured against the confidence without it.
//!
//! Each is added to the refitted confidence without the document history
//! (its logit, after all the sample's ratings) and the held-out questions
//! with an answer step are scored out of fold (five stratified folds, the
//! L2 strength cross-validated, as `grace calibrate` fits): a factor is
//! worth keeping only if it raises the out-of-fold AUROC over the
//! confidence alone.

use std::collections::HashMap;

use serde::Serialize;

use super::fares::{RISK, coverage_at_risk};
use super::outcomes::Collected;
use grace::confidence::fit::{FEATURES, Sample, cross_validate};
use grace::confidence::{document_history_factor, metrics};
use grace::embed::dot;

/// The similarity (on GRACE's scale: MiniLM's cosines) at which a rated
/// question is near: about one subject.
pub const NEAR: f64 = 0.4;
/// Rated questions a question's "nearest rated" factor reads.
pub const NEAREST: usize = 10;
/// Folds of the out-of-fold scores.
const FOLDS: usize = 5;

/// The candidate factors, each with the confidence, scored out of fold on
/// the held-out questions with an answer step, averaged over draws of
/// simulated ratings.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FactorProbe {
    /// Draws of ratings measured on (the curve's first).
    pub draws: usize,
    /// Held-out questions scored per draw (those with an answer step), on
    /// average.
    pub questions: f64,
    /// Of them, those with at least one rated question near enough.
    pub with_rated_neighbours: f64,
    /// Of them, those citing a document with a rating history (votes that
    /// do not cancel out).
    pub with_rated_documents: f64,
    /// The cosine a rated question must reach to count as near ([`NEAR`]
    /// on this model's scale).
    pub similarity: f64,
    /// The refitted confidence alone.
    pub confidence: ProbeFare,
    /// With the nearest rated questions' ratings.
    pub nearest_rated: ProbeFare,
    /// With the cited documents' rating history.
    pub document_history: ProbeFare,
    /// With both.
    pub both: ProbeFare,
    /// The refit's own scores, without the document history (not out of
    /// fold: the weights fitted on the ratings score the held-out).
    pub refit: ProbeFare,
    /// The refit as GRACE fits and scores it, with the `document_history`
    /// factor (each rated run with the history of the ratings before it,
    /// the held-out with all of them); `raised_auroc` counts the draws
    /// where it is above [`FactorProbe::refit`].
    pub refit_with_history: ProbeFare,
}

/// How one combination scores the held-out questions out of fold, as the
/// mean over the draws.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct ProbeFare {
    /// AUROC of "right" (over the draws where it is defined).
    pub auroc: Option<f64>,
    /// AUROC of answerable against in-domain unanswerable questions.
    pub auroc_in_domain: Option<f64>,
    /// The largest share answered with at most one answer in ten wrong.
    pub coverage_at_risk_10: f64,
    /// Draws where the AUROC is above the confidence alone's (0 for the
    /// confidence itself).
    pub raised_auroc: usize,
}

/// One draw of simulated ratings, as the probe reads it.
pub(super) struct Drawn {
    /// The ratings (question, up).
    pub votes: Vec<(usize, bool)>,
    /// The documents' history all the draw's ratings made.
    pub history: HashMap<String, f32>,
    /// The held-out questions with an answer step, each with the
    /// confidence refitted on all the draw's ratings (without the
    /// document history).
    pub scored: Vec<(usize, f64)>,
    /// The same questions scored as GRACE refits: with it.
    pub with_history: Vec<(usize, f64)>,
}

/// Runs the probe on `draws` (a rated question is near at cosine
/// `similarity`); `None` when no draw holds out a question with an answer
/// step.
pub(super) fn probe(
    collected: &Collected,
    similarity: f32,
    draws: &[Drawn],
) -> Option<FactorProbe> {
    let per_draw: Vec<(Counts, [Single; 6])> = draws
        .iter()
        .filter(|d| !d.scored.is_empty())
        .map(|d| one_draw(collected, similarity, d))
        .collect();
    if per_draw.is_empty() {
        return None;
    }
    let n = per_draw.len() as f64;
    let mean =
        |f: &dyn Fn(&Counts) -> usize| per_draw.iter().map(|(c, _)| f(c) as f64).sum::<f64>() / n;
    // Combination `k`, its AUROC compared per draw with `base`'s.
    let combined = |k: usize, base: Option<usize>| {
        let singles: Vec<&Single> = per_draw.iter().map(|(_, s)| &s[k]).collect();
        let defined_mean = |f: &dyn Fn(&Single) -> Option<f64>| {
            let values: Vec<f64> = singles.iter().filter_map(|s| f(s)).collect();
            (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
        };
        ProbeFare {
            auroc: defined_mean(&|s| s.auroc),
            auroc_in_domain: defined_mean(&|s| s.auroc_in_domain),
            coverage_at_risk_10: singles.iter().map(|s| s.coverage).sum::<f64>() / n,
            raised_auroc: base.map_or(0, |b| {
                per_draw
                    .iter()
                    .filter(
                        |(_, s)| matches!((s[k].auroc, s[b].auroc), (Some(a), Some(b)) if a > b),
                    )
                    .count()
            }),
        }
    };
    Some(FactorProbe {
        draws: per_draw.len(),
        questions: mean(&|c| c.questions),
        with_rated_neighbours: mean(&|c| c.neighbours),
        with_rated_documents: mean(&|c| c.documents),
        similarity: f64::from(similarity),
        confidence: combined(0, None),
        nearest_rated: combined(1, Some(0)),
        document_history: combined(2, Some(0)),
        both: combined(3, Some(0)),
        refit: combined(4, None),
        refit_with_history: combined(5, Some(4)),
    })
}

/// One draw's counts.
struct Counts {
    questions: usize,
    neighbours: usize,
    documents: usize,
}

/// One draw's out-of-fold figures for one combination.
struct Single {
    auroc: Option<f64>,
    auroc_in_domain: Option<f64>,
    coverage: f64,
}

/// The scores of `scored`, in order.
fn own(scored: &[(usize, f64)]) -> Vec<f64> {
    scored.iter().map(|(_, s)| *s).collect()
}

/// One draw: its counts, and the confidence alone, with the nearest rated
/// questions, with the documents' history and with both.
fn one_draw(collected: &Collected, similarity: f32, draw: &Drawn) -> (Counts, [Single; 6]) {
    let outcomes = &collected.outcomes;
    let (votes, history) = (&draw.votes, &draw.history);
    let mut counts = Counts {
        questions: draw.scored.len(),
        neighbours: 0,
        documents: 0,
    };
    // (logit of the confidence, nearest rated, document history).
    let rows: Vec<[f64; 3]> = draw
        .scored
        .iter()
        .map(|&(i, confidence)| {
            let near = nearest_rated(&collected.vectors, votes, i, similarity);
            counts.neighbours += usize::from(near.is_some());
            let doc = document_history_factor(&collected.cited[i], history);
            counts.documents += usize::from(doc.is_some());
            let p = confidence.clamp(1e-4, 1.0 - 1e-4);
            [
                (p / (1.0 - p)).ln(),
                near.unwrap_or(0.0),
                doc.unwrap_or(0.0),
            ]
        })
        .collect();
    let fare = |use_near: bool, use_doc: bool| {
        let samples: Vec<Sample> = rows
            .iter()
            .zip(&draw.scored)
            .map(|(f, &(i, _))| {
                let mut x = [0.0; FEATURES];
                x[0] = f[0];
                x[1] = if use_near { f[1] } else { 0.0 };
                x[2] = if use_doc { f[2] } else { 0.0 };
                Sample {
                    x,
                    y: outcomes[i].right,
                }
            })
            .collect();
        let scores = cross_validate(&samples, FOLDS).out_of_fold;
        single(collected, &draw.scored, &scores)
    };
    (
        counts,
        [
            fare(false, false),
            fare(true, false),
            fare(false, true),
            fare(true, true),
            single(collected, &draw.scored, &own(&draw.scored)),
            single(collected, &draw.with_history, &own(&draw.with_history)),
        ],
    )
}

/// `Σ c·(±1) / (Σ c + 1)` over the [`NEAREST`] rated questions (`votes`:
/// each with whether it was rated up) nearest to question `i` at a cosine
/// `c` of at least `similarity` (`vectors`: the questions' unit
/// embeddings); `None` when none is that near.
fn nearest_rated(
    vectors: &[Vec<f32>],
    votes: &[(usize, bool)],
    i: usize,
    similarity: f32,
) -> Option<f64> {
    let mut near: Vec<(f32, bool)> = votes
        .iter()
        .filter(|(j, _)| *j != i)
        .map(|&(j, up)| (dot(&vectors[i], &vectors[j]), up))
        // A model card may put the threshold below 0: a cosine at or below
        // 0 is never near (and never weighs negatively).
        .filter(|(c, _)| *c >= similarity && *c > 0.0)
        .collect();
    if near.is_empty() {
        return None;
    }
    near.sort_by(|a, b| b.0.total_cmp(&a.0));
    near.truncate(NEAREST);
    let signed: f64 = near
        .iter()
        .map(|(c, up)| f64::from(*c) * if *up { 1.0 } else { -1.0 })
        .sum();
    let total: f64 = near.iter().map(|(c, _)| f64::from(*c)).sum();
    Some(signed / (total + 1.0))
}

/// The out-of-fold `scores` (parallel to `scored`) as one draw's figures.
fn single(collected: &Collected, scored: &[(usize, f64)], scores: &[f64]) -> Single {
    let outcomes = &collected.outcomes;
    let questions = &collected.questions;
    let right: Vec<(f64, bool)> = scored
        .iter()
        .zip(scores)
        .map(|(&(i, _), &s)| (s, outcomes[i].right))
        .collect();
    let in_domain: Vec<(f64, bool)> = scored
        .iter()
        .zip(scores)
        .map(|(&(i, _), &s)| (s, &questions[outcomes[i].index]))
        .filter(|(_, q)| q.answerable || q.in_domain())
        .map(|(s, q)| (s, q.answerable))
        .collect();
    Single {
        auroc: metrics::auroc(&right),
        auroc_in_domain: metrics::auroc(&in_domain),
        coverage: coverage_at_risk(&right, RISK),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nearest_rated_questions_weigh_by_cosine_and_only_when_near() {
        // Question 0 and three rated ones: two near (one up, one down),
        // one far.
        let vectors = vec![
            vec![1.0, 0.0],
            vec![0.8, 0.6],
            vec![0.6, 0.8],
            vec![0.0, 1.0],
        ];
        let votes = [(1, true), (2, false), (3, true)];
        let near = nearest_rated(&vectors, &votes, 0, 0.5).unwrap();
        // (0.8 − 0.6) / (0.8 + 0.6 + 1)
        assert!((near - 0.2 / 2.4).abs() < 1e-6, "{near}");
        // Nothing near enough: no value, not a zero that means "even".
        assert_eq!(nearest_rated(&vectors, &votes, 0, 0.9), None);
        // A question's own rating is not its neighbour's.
        assert_eq!(nearest_rated(&vectors, &[(0, false)], 0, 0.0), None);
        // At most NEAREST neighbours count, the nearest first.
        let mut many = vec![vec![1.0, 0.0]];
        let mut votes = Vec::new();
        for k in 0..NEAREST + 5 {
            many.push(vec![1.0, 0.0]);
            votes.push((k + 1, k < NEAREST));
        }
        let all_up = nearest_rated(&many, &votes, 0, 0.5).unwrap();
        assert!((all_up - NEAREST as f64 / (NEAREST as f64 + 1.0)).abs() < 1e-6);
    }
}
