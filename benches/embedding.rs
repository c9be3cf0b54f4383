//! The local embedder (all-MiniLM-L6-v2 int8 on ONNX Runtime): a batch of
//! 32 chunk-sized texts (~200 words, as ingest embeds them) and one short
//! question (as a search embeds it). The physical limit of ingest and the
//! floor of query latency on this machine. And 40 passage sentences (what
//! the extractive answerer embeds for a question) with one session on
//! every core (`embedding.threads` = cores) against the default
//! (`embedding.threads: 0`: one single-threaded session per core for a
//! batch, a session on every core for a lone text). Needs the model
//! (`scripts/setup`).

use std::path::Path;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use grace::Config;
use grace::embed::{Embedder, FastEmbedder};

fn bench(c: &mut Criterion) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = Config::load(Some(&root.join("grace_config.yml"))).unwrap();
    let embedder = FastEmbedder::new(&config.embedding).unwrap();
    let sentence = "The package manager resolves every dependency of a package before it installs anything, and refuses to break installed ones. ";
    let chunks: Vec<String> = (0..32)
        .map(|i| format!("Chunk {i}. {}", sentence.repeat(10)))
        .collect();
    // Load the model outside the measurement.
    embedder.embed(&chunks[..1]).unwrap();

    let mut group = c.benchmark_group("embedding");
    group.sample_size(10);
    group.throughput(Throughput::Elements(chunks.len() as u64));
    group.bench_function("batch of 32 chunks (~200 words)", |b| {
        b.iter(|| embedder.embed(&chunks).unwrap().len())
    });
    group.throughput(Throughput::Elements(1));
    group.sample_size(100);
    let mut n = 0u64;
    group.bench_function("one question", |b| {
        b.iter(|| {
            n += 1;
            embedder
                .embed_query(&format!(
                    "How do I upgrade a package without breaking others? {n}"
                ))
                .unwrap()
                .len()
        })
    });
    group.throughput(Throughput::Elements(40));
    group.sample_size(10);
    let sentences: Vec<String> = (0..40)
        .map(|i| {
            let words = ["the", "package", "manager", "resolves", "dependencies"];
            let n = 6 + (i * 7) % 30;
            let mut s = format!("Sentence {i}:");
            for w in 0..n {
                s.push(' ');
                s.push_str(words[w % words.len()]);
            }
            s.push('.');
            s
        })
        .collect();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut shared = config.embedding.clone();
    shared.threads = cores;
    let one_session = FastEmbedder::new(&shared).unwrap();
    let per_core = FastEmbedder::new(&config.embedding).unwrap();
    one_session.embed(&sentences).unwrap();
    per_core.embed(&sentences).unwrap();
    group.bench_function("40 sentences, one session on every core", |b| {
        b.iter(|| one_session.embed(&sentences).unwrap().len())
    });
    group.bench_function("40 sentences, a session per core (the default)", |b| {
        b.iter(|| per_core.embed(&sentences).unwrap().len())
    });
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
