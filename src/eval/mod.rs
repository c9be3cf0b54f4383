//! Evaluation over a question set: a folder with `corpus/` (documents) and
//! `questions.jsonl` (format of `../shared/eval/*/`).
//!
//! [`run`] ingests the corpus into a temporary store, asks every question
//! non-interactively (as `grace ask --json` would) and reports retrieval
//! recall on the answerable ones; how often GRACE answers, and how often
//! what it answers is right (answerable and citing a gold source) or is an
//! answer to an unanswerable question — the worst outcome; how well the
//! run's confidence separates answerable from unanswerable questions
//! (AUROC, overall and in-domain; unanswerable questions that pass the
//! threshold keeping 80% / 90% of answerable ones), next to the top-1
//! cosine baseline; and whether the confidence means what it says (ECE,
//! Brier against "answerable and gold cited").

pub mod calibrate;
pub mod conversations;
pub mod plot;
pub mod set;

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;

use sha2::{Digest, Sha256};

pub use self::set::{EvalError, Question, load_questions};
use self::set::{parse_questions, read};
use crate::confidence::calibration::Calibration;
use crate::confidence::fit::{self, Fare, Model, Sample, features};
pub use crate::confidence::metrics;
use crate::confidence::{Factor, Factors, score, v1};
use crate::embed::Embedder;
use crate::exec::{Decision, Executor, RunReport, StepRecord};
use crate::ingest::IngestOptions;
use crate::search::Passage;
use crate::tools::{ToolOutput, ToolRegistry};
use crate::{
    config::Config,
    error::Result,
    kb::{KnowledgeBase, OpenMode},
};

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
    /// The self-calibration the questions were asked with
    /// (`--self-calibrate`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub self_calibration: Option<SelfCalibrationFigures>,
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

/// One question's outcome: what the evaluation scores and calibration fits.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The question's index in the set.
    pub index: usize,
    /// Whether GRACE answered (decision `answer` or `caveat`).
    pub answered: bool,
    /// Answerable, and the answer cites a gold source.
    pub right: bool,
    /// The run's confidence.
    pub confidence: f64,
    /// The factors the final answer was scored on (empty when no answer step
    /// finished).
    pub factors: Factors,
    /// The top-1 passage's cosine similarity (-1 without passages).
    pub top1: f64,
    /// The reader's best probability over the first search's passages,
    /// when it read them (as a signal, a question without one counts 0).
    pub reader_top: Option<f64>,
    /// A gold source ranked first / in the top `k` of the first search.
    pub gold_at_1: bool,
    /// A gold source in the top `k` of the first search.
    pub gold_at_k: bool,
    /// The whole `ask`, milliseconds.
    pub latency_ms: f64,
}

/// Every question of a set asked, with what it ran on.
#[derive(Debug, Clone)]
pub struct Collected {
    /// The set's folder.
    pub set: PathBuf,
    /// The questions, in file order.
    pub questions: Vec<Question>,
    /// One outcome per question, in the same order.
    pub outcomes: Vec<Outcome>,
    /// SHA-256 of `questions.jsonl` (hex).
    pub questions_sha256: String,
    /// Chunks ingested from the corpus.
    pub chunks: usize,
    /// The vector store the corpus was ingested into.
    pub backend: &'static str,
    /// Content hashes of the corpus's documents, sorted.
    pub sources: Vec<String>,
    /// The embedding model's id.
    pub embedding_model: String,
    /// The self-calibration the questions were asked with
    /// (`grace eval --self-calibrate`).
    pub self_fit: Option<Calibration>,
}

/// Ingests the corpus of the set in `dir` into a temporary store (removed
/// afterwards; always the embedded store, never a configured server) and
/// asks every question as `grace ask --json` would.
pub fn collect(
    config: &Config,
    embedder: std::sync::Arc<dyn Embedder>,
    dir: &Path,
    k: usize,
) -> Result<Collected> {
    collect_with(config, embedder, dir, k, false)
}

/// [`collect`], with `self_calibrate`: after the ingest, the collection is
/// self-calibrated ([`crate::selfcal`], which never reads the questions)
/// and the questions are asked with the fitted weights.
pub fn collect_with(
    config: &Config,
    embedder: std::sync::Arc<dyn Embedder>,
    dir: &Path,
    k: usize,
    self_calibrate: bool,
) -> Result<Collected> {
    let corpus = dir.join("corpus");
    let questions_path = dir.join("questions.jsonl");
    if !corpus.is_dir() {
        return Err(EvalError::NotASet {
            path: dir.to_path_buf(),
            what: "corpus/",
        }
        .into());
    }
    if !questions_path.is_file() {
        return Err(EvalError::NotASet {
            path: dir.to_path_buf(),
            what: "questions.jsonl",
        }
        .into());
    }
    // Read once: parsed for the questions, hashed to recognise the set.
    let bytes = read(&questions_path)?;
    let questions = parse_questions(&questions_path, &bytes)?;
    let questions_sha256 = crate::durable::hex(&Sha256::digest(&bytes));

    let temp = TempDir::new()?;
    let mut config = config.clone();
    config.storage.data_dir = temp.0.clone();
    // The evaluation corpus must never be written into the configured
    // collection: on a Qdrant server it gets a collection of its own,
    // deleted afterwards; in the embedded store it lives in `temp`.
    let _server_collection = TempCollection::on_server(&mut config);
    let backend = config.storage.backend.as_str();
    let embedding_model = embedder.model_id().to_string();
    let kb = KnowledgeBase::with_embedder(config, embedder, OpenMode::Create)?;
    let ingest = kb.ingest(&[corpus], &IngestOptions::default(), &mut |_| {})?;
    let sources = kb.source_hashes()?;

    let kb = std::sync::Arc::new(kb);
    let mut run_config = kb.config().clone();
    let mut self_fit = None;
    if self_calibrate {
        match crate::selfcal::self_calibrate(&kb, &mut |_| {})? {
            crate::selfcal::Outcome::Fitted { calibration, .. } => {
                run_config.confidence.fitted_weights = Some(calibration.weights);
                self_fit = Some(*calibration);
            }
            crate::selfcal::Outcome::TooSmall { usable, min } => tracing::warn!(
                "the corpus is too small to self-calibrate ({usable} sections, fewer than {min}): asked with the configured weights"
            ),
        }
    }
    let registry = ToolRegistry::from_config(kb.config(), kb.clone())?;
    let executor = Executor::new(&registry, &run_config, k);
    let mut outcomes = Vec::with_capacity(questions.len());
    for (index, q) in questions.iter().enumerate() {
        let started = Instant::now();
        let run = executor.ask(&q.question, &mut |_| {})?;
        let latency_ms = started.elapsed().as_secs_f64() * 1000.0;

        let is_gold = |source: &str| is_gold(q, source);
        let search = first_search(&run);
        let passages = search_passages(search, k);
        outcomes.push(Outcome {
            index,
            answered: matches!(run.decision, Decision::Answer | Decision::Caveat),
            right: q.answerable && gold_cited(q, &run),
            confidence: run.confidence,
            factors: run.answer_factors().cloned().unwrap_or_default(),
            top1: search
                .and_then(|s| s.result.factors.get(Factor::MaxScore))
                .unwrap_or(-1.0),
            reader_top: search.and_then(|s| s.result.factors.get(Factor::Reader)),
            gold_at_1: passages.first().is_some_and(|p| is_gold(&p.source)),
            gold_at_k: passages.iter().any(|p| is_gold(&p.source)),
            latency_ms,
        });
    }
    Ok(Collected {
        set: dir.to_path_buf(),
        questions,
        outcomes,
        questions_sha256,
        chunks: ingest.points_total,
        backend,
        sources,
        embedding_model,
        self_fit,
    })
}

/// The file name a passage's source names: what a question's gold sources
/// list.
pub fn corpus_file(source: &str) -> String {
    Path::new(source)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Whether `source` is one of the question's gold sources.
pub fn is_gold(q: &Question, source: &str) -> bool {
    let name = corpus_file(source);
    !name.is_empty() && q.gold_sources.contains(&name)
}

/// Whether the run answered (did not abstain) citing a gold source.
pub fn gold_cited(q: &Question, run: &RunReport) -> bool {
    run.answer.as_ref().is_some_and(|a| {
        !a.abstained
            && a.citations
                .iter()
                .any(|c| c.source.as_deref().is_some_and(|s| is_gold(q, s)))
    })
}

/// The run's retrieval: its plan's first search (before any recovery).
pub fn first_search(run: &RunReport) -> Option<&StepRecord> {
    run.steps.iter().find(|s| s.action == "rag_search")
}

/// The first `k` passages of a search step (a recovery's wider search
/// returns more than the `k` recall counts).
pub fn search_passages(search: Option<&StepRecord>, k: usize) -> &[Passage] {
    match search.map(|s| &s.result.output) {
        Some(ToolOutput::Passages(p)) => &p[..p.len().min(k)],
        _ => &[],
    }
}

/// Runs the evaluation of the set in `dir` with `config` and the given
/// embedder (see [`collect`]), and scores the final answers with every
/// confidence model side by side (see [`models`]).
///
/// When the configured calibration was fitted on this very set, the runs
/// use the hand-set weights and the calibration's column is scored out of
/// fold, so that no question is scored by weights fitted on it.
pub fn run(
    config: &Config,
    embedder: std::sync::Arc<dyn Embedder>,
    dir: &Path,
    k: usize,
    self_calibrate: bool,
) -> Result<EvalReport> {
    let mut config = config.clone();
    let calibration = crate::confidence::calibration::apply(&mut config)?;
    let same_set = calibration
        .as_ref()
        .zip(questions_digest(&dir.join("questions.jsonl")).ok())
        .is_some_and(|(c, digest)| c.fitted_on.questions_sha256 == digest);
    if same_set {
        // Scored out of fold in the report; the runs use the hand-set weights.
        config.confidence.calibration = None;
        config.confidence.fitted_weights = None;
    }
    let collected = collect_with(&config, embedder, dir, k, self_calibrate)?;
    Ok(report(
        &config,
        &collected,
        calibration.as_ref(),
        same_set,
        k,
    ))
}

/// SHA-256 (hex) of a `questions.jsonl`: how a calibration recognises the
/// set it was fitted on.
fn questions_digest(path: &Path) -> std::result::Result<String, EvalError> {
    Ok(crate::durable::hex(&Sha256::digest(read(path)?)))
}

/// The report of collected outcomes.
fn report(
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
        latency_p50_ms: metrics::quantile(&latencies, 0.5),
        latency_p95_ms: metrics::quantile(&latencies, 0.95),
    }
}

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
        }
    };
    let scored = |weights: &crate::config::Weights| -> Vec<f64> {
        outcomes
            .iter()
            .map(|o| answered_score(o, score(&o.factors, weights).score))
            .collect()
    };
    let mut out = Vec::new();
    if let Some(hand_set) = crate::confidence::hand_set_weights() {
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

/// `<pid>_<nanoseconds>`: a name no other evaluation running now has.
fn unique() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    format!("{}_{nanos}", std::process::id())
}

/// A Qdrant collection of the evaluation's own (`<collection>_eval_<pid>_<n>`),
/// deleted when dropped.
struct TempCollection(crate::config::QdrantConfig);

impl TempCollection {
    /// With `storage.backend: qdrant`, points `config` at a new collection
    /// name; `None` for the embedded store.
    fn on_server(config: &mut Config) -> Option<Self> {
        if config.storage.backend != crate::config::Backend::Qdrant {
            return None;
        }
        config.qdrant.collection = format!("{}_eval_{}", config.qdrant.collection, unique());
        Some(Self(config.qdrant.clone()))
    }
}

impl Drop for TempCollection {
    fn drop(&mut self) {
        if let Err(e) = crate::store::qdrant::QdrantStore::drop_collection(&self.0) {
            tracing::warn!(collection = %self.0.collection, error = %e, "could not delete the evaluation's collection");
        }
    }
}

/// A temporary folder removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> std::result::Result<Self, EvalError> {
        let path = std::env::temp_dir().join(format!("grace-eval-{}", unique()));
        std::fs::create_dir_all(&path).map_err(|source| EvalError::Io {
            action: "create",
            path: path.clone(),
            source,
        })?;
        Ok(Self(path))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_question_names_file_and_line() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("questions.jsonl");
        std::fs::write(
            &p,
            "{\"id\":\"a\",\"question\":\"q?\",\"answerable\":true}\n\n{\"id\":\"b\",\"answerable\":true}\n",
        )
        .unwrap();
        let err = load_questions(&p).unwrap_err().to_string();
        assert!(
            err.contains("questions.jsonl:3:") && err.contains("question"),
            "{err}"
        );
    }

    #[test]
    fn loads_the_shared_format() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("questions.jsonl");
        std::fs::write(
            &p,
            r#"{"id": "x-1", "question": "What?", "answerable": false, "gold_sources": [], "gold_answer": null, "kind": "out-of-domain", "origin": "t"}"#,
        )
        .unwrap();
        let q = load_questions(&p).unwrap();
        assert_eq!(q.len(), 1);
        assert!(!q[0].in_domain());
    }
}
