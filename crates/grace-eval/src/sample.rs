//! The simulated askers of `grace eval --feedback N`: which questions
//! they rate, drawn once from a seed, for the learning curve
//! ([`super::feedback_sim`]) and the document boost's probe
//! ([`super::boost_probe`]) alike.

use chrono::{DateTime, Utc};

use grace::feedback::DocumentRating;
use grace::rng::Rng;

/// The simulated askers' draw: which questions are rated (in order, each
/// with whether its rating is flipped) and which are held out.
pub(super) struct Sample {
    /// The rated questions' indices, each with whether its rating is flipped.
    pub(super) rated: Vec<(usize, bool)>,
    /// The other questions' indices.
    pub(super) held_out: Vec<usize>,
}

/// Draws `ratings` of `questions` (a seeded shuffle, then a flip with
/// chance `noise` for each rated one); `None` when none would be left to
/// score on. The learning curve and the document boost's probe draw the
/// same sample from the same seed.
pub(super) fn sample(
    rng: &mut Rng,
    questions: usize,
    ratings: usize,
    noise: f64,
) -> Option<Sample> {
    if ratings >= questions {
        return None;
    }
    let mut order: Vec<usize> = (0..questions).collect();
    rng.shuffle(&mut order);
    let (rated, held_out) = order.split_at(ratings);
    let rated: Vec<(usize, bool)> = rated.iter().map(|&i| (i, rng.unit() < noise)).collect();
    Some(Sample {
        rated,
        held_out: held_out.to_vec(),
    })
}

/// The simulated asker who rated question `i`.
pub(super) fn simulated_asker(i: usize) -> String {
    format!("simulated-asker-{i}")
}

/// The document ratings simulated askers give at `at`: each vote
/// (question, up) counts for every document the question's answer cites
/// (`cited`), from `asker(question)` ([`simulated_asker`], or one asker
/// for a flood). Only an answer can be rated: `answered` says which
/// questions were.
pub(super) fn document_ratings(
    cited: &[Vec<String>],
    answered: impl Fn(usize) -> bool,
    votes: &[(usize, bool)],
    asker: impl Fn(usize) -> String,
    at: DateTime<Utc>,
) -> Vec<DocumentRating> {
    votes
        .iter()
        .filter(|(i, _)| answered(*i))
        .flat_map(|&(i, up)| {
            let asker = asker(i);
            cited[i].iter().map(move |source| DocumentRating {
                asker: asker.clone(),
                source: source.clone(),
                up,
                at,
            })
        })
        .collect()
}
