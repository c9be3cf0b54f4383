//! The `search` section: how the collection is searched and the rankings
//! fused, and what happens to the fused ranking.

use super::Result;
use super::check::in_range;
use serde::{Deserialize, Serialize};

/// The most passages one search returns (`search.limit`, `-k`, the
/// `limit` of `POST /v1/search`). Each ranking is asked for at least this
/// many candidates, and the store reserves room for them: a limit from
/// outside beyond it would make the process try to allocate without bound.
pub const MAX_SEARCH_LIMIT: usize = 1000;

/// How a search ranks passages: the dense and lexical rankings, their
/// fusion, and what happens to the fused ranking before passages are
/// returned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SearchConfig {
    /// Passages returned by a search when `-k` is not given.
    pub limit: usize,
    /// Passages whose dense cosine similarity is below this are dropped.
    pub score_threshold: f32,
    /// Fuse a lexical (BM25 + exact identifier) ranking with the dense one.
    pub hybrid: bool,
    /// The lexical ranking's bonus in the fusion, in cosine units: a
    /// passage scores its dense cosine plus `lexical_weight · BM25 / best
    /// BM25` for queries in plain words.
    pub lexical_weight: f32,
    /// The same for queries that name an identifier (`E0382`, `--purge`,
    /// `foo_bar()`, `1.24.4`), which dense embeddings match poorly and the
    /// lexical ranking matches exactly.
    pub identifier_weight: f32,
    /// Candidates taken from each ranking before fusion.
    pub candidates: usize,
    /// Put passages that contain the question's identifiers (`E0392`,
    /// `--purge`, `core.autocrlf`) verbatim above those that only resemble
    /// it: an exact identifier match is stronger evidence than similarity.
    pub pin_identifiers: bool,
    /// How the fused passages are reordered: `reader` by the answerability
    /// reader's probability (when the reader is available), `none` keeps
    /// the fused order.
    pub rerank: Rerank,
    /// With `search.rerank: reader` (and the reader available), the fused
    /// passages the reader reads and reorders per search; the best `limit`
    /// of them are returned. Below the search limit, the limit is used.
    /// With `rerank: none` it has no effect: the reader, when on, reads
    /// only the `limit` passages returned.
    pub rerank_depth: usize,
    /// The lexical ranking may lift a passage only with strong evidence
    /// the dense ranking's first passage lacks: an identifier of the
    /// question, or a question term held by at most this share of the
    /// candidate passages (0..=1; 1 with `rare_terms: 0` lets every passage
    /// take its lexical bonus, as a plain fusion does). Chosen by
    /// cross-validation across 22 corpora, one held out at a time (the
    /// book, "Evaluation").
    pub rare_term_share: f64,
    /// Strong terms a passage needs before its lexical bonus counts
    /// (`rare_term_share`), 0..=16.
    pub rare_terms: usize,
}

impl Default for SearchConfig {
    fn default() -> Self {
        Self {
            limit: 5,
            score_threshold: 0.0,
            hybrid: true,
            lexical_weight: 0.15,
            identifier_weight: 0.3,
            candidates: 40,
            pin_identifiers: true,
            rerank: Rerank::None,
            rerank_depth: 5,
            rare_term_share: 0.3,
            rare_terms: 1,
        }
    }
}

/// How fused passages are reordered (`search.rerank`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rerank {
    /// By the reader's probability that the passage answers the question.
    Reader,
    /// Keep the fused (and pinned) order.
    None,
}

/// Most strong terms `search.rare_terms` may ask of a passage.
const MAX_RARE_TERMS: usize = 16;

/// The `search` section.
pub(super) fn validate_search(s: &SearchConfig) -> Result<()> {
    in_range("search.candidates", s.candidates, 1..=10000, "")?;
    in_range("search.limit", s.limit, 1..=MAX_SEARCH_LIMIT, "")?;
    in_range(
        "search.score_threshold",
        s.score_threshold,
        -1.0..=1.0,
        " (a cosine similarity)",
    )?;
    for (key, w) in [
        ("search.lexical_weight", s.lexical_weight),
        ("search.identifier_weight", s.identifier_weight),
    ] {
        in_range(key, w, 0.0..=2.0, " (a bonus in cosine units)")?;
    }
    in_range("search.rerank_depth", s.rerank_depth, 1..=100, "")?;
    in_range(
        "search.rare_term_share",
        s.rare_term_share,
        0.0..=1.0,
        " (a share of the candidate passages)",
    )?;
    in_range("search.rare_terms", s.rare_terms, 0..=MAX_RARE_TERMS, "")
}
