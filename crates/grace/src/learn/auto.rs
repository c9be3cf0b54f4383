//! `confidence.feedback_calibration: auto`: the weights fitted again on
//! people's labels every `confidence.feedback_refit_every` new ones.
//!
//! - A refit starts from the weights in use (the last kept fit, else a
//!   self-calibration or the shipped weights) and is L2-regularised toward
//!   them ([`super::fit`]).
//! - It is **kept** only when it does better out of fold than the weights
//!   in use on the same labels (lower log loss) and there are at least
//!   [`MIN_LABELS`] labels of both kinds; otherwise the weights in use
//!   stay.
//! - A kept fit is written as a calibration file
//!   (`Config::feedback_calibration_path`), which
//!   [`crate::confidence::calibration::load`] reads like any other; every
//!   fit, kept or not, is appended to the history
//!   (`Config::feedback_fits_path`, the last [`MAX_HISTORY`]), which
//!   `grace status` and `GET /v1/review/calibration` show.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::{LearnedFit, fit, labels};
use crate::confidence::calibration::Calibration;
use crate::confidence::fit::Fare;
use crate::confidence::metrics::ReliabilityBin;
use crate::config::{Config, FeedbackCalibrationMode, Weights};
use crate::error::Result;
use crate::feedback::{FeedbackError, FeedbackStore};
use crate::review::ReviewQueue;
use crate::state::{Document, DocumentError, Documents, Scope};

/// Fewest labels of each kind (right and not right) a fit is kept on.
pub const MIN_LABELS: usize = 10;
/// Fits the history keeps (the newest).
pub const MAX_HISTORY: usize = 200;

/// One refit: when, on what, how it fared, and whether it was kept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct FitRecord {
    /// When it was fitted.
    pub at: DateTime<Utc>,
    /// Labels fitted on.
    pub labels: usize,
    /// Of them right (rated up, judged right).
    pub right: usize,
    /// Distinct askers and reviewers who gave them.
    pub givers: usize,
    /// The new weights on labels they were not fitted on.
    pub fitted: Fare,
    /// The weights in use before, on the same labels.
    pub before: Fare,
    /// The 95th percentile of the ECE a perfectly calibrated score shows
    /// by chance on these labels.
    pub ece_p95: Option<f64>,
    /// Whether it now scores runs.
    pub kept: bool,
    /// Why it was kept or not.
    pub why: String,
}

/// Every refit on people's feedback.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct FitHistory {
    /// Labels there were at the last refit (the next is due
    /// `feedback_refit_every` later).
    pub labels_at_last_fit: usize,
    /// The refits, oldest first (the last [`MAX_HISTORY`]).
    pub fits: Vec<FitRecord>,
}

impl FitHistory {
    /// The label count at which the next refit is due.
    pub fn next_refit_at(&self, config: &Config) -> usize {
        self.labels_at_last_fit + config.confidence.feedback_refit_every
    }

    /// The history in `config`'s data folder; empty when there is none. A
    /// file that cannot be read is an error naming it.
    pub fn load(config: &Config) -> Result<Self> {
        let (docs, doc) = fits_document(config)?;
        let place = docs.place(&doc);
        let bytes = match docs.read(&doc) {
            Ok(Some(b)) => b,
            Ok(None) => return Ok(Self::default()),
            Err(e) => return Err(stored(&place, "read", e).into()),
        };
        serde_json::from_slice(&bytes).map_err(|e| {
            corrupt(
                &place,
                format!("not a fit history ({e}); remove it to start again"),
            )
            .into()
        })
    }

    /// Writes the history whole (a crash leaves the old one or the new one).
    fn save(&self, config: &Config) -> Result<()> {
        let (docs, doc) = fits_document(config)?;
        let place = docs.place(&doc);
        let bytes = serde_json::to_vec_pretty(self)
            .map_err(|e| corrupt(&place, format!("cannot write it: {e}")))?;
        docs.write(&doc, &bytes)
            .map_err(|e| stored(&place, "write", e).into())
    }

    /// The fit that scores runs now: the last one kept.
    pub fn current(&self) -> Option<&FitRecord> {
        self.fits.iter().rev().find(|f| f.kept)
    }
}

/// The fit on people's feedback: whether GRACE learns, how many labels it
/// has, and every refit (`grace status`, `GET /v1/review/calibration`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct FeedbackCalibration {
    /// `confidence.feedback_calibration`.
    pub mode: FeedbackCalibrationMode,
    /// `confidence.feedback_refit_every`.
    pub refit_every: usize,
    /// Labels given so far (ratings, and runs put to a reviewer).
    pub labels: usize,
    /// Labels at which the next refit is due.
    pub next_refit_at: usize,
    /// The fit that scores runs now, when one was kept.
    pub current: Option<FitRecord>,
    /// Every refit, oldest first.
    pub history: Vec<FitRecord>,
    /// The confidence GRACE gave against what people said, per tenth of
    /// confidence ([`super::reliability`]).
    pub reliability: Vec<ReliabilityBin>,
}

impl FeedbackCalibration {
    /// Read from `config`'s data folder, `feedback` and the verdicts in
    /// `queue`.
    pub fn of(config: &Config, feedback: &FeedbackStore, queue: &ReviewQueue) -> Result<Self> {
        let history = FitHistory::load(config)?;
        Ok(Self {
            reliability: super::reliability(&labels(feedback, queue)?),
            mode: config.confidence.feedback_calibration,
            refit_every: config.confidence.feedback_refit_every,
            labels: feedback.label_count()?,
            next_refit_at: history.next_refit_at(config),
            current: history.current().cloned(),
            history: history.fits,
        })
    }
}

fn corrupt(place: &str, message: String) -> FeedbackError {
    FeedbackError::Corrupt {
        place: place.to_string(),
        message,
    }
}

/// Where the history of fits is kept: `Config::feedback_fits_path`, or
/// PostgreSQL's row every server reads.
fn fits_document(config: &Config) -> Result<(Documents, Document)> {
    let docs = Documents::open(config, Scope::KnowledgeBase).map_err(FeedbackError::State)?;
    let doc = Document {
        name: "feedback-fits".into(),
        file: config.feedback_fits_path(),
    };
    Ok((docs, doc))
}

/// A failure to read or write the history, naming it.
fn stored(place: &str, action: &str, e: DocumentError) -> FeedbackError {
    match e {
        DocumentError::State(e) => FeedbackError::State(e),
        DocumentError::Io { source, .. } => corrupt(place, format!("cannot {action} it: {source}")),
    }
}

/// Whether a refit is due: `confidence.feedback_calibration` is `auto`,
/// no labelled `confidence.calibration` file wins over it, and
/// `feedback_refit_every` labels came since the last.
pub fn due(config: &Config, feedback: &FeedbackStore, history: &FitHistory) -> Result<bool> {
    if !enabled(config) {
        return Ok(false);
    }
    let count = feedback.label_count()?;
    Ok(count >= history.next_refit_at(config))
}

/// Whether refits while serving are on: `confidence.feedback_calibration`
/// is `auto` and no labelled `confidence.calibration` file wins over it.
pub fn enabled(config: &Config) -> bool {
    config.confidence.feedback_calibration == FeedbackCalibrationMode::Auto
        && config.confidence.calibration.is_none()
}

/// Fits the weights on the labels in `feedback` and `queue` starting from
/// `prior`, the weights in use, keeps the fit when it is better (see the
/// module), and records it in the history; the record, and the kept
/// calibration when it was kept. `embedding_model` names the model the
/// labels' runs were scored with.
pub fn refit(
    config: &Config,
    prior: &Weights,
    feedback: &FeedbackStore,
    queue: &ReviewQueue,
    embedding_model: &str,
) -> Result<(FitRecord, Option<Calibration>)> {
    let mut history = FitHistory::load(config)?;
    let count = feedback.label_count()?;
    let labels = labels(feedback, queue)?;
    let learned = fit(&labels, prior);
    let right = labels.iter().filter(|l| l.y).count();
    let (kept, why) = verdict(&learned, right, labels.len() - right);
    let kept_calibration = if kept {
        let calibration = super::calibration(
            &learned,
            config,
            embedding_model,
            std::path::Path::new(feedback.place()),
        );
        calibration.store(config, crate::confidence::calibration::Source::Feedback)?;
        Some(calibration)
    } else {
        None
    };
    let record = FitRecord {
        at: Utc::now(),
        labels: labels.len(),
        right,
        givers: learned.givers,
        fitted: learned.out_of_fold.clone(),
        before: learned.prior.clone(),
        ece_p95: learned.ece_floor.as_ref().map(|f| f.p95),
        kept,
        why,
    };
    history.labels_at_last_fit = count;
    history.fits.push(record.clone());
    let excess = history.fits.len().saturating_sub(MAX_HISTORY);
    history.fits.drain(..excess);
    history.save(config)?;
    Ok((record, kept_calibration))
}

/// Whether `learned` (on `right` and `wrong` labels) is kept, and why.
fn verdict(learned: &LearnedFit, right: usize, wrong: usize) -> (bool, String) {
    if right < MIN_LABELS || wrong < MIN_LABELS {
        return (
            false,
            format!(
                "too few labels: {right} right and {wrong} not, at least {MIN_LABELS} of each are needed"
            ),
        );
    }
    match (learned.out_of_fold.log_loss, learned.prior.log_loss) {
        (Some(new), Some(old)) if new < old => (
            true,
            format!(
                "better out of fold: log loss {new:.3} against {old:.3} for the weights before"
            ),
        ),
        (Some(new), Some(old)) => (
            false,
            format!(
                "not better out of fold: log loss {new:.3} against {old:.3} for the weights before, which stay"
            ),
        ),
        _ => (false, "no figures to compare".to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::confidence::fit::FEATURES;
    use crate::config::Weights;

    fn label(x0: f64, y: bool, by: usize) -> super::super::Label {
        let mut x = [0.0; FEATURES];
        x[0] = x0;
        super::super::Label {
            x,
            y,
            confidence: 0.5,
            weight: 1.0,
            by: format!("asker{by}"),
        }
    }

    #[test]
    fn a_fit_is_kept_only_when_better_out_of_fold_and_on_enough_labels() {
        let prior = Weights::default();
        // Labels the first feature separates: better than the prior.
        let separating: Vec<_> = (0..60)
            .map(|i| label(if i % 2 == 0 { 1.0 } else { -1.0 }, i % 2 == 0, i))
            .collect();
        let learned = fit(&separating, &prior);
        let (kept, why) = verdict(&learned, 30, 30);
        assert!(kept, "{why}");
        // Too few of one kind: never kept, whatever the figures.
        let (kept, why) = verdict(&learned, 30, MIN_LABELS - 1);
        assert!(!kept && why.contains("too few"), "{why}");
        // Noise: the fit cannot beat the weights it started from by much;
        // when it does not, they stay.
        let noise: Vec<_> = (0..60)
            .map(|i| label(((i * 7) % 5) as f64 - 2.0, (i * 3) % 4 == 0, i))
            .collect();
        let learned = fit(&noise, &prior);
        let (kept, why) = verdict(&learned, 15, 45);
        let better = learned.out_of_fold.log_loss.unwrap() < learned.prior.log_loss.unwrap();
        assert_eq!(kept, better, "{why}");
    }

    /// A run whose answer step scored `max_score`, rated by its asker.
    fn rated(store: &FeedbackStore, k: usize, max_score: f64, up: bool) {
        let mut factors = crate::confidence::Factors::default();
        factors
            .set(crate::confidence::Factor::MaxScore, max_score)
            .set(crate::confidence::Factor::Groundedness, 1.0);
        let run = crate::feedback::RecordedRun {
            question: format!("question {k}"),
            standalone: None,
            answer: Some("An answer. [1]".into()),
            decision: crate::exec::Decision::Answer,
            confidence: 0.8,
            factors: Some(factors),
            weights_version: String::new(),
            collection: "grace".into(),
            sources: vec!["doc.md".into()],
        };
        let asker = crate::feedback::Asker::named(&format!("asker{k}")).unwrap();
        let id = store.record(&run, &asker, None).unwrap().unwrap();
        let vote = if up {
            crate::feedback::Vote::Up
        } else {
            crate::feedback::Vote::Down
        };
        let rating = crate::feedback::Rating {
            vote,
            reason: None,
            text: None,
        };
        store.rate(&id, &asker, &rating).unwrap();
    }

    #[test]
    fn every_refit_is_recorded_and_a_better_one_scores_runs_from_then_on() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = Config::default();
        config.storage.data_dir = dir.path().to_path_buf();
        config.confidence.feedback_refit_every = 40;
        let store = FeedbackStore::open(&config).unwrap();
        let queue = ReviewQueue::open(&config).unwrap();
        // Too few labels: not due.
        for k in 0..30 {
            rated(&store, k, 0.3 + 0.01 * k as f64, k % 3 != 0);
        }
        let history = FitHistory::load(&config).unwrap();
        assert!(!due(&config, &store, &history).unwrap());
        // People say: a high MaxScore is right, a low one is not, far more
        // sharply than the shipped weights believe.
        for k in 30..80 {
            let high = k % 2 == 0;
            rated(&store, k, if high { 0.9 } else { 0.1 }, high);
        }
        assert!(due(&config, &store, &history).unwrap());
        let (record, kept) =
            refit(&config, &config.confidence.weights, &store, &queue, "model").unwrap();
        assert_eq!(record.labels, 80);
        assert!(record.kept, "{}", record.why);
        assert!(record.fitted.log_loss.unwrap() < record.before.log_loss.unwrap());
        let kept = kept.unwrap();
        // Recorded, and read back as the weights that score runs.
        let history = FitHistory::load(&config).unwrap();
        assert_eq!(history.fits.len(), 1);
        assert_eq!(history.labels_at_last_fit, 80);
        assert!(!due(&config, &store, &history).unwrap());
        let weights = |config: &Config| {
            crate::confidence::calibration::load(config)
                .unwrap()
                .map(|c| c.weights)
        };
        assert_eq!(weights(&config), Some(kept.weights));
        // Off: neither due nor read.
        let mut off = config.clone();
        off.confidence.feedback_calibration = FeedbackCalibrationMode::Off;
        assert_eq!(weights(&off), None);
        // A corrupt fit file: the defaults, with a warning (never an error).
        std::fs::write(config.feedback_calibration_path(), b"garbage").unwrap();
        assert_eq!(weights(&config), None);
        let summary = FeedbackCalibration::of(&config, &store, &queue).unwrap();
        assert_eq!((summary.labels, summary.next_refit_at), (80, 120));
        assert!(summary.current.is_some());
        // Every run was given 0.8; people said right for 45 of 80.
        assert_eq!(summary.reliability.len(), 1);
        let bin = &summary.reliability[0];
        assert_eq!((bin.count, bin.lo), (80, 0.8));
        assert!(
            (bin.predicted - 0.8).abs() < 1e-9 && (bin.observed - 45.0 / 80.0).abs() < 1e-9,
            "{bin:?}"
        );
    }

    #[test]
    fn a_broken_history_is_an_error_naming_the_file_and_a_missing_one_is_empty() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = Config::default();
        config.storage.data_dir = dir.path().to_path_buf();
        assert_eq!(FitHistory::load(&config).unwrap(), FitHistory::default());
        std::fs::write(config.feedback_fits_path(), b"{ not json").unwrap();
        let e = FitHistory::load(&config).unwrap_err().to_string();
        assert!(
            e.contains("feedback-fits.json") && e.contains("remove it"),
            "{e}"
        );
    }
}
