//! The shared vector store test suite: the same tests run against the
//! embedded store (`EdgeStore`) and the Qdrant server backend
//! (`QdrantStore`) on a real Qdrant server (one node per test,
//! `support/qdrant_server.rs`: skipped, and said so, without a server).
//! Then what only a server shows: its version and the `source` index,
//! collections that exist with other parameters, lexical (IDF) ranking
//! equal to the embedded store's, a wrong API key, TLS and port mistakes,
//! the version check, a server lost in the middle of an ingest, async
//! callers; a knowledge base on each backend giving the same answers; and
//! `grace migrate` to the server and back.

use crate::support;
use crate::support::common;

use std::path::Path;
use std::sync::Arc;

use grace::config::{Backend, CollectionConfig, QdrantConfig};
use grace::ingest::IngestEvent;
use grace::lexical::LexicalEncoder;
use grace::store::edge::EdgeStore;
use grace::store::qdrant::QdrantStore;
use grace::store::{
    ChunkPayload, ChunkPoint, PayloadFilter, QueryVector, StoreError, StoreQuery, VectorStore,
    point_id,
};
use grace::{Config, KnowledgeBase, OpenMode};
use serde_json::json;
use support::fake_version::FakeVersion;
use support::qdrant_server::{Options, QdrantCluster};

type StoreResult<T> = grace::store::Result<T>;

const DIM: usize = 4;

/// A backend under test: opens collections by name.
trait Fixture {
    fn create(&self, collection: &str, dimension: usize) -> StoreResult<Box<dyn VectorStore>>;
    fn existing(&self, collection: &str) -> StoreResult<Box<dyn VectorStore>>;
    /// The backend's "no such collection" error.
    fn is_not_found(&self, e: &StoreError) -> bool;
}

struct Edge(tempfile::TempDir);

impl Edge {
    fn new() -> Self {
        Self(tempfile::tempdir().unwrap())
    }
}

impl Fixture for Edge {
    fn create(&self, collection: &str, dimension: usize) -> StoreResult<Box<dyn VectorStore>> {
        Ok(Box::new(EdgeStore::open_or_create(
            &self.0.path().join(collection),
            dimension,
            &grace::config::StorageConfig::default(),
        )?))
    }
    fn existing(&self, collection: &str) -> StoreResult<Box<dyn VectorStore>> {
        Ok(Box::new(EdgeStore::open_existing(
            &self.0.path().join(collection),
            &grace::config::StorageConfig::default(),
        )?))
    }
    fn is_not_found(&self, e: &StoreError) -> bool {
        matches!(e, StoreError::NotFound { .. })
    }
}

/// The Qdrant backend on a real server: a node of its own, or the server
/// at `GRACE_TEST_QDRANT_URL` when set (another version, a remote
/// cluster; collections then get a unique prefix and are deleted
/// afterwards).
struct Server {
    node: Option<QdrantCluster>,
    url: String,
    api_key: String,
    prefix: String,
    created: std::sync::Mutex<Vec<String>>,
}

impl Server {
    /// Whether there is a server to test against: one at
    /// `GRACE_TEST_QDRANT_URL`, or a binary to start one (else skipped).
    fn available() -> bool {
        std::env::var("GRACE_TEST_QDRANT_URL").is_ok_and(|url| !url.is_empty())
            || support::qdrant_server::available()
    }

    fn new() -> Self {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        match std::env::var("GRACE_TEST_QDRANT_URL") {
            Ok(url) if !url.is_empty() => Self {
                node: None,
                url,
                api_key: std::env::var("GRACE_TEST_QDRANT_API_KEY").unwrap_or_default(),
                prefix: format!("grace_test_{}_{n}_", std::process::id()),
                created: Default::default(),
            },
            _ => {
                let node = QdrantCluster::single();
                Self {
                    url: node.url(),
                    node: Some(node),
                    api_key: String::new(),
                    prefix: String::new(),
                    created: Default::default(),
                }
            }
        }
    }

    fn config(&self, collection: &str) -> Target {
        Target {
            server: QdrantConfig {
                url: self.url.clone(),
                api_key: self.api_key.clone(),
                timeout_seconds: 10.0,
            },
            collection: named(&format!("{}{collection}", self.prefix)),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if self.node.is_none() {
            for name in self.created.lock().unwrap().drain(..) {
                let _ = self.config(&name).drop_collection();
            }
        }
    }
}

/// A server's connection and a collection on it.
struct Target {
    server: QdrantConfig,
    collection: CollectionConfig,
}

impl Target {
    fn open_or_create(&self, dimension: usize) -> StoreResult<QdrantStore> {
        QdrantStore::open_or_create(&self.server, &self.collection, dimension)
    }
    fn open_existing(&self) -> StoreResult<QdrantStore> {
        QdrantStore::open_existing(&self.server, &self.collection)
    }
    fn drop_collection(&self) -> StoreResult<bool> {
        QdrantStore::drop_collection(&self.server, &self.collection)
    }
}

fn named(collection: &str) -> CollectionConfig {
    CollectionConfig {
        name: collection.to_string(),
        ..CollectionConfig::default()
    }
}

fn server_config(url: &str, collection: &str) -> Target {
    Target {
        server: QdrantConfig {
            url: url.to_string(),
            timeout_seconds: 10.0,
            ..QdrantConfig::default()
        },
        collection: named(collection),
    }
}

impl Fixture for Server {
    fn create(&self, collection: &str, dimension: usize) -> StoreResult<Box<dyn VectorStore>> {
        self.created.lock().unwrap().push(collection.to_string());
        Ok(Box::new(self.config(collection).open_or_create(dimension)?))
    }
    fn existing(&self, collection: &str) -> StoreResult<Box<dyn VectorStore>> {
        Ok(Box::new(self.config(collection).open_existing()?))
    }
    fn is_not_found(&self, e: &StoreError) -> bool {
        matches!(e, StoreError::CollectionNotFound { .. })
    }
}

// ---------------------------------------------------------------- data

const A: &str = "/kb/a b.md"; // a space: an exact keyword match, not full text
const C: &str = "/kb/c.md";
const D: &str = "/kb/d.md";

fn unit(v: [f32; DIM]) -> Vec<f32> {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter().map(|x| x / n).collect()
}

fn point(
    lexical: &LexicalEncoder,
    source: &str,
    index: usize,
    text: &str,
    dense: [f32; DIM],
) -> ChunkPoint {
    ChunkPoint {
        id: point_id(source, index, "h"),
        dense: unit(dense),
        lexical: lexical.encode_document(text),
        payload: ChunkPayload {
            source: source.to_string(),
            section: format!("Section {index}"),
            chunk_index: index,
            text: text.to_string(),
            content_hash: "h".to_string(),
            // A page on some points: it must come back as stored, and its
            // absence too.
            page: index
                .is_multiple_of(2)
                .then(|| u32::try_from(index + 1).unwrap_or(u32::MAX)),
            readers: Vec::new(),
        },
    }
}

fn points() -> Vec<ChunkPoint> {
    let l = LexicalEncoder::new().unwrap();
    vec![
        point(
            &l,
            A,
            0,
            "Rust borrow checker error E0382: use of a moved value",
            [1.0, 0.0, 0.0, 0.0],
        ),
        point(
            &l,
            A,
            1,
            "Fixing lifetimes of references in Rust structs",
            [0.8, 0.6, 0.0, 0.0],
        ),
        point(
            &l,
            C,
            0,
            "Baking sourdough bread at home",
            [0.0, 1.0, 0.0, 0.0],
        ),
        point(
            &l,
            C,
            1,
            "Feeding the sourdough starter every day",
            [0.0, 0.6, 0.8, 0.0],
        ),
        point(
            &l,
            D,
            0,
            "Rotating API keys with the vault command --rotate",
            [0.0, 0.0, 0.2, 1.0],
        ),
    ]
}

fn sorted_terms(p: &ChunkPoint) -> Vec<(u32, f32)> {
    let mut t: Vec<(u32, f32)> = p
        .lexical
        .indices
        .iter()
        .copied()
        .zip(p.lexical.values.iter().copied())
        .collect();
    t.sort_by_key(|(i, _)| *i);
    t
}

fn assert_same_point(got: &ChunkPoint, want: &ChunkPoint) {
    assert_eq!(got.id, want.id);
    assert_eq!(got.payload, want.payload);
    assert_eq!(got.dense.len(), want.dense.len());
    for (g, w) in got.dense.iter().zip(&want.dense) {
        assert!((g - w).abs() < 1e-5, "{:?} vs {:?}", got.dense, want.dense);
    }
    let (g, w) = (sorted_terms(got), sorted_terms(want));
    assert_eq!(g.len(), w.len(), "{g:?} vs {w:?}");
    for ((gi, gv), (wi, wv)) in g.iter().zip(&w) {
        assert_eq!(gi, wi);
        assert!((gv - wv).abs() < 1e-5, "{g:?} vs {w:?}");
    }
}

fn dense_search(
    store: &dyn VectorStore,
    v: [f32; DIM],
    limit: usize,
    filter: Option<&PayloadFilter>,
) -> Vec<grace::store::StoredHit> {
    let q = unit(v);
    store
        .search(&StoreQuery {
            vector: QueryVector::Dense(&q),
            limit,
            filter,
            with_payload: true,
            with_dense: true,
            exact: false,
        })
        .unwrap()
}

fn lexical_search(
    store: &dyn VectorStore,
    text: &str,
    limit: usize,
) -> Vec<grace::store::StoredHit> {
    let q = LexicalEncoder::new().unwrap().encode_query(text);
    store
        .search(&StoreQuery {
            vector: QueryVector::Lexical(&q),
            limit,
            filter: None,
            with_payload: true,
            with_dense: false,
            exact: false,
        })
        .unwrap()
}

// ---------------------------------------------------------------- the suite

fn upsert_and_read_back(b: &dyn Fixture) {
    let store = b.create("read_back", DIM).unwrap();
    let mut want = points();
    store.upsert(want.clone()).unwrap();
    store.flush().unwrap();
    let got = common::read_all(store.as_ref(), 100);
    want.sort_by_key(|p| p.id);
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(&want) {
        assert_same_point(g, w);
    }
}

fn retrieve_reads_the_asked_points(b: &dyn Fixture) {
    let store = b.create("retrieve", DIM).unwrap();
    let want = points();
    store.upsert(want.clone()).unwrap();
    let asked = [want[3].id, want[0].id, 424_242];
    let mut got = store.retrieve(&asked).unwrap();
    got.sort_by_key(|p| p.id);
    let mut expected = vec![want[3].clone(), want[0].clone()];
    expected.sort_by_key(|p| p.id);
    assert_eq!(got.len(), 2, "the id with no point is left out: {got:?}");
    for (g, w) in got.iter().zip(&expected) {
        assert_same_point(g, w);
    }
    assert!(store.retrieve(&[]).unwrap().is_empty());
    // The lexical terms alone, as the search's gate reads every candidate.
    let mut terms = store.retrieve_terms(&asked).unwrap();
    terms.sort_by_key(|(id, _)| *id);
    for (_, t) in &mut terms {
        t.sort_unstable();
    }
    let want_terms: Vec<(u64, Vec<u32>)> = expected
        .iter()
        .map(|p| {
            let mut t = p.lexical.indices.clone();
            t.sort_unstable();
            (p.id, t)
        })
        .collect();
    assert_eq!(terms, want_terms);
    assert!(store.retrieve_terms(&[]).unwrap().is_empty());
    // A ranking without payload carries ids and scores only.
    let q = unit([1.0, 0.0, 0.0, 0.0]);
    let bare = store
        .search(&StoreQuery::ranking(QueryVector::Dense(&q), 5))
        .unwrap();
    assert_eq!(bare.len(), 5);
    assert!(
        bare.iter()
            .all(|h| h.payload.is_none() && h.dense.is_none())
    );
}

fn reupsert_is_idempotent(b: &dyn Fixture) {
    let store = b.create("idempotent", DIM).unwrap();
    store.upsert(points()).unwrap();
    store.upsert(points()).unwrap();
    assert_eq!(store.count(None).unwrap(), 5);
    // The same id with new content replaces the point.
    let mut changed = points().remove(2);
    changed.payload.text = "Baking rye bread".into();
    let id = changed.id;
    store.upsert(vec![changed]).unwrap();
    assert_eq!(store.count(None).unwrap(), 5);
    let all = common::read_all(store.as_ref(), 10);
    let p = all.iter().find(|p| p.id == id).unwrap();
    assert_eq!(p.payload.text, "Baking rye bread");
}

fn dense_search_ranks_by_cosine(b: &dyn Fixture) {
    let store = b.create("dense", DIM).unwrap();
    store.upsert(points()).unwrap();
    let hits = dense_search(store.as_ref(), [1.0, 0.1, 0.0, 0.0], 3, None);
    let texts: Vec<&str> = hits
        .iter()
        .map(|h| h.payload.as_ref().unwrap().text.as_str())
        .collect();
    assert_eq!(hits.len(), 3, "{texts:?}");
    assert!(texts[0].contains("E0382"), "{texts:?}");
    assert!(texts[1].contains("lifetimes"), "{texts:?}");
    assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
    // Scores are cosine similarities, and the stored vector comes back.
    let want = unit([1.0, 0.1, 0.0, 0.0])[0];
    assert!((hits[0].score - want).abs() < 1e-4, "{}", hits[0].score);
    assert_eq!(hits[0].dense.as_deref().map(<[f32]>::len), Some(DIM));
    let exact = dense_search(store.as_ref(), [0.0, 1.0, 0.0, 0.0], 1, None);
    assert!((exact[0].score - 1.0).abs() < 1e-5);
    assert_eq!(exact[0].payload.as_ref().unwrap().source, C);
    // Without `with_dense`, no vector.
    let q = unit([0.0, 1.0, 0.0, 0.0]);
    let bare = store
        .search(&StoreQuery {
            with_payload: true,
            ..StoreQuery::ranking(QueryVector::Dense(&q), 1)
        })
        .unwrap();
    assert_eq!(bare[0].dense, None);
}

fn lexical_search_ranks_by_bm25(b: &dyn Fixture) {
    let store = b.create("lexical", DIM).unwrap();
    store.upsert(points()).unwrap();
    let hits = lexical_search(store.as_ref(), "What does E0382 mean?", 5);
    assert!(!hits.is_empty());
    assert!(
        hits[0].payload.as_ref().unwrap().text.contains("E0382"),
        "{hits:?}"
    );
    let hits = lexical_search(store.as_ref(), "sourdough starter", 5);
    let texts: Vec<&str> = hits
        .iter()
        .map(|h| h.payload.as_ref().unwrap().text.as_str())
        .collect();
    assert_eq!(texts.len(), 2, "{texts:?}");
    assert!(texts[0].contains("starter"), "{texts:?}");
    assert!(hits[0].score > hits[1].score);
    let hits = lexical_search(store.as_ref(), "--rotate", 5);
    assert_eq!(hits[0].payload.as_ref().unwrap().source, D);
    // A query of stop words only has no terms: no hits, no error.
    assert!(lexical_search(store.as_ref(), "the of a", 5).is_empty());
}

fn equal_scores_rank_by_id(b: &dyn Fixture) {
    let store = b.create("ties", DIM).unwrap();
    let l = LexicalEncoder::new().unwrap();
    let twins: Vec<ChunkPoint> = (0..6)
        .map(|i| {
            point(
                &l,
                &format!("/kb/twin{i}.md"),
                0,
                "identical twin chunk",
                [0.3, 0.3, 0.3, 0.3],
            )
        })
        .collect();
    store.upsert(twins.clone()).unwrap();
    let mut ids: Vec<u64> = twins.iter().map(|p| p.id).collect();
    ids.sort();
    let dense: Vec<u64> = dense_search(store.as_ref(), [1.0, 1.0, 1.0, 1.0], 6, None)
        .iter()
        .map(|h| h.id)
        .collect();
    assert_eq!(dense, ids);
    let lexical: Vec<u64> = lexical_search(store.as_ref(), "twin", 6)
        .iter()
        .map(|h| h.id)
        .collect();
    assert_eq!(lexical, ids);
}

fn filter_by_source(b: &dyn Fixture) {
    let store = b.create("filter", DIM).unwrap();
    store.upsert(points()).unwrap();
    let only_a = PayloadFilter::source(A);
    let hits = dense_search(store.as_ref(), [0.0, 1.0, 0.0, 0.0], 10, Some(&only_a));
    assert_eq!(hits.len(), 2);
    assert!(
        hits.iter().all(|h| h.payload.as_ref().unwrap().source == A),
        "{hits:?}"
    );
    // A prefix or a single word of the path is not the path.
    for other in ["/kb/a", "a b.md", "/kb/a b.md "] {
        let f = PayloadFilter::source(other);
        assert!(
            dense_search(store.as_ref(), [1.0, 0.0, 0.0, 0.0], 10, Some(&f)).is_empty(),
            "{other}"
        );
    }
    // Two conditions must both hold.
    let f = PayloadFilter {
        must: vec![
            ("source".into(), C.into()),
            ("section".into(), "Section 1".into()),
        ],
        ..PayloadFilter::default()
    };
    let hits = dense_search(store.as_ref(), [0.0, 1.0, 0.0, 0.0], 10, Some(&f));
    assert_eq!(hits.len(), 1);
    assert!(hits[0].payload.as_ref().unwrap().text.contains("starter"));
}

fn excluded_points_are_never_hits(b: &dyn Fixture) {
    let store = b.create("exclude", DIM).unwrap();
    store.upsert(points()).unwrap();
    let query = [1.0, 0.0, 0.0, 0.0];
    let all = dense_search(store.as_ref(), query, 10, None);
    let best = all[0].id;
    let without = PayloadFilter::excluding(vec![best]);
    let hits = dense_search(store.as_ref(), query, 10, Some(&without));
    assert_eq!(hits.len(), all.len() - 1);
    assert!(hits.iter().all(|h| h.id != best), "{hits:?}");
    assert_eq!(hits[0].id, all[1].id, "the runner-up comes first");
    // With a source condition too, both hold.
    let source = all[1].payload.as_ref().unwrap().source.clone();
    let both = PayloadFilter {
        exclude_ids: vec![best],
        ..PayloadFilter::source(&source)
    };
    let hits = dense_search(store.as_ref(), query, 10, Some(&both));
    assert!(
        hits.iter()
            .all(|h| h.id != best && h.payload.as_ref().unwrap().source == source),
        "{hits:?}"
    );
    assert_eq!(store.count(Some(&without)).unwrap(), all.len() - 1);
}

fn readers_are_enforced_inside_both_rankings(b: &dyn Fixture) {
    let store = b.create("readers", DIM).unwrap();
    store.upsert(points()).unwrap();
    // A for the group rust, C for bo alone; D keeps no readers (written
    // before readers existed: everyone's).
    store.set_readers(A, &["group:rust".to_string()]).unwrap();
    store.set_readers(C, &["user:bo".to_string()]).unwrap();
    let tokens =
        |t: &[&str]| PayloadFilter::readable_by(Some(t.iter().map(|s| s.to_string()).collect()));
    let bo = tokens(&["public", "user:bo"]).unwrap();
    let rust = tokens(&["public", "user:ann", "group:rust"]).unwrap();
    let sources = |hits: &[grace::store::StoredHit]| -> Vec<String> {
        hits.iter()
            .map(|h| h.payload.as_ref().unwrap().source.clone())
            .collect()
    };
    // Dense: the query is nearest A, yet bo gets every point it may read.
    let hits = dense_search(store.as_ref(), [1.0, 0.0, 0.0, 0.0], 10, Some(&bo));
    assert_eq!(hits.len(), 3, "{hits:?}");
    assert!(sources(&hits).iter().all(|s| s != A), "{hits:?}");
    let hits = dense_search(store.as_ref(), [1.0, 0.0, 0.0, 0.0], 10, Some(&rust));
    assert_eq!(sources(&hits)[0], A);
    assert!(sources(&hits).iter().all(|s| s != C), "{hits:?}");
    // Lexical: the same.
    let q = LexicalEncoder::new()
        .unwrap()
        .encode_query("Rust borrow checker E0382 sourdough");
    let lexical = |filter: &PayloadFilter| {
        store
            .search(&StoreQuery {
                vector: QueryVector::Lexical(&q),
                limit: 10,
                filter: Some(filter),
                with_payload: true,
                with_dense: false,
                exact: false,
            })
            .unwrap()
    };
    let seen = sources(&lexical(&bo));
    assert!(
        seen.contains(&C.to_string()) && !seen.contains(&A.to_string()),
        "{seen:?}"
    );
    let seen = sources(&lexical(&rust));
    assert!(
        seen.contains(&A.to_string()) && !seen.contains(&C.to_string()),
        "{seen:?}"
    );
    assert_eq!(store.count(Some(&bo)).unwrap(), 3);
    assert_eq!(store.count(Some(&rust)).unwrap(), 3);
    // Readers read back as set, and a re-label opens a document at once.
    let a = store.retrieve(&[point_id(A, 0, "h")]).unwrap();
    assert_eq!(a[0].payload.readers, ["group:rust"]);
    store.set_readers(A, &["public".to_string()]).unwrap();
    assert_eq!(store.count(Some(&bo)).unwrap(), 5);
}

/// A rare word in documents a principal may not read changes nothing in
/// its lexical ranking: the statistics it is weighed by count only what
/// it may read (the embedded store: qdrant-edge's IDF corpus; a server:
/// the query re-weighted, `store/qdrant/idf.rs`). Scores equal those of a
/// collection that never held the restricted documents.
fn a_principals_lexical_statistics_count_only_what_it_may_read(b: &dyn Fixture) {
    let l = LexicalEncoder::new().unwrap();
    let with = b.create("statistics-with", DIM).unwrap();
    let without = b.create("statistics-without", DIM).unwrap();
    with.upsert(points()).unwrap();
    without.upsert(points()).unwrap();
    const R: &str = "/kb/restricted.md";
    let restricted: Vec<ChunkPoint> = (0..4)
        .map(|i| {
            point(
                &l,
                R,
                i,
                "sourdough starter sourdough project nightjar",
                [0.0, 0.5, 0.5, 0.0],
            )
        })
        .collect();
    with.upsert(restricted).unwrap();
    with.set_readers(R, &["user:cy".to_string()]).unwrap();
    let bo = PayloadFilter::readable_by(Some(vec!["public".into(), "user:bo".into()])).unwrap();
    let q = l.encode_query("sourdough starter bread");
    let search = |store: &dyn VectorStore, filter: Option<&PayloadFilter>| {
        let mut hits: Vec<(u64, f32)> = store
            .search(&StoreQuery {
                vector: QueryVector::Lexical(&q),
                limit: 10,
                filter,
                with_payload: false,
                with_dense: false,
                exact: false,
            })
            .unwrap()
            .into_iter()
            .map(|h| (h.id, h.score))
            .collect();
        hits.sort_by_key(|h| h.0);
        hits
    };
    let (seen, unseen) = (
        search(with.as_ref(), Some(&bo)),
        search(without.as_ref(), Some(&bo)),
    );
    assert_eq!(seen.len(), unseen.len(), "{seen:?} {unseen:?}");
    assert!(!seen.is_empty());
    for ((id, score), (id2, score2)) in seen.iter().zip(&unseen) {
        assert_eq!(id, id2);
        assert!((score - score2).abs() < 1e-4, "{seen:?} {unseen:?}");
    }
    // The restricted documents do move the whole collection's statistics:
    // unfiltered, the same public chunk scores otherwise.
    let open = search(with.as_ref(), None);
    let c0 = point_id(C, 1, "h");
    let score_of = |hits: &[(u64, f32)]| hits.iter().find(|h| h.0 == c0).map(|h| h.1);
    assert!(
        (score_of(&open).unwrap() - score_of(&unseen).unwrap()).abs() > 1e-3,
        "{open:?} {unseen:?}"
    );
}

fn delete_by_source(b: &dyn Fixture) {
    let store = b.create("delete", DIM).unwrap();
    store.upsert(points()).unwrap();
    store.delete_by_source(A).unwrap();
    assert_eq!(store.count(None).unwrap(), 3);
    assert_eq!(store.count(Some(&PayloadFilter::source(A))).unwrap(), 0);
    assert_eq!(store.count(Some(&PayloadFilter::source(C))).unwrap(), 2);
    let hits = dense_search(store.as_ref(), [1.0, 0.0, 0.0, 0.0], 10, None);
    assert!(hits.iter().all(|h| h.payload.as_ref().unwrap().source != A));
    // Deleting what is not there is no error.
    store.delete_by_source("/kb/never.md").unwrap();
    assert_eq!(store.count(None).unwrap(), 3);
}

fn count_with_and_without_filter(b: &dyn Fixture) {
    let store = b.create("count", DIM).unwrap();
    assert_eq!(store.count(None).unwrap(), 0);
    store.upsert(points()).unwrap();
    assert_eq!(store.count(None).unwrap(), 5);
    assert_eq!(store.count(Some(&PayloadFilter::source(A))).unwrap(), 2);
    assert_eq!(store.count(Some(&PayloadFilter::source(D))).unwrap(), 1);
    assert_eq!(
        store.count(Some(&PayloadFilter::source("/nope"))).unwrap(),
        0
    );
    assert_eq!(store.count(Some(&PayloadFilter::default())).unwrap(), 5);
}

fn info_reports_size_and_dimension(b: &dyn Fixture) {
    let store = b.create("info", DIM).unwrap();
    store.upsert(points()).unwrap();
    store.flush().unwrap();
    let info = store.info().unwrap();
    assert_eq!(info.points, 5);
    assert_eq!(info.dimension, DIM);
    assert!(info.segments >= 1, "{info:?}");
    store.optimize().unwrap();
    assert_eq!(store.info().unwrap().points, 5);
}

fn dimension_mismatch(b: &dyn Fixture) {
    {
        let store = b.create("dims", DIM).unwrap();
        store.upsert(points()).unwrap();
        // A vector of another size is refused.
        let mut wrong = points().remove(0);
        wrong.dense.push(0.0);
        match store.upsert(vec![wrong]) {
            Err(StoreError::DimensionMismatch {
                found, expected, ..
            }) => {
                assert_eq!((found, expected), (DIM, DIM + 1));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(store.count(None).unwrap(), 5);
    }
    // Opening it for another model's vectors is refused.
    match b.create("dims", DIM + 1) {
        Err(StoreError::DimensionMismatch {
            found, expected, ..
        }) => {
            assert_eq!((found, expected), (DIM, DIM + 1));
        }
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("opened a {DIM}-d collection for {}-d vectors", DIM + 1),
    }
}

fn missing_collection_is_not_found(b: &dyn Fixture) {
    let err = b
        .existing("never_created")
        .err()
        .expect("a missing collection opened");
    assert!(b.is_not_found(&err), "{err:?}");
    let message = err.to_string();
    assert!(message.contains("never_created"), "{message}");
    assert!(message.contains("grace ingest"), "{message}");
}

fn scroll_covers_all_points(b: &dyn Fixture) {
    let store = b.create("scroll", DIM).unwrap();
    let l = LexicalEncoder::new().unwrap();
    let many: Vec<ChunkPoint> = (0..600)
        .map(|i| {
            let source = format!("/kb/doc{}.md", i % 7);
            point(
                &l,
                &source,
                i,
                &format!("chunk number {i} of the corpus"),
                [1.0, i as f32, 0.5, 0.25],
            )
        })
        .collect();
    store.upsert(many.clone()).unwrap();
    let got = common::read_all(store.as_ref(), 64);
    assert_eq!(got.len(), 600);
    assert!(
        got.windows(2).all(|w| w[0].id < w[1].id),
        "pages are in id order, no repeats"
    );
    let mut want = many;
    want.sort_by_key(|p| p.id);
    for (g, w) in got.iter().zip(&want) {
        assert_same_point(g, w);
    }
    // A page starts at its offset, inclusive.
    let from = got[100].id;
    let page = store.scroll(Some(from), 3).unwrap();
    assert_eq!(
        page.points.iter().map(|p| p.id).collect::<Vec<_>>(),
        vec![got[100].id, got[101].id, got[102].id]
    );
    assert_eq!(page.next, Some(got[103].id));
}

/// Every suite test, once per backend.
macro_rules! store_suite {
    ($($test:ident),* $(,)?) => {
        mod edge_backend {
            $(#[test] fn $test() { super::$test(&super::Edge::new()) })*
        }
        mod qdrant_backend {
            $(#[test] fn $test() {
                if super::Server::available() {
                    super::$test(&super::Server::new())
                }
            })*
        }
    };
}

store_suite!(
    upsert_and_read_back,
    retrieve_reads_the_asked_points,
    reupsert_is_idempotent,
    dense_search_ranks_by_cosine,
    lexical_search_ranks_by_bm25,
    equal_scores_rank_by_id,
    filter_by_source,
    excluded_points_are_never_hits,
    readers_are_enforced_inside_both_rankings,
    a_principals_lexical_statistics_count_only_what_it_may_read,
    delete_by_source,
    count_with_and_without_filter,
    info_reports_size_and_dimension,
    dimension_mismatch,
    missing_collection_is_not_found,
    scroll_covers_all_points,
);

// ---------------------------------------------------------------- Qdrant only

#[test]
fn qdrant_reports_its_version_and_indexes_source_for_filters() {
    if !support::qdrant_server::available() {
        return;
    }
    let server = QdrantCluster::single();
    let store = server_config(&server.url(), "health")
        .open_or_create(DIM)
        .unwrap();
    // The server's own version: a tested one says so; another one GRACE
    // accepts (a release a user supplies) is only untested.
    let reported = std::process::Command::new(support::qdrant_server::binary())
        .arg("--version")
        .output()
        .unwrap();
    let reported = String::from_utf8_lossy(&reported.stdout);
    let version = store.server_version();
    assert!(
        !version.is_empty() && reported.contains(version),
        "{version} vs {reported}"
    );
    let tested = grace::store::qdrant::TESTED_VERSIONS
        .iter()
        .any(|(major, minor)| version.starts_with(&format!("{major}.{minor}.")));
    assert_eq!(store.version_tested(), tested, "{version}");
    store.upsert(points()).unwrap();
    // The keyword index on `source` exists and covers every point, so the
    // source filters below (and delete by source) are index lookups.
    let (status, info) = server.rest(0, "GET", "/collections/health", None);
    assert_eq!(status, 200, "{info}");
    let index = &info["result"]["payload_schema"]["source"];
    assert_eq!(index["data_type"], "keyword", "{info}");
    assert_eq!(index["points"], 5, "{info}");
    let params = &info["result"]["config"]["params"];
    assert_eq!(params["vectors"]["dense"]["distance"], "Cosine", "{params}");
    assert_eq!(
        params["sparse_vectors"]["lexical"]["modifier"], "idf",
        "{params}"
    );
    let hits = dense_search(
        &store,
        [1.0, 0.0, 0.0, 0.0],
        10,
        Some(&PayloadFilter::source(A)),
    );
    assert_eq!(hits.len(), 2);
    assert!(hits.iter().all(|h| h.payload.as_ref().unwrap().source == A));
    store.delete_by_source(A).unwrap();
    assert_eq!(store.count(None).unwrap(), 3);
    // Opening it again creates nothing and checks it.
    drop(store);
    let again = server_config(&server.url(), "health")
        .open_or_create(DIM)
        .unwrap();
    assert_eq!(again.count(None).unwrap(), 3);
}

/// A collection written before GRACE kept term ids gets them when it is
/// opened, so a principal's lexical statistics count its points too; and a
/// search's payload never carries them.
#[test]
fn qdrant_points_without_term_ids_get_them_at_open() {
    if !support::qdrant_server::available() {
        return;
    }
    let server = QdrantCluster::single();
    let config = server_config(&server.url(), "terms");
    let store = config.open_or_create(DIM).unwrap();
    store.upsert(points()).unwrap();
    let (status, body) = server.rest(
        0,
        "POST",
        "/collections/terms/points/payload/delete?wait=true",
        Some(&serde_json::json!({"keys": ["terms"], "filter": {"must": []}})),
    );
    assert_eq!(status, 200, "{body}");
    let missing =
        serde_json::json!({"filter": {"must": [{"is_empty": {"key": "terms"}}]}, "exact": true});
    let (_, counted) = server.rest(0, "POST", "/collections/terms/points/count", Some(&missing));
    assert_eq!(counted["result"]["count"], 5, "{counted}");
    drop(store);
    let store = config.open_or_create(DIM).unwrap();
    let (_, counted) = server.rest(0, "POST", "/collections/terms/points/count", Some(&missing));
    assert_eq!(counted["result"]["count"], 0, "{counted}");
    let (_, info) = server.rest(0, "GET", "/collections/terms", None);
    assert_eq!(
        info["result"]["payload_schema"]["terms"]["data_type"], "integer",
        "{info}"
    );
    let hits = lexical_search(&store, "sourdough", 3);
    assert!(!hits.is_empty());
    let got = store.retrieve(&[hits[0].id]).unwrap();
    assert_eq!(got.len(), 1);
}

#[test]
fn qdrant_collection_with_other_parameters_is_a_clear_error() {
    if !support::qdrant_server::available() {
        return;
    }
    let server = QdrantCluster::single();
    // Made by another program: Euclidean distance, no IDF modifier.
    let (status, body) = server.rest(
        0,
        "PUT",
        "/collections/foreign",
        Some(&json!({
            "vectors": {"dense": {"size": DIM, "distance": "Euclid"}},
            "sparse_vectors": {"lexical": {}},
        })),
    );
    assert_eq!(status, 200, "{body}");
    for open in [
        server_config(&server.url(), "foreign").open_or_create(DIM),
        server_config(&server.url(), "foreign").open_existing(),
    ] {
        match open {
            Err(e @ StoreError::ParametersDiffer { .. }) => {
                let m = e.to_string();
                assert!(m.contains("collections/foreign"), "{m}");
                assert!(m.contains("Euclid") && m.contains("Cosine"), "{m}");
                assert!(m.contains("IDF modifier"), "{m}");
                assert_eq!(grace::Error::from(e).exit_code(), grace::EXIT_BAD_INPUT);
            }
            other => panic!("{other:?}"),
        }
    }
    // GRACE's own collection, opened with another layout than it has.
    let mut config = server_config(&server.url(), "layout");
    config.collection.shard_number = 2;
    config.collection.replication_factor = 1;
    drop(config.open_or_create(DIM).unwrap());
    let (_, info) = server.rest(0, "GET", "/collections/layout", None);
    assert_eq!(info["result"]["config"]["params"]["shard_number"], 2);
    config.collection.shard_number = 3;
    match config.open_or_create(DIM) {
        Err(e @ StoreError::ParametersDiffer { .. }) => {
            let m = e.to_string();
            assert!(
                m.contains("collection.shard_number is 3 but the collection has 2"),
                "{m}"
            );
        }
        other => panic!("{other:?}"),
    }
    // 0 accepts what the collection has.
    config.collection.shard_number = 0;
    assert!(config.open_or_create(DIM).is_ok());
}

#[test]
fn qdrant_lexical_ranking_equals_the_embedded_store_within_ties() {
    if !support::qdrant_server::available() {
        return;
    }
    // The IDF modifier is computed by the server over the collection: the
    // same points must rank the same, with the same BM25 scores.
    let server = QdrantCluster::single();
    let remote = server_config(&server.url(), "idf")
        .open_or_create(DIM)
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let local = EdgeStore::open_or_create(
        &dir.path().join("idf"),
        DIM,
        &grace::config::StorageConfig::default(),
    )
    .unwrap();
    let l = LexicalEncoder::new().unwrap();
    let words = [
        "deploy", "rollback", "kernel", "package", "mirror", "upgrade", "network", "printer",
        "sound", "install", "release", "security", "archive", "keyring", "boot",
    ];
    // 300 chunks of varied term frequencies and document lengths.
    let many: Vec<ChunkPoint> = (0..300usize)
        .map(|i| {
            let text: Vec<&str> = (0..(3 + i % 11))
                .map(|j| words[(i * 7 + j * j * 3 + j) % words.len()])
                .collect();
            point(
                &l,
                &format!("/kb/doc{}.md", i % 13),
                i,
                &text.join(" "),
                [1.0, (i % 5) as f32, 0.5, (i % 3) as f32],
            )
        })
        .collect();
    remote.upsert(many.clone()).unwrap();
    local.upsert(many).unwrap();
    local.flush().unwrap();
    for q in [
        "kernel upgrade",
        "rollback deploy release",
        "printer",
        "security keyring archive mirror",
        "boot sound network",
    ] {
        let (a, b) = (
            lexical_search(&local, q, 25),
            lexical_search(&remote, q, 25),
        );
        assert!(!a.is_empty(), "{q}");
        assert_same_ranking_within_ties(&a, &b, q);
    }
}

/// Two rankings agree when their scores agree rank by rank (to 1e-5,
/// relative) and every id sits among the other side's ids of the same
/// score: equal scores may differ in their last bits between engines and
/// so order differently. The last tie group may be cut at another member
/// by the limit, so only its scores are compared.
fn assert_same_ranking_within_ties(
    a: &[grace::store::StoredHit],
    b: &[grace::store::StoredHit],
    what: &str,
) {
    let same = |x: f32, y: f32| (x - y).abs() <= 1e-5 * x.abs().max(1.0);
    assert_eq!(a.len(), b.len(), "{what}");
    let last = a.last().map_or(0.0, |h| h.score);
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!(
            same(x.score, y.score),
            "{what}: rank {i}: {} vs {}",
            x.score,
            y.score
        );
        if same(x.score, last) {
            continue;
        }
        let tied = |side: &[grace::store::StoredHit], id: u64| {
            side.iter().any(|h| h.id == id && same(h.score, x.score))
        };
        assert!(
            tied(b, x.id) && tied(a, y.id),
            "{what}: rank {i}: ids {} vs {}",
            x.id,
            y.id
        );
    }
}

#[test]
fn qdrant_incompatible_server_version_is_refused_and_untested_is_accepted() {
    for (version, accepted) in [
        ("1.15.2", false),
        ("1.22.0", false),
        ("2.16.3", false),
        ("1.16", false),
        ("1.19.0", true),
        ("1.21.1", true),
    ] {
        let fake = FakeVersion::start(version);
        let opened = server_config(fake.url(), "v").open_or_create(DIM);
        match (opened, accepted) {
            (Err(e @ StoreError::Incompatible { .. }), false) => {
                let m = e.to_string();
                assert!(m.contains(fake.url()) && m.contains(version), "{m}");
                assert!(m.contains("1.16 to 1.21"), "{m}");
            }
            // Accepted (with a warning): the next call, which this endpoint
            // does not serve, is what fails.
            (Err(e), true) => assert!(
                !matches!(e, StoreError::Incompatible { .. }),
                "{version}: {e}"
            ),
            (other, _) => panic!("{version}: {other:?}"),
        }
    }
    // The CLI shows the warning for an accepted but untested version.
    let fake = FakeVersion::start("1.20.2");
    let work = tempfile::tempdir().unwrap();
    let out = common::grace_cmd(work.path(), &["status"])
        .env("GRACE_STORAGE__BACKEND", "qdrant")
        .env("GRACE_QDRANT__URL", fake.url())
        .output()
        .unwrap();
    let text = common::output_text(&out);
    assert!(
        text.contains("has not been tested with grace") && text.contains("1.20.2"),
        "{text}"
    );
}

#[test]
fn qdrant_api_key_is_sent_and_a_wrong_one_is_reported() {
    if !support::qdrant_server::available() {
        return;
    }
    let server = QdrantCluster::start(Options {
        api_key: Some("right-key-0123456789".into()),
        ..Default::default()
    });
    let mut config = server_config(&server.url(), "secured");
    for key in ["", "wrong-key"] {
        config.server.api_key = key.into();
        match config.open_or_create(DIM) {
            Err(e @ StoreError::Unauthorized { .. }) => {
                let m = e.to_string();
                assert!(
                    m.contains(&server.url()) && m.contains("qdrant.api_key"),
                    "{m}"
                );
            }
            other => panic!("{key:?}: {other:?}"),
        }
    }
    config.server.api_key = "right-key-0123456789".into();
    let store = config.open_or_create(DIM).unwrap();
    store.upsert(points()).unwrap();
    assert_eq!(store.count(None).unwrap(), 5);
}

#[test]
fn qdrant_tls_and_port_mistakes_are_clear_errors() {
    if !support::qdrant_server::available() {
        return;
    }
    let server = QdrantCluster::single();
    let grpc = server.url();
    // TLS asked of a server that speaks plain gRPC.
    let tls = grpc.replace("http://", "https://");
    let m = server_config(&tls, "c")
        .open_or_create(DIM)
        .unwrap_err()
        .to_string();
    assert!(m.contains(&tls), "{m}");
    assert!(m.contains("TLS") || m.contains("tls"), "{m}");
    // The REST port instead of the gRPC one.
    let rest = format!("http://127.0.0.1:{}", server.http_port(0));
    let m = server_config(&rest, "c")
        .open_or_create(DIM)
        .unwrap_err()
        .to_string();
    assert!(m.contains(&rest), "{m}");
    assert!(m.contains("gRPC port"), "{m}");
}

#[test]
fn a_stray_qdrant_left_by_a_dead_owner_is_stopped_by_the_next_start() {
    if !support::qdrant_server::available() {
        return;
    }
    // scripts/qdrant and the test fixture share one registry of running
    // nodes: a node whose owner died is a stray, stopped by the next start.
    let running = |pid: u64| {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            !s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
    };
    let dir = tempfile::tempdir().unwrap();
    let mut owner = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .unwrap();
    let out = std::process::Command::new("bash")
        .arg(common::repo().join("scripts/qdrant"))
        .args([
            "start",
            "--json",
            "--owner",
            &owner.id().to_string(),
            "--dir",
        ])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", common::output_text(&out));
    let started: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let pid = started["nodes"][0]["pid"].as_u64().unwrap();
    assert!(running(pid));
    owner.kill().unwrap();
    owner.wait().unwrap();
    assert!(running(pid), "a stray lives on until someone looks");
    let _next = QdrantCluster::single();
    let gone = std::time::Instant::now();
    while running(pid) && gone.elapsed().as_secs() < 5 {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(!running(pid), "the stray {pid} was not stopped");
}

#[test]
fn qdrant_unreachable_server_names_the_url() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config = Target {
        server: QdrantConfig {
            url: format!("http://127.0.0.1:{port}"),
            timeout_seconds: 2.0,
            ..QdrantConfig::default()
        },
        collection: CollectionConfig::default(),
    };
    let started = std::time::Instant::now();
    match config.open_existing() {
        Err(e @ StoreError::Unavailable { .. }) => {
            assert!(e.is_transient());
            let m = e.to_string();
            assert!(m.contains(&config.server.url) && m.contains("6334"), "{m}");
        }
        other => panic!("{other:?}"),
    }
    assert!(started.elapsed().as_secs() < 10);
}

#[tokio::test(flavor = "multi_thread")]
async fn qdrant_store_serves_spawn_blocking_and_plain_threads() {
    if !support::qdrant_server::available() {
        return;
    }
    let server = QdrantCluster::single();
    let config = server_config(&server.url(), "threads");
    let store: Arc<dyn VectorStore> = Arc::new(
        tokio::task::spawn_blocking(move || config.open_or_create(DIM))
            .await
            .unwrap()
            .unwrap(),
    );
    let s = store.clone();
    tokio::task::spawn_blocking(move || s.upsert(points()))
        .await
        .unwrap()
        .unwrap();
    let mut tasks = Vec::new();
    for _ in 0..4 {
        let s = store.clone();
        tasks.push(tokio::task::spawn_blocking(move || {
            s.count(Some(&PayloadFilter::source(A)))
        }));
    }
    for t in tasks {
        assert_eq!(t.await.unwrap().unwrap(), 2);
    }
    let s = store.clone();
    let from_thread = std::thread::spawn(move || s.count(None)).join().unwrap();
    assert_eq!(from_thread.unwrap(), 5);
    // Dropped on an async worker: must not block or panic.
    drop(store);
}

#[tokio::test]
async fn qdrant_store_called_inside_a_current_thread_runtime_does_not_panic() {
    if !support::qdrant_server::available() {
        return;
    }
    // A synchronous call on an async thread blocks it (callers should use
    // spawn_blocking), but it must not try to start a runtime inside one.
    let server = QdrantCluster::single();
    let store = server_config(&server.url(), "inside")
        .open_or_create(DIM)
        .unwrap();
    store.upsert(points()).unwrap();
    assert_eq!(store.count(None).unwrap(), 5);
    drop(store);
}

// ---------------------------------------------------------------- knowledge base level

fn qdrant_kb_config(data: &Path, url: &str) -> Config {
    let mut c = common::config(data);
    c.storage.backend = Backend::Qdrant;
    c.qdrant.url = url.to_string();
    c
}

/// Every point id in the store, by scrolling it.
fn stored_ids(store: &dyn VectorStore) -> Vec<u64> {
    common::read_all(store, 256)
        .into_iter()
        .map(|p| p.id)
        .collect()
}

#[test]
fn qdrant_server_lost_mid_ingest_then_back_loses_and_duplicates_nothing() {
    if !support::qdrant_server::available() {
        return;
    }
    let corpus = common::eval_sets().join("debian-faq/corpus");
    let options = grace::ingest::IngestOptions::default();
    // What the corpus makes, in the embedded store.
    let edge_dir = tempfile::tempdir().unwrap();
    let edge = KnowledgeBase::with_embedder(
        common::config(edge_dir.path()),
        common::embedder(),
        OpenMode::Create,
    )
    .unwrap();
    let want = edge
        .ingest(std::slice::from_ref(&corpus), &options, &mut |_| {})
        .unwrap();
    let want_ids = stored_ids(edge.store());

    let mut server = QdrantCluster::single();
    let data = tempfile::tempdir().unwrap();
    let mut config = qdrant_kb_config(data.path(), &server.url());
    config.ingest.commit_chunks = 16;
    config.ingest.store_retries = 1;
    config.ingest.store_retry_seconds = 0.2;
    config.qdrant.timeout_seconds = 2.0;
    let kb =
        KnowledgeBase::with_embedder(config.clone(), common::embedder(), OpenMode::Create).unwrap();
    // The server is killed (SIGKILL) once the first files are committed.
    let (mut files, mut retries) = (0, 0);
    let lost = kb.ingest(std::slice::from_ref(&corpus), &options, &mut |e| match e {
        IngestEvent::File { .. } => {
            files += 1;
            if files == 3 {
                server.kill(0);
            }
        }
        IngestEvent::StoreRetry { .. } => retries += 1,
        _ => {}
    });
    let err = lost.expect_err("the ingest went on without its server");
    let m = err.to_string();
    assert!(m.contains(&server.url()), "{m}");
    assert_eq!(
        retries, 1,
        "ingest.store_retries 1: one retry, then it stops"
    );
    assert!(
        files >= 3 && files < want.added,
        "{files} of {}",
        want.added
    );

    // The server comes back with what it had applied; the re-run writes
    // the rest, and the pending files again.
    server.restart(0);
    let report = kb
        .ingest(std::slice::from_ref(&corpus), &options, &mut |_| {})
        .unwrap();
    assert_eq!(report.points_total, want.points_total, "{report:?}");
    assert!(
        report.unchanged >= 3,
        "committed files are not written again: {report:?}"
    );
    let ids = stored_ids(kb.store());
    assert_eq!(
        ids, want_ids,
        "the same points as the embedded store, each once"
    );
    assert_eq!(ids, common::manifest_ids(&config));
    assert_eq!(kb.store().count(None).unwrap(), want.points_total);

    // A server that comes back while the ingest waits to retry: the
    // ingest rides through, says so, and loses nothing.
    let data = tempfile::tempdir().unwrap();
    let mut config = qdrant_kb_config(data.path(), &server.url());
    config.collection.name = "ride_through".into();
    config.ingest.commit_chunks = 16;
    config.ingest.store_retries = 5;
    config.ingest.store_retry_seconds = 0.5;
    config.qdrant.timeout_seconds = 2.0;
    let kb =
        KnowledgeBase::with_embedder(config.clone(), common::embedder(), OpenMode::Create).unwrap();
    let mut files = 0;
    let report = kb
        .ingest(std::slice::from_ref(&corpus), &options, &mut |e| match e {
            IngestEvent::File { .. } => {
                files += 1;
                if files == 3 {
                    server.kill(0);
                }
            }
            IngestEvent::StoreRetry { attempt: 1, .. } => server.restart(0),
            _ => {}
        })
        .unwrap();
    assert!(report.store_retries >= 1, "{report:?}");
    assert_eq!(report.added, want.added, "{report:?}");
    assert_eq!(report.points_total, want.points_total, "{report:?}");
    assert_eq!(stored_ids(kb.store()), want_ids);
    assert_eq!(stored_ids(kb.store()), common::manifest_ids(&config));
}

const QUERIES: &[&str] = &[
    "How do I rotate the keys?",
    "What does error ORB-2001 mean?",
    "how to roll back a deployment",
    "--previous",
    "install the command line tool",
];

/// One search result, comparable: id, source, dense and lexical rank, and
/// the cosine and BM25 scores rounded to 4 decimals.
type Row = (u64, String, Option<usize>, Option<usize>, i64, Option<i64>);

/// Search results as comparable rows (the two backends must agree).
fn rows(kb: &KnowledgeBase, query: &str) -> Vec<Row> {
    kb.search(query, Some(5), None)
        .unwrap()
        .into_iter()
        .map(|p| {
            (
                p.id,
                p.source,
                p.dense_rank,
                p.lexical_rank,
                (p.score * 1e4).round() as i64,
                p.lexical_score.map(|s| (s * 1e4).round() as i64),
            )
        })
        .collect()
}

#[test]
fn knowledge_base_on_qdrant_answers_like_the_embedded_one() {
    if !support::qdrant_server::available() {
        return;
    }
    let edge_dir = tempfile::tempdir().unwrap();
    let edge = common::open_sample(edge_dir.path());

    let server = QdrantCluster::single();
    let data = tempfile::tempdir().unwrap();
    let kb = KnowledgeBase::with_embedder(
        qdrant_kb_config(data.path(), &server.url()),
        common::embedder(),
        OpenMode::Create,
    )
    .unwrap();
    let report = common::ingest_sample(&kb);
    assert!(report.chunks_written > 0);
    for q in QUERIES {
        let (a, b) = (rows(&edge, q), rows(&kb, q));
        assert!(!a.is_empty(), "{q}");
        assert_eq!(a, b, "{q}");
    }
    // Source filter through the whole stack.
    let source = kb.search("deployment", Some(1), None).unwrap()[0]
        .source
        .clone();
    let f = PayloadFilter::source(&source);
    let hits = kb.search("deployment", Some(10), Some(&f)).unwrap();
    assert!(hits.iter().all(|p| p.source == source));
    assert_eq!(rows(&edge, "deployment"), rows(&kb, "deployment"));

    let (se, sq) = (edge.status().unwrap(), kb.status().unwrap());
    assert_eq!(sq.backend, "qdrant");
    assert_eq!(
        sq.path,
        Path::new(&format!("{}/collections/grace", server.url()))
    );
    assert_eq!(sq.store.points, se.store.points);
    assert_eq!(sq.sources, se.sources);
    assert_eq!(sq.store.dimension, se.store.dimension);
    // The manifest is the server's own, beside the embedded one's.
    assert_ne!(kb.config().manifest_path(), edge.config().manifest_path());
    assert!(kb.config().manifest_path().is_file());

    // Re-ingesting changes nothing: the manifest matches the server.
    let again = common::ingest_sample(&kb);
    assert_eq!(again.chunks_written, 0);
    assert_eq!(again.unchanged, report.added);

    // A search-only open needs the collection to exist.
    let mut missing = qdrant_kb_config(data.path(), &server.url());
    missing.collection.name = "absent".into();
    let err = KnowledgeBase::with_embedder(missing, common::embedder(), OpenMode::Existing)
        .err()
        .expect("opened a missing collection");
    assert_eq!(err.exit_code(), grace::EXIT_NOT_FOUND, "{err}");
}

#[test]
fn migrate_to_the_server_and_back_loses_nothing() {
    if !support::qdrant_server::available() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let data = work.path().join("data");
    let edge_points = {
        let kb = common::open_sample(&data);
        kb.status().unwrap().store.points
    };
    let server = QdrantCluster::single();
    let url = server.url();
    let data_arg = data.to_string_lossy().to_string();
    let migrate_in = |data: &str, to: &str, extra: &[&str]| {
        let mut args = vec![
            "--data-dir",
            data,
            "migrate",
            "--to",
            to,
            "--url",
            url.as_str(),
        ];
        args.extend_from_slice(extra);
        common::grace(work.path(), &args)
    };
    let migrate = |to: &str, extra: &[&str]| migrate_in(&data_arg, to, extra);
    let out = migrate("qdrant", &[]);
    let text = common::output_text(&out);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains(&format!("Copied {edge_points} chunks")),
        "{text}"
    );
    assert!(text.contains("Manifest copied"), "{text}");

    // A second copy into a collection that holds points is refused...
    let out = migrate("qdrant", &[]);
    assert_eq!(out.status.code(), Some(2), "{}", common::output_text(&out));
    assert!(common::output_text(&out).contains("--replace"));
    // ... unless asked to replace it.
    let out = migrate("qdrant", &["--replace", "--json"]);
    assert!(out.status.success(), "{}", common::output_text(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["points"], edge_points);
    assert_eq!(report["replaced"], true);
    assert_eq!(report["to_backend"], "qdrant");

    // The server answers exactly like the embedded store and holds the
    // same points: ids, vectors and payloads.
    let edge_config = common::config(&data);
    let server_config = qdrant_kb_config(&data, &url);
    {
        let edge = KnowledgeBase::with_embedder(
            edge_config.clone(),
            common::embedder(),
            OpenMode::Existing,
        )
        .unwrap();
        let on_server = KnowledgeBase::with_embedder(
            server_config.clone(),
            common::embedder(),
            OpenMode::Existing,
        )
        .unwrap();
        for q in QUERIES {
            assert_eq!(rows(&edge, q), rows(&on_server, q), "{q}");
        }
        let (a, b) = (
            common::read_all(edge.store(), 100),
            common::read_all(on_server.store(), 100),
        );
        assert_eq!(a.len(), edge_points);
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(&b) {
            assert_same_point(x, y);
        }
        // The copied manifest tells ingest that nothing needs writing.
        let report = common::ingest_sample(&on_server);
        assert_eq!(report.chunks_written, 0, "{report:?}");
        assert_eq!(report.added + report.updated, 0, "{report:?}");
    }

    // And back, into a fresh data folder's embedded store.
    let back = work.path().join("back");
    let back_arg = back.to_string_lossy().to_string();
    std::fs::create_dir_all(&back).unwrap();
    // The server's manifest (kept in the data folder that wrote to it)
    // comes along, so it is copied back too.
    let back_server = qdrant_kb_config(&back, &url).manifest_path();
    std::fs::create_dir_all(back_server.parent().unwrap()).unwrap();
    std::fs::copy(server_config.manifest_path(), &back_server).unwrap();
    let out = migrate_in(&back_arg, "edge", &["--json"]);
    assert!(out.status.success(), "{}", common::output_text(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["points"], edge_points);
    assert_eq!(report["from_backend"], "qdrant");
    assert_eq!(report["to_backend"], "edge");
    let returned = KnowledgeBase::with_embedder(
        common::config(&back),
        common::embedder(),
        OpenMode::Existing,
    )
    .unwrap();
    let original =
        KnowledgeBase::with_embedder(edge_config, common::embedder(), OpenMode::Existing).unwrap();
    let (a, b) = (
        common::read_all(original.store(), 100),
        common::read_all(returned.store(), 100),
    );
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(&b) {
        assert_same_point(x, y);
    }
    for q in QUERIES {
        assert_eq!(rows(&original, q), rows(&returned, q), "{q}");
    }
    assert_eq!(
        common::manifest_ids(&common::config(&back)),
        common::manifest_ids(&common::config(&data))
    );
    drop(returned);
    drop(original);

    // `grace status` on the server, configured through the environment.
    let out = common::grace_cmd(work.path(), &["--data-dir", data_arg.as_str(), "status"])
        .env("GRACE_STORAGE__BACKEND", "qdrant")
        .env("GRACE_QDRANT__URL", &url)
        .output()
        .unwrap();
    let text = common::output_text(&out);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("qdrant backend"), "{text}");
    assert!(
        text.contains(&format!("chunks       {edge_points} in")),
        "{text}"
    );
}

#[test]
fn migrate_without_a_source_collection_is_not_found() {
    if !support::qdrant_server::available() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let server = QdrantCluster::single();
    let url = server.url();
    for to in ["qdrant", "edge"] {
        let out = common::grace(
            work.path(),
            &[
                "--data-dir",
                "empty",
                "migrate",
                "--to",
                to,
                "--url",
                url.as_str(),
            ],
        );
        assert_eq!(out.status.code(), Some(3), "{}", common::output_text(&out));
    }
    let (_, list) = server.rest(0, "GET", "/collections", None);
    assert_eq!(
        list["result"]["collections"],
        json!([]),
        "nothing was created"
    );
    assert!(!work.path().join("empty/collections").exists());
}

#[test]
fn config_output_masks_the_qdrant_api_key() {
    let work = tempfile::tempdir().unwrap();
    let out = common::grace_cmd(work.path(), &["config"])
        .env("GRACE_QDRANT__API_KEY", "very-secret-key-42")
        .output()
        .unwrap();
    let text = common::output_text(&out);
    assert!(out.status.success(), "{text}");
    assert!(!text.contains("very-secret-key-42"), "{text}");
    assert!(text.contains("api_key: <set>"), "{text}");
}

#[test]
fn cluster_settings_are_validated_by_key() {
    let work = tempfile::tempdir().unwrap();
    for (var, value, key) in [
        (
            "GRACE_COLLECTION__SHARD_NUMBER",
            "5000",
            "collection.shard_number",
        ),
        (
            "GRACE_COLLECTION__WRITE_CONSISTENCY_FACTOR",
            "3",
            "collection.write_consistency_factor",
        ),
        ("GRACE_INGEST__STORE_RETRIES", "99", "ingest.store_retries"),
    ] {
        let out = common::grace_cmd(work.path(), &["config"])
            .env(var, value)
            .output()
            .unwrap();
        let text = common::output_text(&out);
        assert_eq!(out.status.code(), Some(2), "{var}: {text}");
        assert!(text.contains(key), "{var}: {text}");
    }
    let out = common::grace_cmd(work.path(), &["config"])
        .env("GRACE_COLLECTION__REPLICATION_FACTOR", "2")
        .env("GRACE_COLLECTION__WRITE_CONSISTENCY_FACTOR", "2")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", common::output_text(&out));
}
