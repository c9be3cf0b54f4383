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
//! Reciprocal rank fusion, which GRACE used before, counts ranks only: on
//! questions in users' own words the lexical ranking's first place (a
//! passage sharing common words) outweighed the dense ranking's. Measured
//! on GRACE's training questions (`eval/users-words`, train split) and
//! reported beside the evaluation sets in the book ("In users' own words").

use std::collections::HashMap;

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
            if best > 0.0 && bm25.is_finite() {
                entry.score += weight * bm25.max(0.0) / best;
            }
        }
    }
    let mut fused: Vec<Fused> = order.iter().filter_map(|id| by_id.remove(id)).collect();
    // Stable sort: equal scores keep first-appearance order.
    fused.sort_by(|a, b| b.score.total_cmp(&a.score));
    fused
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

    #[test]
    fn duplicate_in_one_ranking_counts_once() {
        let fused = fuse(&[(1, 0.5), (1, 0.4)], &[(1, 2.0), (1, 2.0)], 0.1);
        assert_eq!(fused.len(), 1);
        assert!((fused[0].score - 0.6).abs() < 1e-6);
        assert_eq!(fused[0].ranks, [Some(1), Some(1)]);
    }
}
