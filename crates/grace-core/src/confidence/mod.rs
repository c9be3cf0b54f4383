//! Confidence: a step's factors → features → a score in [0, 1] → a level.
//!
//! `score = sigmoid(bias + Σ weightᵢ · featureᵢ)` over the factors a step
//! reports, with the bias and weights from `confidence.weights` in the
//! config. Every score comes with its [`Contribution`]s (factor, value,
//! feature, weight, product), so each number that reaches a user can be
//! explained. Levels come from `confidence.thresholds`; the score of a run
//! aggregates its steps' scores (`confidence.aggregation`).
//!
//! A confident wrong answer is the worst outcome GRACE can produce: the
//! default weights make an abstention or ungrounded answer pull the score
//! down hard, and a retrieval that does not cover the question's terms
//! cannot reach `silent` on similarity alone.

mod answer;
pub mod calibration;
mod explain;
pub mod fit;
mod history;
pub mod metrics;
mod retrieval;
mod scorer;
pub mod v1;

pub use self::answer::{
    CitedSentence, SUPPORT_THRESHOLD, answer_factors, citation_markers, cited_sentences,
    cited_support, renumber_markers, strip_markers,
};
pub use self::explain::{Explanation, explain, shortfall};
pub use self::history::document_history_factor;
pub use self::retrieval::{query_coverage, retrieval_factors};
pub use self::scorer::Scorer;
pub use crate::lexical::term_coverage;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::config::{Aggregation, ConfidenceConfig, ConfidenceModel, Thresholds, Weights};

/// What a step can report about how much to trust its result.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Factor {
    /// Number of passages retrieved.
    ResultCount,
    /// Highest passage similarity (cosine, -1..1); for an answer, the
    /// weakest similarity among the passages it cites.
    MaxScore,
    /// Mean passage similarity.
    MeanScore,
    /// Population variance of the passage similarities.
    ScoreVariance,
    /// Lowest passage similarity.
    MinScore,
    /// Top-1 minus top-2 similarity.
    Margin,
    /// Mean similarity of the top passage to its nearest passages in the
    /// collection: how generic it is. A passage close to everything is
    /// also close to questions it does not answer (hubness; CSLS corrects
    /// similarities by the same term).
    NeighbourScore,
    /// Share of the question's content words and identifiers found in the
    /// passages (0..1).
    QueryCoverage,
    /// Share of answer sentences supported by the passage they cite (0..1).
    Groundedness,
    /// Share of citations that point at a real source (0..1).
    CitationValidity,
    /// The generator's own confidence, where it gives one (0..1).
    SelfAssessment,
    /// 1 when the generator declined to answer, else 0.
    Abstained,
    /// The answerability reader's probability that the top passage answers
    /// the question (0..1): it reads question and passage together, so it
    /// tells an answer from a passage that is merely about the same thing.
    Reader,
    /// The reader's top probability minus its second (0..1).
    ReaderMargin,
    /// Share of the question's identifiers (`E0392`, `--purge`,
    /// `core.autocrlf`) found verbatim in the top passage (0..1); reported
    /// only for questions that name one.
    IdentifierCoverage,
    /// Share of a follow-up's own terms (the words the asker typed, not
    /// those inherited from the conversation) found in the passages
    /// (0..1); reported only for follow-ups rewritten to stand alone.
    FollowUpCoverage,
    /// The rating history of the documents the answer cites: per document
    /// `(up − down) / (up + down + 1)` of askers' ratings (one vote per
    /// asker, halving with age), averaged over the cited documents that
    /// have one (−1..1); reported only when one has.
    DocumentHistory,
}

impl Factor {
    /// Every factor, in a fixed order.
    pub const ALL: [Factor; 17] = [
        Factor::ResultCount,
        Factor::MaxScore,
        Factor::MeanScore,
        Factor::ScoreVariance,
        Factor::MinScore,
        Factor::Margin,
        Factor::NeighbourScore,
        Factor::QueryCoverage,
        Factor::Groundedness,
        Factor::CitationValidity,
        Factor::SelfAssessment,
        Factor::Abstained,
        Factor::Reader,
        Factor::ReaderMargin,
        Factor::IdentifierCoverage,
        Factor::FollowUpCoverage,
        Factor::DocumentHistory,
    ];

    /// The feature the weight multiplies. Factors are already on a 0..1 (or
    /// cosine) scale except the result count, which saturates at 10, and
    /// the neighbour score, which counts only above a typical neighbourhood
    /// (0.5): a generic passage lowers confidence, a distinctive one never
    /// raises it (in a small or varied collection every passage looks
    /// distinctive, and a confident wrong answer is the worst outcome).
    /// The reader's probability is centred on even odds (below 0.5 lowers
    /// the score); identifier coverage counts only what is missing (an
    /// identifier the passage lacks lowers the score, finding every one
    /// adds nothing: naming an identifier is no evidence of an answer).
    pub fn feature(self, value: f64) -> f64 {
        match self {
            Factor::ResultCount => (value / 10.0).clamp(0.0, 1.0),
            Factor::NeighbourScore => (value - 0.5).max(0.0),
            Factor::Reader => value - 0.5,
            Factor::IdentifierCoverage | Factor::FollowUpCoverage => value - 1.0,
            _ => value,
        }
    }

    /// The weight of this factor in `weights`.
    pub fn weight(self, weights: &Weights) -> f64 {
        // One match for reading and writing: `Weights` is plain `f64`s.
        let mut weights = *weights;
        *self.weight_mut(&mut weights)
    }

    /// The weight of this factor in `weights`, to change it.
    pub fn weight_mut(self, weights: &mut Weights) -> &mut f64 {
        match self {
            Factor::ResultCount => &mut weights.result_count,
            Factor::MaxScore => &mut weights.max_score,
            Factor::MeanScore => &mut weights.mean_score,
            Factor::ScoreVariance => &mut weights.score_variance,
            Factor::MinScore => &mut weights.min_score,
            Factor::Margin => &mut weights.margin,
            Factor::NeighbourScore => &mut weights.neighbour_score,
            Factor::QueryCoverage => &mut weights.query_coverage,
            Factor::Groundedness => &mut weights.groundedness,
            Factor::CitationValidity => &mut weights.citation_validity,
            Factor::SelfAssessment => &mut weights.self_assessment,
            Factor::Abstained => &mut weights.abstained,
            Factor::Reader => &mut weights.reader,
            Factor::ReaderMargin => &mut weights.reader_margin,
            Factor::IdentifierCoverage => &mut weights.identifier_coverage,
            Factor::FollowUpCoverage => &mut weights.follow_up_coverage,
            Factor::DocumentHistory => &mut weights.document_history,
        }
    }
}

/// The factors one step reported (a factor a step does not measure is
/// absent, and contributes nothing).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(transparent)]
pub struct Factors(pub BTreeMap<Factor, f64>);

impl Factors {
    /// Sets a factor (non-finite values are ignored: they carry no evidence).
    pub fn set(&mut self, factor: Factor, value: f64) -> &mut Self {
        if value.is_finite() {
            self.0.insert(factor, value);
        }
        self
    }

    /// The value of a factor, if reported.
    pub fn get(&self, factor: Factor) -> Option<f64> {
        self.0.get(&factor).copied()
    }

    /// Adds the factors of `other`, replacing equal ones.
    pub fn merge(&mut self, other: &Factors) {
        self.0.extend(other.0.iter().map(|(k, v)| (*k, *v)));
    }
}

/// The score of a failed step: zero, explained by its absence of factors.
pub fn failed_score() -> Score {
    Score {
        score: 0.0,
        logit: f64::NEG_INFINITY,
        bias: 0.0,
        contributions: Vec::new(),
        model: Default::default(),
    }
}

/// One term of a score: why the score is what it is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Contribution {
    /// The factor this term comes from.
    pub factor: Factor,
    /// The value the step reported for it.
    pub value: f64,
    /// The value as the weight sees it ([`Factor::feature`]).
    pub feature: f64,
    /// The factor's configured weight.
    pub weight: f64,
    /// `weight · feature`: what this factor adds to the logit.
    pub term: f64,
}

/// A scored step, with its explanation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Score {
    /// In [0, 1].
    pub score: f64,
    /// `bias + Σ terms` (minus infinity for a failed step, which JSON
    /// writes as `null`).
    #[serde(deserialize_with = "null_as_minus_infinity")]
    #[schema(value_type = Option<f64>)]
    pub logit: f64,
    /// The configured bias the logit starts from.
    pub bias: f64,
    /// One term per reported factor, in [`Factor`] order.
    pub contributions: Vec<Contribution>,
    /// The formula that produced it (`logistic`: the logit is the bias plus
    /// the terms; `grace_v1`: the score is the sum of the terms).
    #[serde(default)]
    pub model: ConfidenceModel,
}

fn null_as_minus_infinity<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NEG_INFINITY))
}

/// Scores factors with the configured weights.
pub fn score(factors: &Factors, weights: &Weights) -> Score {
    let contributions: Vec<Contribution> = factors
        .0
        .iter()
        .map(|(&factor, &value)| {
            let feature = factor.feature(value);
            let weight = factor.weight(weights);
            Contribution {
                factor,
                value,
                feature,
                weight,
                term: weight * feature,
            }
        })
        .collect();
    let logit = weights.bias + contributions.iter().map(|c| c.term).sum::<f64>();
    Score {
        score: sigmoid(logit),
        logit,
        bias: weights.bias,
        contributions,
        model: ConfidenceModel::Logistic,
    }
}

/// The weights GRACE first shipped, set by hand
/// (`config/hand-set-weights.yml`, compiled in): the evaluation's baseline
/// column. `None` only if that file stopped parsing (a test checks it does).
pub fn hand_set_weights() -> Option<Weights> {
    const FILE: &str = include_str!("../../../../config/hand-set-weights.yml");
    let tree: serde_yaml::Value = serde_yaml::from_str(FILE).ok()?;
    let weights = tree.get("confidence")?.get("weights")?.clone();
    serde_yaml::from_value(weights).ok()
}

/// The logistic function, stable for large |x|.
pub fn sigmoid(x: f64) -> f64 {
    if x >= 0.0 {
        1.0 / (1.0 + (-x).exp())
    } else {
        let e = x.exp();
        e / (1.0 + e)
    }
}

/// What a score means for the user.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// Below `confirm`: a human must look at it.
    Escalate,
    /// Escalate: a reviewer answers (between `confirm` and `notify`).
    Confirm,
    /// Answer, with a caveat.
    Notify,
    /// Answer.
    Silent,
}

/// The level of a score.
pub fn level(score: f64, t: &Thresholds) -> Level {
    if score >= t.silent {
        Level::Silent
    } else if score >= t.notify {
        Level::Notify
    } else if score >= t.confirm {
        Level::Confirm
    } else {
        Level::Escalate
    }
}

/// Combines step scores (in run order) into the run's score.
///
/// `weighted`: step `i` (from 1) weighs `i`, so later steps — the answer —
/// count most; `min`: the weakest step; `mean`: all alike. An empty run
/// scores 0.
pub fn aggregate(scores: &[f64], how: Aggregation) -> f64 {
    if scores.is_empty() {
        return 0.0;
    }
    match how {
        Aggregation::Min => scores.iter().copied().fold(f64::INFINITY, f64::min),
        Aggregation::Mean => scores.iter().sum::<f64>() / scores.len() as f64,
        Aggregation::Weighted => {
            let (num, den) = scores
                .iter()
                .enumerate()
                .fold((0.0, 0.0), |(n, d), (i, s)| {
                    let w = (i + 1) as f64;
                    (n + w * s, d + w)
                });
            num / den
        }
    }
}

/// Scores every step with `scorer` and the run as `config` aggregates it.
pub fn assess(
    steps: &[Factors],
    scorer: &Scorer,
    config: &ConfidenceConfig,
) -> (Vec<Score>, f64, Level) {
    let scores: Vec<Score> = steps.iter().map(|f| scorer.score(f)).collect();
    let values: Vec<f64> = scores.iter().map(|s| s.score).collect();
    let overall = aggregate(&values, config.aggregation);
    (scores, overall, level(overall, &config.thresholds))
}

#[cfg(test)]
mod tests;
