//! Issue 15, finding 9 (the parts done so far): `?wait=` long polls ran
//! outside every limit, so any number of askers could hold a task each,
//! and a shutdown waited for each poll's `wait` (up to 600 s). Now waiting
//! askers are bounded (4 per `server.max_concurrency` permit; beyond,
//! 429), and a shutdown answers them at once with the current state.

mod common;

use std::time::{Duration, Instant};

use grace::AskOptions;
use grace::serve::WAITERS_PER_PERMIT;
use reqwest::StatusCode;
use serde_json::Value;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn long_polls_are_bounded_and_end_when_the_server_stops() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = common::config(dir.path());
    config.server.max_concurrency = 1;
    let grace = common::sample_service(config).await;
    let outcome = grace
        .ask("Can I deploy on Fridays?", AskOptions::default())
        .await
        .unwrap();
    let (id, handle) = (outcome.review_id.unwrap(), outcome.review_handle.unwrap());

    let server = common::serve(grace).await;
    let url = format!(
        "{}/v1/escalations/{id}?handle={handle}&wait=600",
        server.base
    );
    let http = reqwest::Client::new();

    // As many waiters as allowed, each holding its poll open.
    let waiting: Vec<_> = (0..WAITERS_PER_PERMIT)
        .map(|_| {
            let (http, url) = (http.clone(), url.clone());
            tokio::spawn(async move {
                let r = http.get(url).send().await.unwrap();
                (r.status(), r.json::<Value>().await.unwrap())
            })
        })
        .collect();
    // Let them all arrive, then one more is refused at once.
    let mut refused = None;
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let r = http.get(&url).send().await.unwrap();
        if r.status() == StatusCode::TOO_MANY_REQUESTS {
            refused = Some(r.text().await.unwrap());
            break;
        }
    }
    let refused = refused.expect("a waiter beyond the bound was let in");
    assert!(refused.contains("already waiting"), "{refused}");

    // Stopping answers the waiters with the state now, long before 600 s.
    let started = Instant::now();
    server.stop().await;
    for w in waiting {
        let (status, view) = w.await.unwrap();
        assert_eq!(status, StatusCode::OK);
        assert_eq!(view["status"], "pending", "{view}");
    }
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "the shutdown waited for the polls: {:?}",
        started.elapsed()
    );
}
