//! Search: a question → ranked passages. The dense ranking (cosine of
//! MiniLM vectors) and, when `search.hybrid` is on, the lexical ranking
//! (BM25 + exact identifiers) are fused by cosine plus a bounded lexical
//! bonus, which only passages with strong lexical evidence take (the gate,
//! [`crate::store::fusion`]: every candidate's lexical terms are read once,
//! without its payload, to compare them with the dense first's); every
//! passage keeps its dense cosine
//! similarity as `score`, the number later stages (confidence) reason
//! about.
//!
//! An identifier in the question (`E0392`, `--purge`, `core.autocrlf`) is
//! evidence no similarity matches: with `pin_identifiers`, the passages
//! among the lexical ranking's best that contain the question's identifiers
//! verbatim are put first (more identifiers first, then the fused order),
//! above passages that only resemble the question: a page about
//! `fetch.prune` may be further from the question in meaning than its
//! neighbour about `fetch.pruneTags` by more than the lexical bonus.

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};

use crate::config::{MAX_SEARCH_LIMIT, SearchConfig};
use crate::embed::{Embedder, cosine};
use crate::lexical::{LexicalEncoder, distinct_identifiers, identifier_term, identifiers_found};
use crate::store::fusion::{Evidence, Gate, fuse, fuse_gated, pin};
use crate::store::{ChunkPoint, PayloadFilter, QueryVector, StoreQuery, StoredHit, VectorStore};

/// Result of a search.
pub type Result<T> = std::result::Result<T, SearchError>;

/// What went wrong searching (the library's `grace::Error` takes each
/// as its own kind: bad input, the embedder, the store).
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    /// The query or the limit is not one a search can run.
    #[error("{0}")]
    InvalidInput(String),
    /// The query could not be embedded.
    #[error(transparent)]
    Embed(#[from] crate::embed::EmbedError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
}

/// A passage found by a search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Passage {
    /// The point's id in the store ([`crate::store::point_id`]).
    pub id: u64,
    /// The document's canonical path.
    pub source: String,
    /// Heading path of the passage (` > `-separated).
    pub section: String,
    /// Position of the chunk in its document, from 0.
    pub chunk_index: usize,
    /// The page it is on, from 1, for documents with pages (PDF).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page: Option<u32>,
    /// The passage's text.
    pub text: String,
    /// Cosine similarity of the passage to the query, in [-1, 1].
    pub score: f32,
    /// Fused score: the cosine plus the lexical bonus
    /// ([`crate::store::fusion`]) and its document's boost
    /// ([`apply_document_boosts`]); the ranking order.
    pub fused_score: f32,
    /// Rank (from 1) in the dense ranking, if the passage was in it.
    pub dense_rank: Option<usize>,
    /// Rank (from 1) in the lexical ranking, if the passage was in it.
    pub lexical_rank: Option<usize>,
    /// BM25 score in the lexical ranking.
    pub lexical_score: Option<f32>,
    /// Put first because it contains the question's identifiers verbatim
    /// (`search.pin_identifiers`).
    #[serde(default)]
    pub pinned: bool,
    /// The answerability reader's probability that this passage answers
    /// the question, when the reader read it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reader_score: Option<f32>,
    /// The stored dense vector (for confidence factors that compare the
    /// passage with its neighbours without embedding it again).
    #[serde(skip)]
    pub vector: Option<Vec<f32>>,
}

#[cfg(test)]
impl Passage {
    /// A passage of `/kb/{id}.md` for unit tests: cosine 0.5, fused score
    /// 0, first in the dense ranking at `id`.
    pub(crate) fn for_tests(id: u64, pinned: bool) -> Self {
        Self {
            id,
            source: format!("/kb/{id}.md"),
            section: String::new(),
            chunk_index: 0,
            page: None,
            text: format!("passage {id}"),
            score: 0.5,
            fused_score: 0.0,
            dense_rank: Some(id as usize),
            lexical_rank: None,
            lexical_score: None,
            pinned,
            reader_score: None,
            vector: None,
        }
    }
}

/// Documents' boosts from their ratings (`feedback.document_boost`): each
/// passage's fused score moves by its document's boost (bounded where the
/// boosts are made), and the passages after the pinned ones are put in
/// that order again. A boost never brings in a passage the search did not
/// return, and never moves a pinned one.
pub fn apply_document_boosts(passages: &mut [Passage], boosts: &HashMap<String, f32>) {
    if boosts.is_empty() {
        return;
    }
    let pinned = passages.iter().take_while(|p| p.pinned).count();
    let rest = &mut passages[pinned..];
    for p in rest.iter_mut() {
        if let Some(boost) = boosts.get(&p.source) {
            p.fused_score += boost;
        }
    }
    // Stable: passages of equal score keep the search's order.
    rest.sort_by(|a, b| b.fused_score.total_cmp(&a.fused_score));
}

/// What to search for.
#[derive(Debug, Clone)]
pub struct SearchRequest<'a> {
    /// The question or search terms.
    pub query: &'a str,
    /// Passages to return at most (at least 1).
    pub limit: usize,
    /// Only passages matching this; `None`: the whole collection.
    pub filter: Option<&'a PayloadFilter>,
}

/// Passages from the top of the lexical ranking checked for the query's
/// identifiers. A passage that contains a rare identifier the query names
/// is near the top there (identifier terms weigh double).
const PIN_POOL: usize = 10;

/// Checks the number of passages a search is asked for: 1 to
/// [`MAX_SEARCH_LIMIT`]. [`search`] checks its own; a caller that turns the
/// asked number into another (a deeper search to rerank) checks the asked
/// one first.
pub fn check_limit(limit: usize) -> Result<()> {
    if (1..=MAX_SEARCH_LIMIT).contains(&limit) {
        Ok(())
    } else {
        Err(SearchError::InvalidInput(format!(
            "the number of results must be in 1..={MAX_SEARCH_LIMIT}, got {limit}"
        )))
    }
}

/// Runs a search: the rankings, their fusion, its gate, the threshold and
/// the pinning as `config` says (`candidates`, `hybrid`, the weights,
/// `rare_term_share` and `rare_terms`, `score_threshold`,
/// `pin_identifiers`); the query, the limit and the filter as `request`
/// says.
pub fn search(
    store: &dyn VectorStore,
    embedder: &dyn Embedder,
    lexical: &LexicalEncoder,
    config: &SearchConfig,
    request: &SearchRequest<'_>,
) -> Result<Vec<Passage>> {
    let query = request.query.trim();
    if crate::text::is_blank(query) {
        return Err(SearchError::InvalidInput("the query is empty".into()));
    }
    check_limit(request.limit)?;
    let started = std::time::Instant::now();
    let candidates = config.candidates.max(request.limit);
    // Both rankings carry ids and scores only; the payload and vector of
    // the few passages kept are read afterwards (`fetch`).
    let lexical_ranking = || {
        let sparse = lexical.encode_query(query);
        store.search(&StoreQuery {
            filter: request.filter,
            ..StoreQuery::ranking(QueryVector::Lexical(&sparse), candidates)
        })
    };
    // The lexical ranking does not need the question's embedding: while
    // the model embeds the question on one core, it runs on a second
    // thread, so a hybrid search costs the longer of the two, not their
    // sum. When the embedding keeps every core busy (the default on 2
    // cores), a third thread only fights it: the ranking then runs after
    // it, which measured faster at 12k and 100k chunks (docs/src/performance.md).
    let beside = config.hybrid && embedder.query_leaves_a_core_free();
    let mut embed_took = std::time::Duration::ZERO;
    let (q, lexical_hits) = std::thread::scope(|scope| {
        let span = tracing::Span::current();
        let lexical_leg = beside.then(|| {
            std::thread::Builder::new()
                .name("grace-lexical".into())
                .spawn_scoped(scope, move || span.in_scope(lexical_ranking))
        });
        let embedding = std::time::Instant::now();
        let q = embedder.embed_query(query);
        embed_took = embedding.elapsed();
        let hits = match lexical_leg {
            None if config.hybrid => lexical_ranking(),
            None => Ok(Vec::new()),
            Some(Ok(leg)) => leg
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            // No thread to be had (the process at its limit): rank here,
            // after the embedding, rather than fail the search.
            Some(Err(e)) => {
                tracing::debug!(error = %e, "no thread for the lexical ranking; running it inline");
                lexical_ranking()
            }
        };
        (q, hits)
    });
    let q = q?;
    let lexical_hits = lexical_hits?;
    let dense = store.search(&StoreQuery {
        filter: request.filter,
        ..StoreQuery::ranking(QueryVector::Dense(&q), candidates)
    })?;

    // A query that names an identifier (an error code, a long option, a
    // function) is exactly where the dense model is weakest: trust the
    // lexical ranking, whose identifier terms match exactly, more.
    let query_identifiers = distinct_identifiers(query);
    let lexical_weight = if query_identifiers.is_empty() {
        config.lexical_weight
    } else {
        config.identifier_weight
    };
    let pairs =
        |hits: &[StoredHit]| -> Vec<(u64, f32)> { hits.iter().map(|h| (h.id, h.score)).collect() };
    // Cosines on GRACE's similarity scale (the model's map; MiniLM's is
    // none), the units the lexical weight and the threshold are in.
    let similarity = embedder.similarity_scale().query;
    let dense_pairs: Vec<(u64, f32)> = dense
        .iter()
        .map(|h| (h.id, similarity.apply(h.score)))
        .collect();
    let lexical_pairs = pairs(&lexical_hits);
    let dense_score: HashMap<u64, f32> = dense_pairs.iter().copied().collect();
    let lexical_score: HashMap<u64, f32> = lexical_pairs.iter().copied().collect();
    // Points already read (by pinning), so they are not read twice.
    let mut fetched: HashMap<u64, ChunkPoint> = HashMap::new();
    let gate = Gate::of(config);
    let gated = gate != Gate::OPEN && !lexical_hits.is_empty();
    let mut fused = if gated {
        // The gate compares each candidate's terms with the dense first's:
        // the terms of every candidate of both rankings are read once.
        let mut pool: Vec<u64> = dense_pairs.iter().map(|&(id, _)| id).collect();
        pool.extend(lexical_pairs.iter().map(|&(id, _)| id));
        pool.sort_unstable();
        pool.dedup();
        let passages: HashMap<u64, HashSet<u32>> = store
            .retrieve_terms(&pool)?
            .into_iter()
            .map(|(id, terms)| (id, terms.into_iter().collect()))
            .collect();
        let query_terms = lexical.encode_query(query).indices;
        let identifier_terms: HashSet<u32> = query_identifiers
            .iter()
            .map(|id| identifier_term(id))
            .collect();
        let evidence = Evidence {
            question: &query_terms,
            identifiers: &identifier_terms,
            passages: &passages,
        };
        fuse_gated(
            &dense_pairs,
            &lexical_pairs,
            lexical_weight,
            &evidence,
            &gate,
        )
    } else {
        fuse(&dense_pairs, &lexical_pairs, lexical_weight)
    };
    // Fused order; a passage only the lexical ranking found has no cosine
    // yet: it is computed from its stored vector once fetched.
    fused.retain(|f| {
        dense_score
            .get(&f.id)
            .is_none_or(|&score| score >= config.score_threshold)
    });
    let mut pinned: HashMap<u64, usize> = HashMap::new();
    if config.pin_identifiers && !query_identifiers.is_empty() && !lexical_hits.is_empty() {
        let pool: Vec<u64> = lexical_hits.iter().take(PIN_POOL).map(|h| h.id).collect();
        fetched.extend(store.retrieve(&pool)?.into_iter().map(|p| (p.id, p)));
        for id in &pool {
            if let Some(point) = fetched.get(id) {
                let text = format!("{}\n{}", point.payload.section, point.payload.text);
                let found = identifiers_found(&query_identifiers, &text);
                if found > 0 {
                    pinned.insert(point.id, found);
                }
            }
        }
        pin(&mut fused, &pinned);
    }
    let mut fused = fused.into_iter().peekable();
    let mut passages = Vec::with_capacity(request.limit);
    while passages.len() < request.limit && fused.peek().is_some() {
        let batch: Vec<_> = fused
            .by_ref()
            .take(request.limit - passages.len())
            .collect();
        let ids: Vec<u64> = batch
            .iter()
            .map(|f| f.id)
            .filter(|id| !fetched.contains_key(id))
            .collect();
        let mut points: HashMap<u64, ChunkPoint> = if ids.is_empty() {
            HashMap::new()
        } else {
            store
                .retrieve(&ids)?
                .into_iter()
                .map(|p| (p.id, p))
                .collect()
        };
        for f in batch {
            // Deleted between the ranking and now: skip it.
            let Some(point) = points.remove(&f.id).or_else(|| fetched.remove(&f.id)) else {
                continue;
            };
            let score = match dense_score.get(&f.id) {
                Some(&score) => score,
                None => similarity.apply(cosine(&q, &point.dense)),
            };
            if score < config.score_threshold {
                continue;
            }
            passages.push(Passage {
                id: point.id,
                source: point.payload.source,
                section: point.payload.section,
                chunk_index: point.payload.chunk_index,
                page: point.payload.page,
                text: point.payload.text,
                score,
                fused_score: f.score,
                dense_rank: f.ranks[0],
                lexical_rank: f.ranks[1],
                lexical_score: lexical_score.get(&f.id).copied(),
                pinned: pinned.contains_key(&f.id),
                reader_score: None,
                vector: Some(point.dense),
            });
        }
    }
    // The store's part: the whole search but the question's embedding.
    crate::telemetry::phase(crate::telemetry::Phase::Embed, embed_took);
    crate::telemetry::phase(
        crate::telemetry::Phase::Search,
        started.elapsed().saturating_sub(embed_took),
    );
    Ok(passages)
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};
    use std::sync::mpsc::{Receiver, Sender, channel};
    use std::time::Duration;

    use super::*;
    use crate::embed::EmbedError;
    use crate::lexical::SparseVector;
    use crate::store::{ChunkPayload, ScrollPage, StoreError, StoreInfo};

    /// Two points: 1 found by both rankings, 2 by the lexical one only.
    /// The lexical ranking tells `lexical_ran` when it is asked, and fails
    /// when `lexical_fails`.
    struct TwoPoints {
        lexical_ran: Mutex<Sender<()>>,
        lexical_fails: bool,
    }

    fn point(id: u64, dense: Vec<f32>) -> ChunkPoint {
        ChunkPoint {
            id,
            dense,
            lexical: SparseVector::default(),
            payload: ChunkPayload {
                source: format!("/kb/{id}.md"),
                section: String::new(),
                chunk_index: 0,
                page: None,
                readers: Vec::new(),
                text: format!("passage {id}"),
                content_hash: String::new(),
            },
        }
    }

    fn hit(id: u64, score: f32) -> StoredHit {
        StoredHit {
            id,
            score,
            payload: None,
            dense: None,
        }
    }

    fn engine_error(message: &str) -> StoreError {
        StoreError::Engine {
            path: "/test".into(),
            message: message.into(),
        }
    }

    impl VectorStore for TwoPoints {
        fn upsert(&self, _: Vec<ChunkPoint>) -> crate::store::Result<()> {
            Err(engine_error("read-only"))
        }
        fn search(&self, query: &StoreQuery<'_>) -> crate::store::Result<Vec<StoredHit>> {
            match query.vector {
                QueryVector::Dense(_) => Ok(vec![hit(1, 0.9)]),
                QueryVector::Lexical(_) => {
                    let _ = self.lexical_ran.lock().map(|tx| tx.send(()));
                    if self.lexical_fails {
                        return Err(engine_error("lexical index unreadable"));
                    }
                    Ok(vec![hit(1, 7.0), hit(2, 3.0)])
                }
            }
        }
        fn retrieve(&self, ids: &[u64]) -> crate::store::Result<Vec<ChunkPoint>> {
            let vectors = |id| {
                if id == 1 {
                    vec![1.0, 0.0]
                } else {
                    vec![0.6, 0.8]
                }
            };
            Ok(ids.iter().map(|&id| point(id, vectors(id))).collect())
        }
        fn delete_by_source(&self, _: &str) -> crate::store::Result<()> {
            Err(engine_error("read-only"))
        }
        fn set_readers(&self, _: &str, _: &[String]) -> crate::store::Result<()> {
            Err(engine_error("read-only"))
        }
        fn count(&self, _: Option<&PayloadFilter>) -> crate::store::Result<usize> {
            Ok(2)
        }
        fn flush(&self) -> crate::store::Result<()> {
            Ok(())
        }
        fn optimize(&self) -> crate::store::Result<bool> {
            Ok(false)
        }
        fn info(&self) -> crate::store::Result<StoreInfo> {
            Ok(StoreInfo {
                points: 2,
                indexed_vectors: 0,
                segments: 1,
                dimension: 2,
                index: None,
            })
        }
        fn scroll(&self, _: Option<u64>, _: usize) -> crate::store::Result<ScrollPage> {
            Ok(ScrollPage {
                points: Vec::new(),
                next: None,
            })
        }
    }

    /// Embeds only once the lexical ranking has been asked (or fails when
    /// `fails`): with the rankings run one after the other it would wait
    /// forever, so it gives up after a while and says so.
    struct WaitsForLexical<'a> {
        lexical_ran: Mutex<Receiver<()>>,
        fails: bool,
        scale: crate::embed::SimilarityScale,
        /// Set: it says it keeps every core busy, and embeds at once,
        /// noting here whether the lexical ranking had already run.
        every_core: Option<&'a AtomicBool>,
    }

    impl Embedder for WaitsForLexical<'_> {
        fn dimension(&self) -> usize {
            2
        }
        fn model_id(&self) -> &str {
            "waits-for-lexical"
        }
        fn query_leaves_a_core_free(&self) -> bool {
            self.every_core.is_none()
        }
        fn embed(&self, _: &[String]) -> crate::embed::Result<Vec<Vec<f32>>> {
            let received = self
                .lexical_ran
                .lock()
                .map_err(|_| EmbedError::Model("poisoned".into()))?;
            if let Some(ran_first) = self.every_core {
                ran_first.store(received.try_recv().is_ok(), AtomicOrdering::SeqCst);
                return Ok(vec![vec![1.0, 0.0]]);
            }
            let ran = received.recv_timeout(Duration::from_secs(20));
            if ran.is_err() {
                return Err(EmbedError::Model(
                    "the lexical ranking did not run while the question was embedded".into(),
                ));
            }
            if self.fails {
                return Err(EmbedError::Model("the model failed".into()));
            }
            Ok(vec![vec![1.0, 0.0]])
        }
        fn similarity_scale(&self) -> crate::embed::SimilarityScale {
            self.scale
        }
    }

    fn run(lexical_fails: bool, embed_fails: bool) -> Result<Vec<Passage>> {
        run_scaled(
            lexical_fails,
            embed_fails,
            crate::embed::SimilarityScale::IDENTITY,
        )
    }

    fn run_scaled(
        lexical_fails: bool,
        embed_fails: bool,
        scale: crate::embed::SimilarityScale,
    ) -> Result<Vec<Passage>> {
        run_on(lexical_fails, |rx| WaitsForLexical {
            lexical_ran: Mutex::new(rx),
            fails: embed_fails,
            scale,
            every_core: None,
        })
    }

    /// A search of the two points with the embedder `make` builds around
    /// the receiving end of the store's "the lexical ranking ran".
    fn run_on<'a>(
        lexical_fails: bool,
        make: impl FnOnce(Receiver<()>) -> WaitsForLexical<'a>,
    ) -> Result<Vec<Passage>> {
        let (tx, rx) = channel();
        let store = TwoPoints {
            lexical_ran: Mutex::new(tx),
            lexical_fails,
        };
        let embedder = make(rx);
        let lexical = LexicalEncoder::new().expect("the English encoder builds");
        // No pinning, and no gate (Gate::OPEN): the plain fusion.
        let config = SearchConfig {
            hybrid: true,
            score_threshold: 0.0,
            pin_identifiers: false,
            rare_term_share: 1.0,
            rare_terms: 0,
            ..SearchConfig::default()
        };
        let request = SearchRequest {
            query: "how do I roll back",
            limit: 5,
            filter: None,
        };
        search(&store, &embedder, &lexical, &config, &request)
    }

    #[test]
    fn an_embedding_on_every_core_is_not_given_a_lexical_thread_to_fight() {
        let ran_first = AtomicBool::new(true);
        let passages = run_on(false, |rx| WaitsForLexical {
            lexical_ran: Mutex::new(rx),
            fails: false,
            scale: crate::embed::SimilarityScale::IDENTITY,
            every_core: Some(&ran_first),
        })
        .expect("the search succeeds");
        assert!(
            !ran_first.load(AtomicOrdering::SeqCst),
            "the lexical ranking ran after the embedding, not beside it"
        );
        let ids: Vec<u64> = passages.iter().map(|p| p.id).collect();
        assert_eq!(ids, [1, 2], "both rankings fused as before");
    }

    #[test]
    fn the_lexical_ranking_runs_while_the_question_is_embedded() {
        let passages = run(false, false).expect("the search succeeds");
        let ids: Vec<u64> = passages.iter().map(|p| p.id).collect();
        assert_eq!(ids, [1, 2], "fused order: both rankings first");
        assert_eq!(passages[0].dense_rank, Some(1));
        assert_eq!(passages[0].lexical_rank, Some(1));
        // Found by the lexical ranking only: its cosine from its stored vector.
        assert_eq!(passages[1].dense_rank, None);
        assert!((passages[1].score - 0.6).abs() < 1e-6);
    }

    #[test]
    fn cosines_are_put_on_the_models_similarity_scale() {
        use crate::embed::{Affine, SimilarityScale};
        let scale = SimilarityScale {
            query: Affine {
                scale: 2.0,
                shift: -1.0,
            },
            // Passage against passage: not used by a search.
            passage: Affine {
                scale: 9.0,
                shift: 9.0,
            },
        };
        let passages = run_scaled(false, false, scale).expect("the search succeeds");
        // The store's cosine 0.9 and the stored vector's 0.6, both mapped.
        assert!(
            (passages[0].score - 0.8).abs() < 1e-6,
            "{}",
            passages[0].score
        );
        assert!(
            (passages[1].score - 0.2).abs() < 1e-6,
            "{}",
            passages[1].score
        );
        // The fusion adds the lexical bonus to the mapped cosine: 0.8 plus
        // the full bonus for the lexical ranking's first.
        let bonus = SearchConfig::default().lexical_weight;
        assert!((passages[0].fused_score - (0.8 + bonus)).abs() < 1e-6);
    }

    #[test]
    fn a_failure_in_either_leg_fails_the_search() {
        let err = run(true, false).expect_err("the lexical ranking failed");
        assert!(matches!(err, SearchError::Store(_)), "{err}");
        assert!(
            err.to_string().contains("lexical index unreadable"),
            "{err}"
        );
        let err = run(false, true).expect_err("the embedding failed");
        assert!(matches!(err, SearchError::Embed(_)), "{err}");
        assert!(err.to_string().contains("the model failed"), "{err}");
    }

    fn passage(source: &str, fused: f32, pinned: bool) -> Passage {
        Passage {
            source: source.into(),
            fused_score: fused,
            ..Passage::for_tests(0, pinned)
        }
    }

    #[test]
    fn document_boosts_reorder_what_was_found_and_never_a_pinned_passage() {
        let mut passages = vec![
            passage("pinned.md", 0.5, true),
            passage("down.md", 0.80, false),
            passage("up.md", 0.78, false),
            passage("plain.md", 0.70, false),
        ];
        let boosts = HashMap::from([
            ("down.md".to_string(), -0.05),
            ("up.md".to_string(), 0.05),
            ("pinned.md".to_string(), -0.2),
            ("absent.md".to_string(), 1.0),
        ]);
        apply_document_boosts(&mut passages, &boosts);
        let order: Vec<&str> = passages.iter().map(|p| p.source.as_str()).collect();
        assert_eq!(order, ["pinned.md", "up.md", "down.md", "plain.md"]);
        assert!((passages[1].fused_score - 0.83).abs() < 1e-6);
        assert_eq!(passages[0].fused_score, 0.5);
        // No boosts: nothing moves.
        let before = passages.clone();
        apply_document_boosts(&mut passages, &HashMap::new());
        assert_eq!(passages, before);
    }
}
