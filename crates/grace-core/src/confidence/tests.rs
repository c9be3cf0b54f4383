use super::*;
use crate::config::{ConfidenceConfig, Thresholds, Weights};

fn factors(pairs: &[(Factor, f64)]) -> Factors {
    let mut f = Factors::default();
    for (k, v) in pairs {
        f.set(*k, *v);
    }
    f
}

fn zero_weights() -> Weights {
    Weights {
        bias: 0.0,
        result_count: 0.0,
        max_score: 0.0,
        mean_score: 0.0,
        score_variance: 0.0,
        min_score: 0.0,
        margin: 0.0,
        neighbour_score: 0.0,
        query_coverage: 0.0,
        groundedness: 0.0,
        citation_validity: 0.0,
        self_assessment: 0.0,
        abstained: 0.0,
        reader: 0.0,
        reader_margin: 0.0,
        identifier_coverage: 0.0,
        follow_up_coverage: 0.0,
        document_history: 0.0,
    }
}

#[test]
fn sigmoid_values_and_stability() {
    assert_eq!(sigmoid(0.0), 0.5);
    assert!((sigmoid(1.0) - 0.731_058_578_6).abs() < 1e-9);
    assert!((sigmoid(-1.0) - 0.268_941_421_4).abs() < 1e-9);
    assert_eq!(sigmoid(1000.0), 1.0);
    assert_eq!(sigmoid(-1000.0), 0.0);
    assert!(sigmoid(-1000.0).is_finite());
}

#[test]
fn score_by_hand_uses_the_configured_weights() {
    let w = Weights {
        bias: -1.0,
        max_score: 2.0,
        query_coverage: 1.0,
        ..zero_weights()
    };
    let f = factors(&[(Factor::MaxScore, 0.5), (Factor::QueryCoverage, 1.0)]);
    let s = score(&f, &w);
    // logit = -1 + 2 * 0.5 + 1 * 1.0 = 1
    assert!((s.logit - 1.0).abs() < 1e-12);
    assert!((s.score - 0.731_058_578_6).abs() < 1e-9);
    assert_eq!(s.contributions.len(), 2);
    let max = s
        .contributions
        .iter()
        .find(|c| c.factor == Factor::MaxScore)
        .unwrap();
    assert_eq!((max.value, max.weight, max.term), (0.5, 2.0, 1.0));

    // The weights are really used: change one, the score changes accordingly.
    let w2 = Weights {
        max_score: 4.0,
        ..w
    };
    let s2 = score(&f, &w2);
    assert!((s2.logit - 2.0).abs() < 1e-12);
}

#[test]
fn absent_factors_add_nothing_and_count_saturates() {
    let w = Weights {
        bias: 0.5,
        groundedness: 100.0,
        result_count: 2.0,
        ..zero_weights()
    };
    let s = score(&factors(&[(Factor::ResultCount, 25.0)]), &w);
    // groundedness absent: logit = 0.5 + 2 * min(25/10, 1)
    assert!((s.logit - 2.5).abs() < 1e-12);
    assert_eq!(s.contributions[0].feature, 1.0);
    let mut f = Factors::default();
    f.set(Factor::MaxScore, f64::NAN);
    assert_eq!(f.get(Factor::MaxScore), None);
}

#[test]
fn levels_at_the_thresholds() {
    let t = Thresholds::default();
    assert_eq!(level(0.95, &t), Level::Silent);
    assert_eq!(level(0.9, &t), Level::Silent);
    assert_eq!(level(0.899, &t), Level::Notify);
    assert_eq!(level(0.7, &t), Level::Notify);
    assert_eq!(level(0.69, &t), Level::Confirm);
    assert_eq!(level(0.4, &t), Level::Confirm);
    assert_eq!(level(0.39, &t), Level::Escalate);
    assert_eq!(level(0.0, &t), Level::Escalate);
}

#[test]
fn aggregation_by_hand() {
    let s = [0.2, 0.8];
    assert!((aggregate(&s, Aggregation::Weighted) - 0.6).abs() < 1e-12); // (0.2 + 1.6) / 3
    assert_eq!(aggregate(&s, Aggregation::Min), 0.2);
    assert!((aggregate(&s, Aggregation::Mean) - 0.5).abs() < 1e-12);
    assert_eq!(aggregate(&[], Aggregation::Weighted), 0.0);
    assert_eq!(aggregate(&[0.3], Aggregation::Weighted), 0.3);
}

#[test]
fn assess_scores_steps_and_the_run() {
    let config = ConfidenceConfig {
        weights: Weights {
            bias: 0.0,
            max_score: 1.0,
            ..zero_weights()
        },
        ..Default::default()
    };
    let steps = [
        factors(&[(Factor::MaxScore, 0.0)]),
        factors(&[(Factor::MaxScore, 10.0)]),
    ];
    let (scores, overall, lvl) = assess(&steps, &Scorer::configured(&config), &config);
    assert_eq!(scores[0].score, 0.5);
    let expected = (0.5 + 2.0 * sigmoid(10.0)) / 3.0;
    assert!((overall - expected).abs() < 1e-12);
    assert_eq!(lvl, level(expected, &config.thresholds));
}

/// A fit replaces the configured weights in the scorer only: the
/// configuration still says what was set, and the original formula
/// (`confidence.model: grace_v1`) has no logistic weights to replace.
#[test]
fn a_scorer_scores_with_the_fitted_weights_and_leaves_the_configuration_as_set() {
    let config = ConfidenceConfig {
        weights: Weights {
            bias: 0.0,
            ..zero_weights()
        },
        ..Default::default()
    };
    let fitted = Weights {
        bias: 2.0,
        ..zero_weights()
    };
    let step = factors(&[(Factor::MaxScore, 0.5)]);
    assert_eq!(Scorer::configured(&config).score(&step).score, 0.5);
    let scorer = Scorer::new(&config, Some(fitted));
    assert_eq!(scorer.weights(), &fitted);
    assert_eq!(scorer.score(&step).score, sigmoid(2.0));
    assert_eq!(Scorer::configured(&config).with_weights(fitted), scorer);
    assert_eq!(config.weights.bias, 0.0, "the configuration is untouched");
    let v1 = ConfidenceConfig {
        model: ConfidenceModel::GraceV1,
        ..config.clone()
    };
    assert_eq!(
        Scorer::new(&v1, Some(fitted)).score(&step),
        Scorer::configured(&v1).score(&step)
    );
}

/// A confident wrong answer is the worst outcome GRACE can produce. With the
/// default weights, an answer that is not supported by its sources, or that
/// the generator itself declined, or that rests on passages unrelated to the
/// question, must never reach `notify` or `silent`.
#[test]
fn defaults_never_make_an_unsupported_answer_confident() {
    let w = Weights::default();
    let t = Thresholds::default();
    let strong_retrieval = [
        (Factor::ResultCount, 5.0),
        (Factor::MaxScore, 0.75),
        (Factor::Margin, 0.2),
        (Factor::QueryCoverage, 1.0),
    ];
    let weak_retrieval = [
        (Factor::ResultCount, 5.0),
        (Factor::MaxScore, 0.25),
        (Factor::Margin, 0.01),
        (Factor::QueryCoverage, 0.2),
    ];
    let with = |base: &[(Factor, f64)], extra: &[(Factor, f64)]| {
        let mut f = factors(base);
        f.merge(&factors(extra));
        level(score(&f, &w).score, &t)
    };
    // Retrieval alone is not an answer.
    assert!(with(&strong_retrieval, &[]) <= Level::Confirm);
    // Ungrounded or invalidly cited answer on strong retrieval.
    let ungrounded = [(Factor::Groundedness, 0.0), (Factor::CitationValidity, 0.0)];
    assert!(with(&strong_retrieval, &ungrounded) <= Level::Confirm);
    // The generator abstained: what `answer_factors` reports for an
    // abstention (no groundedness: nothing was claimed).
    let abstained = [(Factor::CitationValidity, 1.0), (Factor::Abstained, 1.0)];
    assert_eq!(with(&strong_retrieval, &abstained), Level::Escalate);
    // Grounded in passages that do not match the question.
    let grounded = [(Factor::Groundedness, 1.0), (Factor::CitationValidity, 1.0)];
    assert_eq!(with(&weak_retrieval, &grounded), Level::Escalate);
    // And the good case is answered silently.
    assert_eq!(with(&strong_retrieval, &grounded), Level::Silent);
}

#[test]
fn a_generic_top_passage_lowers_confidence_and_a_distinctive_one_never_raises_it() {
    let w = Weights::default();
    let base = [(Factor::MaxScore, 0.7), (Factor::Groundedness, 1.0)];
    let with = |neighbour: Option<f64>| {
        let mut f = factors(&base);
        if let Some(n) = neighbour {
            f.set(Factor::NeighbourScore, n);
        }
        score(&f, &w).logit
    };
    // A negative weight on max(0, value - 0.5): a hub passage (0.8) costs
    // 0.3 of the weight in logit; a typical (0.5) or distinctive (0.3) one
    // changes nothing.
    assert!(w.neighbour_score < 0.0);
    assert!((with(Some(0.8)) - (with(None) + 0.3 * w.neighbour_score)).abs() < 1e-9);
    assert!((with(Some(0.5)) - with(None)).abs() < 1e-9);
    assert!((with(Some(0.3)) - with(None)).abs() < 1e-9);
}

#[test]
fn the_hand_set_weights_parse_and_differ_from_the_defaults() {
    let hand = hand_set_weights().expect("config/hand-set-weights.yml parses");
    assert_eq!(hand.max_score, 12.0);
    assert_ne!(hand, Weights::default());
}

#[test]
fn the_scorers_version_changes_with_the_weights_and_only_with_them() {
    let config = ConfidenceConfig::default();
    let same = Scorer::configured(&config).version();
    assert_eq!(
        Scorer::configured(&ConfidenceConfig::default()).version(),
        same
    );
    assert!(same.starts_with("logistic:"), "{same}");
    assert_eq!(same.len(), "logistic:".len() + 16);
    let mut weights = config.weights;
    weights.bias += 0.5;
    assert_ne!(Scorer::new(&config, Some(weights)).version(), same);
}
