//! The `confidence` section: the formula, its weights and thresholds, the
//! reader's part, calibration and self-calibration.

use std::path::PathBuf;

use super::check::{in_range, invalid};
use super::{Config, LlmProvider, Result};
use serde::{Deserialize, Serialize};

/// How confidence is computed from the factors steps report (see
/// [`crate::confidence`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ConfidenceConfig {
    /// Which formula scores a step (`confidence.model`).
    pub model: ConfidenceModel,
    /// Whether the answerability reader is used (`auto`, `on`, `off`).
    pub reader: ReaderMode,
    /// Bias and per-factor weights (`confidence.weights`), hand-set.
    pub weights: Weights,
    /// A calibration file written by `grace calibrate`
    /// (`confidence.calibration`): its fitted weights replace `weights`.
    pub calibration: Option<PathBuf>,
    /// Calibration on questions GRACE builds from the knowledge base itself
    /// (`confidence.self_calibration`; `grace calibrate --self`).
    pub self_calibration: SelfCalibrationConfig,
    /// `auto`: fit the weights again on people's ratings and reviewers'
    /// verdicts every `feedback_refit_every` new labels, and score with
    /// the fit while it does better out of fold than the weights before
    /// it; `off`: never.
    pub feedback_calibration: FeedbackCalibrationMode,
    /// New labels (ratings and verdicts) between two refits with
    /// `feedback_calibration: auto`.
    pub feedback_refit_every: usize,
    /// Weights of the original GRACE formula (`confidence.grace_v1`), used
    /// when `model` is `grace_v1`.
    pub grace_v1: V1Weights,
    /// Score thresholds of the levels (`confidence.thresholds`).
    pub thresholds: Thresholds,
    /// How a run's step scores combine into its score.
    pub aggregation: Aggregation,
}

impl Default for ConfidenceConfig {
    fn default() -> Self {
        Self {
            model: ConfidenceModel::default(),
            reader: ReaderMode::default(),
            weights: Weights::default(),
            calibration: None,
            self_calibration: SelfCalibrationConfig::default(),
            feedback_calibration: FeedbackCalibrationMode::Auto,
            feedback_refit_every: 50,
            grace_v1: V1Weights::default(),
            thresholds: Thresholds::default(),
            aggregation: Aggregation::default(),
        }
    }
}

/// Whether GRACE refits its weights on people's feedback
/// (`confidence.feedback_calibration`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum FeedbackCalibrationMode {
    /// Refit every `feedback_refit_every` new labels; score with the fit
    /// while it is the better one.
    #[default]
    Auto,
    /// Never.
    Off,
}

/// Whether the reader is used (`confidence.reader`). Off by default: the
/// shipped reader does not yet improve GRACE's figures (the book, Evaluation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ReaderMode {
    /// Used when its files load; otherwise a warning, and GRACE scores
    /// without it.
    Auto,
    /// Required: a missing or broken model is an error.
    On,
    /// Never loaded: no reranking by it, no `reader` factor.
    #[default]
    Off,
}

/// Self-calibration: GRACE asks questions it builds from the knowledge
/// base's own sections, with each section present (answerable), withheld
/// (in-domain unanswerable) and general questions (out-of-domain), and fits
/// the confidence weights to how its answers fared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SelfCalibrationConfig {
    /// `auto`: score with the knowledge base's own fit, and fit again after
    /// an ingest that changed more than `refit_share` of the documents;
    /// `off`: the configured weights only.
    pub mode: SelfCalibrationMode,
    /// Sections sampled, one answerable question each (fewer in a smaller
    /// knowledge base).
    pub questions: usize,
    /// Share of answerable questions among those asked; the rest are
    /// unanswerable, half in-domain and half out-of-domain. The fitted
    /// scores assume this mix of questions.
    pub answerable_share: f64,
    /// Seed of the sampling: the same seed and knowledge base give the
    /// same questions and the same file.
    pub seed: u64,
    /// Share of documents added, changed or removed since the fit above
    /// which `auto` fits again after an ingest.
    pub refit_share: f64,
    /// Fewest sections a knowledge base needs to be fitted; below it the
    /// configured weights stay.
    pub min_sections: usize,
    /// Cosine similarity at or above which another chunk counts as a
    /// near-duplicate of a withheld section, and is withheld with it.
    pub near_duplicate: f64,
    /// Ask the configured language model (`llm.provider` `gemini` or
    /// `ollama`) to write each answerable question the way a user would
    /// ask it, falling back to the fixed patterns when its reply is
    /// unusable. Off by default; needs a model.
    pub model_questions: bool,
}

impl Default for SelfCalibrationConfig {
    fn default() -> Self {
        Self {
            mode: SelfCalibrationMode::Off,
            questions: 400,
            answerable_share: 0.6,
            seed: 1,
            refit_share: 0.2,
            min_sections: 50,
            near_duplicate: 0.95,
            model_questions: false,
        }
    }
}

/// Whether GRACE calibrates itself on its knowledge base.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum SelfCalibrationMode {
    /// Use the knowledge base's own fit and refit after large ingests.
    Auto,
    /// Never fit on its own nor use a self-calibration (the default: on
    /// the evaluation sets a self-calibration is not yet better than the
    /// shipped weights; the book, "Self-calibration").
    #[default]
    Off,
}

impl SelfCalibrationMode {
    /// As written in the configuration.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Off => "off",
        }
    }
}

/// The formula that turns a step's factors into a score.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ConfidenceModel {
    /// `sigmoid(bias + Σ weight·feature)` with `confidence.weights` (or the
    /// calibration's).
    #[default]
    Logistic,
    /// The original GRACE's formula, as a baseline: a search quality from
    /// the passage similarities, then the weighted mean of the factors
    /// present (`confidence.grace_v1`).
    GraceV1,
}

/// Weights of the original GRACE formula's weighted mean.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct V1Weights {
    /// Weight of the search quality (from the passage similarities).
    pub search_quality: f64,
    /// Weight of the generator's own confidence, where it gives one.
    pub self_assessment: f64,
    /// Weight of the share of valid citations.
    pub citation_validity: f64,
}

impl Default for V1Weights {
    fn default() -> Self {
        Self {
            search_quality: 0.5,
            self_assessment: 0.3,
            citation_validity: 0.2,
        }
    }
}

/// Bias and per-factor weights of `score = sigmoid(bias + Σ weight·feature)`.
/// The defaults were fitted on GRACE's own training questions in users'
/// words, some held at hand-set values (`grace_config.yml` says which and
/// why); `grace calibrate` fits them to a knowledge base's own questions.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Weights {
    /// Constant added to the logit before the weighted features.
    pub bias: f64,
    /// Weight of the result count (feature: `min(count / 10, 1)`).
    pub result_count: f64,
    /// Weight of the highest passage cosine similarity.
    pub max_score: f64,
    /// Weight of the mean passage cosine similarity.
    pub mean_score: f64,
    /// Weight of the variance of the passage similarities.
    pub score_variance: f64,
    /// Weight of the lowest passage cosine similarity.
    pub min_score: f64,
    /// Weight of the top-1 minus top-2 similarity margin.
    pub margin: f64,
    /// Weight of the top passage's neighbour score (feature:
    /// `max(0, value - 0.5)`); negative, so a generic passage lowers confidence.
    pub neighbour_score: f64,
    /// Weight of the share of query terms found in the passages (0..1).
    pub query_coverage: f64,
    /// Weight of the share of answer sentences supported by their cited source.
    pub groundedness: f64,
    /// Weight of the share of citations that point at a real source.
    pub citation_validity: f64,
    /// Weight of the generator's own confidence, where it gives one.
    pub self_assessment: f64,
    /// Weight of the abstention flag (1 when the generator declined to answer).
    pub abstained: f64,
    /// Weight of the reader's probability that the top passage answers the
    /// question (feature: `value - 0.5`).
    pub reader: f64,
    /// Weight of the reader's top probability minus its second.
    pub reader_margin: f64,
    /// Weight of the share of the question's identifiers found verbatim in
    /// the top passage (feature: `value - 1`, so a missing identifier
    /// lowers confidence and a found one adds nothing).
    pub identifier_coverage: f64,
    /// Weight of the share of a follow-up's own terms found in the
    /// passages (feature: `value - 1`): inherited terms find the
    /// conversation's subject, so what the follow-up adds must be found
    /// too.
    pub follow_up_coverage: f64,
    /// Weight of the rating history of the documents the answer cites
    /// (−1..1; reported only when one has a history). 0 until people's
    /// ratings fit it (`grace calibrate --from-feedback`).
    pub document_history: f64,
}

impl Default for Weights {
    fn default() -> Self {
        Self {
            bias: -12.24,
            result_count: 0.5,
            max_score: 7.99,
            mean_score: 0.0,
            score_variance: 0.0,
            min_score: 0.0,
            margin: 5.67,
            neighbour_score: -7.54,
            query_coverage: 1.46,
            groundedness: 6.0,
            citation_validity: 1.0,
            self_assessment: 1.0,
            abstained: -1.32,
            reader: 3.93,
            reader_margin: 0.79,
            identifier_coverage: 8.0,
            follow_up_coverage: 10.0,
            document_history: 0.0,
        }
    }
}

/// Score thresholds of the levels: `silent ≥ silent`, `notify ≥ notify`,
/// `confirm ≥ confirm`, else escalate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Thresholds {
    /// Lowest score answered as is (level `silent`, decision `answer`).
    pub silent: f64,
    /// Lowest score answered with a caveat (level `notify`, decision `caveat`);
    /// below it the question goes to a reviewer (`escalate`), or is declined
    /// when `ask_user` is off.
    pub notify: f64,
    /// Splits the scores below `notify`: from it up (level `confirm`) the
    /// question always goes to a reviewer; below it (level `escalate`) too,
    /// unless the generator found nothing to answer with and no step failed:
    /// then GRACE declines (`decline`).
    pub confirm: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Self {
            silent: 0.9,
            notify: 0.7,
            confirm: 0.4,
        }
    }
}

/// How step scores combine into a run's score.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Aggregation {
    /// Step `i` (from 1) weighs `i`: later steps (the answer) count most.
    #[default]
    Weighted,
    /// The weakest step.
    Min,
    /// All steps alike.
    Mean,
}

/// The `confidence` section (model-written questions need `llm.provider`).
pub(super) fn validate_confidence(c: &Config) -> Result<()> {
    // Every weight by the name the file gives it, so that none is left
    // out (six were: neighbour_score, the reader's, identifier and
    // follow-up coverage, document_history).
    if let Ok(serde_yaml::Value::Mapping(weights)) = serde_yaml::to_value(c.confidence.weights) {
        for (name, v) in &weights {
            let (Some(name), Some(v)) = (name.as_str(), v.as_f64()) else {
                continue;
            };
            in_range(
                &format!("confidence.weights.{name}"),
                v,
                -1000.0..=1000.0,
                "",
            )?;
        }
    }
    let v1 = &c.confidence.grace_v1;
    for (key, v) in [
        ("confidence.grace_v1.search_quality", v1.search_quality),
        ("confidence.grace_v1.self_assessment", v1.self_assessment),
        (
            "confidence.grace_v1.citation_validity",
            v1.citation_validity,
        ),
    ] {
        in_range(key, v, 0.0..=1000.0, "")?;
    }
    if v1.search_quality + v1.self_assessment + v1.citation_validity <= 0.0 {
        return Err(invalid(
            "confidence.grace_v1",
            "at least one weight must be above 0",
        ));
    }
    if c.confidence
        .calibration
        .as_ref()
        .is_some_and(|p| p.as_os_str().is_empty())
    {
        return Err(invalid(
            "confidence.calibration",
            "must be a file path, or null for none",
        ));
    }
    let sc = &c.confidence.self_calibration;
    in_range(
        "confidence.self_calibration.questions",
        sc.questions,
        1..=10000,
        "",
    )?;
    for (key, v, range) in [
        (
            "confidence.self_calibration.answerable_share",
            sc.answerable_share,
            0.1..=0.9,
        ),
        (
            "confidence.self_calibration.refit_share",
            sc.refit_share,
            0.0..=1.0,
        ),
        (
            "confidence.self_calibration.near_duplicate",
            sc.near_duplicate,
            0.5..=1.0,
        ),
    ] {
        in_range(key, v, range, "")?;
    }
    in_range(
        "confidence.self_calibration.min_sections",
        sc.min_sections,
        10..=100000,
        " (fewer sections cannot fit 17 weights)",
    )?;
    if sc.model_questions && c.llm.provider == LlmProvider::Extractive {
        return Err(invalid(
            "confidence.self_calibration.model_questions",
            "needs a language model to write the questions: set llm.provider to gemini or ollama, or model_questions to false",
        ));
    }
    in_range(
        "confidence.feedback_refit_every",
        c.confidence.feedback_refit_every,
        1..=100000,
        " (new labels between two refits)",
    )?;
    let t = &c.confidence.thresholds;
    for (key, v) in [
        ("confidence.thresholds.silent", t.silent),
        ("confidence.thresholds.notify", t.notify),
        ("confidence.thresholds.confirm", t.confirm),
    ] {
        in_range(key, v, 0.0..=1.0, "")?;
    }
    if !(t.confirm <= t.notify && t.notify <= t.silent) {
        return Err(invalid(
            "confidence.thresholds",
            format!(
                "must satisfy confirm ({}) <= notify ({}) <= silent ({})",
                t.confirm, t.notify, t.silent
            ),
        ));
    }
    Ok(())
}
