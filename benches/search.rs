//! Search latency of the embedded store at 10,000 and 100,000 points: dense
//! and lexical rankings, before and after the HNSW index is built
//! (`optimize`; about two minutes at 100k on 2 cores). Vectors are random
//! (normalised) so the bench needs no model; latency does not depend on
//! what the vectors mean. `GRACE_BENCH_SIZES=10000` runs one size only.

use criterion::{Criterion, criterion_group, criterion_main};
use grace::lexical::{LexicalEncoder, SparseVector};
use grace::store::edge::EdgeStore;
use grace::store::{ChunkPayload, ChunkPoint, QueryVector, StoreQuery, VectorStore};

const DIM: usize = 384;
const SIZES: [usize; 2] = [10_000, 100_000];

/// xorshift: deterministic vectors without a dependency.
struct Rng(u64);
impl Rng {
    fn next_f32(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    }
    fn unit(&mut self) -> Vec<f32> {
        let v: Vec<f32> = (0..DIM).map(|_| self.next_f32()).collect();
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.into_iter().map(|x| x / n).collect()
    }
}

const WORDS: &[&str] = &[
    "package",
    "install",
    "kernel",
    "network",
    "debian",
    "release",
    "mirror",
    "security",
    "update",
    "archive",
    "source",
    "binary",
    "dependency",
    "upgrade",
    "config",
    "service",
];

fn fill(store: &EdgeStore, rng: &mut Rng, lexical: &LexicalEncoder, points: usize) {
    let mut batch = Vec::new();
    for i in 0..points {
        let text: String = (0..40)
            .map(|j| WORDS[(i * 7 + j * 13 + (i % 5) * j) % WORDS.len()])
            .collect::<Vec<_>>()
            .join(" ");
        batch.push(ChunkPoint {
            id: i as u64,
            dense: rng.unit(),
            lexical: lexical.encode_document(&text),
            payload: ChunkPayload {
                source: format!("/bench/doc{}.md", i / 10),
                section: String::new(),
                chunk_index: i % 10,
                text,
                content_hash: "bench".into(),
                page: None,
                readers: Vec::new(),
            },
        });
        if batch.len() == 1000 {
            store.upsert(std::mem::take(&mut batch)).unwrap();
        }
    }
    store.flush().unwrap();
}

fn sizes() -> Vec<usize> {
    match std::env::var("GRACE_BENCH_SIZES") {
        Ok(list) => list
            .split(',')
            .filter_map(|s| s.trim().parse().ok())
            .collect(),
        Err(_) => SIZES.to_vec(),
    }
}

fn bench(c: &mut Criterion) {
    for points in sizes() {
        bench_size(c, points);
    }
}

fn bench_size(c: &mut Criterion, points: usize) {
    let dir = tempfile::tempdir().unwrap();
    let store = EdgeStore::open_or_create(
        &dir.path().join("bench"),
        DIM,
        &grace::config::StorageConfig::default(),
    )
    .unwrap();
    let lexical = LexicalEncoder::new().unwrap();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    fill(&store, &mut rng, &lexical, points);
    let queries: Vec<Vec<f32>> = (0..64).map(|_| rng.unit()).collect();
    let sparse: SparseVector = lexical.encode_query("kernel security update mirror");

    let mut group = c.benchmark_group(format!("search_{}k", points / 1000));
    for phase in ["unindexed", "indexed"] {
        if phase == "indexed" {
            let started = std::time::Instant::now();
            store.optimize().unwrap();
            eprintln!(
                "search_{}k: optimize() built the index in {:.1} s",
                points / 1000,
                started.elapsed().as_secs_f64()
            );
        }
        let mut i = 0;
        group.bench_function(format!("dense top40 {phase}"), |b| {
            b.iter(|| {
                i = (i + 1) % queries.len();
                store
                    .search(&StoreQuery {
                        vector: QueryVector::Dense(&queries[i]),
                        limit: 40,
                        filter: None,
                        // As `search` asks: ids and scores only; the kept
                        // passages are read with `retrieve` (below).
                        with_payload: false,
                        with_dense: false,
                        exact: false,
                    })
                    .unwrap()
                    .len()
            })
        });
        group.bench_function(format!("lexical top40 {phase}"), |b| {
            b.iter(|| {
                store
                    .search(&StoreQuery::ranking(QueryVector::Lexical(&sparse), 40))
                    .unwrap()
                    .len()
            })
        });
        // The kept passages (5), and every candidate of both rankings
        // whole (80) and their terms alone, what the lexical gate reads.
        let mut t = 0;
        group.bench_function(format!("retrieve terms 80 {phase}"), |b| {
            b.iter(|| {
                t = (t + 1) % (points / 80);
                let ids: Vec<u64> = (0..80).map(|k| (t * 80 + k) as u64).collect();
                store.retrieve_terms(&ids).unwrap().len()
            })
        });
        for n in [5usize, 80] {
            let mut j = 0;
            group.bench_function(format!("retrieve {n} {phase}"), |b| {
                b.iter(|| {
                    j = (j + 1) % (points / n);
                    let ids: Vec<u64> = (0..n).map(|k| (j * n + k) as u64).collect();
                    store.retrieve(&ids).unwrap().len()
                })
            });
        }
    }
    group.finish();
}

// Criterion's HTML plots need a system font that plotters (built with
// ab_glyph for `grace eval --plot`) does not look up: figures only.
criterion_group! {
    name = benches;
    config = Criterion::default().without_plots();
    targets = bench
}
criterion_main!(benches);
