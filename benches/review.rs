//! The review queue on its default store (a SQLite file): one page of
//! the pending list read, with 1,000 pending escalations stored (first:
//! the next benchmark adds answered ones, as many as it has time for);
//! then one escalation put in the queue, claimed and answered (three
//! write transactions, each committed to disk). `GRACE_BENCH_POSTGRES_URL` runs the same on
//! a PostgreSQL database too, in a new schema `grace_bench_<pid>`.

// The integration tests' helpers; this benchmark uses a few of them.
#[allow(dead_code)]
#[path = "../tests/support/common.rs"]
mod common;

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use grace::config::{Config, StateBackend};
use grace::exec::HumanReply;
use grace::review::{
    ListFilter, NewEscalation, ReviewAnswer, ReviewQueue, Reviewer, Status, Viewer,
};

fn escalate(queue: &ReviewQueue, run: &grace::exec::RunReport) -> i64 {
    queue
        .escalate(NewEscalation {
            report: run,
            collection: "grace",
            asker: "bench",
            allowed: None,
            timeout: None,
            vector: None,
        })
        .expect("escalate")
        .id
}

fn bench_queue(c: &mut Criterion, name: &str, config: &Config) {
    let queue = ReviewQueue::open(config).expect("the queue opens");
    queue
        .register_reviewer(&Reviewer {
            id: "alice".into(),
            name: "Alice".into(),
            description: String::new(),
        })
        .expect("register");
    let run = common::escalated("How long are nightly backups kept?");
    for _ in 0..1_000 {
        escalate(&queue, &run);
    }
    let answer = ReviewAnswer {
        reply: HumanReply::Text("Thirty days.".into()),
        sources: Vec::new(),
        confidence: None,
        verdict: None,
    };
    let filter = ListFilter {
        status: Some(Status::Pending),
        limit: Some(50),
        ..ListFilter::default()
    };
    c.bench_function(&format!("review/{name}/list_page_50"), |b| {
        b.iter(|| {
            black_box(
                queue
                    .list_page(Viewer::Reviewer("alice"), &filter)
                    .expect("list"),
            )
        })
    });
    c.bench_function(&format!("review/{name}/escalate_claim_answer"), |b| {
        b.iter(|| {
            let id = escalate(&queue, &run);
            queue.claim(id, "alice").expect("claim");
            black_box(queue.answer(id, "alice", &answer).expect("answer"));
        })
    });
}

fn review(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let mut config = Config::default();
    config.storage.data_dir = dir.path().to_path_buf();
    bench_queue(c, "sqlite", &config);
    if let Some(url) = std::env::var("GRACE_BENCH_POSTGRES_URL")
        .ok()
        .filter(|u| !u.is_empty())
    {
        config.storage.state = StateBackend::Postgres;
        config.storage.postgres.url = url;
        config.storage.postgres.schema = format!("grace_bench_{}", std::process::id());
        bench_queue(c, "postgres", &config);
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30);
    targets = review
}
criterion_main!(benches);
