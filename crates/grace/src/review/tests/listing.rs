//! Who sees which escalations, and listing them: pages, filters and
//! counts.

use super::*;

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

/// Security review: the reviewer page read and decoded every
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
