//! Fusing the dense and the lexical ranking: each candidate scores its
//! dense cosine plus a bounded lexical bonus,
//!
//! ```text
//! score = cosine + weight · BM25 / best BM25 of the query
//! ```
//!
//! so the lexical ranking can reorder passages whose cosines lie within
//! `weight` of each other, and never lift a passage that only shares a
//! few words with the question over one that is much closer in meaning.
//! A passage only the lexical ranking found counts the lowest cosine of the
//! dense candidates (the most it can have: it was not among them), so no
//! extra read is needed to rank it.
//!
//! The bonus is gated ([`fuse_gated`], `search.rare_term_share`): a
//! passage takes it only with strong lexical evidence the dense ranking's
//! first passage lacks, a rare term or an identifier of the question, so
//! words the question shares with half the candidates never reorder the
//! dense ranking. The gate was chosen by cross-validation across corpora,
//! one held out at a time (`examples/fusion_cv.rs`; the book,
//! "Evaluation").
//!
//! Reciprocal rank fusion, which GRACE used before, counts ranks only: on
//! questions in users' own words the lexical ranking's first place (a
//! passage sharing common words) outweighed the dense ranking's. Measured
//! on GRACE's training questions (`eval/users-words`, train split) and
//! reported beside the evaluation sets in the book ("In users' own words").

use std::collections::{HashMap, HashSet};

/// A point's place in the fused ranking.
#[derive(Debug, Clone, PartialEq)]
pub struct Fused {
    /// The point's id.
    pub id: u64,
    /// `cosine + weight · BM25 / best BM25` (the ranking order).
    pub score: f32,
    /// Rank (from 1) in the dense and in the lexical ranking, `None` where
    /// absent.
    pub ranks: [Option<usize>; 2],
}

/// Fuses a dense ranking (ids with cosines, best first) and a lexical one
/// (ids with BM25 scores, best first) with the lexical ranking's `weight`.
/// Equal scores keep the order in which points first appear, dense first.
pub fn fuse(dense: &[(u64, f32)], lexical: &[(u64, f32)], weight: f32) -> Vec<Fused> {
    fuse_where(dense, lexical, weight, |_| true)
}

/// [`fuse`], with the lexical bonus given only to the points `takes_bonus`
/// accepts (the others keep their cosine, and their lexical rank is still
/// reported); the bonus is always relative to the best BM25 of the whole
/// lexical ranking.
fn fuse_where(
    dense: &[(u64, f32)],
    lexical: &[(u64, f32)],
    weight: f32,
    takes_bonus: impl Fn(u64) -> bool,
) -> Vec<Fused> {
    let floor = dense.iter().map(|&(_, s)| s).fold(f32::INFINITY, f32::min);
    let floor = if floor.is_finite() { floor } else { 0.0 };
    let best = lexical.iter().map(|&(_, s)| s).fold(0.0_f32, f32::max);
    let mut order: Vec<u64> = Vec::with_capacity(dense.len() + lexical.len());
    let mut by_id: HashMap<u64, Fused> = HashMap::with_capacity(dense.len() + lexical.len());
    for (i, &(id, cosine)) in dense.iter().enumerate() {
        by_id.entry(id).or_insert_with(|| {
            order.push(id);
            Fused {
                id,
                score: cosine,
                ranks: [Some(i + 1), None],
            }
        });
    }
    for (i, &(id, bm25)) in lexical.iter().enumerate() {
        let entry = by_id.entry(id).or_insert_with(|| {
            order.push(id);
            Fused {
                id,
                score: floor,
                ranks: [None, None],
            }
        });
        if entry.ranks[1].is_none() {
            entry.ranks[1] = Some(i + 1);
            if best > 0.0 && bm25.is_finite() && takes_bonus(id) {
                entry.score += weight * bm25.max(0.0) / best;
            }
        }
    }
    let mut fused: Vec<Fused> = order.iter().filter_map(|id| by_id.remove(id)).collect();
    // Stable sort: equal scores keep first-appearance order.
    fused.sort_by(|a, b| b.score.total_cmp(&a.score));
    fused
}

/// The lexical side's say in the order, beyond the bonus's `weight`: a
/// passage may take the lexical bonus only when it holds strong lexical
/// evidence the dense ranking's first passage lacks — a rare term or an
/// identifier of the question.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Gate {
    /// A question term is rare when at most this share of the candidate
    /// passages (both rankings' together) contain it: a word every second
    /// candidate holds ("package" in the Debian FAQ) is no evidence.
    pub rare_share: f32,
    /// Strong terms a passage needs before its lexical bonus counts.
    pub min_terms: usize,
}

impl Gate {
    /// The gate `search.rare_term_share` and `search.rare_terms` describe.
    pub fn of(search: &crate::config::SearchConfig) -> Self {
        Gate {
            rare_share: search.rare_term_share as f32,
            min_terms: search.rare_terms,
        }
    }

    /// No gate: every passage takes its bonus (the plain fusion).
    pub const OPEN: Gate = Gate {
        rare_share: 1.0,
        min_terms: 0,
    };
}

/// What the gate reads of one search: the question's terms, which of them
/// are identifiers, and each candidate passage's terms.
#[derive(Debug, Clone, Copy)]
pub struct Evidence<'a> {
    /// The question's lexical term ids.
    pub question: &'a [u32],
    /// Those of them that are identifiers (`fetch.prune`, `E0392`).
    pub identifiers: &'a HashSet<u32>,
    /// Each candidate's lexical term ids; a candidate missing here holds
    /// no evidence.
    pub passages: &'a HashMap<u64, HashSet<u32>>,
}

/// For each candidate, how many strong terms it holds that the dense
/// ranking's first passage lacks: question terms that are identifiers or
/// rare among the candidates ([`Gate::rare_share`]).
pub fn strong_terms(
    dense: &[(u64, f32)],
    evidence: &Evidence<'_>,
    gate: &Gate,
) -> HashMap<u64, usize> {
    let pool = evidence.passages.len().max(1) as f32;
    let rare: Vec<u32> = evidence
        .question
        .iter()
        .copied()
        .filter(|t| {
            evidence.identifiers.contains(t) || {
                let holders = evidence
                    .passages
                    .values()
                    .filter(|terms| terms.contains(t))
                    .count();
                holders as f32 <= gate.rare_share * pool
            }
        })
        .collect();
    let empty = HashSet::new();
    let first = dense
        .first()
        .and_then(|(id, _)| evidence.passages.get(id))
        .unwrap_or(&empty);
    evidence
        .passages
        .iter()
        .map(|(&id, terms)| {
            let held = rare
                .iter()
                .filter(|t| terms.contains(t) && !first.contains(t))
                .count();
            (id, held)
        })
        .collect()
}

/// [`fuse`] with a [`Gate`]: the dense ranking's order stands unless
/// strong lexical evidence reorders it. A passage takes its lexical bonus
/// when it holds at least `gate.min_terms` strong terms the dense first
/// lacks, or when it is the dense first itself (so it is overtaken only by
/// a passage whose evidence outweighs its own); every other passage keeps
/// its cosine. With [`Gate::OPEN`] this is [`fuse`].
pub fn fuse_gated(
    dense: &[(u64, f32)],
    lexical: &[(u64, f32)],
    weight: f32,
    evidence: &Evidence<'_>,
    gate: &Gate,
) -> Vec<Fused> {
    if *gate == Gate::OPEN {
        return fuse(dense, lexical, weight);
    }
    let strong = strong_terms(dense, evidence, gate);
    let first = dense.first().map(|(id, _)| *id);
    let needed = gate.min_terms.max(1);
    fuse_where(dense, lexical, weight, |id| {
        Some(id) == first || strong.get(&id).is_some_and(|&n| n >= needed)
    })
}

/// Puts the passages that contain the question's identifiers first: more
/// identifiers first, the fused order kept among equals (`pinned`: each
/// such passage's count).
pub fn pin(fused: &mut [Fused], pinned: &HashMap<u64, usize>) {
    // Stable: among equal counts the fused order stays.
    fused.sort_by_key(|f| std::cmp::Reverse(pinned.get(&f.id).copied().unwrap_or(0)));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(fused: &[Fused]) -> Vec<u64> {
        fused.iter().map(|f| f.id).collect()
    }

    #[test]
    fn the_lexical_bonus_reorders_close_passages_only() {
        // 1 is the dense first; 2 is 0.05 behind and the lexical first.
        let dense = [(1, 0.60), (2, 0.55), (3, 0.30)];
        let lexical = [(2, 12.0), (3, 11.0), (1, 2.0)];
        let fused = fuse(&dense, &lexical, 0.15);
        // 2: 0.55 + 0.15 = 0.70; 1: 0.60 + 0.025 = 0.625; 3: 0.30 + 0.1375.
        assert_eq!(ids(&fused), [2, 1, 3]);
        assert_eq!(fused[0].ranks, [Some(2), Some(1)]);
        assert!((fused[0].score - 0.70).abs() < 1e-6);
        // 3 shares as many words, but is far from the question in meaning.
        assert!(fused[2].score < fused[1].score);
    }

    #[test]
    fn the_dense_first_hit_stays_first_when_the_lexical_side_only_matches_common_words() {
        // "apt keeps upgrading nginx and breaking my config, can I freeze
        // it?": the dense ranking finds the page on holding packages (0.62);
        // the lexical ranking's best shares "upgrading", "config" and
        // "breaking" with the question and nothing of its meaning (0.41),
        // and is the dense ranking's 30th.
        let dense = [(1, 0.62), (7, 0.55), (3, 0.52), (9, 0.41)];
        let lexical = [(9, 14.0), (3, 9.5), (1, 6.0)];
        for weight in [0.15, 0.3] {
            let fused = fuse(&dense, &lexical, weight);
            assert_eq!(fused[0].id, 1, "weight {weight}: {fused:?}");
        }
        // However high their BM25, a bonus of at most `weight` cannot close
        // a cosine gap wider than `weight` (9 is 0.21 behind; 4, found by
        // the lexical ranking alone, counts the lowest dense cosine).
        let strong = [(9, 100.0), (4, 99.0)];
        assert_eq!(fuse(&dense, &strong, 0.15)[0].id, 1);
    }

    #[test]
    fn a_lexical_only_hit_counts_the_lowest_dense_cosine() {
        let dense = [(1, 0.70), (2, 0.40)];
        let lexical = [(9, 5.0), (1, 1.0)];
        let fused = fuse(&dense, &lexical, 0.15);
        let nine = fused.iter().find(|f| f.id == 9).expect("9 is fused");
        assert_eq!(nine.ranks, [None, Some(1)]);
        assert!((nine.score - (0.40 + 0.15)).abs() < 1e-6);
        assert_eq!(ids(&fused), [1, 9, 2]);
    }

    #[test]
    fn weight_zero_is_the_dense_ranking() {
        let dense = [(4, 0.9), (2, 0.8), (8, 0.7)];
        let lexical = [(8, 9.0), (5, 3.0)];
        let fused = fuse(&dense, &lexical, 0.0);
        assert_eq!(&ids(&fused)[..3], [4, 2, 8]);
    }

    #[test]
    fn empty_and_degenerate_inputs() {
        assert!(fuse(&[], &[], 0.15).is_empty());
        // No dense ranking (hybrid on an empty store side): lexical order.
        assert_eq!(ids(&fuse(&[], &[(3, 2.0), (1, 1.0)], 0.15)), [3, 1]);
        // All-zero or non-finite BM25 scores add nothing and do not poison.
        let fused = fuse(&[(1, 0.5)], &[(1, 0.0), (2, f32::NAN)], 0.15);
        assert!(fused.iter().all(|f| f.score.is_finite()));
        assert_eq!(fused[0].id, 1);
    }

    /// Candidates, each holding the given terms.
    fn pool(terms: &[(u64, &[u32])]) -> HashMap<u64, HashSet<u32>> {
        terms
            .iter()
            .map(|(id, t)| (*id, t.iter().copied().collect()))
            .collect()
    }

    /// Candidates 1..=10 holding term 100, those in `with` the terms given.
    fn ten(with: &[(u64, &[u32])]) -> HashMap<u64, HashSet<u32>> {
        let mut all = pool(&(1..=10).map(|id| (id, &[100][..])).collect::<Vec<_>>());
        all.extend(pool(with));
        all
    }

    const GATE: Gate = Gate {
        rare_share: 0.3,
        min_terms: 1,
    };

    #[test]
    fn common_words_never_reorder_the_dense_ranking() {
        // The question's terms: 100 (in every candidate), 200 (in six of
        // ten). Candidate 2 is the lexical first on those common words.
        let question = [100, 200];
        let common: &[u32] = &[100, 200];
        let passages = ten(&[
            (2, common),
            (3, common),
            (4, common),
            (5, common),
            (6, common),
            (7, common),
        ]);
        let none = HashSet::new();
        let evidence = Evidence {
            question: &question,
            identifiers: &none,
            passages: &passages,
        };
        let dense = [(1, 0.60), (2, 0.55), (3, 0.40)];
        let lexical = [(2, 12.0), (3, 11.0), (1, 2.0)];
        // The plain fusion lifts 2 over 1; the gate keeps the dense order.
        assert_eq!(fuse(&dense, &lexical, 0.15)[0].id, 2);
        let gated = fuse_gated(&dense, &lexical, 0.15, &evidence, &GATE);
        assert_eq!(ids(&gated)[..3], [1, 2, 3]);
        // The lexical ranks are still reported.
        assert_eq!(gated[1].ranks, [Some(2), Some(1)]);
    }

    #[test]
    fn a_rare_term_or_identifier_the_dense_first_lacks_may_reorder() {
        // Term 300 is in one candidate of ten: rare, and the dense first
        // lacks it.
        let question = [100, 300];
        let passages = ten(&[(2, &[100, 300])]);
        let none = HashSet::new();
        let evidence = Evidence {
            question: &question,
            identifiers: &none,
            passages: &passages,
        };
        let dense = [(1, 0.60), (2, 0.55), (3, 0.40)];
        let lexical = [(2, 12.0), (1, 2.0)];
        let gated = fuse_gated(&dense, &lexical, 0.15, &evidence, &GATE);
        assert_eq!(gated[0].id, 2, "{gated:?}");
        assert_eq!(strong_terms(&dense, &evidence, &GATE)[&2], 1);
        // The dense first holding it too: no evidence over it.
        let shared = pool(&[(1, &[100, 300]), (2, &[100, 300]), (3, &[100])]);
        let evidence = Evidence {
            question: &question,
            identifiers: &none,
            passages: &shared,
        };
        let gate = Gate {
            rare_share: 0.7,
            min_terms: 1,
        };
        assert_eq!(
            fuse_gated(&dense, &lexical, 0.15, &evidence, &gate)[0].id,
            1
        );
        // An identifier counts however many candidates hold it; two strong
        // terms asked for, one held: no bonus.
        let id_term = 100;
        let identifiers: HashSet<u32> = [id_term].into_iter().collect();
        let named = pool(&[(1, &[]), (2, &[100]), (3, &[100])]);
        let evidence = Evidence {
            question: &question,
            identifiers: &identifiers,
            passages: &named,
        };
        assert_eq!(
            fuse_gated(&dense, &lexical, 0.15, &evidence, &GATE)[0].id,
            2
        );
        let two = Gate {
            rare_share: 0.3,
            min_terms: 2,
        };
        assert_eq!(fuse_gated(&dense, &lexical, 0.15, &evidence, &two)[0].id, 1);
    }

    #[test]
    fn the_open_gate_is_the_plain_fusion() {
        let dense = [(1, 0.60), (2, 0.55), (3, 0.30)];
        let lexical = [(2, 12.0), (3, 11.0), (9, 5.0)];
        let passages = HashMap::new();
        let none = HashSet::new();
        let evidence = Evidence {
            question: &[],
            identifiers: &none,
            passages: &passages,
        };
        assert_eq!(
            fuse_gated(&dense, &lexical, 0.15, &evidence, &Gate::OPEN),
            fuse(&dense, &lexical, 0.15)
        );
        // Pinning puts identifier matches first, the fused order kept among equals.
        let mut fused = fuse(&dense, &lexical, 0.15);
        let pinned: HashMap<u64, usize> = [(3, 1)].into_iter().collect();
        pin(&mut fused, &pinned);
        assert_eq!(fused[0].id, 3);
    }

    #[test]
    fn duplicate_in_one_ranking_counts_once() {
        let fused = fuse(&[(1, 0.5), (1, 0.4)], &[(1, 2.0), (1, 2.0)], 0.1);
        assert_eq!(fused.len(), 1);
        assert!((fused[0].score - 0.6).abs() < 1e-6);
        assert_eq!(fused[0].ranks, [Some(1), Some(1)]);
    }
}
