//! The answerability reader (int8 MiniLM-L6 cross-encoder on ONNX Runtime)
//! reading one question against the 5 passages a search returns, each a
//! chunk-sized text (~200 words, as ingest stores them), and against 5 short
//! passages (~60 words). This is what the reader adds to every `ask`; ingest
//! never runs it. Needs `scripts/setup` (the runtime) and models/reader/.

use std::path::Path;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use grace::Config;
use grace::config::ReaderMode;
use grace::reader::Reader;

fn bench(c: &mut Criterion) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = Config::load(Some(&root.join("grace_config.yml"))).unwrap();
    let reader = Reader::new(
        ReaderMode::On,
        &config.reader,
        &config.embedding.runtime_path,
    );
    let sentence = "The package manager resolves every dependency of a package before it installs anything, and refuses to break installed ones. ";
    let long: Vec<String> = (0..5)
        .map(|i| format!("Passage {i}. {}", sentence.repeat(10)))
        .collect();
    let short: Vec<String> = (0..5)
        .map(|i| format!("Passage {i}. {}", sentence.repeat(3)))
        .collect();
    let (long, short) = (as_str(&long), as_str(&short));
    // Load the model outside the measurement.
    reader
        .probabilities("warm up", &long[..1])
        .unwrap()
        .expect("the reader is available (models/reader/ and scripts/setup)");

    let mut group = c.benchmark_group("reader");
    group.sample_size(30);
    group.throughput(Throughput::Elements(5));
    let mut n = 0u64;
    for (name, passages) in [
        ("question x 5 passages (~200 words)", &long),
        ("question x 5 passages (~60 words)", &short),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| {
                n += 1;
                let question = format!("How do I upgrade a package without breaking others? {n}");
                reader.probabilities(&question, passages).unwrap()
            })
        });
    }
    group.finish();
}

fn as_str(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

criterion_group! {
    name = benches;
    config = Criterion::default().without_plots();
    targets = bench
}
criterion_main!(benches);
