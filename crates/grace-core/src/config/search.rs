//! The `qdrant` and `search` sections: the collection, how it is searched
//! and fused, and what happens to the fused ranking.

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
