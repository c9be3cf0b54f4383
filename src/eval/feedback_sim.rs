//! Learning from feedback, measured without people (`grace eval DIR
//! --feedback N`): a seeded sample of N of the set's questions is rated
//! from its labels (answerable with a gold source cited: up; otherwise
//! down; a share of the ratings flipped), the weights are refitted on the
//! first 0, 25, 50, 100 and 200 of them ([`crate::learn`], as `grace
//! calibrate --from-feedback` fits people's), and each fit is scored on
//! the questions not sampled: the learning curve. With a flood, one more
//! asker gives that many false ratings (each a sampled question rated the
//! wrong way) alongside every fit: the per-asker cap is what holds them.

use serde::Serialize;

use super::FeedbackSim;
use super::boost_probe::BoostProbe;
use super::fares::coverage_at_risk;
use super::feedback_factors::{self, FactorProbe};
use super::outcomes::Collected;
use super::sample::{Sample, sample, simulated_asker};
use crate::confidence::fit::{FEATURES, Fare, Model, features};
use crate::confidence::metrics::{self, EceFloor};
use crate::config::Config;
use crate::learn::{self, Label};
use crate::rng::Rng;

/// The curve's points: labels fitted on (as many as the sample allows).
pub const CURVE_LABELS: [usize; 5] = [0, 25, 50, 100, 200];
/// The risk "coverage at risk" is read at.
pub use super::fares::RISK;
/// Draws of the chance band of the ECE.
const ECE_FLOOR_DRAWS: usize = 2_000;

/// How the simulated ratings were drawn, and the learning curve.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FeedbackCurve {
    /// Questions rated (the sample).
    pub ratings: usize,
    /// The sampling seed.
    pub seed: u64,
    /// Share of ratings flipped.
    pub noise: f64,
    /// Ratings flipped, in the sample.
    pub flipped: usize,
    /// False ratings from one more asker, fitted with every point but the
    /// first.
    pub flood: usize,
    /// Questions the fits are scored on (those not sampled).
    pub held_out: usize,
    /// One point per label count.
    pub curve: Vec<CurvePoint>,
    /// What the curve is measured against: a labelled fit on the whole
    /// set, out of fold ([`reference`]), on the same held-out questions;
    /// its `labels` are the set's questions with an answer step.
    pub reference: CurvePoint,
    /// The document boost's effect on the ranking, when measured
    /// (`--document-boost`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub document_boost: Option<BoostProbe>,
    /// The factors only feedback makes possible, each with the refitted
    /// confidence, out of fold on the held-out questions with an answer
    /// step ([`feedback_factors`]); `None` without such questions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub factors: Option<FactorProbe>,
}

/// The refitted weights on the held-out questions, after `labels` ratings.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CurvePoint {
    /// Ratings fitted on (0: the weights the questions were asked with).
    pub labels: usize,
    /// ECE, Brier, AUROC and log loss of "right", as in `models[]`.
    pub fare: Fare,
    /// The ECE a perfectly calibrated score would show by chance here.
    pub ece_floor: Option<EceFloor>,
    /// AUROC of answerable against in-domain unanswerable questions.
    pub auroc_in_domain: Option<f64>,
    /// The largest share of the held-out questions answered with at most
    /// [`RISK`] of the answers wrong (over the thresholds 0, 0.05, …, 1).
    pub coverage_at_risk_10: f64,
    /// Share answered at `confidence.thresholds.notify`.
    pub answered: f64,
    /// Of those, the share right (`None` when none is answered).
    pub right_among_answered: Option<f64>,
    /// Share of the unanswerable questions answered.
    pub unanswerable_answered: f64,
}

/// Simulates `sim.ratings` ratings of the collected outcomes (seeded by
/// `sim.seed`, a share `sim.noise` flipped, a flood of `sim.flood`) and
/// returns the learning curve, with the feedback-only factors measured
/// on [`FACTOR_DRAWS`] draws (a rated question counts as near at cosine
/// `near`); `None` when the set has too few questions to hold any out.
pub fn simulate(
    config: &Config,
    collected: &Collected,
    sim: &FeedbackSim,
    near: f32,
) -> Option<FeedbackCurve> {
    let FeedbackSim {
        ratings,
        seed,
        noise,
        ..
    } = *sim;
    let first = Draw::new(collected, sim, seed)?;
    let prior = *config.confidence.effective_weights();
    let mut points: Vec<usize> = CURVE_LABELS.into_iter().filter(|&n| n <= ratings).collect();
    if !points.contains(&ratings) {
        points.push(ratings);
    }
    // The held-out questions' scores after all the ratings, kept for the
    // factors' first draw (the curve's last point fits them).
    let mut last: Vec<(usize, Option<f64>)> = Vec::new();
    let curve = points
        .into_iter()
        .map(|n| {
            let after = first.scored_after(n, &prior);
            let scored: Vec<(usize, f64)> =
                after.iter().map(|&(i, s)| (i, s.unwrap_or(0.0))).collect();
            if n == ratings {
                last = after;
            }
            point(config, collected, &scored, n)
        })
        .collect();
    // The factors on FACTOR_DRAWS draws (the first is the curve's), each
    // after all its ratings: one draw holds out too few questions to tell.
    let answered = |after: Vec<(usize, Option<f64>)>| -> Vec<(usize, f64)> {
        after
            .into_iter()
            .filter_map(|(i, s)| Some((i, s?)))
            .collect()
    };
    let factors = if collected.vectors.len() == collected.outcomes.len() {
        let mut draws = vec![feedback_factors::Drawn {
            rated: first.rated.clone(),
            scored: answered(last),
        }];
        draws.extend((1..FACTOR_DRAWS).filter_map(|d| {
            let draw = Draw::new(collected, sim, seed.wrapping_add(d))?;
            let scored = answered(draw.scored_after(ratings, &prior));
            Some(feedback_factors::Drawn {
                rated: draw.rated,
                scored,
            })
        }));
        feedback_factors::probe(collected, near, &draws)
    } else {
        None
    };
    Some(FeedbackCurve {
        ratings,
        seed,
        noise,
        flipped: first.rated.iter().filter(|(_, flip)| *flip).count(),
        flood: first.false_ratings.len(),
        held_out: first.held.len(),
        curve,
        reference: reference(config, collected, &first.held_out(), &prior, seed),
        document_boost: collected.document_boost.clone(),
        factors,
    })
}

/// Draws of simulated ratings the feedback-only factors are measured on.
pub const FACTOR_DRAWS: u64 = 20;

/// One draw of simulated ratings: who rated what, and the questions held
/// out.
struct Draw {
    /// The rated questions, each with whether its rating is flipped.
    rated: Vec<(usize, bool)>,
    /// Their labels, in the same order.
    labels: Vec<Label>,
    /// The flood's false ratings.
    false_ratings: Vec<Label>,
    /// The held-out questions, each with its features; a question
    /// without an answer step has none (it was not answered, and scores
    /// 0 on the curve).
    held: Vec<(usize, Option<[f64; FEATURES]>)>,
}

impl Draw {
    /// Draws `sim`'s ratings from `seed`; `None` when none would be held
    /// out.
    fn new(collected: &Collected, sim: &FeedbackSim, seed: u64) -> Option<Self> {
        let outcomes = &collected.outcomes;
        let mut rng = Rng::new(seed);
        let Sample { rated, held_out } = sample(&mut rng, outcomes.len(), sim.ratings, sim.noise)?;
        let label = |i: usize, y: bool, by: String| Label {
            x: features(&outcomes[i].factors),
            y,
            confidence: outcomes[i].confidence,
            weight: 1.0,
            by,
        };
        let labels: Vec<Label> = rated
            .iter()
            .map(|&(i, flip)| label(i, outcomes[i].right != flip, simulated_asker(i)))
            .collect();
        let false_ratings: Vec<Label> = (0..sim.flood)
            .filter_map(|_| {
                let &(i, _) = rated.get(rng.below(rated.len().max(1)))?;
                Some(label(i, !outcomes[i].right, "flood".into()))
            })
            .collect();
        let held = held_out
            .iter()
            .map(|&i| {
                let factors = &outcomes[i].factors;
                (i, (!factors.0.is_empty()).then(|| features(factors)))
            })
            .collect();
        Some(Self {
            rated,
            labels,
            false_ratings,
            held,
        })
    }

    /// The held-out questions' indices.
    fn held_out(&self) -> Vec<usize> {
        self.held.iter().map(|(i, _)| *i).collect()
    }

    /// The held-out questions scored by the weights refitted (toward
    /// `prior`) on the first `n` ratings and, past none, the flood; `None`
    /// for a question without an answer step.
    fn scored_after(&self, n: usize, prior: &crate::config::Weights) -> Vec<(usize, Option<f64>)> {
        let mut fitted = self.labels[..n].to_vec();
        if n > 0 {
            fitted.extend(self.false_ratings.iter().cloned());
        }
        learn::cap_givers(&mut fitted);
        let model = Model::from_weights(&learn::fit_weights(&fitted, prior));
        self.held
            .iter()
            .map(|(i, x)| (*i, x.as_ref().map(|x| model.predict(x))))
            .collect()
    }
}

/// Folds of the whole-set reference fit.
const REFERENCE_FOLDS: usize = 5;

/// A labelled fit on the whole set, out of fold: the set's questions with
/// an answer step, each labelled as it truly is (no noise, no flood), in
/// [`REFERENCE_FOLDS`] seeded folds; each `held_out` question is scored by
/// weights fitted (toward `prior`, as people's labels are) on the folds it
/// is not in. What learning from people is measured against: as good as
/// labelling every question.
fn reference(
    config: &Config,
    collected: &Collected,
    held_out: &[usize],
    prior: &crate::config::Weights,
    seed: u64,
) -> CurvePoint {
    let outcomes = &collected.outcomes;
    let mut order: Vec<usize> = (0..outcomes.len()).collect();
    Rng::new(seed ^ 0x5eed_f01d).shuffle(&mut order);
    let mut fold = vec![0; outcomes.len()];
    for (k, &i) in order.iter().enumerate() {
        fold[i] = k % REFERENCE_FOLDS;
    }
    let labels: Vec<Option<Label>> = outcomes
        .iter()
        .enumerate()
        .map(|(i, o)| {
            (!o.factors.0.is_empty()).then(|| Label {
                x: features(&o.factors),
                y: o.right,
                confidence: o.confidence,
                weight: 1.0,
                by: format!("question-{i}"),
            })
        })
        .collect();
    let models: Vec<Model> = (0..REFERENCE_FOLDS)
        .map(|f| {
            let train: Vec<Label> = (0..outcomes.len())
                .filter(|&i| fold[i] != f)
                .filter_map(|i| labels[i].clone())
                .collect();
            Model::from_weights(&learn::fit_weights(&train, prior))
        })
        .collect();
    let scored: Vec<(usize, f64)> = held_out
        .iter()
        .map(|&i| {
            let score = labels[i]
                .as_ref()
                .map_or(0.0, |l| models[fold[i]].predict(&l.x));
            (i, score)
        })
        .collect();
    let labelled = labels.iter().flatten().count();
    point(config, collected, &scored, labelled)
}

/// The held-out questions' scores (question, score), as a curve point.
fn point(
    config: &Config,
    collected: &Collected,
    scored: &[(usize, f64)],
    labels: usize,
) -> CurvePoint {
    let outcomes = &collected.outcomes;
    let questions = &collected.questions;
    let right: Vec<(f64, bool)> = scored
        .iter()
        .map(|&(i, s)| (s, outcomes[i].right))
        .collect();
    let in_domain: Vec<(f64, bool)> = scored
        .iter()
        .map(|&(i, s)| (s, &questions[outcomes[i].index]))
        .filter(|(_, q)| q.answerable || q.in_domain())
        .map(|(s, q)| (s, q.answerable))
        .collect();
    let scores: Vec<f64> = scored.iter().map(|p| p.1).collect();
    let notify = config.confidence.thresholds.notify;
    let answered: Vec<&(usize, f64)> = scored.iter().filter(|p| p.1 >= notify).collect();
    let unanswerable: Vec<&(usize, f64)> = scored
        .iter()
        .filter(|p| !questions[outcomes[p.0].index].answerable)
        .collect();
    let share = |n: usize, of: usize| if of == 0 { 0.0 } else { n as f64 / of as f64 };
    CurvePoint {
        labels,
        fare: Fare::of(&right),
        ece_floor: metrics::ece_floor(&scores, metrics::ECE_BINS, ECE_FLOOR_DRAWS, 1),
        auroc_in_domain: metrics::auroc(&in_domain),
        coverage_at_risk_10: coverage_at_risk(&right, RISK),
        answered: share(answered.len(), scored.len()),
        right_among_answered: (!answered.is_empty()).then(|| {
            share(
                answered.iter().filter(|p| outcomes[p.0].right).count(),
                answered.len(),
            )
        }),
        unanswerable_answered: share(
            unanswerable.iter().filter(|p| p.1 >= notify).count(),
            unanswerable.len(),
        ),
    }
}
