//! How well a confidence score separates right from wrong, and whether it
//! means what it says. Inputs are `(score, label)` pairs, `label` true for
//! the positive class (answerable; answered right).

use serde::Serialize;

use crate::rng::Rng;

/// Area under the ROC curve: the probability that a random positive scores
/// above a random negative (ties count half). `None` without both classes.
pub fn auroc(samples: &[(f64, bool)]) -> Option<f64> {
    let mut sorted: Vec<(f64, bool)> = samples.to_vec();
    sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
    let positives = sorted.iter().filter(|s| s.1).count() as f64;
    let negatives = sorted.len() as f64 - positives;
    if positives == 0.0 || negatives == 0.0 {
        return None;
    }
    // Mann-Whitney U with average ranks for ties.
    let mut rank_sum = 0.0;
    let mut i = 0;
    while i < sorted.len() {
        let mut j = i;
        while j + 1 < sorted.len() && sorted[j + 1].0 == sorted[i].0 {
            j += 1;
        }
        let average_rank = (i + j) as f64 / 2.0 + 1.0;
        rank_sum += average_rank * sorted[i..=j].iter().filter(|s| s.1).count() as f64;
        i = j + 1;
    }
    Some((rank_sum - positives * (positives + 1.0) / 2.0) / (positives * negatives))
}

/// Mean squared difference between score and outcome (0 is perfect).
pub fn brier(samples: &[(f64, bool)]) -> Option<f64> {
    if samples.is_empty() {
        return None;
    }
    let sum: f64 = samples
        .iter()
        .map(|(s, y)| (s - if *y { 1.0 } else { 0.0 }).powi(2))
        .sum();
    Some(sum / samples.len() as f64)
}

/// Bins of every ECE GRACE reports.
pub const ECE_BINS: usize = 10;

/// Expected calibration error over `bins` equal-width score bins: the
/// sample-weighted mean of |mean score − share positive| per bin.
pub fn ece(samples: &[(f64, bool)], bins: usize) -> Option<f64> {
    if samples.is_empty() || bins == 0 {
        return None;
    }
    let n = samples.len() as f64;
    Some(
        reliability(samples, bins)
            .iter()
            .map(|b| b.count as f64 / n * (b.predicted - b.observed).abs())
            .sum(),
    )
}

/// One bin of a reliability diagram: the samples whose score is in
/// `[lo, hi)` (the last bin includes 1).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
pub struct ReliabilityBin {
    /// The bin's lower edge.
    pub lo: f64,
    /// Its upper edge.
    pub hi: f64,
    /// Samples in it.
    pub count: usize,
    /// Their mean score: what was predicted.
    pub predicted: f64,
    /// The share of them right: what was observed.
    pub observed: f64,
}

/// The reliability diagram of `samples` (score, right) in `bins` equal
/// bins of the score; empty bins are left out. [`ece`] is its weighted
/// gap between predicted and observed.
pub fn reliability(samples: &[(f64, bool)], bins: usize) -> Vec<ReliabilityBin> {
    if bins == 0 {
        return Vec::new();
    }
    let mut sum_score = vec![0.0; bins];
    let mut sum_pos = vec![0.0; bins];
    let mut count = vec![0usize; bins];
    for (s, y) in samples {
        let b = ((s.clamp(0.0, 1.0) * bins as f64) as usize).min(bins - 1);
        sum_score[b] += s;
        sum_pos[b] += if *y { 1.0 } else { 0.0 };
        count[b] += 1;
    }
    (0..bins)
        .filter(|&b| count[b] > 0)
        .map(|b| {
            let c = count[b] as f64;
            ReliabilityBin {
                lo: b as f64 / bins as f64,
                hi: (b + 1) as f64 / bins as f64,
                count: count[b],
                predicted: sum_score[b] / c,
                observed: sum_pos[b] / c,
            }
        })
        .collect()
}

/// What ECE a perfectly calibrated score would show by chance on these
/// `scores` ("consistency resampling", Bröcker and Smith 2007): outcomes
/// drawn `draws` times as if each question were right with probability
/// its score (seeded: the same figures every run), the ECE of each draw.
/// Returns its median and 95th percentile: an ECE at or below the 95th
/// percentile cannot be told from perfect calibration on this many
/// questions. `None` without scores or draws.
pub fn ece_floor(scores: &[f64], bins: usize, draws: usize, seed: u64) -> Option<EceFloor> {
    if scores.is_empty() || draws == 0 {
        return None;
    }
    let mut rng = Rng::new(seed);
    let mut eces = Vec::with_capacity(draws);
    let mut pairs: Vec<(f64, bool)> = scores.iter().map(|&s| (s, false)).collect();
    for _ in 0..draws {
        for p in &mut pairs {
            p.1 = rng.unit() < p.0.clamp(0.0, 1.0);
        }
        eces.push(ece(&pairs, bins)?);
    }
    Some(EceFloor {
        median: quantile(&eces, 0.5)?,
        p95: quantile(&eces, 0.95)?,
    })
}

/// The ECE of a perfectly calibrated score, by chance ([`ece_floor`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct EceFloor {
    /// Median over the draws.
    pub median: f64,
    /// 95th percentile: a higher ECE is miscalibration, not chance.
    pub p95: f64,
}

/// The highest threshold that keeps at least `keep` (0..1) of the positives
/// (score ≥ threshold), and the share of negatives that pass it too: "to
/// answer 90% of answerable questions, how many unanswerable ones does it
/// answer?". `None` without both classes.
pub fn negatives_passing_at_recall(samples: &[(f64, bool)], keep: f64) -> Option<(f64, f64)> {
    let mut pos: Vec<f64> = samples.iter().filter(|s| s.1).map(|s| s.0).collect();
    let neg: Vec<f64> = samples.iter().filter(|s| !s.1).map(|s| s.0).collect();
    if pos.is_empty() || neg.is_empty() {
        return None;
    }
    pos.sort_by(|a, b| b.total_cmp(a));
    let needed = ((keep.clamp(0.0, 1.0) * pos.len() as f64).ceil() as usize).clamp(1, pos.len());
    let threshold = pos[needed - 1];
    let passing = neg.iter().filter(|&&s| s >= threshold).count() as f64 / neg.len() as f64;
    Some((threshold, passing))
}

/// The `q`-quantile (0..1) of `values` by linear interpolation.
pub fn quantile(values: &[f64], q: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let pos = q.clamp(0.0, 1.0) * (v.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    Some(v[lo] + (v[hi] - v[lo]) * (pos - lo as f64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auroc_by_hand() {
        // perfect, inverted, and chance-like orderings
        assert_eq!(auroc(&[(0.9, true), (0.8, true), (0.1, false)]), Some(1.0));
        assert_eq!(auroc(&[(0.1, true), (0.9, false)]), Some(0.0));
        assert_eq!(auroc(&[(0.5, true), (0.5, false)]), Some(0.5));
        // pairs (pos, neg): (0.8,0.6) win, (0.8,0.2) win, (0.4,0.6) loss, (0.4,0.2) win -> 3/4
        let s = [(0.8, true), (0.4, true), (0.6, false), (0.2, false)];
        assert_eq!(auroc(&s), Some(0.75));
        assert_eq!(auroc(&[(0.3, true)]), None);
    }

    #[test]
    fn brier_and_ece_by_hand() {
        let s = [(1.0, true), (0.0, false), (0.5, true), (0.5, false)];
        // (0 + 0 + 0.25 + 0.25) / 4
        assert_eq!(brier(&s), Some(0.125));
        // bins of 0.5: [0, 0.5): {0.0 neg} -> |0 - 0| = 0;
        // [0.5, 1]: {1.0 pos, 0.5 pos, 0.5 neg} -> |2/3 - 2/3| = 0
        assert_eq!(ece(&s, 2), Some(0.0));
        // Overconfident: says 0.9, right half the time -> ECE 0.4
        let over = [(0.9, true), (0.9, false)];
        assert!((ece(&over, 10).unwrap() - 0.4).abs() < 1e-12);
        assert_eq!(ece(&[], 10), None);
    }

    #[test]
    fn a_calibrated_score_has_an_ece_floor_that_shrinks_with_more_questions() {
        // Scores spread evenly: a calibrated model's chance ECE.
        let scores =
            |n: usize| -> Vec<f64> { (0..n).map(|i| (i as f64 + 0.5) / n as f64).collect() };
        let small = ece_floor(&scores(130), 10, 500, 1).unwrap();
        let large = ece_floor(&scores(5_000), 10, 200, 1).unwrap();
        assert!(small.median > 0.04 && small.median < 0.12, "{small:?}");
        assert!(small.p95 > small.median);
        assert!(large.p95 < small.median / 2.0, "{large:?} vs {small:?}");
        // Certain scores can only be right or wrong as they say.
        let certain = ece_floor(&[0.0, 1.0, 1.0], 10, 50, 1).unwrap();
        assert_eq!(
            certain,
            EceFloor {
                median: 0.0,
                p95: 0.0
            }
        );
        // Seeded: the same figures every run.
        assert_eq!(
            ece_floor(&scores(130), 10, 100, 7),
            ece_floor(&scores(130), 10, 100, 7)
        );
        assert_eq!(ece_floor(&[], 10, 100, 1), None);
    }

    #[test]
    fn negatives_passing_at_recall_by_hand() {
        let s = [
            (0.9, true),
            (0.8, true),
            (0.7, true),
            (0.6, true),
            (0.75, false),
            (0.65, false),
            (0.1, false),
            (0.05, false),
        ];
        // keep 50% of 4 positives -> threshold 0.8 -> no negative passes
        assert_eq!(negatives_passing_at_recall(&s, 0.5), Some((0.8, 0.0)));
        // keep 75% -> threshold 0.7 -> 0.75 passes: 1/4
        assert_eq!(negatives_passing_at_recall(&s, 0.75), Some((0.7, 0.25)));
        // keep all -> threshold 0.6 -> 0.75, 0.65 pass: 2/4
        assert_eq!(negatives_passing_at_recall(&s, 1.0), Some((0.6, 0.5)));
    }

    #[test]
    fn quantiles() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile(&v, 0.5), Some(2.5));
        assert_eq!(quantile(&v, 0.0), Some(1.0));
        assert_eq!(quantile(&v, 1.0), Some(4.0));
        assert_eq!(quantile(&[], 0.5), None);
    }
}
