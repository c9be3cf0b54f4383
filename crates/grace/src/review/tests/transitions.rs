//! An escalation's way through the queue: claimed, answered, rejected,
//! cancelled, redrafted; and every transition its state or its caller
//! refuses.

use std::sync::{Arc, Barrier};

use super::*;

#[test]
fn pending_claimed_answered_reaches_the_asker_with_the_reviewer_and_confidence() {
    let f = fixture(false);
    let e = escalate(&f.queue, None, None);
    assert_eq!((e.status, e.claimed_by.clone()), (Status::Pending, None));
    assert_eq!(e.request.options.len(), 2);
    assert_eq!(e.run.question, "How do I roll back?");

    let claimed = f.queue.claim(e.id, "alice").unwrap();
    assert_eq!(claimed.status, Status::Claimed);
    assert_eq!(claimed.claimed_by.as_deref(), Some("alice"));
    // Claiming one's own claim again changes nothing.
    assert_eq!(
        f.queue.claim(e.id, "alice").unwrap().status,
        Status::Claimed
    );

    let r = f
        .queue
        .answer(
            e.id,
            "alice",
            &ReviewAnswer {
                reply: HumanReply::Text("Use `orbit rollback --to previous`.".into()),
                sources: vec![Citation {
                    number: 1,
                    source: Some("/kb/runbook.md".into()),
                    section: Some("Rollback".into()),
                    page: None,
                }],
                confidence: Some(0.9),
                verdict: None,
            },
        )
        .unwrap();
    assert_eq!(r.outcome, Outcome::Answered);
    assert_eq!(r.decided_by, "reviewer:alice");
    let report = r.report.as_ref().unwrap();
    assert_eq!(report.decision, Decision::Answer);
    assert_eq!(report.decided_by.as_deref(), Some("reviewer:alice"));
    assert_eq!(report.confidence, 0.9);
    assert_eq!(report.level, Level::Silent);
    let answer = report.answer.as_ref().unwrap();
    assert_eq!(answer.text, "Use `orbit rollback --to previous`.");
    assert_eq!(
        answer.citations[0].source.as_deref(),
        Some("/kb/runbook.md")
    );

    // The asker reads it back from the database.
    let seen = f.queue.get(e.id, Viewer::Asker).unwrap();
    assert_eq!(seen.status, Status::Answered);
    assert_eq!(seen.resolution.as_ref(), Some(&r));
    assert_eq!(
        actions(&f.queue, e.id),
        ["escalated", "claimed", "answered"]
    );
    let log = f.queue.log(e.id, Viewer::Asker).unwrap();
    assert_eq!(
        (log[1].actor.as_str(), log[1].from, log[1].to),
        ("alice", Some(Status::Pending), Some(Status::Claimed))
    );
    assert!(log[2].detail.contains("orbit rollback"));
}

#[test]
fn confirming_the_draft_keeps_its_citations_and_takes_the_configured_confidence() {
    let f = fixture(false);
    let e = escalate(&f.queue, None, None);
    // Answering a pending escalation claims it first (both are audited).
    let r = f
        .queue
        .answer(
            e.id,
            "bob",
            &ReviewAnswer {
                reply: HumanReply::Option(1),
                sources: Vec::new(),
                confidence: None,
                verdict: None,
            },
        )
        .unwrap();
    let report = r.report.unwrap();
    assert_eq!(
        report.answer.as_ref().unwrap().text,
        "Run orbit rollback [1]."
    );
    assert_eq!(report.answer.as_ref().unwrap().citations.len(), 1);
    assert_eq!(report.confidence, f.config.review.reviewer_confidence);
    assert_eq!(
        actions(&f.queue, e.id),
        ["escalated", "claimed", "answered"]
    );
}

#[test]
fn choosing_not_answered_rejects_and_reject_needs_a_reason() {
    let f = fixture(false);
    let e = escalate(&f.queue, None, None);
    let r = f
        .queue
        .answer(
            e.id,
            "alice",
            &ReviewAnswer {
                reply: HumanReply::Option(2),
                sources: Vec::new(),
                confidence: None,
                verdict: None,
            },
        )
        .unwrap();
    assert_eq!(r.outcome, Outcome::Rejected);
    assert_eq!(
        f.queue.get(e.id, Viewer::Asker).unwrap().status,
        Status::Rejected
    );

    let e = escalate(&f.queue, None, None);
    assert!(matches!(
        f.queue.reject(e.id, "alice", "  "),
        Err(ReviewError::Invalid(_))
    ));
    let r = f
        .queue
        .reject(e.id, "alice", "Ask the release team.")
        .unwrap();
    assert_eq!(
        (r.outcome, r.note.as_deref()),
        (Outcome::Rejected, Some("Ask the release team."))
    );
    assert_eq!(
        actions(&f.queue, e.id),
        ["escalated", "claimed", "rejected"]
    );
}

#[test]
fn settled_escalations_refuse_every_further_transition() {
    let f = fixture(false);
    let e = escalate(&f.queue, None, None);
    f.queue.answer(e.id, "alice", &text("Yes.")).unwrap();
    for result in [
        f.queue.claim(e.id, "bob").map(|_| ()),
        f.queue.answer(e.id, "alice", &text("Again")).map(|_| ()),
        f.queue.reject(e.id, "alice", "no").map(|_| ()),
        f.queue.cancel(e.id, "user").map(|_| ()),
        f.queue.release(e.id, "alice").map(|_| ()),
    ] {
        let err = result.unwrap_err();
        assert!(matches!(err, ReviewError::Conflict { .. }), "{err}");
    }
    assert_eq!(
        actions(&f.queue, e.id),
        ["escalated", "claimed", "answered"]
    );
}

#[test]
fn a_claim_held_by_one_reviewer_refuses_another_until_released() {
    let f = fixture(false);
    let e = escalate(&f.queue, None, None);
    f.queue.claim(e.id, "alice").unwrap();
    let err = f.queue.answer(e.id, "bob", &text("Mine")).unwrap_err();
    assert!(err.to_string().contains("claimed by alice"), "{err}");
    assert!(f.queue.release(e.id, "bob").is_err());
    assert_eq!(
        f.queue.release(e.id, "alice").unwrap().status,
        Status::Pending
    );
    f.queue.answer(e.id, "bob", &text("Mine")).unwrap();
    assert_eq!(
        actions(&f.queue, e.id),
        ["escalated", "claimed", "released", "claimed", "answered"]
    );
}

#[test]
fn unregistered_reviewers_and_empty_values_are_refused() {
    let f = fixture(false);
    let e = escalate(&f.queue, None, None);
    let err = f.queue.claim(e.id, "mallory").unwrap_err();
    assert!(
        matches!(
            err,
            ReviewError::NotFound {
                what: "reviewer",
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("grace review register"), "{err}");
    assert!(matches!(
        f.queue.answer(e.id, "alice", &text("   ")),
        Err(ReviewError::Invalid(_))
    ));
    assert!(matches!(
        f.queue.answer(
            e.id,
            "alice",
            &ReviewAnswer {
                confidence: Some(1.5),
                verdict: None,
                ..text("ok")
            }
        ),
        Err(ReviewError::Invalid(_))
    ));
    for (id, name) in [("", "Name"), ("dave", " "), ("da ve", "Dave")] {
        let err = f
            .queue
            .register_reviewer(&Reviewer {
                id: id.into(),
                name: name.into(),
                description: String::new(),
            })
            .unwrap_err();
        assert!(
            matches!(err, ReviewError::Invalid(_)),
            "{id:?}/{name:?}: {err}"
        );
    }
    let mut not_escalated = escalated_run("q?");
    not_escalated.escalation = None;
    assert!(
        f.queue
            .escalate(NewEscalation {
                report: &not_escalated,
                collection: "grace",
                asker: "user",
                allowed: None,
                timeout: None,
                vector: None,
            })
            .is_err()
    );
    assert!(matches!(
        f.queue.get(999, Viewer::Asker),
        Err(ReviewError::NotFound {
            what: "escalation",
            ..
        })
    ));
}

#[test]
fn the_asker_can_cancel_an_open_escalation() {
    let f = fixture(false);
    let e = escalate(&f.queue, None, None);
    let r = f.queue.cancel(e.id, "user").unwrap();
    assert_eq!(r.outcome, Outcome::Cancelled);
    assert_eq!(
        f.queue.get(e.id, Viewer::Asker).unwrap().status,
        Status::Cancelled
    );
    assert!(f.queue.claim(e.id, "alice").is_err());
}

#[test]
fn two_reviewers_claiming_at_once_exactly_one_wins() {
    let f = fixture(false);
    for _ in 0..20 {
        let e = escalate(&f.queue, None, None);
        let barrier = Arc::new(Barrier::new(2));
        // Separate connections, as two processes would have.
        let handles: Vec<_> = ["alice", "bob"]
            .into_iter()
            .map(|who| {
                let queue = ReviewQueue::open(&f.config).unwrap();
                let barrier = barrier.clone();
                std::thread::spawn(move || {
                    barrier.wait();
                    queue.claim(e.id, who).map(|e| e.claimed_by)
                })
            })
            .collect();
        let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let winners: Vec<_> = results.iter().filter(|r| r.is_ok()).collect();
        assert_eq!(winners.len(), 1, "{results:?}");
        let loser = results.iter().find(|r| r.is_err()).unwrap();
        assert!(
            matches!(loser, Err(ReviewError::Conflict { .. })),
            "{loser:?}"
        );
        assert_eq!(
            actions(&f.queue, e.id),
            ["escalated", "claimed"],
            "one claim recorded"
        );
    }
}

#[test]
fn a_redraft_replaces_the_draft_and_stays_with_the_reviewer() {
    let f = fixture(false);
    let e = escalate(&f.queue, None, None);
    let mut new_run = escalated_run("How do I roll back?");
    new_run.answer.as_mut().unwrap().text = "Use the rollback runbook [1].".into();
    new_run.confidence = 0.8;
    new_run.decision = Decision::Answer;
    new_run.escalation = None;
    let e2 = f
        .queue
        .redraft(e.id, "alice", &new_run, "look under runbook")
        .unwrap();
    assert_eq!(
        (e2.status, e2.claimed_by.as_deref()),
        (Status::Claimed, Some("alice"))
    );
    assert!(e2.request.options[0].ends_with("Use the rollback runbook [1]."));
    assert!(e2.reason.contains("look under runbook"));
    let r = f
        .queue
        .answer(
            e.id,
            "alice",
            &ReviewAnswer {
                reply: HumanReply::Option(1),
                sources: Vec::new(),
                confidence: None,
                verdict: None,
            },
        )
        .unwrap();
    assert_eq!(
        r.report.unwrap().answer.unwrap().text,
        "Use the rollback runbook [1]."
    );
    assert_eq!(
        actions(&f.queue, e.id),
        ["escalated", "claimed", "replanned", "answered"]
    );
}
