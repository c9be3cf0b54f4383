//! The queue's transitions, refusals, expiry, messages and context, on a
//! real SQLite database in a temporary folder.

use std::sync::{Arc, Barrier};
use std::time::Duration;

use serde_json::json;

use super::*;
use crate::confidence::Level;
use crate::config::Config;
use crate::exec::{CONFIRM_OPTION_PREFIX, Decision, HumanReply, NOT_ANSWERED_OPTION, RunReport};
use crate::plan::PlanOrigin;
use crate::tools::{Answer, Citation, Urgency, UserRequest};

fn escalated_run(question: &str) -> RunReport {
    RunReport {
        question: question.into(),
        rewrite: None,
        answer: Some(Answer {
            text: "Run orbit rollback [1].".into(),
            citations: vec![Citation {
                number: 1,
                source: Some("/kb/troubleshooting.md".into()),
                section: Some("Rollback".into()),
                page: None,
            }],
            abstained: false,
            self_confidence: None,
            usage: Default::default(),
            generator: "extractive".into(),
        }),
        confidence: 0.31,
        level: Level::Escalate,
        decision: Decision::Escalate,
        escalation: Some(UserRequest {
            question: question.into(),
            reason: "confidence 0.31 is below 0.70 (notify)".into(),
            options: vec![
                format!("{CONFIRM_OPTION_PREFIX}Run orbit rollback [1]."),
                NOT_ANSWERED_OPTION.into(),
            ],
            urgency: Urgency::Blocking,
            awaiting_response: true,
        }),
        plan: PlanOrigin::Default,
        recovered: false,
        decided_by: None,
        steps: Vec::new(),
        agent: None,
        clarification: None,
        parked: None,
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    config: Config,
    queue: ReviewQueue,
}

fn fixture(auto_proceed: bool) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config::default();
    config.storage.data_dir = dir.path().to_path_buf();
    config.review.auto_proceed_on_timeout = auto_proceed;
    let queue = ReviewQueue::open(&config).unwrap();
    for id in ["alice", "bob", "carol"] {
        queue
            .register_reviewer(&Reviewer {
                id: id.into(),
                name: id.to_uppercase(),
                description: String::new(),
            })
            .unwrap();
    }
    Fixture {
        _dir: dir,
        config,
        queue,
    }
}

fn escalate(q: &ReviewQueue, allowed: Option<&[&str]>, timeout: Option<Duration>) -> Escalation {
    let run = escalated_run("How do I roll back?");
    q.escalate(NewEscalation {
        report: &run,
        collection: "grace",
        asker: "user",
        allowed: allowed.map(|a| a.iter().map(|s| s.to_string()).collect()),
        timeout,
    })
    .unwrap()
}

fn text(t: &str) -> ReviewAnswer {
    ReviewAnswer {
        reply: HumanReply::Text(t.into()),
        sources: Vec::new(),
        confidence: None,
    }
}

fn actions(q: &ReviewQueue, id: i64) -> Vec<String> {
    q.log(id, Viewer::Asker)
        .unwrap()
        .into_iter()
        .map(|a| a.action)
        .collect()
}

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
fn a_restricted_escalation_is_invisible_to_reviewers_not_allowed() {
    let f = fixture(false);
    let public = escalate(&f.queue, None, None);
    let private = escalate(&f.queue, Some(&["alice"]), None);

    let ids = |v: Viewer<'_>| -> Vec<i64> {
        f.queue
            .list(v, None)
            .unwrap()
            .iter()
            .map(|e| e.id)
            .collect()
    };
    assert_eq!(ids(Viewer::Reviewer("alice")), [private.id, public.id]);
    assert_eq!(ids(Viewer::Reviewer("bob")), [public.id]);
    assert_eq!(ids(Viewer::Anyone), [public.id]);

    // Not allowed reads exactly like a missing escalation.
    let hidden = f
        .queue
        .get(private.id, Viewer::Reviewer("bob"))
        .unwrap_err();
    let missing = f.queue.get(999, Viewer::Reviewer("bob")).unwrap_err();
    assert_eq!(
        hidden.to_string().replace(&private.id.to_string(), "N"),
        missing.to_string().replace("999", "N")
    );
    for result in [
        f.queue.claim(private.id, "bob").map(|_| ()),
        f.queue.answer(private.id, "bob", &text("x")).map(|_| ()),
        f.queue.reject(private.id, "bob", "x").map(|_| ()),
        f.queue.log(private.id, Viewer::Reviewer("bob")).map(|_| ()),
    ] {
        assert!(matches!(
            result,
            Err(ReviewError::NotFound {
                what: "escalation",
                ..
            })
        ));
    }
    // The allowed reviewer, and the asker, see it.
    f.queue.answer(private.id, "alice", &text("Yes.")).unwrap();
    assert_eq!(
        f.queue.get(private.id, Viewer::Asker).unwrap().status,
        Status::Answered
    );
    // Only alice was told about the restricted one.
    let told = |r: &str| -> Vec<Option<i64>> {
        f.queue
            .messages(r, None)
            .unwrap()
            .iter()
            .map(|m| m.escalation_id)
            .collect()
    };
    assert_eq!(told("alice"), [Some(private.id), Some(public.id)]);
    assert_eq!(told("bob"), [Some(public.id)]);
}

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

#[test]
fn messages_go_pending_read_archived_and_never_back() {
    let f = fixture(false);
    let direct = f
        .queue
        .send_message("grace", Some("alice"), "Hello", "Please look at #1.")
        .unwrap();
    let broadcast = f
        .queue
        .send_message("grace", None, "All", "New policy.")
        .unwrap();
    let statuses = |r: &str| -> Vec<(i64, MessageStatus)> {
        f.queue
            .messages(r, None)
            .unwrap()
            .iter()
            .map(|m| (m.id, m.status))
            .collect()
    };
    assert_eq!(
        statuses("alice"),
        [
            (broadcast, MessageStatus::Pending),
            (direct, MessageStatus::Pending)
        ]
    );
    assert_eq!(statuses("bob"), [(broadcast, MessageStatus::Pending)]);

    assert_eq!(
        f.queue.mark_as_read(direct, "alice").unwrap(),
        MessageStatus::Read
    );
    // Reading again is a no-op; the broadcast is read per reader.
    f.queue.mark_as_read(direct, "alice").unwrap();
    f.queue.mark_as_read(broadcast, "bob").unwrap();
    assert_eq!(
        statuses("alice"),
        [
            (broadcast, MessageStatus::Pending),
            (direct, MessageStatus::Read)
        ]
    );
    assert_eq!(statuses("bob"), [(broadcast, MessageStatus::Read)]);
    f.queue.archive_message(direct, "alice").unwrap();
    assert!(matches!(
        f.queue.mark_as_read(direct, "alice"),
        Err(ReviewError::WrongState(_))
    ));
    assert_eq!(
        f.queue
            .messages("alice", Some(MessageStatus::Pending))
            .unwrap()
            .len(),
        1
    );
    // Bob cannot touch alice's direct message: it does not exist for him.
    assert!(matches!(
        f.queue.mark_as_read(direct, "bob"),
        Err(ReviewError::NotFound {
            what: "message",
            ..
        })
    ));
    for (to, body) in [(Some("nobody"), "x"), (None, " ")] {
        assert!(f.queue.send_message("grace", to, "s", body).is_err());
    }
    assert!(f.queue.send_message("", None, "s", "body").is_err());
}

#[test]
fn restricted_context_reads_like_a_missing_key_to_others() {
    let f = fixture(false);
    let q = &f.queue;
    q.set_context(
        "policy",
        &json!({"freeze": "friday"}),
        "grace",
        &Access::Public,
    )
    .unwrap();
    q.set_context(
        "incident",
        &json!("INC-42"),
        "alice",
        &Access::Restricted(vec!["bob".into()]),
    )
    .unwrap();
    assert_eq!(
        q.get_context("policy", "carol").unwrap().value["freeze"],
        "friday"
    );
    assert_eq!(q.get_context("incident", "alice").unwrap().value, "INC-42");
    assert_eq!(q.get_context("incident", "bob").unwrap().owner, "alice");
    let hidden = q.get_context("incident", "carol").unwrap_err().to_string();
    let missing = q.get_context("nothing", "carol").unwrap_err().to_string();
    assert_eq!(
        hidden.replace("incident", "K"),
        missing.replace("nothing", "K")
    );
    // Only the owner changes a key; a reader learns that, a stranger not
    // even that it exists.
    let err = q
        .set_context("incident", &json!("x"), "bob", &Access::Public)
        .unwrap_err();
    assert!(err.to_string().contains("only its owner"), "{err}");
    let err = q
        .set_context("incident", &json!("x"), "carol", &Access::Public)
        .unwrap_err();
    assert!(matches!(err, ReviewError::NotFound { .. }), "{err}");
    q.set_context("incident", &json!("INC-43"), "alice", &Access::Public)
        .unwrap();
    assert_eq!(q.get_context("incident", "carol").unwrap().value, "INC-43");
    assert!(
        q.set_context(" ", &json!(1), "alice", &Access::Public)
            .is_err()
    );
    assert!(q.set_context("k", &json!(1), "", &Access::Public).is_err());
}

#[test]
fn the_queue_survives_reopening() {
    let f = fixture(false);
    let e = escalate(&f.queue, None, None);
    drop(f.queue);
    let queue = ReviewQueue::open(&f.config).unwrap();
    let seen = queue.get(e.id, Viewer::Asker).unwrap();
    assert_eq!(seen.run, e.run);
    assert_eq!(seen.status, Status::Pending);
}

/// Issue 15, finding 10: the reviewer page read and decoded every
/// escalation ever stored on each 2 s poll. Now status, visibility and the
/// page are SQL, and only the rows returned are decoded.
#[test]
fn listing_pages_and_filters_in_sql_with_the_same_visibility() {
    let f = fixture(false);
    let mut ids = Vec::new();
    for i in 0..12 {
        let allowed: Option<&[&str]> = if i % 3 == 0 { Some(&["bob"]) } else { None };
        ids.push(escalate(&f.queue, allowed, None).id);
    }
    // Settle two: they leave the open list.
    f.queue.reject(ids[1], "alice", "no").unwrap();
    f.queue.reject(ids[2], "alice", "no").unwrap();
    let page = |viewer, open_only, limit, before| {
        f.queue
            .list_page(
                viewer,
                &ListFilter {
                    status: None,
                    open_only,
                    limit,
                    before,
                },
            )
            .unwrap()
            .into_iter()
            .map(|e| e.id)
            .collect::<Vec<_>>()
    };
    let newest_first = |keep: &dyn Fn(usize) -> bool| {
        let mut v: Vec<i64> = (0..12).filter(|&i| keep(i)).map(|i| ids[i]).collect();
        v.reverse();
        v
    };
    // alice sees the public ones, bob also his; pages join up.
    let alice_open = newest_first(&|i| i % 3 != 0 && i != 1 && i != 2);
    assert_eq!(
        page(Viewer::Reviewer("alice"), true, None, None),
        alice_open
    );
    let first = page(Viewer::Reviewer("alice"), true, Some(3), None);
    let next = page(
        Viewer::Reviewer("alice"),
        true,
        Some(3),
        first.last().copied(),
    );
    assert_eq!([first, next].concat(), alice_open[..6].to_vec());
    assert_eq!(
        page(Viewer::Reviewer("bob"), false, None, None),
        newest_first(&|_| true)
    );
    assert_eq!(
        page(Viewer::Anyone, false, None, None),
        newest_first(&|i| i % 3 != 0)
    );
    assert_eq!(page(Viewer::Admin, false, Some(100), None).len(), 12);
    // The same answer as filtering every row in memory, as before.
    let all = f.queue.list(Viewer::Reviewer("alice"), None).unwrap();
    assert_eq!(all.len(), newest_first(&|i| i % 3 != 0).len());
}

#[test]
fn counts_name_every_status_and_settle_the_expired_first() {
    let f = fixture(false);
    let zero: Vec<u64> = f.queue.counts().unwrap().iter().map(|c| c.1).collect();
    assert_eq!(zero, [0; 6]);
    let answered = escalate(&f.queue, None, None);
    f.queue.answer(answered.id, "alice", &text("Yes.")).unwrap();
    escalate(&f.queue, None, None);
    escalate(&f.queue, None, Some(Duration::from_millis(50)));
    std::thread::sleep(Duration::from_millis(120));
    // Nothing read the late one since its time passed: counting settles it.
    let counts = f.queue.counts().unwrap();
    let of = |s: Status| counts.iter().find(|c| c.0 == s).unwrap().1;
    assert_eq!(
        (
            of(Status::Pending),
            of(Status::Answered),
            of(Status::Expired)
        ),
        (1, 1, 1)
    );
    assert_eq!(counts.len(), Status::ALL.len());
}
