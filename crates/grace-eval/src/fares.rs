//! The final answers scored by each confidence model side by side, with
//! their coverage/risk curves.

use serde::Serialize;

use super::outcomes::{Collected, Outcome};
use grace::confidence::calibration::Calibration;
use grace::confidence::fit::{self, Fare, Model, Sample, features};
use grace::confidence::{metrics, score, v1};
use grace::config::Config;

/// Draws of [`metrics::ece_floor`]: its percentiles move by about 0.002
/// from seed to seed at this count.
const ECE_FLOOR_DRAWS: usize = 2_000;

/// One confidence model's scores of the final answers, against "right".
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelFare {
    /// `hand_set`, `defaults`, `grace_v1`, `self_calibrated` or `fitted`.
    pub model: String,
    /// How its figures were obtained.
    pub note: String,
    /// ECE, Brier, AUROC, log loss.
    pub fare: Fare,
    /// The ECE a perfectly calibrated model with these scores would show
    /// by chance on this many questions ([`metrics::ece_floor`]): an ECE
    /// above its `p95` is miscalibration, below it noise.
    pub ece_floor: Option<metrics::EceFloor>,
    /// Share answered and share of those wrong, per threshold.
    pub coverage_risk: Vec<CoverageRisk>,
    /// Predicted against observed right, per tenth of the score (the
    /// reliability diagram; `--plot` draws it).
    pub reliability: Vec<metrics::ReliabilityBin>,
}

/// One point of a coverage/risk curve: answering every question scoring at
/// least `threshold`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CoverageRisk {
    /// The score threshold.
    pub threshold: f64,
    /// Share of all questions answered.
    pub coverage: f64,
    /// Share of the answered ones that are wrong (0 when none are answered).
    pub risk: f64,
}

/// The risk "coverage at risk" is read at: at most one answer in ten wrong.
pub const RISK: f64 = 0.10;

/// The largest share of `pairs` answered with at most `risk` of the
/// answers wrong, over [`coverage_risk`]'s thresholds.
pub fn coverage_at_risk(pairs: &[(f64, bool)], risk: f64) -> f64 {
    coverage_risk(pairs)
        .into_iter()
        .filter(|c| c.risk <= risk + 1e-12)
        .map(|c| c.coverage)
        .fold(0.0, f64::max)
}

/// The coverage/risk curve of `(score, right)` pairs at thresholds 0, 0.05,
/// …, 1.
pub fn coverage_risk(pairs: &[(f64, bool)]) -> Vec<CoverageRisk> {
    (0..=20)
        .map(|i| {
            let threshold = f64::from(i) / 20.0;
            let kept: Vec<bool> = pairs
                .iter()
                .filter(|(s, _)| *s >= threshold - 1e-12)
                .map(|p| p.1)
                .collect();
            let wrong = kept.iter().filter(|r| !**r).count();
            CoverageRisk {
                threshold,
                coverage: kept.len() as f64 / pairs.len().max(1) as f64,
                risk: if kept.is_empty() {
                    0.0
                } else {
                    wrong as f64 / kept.len() as f64
                },
            }
        })
        .collect()
}

/// The final answers scored by each confidence model: the hand-set
/// weights GRACE first shipped, the configured weights (the shipped
/// defaults unless configured), the original GRACE formula, the
/// self-calibration when the run made one, and the calibration when one
/// is configured (out of fold when it was fitted on this set).
pub fn models(
    config: &Config,
    collected: &Collected,
    calibration: Option<&Calibration>,
    same_set: bool,
) -> Vec<ModelFare> {
    let outcomes = &collected.outcomes;
    let answered_score = |o: &Outcome, s: f64| if o.factors.0.is_empty() { 0.0 } else { s };
    let entry = |model: &str, note: String, scores: Vec<f64>| {
        let pairs: Vec<(f64, bool)> = scores
            .iter()
            .zip(outcomes)
            .map(|(&s, o)| (s, o.right))
            .collect();
        ModelFare {
            model: model.to_string(),
            note,
            fare: Fare::of(&pairs),
            ece_floor: metrics::ece_floor(&scores, metrics::ECE_BINS, ECE_FLOOR_DRAWS, 1),
            coverage_risk: coverage_risk(&pairs),
            reliability: metrics::reliability(&pairs, metrics::ECE_BINS),
        }
    };
    let scored = |weights: &grace::config::Weights| -> Vec<f64> {
        outcomes
            .iter()
            .map(|o| answered_score(o, score(&o.factors, weights).score))
            .collect()
    };
    let mut out = Vec::new();
    if let Some(hand_set) = grace::confidence::hand_set_weights() {
        out.push(entry(
            "hand_set",
            "the weights GRACE first shipped, set by hand (config/hand-set-weights.yml)".into(),
            scored(&hand_set),
        ));
    }
    out.extend([
        entry(
            "defaults",
            "confidence.weights (the shipped defaults unless configured)".into(),
            scored(&config.confidence.weights),
        ),
        entry(
            "grace_v1",
            "the original GRACE formula (confidence.grace_v1)".into(),
            outcomes
                .iter()
                .map(|o| {
                    answered_score(o, v1::score(&o.factors, &config.confidence.grace_v1).score)
                })
                .collect(),
        ),
    ]);
    if let Some(c) = &collected.self_fit {
        out.push(entry(
            "self_calibrated",
            format!(
                "fitted on {} questions built from this corpus (never its questions.jsonl)",
                c.fitted_on.questions
            ),
            scored(&c.weights),
        ));
    }
    if let Some(c) = calibration {
        let samples: Vec<Sample> = outcomes
            .iter()
            .map(|o| Sample {
                x: features(&o.factors),
                y: o.right,
            })
            .collect();
        let (note, scores) = if same_set {
            let fold = fit::folds(&samples, c.folds);
            (
                format!(
                    "fitted on this set: cross-validated, {} folds, L2 {}",
                    c.folds, c.l2
                ),
                fit::out_of_fold(&samples, &fold, c.folds, c.l2),
            )
        } else {
            let model = Model::from_weights(&c.weights);
            (
                format!("fitted on {}", c.fitted_on.set.display()),
                samples.iter().map(|s| model.predict(&s.x)).collect(),
            )
        };
        let scores = scores
            .into_iter()
            .zip(outcomes)
            .map(|(s, o)| answered_score(o, s))
            .collect();
        out.push(entry("fitted", note, scores));
    }
    out
}
