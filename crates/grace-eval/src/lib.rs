//! Evaluation over a question set: a folder with `corpus/` (documents) and
//! `questions.jsonl` (format of `eval/*/`).
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

#![warn(missing_docs)]

pub mod answer_text;
pub mod boost_probe;
pub mod calibrate;
pub mod conversations;
mod fares;
pub mod feedback_factors;
pub mod feedback_sim;
pub mod one_session;
mod outcomes;
#[cfg(feature = "plots")]
pub mod plot;
mod report;
mod sample;
pub use grace::evalset as set;
mod temp;

use std::path::Path;

use sha2::{Digest, Sha256};

pub use self::fares::{CoverageRisk, ModelFare, coverage_risk, models};
pub use self::outcomes::{
    Collected, Outcome, collect, collect_with, first_search, gold_cited, search_passages,
};
use self::report::report;
pub use self::report::{EvalReport, SelfCalibrationFigures, Separation};
use self::set::read;
pub use self::set::{EvalError, Question, corpus_file, is_gold, load_questions};
use self::temp::TempDir;
use grace::Result;
pub use grace::confidence::metrics;
use grace::config::Config;
use grace::embed::Embedder;

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
    run_with(config, embedder, dir, k, self_calibrate, None)
}

/// Simulated ratings for [`run_with`] (`grace eval --feedback N`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FeedbackSim {
    /// Questions rated.
    pub ratings: usize,
    /// The sampling seed.
    pub seed: u64,
    /// Share of ratings flipped (0..=1).
    pub noise: f64,
    /// False ratings from one more asker.
    pub flood: usize,
    /// `feedback.document_boost` to measure on the ranking
    /// ([`boost_probe::BoostProbe`]); `None`: not measured.
    pub document_boost: Option<f64>,
}

/// [`run`], and with `feedback` the learning curve of refits on simulated
/// ratings ([`feedback_sim`]). Too many ratings for the set (none left to
/// score on) is an error.
pub fn run_with(
    config: &Config,
    embedder: std::sync::Arc<dyn Embedder>,
    dir: &Path,
    k: usize,
    self_calibrate: bool,
    feedback: Option<FeedbackSim>,
) -> Result<EvalReport> {
    if let Some(f) = feedback
        && !(0.0..=1.0).contains(&f.noise)
    {
        return Err(grace::Error::InvalidInput(format!(
            "--feedback-noise {} must be a share from 0 to 1",
            f.noise
        )));
    }
    if let Some(b) = feedback.and_then(|f| f.document_boost)
        && !(b > 0.0 && b <= grace::config::MAX_DOCUMENT_BOOST)
    {
        return Err(grace::Error::InvalidInput(format!(
            "--document-boost {b} must be above 0 and at most {}",
            grace::config::MAX_DOCUMENT_BOOST
        )));
    }
    if let Some(f) = feedback {
        let questions = load_questions(&dir.join("questions.jsonl"))?.len();
        if f.ratings >= questions {
            return Err(grace::Error::InvalidInput(format!(
                "--feedback {}: the set has {questions} questions; rate fewer, so that some are left to score on",
                f.ratings
            )));
        }
    }
    let mut config = config.clone();
    let calibration = grace::confidence::calibration::load(&config)?;
    let same_set = calibration
        .as_ref()
        .zip(questions_digest(&dir.join("questions.jsonl")).ok())
        .is_some_and(|(c, digest)| c.fitted_on.questions_sha256 == digest);
    if same_set {
        // Scored out of fold in the report; the runs use the hand-set weights.
        config.confidence.calibration = None;
    }
    // A rated question is near at NEAR on GRACE's scale: this model's cosine.
    let near = embedder
        .similarity_scale()
        .passage
        .invert(feedback_factors::NEAR as f32);
    let collected = collect_with(&config, embedder, dir, k, self_calibrate, feedback.as_ref())?;
    let mut report = report(&config, &collected, calibration.as_ref(), same_set, k);
    if let Some(f) = feedback {
        // The refits start from the weights in use: the calibration's,
        // unless it was fitted on this set.
        let prior = match (&calibration, same_set) {
            (Some(c), false) => c.weights,
            _ => config.confidence.weights,
        };
        report.feedback = feedback_sim::simulate(&config, &prior, &collected, &f, near);
    }
    Ok(report)
}

/// SHA-256 (hex) of a `questions.jsonl`: how a calibration recognises the
/// set it was fitted on.
fn questions_digest(path: &Path) -> std::result::Result<String, EvalError> {
    Ok(grace::durable::hex(&Sha256::digest(read(path)?)))
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
