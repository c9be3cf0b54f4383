//! Sessions and waiting runs on a real SQLite database in a temporary
//! folder: turns, limits, expiry, parked runs and hostile ids.

use super::*;

fn turn(q: &str, bytes: usize) -> Turn {
    Turn {
        question: q.into(),
        standalone: None,
        answer: Some("x".repeat(bytes)),
        sources: vec!["a.md".into()],
        decision: Decision::Answer,
        confidence: 0.9,
    }
}

fn config(dir: &std::path::Path, limits: SessionsConfig) -> Config {
    let mut config = Config::default();
    config.storage.data_dir = dir.to_path_buf();
    config.sessions = limits;
    config
}

fn store(limits: SessionsConfig) -> (tempfile::TempDir, SessionStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::open(&config(dir.path(), limits)).unwrap();
    (dir, store)
}

#[test]
fn turns_are_kept_in_order_and_survive_reopening() {
    let (dir, s) = store(SessionsConfig::default());
    let session = s.create().unwrap();
    assert!(plausible_id(&session.id, SESSION_PREFIX), "{}", session.id);
    s.append(&session.id, &turn("first?", 1)).unwrap();
    s.append(&session.id, &turn("second?", 1)).unwrap();
    drop(s);
    let s = SessionStore::open(&config(dir.path(), SessionsConfig::default())).unwrap();
    let got = s.get(&session.id).unwrap();
    let questions: Vec<&str> = got.turns.iter().map(|t| t.question.as_str()).collect();
    assert_eq!(questions, ["first?", "second?"]);
    s.delete(&session.id).unwrap();
    assert!(matches!(
        s.get(&session.id),
        Err(SessionError::NotFound { .. })
    ));
    assert!(matches!(
        s.delete(&session.id),
        Err(SessionError::NotFound { .. })
    ));
}

#[test]
fn the_oldest_turns_go_past_the_turn_and_byte_limits() {
    let limits = SessionsConfig {
        max_turns: 3,
        max_bytes: 1_000,
        ..SessionsConfig::default()
    };
    let (_dir, s) = store(limits);
    let id = s.create().unwrap().id;
    for i in 0..5 {
        s.append(&id, &turn(&format!("q{i}"), 10)).unwrap();
    }
    let q: Vec<String> = s
        .get(&id)
        .unwrap()
        .turns
        .into_iter()
        .map(|t| t.question)
        .collect();
    assert_eq!(q, ["q2", "q3", "q4"]);
    // A large turn pushes the others out by bytes; the newest stays
    // even alone over the limit.
    s.append(&id, &turn("big", 800)).unwrap();
    let q: Vec<String> = s
        .get(&id)
        .unwrap()
        .turns
        .into_iter()
        .map(|t| t.question)
        .collect();
    assert_eq!(q, ["q4", "big"]);
    s.append(&id, &turn("huge", 5_000)).unwrap();
    let q: Vec<String> = s
        .get(&id)
        .unwrap()
        .turns
        .into_iter()
        .map(|t| t.question)
        .collect();
    assert_eq!(q, ["huge"]);
}

#[test]
fn a_huge_ask_leaves_a_bounded_turn() {
    let mut report: RunReport = serde_json::from_value(serde_json::json!({
        "question": "q".repeat(1_000_000), "answer": null, "confidence": 0.0,
        "level": "escalate", "decision": "decline", "escalation": null,
        "plan": {"by": "default"}, "recovered": false, "decided_by": null, "steps": []
    }))
    .unwrap();
    report.rewrite = Some(crate::followup::Rewrite {
        question: "ñ".repeat(1_000_000),
        by: crate::followup::RewriteBy::Rule,
    });
    let turn = Turn::from_report(&report);
    assert_eq!(turn.question.chars().count(), MAX_TURN_TEXT_CHARS);
    assert_eq!(
        turn.standalone.unwrap().chars().count(),
        MAX_TURN_TEXT_CHARS
    );
}

#[test]
fn sessions_expire_and_their_number_is_bounded() {
    let limits = SessionsConfig {
        ttl_seconds: 0.2,
        max_sessions: 2,
        ..SessionsConfig::default()
    };
    let (_dir, s) = store(limits);
    let a = s.create().unwrap().id;
    s.create().unwrap();
    assert!(matches!(s.create(), Err(SessionError::TooMany { max: 2 })));
    std::thread::sleep(Duration::from_millis(300));
    assert!(matches!(s.get(&a), Err(SessionError::NotFound { .. })));
    assert!(matches!(
        s.append(&a, &turn("late", 1)),
        Err(SessionError::NotFound { .. })
    ));
    // Expired sessions no longer count.
    s.create().unwrap();
}

#[test]
fn a_parked_run_is_taken_back_once_and_expires() {
    let (_dir, s) = store(SessionsConfig::default());
    let id = s.park_run(&json_state(), 60.0).unwrap();
    assert!(id.starts_with(RUN_PREFIX), "{id}");
    let back: serde_json::Value = s.take_run(&id, |_: &serde_json::Value| true).unwrap();
    assert_eq!(back, json_state());
    assert!(matches!(
        s.take_run::<serde_json::Value>(&id, |_| true),
        Err(SessionError::RunNotFound { .. })
    ));
    let id = s.park_run(&json_state(), 0.1).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert!(matches!(
        s.take_run::<serde_json::Value>(&id, |_| true),
        Err(SessionError::RunNotFound { .. })
    ));
    for bad in ["", "run_", "run_XYZ", "../../etc/passwd"] {
        assert!(matches!(
            s.take_run::<serde_json::Value>(bad, |_| true),
            Err(SessionError::RunNotFound { .. })
        ));
    }
}

fn json_state() -> serde_json::Value {
    serde_json::json!({"messages": ["a", "b"], "n": 1})
}

#[test]
fn hostile_ids_are_refused_before_any_query() {
    let (_dir, s) = store(SessionsConfig::default());
    let long = "ses_".to_string() + &"a".repeat(10_000);
    for id in [
        "",
        "ses_",
        "' OR 1=1 --",
        "ses_zz",
        long.as_str(),
        "ses_\u{0}\n",
    ] {
        let e = s.get(id).unwrap_err();
        assert!(matches!(e, SessionError::NotFound { .. }), "{id:?}");
        assert!(e.to_string().len() < 200, "{e}");
        assert!(!e.to_string().contains('\n'));
    }
}

#[test]
fn a_version_3_file_keeps_its_sessions_and_waiting_runs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(SESSIONS_FILE);
    let future = now_ms() + 60_000;
    {
        let old = rusqlite::Connection::open(&path).unwrap();
        old.execute_batch(
            "CREATE TABLE sessions (id TEXT PRIMARY KEY, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, expires_at INTEGER NOT NULL);
             CREATE TABLE turns (session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE, n INTEGER NOT NULL, bytes INTEGER NOT NULL, turn TEXT NOT NULL, PRIMARY KEY (session_id, n));
             CREATE TABLE runs (id TEXT PRIMARY KEY, created_at INTEGER NOT NULL, expires_at INTEGER NOT NULL, state TEXT NOT NULL);
             CREATE INDEX runs_expiry ON runs(expires_at);
             CREATE TABLE session_owners (session_id TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE, owner TEXT NOT NULL);
             PRAGMA user_version = 3;",
        )
        .unwrap();
        old.execute(
            "INSERT INTO runs VALUES ('run_0123456789abcdef0123456789abcdef', 0, ?1, '{\"n\":1}')",
            [future],
        )
        .unwrap();
        old.execute(
            "INSERT INTO sessions VALUES ('ses_0123456789abcdef0123456789abcdef', 0, 0, ?1)",
            [future],
        )
        .unwrap();
    }
    let s = SessionStore::open(&config(dir.path(), SessionsConfig::default())).unwrap();
    let back: serde_json::Value = s
        .take_run("run_0123456789abcdef0123456789abcdef", |_| true)
        .unwrap();
    assert_eq!(back["n"], 1);
    s.get("ses_0123456789abcdef0123456789abcdef").unwrap();
    // Reopening (at version 4 now) runs nothing again.
    drop(s);
    let s = SessionStore::open(&config(dir.path(), SessionsConfig::default())).unwrap();
    s.park_run(&json_state(), 60.0).unwrap();
}
