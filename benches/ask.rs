//! A whole `ask` with the offline (extractive) answerer on the bundled
//! sample knowledge base (examples/kb): plan, search, answer, confidence.
//! Every iteration asks a new question text (a counter is appended), so the
//! question is embedded each time; the passages' sentence vectors come from
//! the embedding cache after the first questions, as in a running service.
//! Measured with the answerability reader on (the default, when its files
//! are present) and off (`confidence.reader: off`): the difference is what
//! the reader costs an ask. Needs the model (`scripts/setup`).

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use criterion::{Criterion, criterion_group, criterion_main};
use grace::config::ReaderMode;
use grace::service::AskOptions;
use grace::{Config, Grace};

const QUESTIONS: [&str; 4] = [
    "How do I rotate an API key?",
    "How do I roll back a production deployment?",
    "What does the error E0382 mean?",
    "Can I deploy on Fridays?",
];

fn bench(c: &mut Criterion) {
    for reader in [ReaderMode::On, ReaderMode::Off] {
        bench_ask(c, reader);
    }
}

fn bench_ask(c: &mut Criterion, reader: ReaderMode) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut config = Config::load(Some(&root.join("grace_config.yml"))).unwrap();
    let dir = tempfile::tempdir().unwrap();
    config.storage.data_dir = dir.path().to_path_buf();
    config.confidence.reader = reader;
    let grace = Grace::open(config).unwrap();
    grace
        .ingest_blocking(
            &[root.join("examples/kb")],
            &Default::default(),
            &mut |_| {},
        )
        .unwrap();
    let options = AskOptions {
        queue: false,
        ..AskOptions::default()
    };
    let mut n = 0u64;
    let name = match reader {
        ReaderMode::Off => "ask (extractive, examples/kb, reader off)",
        _ => "ask (extractive, examples/kb, reader on)",
    };
    c.bench_function(name, |b| {
        b.iter(|| {
            n += 1;
            let question = format!("{} ({n})", QUESTIONS[n as usize % QUESTIONS.len()]);
            grace
                .ask_blocking(
                    &question,
                    &options,
                    Arc::new(AtomicBool::new(false)),
                    &mut |_| {},
                )
                .unwrap()
                .report
                .confidence
        })
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(50).without_plots();
    targets = bench
}
criterion_main!(benches);
