//! Learning from feedback, measured without people (`grace eval DIR
//! --feedback N`): a seeded sample of N of the set's questions is rated
//! from its labels (answerable with a gold source cited: up; otherwise
//! down; a share of the ratings flipped), the weights are refitted on the
//! first 0, 25, 50, 100 and 200 of them ([`grace::learn`], as `grace
//! calibrate --from-feedback` fits people's), and each fit is scored on
//! the questions not sampled: the learning curve. With a flood, one more
//! asker gives that many false ratings (each a sampled question rated the
//! wrong way) alongside every fit: the per-asker cap is what holds them.
//!
//! The ratings make documents' rating histories, as they do in GRACE: each
//! rated run is labelled with the `document_history` factor the ratings
//! before it made (what GRACE stored when it answered), and the held-out
//! questions are scored with the one all the fit's ratings make.

use std::collections::HashMap;

use serde::Serialize;

use super::FeedbackSim;
use super::boost_probe::BoostProbe;
use super::fares::coverage_at_risk;
use super::feedback_factors::{self, FactorProbe};
use super::outcomes::Collected;
use super::sample::{Sample, document_ratings, sample, simulated_asker};
use grace::confidence::fit::{FEATURES, Fare, Model, features};
use grace::confidence::metrics::{self, EceFloor};
use grace::confidence::{Factor, document_history_factor};
use grace::config::{Config, FeedbackConfig, Weights};
use grace::feedback::document_history;
use grace::learn::{self, Label};
use grace::rng::Rng;

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
/// returns the learning curve of refits from `prior`, with the feedback-only factors measured
/// on [`FACTOR_DRAWS`] draws (a rated question counts as near at cosine
/// `near`); `None` when the set has too few questions to hold any out.
pub fn simulate(
    config: &Config,
    prior: &Weights,
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
    let prior = *prior;
    let mut points: Vec<usize> = CURVE_LABELS.into_iter().filter(|&n| n <= ratings).collect();
    if !points.contains(&ratings) {
        points.push(ratings);
    }
    let curve = points
        .into_iter()
        .map(|n| {
            let after =
                first.scored_after(collected, n, &prior, Some(&first.history(collected, n)));
            let scored: Vec<(usize, f64)> =
                after.iter().map(|&(i, s)| (i, s.unwrap_or(0.0))).collect();
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
        let drawn = |draw: &Draw| {
            let history = draw.history(collected, ratings);
            feedback_factors::Drawn {
                votes: draw.votes.clone(),
                scored: answered(draw.scored_after(collected, ratings, &prior, None)),
                with_history: answered(draw.scored_after(
                    collected,
                    ratings,
                    &prior,
                    Some(&history),
                )),
                history,
            }
        };
        let mut draws = vec![drawn(&first)];
        draws.extend(
            (1..FACTOR_DRAWS)
                .filter_map(|d| Draw::new(collected, sim, seed.wrapping_add(d)))
                .map(|draw| drawn(&draw)),
        );
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
    /// Their ratings (question, up), in the same order.
    votes: Vec<(usize, bool)>,
    /// Their labels, in the same order: each run's factors with the
    /// `document_history` the ratings before it made (the flood's not
    /// among them: the simulation has no order for it), as GRACE would
    /// have stored them.
    labels: Vec<Label>,
    /// The flood's false ratings.
    false_ratings: Vec<Label>,
    /// The flood's votes (question, up), for the documents' history.
    false_votes: Vec<(usize, bool)>,
    /// The held-out questions, each with its features (without a
    /// document history: [`Draw::scored_after`] adds the one the ratings
    /// made); a question without an answer step has none (it was not
    /// answered, and scores 0 on the curve).
    held: Vec<(usize, Option<[f64; FEATURES]>)>,
}

/// Where `document_history` sits in a feature vector.
fn history_index() -> usize {
    Factor::ALL
        .iter()
        .position(|f| *f == Factor::DocumentHistory)
        .unwrap_or(FEATURES)
}

/// `x` with question `i`'s `document_history` as `history` makes it (none
/// without an answer step, or without a cited document with a history).
fn with_history(
    collected: &Collected,
    i: usize,
    mut x: [f64; FEATURES],
    history: &HashMap<String, f32>,
) -> [f64; FEATURES] {
    let value = if collected.outcomes[i].factors.0.is_empty() {
        None
    } else {
        document_history_factor(&collected.cited[i], history)
    };
    if let Some(slot) = x.get_mut(history_index()) {
        *slot = value.map_or(0.0, |v| Factor::DocumentHistory.feature(v));
    }
    x
}

/// The documents' history after the `votes` of simulated askers (each
/// question's own asker) and the flood's `false_votes` (one asker), as
/// the service reads it from the feedback store.
fn history_after(
    collected: &Collected,
    votes: &[(usize, bool)],
    false_votes: &[(usize, bool)],
) -> HashMap<String, f32> {
    let now = chrono::Utc::now();
    let answered = |j: usize| collected.outcomes[j].answered;
    let cited = &collected.cited;
    let mut ratings = document_ratings(cited, answered, votes, simulated_asker, now);
    ratings.extend(document_ratings(
        cited,
        answered,
        false_votes,
        |_| "flood".into(),
        now,
    ));
    document_history(
        &ratings,
        now,
        FeedbackConfig::default().document_boost_half_life_days,
    )
}

impl Draw {
    /// Draws `sim`'s ratings from `seed`; `None` when none would be held
    /// out.
    fn new(collected: &Collected, sim: &FeedbackSim, seed: u64) -> Option<Self> {
        let outcomes = &collected.outcomes;
        let mut rng = Rng::new(seed);
        let Sample { rated, held_out } = sample(&mut rng, outcomes.len(), sim.ratings, sim.noise)?;
        let votes: Vec<(usize, bool)> = rated
            .iter()
            .map(|&(i, flip)| (i, outcomes[i].right != flip))
            .collect();
        // Each rated run as GRACE scored it: with the history of the
        // ratings given before it.
        let labels: Vec<Label> = votes
            .iter()
            .enumerate()
            .map(|(k, &(i, y))| {
                let history = history_after(collected, &votes[..k], &[]);
                Label {
                    x: with_history(collected, i, features(&outcomes[i].factors), &history),
                    y,
                    confidence: outcomes[i].confidence,
                    weight: 1.0,
                    by: simulated_asker(i),
                }
            })
            .collect();
        let mut false_votes = Vec::new();
        let false_ratings: Vec<Label> = (0..sim.flood)
            .filter_map(|_| {
                let k = rng.below(rated.len().max(1));
                let (i, _) = *rated.get(k)?;
                false_votes.push((i, !outcomes[i].right));
                // The same run, rated the wrong way.
                Some(Label {
                    y: !outcomes[i].right,
                    by: "flood".into(),
                    ..labels.get(k)?.clone()
                })
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
            votes,
            labels,
            false_ratings,
            false_votes,
            held,
        })
    }

    /// The documents' history after the first `n` ratings and, past none,
    /// the flood's.
    fn history(&self, collected: &Collected, n: usize) -> HashMap<String, f32> {
        let flood: &[(usize, bool)] = if n > 0 { &self.false_votes } else { &[] };
        history_after(collected, &self.votes[..n], flood)
    }

    /// The held-out questions' indices.
    fn held_out(&self) -> Vec<usize> {
        self.held.iter().map(|(i, _)| *i).collect()
    }

    /// The held-out questions scored by the weights refitted (toward
    /// `prior`) on the first `n` ratings and, past none, the flood, each
    /// with the documents' `history` those ratings made
    /// ([`Draw::history`]); `None` for a question without an answer step.
    /// Without a history, the factor is left out everywhere (the
    /// confidence the feedback-only factors are measured against).
    fn scored_after(
        &self,
        collected: &Collected,
        n: usize,
        prior: &grace::config::Weights,
        history: Option<&HashMap<String, f32>>,
    ) -> Vec<(usize, Option<f64>)> {
        let mut fitted = self.labels[..n].to_vec();
        if n > 0 {
            fitted.extend(self.false_ratings.iter().cloned());
        }
        let none = HashMap::new();
        let documents = history.unwrap_or(&none);
        if history.is_none() {
            for l in &mut fitted {
                if let Some(slot) = l.x.get_mut(history_index()) {
                    *slot = 0.0;
                }
            }
        }
        learn::cap_givers(&mut fitted);
        let model = Model::from_weights(&learn::fit_weights(&fitted, prior));
        self.held
            .iter()
            .map(|(i, x)| {
                let x = x.map(|x| with_history(collected, *i, x, documents));
                (*i, x.as_ref().map(|x| model.predict(x)))
            })
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
    prior: &grace::config::Weights,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcomes::Outcome;
    use grace::confidence::Factors;
    use grace::exec::Decision;

    /// `n` questions, all answered with an answer step, question `i`
    /// citing `docs[i]`, right when `i` is even.
    fn collected(docs: &[&str]) -> Collected {
        let mut factors = Factors::default();
        factors.set(Factor::MaxScore, 0.6);
        let outcomes = (0..docs.len())
            .map(|i| Outcome {
                index: i,
                answered: true,
                decision: Decision::Answer,
                answer_text: None,
                right: i % 2 == 0,
                confidence: 0.5,
                factors: factors.clone(),
                top1: 0.6,
                reader_top: None,
                gold_at_1: false,
                gold_at_k: false,
                dense_gold_at_1: false,
                dense_gold_at_k: false,
                latency_ms: 1.0,
            })
            .collect();
        Collected {
            set: std::path::PathBuf::new(),
            questions: Vec::new(),
            outcomes,
            questions_sha256: String::new(),
            chunks: 0,
            backend: "test",
            sources: Vec::new(),
            embedding_model: String::new(),
            self_fit: None,
            document_boost: None,
            cited: docs.iter().map(|d| vec![d.to_string()]).collect(),
            vectors: Vec::new(),
        }
    }

    #[test]
    fn a_documents_history_counts_answers_and_the_flood_as_one_asker() {
        let mut c = collected(&["a.md", "a.md", "a.md", "b.md"]);
        // Question 3 was escalated: nobody rated an answer from b.md.
        c.outcomes[3].answered = false;
        let h = history_after(&c, &[(0, false), (3, true)], &[]);
        assert_eq!(h.get("a.md").copied(), Some(-0.5), "{h:?}");
        assert_eq!(h.get("b.md"), None, "{h:?}");
        // Two false ratings of the flood count once (its newest vote).
        let h = history_after(&c, &[(0, true), (1, true)], &[(2, false), (1, false)]);
        // (2 − 1) / (2 + 1 + 1)
        assert_eq!(h.get("a.md").copied(), Some(0.25), "{h:?}");
    }

    #[test]
    fn only_a_question_with_an_answer_step_gets_its_documents_history() {
        let mut c = collected(&["a.md", "a.md"]);
        c.outcomes[1].factors = Factors::default();
        let history = HashMap::from([("a.md".to_string(), -0.5f32)]);
        let slot = history_index();
        assert_eq!(with_history(&c, 0, [0.0; FEATURES], &history)[slot], -0.5);
        assert_eq!(with_history(&c, 1, [0.0; FEATURES], &history)[slot], 0.0);
        assert_eq!(
            with_history(&c, 0, [1.0; FEATURES], &HashMap::new())[slot],
            0.0
        );
    }

    #[test]
    fn a_rated_run_carries_only_the_history_of_ratings_before_it() {
        // Every question cites the same page: each label's history is that
        // of the labels before it, never its own rating.
        let c = collected(&["a.md"; 12]);
        let sim = FeedbackSim {
            ratings: 8,
            seed: 7,
            noise: 0.0,
            flood: 0,
            document_boost: None,
        };
        let draw = Draw::new(&c, &sim, sim.seed).unwrap();
        let slot = history_index();
        assert_eq!(draw.labels[0].x[slot], 0.0);
        for k in 1..draw.labels.len() {
            let votes: Vec<(usize, bool)> = draw.rated[..k]
                .iter()
                .map(|&(i, _)| (i, c.outcomes[i].right))
                .collect();
            let (up, down) =
                votes.iter().fold(
                    (0.0, 0.0),
                    |(u, d), (_, y)| {
                        if *y { (u + 1.0, d) } else { (u, d + 1.0) }
                    },
                );
            let expected = (up - down) / (up + down + 1.0);
            assert!(
                (draw.labels[k].x[slot] - expected).abs() < 1e-6,
                "label {k}: {} vs {expected}",
                draw.labels[k].x[slot]
            );
        }
        // Held-out questions are scored with every fitted rating's history;
        // without it, with none.
        let prior = grace::config::Weights {
            document_history: 4.0,
            ..Default::default()
        };
        let with = draw.scored_after(&c, 8, &prior, Some(&draw.history(&c, 8)));
        let without = draw.scored_after(&c, 8, &prior, None);
        assert_eq!(with.len(), 4);
        assert!(
            with.iter().zip(&without).all(|(a, b)| a.1 != b.1),
            "{with:?} {without:?}"
        );
    }
}
