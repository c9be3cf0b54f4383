//! The gap report: what the knowledge base is missing, ordered by how
//! often people ask for it.
//!
//! Its input is the questions people did not get an answer to
//! ([`FeedbackStore::unmet`](crate::feedback::FeedbackStore::unmet)):
//! declined, escalated, or answered and rated down. They are grouped by
//! meaning:
//!
//! 1. Leader clustering of their embeddings (unit vectors), oldest
//!    first: a question joins the group whose centroid is nearest if
//!    their cosine is at least `feedback.gap_similarity`, else starts a
//!    group.
//! 2. Once more against the final centroids, so that a question asked
//!    before its group formed finds it.
//!
//! The setting, 0.4 by default, is on GRACE's similarity scale (MiniLM's
//! cosines), where questions about one subject sit at 0.35 to 0.65 from
//! each other and unrelated ones below 0.3; another model's cosines are
//! put on that scale by its model card's map ([`threshold`]), so e5 (for
//! Japanese), whose cosines crowd near 0.85, groups at a cosine of 0.865.
//!
//! Each group is labelled by its most typical question (the nearest to
//! its centroid), counted (in all, per reason, and in each half of the
//! window: the trend) and shown with a few other examples. The cost is
//! questions × groups dot products: 5,000 questions in well under a
//! second (`examples/gap_study.rs` measures it).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::config::{Config, MAX_GAP_DAYS};
use crate::embed::{dot, normalise};
use crate::error::Result;
use crate::feedback::{FeedbackError, FeedbackStore, Unmet, Why};

/// Examples a group shows besides its label.
pub const EXAMPLES: usize = 3;
/// Most questions a report reads (the newest).
pub const MAX_QUESTIONS: usize = 20_000;
/// Most groups a report may be asked for.
pub const MAX_GROUPS: usize = 1_000;
/// Groups that take members (see [`cluster`]): bounds the work on
/// [`MAX_QUESTIONS`] questions that have nothing in common.
const OPEN_GROUPS: usize = 2_000;

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
    /// The similarity a question needs to join a group
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
/// `feedback.gap_similarity` ([`threshold`]), its `limit` largest groups
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
    let mut r = report(&unmet, threshold(config)?, since, until, limit);
    r.similarity = config.feedback.gap_similarity;
    Ok(r)
}

/// `feedback.gap_similarity`, which is on GRACE's similarity scale
/// (MiniLM's cosines), as a cosine of the configured model: its model
/// card's map for two texts of a kind ([`crate::embed::SimilarityScale`]'s
/// `passage`) undone, so that one setting serves every model
/// (multilingual-e5-small's 0.4 is a cosine of 0.865).
pub fn threshold(config: &Config) -> Result<f32> {
    let similarity = config.feedback.gap_similarity as f32;
    let card = crate::embed::ModelCard::of(&config.embedding.model_dir)?;
    // A card's scale is positive (`ModelCard::of` checks it).
    Ok(match card.similarity {
        Some(scale) => (similarity - scale.passage.shift) / scale.passage.scale,
        None => similarity,
    })
}

/// The report on `unmet` (newest first or in any order), asked in the
/// window `since..=until`, grouped at cosine `similarity`, its `limit`
/// largest groups.
pub fn report(
    unmet: &[Unmet],
    similarity: f32,
    since: DateTime<Utc>,
    until: DateTime<Utc>,
    limit: usize,
) -> GapReport {
    let mut groups: Vec<Gap> = grouped(unmet, similarity, since, until)
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
        similarity: f64::from(similarity),
        groups,
    }
}

/// Each of `unmet`'s group, as its place in the report (0: the most
/// asked), grouped as [`report`] groups them.
pub fn membership(unmet: &[Unmet], similarity: f32) -> Vec<usize> {
    let now = Utc::now();
    let mut place = vec![0; unmet.len()];
    for (rank, (_, members)) in grouped(unmet, similarity, now, now).iter().enumerate() {
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
    similarity: f32,
    since: DateTime<Utc>,
    until: DateTime<Utc>,
) -> Vec<(Gap, Vec<usize>)> {
    let mut order: Vec<usize> = (0..unmet.len()).collect();
    order.sort_by_key(|&i| unmet[i].at);
    let vectors: Vec<Vec<f32>> = order.iter().map(|&i| unit(&unmet[i].vector)).collect();
    let (group_of, centroids) = cluster(&vectors, similarity, OPEN_GROUPS);
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
                .max_by(|&a, &b| dot(&vectors[a], centroid).total_cmp(&dot(&vectors[b], centroid)))
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

/// Each vector's group and the groups' centroids (unit vectors): leader
/// clustering in the given order at cosine `similarity`, then each vector
/// moved to its nearest final centroid when that one is at least as near.
/// Only the first `open_groups` ([`OPEN_GROUPS`]) groups take members:
/// past them a question that joins none stays a group of its own, so that
/// the work is at most questions × `open_groups` dot products.
fn cluster(
    vectors: &[Vec<f32>],
    similarity: f32,
    open_groups: usize,
) -> (Vec<usize>, Vec<Vec<f32>>) {
    let mut sums: Vec<Vec<f32>> = Vec::new();
    let mut centroids: Vec<Vec<f32>> = Vec::new();
    let mut group_of = Vec::with_capacity(vectors.len());
    let open = |centroids: &[Vec<f32>]| centroids.len().min(open_groups);
    for v in vectors {
        match nearest(&centroids[..open(&centroids)], v).filter(|&(_, s)| s >= similarity) {
            Some((g, _)) => {
                sums[g].iter_mut().zip(v).for_each(|(s, x)| *s += x);
                centroids[g] = unit(&sums[g]);
                group_of.push(g);
            }
            None => {
                sums.push(v.clone());
                centroids.push(v.clone());
                group_of.push(centroids.len() - 1);
            }
        }
    }
    // One pass against the final centroids.
    for (k, v) in vectors.iter().enumerate() {
        if let Some((g, s)) = nearest(&centroids[..open(&centroids)], v)
            && s >= similarity
            && s > dot(&centroids[group_of[k]], v)
        {
            group_of[k] = g;
        }
    }
    (group_of, centroids)
}

/// The centroid nearest to `v` and its cosine.
fn nearest(centroids: &[Vec<f32>], v: &[f32]) -> Option<(usize, f32)> {
    centroids
        .iter()
        .enumerate()
        .map(|(g, c)| (g, dot(c, v)))
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
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut random = || {
            let mut v: Vec<f32> = (0..64)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    (seed % 2001) as f32 / 1000.0 - 1.0
                })
                .collect();
            normalise(&mut v);
            v
        };
        let (open, n) = (20, 70);
        let mut vectors: Vec<Vec<f32>> = (0..n).map(|_| random()).collect();
        let mut near_first: Vec<f32> = vectors[0]
            .iter()
            .zip(random())
            .map(|(a, b)| a + 0.1 * b)
            .collect();
        normalise(&mut near_first);
        vectors.push(near_first);
        let (group_of, centroids) = cluster(&vectors, 0.9, open);
        assert_eq!(centroids.len(), n);
        assert_eq!(group_of[n], 0);
        assert_eq!(group_of[n - 1], n - 1);
    }

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
        let r = report(&asked, 0.5, now - Duration::days(30), now, 10);
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
        let one = report(&asked, 0.5, now - Duration::days(30), now, 1);
        assert_eq!((one.groups.len(), one.total_groups), (1, 3));
    }

    #[test]
    fn the_threshold_is_on_graces_scale_whatever_the_model() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = Config::default();
        config.embedding.model_dir = dir.path().to_path_buf();
        // No model card map (MiniLM): the setting is the cosine.
        assert_eq!(threshold(&config).unwrap(), 0.4);
        std::fs::write(
            dir.path().join(crate::embed::MODEL_CARD_FILE),
            "similarity:\n  query: {scale: 7.36, shift: -5.93}\n  passage: {scale: 5.79, shift: -4.61}\n",
        )
        .unwrap();
        let e5 = threshold(&config).unwrap();
        assert!((e5 - (0.4 + 4.61) / 5.79).abs() < 1e-6, "{e5}");
        // A broken card is an error naming it, not a silent default.
        std::fs::write(
            dir.path().join(crate::embed::MODEL_CARD_FILE),
            "similarity: [",
        )
        .unwrap();
        let e = threshold(&config).unwrap_err().to_string();
        assert!(e.contains(crate::embed::MODEL_CARD_FILE), "{e}");
    }

    #[test]
    fn nothing_hostile_breaks_it() {
        let now = Utc::now();
        let since = now - Duration::days(30);
        assert!(report(&[], 0.5, since, now, 10).groups.is_empty());
        // Zero vectors, vectors of other lengths, one question repeated.
        let asked = vec![
            unmet("same", vec![0.0; 8], 1, Why::Declined, now),
            unmet("same", vec![1.0; 3], 2, Why::Declined, now),
            unmet("SAME ", vec![1.0; 8], 3, Why::Escalated, now),
        ];
        let r = report(&asked, 0.5, since, now, 10);
        assert_eq!(r.groups.iter().map(|g| g.count).sum::<usize>(), 3);
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
        let r = report(&asked, 0.5, since, now, 10);
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
