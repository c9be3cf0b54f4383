//! The gap report: what the knowledge base is missing, ordered by how
//! often people ask for it.
//!
//! Its input is the questions people did not get an answer to
//! ([`FeedbackStore::unmet`](crate::feedback::FeedbackStore::unmet)):
//! declined, escalated, or answered and rated down. They are grouped by
//! meaning, in three steps:
//!
//! 1. Near repeats first: oldest first, a question joins the group of
//!    near repeats whose centroid is nearest if their cosine is at least
//!    [`NEAR_REPEAT`] (or the setting, if higher), else starts one (leader
//!    clustering; only the first [`OPEN_GROUPS`] groups take members).
//! 2. Then average linkage over those groups: the two whose questions are
//!    on average the most similar are merged, as long as that average is
//!    at least `feedback.gap_similarity` (a group's sum of unit vectors
//!    makes the average exact, and the nearest-neighbour chain makes it
//!    groups² work). Unlike joining a running centroid, this step does
//!    not depend on which group came first, and a subject's questions
//!    that are each only loosely alike still end in one group; near
//!    repeats are alike enough that step 1's order hardly matters.
//! 3. A question past the open groups (a group of its own) joins the
//!    merged group of two or more it is on average most alike, if that
//!    reaches the setting.
//!
//! The setting, 0.25 by default, is on GRACE's similarity scale (MiniLM's
//! cosines), where questions about one subject sit at 0.35 to 0.65 from
//! each other and unrelated ones below 0.3, so that a group's average
//! stays above 0.25 while it holds one subject; another model's cosines
//! are put on that scale by its model card's map ([`thresholds`]), so e5
//! (for Japanese), whose cosines crowd near 0.85, groups at an average
//! cosine of 0.839. `examples/gap_study.rs` measures it: a section removed
//! from a knowledge base, its questions among others.
//!
//! Each group is labelled by its most typical question (the nearest to
//! its centroid), counted (in all, per reason, and in each half of the
//! window: the trend) and shown with a few other examples. The cost is
//! at most questions × [`OPEN_GROUPS`] dot products for the first and
//! third steps and [`OPEN_GROUPS`]² for the second: 5,000 questions in
//! 0.3 s, 20,000 in 1.2 s (`examples/gap_study.rs` measures it).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::config::{Config, MAX_GAP_DAYS};
use crate::embed::{dot_lanes, normalise};
use crate::error::Result;
use crate::feedback::{FeedbackError, FeedbackStore, Unmet, Why};

/// Examples a group shows besides its label.
pub const EXAMPLES: usize = 3;
/// Most questions a report reads (the newest).
pub const MAX_QUESTIONS: usize = 20_000;
/// Most groups a report may be asked for.
pub const MAX_GROUPS: usize = 1_000;
/// Groups of near repeats that take members and are merged (the
/// module's two steps): bounds the work, and the merge's table of
/// similarities (16 MB), on [`MAX_QUESTIONS`] questions that have nothing
/// in common.
pub const OPEN_GROUPS: usize = 2_000;
/// Questions at least this similar (on GRACE's similarity scale) are near
/// repeats of each other: the first step groups them.
pub const NEAR_REPEAT: f64 = 0.7;

/// What the knowledge base is missing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct GapReport {
    /// The start of the window read.
    pub since: DateTime<Utc>,
    /// When the report was made.
    pub until: DateTime<Utc>,
    /// Questions read (at most [`MAX_QUESTIONS`], the newest).
    pub questions: usize,
    /// Groups found in all (more than `groups` holds when limited).
    pub total_groups: usize,
    /// The average similarity two groups need to merge
    /// (`feedback.gap_similarity`, on GRACE's similarity scale).
    pub similarity: f64,
    /// The groups, most asked first.
    pub groups: Vec<Gap>,
}

/// One thing people asked for and did not get.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Gap {
    /// Its most typical question.
    pub label: String,
    /// Questions in it.
    pub count: usize,
    /// Of them declined.
    pub declined: usize,
    /// Of them escalated to a reviewer.
    pub escalated: usize,
    /// Of them answered and rated down.
    pub rated_down: usize,
    /// Of them asked in the second half of the window.
    pub recent: usize,
    /// Of them asked in the first half.
    pub earlier: usize,
    /// When one was last asked.
    pub last_asked: DateTime<Utc>,
    /// Other questions of the group, newest first (at most [`EXAMPLES`],
    /// none repeating the label).
    pub examples: Vec<String>,
}

/// The report on the questions in `store` (none when `None`: a data
/// folder where nothing was recorded yet) of the last `days`
/// (`feedback.gap_days` when `None`; 1 to [`MAX_GAP_DAYS`]), grouped at
/// `feedback.gap_similarity` ([`thresholds`]), its `limit` largest groups
/// (1 to [`MAX_GROUPS`]).
pub fn read(
    store: Option<&FeedbackStore>,
    config: &Config,
    days: Option<u32>,
    limit: usize,
) -> Result<GapReport> {
    let days = days.unwrap_or(config.feedback.gap_days);
    if !(1..=MAX_GAP_DAYS).contains(&days) {
        return Err(FeedbackError::Invalid(format!(
            "days must be between 1 and {MAX_GAP_DAYS}, not {days}"
        ))
        .into());
    }
    if !(1..=MAX_GROUPS).contains(&limit) {
        return Err(FeedbackError::Invalid(format!(
            "limit must be between 1 and {MAX_GROUPS}, not {limit}"
        ))
        .into());
    }
    let until = Utc::now();
    let since = until - chrono::Duration::days(i64::from(days));
    let unmet = match store {
        Some(store) => store.unmet(since, MAX_QUESTIONS)?,
        None => Vec::new(),
    };
    let mut r = report(&unmet, thresholds(config)?, since, until, limit);
    r.similarity = config.feedback.gap_similarity;
    Ok(r)
}

/// The cosines the grouping uses, on the configured model's scale.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Thresholds {
    /// The average cosine two groups need to merge
    /// (`feedback.gap_similarity`).
    pub group: f32,
    /// The cosine of near repeats ([`NEAR_REPEAT`]).
    pub repeat: f32,
}

/// `feedback.gap_similarity` and [`NEAR_REPEAT`] (or the setting, when it
/// is higher) as cosines of the configured model: its model card's map
/// for two texts of a kind ([`crate::embed::SimilarityScale`]'s
/// `passage`) undone, so that one setting serves every model
/// (multilingual-e5-small's 0.4 is a cosine of 0.865).
pub fn thresholds(config: &Config) -> Result<Thresholds> {
    let card = crate::embed::ModelCard::of(&config.embedding.model_dir)?;
    let map = card
        .similarity
        .map_or(crate::embed::Affine::IDENTITY, |s| s.passage);
    let setting = config.feedback.gap_similarity;
    Ok(Thresholds {
        group: map.invert(setting as f32),
        // Near repeats are never looser than a group.
        repeat: map.invert(NEAR_REPEAT.max(setting) as f32),
    })
}

/// The report on `unmet` (newest first or in any order), asked in the
/// window `since..=until`, grouped at `thresholds`, its `limit` largest
/// groups (`similarity` is the group threshold as a cosine; [`read`] puts
/// the setting there).
pub fn report(
    unmet: &[Unmet],
    thresholds: Thresholds,
    since: DateTime<Utc>,
    until: DateTime<Utc>,
    limit: usize,
) -> GapReport {
    let mut groups: Vec<Gap> = grouped(unmet, thresholds, since, until)
        .into_iter()
        .map(|(gap, _)| gap)
        .collect();
    let total_groups = groups.len();
    groups.truncate(limit);
    GapReport {
        since,
        until,
        questions: unmet.len(),
        total_groups,
        similarity: f64::from(thresholds.group),
        groups,
    }
}

/// Each of `unmet`'s group, as its place in the report (0: the most
/// asked), grouped as [`report`] groups them.
pub fn membership(unmet: &[Unmet], thresholds: Thresholds) -> Vec<usize> {
    let now = Utc::now();
    let mut place = vec![0; unmet.len()];
    for (rank, (_, members)) in grouped(unmet, thresholds, now, now).iter().enumerate() {
        for &i in members {
            place[i] = rank;
        }
    }
    place
}

/// The groups, most asked first, each with its members (indices into
/// `unmet`).
fn grouped(
    unmet: &[Unmet],
    thresholds: Thresholds,
    since: DateTime<Utc>,
    until: DateTime<Utc>,
) -> Vec<(Gap, Vec<usize>)> {
    let mut order: Vec<usize> = (0..unmet.len()).collect();
    order.sort_by_key(|&i| unmet[i].at);
    let vectors: Vec<Vec<f32>> = order.iter().map(|&i| unit(&unmet[i].vector)).collect();
    let (group_of, centroids) = cluster(&vectors, thresholds, OPEN_GROUPS);
    let middle = since + (until - since) / 2;
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); centroids.len()];
    for (k, g) in group_of.iter().enumerate() {
        members[*g].push(k);
    }
    let mut groups: Vec<(Gap, Vec<usize>)> = members
        .iter()
        .zip(&centroids)
        .filter(|(m, _)| !m.is_empty())
        .map(|(m, centroid)| {
            let asked = |k: usize| &unmet[order[k]];
            let typical = m
                .iter()
                .copied()
                .max_by(|&a, &b| {
                    dot_lanes(&vectors[a], centroid).total_cmp(&dot_lanes(&vectors[b], centroid))
                })
                .unwrap_or(m[0]);
            let label = asked(typical).question.clone();
            let mut examples: Vec<String> = Vec::new();
            for &k in m.iter().rev() {
                let q = &asked(k).question;
                let seen = |e: &String| e.trim().eq_ignore_ascii_case(q.trim());
                if examples.len() == EXAMPLES {
                    break;
                }
                if !seen(&label) && !examples.iter().any(seen) {
                    examples.push(q.clone());
                }
            }
            let count = |why: Why| m.iter().filter(|&&k| asked(k).why == why).count();
            let recent = m.iter().filter(|&&k| asked(k).at >= middle).count();
            let gap = Gap {
                label,
                count: m.len(),
                declined: count(Why::Declined),
                escalated: count(Why::Escalated),
                rated_down: count(Why::RatedDown),
                recent,
                earlier: m.len() - recent,
                last_asked: m.iter().map(|&k| asked(k).at).max().unwrap_or(until),
                examples,
            };
            (gap, m.iter().map(|&k| order[k]).collect())
        })
        .collect();
    groups.sort_by(|(a, _), (b, _)| {
        b.count
            .cmp(&a.count)
            .then(b.last_asked.cmp(&a.last_asked))
            .then(a.label.cmp(&b.label))
    });
    groups
}

/// `v` scaled to unit length (a zero vector stays zero).
fn unit(v: &[f32]) -> Vec<f32> {
    let mut v = v.to_vec();
    normalise(&mut v);
    v
}

/// Each vector's group and the groups' centroids (unit vectors), in two
/// steps (see the module): near repeats by leader clustering in the given
/// order at `thresholds.repeat`, then those groups merged by average
/// linkage down to `thresholds.group`. Only the first `open_groups`
/// ([`OPEN_GROUPS`]) groups of near repeats take members and are merged:
/// past them a question that repeats none stays a group of its own, so
/// that the work is at most questions × `open_groups` dot products, and
/// `open_groups`² for the merge.
fn cluster(
    vectors: &[Vec<f32>],
    thresholds: Thresholds,
    open_groups: usize,
) -> (Vec<usize>, Vec<Vec<f32>>) {
    // 1. Near repeats.
    let mut sums: Vec<Vec<f32>> = Vec::new();
    let mut centroids: Vec<Vec<f32>> = Vec::new();
    let mut sizes: Vec<usize> = Vec::new();
    let mut repeat_of = Vec::with_capacity(vectors.len());
    for v in vectors {
        let open = centroids.len().min(open_groups);
        match nearest(&centroids[..open], v).filter(|&(_, s)| s >= thresholds.repeat) {
            Some((g, _)) => {
                sums[g].iter_mut().zip(v).for_each(|(s, x)| *s += x);
                centroids[g] = unit(&sums[g]);
                sizes[g] += 1;
                repeat_of.push(g);
            }
            None => {
                sums.push(v.clone());
                centroids.push(v.clone());
                sizes.push(1);
                repeat_of.push(centroids.len() - 1);
            }
        }
    }
    // 2. Average linkage over the open groups; numbered densely, with
    // their sums and sizes.
    let open = sums.len().min(open_groups);
    let merged_into = average_linkage(&sums[..open], &sizes[..open], thresholds.group);
    let mut number = vec![usize::MAX; open];
    let mut group_sums: Vec<Vec<f32>> = Vec::new();
    let mut group_sizes: Vec<usize> = Vec::new();
    let mut final_of: Vec<usize> = Vec::with_capacity(sums.len());
    for g in 0..open {
        let root = merged_into[g];
        if number[root] == usize::MAX {
            number[root] = group_sums.len();
            group_sums.push(Vec::new());
            group_sizes.push(0);
        }
        add_into(&mut group_sums[number[root]], &sums[g]);
        group_sizes[number[root]] += sizes[g];
        final_of.push(number[root]);
    }
    // 3. A question past the open groups (a group of its own) joins the
    // merged group of two or more it is on average most alike, when that
    // reaches the threshold: the newest questions, where a fresh gap
    // shows, are grouped too. Only groups of two or more: a subject asked
    // again (and, with nothing in common, no work).
    let merged: Vec<usize> = (0..group_sums.len())
        .filter(|&k| group_sizes[k] > 1)
        .collect();
    let joined: Vec<Option<usize>> = (open..sums.len())
        .map(|g| {
            merged
                .iter()
                .map(|&k| {
                    let pairs = (sizes[g] * group_sizes[k]) as f32;
                    (k, dot_lanes(&sums[g], &group_sums[k]) / pairs)
                })
                .max_by(|a, b| a.1.total_cmp(&b.1))
                .filter(|&(_, s)| s >= thresholds.group)
                .map(|(k, _)| k)
        })
        .collect();
    for (g, joined) in (open..sums.len()).zip(joined) {
        let k = joined.unwrap_or_else(|| {
            group_sums.push(Vec::new());
            group_sums.len() - 1
        });
        add_into(&mut group_sums[k], &sums[g]);
        final_of.push(k);
    }
    let group_of = repeat_of.iter().map(|&g| final_of[g]).collect();
    (group_of, group_sums.iter().map(|s| unit(s)).collect())
}

/// Adds `sum` into `target`, which grows to its length (vectors of other
/// lengths are summed as if padded with zeros).
fn add_into(target: &mut Vec<f32>, sum: &[f32]) {
    if target.len() < sum.len() {
        target.resize(sum.len(), 0.0);
    }
    target.iter_mut().zip(sum).for_each(|(t, x)| *t += x);
}

/// Average-linkage clustering of groups given by their `sums` of unit
/// vectors and `sizes`, merging while the average cosine between two
/// groups' members is at least `similarity`: each group's final group (an
/// index into `sums`). The nearest-neighbour chain: follow each group's
/// most similar one until two are each other's, merge them (their
/// similarity to a third is the size-weighted mean of theirs, which is
/// average linkage), and set aside a group whose most similar one is below
/// `similarity`, since merges elsewhere can only lower its similarities.
fn average_linkage(sums: &[Vec<f32>], sizes: &[usize], similarity: f32) -> Vec<usize> {
    let m = sums.len();
    // The average cosine between two groups' members: dot of the sums
    // over the product of the sizes.
    let mut table = vec![0f32; m * m];
    for a in 0..m {
        for b in a + 1..m {
            let s = dot_lanes(&sums[a], &sums[b]) / (sizes[a] * sizes[b]) as f32;
            table[a * m + b] = s;
            table[b * m + a] = s;
        }
    }
    let mut size: Vec<f32> = sizes.iter().map(|&n| n as f32).collect();
    let mut active = vec![true; m];
    let mut parent: Vec<usize> = (0..m).collect();
    let mut chain: Vec<usize> = Vec::new();
    let mut next_start = 0;
    loop {
        let Some(&a) = chain.last() else {
            while next_start < m && !active[next_start] {
                next_start += 1;
            }
            if next_start == m {
                break;
            }
            chain.push(next_start);
            continue;
        };
        let previous = chain.len().checked_sub(2).map(|i| chain[i]);
        // The most similar active group; the previous link wins a tie,
        // so that the chain ends.
        let mut best: Option<(usize, f32)> = previous.map(|p| (p, table[a * m + p]));
        for c in (0..m).filter(|&c| c != a && active[c]) {
            let s = table[a * m + c];
            if best.is_none_or(|(_, b)| s > b) {
                best = Some((c, s));
            }
        }
        match best {
            Some((b, s)) if s >= similarity => {
                if Some(b) != previous {
                    chain.push(b);
                    continue;
                }
                // a and b are each other's most similar: merge b into a.
                chain.truncate(chain.len() - 2);
                let (na, nb) = (size[a], size[b]);
                for c in (0..m).filter(|&c| active[c] && c != a && c != b) {
                    let s = (na * table[a * m + c] + nb * table[b * m + c]) / (na + nb);
                    table[a * m + c] = s;
                    table[c * m + a] = s;
                }
                size[a] = na + nb;
                active[b] = false;
                parent[b] = a;
            }
            _ => {
                // Nothing is similar enough to a, now or after any merge.
                chain.pop();
                active[a] = false;
            }
        }
    }
    (0..m)
        .map(|mut g| {
            while parent[g] != g {
                g = parent[g];
            }
            g
        })
        .collect()
}

/// The centroid nearest to `v` and its cosine.
fn nearest(centroids: &[Vec<f32>], v: &[f32]) -> Option<(usize, f32)> {
    centroids
        .iter()
        .enumerate()
        .map(|(g, c)| (g, dot_lanes(c, v)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;

    fn unmet(
        question: &str,
        vector: Vec<f32>,
        days_ago: i64,
        why: Why,
        now: DateTime<Utc>,
    ) -> Unmet {
        Unmet {
            question: question.into(),
            at: now - Duration::days(days_ago),
            why,
            vector,
        }
    }

    #[test]
    fn past_the_open_groups_a_question_stays_alone_and_the_work_is_bounded() {
        // 70 questions with nothing in common (pseudo-random
        // directions in 64 dimensions: cosines far below 0.9), then one
        // near the first: it still joins the first group.
        let (open, n) = (20, 70);
        let mut vectors = subjects_in(64, n + 1, n + 1, 0.0, 0x2545_f491_4f6c_dd1d);
        let other = vectors.pop().unwrap();
        let mut near_first: Vec<f32> = vectors[0]
            .iter()
            .zip(other)
            .map(|(a, b)| a + 0.1 * b)
            .collect();
        normalise(&mut near_first);
        vectors.push(near_first);
        let at = Thresholds {
            group: 0.9,
            repeat: 0.9,
        };
        let (group_of, centroids) = cluster(&vectors, at, open);
        assert_eq!(centroids.len(), n);
        assert_eq!(group_of[n], 0);
        assert_eq!(group_of[n - 1], n - 1);
    }

    #[test]
    fn a_question_past_the_open_groups_still_joins_a_group_it_is_like() {
        // Two open groups of loosely alike questions (no near repeats),
        // then, past the cut, one more question on the first subject and
        // one on neither.
        let vectors = subjects(6, 2, 0.8, 21);
        let at = Thresholds {
            group: 0.3,
            repeat: 0.99,
        };
        let mut all = vectors.clone();
        all.push(subjects(8, 2, 0.8, 21)[6].clone());
        let lone = subjects(1, 1, 0.0, 99).remove(0);
        all.push(lone);
        // Every question opens a group of its own in step 1: six fit.
        let (group_of, _) = cluster(&all, at, 6);
        assert_eq!(group_of[6], group_of[0], "{group_of:?}");
        assert_ne!(group_of[7], group_of[0], "{group_of:?}");
        assert_ne!(group_of[7], group_of[1], "{group_of:?}");
    }

    /// Average linkage by the book: merge the most similar pair of groups
    /// (average cosine between their members) while it reaches
    /// `similarity`; each vector's group as the smallest member index.
    fn naive_average_linkage(vectors: &[Vec<f32>], similarity: f32) -> Vec<usize> {
        let mut groups: Vec<Vec<usize>> = (0..vectors.len()).map(|i| vec![i]).collect();
        loop {
            let mut best: Option<(f32, usize, usize)> = None;
            for a in 0..groups.len() {
                for b in a + 1..groups.len() {
                    let mut total = 0.0;
                    for &i in &groups[a] {
                        for &j in &groups[b] {
                            total += dot_lanes(&vectors[i], &vectors[j]);
                        }
                    }
                    let s = total / (groups[a].len() * groups[b].len()) as f32;
                    if best.is_none_or(|(t, _, _)| s > t) {
                        best = Some((s, a, b));
                    }
                }
            }
            match best {
                Some((s, a, b)) if s >= similarity => {
                    let moved = groups.remove(b);
                    groups[a].extend(moved);
                }
                _ => break,
            }
        }
        let mut of = vec![0; vectors.len()];
        for g in &groups {
            let first = *g.iter().min().unwrap();
            for &i in g {
                of[i] = first;
            }
        }
        of
    }

    /// `group_of` as each vector's smallest fellow member.
    fn canonical(group_of: &[usize]) -> Vec<usize> {
        (0..group_of.len())
            .map(|i| {
                (0..group_of.len())
                    .find(|&j| group_of[j] == group_of[i])
                    .unwrap()
            })
            .collect()
    }

    /// Pseudo-random unit vectors around `centres` subjects in 16
    /// dimensions.
    fn subjects(n: usize, centres: usize, spread: f32, seed: u64) -> Vec<Vec<f32>> {
        subjects_in(16, n, centres, spread, seed)
    }

    /// [`subjects`] in `dims` dimensions.
    fn subjects_in(dims: usize, n: usize, centres: usize, spread: f32, seed: u64) -> Vec<Vec<f32>> {
        let mut rng = crate::rng::Rng::new(seed);
        let mut next = || (2.0 * rng.unit() - 1.0) as f32;
        let centre: Vec<Vec<f32>> = (0..centres)
            .map(|_| (0..dims).map(|_| next()).collect())
            .collect();
        (0..n)
            .map(|k| {
                let mut v: Vec<f32> = centre[k % centres]
                    .iter()
                    .map(|c| c + spread * next())
                    .collect();
                normalise(&mut v);
                v
            })
            .collect()
    }

    #[test]
    fn the_chain_merges_as_average_linkage_by_the_book_does() {
        for (seed, spread, similarity) in
            [(1, 0.6, 0.3), (2, 0.9, 0.25), (3, 0.4, 0.5), (4, 1.5, 0.1)]
        {
            let vectors = subjects(40, 5, spread, seed);
            let sizes = vec![1; vectors.len()];
            let chain = average_linkage(&vectors, &sizes, similarity);
            assert_eq!(
                canonical(&chain),
                naive_average_linkage(&vectors, similarity),
                "seed {seed}"
            );
        }
    }

    #[test]
    fn the_groups_do_not_depend_on_the_order_questions_came_in() {
        // Loosely alike questions about three subjects (no near repeats):
        // joining a running centroid at 0.3 mixes two subjects and groups
        // them differently when they come in reverse (checked); average
        // linkage gives one partition whatever the order.
        let vectors = subjects(30, 3, 0.8, 9);
        let at = Thresholds {
            group: 0.3,
            repeat: 0.99,
        };
        let (forward, _) = cluster(&vectors, at, OPEN_GROUPS);
        let reversed: Vec<Vec<f32>> = vectors.iter().rev().cloned().collect();
        let (backward, _) = cluster(&reversed, at, OPEN_GROUPS);
        let backward: Vec<usize> = backward.into_iter().rev().collect();
        assert_eq!(canonical(&forward), canonical(&backward));
        // And each subject is one group.
        let groups: std::collections::BTreeSet<usize> = forward.iter().copied().collect();
        assert_eq!(groups.len(), 3, "{forward:?}");
        for k in 0..30 {
            assert_eq!(forward[k], forward[k % 3], "{forward:?}");
        }
    }

    /// Grouping thresholds for the tests' vectors.
    const AT: Thresholds = Thresholds {
        group: 0.5,
        repeat: 0.9,
    };

    /// A unit vector near axis `axis` of 8, nudged by `jitter`.
    fn near(axis: usize, jitter: f32, k: usize) -> Vec<f32> {
        let mut v = vec![0.05f32; 8];
        v[axis] = 1.0;
        v[(axis + 1 + k % 6) % 8] += jitter;
        v
    }

    #[test]
    fn questions_about_one_thing_form_the_top_group_with_its_counts_and_trend() {
        let now = Utc::now();
        let mut asked = Vec::new();
        for k in 0..12 {
            let why = if k % 3 == 0 {
                Why::Declined
            } else {
                Why::Escalated
            };
            asked.push(unmet(
                &format!("vpn question {k}"),
                near(0, 0.2, k),
                (k as i64) % 20,
                why,
                now,
            ));
        }
        for k in 0..4 {
            asked.push(unmet(
                &format!("printer question {k}"),
                near(3, 0.2, k),
                25,
                Why::RatedDown,
                now,
            ));
        }
        asked.push(unmet(
            "a lone question",
            near(6, 0.0, 0),
            1,
            Why::Declined,
            now,
        ));
        let r = report(&asked, AT, now - Duration::days(30), now, 10);
        assert_eq!(r.questions, 17);
        assert_eq!(r.total_groups, 3, "{r:#?}");
        let top = &r.groups[0];
        assert_eq!(top.count, 12);
        assert!(top.label.starts_with("vpn question"));
        assert_eq!((top.declined, top.escalated, top.rated_down), (4, 8, 0));
        // All twelve were asked in the last 20 days: the second half.
        assert_eq!((top.recent, top.earlier), (12, 0));
        assert_eq!(top.examples.len(), EXAMPLES);
        assert!(!top.examples.contains(&top.label));
        let printers = &r.groups[1];
        assert_eq!(
            (printers.count, printers.rated_down, printers.earlier),
            (4, 4, 4)
        );
        assert_eq!(r.groups[2].count, 1);
        assert!(r.groups[2].examples.is_empty());
        // Limited: the largest first, the total kept.
        let one = report(&asked, AT, now - Duration::days(30), now, 1);
        assert_eq!((one.groups.len(), one.total_groups), (1, 3));
    }

    #[test]
    fn the_threshold_is_on_graces_scale_whatever_the_model() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = Config::default();
        config.embedding.model_dir = dir.path().to_path_buf();
        // No model card map (MiniLM): the setting is the cosine; near
        // repeats are never looser than a group.
        for (setting, group, repeat) in [(0.25, 0.25, 0.7), (0.9, 0.9, 0.9)] {
            config.feedback.gap_similarity = setting;
            let at = thresholds(&config).unwrap();
            assert_eq!((at.group, at.repeat), (group, repeat));
        }
        config.feedback.gap_similarity = 0.25;
        std::fs::write(
            dir.path().join(crate::embed::MODEL_CARD_FILE),
            "similarity:\n  query: {scale: 7.36, shift: -5.93}\n  passage: {scale: 5.79, shift: -4.61}\n",
        )
        .unwrap();
        let e5 = thresholds(&config).unwrap();
        assert!((e5.group - (0.25 + 4.61) / 5.79).abs() < 1e-6, "{e5:?}");
        assert!((e5.repeat - (0.7 + 4.61) / 5.79).abs() < 1e-6, "{e5:?}");
        // A broken card is an error naming it, not a silent default.
        std::fs::write(
            dir.path().join(crate::embed::MODEL_CARD_FILE),
            "similarity: [",
        )
        .unwrap();
        let e = thresholds(&config).unwrap_err().to_string();
        assert!(e.contains(crate::embed::MODEL_CARD_FILE), "{e}");
    }

    #[test]
    fn nothing_hostile_breaks_it() {
        let now = Utc::now();
        let since = now - Duration::days(30);
        assert!(report(&[], AT, since, now, 10).groups.is_empty());
        // Zero vectors, vectors of other lengths, an empty one, one with
        // non-finite components, one question repeated: every question is
        // counted once, in some group.
        let mut broken = vec![1.0; 8];
        broken[2] = f32::NAN;
        broken[5] = f32::INFINITY;
        let asked = vec![
            unmet("same", vec![0.0; 8], 1, Why::Declined, now),
            unmet("same", vec![1.0; 3], 2, Why::Declined, now),
            unmet("SAME ", vec![1.0; 8], 3, Why::Escalated, now),
            unmet("empty", Vec::new(), 4, Why::Declined, now),
            unmet("broken", broken, 5, Why::Declined, now),
        ];
        let r = report(&asked, AT, since, now, 10);
        assert_eq!(r.groups.iter().map(|g| g.count).sum::<usize>(), 5);
        // The same past the open groups (step 3 reads them too).
        let vectors: Vec<Vec<f32>> = asked.iter().map(|u| unit(&u.vector)).collect();
        let (group_of, _) = cluster(&vectors, AT, 2);
        assert_eq!(group_of.len(), 5);
        // Text that is not ASCII is kept as asked, and a repeat in another
        // case of a non-ASCII letter is still an example of its own.
        let asked = vec![
            unmet(
                "経費精算はどうやって申請しますか？",
                near(0, 0.0, 0),
                1,
                Why::Declined,
                now,
            ),
            unmet(
                "ÉCHEC du déploiement ?",
                near(0, 0.1, 1),
                2,
                Why::Escalated,
                now,
            ),
            unmet(
                "échec du déploiement ?",
                near(0, 0.1, 2),
                3,
                Why::Escalated,
                now,
            ),
        ];
        let r = report(&asked, AT, since, now, 10);
        let g = &r.groups[0];
        assert_eq!(g.count, 3);
        let mut shown: Vec<&str> = g.examples.iter().map(String::as_str).collect();
        shown.push(&g.label);
        shown.sort();
        assert_eq!(
            shown,
            [
                "ÉCHEC du déploiement ?",
                "échec du déploiement ?",
                "経費精算はどうやって申請しますか？"
            ]
        );
        for g in &r.groups {
            assert!(
                g.examples
                    .iter()
                    .all(|e| !e.trim().eq_ignore_ascii_case("same"))
            );
        }
    }
}
