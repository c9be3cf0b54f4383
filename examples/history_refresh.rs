//! What keeping the documents' rating history costs: after every rating
//! GRACE reads the newest ratings (at most `feedback::MAX_BOOST_RATINGS`)
//! and makes each document's history, the `document_history` factor.
//! This records answered runs citing three documents each (of 500), has
//! each rated by its own asker, and times that refresh.
//!
//! `cargo run --release --example history_refresh -- [RATINGS]` (default
//! 10,000).

use std::time::Instant;

use grace::config::Config;
use grace::exec::Decision;
use grace::feedback::{Asker, FeedbackStore, Rating, RecordedRun, Vote};

type Error = Box<dyn std::error::Error>;

fn main() -> Result<(), Error> {
    let n: usize = match std::env::args().nth(1) {
        Some(a) => a.parse()?,
        None => 10_000,
    };
    let work = tempfile::tempdir()?;
    let mut config = Config::default();
    config.storage.data_dir = work.path().to_path_buf();
    config.feedback.max_runs = config.feedback.max_runs.max(n);
    config.feedback.max_ratings_per_hour = config.feedback.max_ratings_per_hour.max(n);
    let store = FeedbackStore::open(&config)?;
    let started = Instant::now();
    for k in 0..n {
        let run = RecordedRun {
            question: format!("question {k}"),
            standalone: None,
            answer: Some(format!("answer {k}")),
            decision: Decision::Answer,
            confidence: 0.8,
            factors: None,
            weights_version: String::new(),
            collection: "study".into(),
            sources: (0..3)
                .map(|d| format!("doc-{}.md", (k * 7 + d) % 500))
                .collect(),
        };
        let asker = Asker::named(&format!("asker-{k}"))?;
        let id = store
            .record(&run, &asker, None)?
            .ok_or("the feedback store is disabled")?;
        let rating = Rating {
            vote: if k % 3 == 0 { Vote::Down } else { Vote::Up },
            reason: None,
            text: None,
        };
        store.rate(&id, &asker, &rating)?;
    }
    println!(
        "{n} answers recorded and rated in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let mut times = Vec::new();
    let mut documents = 0;
    for _ in 0..7 {
        let started = Instant::now();
        let history = store.document_history()?;
        times.push(started.elapsed().as_secs_f64() * 1000.0);
        documents = history.len();
    }
    times.sort_by(f64::total_cmp);
    println!(
        "refresh after a rating ({documents} documents with a history): median {:.1} ms (min {:.1}, max {:.1})",
        times[3], times[0], times[6]
    );
    Ok(())
}
