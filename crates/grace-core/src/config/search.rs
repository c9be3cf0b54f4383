//! The `qdrant` and `search` sections: the collection, how it is searched
//! and fused, and what happens to the fused ranking.

use super::Result;
use super::check::{above_zero, in_range, invalid};
use serde::{Deserialize, Serialize};

/// The most passages one search returns (`qdrant.search_limit`, `-k`, the
/// `limit` of `POST /v1/search`). Each ranking is asked for at least this
/// many candidates, and the store reserves room for them: a limit from
/// outside beyond it would make the process try to allocate without bound.
pub const MAX_SEARCH_LIMIT: usize = 1000;

/// The collection, how it is searched, and the Qdrant server it lives on
/// when `storage.backend` is `qdrant`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct QdrantConfig {
    /// Collection name; the embedded store keeps it in
    /// `<data_dir>/collections/<collection>`.
    pub collection: String,
    /// gRPC URL of the Qdrant server (`storage.backend: qdrant`): `http://`
    /// or `https://` (TLS), port 6334 by default (6333 is its REST port).
    pub url: String,
    /// API key sent to the Qdrant server; empty: none. Best set through
    /// `GRACE_QDRANT__API_KEY` rather than in a file.
    pub api_key: String,
    /// Seconds one request to the Qdrant server may take (also the
    /// connection timeout).
    pub timeout_seconds: f64,
    /// Passages returned by a search when `-k` is not given.
    pub search_limit: usize,
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
    /// Shards of a collection GRACE creates on a server; 0: the server's
    /// default (one per node). Fixed at creation: a collection that exists
    /// with another number is an error.
    pub shard_number: u32,
    /// Copies of each shard kept on different nodes; 0: the server's
    /// default (1). With 2 or more, a cluster keeps serving and writing
    /// when a node is lost.
    pub replication_factor: u32,
    /// Replicas that must apply a write before it counts as done; 0: the
    /// server's default (1). At most `replication_factor`.
    pub write_consistency_factor: u32,
}

impl Default for QdrantConfig {
    fn default() -> Self {
        Self {
            collection: "grace".to_string(),
            url: "http://localhost:6334".to_string(),
            api_key: String::new(),
            timeout_seconds: 10.0,
            search_limit: 5,
            score_threshold: 0.0,
            hybrid: true,
            lexical_weight: 0.15,
            identifier_weight: 0.3,
            candidates: 40,
            shard_number: 0,
            replication_factor: 0,
            write_consistency_factor: 0,
        }
    }
}

/// What happens to the fused ranking before passages are returned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SearchConfig {
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

/// The `qdrant` section but `qdrant.candidates` (checked last, in
/// [`super::validate::validate`]).
pub(super) fn validate_qdrant(q: &super::QdrantConfig) -> Result<()> {
    in_range("qdrant.candidates", q.candidates, 1..=10000, "")?;
    let name_ok = !q.collection.is_empty()
        && q.collection.len() <= 64
        && q.collection
            .chars()
            .all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == '-');
    if !name_ok {
        return Err(invalid(
            "qdrant.collection",
            format!(
                "`{}` must be 1 to 64 characters of letters, digits, `_` or `-`",
                q.collection
            ),
        ));
    }
    validate_qdrant_server(q)?;
    in_range(
        "qdrant.search_limit",
        q.search_limit,
        1..=super::MAX_SEARCH_LIMIT,
        "",
    )?;
    in_range(
        "qdrant.score_threshold",
        q.score_threshold,
        -1.0..=1.0,
        " (a cosine similarity)",
    )?;
    for (key, w) in [
        ("qdrant.lexical_weight", q.lexical_weight),
        ("qdrant.identifier_weight", q.identifier_weight),
    ] {
        in_range(key, w, 0.0..=2.0, " (a bonus in cosine units)")?;
    }
    Ok(())
}

/// The Qdrant server keys: checked whatever the backend, so a mistake shows
/// before the day the backend is switched.
fn validate_qdrant_server(q: &super::QdrantConfig) -> Result<()> {
    let rest = q
        .url
        .strip_prefix("http://")
        .or_else(|| q.url.strip_prefix("https://"));
    let host = rest.map(|r| r.split(['/', '?', '#']).next().unwrap_or(""));
    match host {
        Some(h) if !h.is_empty() && !h.starts_with(':') && !h.contains(char::is_whitespace) => {}
        _ => {
            return Err(invalid(
                "qdrant.url",
                format!(
                    "{:?} is not an http(s) URL with a host, such as http://localhost:6334 (the gRPC port)",
                    q.url
                ),
            ));
        }
    }
    if q.api_key
        .chars()
        .any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(invalid(
            "qdrant.api_key",
            "must not contain spaces or control characters".to_string(),
        ));
    }
    in_range(
        "qdrant.timeout_seconds",
        q.timeout_seconds,
        above_zero(3600.0),
        " seconds",
    )?;
    for (key, value) in [
        ("qdrant.shard_number", q.shard_number),
        ("qdrant.replication_factor", q.replication_factor),
        (
            "qdrant.write_consistency_factor",
            q.write_consistency_factor,
        ),
    ] {
        in_range(key, value, 0..=1000, " (0: the server's default)")?;
    }
    if q.write_consistency_factor > q.replication_factor.max(1) {
        return Err(invalid(
            "qdrant.write_consistency_factor",
            format!(
                "{} is more than the replicas there are (qdrant.replication_factor {}): no write could ever be confirmed",
                q.write_consistency_factor,
                q.replication_factor.max(1)
            ),
        ));
    }
    Ok(())
}
