//! Reviewers' messages and shared context values.

use serde_json::json;

use super::*;

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
