//! Near-repeat escalations: joined while the first is open, answered once
//! for every asker, kept apart when they name other things, detached by a
//! reviewer.

use super::*;

/// A unit vector along `axis`, tilted by `tilt` toward the next axis
/// (cosine with the untilted one: `1 / sqrt(1 + tilt²)`).
fn toward(axis: usize, tilt: f32) -> Vec<f32> {
    let mut v = vec![0.0; 16];
    v[axis] = 1.0;
    v[(axis + 1) % 16] = tilt;
    v
}

fn ask(
    q: &ReviewQueue,
    question: &str,
    asker: &str,
    vector: Option<&[f32]>,
    allowed: Option<Vec<String>>,
) -> Escalation {
    let run = escalated_run(question);
    q.escalate(NewEscalation {
        report: &run,
        collection: "grace",
        asker,
        allowed,
        timeout: None,
        vector,
    })
    .unwrap()
}

fn listed(q: &ReviewQueue) -> Vec<i64> {
    q.list(Viewer::Admin, None)
        .unwrap()
        .iter()
        .map(|e| e.id)
        .collect()
}

fn pending(q: &ReviewQueue) -> u64 {
    q.counts()
        .unwrap()
        .into_iter()
        .find(|(s, _)| *s == Status::Pending)
        .map_or(0, |(_, n)| n)
}

#[test]
fn the_same_question_asked_three_times_is_one_escalation_answered_for_each_asker() {
    let f = fixture(false);
    let v = toward(0, 0.0);
    let first = ask(&f.queue, "How do I roll back?", "ann", Some(&v), None);
    let second = ask(&f.queue, "How do I roll back?", "ben", Some(&v), None);
    // Other words, nearly the same meaning (cosine 0.89).
    let third = ask(
        &f.queue,
        "how can I roll back",
        "cat",
        Some(&toward(0, 0.5)),
        None,
    );
    assert_eq!(second.joined_to, Some(first.id));
    assert_eq!(third.joined_to, Some(first.id));
    assert_eq!(listed(&f.queue), vec![first.id]);
    assert_eq!(pending(&f.queue), 1);
    let lead = f.queue.get(first.id, Viewer::Admin).unwrap();
    let askers: Vec<&str> = lead.also_asked.iter().map(|a| a.asker.as_str()).collect();
    assert_eq!(askers, ["ben", "cat"]);
    assert_eq!(actions(&f.queue, second.id), ["escalated", "joined"]);

    f.queue
        .answer(first.id, "alice", &text("Run `orbit rollback api`."))
        .unwrap();
    for (e, for_question) in [
        (&first, None),
        (&second, None),
        (&third, Some("How do I roll back?")),
    ] {
        let settled = f.queue.get(e.id, Viewer::Asker).unwrap();
        assert_eq!(settled.status, Status::Answered, "#{}", e.id);
        let resolution = settled.resolution.unwrap();
        let report = resolution.report.unwrap();
        assert_eq!(report.answer.unwrap().text, "Run `orbit rollback api`.");
        assert_eq!(report.question, e.question, "each keeps its own question");
        assert_eq!(resolution.for_question.as_deref(), for_question);
        assert_eq!(resolution.decided_by, "reviewer:alice");
        assert_eq!(report.decided_by.as_deref(), Some("reviewer:alice"));
        // Only the draft the reviewer saw is judged.
        assert_eq!(resolution.verdict.is_some(), e.id == first.id);
    }
    assert!(
        f.queue
            .get(first.id, Viewer::Admin)
            .unwrap()
            .also_asked
            .is_empty()
    );
    // Settled, each is listed again in its own right.
    assert_eq!(listed(&f.queue).len(), 3);
}

#[test]
fn other_meanings_names_identifiers_reviewers_and_knowledge_bases_stay_apart() {
    let f = fixture(false);
    let v = toward(0, 0.0);
    let lead = ask(
        &f.queue,
        "What is the Wi-Fi password for the London office?",
        "ann",
        Some(&v),
        None,
    );
    // Far in meaning (cosine 0.71, under 0.8).
    let far = ask(
        &f.queue,
        "What is the Wi-Fi password for the London office?",
        "ben",
        Some(&toward(0, 1.0)),
        None,
    );
    // The same embedding, another name.
    let paris = ask(
        &f.queue,
        "What is the Wi-Fi password for the Paris office?",
        "cat",
        Some(&v),
        None,
    );
    // Restricted to other reviewers.
    let restricted = ask(
        &f.queue,
        "What is the Wi-Fi password for the London office?",
        "dan",
        Some(&v),
        Some(vec!["bob".into()]),
    );
    // No embedding: nothing to compare.
    let plain = ask(
        &f.queue,
        "What is the Wi-Fi password for the London office?",
        "eve",
        None,
        None,
    );
    for e in [&far, &paris, &restricted, &plain] {
        assert_eq!(e.joined_to, None, "{}", e.question);
    }
    // Another knowledge base.
    let run = escalated_run("What is the Wi-Fi password for the London office?");
    let other_kb = f
        .queue
        .escalate(NewEscalation {
            report: &run,
            collection: "hr",
            asker: "fay",
            allowed: None,
            timeout: None,
            vector: Some(&v),
        })
        .unwrap();
    assert_eq!(other_kb.joined_to, None);
    assert_eq!(listed(&f.queue).len(), 6);
    assert!(
        f.queue
            .get(lead.id, Viewer::Admin)
            .unwrap()
            .also_asked
            .is_empty()
    );
    // With group_similarity 1, only the same question joins.
    let mut config = f.config.clone();
    config.review.group_similarity = 1.0;
    let strict = ReviewQueue::open(&config).unwrap();
    let near = ask(
        &strict,
        "What is the Wi-Fi password for the London office?",
        "gil",
        Some(&toward(0, 0.1)),
        None,
    );
    assert_eq!(near.joined_to, None);
}

#[test]
fn a_reviewer_detaches_an_asker_who_asks_something_else() {
    let f = fixture(false);
    let v = toward(3, 0.0);
    let lead = ask(
        &f.queue,
        "How many vacation days do new employees get?",
        "ann",
        Some(&v),
        None,
    );
    let sick = ask(
        &f.queue,
        "How many sick days do new employees get?",
        "ben",
        Some(&toward(3, 0.3)),
        None,
    );
    assert_eq!(sick.joined_to, Some(lead.id));
    let detached = f.queue.detach(sick.id, "alice").unwrap();
    assert_eq!(detached.joined_to, None);
    assert_eq!(
        actions(&f.queue, sick.id),
        ["escalated", "joined", "detached"]
    );
    assert_eq!(listed(&f.queue), vec![sick.id, lead.id]);
    f.queue.reject(lead.id, "alice", "HR answers this").unwrap();
    assert_eq!(
        f.queue.get(sick.id, Viewer::Asker).unwrap().status,
        Status::Pending
    );
    // Only a joined, open escalation can be detached, and only by a reviewer.
    assert!(f.queue.detach(lead.id, "alice").is_err());
    assert!(f.queue.detach(sick.id, "alice").is_err());
    let other = ask(
        &f.queue,
        "How many sick days do new employees get?",
        "cat",
        Some(&toward(3, 0.3)),
        None,
    );
    assert_eq!(other.joined_to, Some(sick.id));
    assert!(f.queue.detach(other.id, "mallory").is_err());
    assert_eq!(
        f.queue.get(other.id, Viewer::Admin).unwrap().joined_to,
        Some(sick.id)
    );
}

#[test]
fn a_rejection_reaches_every_asker_and_a_cancelled_lead_frees_the_others() {
    let f = fixture(false);
    let v = toward(5, 0.0);
    let a = ask(&f.queue, "Can I deploy on Fridays?", "ann", Some(&v), None);
    let b = ask(&f.queue, "Can I deploy on Fridays?", "ben", Some(&v), None);
    f.queue
        .reject(a.id, "alice", "Ask the release team")
        .unwrap();
    let rejected = f.queue.get(b.id, Viewer::Asker).unwrap();
    assert_eq!(rejected.status, Status::Rejected);
    assert_eq!(
        rejected.resolution.unwrap().note.as_deref(),
        Some("Ask the release team")
    );

    let c = ask(
        &f.queue,
        "Can I deploy on Saturdays?",
        "cat",
        Some(&toward(6, 0.0)),
        None,
    );
    let d = ask(
        &f.queue,
        "Can I deploy on Saturdays?",
        "dan",
        Some(&toward(6, 0.0)),
        None,
    );
    assert_eq!(d.joined_to, Some(c.id));
    f.queue.cancel(c.id, "cat").unwrap();
    // Its lead withdrawn, the other asker's escalation is listed on its
    // own, joined to nothing open, and leads the next near repeat.
    assert!(listed(&f.queue).contains(&d.id));
    assert_eq!(f.queue.get(d.id, Viewer::Admin).unwrap().joined_to, None);
    let e = ask(
        &f.queue,
        "Can I deploy on Saturdays?",
        "eve",
        Some(&toward(6, 0.0)),
        None,
    );
    assert_eq!(e.joined_to, Some(d.id));
}

#[test]
fn hostile_vectors_never_join_or_fail() {
    let f = fixture(false);
    let v = toward(0, 0.0);
    let lead = ask(&f.queue, "How do I roll back?", "ann", Some(&v), None);
    for (who, vector) in [
        ("nan", vec![f32::NAN; 16]),
        ("zero", vec![0.0; 16]),
        ("short", vec![1.0; 3]),
        ("huge", vec![f32::MAX; 16]),
        ("empty", Vec::new()),
    ] {
        let e = ask(&f.queue, "How do I roll back?", who, Some(&vector), None);
        assert_eq!(e.joined_to, None, "{who}");
    }
    assert_eq!(listed(&f.queue).len(), 6);
    assert!(
        f.queue
            .get(lead.id, Viewer::Admin)
            .unwrap()
            .also_asked
            .is_empty()
    );
}
