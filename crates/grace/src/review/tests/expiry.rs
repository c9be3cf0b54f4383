//! Escalations past their time, and askers waiting for the answer.

use std::sync::Arc;

use super::*;

#[test]
fn expiry_without_auto_proceed_cancels_the_run() {
    let f = fixture(false);
    let e = escalate(&f.queue, None, Some(Duration::from_millis(50)));
    std::thread::sleep(Duration::from_millis(120));
    let seen = f.queue.get(e.id, Viewer::Asker).unwrap();
    assert_eq!(seen.status, Status::Expired);
    let r = seen.resolution.unwrap();
    assert_eq!(
        (r.outcome, r.decided_by.as_str()),
        (Outcome::Cancelled, "timeout")
    );
    assert!(r.report.is_none());
    assert!(r.note.unwrap().contains("auto_proceed_on_timeout is off"));
    // Answering an expired escalation is refused.
    let err = f.queue.answer(e.id, "alice", &text("Late")).unwrap_err();
    assert!(err.to_string().contains("expired"), "{err}");
    assert_eq!(actions(&f.queue, e.id), ["escalated", "expired"]);
}

#[test]
fn expiry_with_auto_proceed_gives_the_draft_marked_as_not_reviewed() {
    let f = fixture(true);
    let e = escalate(&f.queue, None, Some(Duration::from_millis(50)));
    f.queue.claim(e.id, "alice").unwrap();
    std::thread::sleep(Duration::from_millis(120));
    let seen = f.queue.get(e.id, Viewer::Asker).unwrap();
    assert_eq!(seen.status, Status::Expired);
    let r = seen.resolution.unwrap();
    assert_eq!(r.outcome, Outcome::ProceededUnreviewed);
    assert!(r.note.as_deref().unwrap().starts_with("not reviewed"));
    let report = r.report.unwrap();
    // The draft, at its own low confidence, as a caveat — never a confident answer.
    assert_eq!(report.decision, Decision::Caveat);
    assert_eq!(report.confidence, 0.31);
    assert_eq!(report.decided_by.as_deref(), Some("timeout"));
    assert_eq!(report.answer.unwrap().text, "Run orbit rollback [1].");

    // Without a usable draft there is nothing to proceed with.
    let mut run = escalated_run("q?");
    run.answer.as_mut().unwrap().abstained = true;
    let e = f
        .queue
        .escalate(NewEscalation {
            report: &run,
            collection: "grace",
            asker: "user",
            allowed: None,
            timeout: Some(Duration::from_millis(10)),
            vector: None,
        })
        .unwrap();
    std::thread::sleep(Duration::from_millis(40));
    let r = f
        .queue
        .get(e.id, Viewer::Asker)
        .unwrap()
        .resolution
        .unwrap();
    assert_eq!(r.outcome, Outcome::Cancelled);
}

#[test]
fn a_waiting_asker_gets_the_answer_given_on_another_connection() {
    let f = fixture(false);
    let e = escalate(&f.queue, None, None);
    let config = f.config.clone();
    let id = e.id;
    let reviewer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        let queue = ReviewQueue::open(&config).unwrap();
        queue.answer(id, "carol", &text("Forty-two.")).unwrap();
    });
    let settled = f
        .queue
        .wait_blocking(e.id, Duration::from_secs(10))
        .unwrap();
    reviewer.join().unwrap();
    assert_eq!(settled.status, Status::Answered);
    let report = settled.resolution.unwrap().report.unwrap();
    assert_eq!(report.answer.unwrap().text, "Forty-two.");

    let e = escalate(&f.queue, None, None);
    let err = f
        .queue
        .wait_blocking(e.id, Duration::from_millis(300))
        .unwrap_err();
    assert!(matches!(
        err,
        ReviewError::WaitTimedOut {
            status: Status::Pending,
            ..
        }
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_awaitable_handle_resolves_when_a_reviewer_answers() {
    let f = fixture(false);
    let e = escalate(&f.queue, None, None);
    let queue = Arc::new(ReviewQueue::open(&f.config).unwrap());
    let handle = EscalationHandle::new(queue, e.id);
    let config = f.config.clone();
    let id = e.id;
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        ReviewQueue::open(&config)
            .unwrap()
            .answer(id, "alice", &text("Done."))
            .unwrap();
    });
    let settled = handle.settled(Duration::from_secs(10)).await.unwrap();
    assert_eq!(settled.status, Status::Answered);
}

#[test]
fn a_wall_clock_jump_moves_open_escalations_expiry_by_the_jump() {
    let f = fixture(false);
    let e = escalate(&f.queue, None, Some(Duration::from_secs(60)));
    let before = f.queue.get(e.id, Viewer::Asker).unwrap().expires_at;
    // As if the wall clock read two hours less at the last write, on the
    // same boot and at the same boot time: it has jumped two hours since.
    let file = f.config.storage.data_dir.join("review.sqlite3");
    let db = rusqlite::Connection::open(&file).unwrap();
    let two_hours = 2 * 3600 * 1000;
    db.execute("UPDATE clock SET wall_ms = wall_ms - ?1", [two_hours])
        .unwrap();
    drop(db);
    f.queue.claim(e.id, "alice").unwrap();
    let after = f.queue.get(e.id, Viewer::Asker).unwrap();
    assert_eq!(after.status, Status::Claimed);
    let moved = (after.expires_at - before).num_milliseconds();
    // By the jump, less the (small) time the boot clock moved meanwhile;
    // the two clocks are read in whole milliseconds a moment apart, so
    // their difference may round one over (7,200,001 once, on a loaded
    // machine).
    assert!(
        (two_hours - 2_000..=two_hours + 1).contains(&moved),
        "{moved}"
    );
    // A second write sees no jump: nothing moves again.
    f.queue.release(e.id, "alice").unwrap();
    let again = f.queue.get(e.id, Viewer::Asker).unwrap().expires_at;
    assert_eq!(again, after.expires_at);
    // A settled escalation is never moved.
    let done = escalate(&f.queue, None, Some(Duration::from_millis(10)));
    std::thread::sleep(Duration::from_millis(50));
    let expired = f.queue.get(done.id, Viewer::Asker).unwrap();
    assert_eq!(expired.status, Status::Expired);
    let db = rusqlite::Connection::open(&file).unwrap();
    db.execute("UPDATE clock SET wall_ms = wall_ms - ?1", [two_hours])
        .unwrap();
    drop(db);
    f.queue.claim(e.id, "bob").unwrap();
    let still = f.queue.get(done.id, Viewer::Asker).unwrap().expires_at;
    assert_eq!(still, expired.expires_at);
}
