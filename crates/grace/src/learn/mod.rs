//! Learning from the people who use GRACE: askers' ratings and reviewers'
//! verdicts become labels, and the confidence weights are fitted on them,
//! starting from the fit GRACE has (the shipped defaults, a calibration or
//! a self-calibration) and moving away from it as labels accumulate.
//!
//! - A label is a recorded run's factors as they were scored, and whether
//!   its answer was right: rated up, or judged right by a reviewer.
//! - A reviewer's verdict weighs [`REVIEWER_WEIGHT`] ratings; "partly
//!   right" is not right, at half that weight.
//! - Each asker's labels weigh at most [`ASKER_CAP`] in all, so that one
//!   person (or one script) cannot swing the fit.
//! - The fit is L2-regularised toward the prior with strength
//!   [`PRIOR_L2`] ([`fit_toward`]): with no labels it is the prior. The
//!   weights of factors only feedback makes ([`FEEDBACK_ONLY`]) are pulled
//!   less ([`FEEDBACK_FACTOR_L2`]): the prior knows nothing of them.
//! - Its figures are out of fold (stratified, [`FOLDS`] folds): how the
//!   refitted weights do on labels they were not fitted on, beside the
//!   prior's on the same labels and the ECE a perfectly calibrated score
//!   would show by chance.

pub mod auto;

use std::collections::BTreeMap;

use serde::Serialize;

use crate::confidence::Factor;
use crate::confidence::calibration::{Calibration, FittedOn};
use crate::confidence::fit::{
    FEATURES, Fare, Model, PARAMETERS, Sample, features, fit_toward, folds, scored,
};
use crate::confidence::metrics::{self, EceFloor};
use crate::config::Weights;
use crate::error::Result;
use crate::feedback::{FeedbackStore, Vote};
use crate::review::{ReviewQueue, Verdict, Viewer};

/// A reviewer's verdict counts as this many askers' ratings.
pub const REVIEWER_WEIGHT: f64 = 3.0;
/// One asker's labels weigh at most this much in all.
pub const ASKER_CAP: f64 = 20.0;
/// Strength of the pull toward the prior on each parameter but those of
/// [`FEEDBACK_ONLY`] (`Σ l2ⱼ/2·(θⱼ − θ_priorⱼ)²`, [`pulls`]): about the
/// weight of labels it takes to move a parameter halfway.
pub const PRIOR_L2: f64 = 10.0;
/// The pull on the weights of factors only feedback makes
/// ([`FEEDBACK_ONLY`]): the prior holds them at 0 for want of data, not
/// because anything was fitted, so its pull is weaker. Prototyped on the
/// questions' dumps of seven evaluation sets (means of 20 draws each of
/// 25, 50 and 100 simulated ratings): at [`PRIOR_L2`] the weight barely
/// moved; at 1 the mean held-out AUROC rose or held on every set and
/// count (single draws do fall: the book's calibration chapter).
pub const FEEDBACK_FACTOR_L2: f64 = 1.0;
/// Factors only people's ratings make: no self-calibration or shipped
/// fit can weigh them.
pub const FEEDBACK_ONLY: [Factor; 1] = [Factor::DocumentHistory];

/// The pull toward the prior on each parameter (the bias first).
pub fn pulls() -> [f64; PARAMETERS] {
    let mut l2 = [PRIOR_L2; PARAMETERS];
    for (j, factor) in Factor::ALL.iter().enumerate() {
        if FEEDBACK_ONLY.contains(factor) {
            l2[j + 1] = FEEDBACK_FACTOR_L2;
        }
    }
    l2
}
/// Cross-validation folds for the out-of-fold figures.
pub const FOLDS: usize = 5;
/// Draws of the chance band of the ECE.
const ECE_FLOOR_DRAWS: usize = 2_000;

/// One label: what a run was scored on, and whether it was right.
#[derive(Debug, Clone, PartialEq)]
pub struct Label {
    /// The features of the answer's factors ([`features`]).
    pub x: [f64; FEATURES],
    /// Rated up, or judged right.
    pub y: bool,
    /// The run's confidence as GRACE gave it (what the reliability
    /// diagram sets against `y`).
    pub confidence: f64,
    /// How much it counts (a verdict more than a rating; capped per asker).
    pub weight: f64,
    /// Who gave it: an asker, or `reviewer:<id>`.
    pub by: String,
}

/// Weights fitted on labels, with how they fare out of fold.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LearnedFit {
    /// The fitted bias and weights.
    pub weights: Weights,
    /// Labels fitted on.
    pub labels: usize,
    /// Distinct askers and reviewers who gave them.
    pub givers: usize,
    /// The refitted weights on labels they were not fitted on.
    pub out_of_fold: Fare,
    /// The ECE a perfectly calibrated score would show by chance on these
    /// labels: an ECE above its `p95` is miscalibration.
    pub ece_floor: Option<EceFloor>,
    /// The prior's weights on the same labels.
    pub prior: Fare,
}

/// Caps each giver's labels at [`ASKER_CAP`] of weight in all (scaled
/// down together).
pub fn cap_givers(labels: &mut [Label]) {
    let mut totals: BTreeMap<String, f64> = BTreeMap::new();
    for l in labels.iter() {
        *totals.entry(l.by.clone()).or_default() += l.weight;
    }
    for l in labels.iter_mut() {
        let total = totals.get(&l.by).copied().unwrap_or(0.0);
        if total > ASKER_CAP {
            l.weight *= ASKER_CAP / total;
        }
    }
}

/// The weights fitted on `labels` toward `prior` (see the module).
pub fn fit_weights(labels: &[Label], prior: &Weights) -> Weights {
    let (samples, weights) = samples(labels);
    fit_toward(&samples, &weights, &Model::from_weights(prior), &pulls()).weights()
}

/// Fits weights on `labels` toward `prior` (see the module), with the
/// out-of-fold figures.
pub fn fit(labels: &[Label], prior: &Weights) -> LearnedFit {
    let prior_model = Model::from_weights(prior);
    let (samples, weights) = samples(labels);
    let model = fit_toward(&samples, &weights, &prior_model, &pulls());
    let scores = out_of_fold(&samples, &weights, &prior_model);
    let prior_scores: Vec<f64> = samples.iter().map(|s| prior_model.predict(&s.x)).collect();
    let givers: std::collections::BTreeSet<&str> = labels.iter().map(|l| l.by.as_str()).collect();
    LearnedFit {
        weights: model.weights(),
        labels: labels.len(),
        givers: givers.len(),
        out_of_fold: Fare::of(&scored(&scores, &samples)),
        ece_floor: metrics::ece_floor(&scores, metrics::ECE_BINS, ECE_FLOOR_DRAWS, 1),
        prior: Fare::of(&scored(&prior_scores, &samples)),
    }
}

/// The labels as the fit reads them: samples, and each one's weight.
fn samples(labels: &[Label]) -> (Vec<Sample>, Vec<f64>) {
    labels
        .iter()
        .map(|l| (Sample { x: l.x, y: l.y }, l.weight))
        .unzip()
}

/// `learned` as a calibration file's contents (`confidence.calibration`):
/// fitted on the labels in `feedback_file`, for `config`'s collection and
/// generator and the embedding model `embedding_model`.
pub fn calibration(
    learned: &LearnedFit,
    config: &crate::config::Config,
    embedding_model: &str,
    feedback_file: &std::path::Path,
) -> Calibration {
    Calibration {
        version: crate::confidence::calibration::VERSION,
        created: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        fitted_on: FittedOn {
            set: feedback_file.to_path_buf(),
            questions: learned.labels,
            // Not a question set: never mistaken for one by `grace eval`.
            questions_sha256: String::new(),
            collection: config.collection.name.clone(),
            embedding_model: embedding_model.to_string(),
            generator: config.llm.provider.as_str().to_string(),
            sources: Vec::new(),
        },
        weights: learned.weights,
        l2: PRIOR_L2,
        folds: FOLDS,
        fold_figures: Vec::new(),
        cross_validated: learned.out_of_fold.clone(),
        hand_set: learned.prior.clone(),
        self_calibration: None,
    }
}

/// Each sample scored by weights fitted (toward the prior) on the other
/// folds; the prior's scores when there are too few of a class to fold.
fn out_of_fold(samples: &[Sample], weights: &[f64], prior: &Model) -> Vec<f64> {
    let positives = samples.iter().filter(|s| s.y).count();
    let k = FOLDS.min(positives).min(samples.len() - positives);
    if k < 2 {
        return samples.iter().map(|s| prior.predict(&s.x)).collect();
    }
    let fold = folds(samples, k);
    let mut scores = vec![0.0; samples.len()];
    for f in 0..k {
        let (train, train_weights): (Vec<Sample>, Vec<f64>) = samples
            .iter()
            .zip(weights)
            .zip(&fold)
            .filter(|(_, g)| **g != f)
            .map(|((s, w), _)| (s.clone(), *w))
            .unzip();
        let model = fit_toward(&train, &train_weights, prior, &pulls());
        for (i, s) in samples.iter().enumerate() {
            if fold[i] == f {
                scores[i] = model.predict(&s.x);
            }
        }
    }
    scores
}

/// The labels people gave: every rated run's asker rating, and every
/// escalated run's reviewer verdict (from the review queue), capped per
/// giver. Runs recorded without an answer step's factors are passed over.
pub fn labels(feedback: &FeedbackStore, queue: &ReviewQueue) -> Result<Vec<Label>> {
    let mut out = Vec::new();
    for l in feedback.labelled()? {
        let Some(factors) = &l.run.factors else {
            continue;
        };
        let x = features(factors);
        // The reviewer's verdict on the run's draft, and who gave it.
        let judged = match l.review_id {
            Some(id) => resolution(queue, id)?.and_then(|r| r.verdict.map(|v| (v, r.decided_by))),
            None => None,
        };
        if let Some(rating) = &l.rating {
            let up = rating.vote == Vote::Up;
            // A person who checked the answer outranks the asker's vote.
            let contradicted = judged
                .as_ref()
                .is_some_and(|(v, _)| up != (*v == Verdict::Right));
            if !contradicted {
                out.push(Label {
                    x,
                    y: up,
                    confidence: l.run.confidence,
                    weight: 1.0,
                    by: l.asker.clone(),
                });
            }
        }
        let Some((verdict, by)) = judged else {
            continue;
        };
        let (y, weight) = match verdict {
            Verdict::Right => (true, REVIEWER_WEIGHT),
            Verdict::PartlyRight => (false, REVIEWER_WEIGHT / 2.0),
            Verdict::Wrong => (false, REVIEWER_WEIGHT),
        };
        out.push(Label {
            x,
            y,
            confidence: l.run.confidence,
            weight,
            by,
        });
    }
    cap_givers(&mut out);
    Ok(out)
}

/// The reliability diagram of the confidence GRACE gave against what
/// people said: per tenth of confidence, how many labels, the mean
/// confidence and the share right ([`metrics::reliability`], the ECE's
/// bins). Each label counts once, whatever its weight in the fit.
pub fn reliability(labels: &[Label]) -> Vec<metrics::ReliabilityBin> {
    let pairs: Vec<(f64, bool)> = labels.iter().map(|l| (l.confidence, l.y)).collect();
    metrics::reliability(&pairs, metrics::ECE_BINS)
}

/// How escalation `id` was resolved (`None` while open, and when it was
/// purged from the queue).
fn resolution(queue: &ReviewQueue, id: i64) -> Result<Option<crate::review::Resolution>> {
    match queue.get(id, Viewer::Admin) {
        Ok(e) => Ok(e.resolution),
        // Purged from the queue: no verdict to read.
        Err(crate::review::ReviewError::NotFound { .. }) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn label(x0: f64, y: bool, by: &str) -> Label {
        let mut x = [0.0; FEATURES];
        x[0] = x0;
        Label {
            x,
            y,
            confidence: 0.5,
            weight: 1.0,
            by: by.into(),
        }
    }

    #[test]
    fn a_factor_only_feedback_makes_is_pulled_less_than_a_fitted_one() {
        let l2 = pulls();
        let slot = |f: Factor| 1 + Factor::ALL.iter().position(|g| *g == f).unwrap();
        assert_eq!(l2[0], PRIOR_L2);
        assert_eq!(l2[slot(Factor::DocumentHistory)], FEEDBACK_FACTOR_L2);
        assert_eq!(l2[slot(Factor::MaxScore)], PRIOR_L2);
        // The same evidence on a fitted factor and on the document history:
        // 40 labels, right exactly when the feature is negative.
        let moved = |f: Factor| {
            let labels: Vec<Label> = (0..40)
                .map(|i| {
                    let v = if i % 2 == 0 { -0.5 } else { 0.5 };
                    let mut l = label(0.0, v < 0.0, &format!("asker{i}"));
                    l.x[slot(f) - 1] = v;
                    l
                })
                .collect();
            let prior = Weights {
                max_score: 0.0,
                ..Weights::default()
            };
            let fitted = fit_weights(&labels, &prior);
            f.weight(&fitted) - f.weight(&prior)
        };
        let (history, max_score) = (moved(Factor::DocumentHistory), moved(Factor::MaxScore));
        assert!(history < 0.0 && max_score < 0.0, "{history} {max_score}");
        assert!(history < 2.0 * max_score, "{history} vs {max_score}");
    }

    #[test]
    fn one_giver_cannot_outweigh_the_cap() {
        let mut labels: Vec<Label> = (0..50).map(|_| label(0.0, false, "flood")).collect();
        labels.push(label(0.0, true, "alice"));
        cap_givers(&mut labels);
        let flood: f64 = labels
            .iter()
            .filter(|l| l.by == "flood")
            .map(|l| l.weight)
            .sum();
        assert!((flood - ASKER_CAP).abs() < 1e-9, "{flood}");
        assert_eq!(labels.last().unwrap().weight, 1.0);
    }

    #[test]
    fn labels_that_separate_move_the_fit_and_are_scored_out_of_fold() {
        let prior = Weights::default();
        let labels: Vec<Label> = (0..80)
            .map(|i| {
                let right = i % 2 == 0;
                label(if right { 1.0 } else { -1.0 }, right, &format!("asker{i}"))
            })
            .collect();
        let learned = fit(&labels, &prior);
        assert_eq!(learned.labels, 80);
        assert_eq!(learned.givers, 80);
        assert_eq!(learned.out_of_fold.n, 80);
        assert!(learned.out_of_fold.auroc.unwrap() > 0.99);
        let first = crate::confidence::Factor::ALL[0];
        assert!(first.weight(&learned.weights) > first.weight(&prior) + 0.5);
        // Without labels: the prior.
        let none = fit(&[], &prior);
        assert_eq!(none.weights, Model::from_weights(&prior).weights());
    }
}
