//! The embedded store's index settings (`storage.quantization`,
//! `storage.oversampling`, `storage.hnsw_*`, `storage.*_on_disk`,
//! `storage.segment_points`) on the real store with the real model: what a
//! quantised search returns, what a reopened store keeps, and that writing
//! indexes as it goes.

use crate::support::common;

use grace::config::{Quantization, StorageConfig};
use grace::store::edge::{EdgeStore, IndexSettings};
use grace::store::{ChunkPayload, ChunkPoint, PayloadFilter, QueryVector, StoreQuery, VectorStore};
use grace::{KnowledgeBase, OpenMode};

/// Questions about the bundled sample (`examples/kb`).
const QUESTIONS: &[&str] = &[
    "How do I roll back a bad deploy?",
    "Who is on call this week and how do I page them?",
    "Where is the configuration file read from?",
    "How do I get started with the service?",
    "What should I do when the database connection fails?",
    "How are secrets stored?",
    "Which port does the server listen on by default?",
    "How do I restart a stuck worker?",
];

/// Points in the store besides the sample's: enough that its segment is
/// indexed and quantised (the engine leaves segments under ~10 MB of
/// vectors, ~6,700 points, as a plain list scored in full, where
/// quantisation never runs).
const FILLER: usize = 8_000;

/// `n` distinct passages cut from the sample's own text: windows of 4 to
/// 40 words at every word of every chunk, so the filler is about what the
/// sample is about (a knowledge base of one subject, as a real one is).
fn windows(chunks: &[ChunkPoint], n: usize) -> Vec<String> {
    // The text as GRACE embeds it: without the marks kept for answers.
    let texts: Vec<String> = chunks
        .iter()
        .map(|c| grace::text::blocks::unmarked(&c.payload.text))
        .collect();
    let words: Vec<Vec<&str>> = texts
        .iter()
        .map(|t| t.split_whitespace().collect())
        .collect();
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::with_capacity(n);
    'all: for len in 4..=40 {
        for chunk in &words {
            for start in 0..chunk.len().saturating_sub(len) {
                if out.len() == n {
                    break 'all;
                }
                let text = chunk[start..start + len].join(" ");
                if seen.insert(text.clone()) {
                    out.push(text);
                }
            }
        }
    }
    assert_eq!(out.len(), n, "the sample is too short for {n} windows");
    out
}

/// The sample's real points (ingested with the real model), then `filler`
/// more: [`windows`] of its text embedded by the same model, each under
/// its own id and source.
fn sample_and_filler(dir: &std::path::Path, filler: usize) -> Vec<ChunkPoint> {
    // The sample's text documents only: the figures the book gives for the
    // quantisations were measured on them, before the sample had a PDF, a
    // Word file and a man page.
    let mut config = common::config(&dir.join("sample"));
    config.ingest.include = ["**/*.md", "**/*.rst", "**/*.html", "**/*.txt"]
        .map(String::from)
        .to_vec();
    let kb = common::open(config);
    common::ingest_sample(&kb);
    let mut points = common::read_all(kb.store(), 256);
    assert!(points.len() > 5, "the sample has {} chunks", points.len());
    let template = points[0].clone();
    let texts = windows(&points, filler);
    let vectors = common::embedder().embed(&texts).unwrap();
    for (i, (text, dense)) in texts.into_iter().zip(vectors).enumerate() {
        let source = format!("filler/{i}.md");
        points.push(ChunkPoint {
            id: grace::store::point_id(&source, 0, "filler"),
            dense,
            lexical: kb.lexical().encode_document(&text),
            payload: ChunkPayload {
                source,
                text,
                ..template.payload.clone()
            },
        });
    }
    points
}

/// [`sample_and_filler`] with [`FILLER`] points, made once for the tests
/// that share it (embedding the filler is most of their time).
fn sample_and_full_filler() -> Vec<ChunkPoint> {
    static POINTS: std::sync::OnceLock<Vec<ChunkPoint>> = std::sync::OnceLock::new();
    POINTS
        .get_or_init(|| {
            let dir = tempfile::tempdir().unwrap();
            sample_and_filler(dir.path(), FILLER)
        })
        .clone()
}

/// `quantization` with the graph walked wide (`hnsw_ef` 512 of ~8,000
/// points): what is measured is the quantisation and its rescoring, not
/// the graph's approximation (the bench measures that, as recall@10).
/// Binary vectors are given the oversampling the book advises for them (8).
fn settings(quantization: Quantization) -> StorageConfig {
    let defaults = StorageConfig::default();
    StorageConfig {
        quantization,
        hnsw_ef: 512,
        oversampling: match quantization {
            Quantization::Binary => 8.0,
            _ => defaults.oversampling,
        },
        ..defaults
    }
}

fn top5(store: &EdgeStore, vector: &[f32], exact: bool) -> Vec<u64> {
    store
        .search(&StoreQuery {
            vector: QueryVector::Dense(vector),
            limit: 5,
            filter: None,
            with_payload: false,
            with_dense: false,
            exact,
        })
        .unwrap()
        .iter()
        .map(|h| h.id)
        .collect()
}

/// The default quantised index (int8) returns exactly the top 5 an exact
/// search (every point scored with the full vectors) returns; binary keeps
/// the best passage first and at least 4 of the 5. Scores are exact
/// cosines either way: the collection's best candidates are scored again
/// with the full vectors (once for the collection, not per segment).
#[test]
fn quantised_search_returns_the_exact_top_five() {
    let dir = tempfile::tempdir().unwrap();
    let points = sample_and_full_filler();
    let embedder = common::embedder();
    // A store within a few segments' worth of points lets the engine
    // score the candidates again per segment; past that they are scored
    // again once for the collection.
    let several_segments = points.len() / 4;
    for (quantization, segment_points) in [
        (Quantization::Int8, StorageConfig::default().segment_points),
        (
            Quantization::Binary,
            StorageConfig::default().segment_points,
        ),
        (Quantization::Int8, several_segments),
    ] {
        let path = dir
            .path()
            .join(format!("{quantization:?}-{segment_points}"));
        let settings = StorageConfig {
            segment_points,
            ..settings(quantization)
        };
        let store = EdgeStore::open_or_create(&path, 384, &settings).unwrap();
        for batch in points.chunks(500) {
            store.upsert(batch.to_vec()).unwrap();
        }
        store.flush().unwrap();
        store.optimize().unwrap();
        let info = store.info().unwrap();
        assert_eq!(info.points, points.len());
        if segment_points < points.len() {
            assert!(info.segments >= 2, "{} segments", info.segments);
        }
        assert!(
            info.indexed_vectors >= FILLER,
            "{quantization:?}: only {} of {} vectors indexed: the quantised path was not taken",
            info.indexed_vectors,
            points.len()
        );
        assert_eq!(store.index_settings().quantization, quantization);
        let mut best_first = 0;
        for q in QUESTIONS {
            let v = embedder.embed_query(q).unwrap();
            let served = top5(&store, &v, false);
            let exact = top5(&store, &v, true);
            if quantization == Quantization::Int8 {
                assert_eq!(
                    served, exact,
                    "{quantization:?}, {segment_points}-point segments: {q}"
                );
                // A filter holds in both passes: without the exact best.
                let filter = PayloadFilter {
                    exclude_ids: vec![exact[0]],
                    ..PayloadFilter::default()
                };
                let filtered = |exact: bool| -> Vec<u64> {
                    store
                        .search(&StoreQuery {
                            filter: Some(&filter),
                            exact,
                            ..StoreQuery::ranking(QueryVector::Dense(&v), 5)
                        })
                        .unwrap()
                        .iter()
                        .map(|h| h.id)
                        .collect()
                };
                let served = filtered(false);
                assert!(!served.contains(&exact[0]), "{segment_points}: {q}");
                assert_eq!(
                    served,
                    filtered(true),
                    "{segment_points}-point segments, filtered: {q}"
                );
            } else {
                // One bit a dimension orders near-ties coarsely even with
                // the candidates scored again (the book: binary is for
                // memory, not for recall, with this 384-dimension model):
                // the best passage stays in the top 5, the top 5 may swap
                // one, and the best passage is first for all but one
                // question (the graph is built on several threads: on a
                // loaded machine one near-duplicate window once came first).
                assert!(
                    served.contains(&exact[0]),
                    "{quantization:?}: {q}: {served:?} vs {exact:?}"
                );
                best_first += usize::from(served[0] == exact[0]);
                let shared = served.iter().filter(|id| exact.contains(id)).count();
                assert!(
                    shared >= 4,
                    "{quantization:?}: {q}: {served:?} vs {exact:?}"
                );
            }
            // Scores are the full vectors' cosines, not the quantised ones.
            let hit = &store
                .search(&StoreQuery {
                    with_dense: true,
                    ..StoreQuery::ranking(QueryVector::Dense(&v), 1)
                })
                .unwrap()[0];
            let cosine = grace::embed::cosine(&v, hit.dense.as_ref().unwrap());
            assert!((hit.score - cosine).abs() < 1e-4, "{quantization:?}: {q}");
        }
        if quantization == Quantization::Binary {
            assert!(
                best_first + 1 >= QUESTIONS.len(),
                "binary: the best passage first for only {best_first} of {} questions",
                QUESTIONS.len()
            );
        }
    }
}

/// The settings a store was created with are saved in its folder (read
/// back without opening it) and survive a reopen, also one for reading
/// with other settings; opened for writing with other settings, the store
/// saves those and rebuilds its segments with them, keeping every point.
#[test]
fn index_settings_persist_across_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let first = StorageConfig {
        quantization: Quantization::Binary,
        vectors_on_disk: true,
        lexical_on_disk: true,
        hnsw_m: 8,
        hnsw_ef_construct: 32,
        segment_points: 20_000,
        ..StorageConfig::default()
    };
    let saved = || EdgeStore::saved_index_settings(&path).unwrap();
    assert_eq!(saved(), None, "no store yet");
    let points = sample_and_filler(dir.path(), 0);
    {
        let store = EdgeStore::open_or_create(&path, 384, &first).unwrap();
        store.upsert(points.clone()).unwrap();
        store.flush().unwrap();
        assert_eq!(store.index_settings(), IndexSettings::from(&first));
    }
    // Closed: the folder holds them.
    assert_eq!(saved(), Some(IndexSettings::from(&first)));
    {
        let store = EdgeStore::open_existing(&path, &first).unwrap();
        assert_eq!(store.index_settings(), IndexSettings::from(&first));
        assert_eq!(store.count(None).unwrap(), points.len());
    }
    assert_eq!(saved(), Some(IndexSettings::from(&first)));
    let second = StorageConfig {
        quantization: Quantization::Int8,
        vectors_on_disk: false,
        lexical_on_disk: false,
        hnsw_m: 24,
        hnsw_ef_construct: 64,
        segment_points: 50_000,
        ..StorageConfig::default()
    };
    // Opened for reading with other settings: the index keeps its own (a
    // reader never changes what a writer built).
    {
        let store = EdgeStore::open_existing(&path, &second).unwrap();
        assert_eq!(store.index_settings(), IndexSettings::from(&first));
    }
    assert_eq!(saved(), Some(IndexSettings::from(&first)));
    // Opened for writing with other settings: saved, the segments rebuilt
    // with them, every point kept.
    {
        let store = EdgeStore::open_or_create(&path, 384, &second).unwrap();
        assert_eq!(store.index_settings(), IndexSettings::from(&second));
        assert_eq!(store.count(None).unwrap(), points.len());
    }
    assert_eq!(saved(), Some(IndexSettings::from(&second)));
    let store = EdgeStore::open_existing(&path, &second).unwrap();
    assert_eq!(store.count(None).unwrap(), points.len());
    let v = &points[0].dense;
    let hits = store
        .search(&StoreQuery::ranking(QueryVector::Dense(v), 1))
        .unwrap();
    assert_eq!(hits[0].id, points[0].id, "a point still finds itself");
}

/// Writing indexes what it has every `segment_points` points, so a large
/// ingest never holds more than about one segment unindexed: before any
/// explicit optimisation most points are already in indexed segments.
#[test]
fn writing_indexes_every_segment_points() {
    let dir = tempfile::tempdir().unwrap();
    // The filler three times over, under new ids: 24,000 points.
    let base = sample_and_full_filler();
    let mut points = base.clone();
    for copy in 1..3 {
        points.extend(base.iter().map(|p| {
            let source = format!("{}#{copy}", p.payload.source);
            ChunkPoint {
                id: grace::store::point_id(&source, p.payload.chunk_index, "copy"),
                payload: ChunkPayload {
                    source,
                    ..p.payload.clone()
                },
                ..p.clone()
            }
        }));
    }
    let store = EdgeStore::open_or_create(
        &dir.path().join("store"),
        384,
        &StorageConfig {
            segment_points: 10_000,
            ..StorageConfig::default()
        },
    )
    .unwrap();
    for batch in points.chunks(100) {
        store.upsert(batch.to_vec()).unwrap();
    }
    let info = store.info().unwrap();
    assert_eq!(info.points, points.len());
    assert!(info.segments >= 3, "{} segments", info.segments);
    assert!(
        info.indexed_vectors >= 20_000,
        "{} of {} indexed before the final optimisation",
        info.indexed_vectors,
        points.len()
    );
}

/// A knowledge base opened with the defaults searches the quantised store
/// and answers with the sample's passages (the settings reach the store
/// through `Config`).
#[test]
fn the_knowledge_base_uses_the_configured_index() {
    let dir = tempfile::tempdir().unwrap();
    let kb = common::open_sample(dir.path());
    drop(kb);
    let mut config = common::config(dir.path());
    config.storage.quantization = Quantization::Binary;
    config.storage.hnsw_m = 8;
    // Opened for writing (as `grace ingest` does), the new settings apply.
    let kb =
        KnowledgeBase::with_embedder(config.clone(), common::embedder(), OpenMode::Create).unwrap();
    let passages = kb
        .search("How do I roll back a bad deploy?", Some(3), None)
        .unwrap();
    assert!(
        passages[0].source.ends_with("troubleshooting.md"),
        "{}",
        passages[0].source
    );
    drop(kb);
    let store = EdgeStore::open_existing(&config.collection_dir(), &config.storage).unwrap();
    assert_eq!(store.index_settings().quantization, Quantization::Binary);
    assert_eq!(store.index_settings().hnsw_m, 8);
}
