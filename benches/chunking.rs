//! Loading and chunking throughput on the debian-faq corpus (or, when
//! it is absent, on generated text), in words per second.

use std::hint::black_box;
use std::path::Path;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use grace::ingest::chunk::{ChunkParams, chunk_sections};
use grace::ingest::load::{Format, Limits, load};

fn corpus() -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("eval/debian-faq/corpus");
    let mut files: Vec<Vec<u8>> = std::fs::read_dir(&dir)
        .map(|it| {
            it.filter_map(|e| std::fs::read(e.ok()?.path()).ok())
                .collect()
        })
        .unwrap_or_default();
    if files.is_empty() {
        let sentence = "The package manager resolves dependencies before it installs anything. ";
        files = (0..75)
            .map(|i| format!("# Doc {i}\n\n{}", sentence.repeat(200)).into_bytes())
            .collect();
    }
    files
}

fn bench(c: &mut Criterion) {
    let files = corpus();
    let words: usize = files
        .iter()
        .map(|f| String::from_utf8_lossy(f).split_whitespace().count())
        .sum();
    let params = ChunkParams {
        size: 200,
        overlap: 30,
    };
    let mut group = c.benchmark_group("chunking");
    group.throughput(Throughput::Elements(words as u64));
    group.bench_function("load+chunk markdown corpus", |b| {
        b.iter(|| {
            let mut n = 0;
            for f in &files {
                if let Ok(doc) = load(black_box(f), Format::Markdown, &Limits::default()) {
                    n += chunk_sections(&doc.sections, params).len();
                }
            }
            n
        })
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
