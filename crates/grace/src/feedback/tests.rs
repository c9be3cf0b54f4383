use super::*;
use crate::exec::Decision;

fn store(dir: &std::path::Path, limits: FeedbackConfig) -> FeedbackStore {
    let mut config = Config::default();
    config.storage.data_dir = dir.to_path_buf();
    config.feedback = limits;
    FeedbackStore::open(&config).unwrap()
}

fn run(decision: Decision) -> RecordedRun {
    RecordedRun {
        question: "How long are nightly backups kept?".into(),
        standalone: None,
        answer: Some("Thirty days. [1]".into()),
        decision,
        confidence: 0.8,
        factors: None,
        weights_version: "logistic:0123456789abcdef".into(),
        collection: "grace".into(),
        sources: vec!["backups.md".into()],
    }
}

/// A run recorded for `asker`; its id.
fn recorded(s: &FeedbackStore, decision: Decision, asker: &Asker) -> String {
    s.record(&run(decision), asker, None).unwrap().unwrap()
}

fn up() -> Rating {
    Rating {
        vote: Vote::Up,
        reason: None,
        text: None,
    }
}

fn down(reason: Reason, text: Option<&str>) -> Rating {
    Rating {
        vote: Vote::Down,
        reason: Some(reason),
        text: text.map(str::to_string),
    }
}

#[test]
fn a_second_rating_replaces_the_first_and_both_survive_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let alice = Asker::named("alice").unwrap();
    let id = {
        let s = store(dir.path(), FeedbackConfig::default());
        let id = recorded(&s, Decision::Answer, &alice);
        assert!(crate::durable::is_random_id(&id, ANSWER_PREFIX), "{id}");
        assert!(!s.rate(&id, &alice, &up()).unwrap().replaced);
        let second = s.rate(&id, &alice, &down(Reason::Outdated, None)).unwrap();
        assert!(second.replaced);
        id
    };
    let s = store(dir.path(), FeedbackConfig::default());
    let labelled = s.labelled().unwrap();
    assert_eq!(labelled.len(), 1, "one rating per asker per answer");
    assert_eq!(labelled[0].id, id);
    assert_eq!(labelled[0].rating, Some(down(Reason::Outdated, None)));
    assert_eq!(labelled[0].run, run(Decision::Answer));
}

#[test]
fn a_run_that_does_not_exist_or_is_another_askers_is_not_found() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path(), FeedbackConfig::default());
    let alice = Asker::session("ses_00000000000000000000000000000000");
    let id = recorded(&s, Decision::Caveat, &alice);
    let bob = Asker::named("bob").unwrap();
    assert!(matches!(
        s.rate(&id, &bob, &up()),
        Err(FeedbackError::NotFound { .. })
    ));
    for bad in [
        "ans_ffffffffffffffffffffffffffffffff",
        "ans_x",
        "",
        "run_00000000000000000000000000000000",
        "ans_' OR 1=1 --",
    ] {
        assert!(
            matches!(
                s.rate(bad, &alice, &up()),
                Err(FeedbackError::NotFound { .. })
            ),
            "{bad:?}"
        );
    }
    assert!(s.labelled().unwrap().is_empty());
}

#[test]
fn hostile_ratings_are_refused_with_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path(), FeedbackConfig::default());
    let alice = Asker::named("alice").unwrap();
    let id = recorded(&s, Decision::Answer, &alice);
    let huge = "x".repeat(1 << 20);
    assert!(matches!(
        s.rate(&id, &alice, &down(Reason::Other, Some(&huge))),
        Err(FeedbackError::TooLong { max: 500, .. })
    ));
    let at_limit = "é".repeat(MAX_RATING_TEXT_CHARS);
    s.rate(&id, &alice, &down(Reason::Other, Some(&at_limit)))
        .unwrap();
    let bad = [
        Rating {
            vote: Vote::Up,
            reason: Some(Reason::Wrong),
            text: None,
        },
        down(Reason::Wrong, Some("a text without the reason other")),
        down(Reason::Other, Some(" \n\t")),
    ];
    for rating in bad {
        assert!(
            matches!(s.rate(&id, &alice, &rating), Err(FeedbackError::Invalid(_))),
            "{rating:?}"
        );
    }
    assert!(Asker::named("").is_err());
    assert!(Asker::named(" \n\t").is_err());
    assert!(Asker::named(&"a".repeat(MAX_ASKER_CHARS + 1)).is_err());
}

#[test]
fn escalated_and_declined_runs_have_nothing_to_rate() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path(), FeedbackConfig::default());
    let alice = Asker::named("alice").unwrap();
    for decision in [Decision::Escalate, Decision::Decline] {
        let id = s.record(&run(decision), &alice, Some(7)).unwrap().unwrap();
        assert!(matches!(
            s.rate(&id, &alice, &up()),
            Err(FeedbackError::NotAnswered { .. })
        ));
    }
}

#[test]
fn a_flood_from_one_asker_is_rate_limited_and_others_are_not() {
    let dir = tempfile::tempdir().unwrap();
    let limits = FeedbackConfig {
        max_ratings_per_hour: 5,
        ..FeedbackConfig::default()
    };
    let s = store(dir.path(), limits);
    let flood = Asker::named("flood").unwrap();
    let mut refused = 0;
    for _ in 0..20 {
        let id = recorded(&s, Decision::Answer, &flood);
        match s.rate(&id, &flood, &up()) {
            Ok(_) => {}
            Err(FeedbackError::RateLimited { max: 5 }) => refused += 1,
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(refused, 15);
    assert_eq!(s.labelled().unwrap().len(), 5);
    let other = Asker::named("other").unwrap();
    let id = recorded(&s, Decision::Answer, &other);
    s.rate(&id, &other, &up()).unwrap();
}

#[test]
fn past_max_runs_the_oldest_unlabelled_runs_go_and_labelled_ones_stay() {
    let dir = tempfile::tempdir().unwrap();
    let limits = FeedbackConfig {
        max_runs: 3,
        ..FeedbackConfig::default()
    };
    let s = store(dir.path(), limits);
    let alice = Asker::named("alice").unwrap();
    let first = recorded(&s, Decision::Answer, &alice);
    s.rate(&first, &alice, &up()).unwrap();
    let mut ids = Vec::new();
    for _ in 0..5 {
        ids.push(recorded(&s, Decision::Answer, &alice));
    }
    assert!(s.run(&first).unwrap().is_some(), "a rated run is kept");
    assert!(
        s.run(&ids[0]).unwrap().is_none(),
        "the oldest unrated run went"
    );
    assert!(s.run(&ids[4]).unwrap().is_some());
}

#[test]
fn escalated_runs_are_listed_for_their_verdicts_and_feedback_off_records_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path(), FeedbackConfig::default());
    let alice = Asker::named("alice").unwrap();
    let id = s
        .record(&run(Decision::Escalate), &alice, Some(42))
        .unwrap()
        .unwrap();
    recorded(&s, Decision::Answer, &alice);
    let labelled = s.labelled().unwrap();
    assert_eq!(labelled.len(), 1, "the unrated answer is not a label");
    assert_eq!(labelled[0].id, id);
    assert_eq!(labelled[0].review_id, Some(42));
    assert_eq!(labelled[0].rating, None);

    let off = tempfile::tempdir().unwrap();
    let s = store(
        off.path(),
        FeedbackConfig {
            enabled: false,
            ..FeedbackConfig::default()
        },
    );
    assert_eq!(
        s.record(&run(Decision::Answer), &alice, None).unwrap(),
        None
    );
    assert!(matches!(
        s.rate("ans_00000000000000000000000000000000", &alice, &up()),
        Err(FeedbackError::Disabled)
    ));
}

#[test]
fn a_run_is_linked_to_one_escalation_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path(), FeedbackConfig::default());
    let alice = Asker::named("alice").unwrap();
    let id = recorded(&s, Decision::Answer, &alice);
    assert_eq!(s.review_of(&id).unwrap(), None);
    assert!(s.link_review(&id, 7).unwrap());
    assert!(!s.link_review(&id, 8).unwrap(), "a second link is refused");
    assert_eq!(s.review_of(&id).unwrap(), Some(7));
    assert!(
        !s.link_review("ans_00000000000000000000000000000000", 9)
            .unwrap()
    );
}

#[test]
fn document_ratings_are_each_rating_per_cited_document_newest_first() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path(), FeedbackConfig::default());
    let alice = Asker::named("alice").unwrap();
    let bob = Asker::named("bob").unwrap();
    let two = RecordedRun {
        sources: vec!["a.md".into(), "b.md".into()],
        ..run(Decision::Answer)
    };
    let first = s.record(&two, &alice, None).unwrap().unwrap();
    let second = recorded(&s, Decision::Caveat, &bob);
    s.rate(&first, &alice, &up()).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(5));
    s.rate(&second, &bob, &down(Reason::Wrong, None)).unwrap();
    let ratings = s.document_ratings(10).unwrap();
    let seen: Vec<(&str, &str, bool)> = ratings
        .iter()
        .map(|r| (r.asker.as_str(), r.source.as_str(), r.up))
        .collect();
    assert_eq!(
        seen,
        [
            ("asker:bob", "backups.md", false),
            ("asker:alice", "a.md", true),
            ("asker:alice", "b.md", true)
        ]
    );
    // At most `max` ratings are read.
    assert_eq!(s.document_ratings(1).unwrap().len(), 1);
}
