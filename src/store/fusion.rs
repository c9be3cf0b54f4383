//! Reciprocal rank fusion (Cormack et al., 2009): a point's fused score is
//! `Σ weight / (k + rank)` over the rankings it appears in (rank from 1). It
//! needs no score calibration between rankings, which is why dense cosine
//! and BM25 scores can be combined with it.

use std::collections::HashMap;

/// A point's place in the fused ranking.
#[derive(Debug, Clone, PartialEq)]
pub struct Fused {
    /// The point's id.
    pub id: u64,
    /// Fused score: `Σ weight / (k + rank)` over the rankings it appears in.
    pub score: f32,
    /// Rank (from 1) in each input ranking, `None` where absent.
    pub ranks: Vec<Option<usize>>,
}

/// Fuses `rankings` (each a list of ids, best first, with its weight). Ties
/// keep the order in which points first appear, reading the rankings in turn.
pub fn rrf(rankings: &[(Vec<u64>, f32)], k: f32) -> Vec<Fused> {
    let mut order: Vec<u64> = Vec::new();
    let mut by_id: HashMap<u64, Fused> = HashMap::new();
    for (r, (ranking, weight)) in rankings.iter().enumerate() {
        for (i, id) in ranking.iter().enumerate() {
            let rank = i + 1;
            let entry = by_id.entry(*id).or_insert_with(|| {
                order.push(*id);
                Fused {
                    id: *id,
                    score: 0.0,
                    ranks: vec![None; rankings.len()],
                }
            });
            if entry.ranks[r].is_none() {
                entry.ranks[r] = Some(rank);
                entry.score += weight / (k + rank as f32);
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

    #[test]
    fn agreement_beats_a_single_top_rank() {
        // 3 is 2nd in both rankings; 1 and 9 are each 1st in one only.
        let fused = rrf(&[(vec![1, 3, 5], 1.0), (vec![9, 3, 7], 1.0)], 60.0);
        assert_eq!(fused[0].id, 3);
        assert_eq!(fused[0].ranks, vec![Some(2), Some(2)]);
        assert!((fused[0].score - 2.0 / 62.0).abs() < 1e-6);
        assert_eq!(fused[1].id, 1);
        assert_eq!(fused[2].id, 9);
        assert_eq!(fused.len(), 5);
    }

    #[test]
    fn single_ranking_keeps_its_order() {
        let ids: Vec<u64> = rrf(&[(vec![4, 2, 8], 1.0)], 60.0)
            .iter()
            .map(|f| f.id)
            .collect();
        assert_eq!(ids, vec![4, 2, 8]);
    }

    #[test]
    fn weights_break_ties_toward_the_heavier_ranking() {
        // 1 leads the first ranking, 2 the second; both are 2nd in the other.
        let even = rrf(&[(vec![1, 2], 1.0), (vec![2, 1], 1.0)], 60.0);
        assert_eq!(
            even[0].id, 1,
            "equal weights: first appearance wins the tie"
        );
        let heavier = rrf(&[(vec![1, 2], 1.0), (vec![2, 1], 2.0)], 60.0);
        assert_eq!(heavier[0].id, 2);
    }

    #[test]
    fn empty_inputs() {
        assert!(rrf(&[], 60.0).is_empty());
        assert!(rrf(&[(vec![], 1.0), (vec![], 1.0)], 60.0).is_empty());
    }

    #[test]
    fn duplicate_in_one_ranking_counts_once() {
        let fused = rrf(&[(vec![1, 1], 1.0)], 1.0);
        assert_eq!(fused.len(), 1);
        assert!((fused[0].score - 0.5).abs() < 1e-6);
    }
}
