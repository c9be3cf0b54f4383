//! Security review: `?wait=` long polls ran outside every limit, so
//! any number of askers could hold a task each, each took the database's
//! write lock every 200 ms, and a shutdown waited for each poll's `wait`
//! (up to 600 s). "Redo: hint" redrafts, promotions and retractions ran
//! outside `server.max_concurrency`, and an ingest went on after its
//! request got 504. Now waiting askers are bounded (4 per permit; beyond,
//! 429), wake on a notification and read without the write lock, a
//! shutdown answers them at once; review actions that search or ingest
//! take a permit; a timed-out request keeps its permit until its work has
//! stopped, and an ingest stops at the next file.

use crate::support::common;

use std::time::{Duration, Instant};

use grace::AskOptions;
use grace::review::ReviewError;
use grace_serve::WAITERS_PER_PERMIT;
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_asker_reads_without_the_write_lock_and_wakes_on_the_answer() {
    let dir = tempfile::tempdir().unwrap();
    let grace = common::sample_service(common::config(dir.path())).await;
    let id = grace
        .ask("Can I deploy on Fridays?", AskOptions::default())
        .await
        .unwrap()
        .review_id
        .unwrap();
    let queue = grace.escalations().clone();
    // Another process holds the write lock for the whole wait. The old
    // poll took it every 200 ms, so it hung on SQLite's busy timeout (10 s)
    // instead of ending at its own 0.5 s.
    let db = rusqlite::Connection::open(queue.sqlite_path().unwrap()).unwrap();
    db.execute_batch("BEGIN IMMEDIATE").unwrap();
    let started = Instant::now();
    let err = grace
        .escalation(id)
        .settled(Duration::from_millis(500))
        .await
        .unwrap_err();
    assert!(matches!(err, ReviewError::WaitTimedOut { .. }), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "the wait blocked on the write lock: {:?}",
        started.elapsed()
    );
    db.execute_batch("ROLLBACK").unwrap();

    // An answer given in this process wakes the waiter (no 1 s poll).
    common::reviewer(&queue, "alice", "Alice");
    let waiting = {
        let handle = grace.escalation(id);
        tokio::spawn(async move { handle.settled(Duration::from_secs(60)).await })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    let answer = grace::review::ReviewAnswer {
        reply: grace::exec::HumanReply::Text("No: not on Fridays.".into()),
        sources: Vec::new(),
        confidence: None,
        verdict: None,
    };
    let answered_at = Instant::now();
    queue.answer(id, "alice", &answer).unwrap();
    let e = waiting.await.unwrap().unwrap();
    assert_eq!(e.status.as_str(), "answered");
    assert!(
        answered_at.elapsed() < Duration::from_millis(900),
        "woke after {:?}: polled, not notified",
        answered_at.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redraft_or_a_promotion_needs_a_free_permit_and_a_plain_answer_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = common::config(dir.path());
    config.server.max_concurrency = 1;
    let grace = common::sample_service(config).await;
    let queue = grace.escalations().clone();
    let token = common::reviewer(&queue, "alice", "Alice");
    let mut ids = Vec::new();
    for _ in 0..2 {
        ids.push(
            grace
                .ask("Can I deploy on Fridays?", AskOptions::default())
                .await
                .unwrap()
                .review_id
                .unwrap(),
        );
    }
    let state = grace_serve::AppState::new(grace).unwrap();
    // Something else holds the only permit.
    let busy = state.gate.permits.clone().try_acquire_owned().unwrap();
    let server = common::serve_state(state).await;
    let base = server.base.clone();
    let http = reqwest::Client::new();
    let answer = |id: i64, body: Value| {
        http.post(format!("{base}/v1/review/escalations/{id}/answer"))
            .bearer_auth(&token)
            .json(&body)
            .send()
    };
    let redo = answer(
        ids[0],
        serde_json::json!({"text": "redo: look under change freeze"}),
    )
    .await
    .unwrap();
    assert_eq!(redo.status(), StatusCode::TOO_MANY_REQUESTS);
    let promote = answer(ids[0], serde_json::json!({"text": "No.", "promote": true}))
        .await
        .unwrap();
    assert_eq!(promote.status(), StatusCode::TOO_MANY_REQUESTS);
    // Nothing was recorded by the refused requests.
    assert!(
        queue
            .get(ids[0], grace::review::Viewer::Asker)
            .unwrap()
            .status
            .is_open()
    );
    // A plain answer costs no search and goes through.
    let plain = answer(ids[1], serde_json::json!({"text": "No."}))
        .await
        .unwrap();
    assert_eq!(plain.status(), StatusCode::OK);
    // With the permit free, the promotion goes through.
    drop(busy);
    let promote = answer(ids[0], serde_json::json!({"text": "No.", "promote": true}))
        .await
        .unwrap();
    assert_eq!(
        promote.status(),
        StatusCode::OK,
        "{}",
        promote.text().await.unwrap()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ingest_that_timed_out_stops_at_the_next_file_and_holds_its_permit_till_then() {
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    let total = 300;
    for i in 0..total {
        std::fs::write(
            docs.join(format!("note-{i:03}.md")),
            format!("# Note {i}\n\nThe parking code for bay {i} is {}.\n", i * 7),
        )
        .unwrap();
    }
    let mut config = common::config(&dir.path().join("data"));
    config.server.max_concurrency = 1;
    config.server.request_timeout = 0.3;
    config.ingest.allowed_roots = vec![docs.clone()];
    let grace = common::service(config);
    let server = common::serve(grace.clone()).await;
    let http = reqwest::Client::new();
    let r = http
        .post(format!("{}/v1/ingest", server.base))
        .json(&serde_json::json!({"paths": [docs]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::GATEWAY_TIMEOUT);
    // Until the ingest has stopped, its permit is taken: no new work.
    let mut refused = 0;
    let started = Instant::now();
    loop {
        let r = http
            .post(format!("{}/v1/search", server.base))
            .json(&serde_json::json!({"query": "parking code"}))
            .send()
            .await
            .unwrap();
        if r.status() != StatusCode::TOO_MANY_REQUESTS {
            assert_eq!(r.status(), StatusCode::OK);
            break;
        }
        refused += 1;
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the ingest never stopped"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        refused > 0,
        "the permit was free while the ingest still ran"
    );
    // It stopped early: fewer files than there are are in the store.
    let status = grace.status().unwrap();
    assert!(
        status.sources < total,
        "all {} files were ingested: the ingest was not cancelled",
        status.sources
    );
    assert_eq!(
        status.pending_sources, 0,
        "the cancelled ingest left files half-written"
    );
    server.stop().await;
}
