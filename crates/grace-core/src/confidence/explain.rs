//! A score told as a person reads it: where every answer starts (the
//! weights' intercept), then what raised it and what lowered it, largest
//! first. Nothing is left out, so what is shown adds up to the logit.

use super::{Contribution, Factor, Score};
use crate::config::ConfidenceModel;

/// A logistic score explained.
#[derive(Debug, Clone, PartialEq)]
pub struct Explanation<'a> {
    /// Where every answer starts before any factor: the weights' bias.
    pub baseline: f64,
    /// The factors that raised the score, largest first.
    pub raised: Vec<&'a Contribution>,
    /// The factors that lowered it, largest first.
    pub lowered: Vec<&'a Contribution>,
    /// `baseline` plus every term: the score's logit.
    pub logit: f64,
}

impl Explanation<'_> {
    /// The baseline plus every term shown (equal to [`Explanation::logit`]).
    pub fn total(&self) -> f64 {
        self.baseline
            + self
                .raised
                .iter()
                .chain(&self.lowered)
                .map(|c| c.term)
                .sum::<f64>()
    }
}

/// `score` as a baseline and its factors' terms, each direction largest
/// first (a term of exactly 0 moves nothing and is in neither). `None` for
/// a score that is not a logistic one (`grace_v1` has no baseline) or a
/// failed step's (no factors, no logit).
pub fn explain(score: &Score) -> Option<Explanation<'_>> {
    if score.model != ConfidenceModel::Logistic || !score.logit.is_finite() {
        return None;
    }
    let by_size = |a: &&Contribution, b: &&Contribution| b.term.abs().total_cmp(&a.term.abs());
    let mut raised: Vec<&Contribution> = score
        .contributions
        .iter()
        .filter(|c| c.term > 0.0)
        .collect();
    let mut lowered: Vec<&Contribution> = score
        .contributions
        .iter()
        .filter(|c| c.term < 0.0)
        .collect();
    raised.sort_by(by_size);
    lowered.sort_by(by_size);
    Some(Explanation {
        baseline: score.bias,
        raised,
        lowered,
        logit: score.logit,
    })
}

/// How much more a factor could have added: for a positive weight, the
/// weight times the room left below the feature's ceiling
/// ([`Factor::ceiling`]); for a negative one, what it took away.
pub fn shortfall(c: &Contribution) -> f64 {
    if c.weight > 0.0 {
        c.weight * (c.factor.ceiling() - c.feature).max(0.0)
    } else {
        -c.term
    }
}

impl Factor {
    /// The factor's name as the API and configuration write it
    /// (`max_score`).
    pub fn name(self) -> String {
        serde_json::to_value(self)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
    }

    /// The factor in plain words (`texts`, the asker's language): as it
    /// raised the score or lowered it, or, for a factor whose words tell
    /// its value ([`Factor::DocumentHistory`]: rated up or down), as the
    /// value was.
    pub fn in_words(self, texts: &crate::lang::Texts, c: &Contribution) -> String {
        let up = match self {
            Factor::DocumentHistory => c.value > 0.0,
            _ => c.term > 0.0,
        };
        texts.factor(&self.name(), up)
    }

    /// The largest feature the factor can have ([`Factor::feature`]): 1 for
    /// shares and similarities, 0 for the coverages counted as value − 1
    /// (finding every identifier adds nothing), 0.5 for the reader's
    /// probability centred on even odds and for the neighbour score above
    /// its typical 0.5.
    pub fn ceiling(self) -> f64 {
        match self {
            Factor::IdentifierCoverage | Factor::FollowUpCoverage => 0.0,
            Factor::Reader | Factor::NeighbourScore => 0.5,
            _ => 1.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::confidence::{Factors, score};
    use crate::config::Weights;
    use crate::rng::Rng;

    #[test]
    fn the_baseline_and_every_term_add_up_to_the_logit() {
        // Property: random factors and weights, every factor or some.
        let mut rng = Rng::new(7);
        for _ in 0..2_000 {
            let mut weights = Weights {
                bias: rng.unit() * 30.0 - 15.0,
                ..Weights::default()
            };
            let mut factors = Factors::default();
            for f in Factor::ALL {
                *f.weight_mut(&mut weights) = rng.unit() * 20.0 - 10.0;
                if rng.unit() < 0.7 {
                    factors.set(f, rng.unit() * 2.0 - 0.5);
                }
            }
            let s = score(&factors, &weights);
            let e = explain(&s).expect("a logistic score");
            assert!((e.total() - s.logit).abs() < 1e-9, "{e:?} vs {}", s.logit);
            assert_eq!(e.baseline, weights.bias);
            assert!(e.raised.iter().all(|c| c.term > 0.0));
            assert!(e.lowered.iter().all(|c| c.term < 0.0));
            assert!(e.raised.windows(2).all(|w| w[0].term >= w[1].term));
            assert!(e.lowered.windows(2).all(|w| w[0].term <= w[1].term));
        }
    }

    #[test]
    fn a_full_coverage_is_no_shortfall_and_a_failed_step_has_no_explanation() {
        let mut f = Factors::default();
        f.set(Factor::FollowUpCoverage, 1.0)
            .set(Factor::IdentifierCoverage, 1.0)
            .set(Factor::MaxScore, 0.45);
        let s = score(&f, &Weights::default());
        let short = |factor| {
            s.contributions
                .iter()
                .find(|c| c.factor == factor)
                .map(shortfall)
                .unwrap()
        };
        // "FollowUpCoverage 1.00" was called the weakest factor.
        assert_eq!(short(Factor::FollowUpCoverage), 0.0);
        assert_eq!(short(Factor::IdentifierCoverage), 0.0);
        assert!(short(Factor::MaxScore) > 0.0);
        assert!(explain(&crate::confidence::failed_score()).is_none());
    }

    #[test]
    fn every_factor_has_plain_words_in_every_language() {
        for lang in [crate::lang::Lang::En, crate::lang::Lang::Ja] {
            let texts = lang.texts();
            for f in Factor::ALL {
                assert!(
                    texts.factors.iter().any(|(n, _, _)| *n == f.name()),
                    "{lang:?} has no words for {}",
                    f.name()
                );
            }
        }
    }
}
