//! What `grace eval` reports: the figures of the collected outcomes, and
//! how well a score separates answerable from unanswerable questions.

use std::path::PathBuf;

use serde::Serialize;

use super::answer_text::{self, AnswerTextReport};
use super::fares::{ModelFare, models};
use super::outcomes::{Collected, Outcome};
use super::set::Question;
use grace::confidence::calibration::Calibration;
use grace::confidence::fit::Fare;
use grace::confidence::metrics;
use grace::config::Config;

/// How well one score separates answerable from unanswerable questions.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Separation {
    /// AUROC over all questions (answerable ones positive); `None` without
    /// both answerable and unanswerable questions.
    pub auroc: Option<f64>,
    /// Answerable vs in-domain unanswerable only.
    pub auroc_in_domain: Option<f64>,
    /// Share of unanswerable questions scoring at or above the threshold
    /// that keeps 80% (90%) of answerable ones.
    pub unanswerable_passing_at_80: Option<f64>,
    /// Share of unanswerable questions scoring at or above the threshold that
    /// keeps 90% of answerable ones.
    pub unanswerable_passing_at_90: Option<f64>,
    /// The same at 90%, counting in-domain unanswerable questions only.
    pub in_domain_passing_at_90: Option<f64>,
}

fn separation(rows: &[(f64, &Question)]) -> Separation {
    let all: Vec<(f64, bool)> = rows.iter().map(|(s, q)| (*s, q.answerable)).collect();
    let in_domain: Vec<(f64, bool)> = rows
        .iter()
        .filter(|(_, q)| q.answerable || q.in_domain())
        .map(|(s, q)| (*s, q.answerable))
        .collect();
    Separation {
        auroc: metrics::auroc(&all),
        auroc_in_domain: metrics::auroc(&in_domain),
        unanswerable_passing_at_80: metrics::negatives_passing_at_recall(&all, 0.8).map(|r| r.1),
        unanswerable_passing_at_90: metrics::negatives_passing_at_recall(&all, 0.9).map(|r| r.1),
        in_domain_passing_at_90: metrics::negatives_passing_at_recall(&in_domain, 0.9).map(|r| r.1),
    }
}

/// What `grace eval` reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvalReport {
    /// The evaluation set's folder.
    pub set: PathBuf,
    /// Questions in the set.
    pub questions: usize,
    /// Answerable questions.
    pub answerable: usize,
    /// Unanswerable questions about the corpus's subject (held-out sections).
    pub unanswerable_in_domain: usize,
    /// Unanswerable out-of-domain questions.
    pub unanswerable_out_of_domain: usize,
    /// Chunks ingested from the corpus.
    pub chunks: usize,
    /// The vector store evaluated (`storage.backend`: `edge`, `qdrant`).
    pub backend: &'static str,
    /// Share of answerable questions with a gold source first / in the top `k`.
    pub recall_at_1: f64,
    /// Share of answerable questions with a gold source in the top `k`.
    pub recall_at_k: f64,
    /// Recall@1 of the dense ranking alone (no lexical side, no pinning):
    /// the baseline for GRACE's ranking.
    pub dense_recall_at_1: f64,
    /// Recall@k of the dense ranking alone.
    pub dense_recall_at_k: f64,
    /// Passages retrieved per search (the `k` of `recall_at_k`).
    pub k: usize,
    /// Share of questions answered (decision `answer` or `caveat`).
    pub answered: f64,
    /// Share of answered questions that are answerable and cite a gold source.
    pub answered_right: f64,
    /// Share of unanswerable questions answered anyway (the worst outcome).
    pub unanswerable_answered: f64,
    /// Of those, how many were in-domain (a held-out section) and how many
    /// out-of-domain.
    pub unanswerable_answered_in_domain: usize,
    /// Unanswerable out-of-domain questions answered anyway.
    pub unanswerable_answered_out_of_domain: usize,
    /// Baseline: the top-1 passage's cosine similarity.
    pub top1_cosine: Separation,
    /// The reader's best probability alone, as a single signal (`None`
    /// when the reader did not run).
    pub reader_top: Option<Separation>,
    /// The run's confidence (the configured model on the answer's factors).
    pub answer_confidence: Separation,
    /// Calibration of the run's confidence against "answerable and a gold
    /// source cited".
    pub ece: Option<f64>,
    /// Brier score of the run's confidence against the same outcome (0 is
    /// perfect); `None` without questions.
    pub brier: Option<f64>,
    /// The final answers scored by each confidence model, side by side.
    pub models: Vec<ModelFare>,
    /// What the answers of answerable questions are made of: answers,
    /// caveats and escalation drafts apart, and per question style.
    pub answer_text: AnswerTextReport,
    /// The self-calibration the questions were asked with
    /// (`--self-calibrate`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub self_calibration: Option<SelfCalibrationFigures>,
    /// Learning from simulated ratings (`--feedback N`): the curve.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub feedback: Option<super::feedback_sim::FeedbackCurve>,
    /// Whole `ask` per question, milliseconds.
    pub latency_p50_ms: Option<f64>,
    /// 95th percentile of a whole `ask`, milliseconds.
    pub latency_p95_ms: Option<f64>,
}

/// What a `--self-calibrate` run's self-calibration asked and cost.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SelfCalibrationFigures {
    /// Questions it built and asked.
    pub questions: usize,
    /// Of them answerable, in-domain unanswerable and out-of-domain.
    pub answerable: usize,
    /// With their section withheld.
    pub in_domain: usize,
    /// General questions.
    pub out_of_domain: usize,
    /// Seconds it took (questions and fit).
    pub seconds: f64,
    /// Out of fold on its own questions.
    pub cross_validated: Fare,
}

/// The report of collected outcomes.
pub(super) fn report(
    config: &Config,
    collected: &Collected,
    calibration: Option<&Calibration>,
    same_set: bool,
    k: usize,
) -> EvalReport {
    let questions = &collected.questions;
    let outcomes = &collected.outcomes;
    let rows = |value: &dyn Fn(&Outcome) -> f64| -> Vec<(f64, &Question)> {
        outcomes
            .iter()
            .map(|o| (value(o), &questions[o.index]))
            .collect()
    };
    let answerable = questions.iter().filter(|q| q.answerable).count();
    let unanswerable = questions.len() - answerable;
    let count = |f: &dyn Fn(&Outcome, &Question) -> bool| {
        outcomes
            .iter()
            .filter(|o| f(o, &questions[o.index]))
            .count()
    };
    let share = |n: usize, of: usize| if of == 0 { 0.0 } else { n as f64 / of as f64 };
    let answered = count(&|o, _| o.answered);
    let answered_right = count(&|o, _| o.answered && o.right);
    let wrong_in_domain = count(&|o, q| o.answered && !q.answerable && q.in_domain());
    let wrong_out_of_domain = count(&|o, q| o.answered && !q.answerable && !q.in_domain());
    let calibration_pairs: Vec<(f64, bool)> =
        outcomes.iter().map(|o| (o.confidence, o.right)).collect();
    let latencies: Vec<f64> = outcomes.iter().map(|o| o.latency_ms).collect();
    EvalReport {
        set: collected.set.clone(),
        questions: questions.len(),
        answerable,
        unanswerable_in_domain: questions
            .iter()
            .filter(|q| !q.answerable && q.in_domain())
            .count(),
        unanswerable_out_of_domain: questions
            .iter()
            .filter(|q| !q.answerable && !q.in_domain())
            .count(),
        chunks: collected.chunks,
        backend: collected.backend,
        recall_at_1: share(count(&|o, q| q.answerable && o.gold_at_1), answerable),
        recall_at_k: share(count(&|o, q| q.answerable && o.gold_at_k), answerable),
        dense_recall_at_1: share(count(&|o, q| q.answerable && o.dense_gold_at_1), answerable),
        dense_recall_at_k: share(count(&|o, q| q.answerable && o.dense_gold_at_k), answerable),
        k,
        answered: share(answered, questions.len()),
        answered_right: share(answered_right, answered),
        unanswerable_answered: share(wrong_in_domain + wrong_out_of_domain, unanswerable),
        unanswerable_answered_in_domain: wrong_in_domain,
        unanswerable_answered_out_of_domain: wrong_out_of_domain,
        top1_cosine: separation(&rows(&|o| o.top1)),
        reader_top: outcomes
            .iter()
            .any(|o| o.reader_top.is_some())
            .then(|| separation(&rows(&|o| o.reader_top.unwrap_or(0.0)))),
        answer_confidence: separation(&rows(&|o| o.confidence)),
        ece: metrics::ece(&calibration_pairs, 10),
        brier: metrics::brier(&calibration_pairs),
        models: models(config, collected, calibration, same_set),
        answer_text: answer_text::report(
            &outcomes
                .iter()
                .filter_map(|o| {
                    o.answer_text
                        .as_ref()
                        .map(|t| (&questions[o.index], o.decision, t))
                })
                .collect::<Vec<_>>(),
        ),
        self_calibration: collected.self_fit.as_ref().and_then(|c| {
            let s = c.self_calibration.as_ref()?;
            Some(SelfCalibrationFigures {
                questions: c.fitted_on.questions,
                answerable: s.answerable,
                in_domain: s.in_domain,
                out_of_domain: s.out_of_domain,
                seconds: s.seconds,
                cross_validated: c.cross_validated.clone(),
            })
        }),
        feedback: None,
        latency_p50_ms: metrics::quantile(&latencies, 0.5),
        latency_p95_ms: metrics::quantile(&latencies, 0.95),
    }
}
