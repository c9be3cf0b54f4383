//! What documents' ratings would do to the ranking (`grace eval DIR
//! --feedback N --document-boost B`), measured on the knowledge base the
//! questions were just asked of.

use serde::Serialize;

use super::sample::{document_ratings, sample, simulated_asker};
use super::set::{Question, is_gold};
use grace::KnowledgeBase;
use grace::Result;
use grace::config::FeedbackConfig;
use grace::feedback::{document_boosts, document_history};
use grace::rng::Rng;

/// What the document boost does to the ranking (`grace eval DIR
/// --feedback N --document-boost B`): the answered questions of the sample
/// are rated (their cited documents up when right, down when not, flipped
/// as the curve's are), and the held-out answerable questions are searched
/// without and with the boosts those ratings give.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BoostProbe {
    /// `feedback.document_boost` measured.
    pub boost: f64,
    /// Answers rated (the sample's answered questions).
    pub rated_answers: usize,
    /// Documents with a boost.
    pub documents: usize,
    /// Held-out answerable questions searched.
    pub questions: usize,
    /// Recall at 1 without the boosts.
    pub recall_at_1: f64,
    /// Recall at k without the boosts.
    pub recall_at_k: f64,
    /// Recall at 1 with them.
    pub boosted_recall_at_1: f64,
    /// Recall at k with them.
    pub boosted_recall_at_k: f64,
}

/// Runs the [`BoostProbe`] on the knowledge base the questions were asked
/// of (`outcomes[i]`: whether question `i` was answered, and right;
/// `cited[i]`: the documents its answer cites); `None` when the sample
/// leaves no question out or no boost is asked for.
pub(super) fn probe(
    kb: &KnowledgeBase,
    questions: &[Question],
    outcomes: &[(bool, bool)],
    cited: &[Vec<String>],
    sim: &super::FeedbackSim,
    k: usize,
) -> Result<Option<BoostProbe>> {
    let Some(boost) = sim.document_boost else {
        return Ok(None);
    };
    let mut rng = Rng::new(sim.seed);
    let Some(drawn) = sample(&mut rng, outcomes.len(), sim.ratings, sim.noise) else {
        return Ok(None);
    };
    let now = chrono::Utc::now();
    let votes: Vec<(usize, bool)> = drawn
        .rated
        .iter()
        .map(|&(i, flip)| (i, outcomes[i].1 != flip))
        .collect();
    let ratings = document_ratings(cited, |i| outcomes[i].0, &votes, simulated_asker, now);
    let rated_answers = votes.iter().filter(|(i, _)| outcomes[*i].0).count();
    let config = FeedbackConfig {
        document_boost: boost,
        ..kb.config().feedback.clone()
    };
    let history = document_history(&ratings, now, config.document_boost_half_life_days);
    let boosts = document_boosts(&history, &config);
    let held: Vec<&Question> = drawn
        .held_out
        .iter()
        .map(|&i| &questions[i])
        .filter(|q| q.answerable)
        .collect();
    // (gold first, gold in the top k) per question, without and with.
    let recall = |kb: &KnowledgeBase| -> Result<(f64, f64)> {
        let (mut at_1, mut at_k) = (0usize, 0usize);
        for q in &held {
            let passages = kb.search(&q.question, Some(k), None)?;
            at_1 += usize::from(passages.first().is_some_and(|p| is_gold(q, &p.source)));
            at_k += usize::from(passages.iter().any(|p| is_gold(q, &p.source)));
        }
        let n = held.len().max(1) as f64;
        Ok((at_1 as f64 / n, at_k as f64 / n))
    };
    // The evaluation's own knowledge base: it starts without boosts.
    let plain = recall(kb)?;
    let documents = boosts.len();
    kb.set_document_boosts(boosts);
    let boosted = recall(kb)?;
    Ok(Some(BoostProbe {
        boost,
        rated_answers,
        documents,
        questions: held.len(),
        recall_at_1: plain.0,
        recall_at_k: plain.1,
        boosted_recall_at_1: boosted.0,
        boosted_recall_at_k: boosted.1,
    }))
}
