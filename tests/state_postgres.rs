//! The review queue on PostgreSQL (`storage.state: postgres`), as several
//! servers share it: a real PostgreSQL server (Debian's package) started
//! for each test, and two `ReviewQueue`s opened on it, each with its own
//! pool and data folder, standing for two `grace serve`.

use crate::support::common;
use crate::support::free_port;
use crate::support::postgres_server;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use grace::config::{Config, StateBackend};
use grace::exec::HumanReply;
use grace::review::{
    Access, ListFilter, NewEscalation, ReviewAnswer, ReviewError, ReviewQueue, Reviewer, Status,
    Viewer,
};
use postgres_server::PostgresServer;

/// One server's configuration: its own data folder, the shared database.
/// Each call gets another pool size, so that each "server" in this
/// process gets its own pools and listeners, as separate servers do (a
/// process shares one pool per server, schema, store and settings).
fn server_config(pg: &PostgresServer, dir: &std::path::Path) -> Config {
    static SERVERS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = SERVERS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut config = Config::default();
    config.storage.data_dir = dir.to_path_buf();
    config.storage.state = StateBackend::Postgres;
    config.storage.postgres.url = pg.url();
    config.storage.postgres.pool_size = 8 + n % 32;
    config
}

/// Puts `question` in `queue` as an escalated run.
fn put(
    queue: &ReviewQueue,
    question: &str,
    allowed: Option<Vec<String>>,
    timeout: Option<Duration>,
    vector: Option<&[f32]>,
) -> grace::review::Escalation {
    let run = common::escalated(question);
    queue
        .escalate(NewEscalation {
            report: &run,
            collection: "grace",
            asker: "someone",
            allowed,
            timeout,
            vector,
        })
        .unwrap()
}

fn escalate(queue: &ReviewQueue, question: &str, allowed: Option<Vec<String>>) -> i64 {
    put(queue, question, allowed, None, None).id
}

fn text(t: &str) -> ReviewAnswer {
    ReviewAnswer {
        reply: HumanReply::Text(t.into()),
        sources: Vec::new(),
        confidence: None,
        verdict: None,
    }
}

fn register(queue: &ReviewQueue, id: &str) {
    queue
        .register_reviewer(&Reviewer {
            id: id.into(),
            name: id.to_uppercase(),
            description: String::new(),
        })
        .unwrap();
}

#[test]
fn two_servers_and_twenty_reviewers_claim_and_answer_each_of_1000_escalations_once() {
    let pg = PostgresServer::start();
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let servers: Vec<Arc<ReviewQueue>> = dirs
        .iter()
        .map(|d| Arc::new(ReviewQueue::open(&server_config(&pg, d.path())).unwrap()))
        .collect();
    let reviewers: Vec<String> = (0..20).map(|i| format!("reviewer-{i:02}")).collect();
    for r in &reviewers {
        register(&servers[0], r);
    }
    const TOTAL: usize = 1_000;
    // Askers on both servers.
    std::thread::scope(|s| {
        for (n, server) in servers.iter().enumerate() {
            s.spawn(move || {
                for i in (n..TOTAL).step_by(2) {
                    escalate(server, &format!("question {i}?"), None);
                }
            });
        }
    });
    // Twenty reviewers, half on each server, each taking what the list
    // shows and racing the others for it.
    let won: Vec<Vec<i64>> = std::thread::scope(|s| {
        let handles: Vec<_> = reviewers
            .iter()
            .enumerate()
            .map(|(n, reviewer)| {
                let server = Arc::clone(&servers[n % 2]);
                s.spawn(move || {
                    let mut won = Vec::new();
                    loop {
                        let page = server
                            .list_page(
                                Viewer::Reviewer(reviewer),
                                &ListFilter {
                                    status: Some(Status::Pending),
                                    limit: Some(40),
                                    ..ListFilter::default()
                                },
                            )
                            .unwrap();
                        if page.is_empty() {
                            return won;
                        }
                        // Reviewers start at different places in the page,
                        // and many still collide.
                        let e = &page[n % page.len()];
                        match server.claim(e.id, reviewer) {
                            Ok(_) => {
                                server
                                    .answer(e.id, reviewer, &text(&format!("answer to #{}", e.id)))
                                    .unwrap();
                                won.push(e.id);
                            }
                            Err(ReviewError::Conflict { .. }) => {}
                            Err(other) => panic!("{reviewer}: {other}"),
                        }
                    }
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut by_id: BTreeMap<i64, usize> = BTreeMap::new();
    for (n, ids) in won.iter().enumerate() {
        for id in ids {
            *by_id.entry(*id).or_default() += 1;
            // The winner is the one who answered, as either server reads it.
            let e = servers[(n + 1) % 2].get(*id, Viewer::Admin).unwrap();
            assert_eq!(e.status, Status::Answered);
            assert_eq!(e.claimed_by.as_deref(), Some(reviewers[n].as_str()));
        }
    }
    assert_eq!(by_id.len(), TOTAL, "every escalation claimed");
    assert!(by_id.values().all(|&n| n == 1), "each claimed once");
    // The audit log agrees: one claim and one answer each.
    for id in by_id.keys().step_by(37) {
        let log = servers[0].log(*id, Viewer::Admin).unwrap();
        let count = |a: &str| log.iter().filter(|e| e.action == a).count();
        assert_eq!(
            (count("claimed"), count("answered")),
            (1, 1),
            "#{id}: {log:?}"
        );
    }
    let counts = servers[1].counts().unwrap();
    let count = |s: Status| counts.iter().find(|(c, _)| *c == s).map_or(0, |(_, n)| *n);
    assert_eq!(count(Status::Answered), TOTAL as u64);
    assert_eq!(count(Status::Pending) + count(Status::Claimed), 0);
    // More than one reviewer did the work.
    assert!(
        won.iter().filter(|w| !w.is_empty()).count() > 10,
        "{:?}",
        won.iter().map(Vec::len).collect::<Vec<_>>()
    );
}

#[test]
fn an_asker_waiting_on_one_server_wakes_on_an_answer_given_on_another() {
    let pg = PostgresServer::start();
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let asker_side = Arc::new(ReviewQueue::open(&server_config(&pg, a.path())).unwrap());
    let reviewer_side = ReviewQueue::open(&server_config(&pg, b.path())).unwrap();
    register(&reviewer_side, "alice");
    let id = escalate(&asker_side, "Can I deploy on Fridays?", None);
    // The asker's handle is the same on every server.
    let handle = asker_side.asker_handle(id);
    assert_eq!(reviewer_side.asker_handle(id), handle);
    reviewer_side.check_asker_handle(id, &handle).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let waiting = grace::review::EscalationHandle::new(Arc::clone(&asker_side), id);
    let started = Instant::now();
    let waiter = runtime.spawn(async move { waiting.settled(Duration::from_secs(30)).await });
    // Answered just after the waiter's first look again (it looks every
    // second for what another process wrote): without NOTIFY it would
    // see the answer only at its next look, ~0.85 s later.
    std::thread::sleep(Duration::from_millis(1_150).saturating_sub(started.elapsed()));
    reviewer_side.claim(id, "alice").unwrap();
    let answered_at = Instant::now();
    reviewer_side
        .answer(id, "alice", &text("Not on Fridays."))
        .unwrap();
    let e = runtime.block_on(waiter).unwrap();
    let woke_after = answered_at.elapsed();
    let e = e.unwrap();
    assert_eq!(e.status, Status::Answered);
    assert!(
        woke_after < Duration::from_millis(400),
        "woke {woke_after:?} after the answer"
    );
}

#[test]
fn every_query_of_the_queue_speaks_postgresql() {
    let pg = PostgresServer::start();
    let dir = tempfile::tempdir().unwrap();
    let config = server_config(&pg, dir.path());
    let queue = ReviewQueue::open(&config).unwrap();
    for r in ["alice", "bob"] {
        register(&queue, r);
    }
    // Registration over HTTP never overwrites.
    assert!(matches!(
        queue.register_new_reviewer(&Reviewer {
            id: "alice".into(),
            name: "A".into(),
            description: String::new()
        }),
        Err(ReviewError::AlreadyRegistered(_))
    ));
    // A restricted escalation: only the allowed reviewer lists it (the
    // JSON list is searched in SQL).
    let restricted = escalate(&queue, "Salary bands?", Some(vec!["bob".into()]));
    let public = escalate(&queue, "Office hours?", None);
    let ids = |viewer| -> Vec<i64> {
        queue
            .list(viewer, None)
            .unwrap()
            .iter()
            .map(|e| e.id)
            .collect()
    };
    assert_eq!(ids(Viewer::Reviewer("alice")), vec![public]);
    assert_eq!(ids(Viewer::Reviewer("bob")), vec![public, restricted]);
    assert!(matches!(
        queue.get(restricted, Viewer::Reviewer("alice")),
        Err(ReviewError::NotFound { .. })
    ));
    // Paging.
    let page = queue
        .list_page(
            Viewer::Admin,
            &ListFilter {
                before: Some(public),
                limit: Some(1),
                ..ListFilter::default()
            },
        )
        .unwrap();
    assert_eq!(
        page.iter().map(|e| e.id).collect::<Vec<_>>(),
        vec![restricted]
    );
    // Claim, release, claim, answer; reject; the log; the typical wait.
    queue.claim(public, "alice").unwrap();
    assert!(matches!(
        queue.claim(public, "bob"),
        Err(ReviewError::Conflict { .. })
    ));
    queue.release(public, "alice").unwrap();
    queue.claim(public, "bob").unwrap();
    queue.answer(public, "bob", &text("Nine to five.")).unwrap();
    queue.claim(restricted, "bob").unwrap();
    queue
        .reject(restricted, "bob", "not for this queue")
        .unwrap();
    let actions: Vec<String> = queue
        .log(public, Viewer::Admin)
        .unwrap()
        .into_iter()
        .map(|e| e.action)
        .collect();
    assert_eq!(
        actions,
        ["escalated", "claimed", "released", "claimed", "answered"]
    );
    assert!(queue.typical_wait().unwrap().is_some());
    // Near repeats join their lead (the run's JSON is read in SQL).
    let vector: Vec<f32> = (0..384).map(|i| if i == 3 { 1.0 } else { 0.0 }).collect();
    let new = |question: &str| put(&queue, question, None, None, Some(&vector));
    let lead = new("How do I reset my badge?");
    let joined = new("How do I reset my badge?");
    assert_eq!(joined.joined_to, Some(lead.id));
    assert_eq!(
        queue.get(lead.id, Viewer::Admin).unwrap().also_asked.len(),
        1
    );
    queue.claim(lead.id, "alice").unwrap();
    queue
        .answer(lead.id, "alice", &text("At the front desk."))
        .unwrap();
    assert_eq!(
        queue.get(joined.id, Viewer::Asker).unwrap().status,
        Status::Answered
    );
    // A NUL in a question (PostgreSQL's text cannot hold one) is stored
    // as U+FFFD, and its run's JSON (`\u0000`) does not stop the next
    // escalation from being compared with it.
    let nul = new("Where is the badge\0 office?");
    assert_eq!(nul.question, "Where is the badge\u{FFFD} office?");
    new("Something else entirely?");
    // Expiry settles on the next write.
    let expiring = put(
        &queue,
        "Soon expired?",
        None,
        Some(Duration::from_millis(50)),
        None,
    )
    .id;
    std::thread::sleep(Duration::from_millis(120));
    assert_eq!(
        queue.get(expiring, Viewer::Asker).unwrap().status,
        Status::Expired
    );
    // Messages, their status, context and tokens.
    let m = queue
        .send_message("alice", Some("bob"), "hi", "a note")
        .unwrap();
    assert!(
        queue
            .messages("bob", None)
            .unwrap()
            .iter()
            .any(|x| x.id == m)
    );
    queue.mark_as_read(m, "bob").unwrap();
    queue.archive_message(m, "bob").unwrap();
    assert!(queue.mark_as_read(m, "bob").is_err(), "no going back");
    queue
        .set_context(
            "runbook",
            &serde_json::json!({"v": 1}),
            "alice",
            &Access::Restricted(vec!["bob".into()]),
        )
        .unwrap();
    assert_eq!(
        queue.get_context("runbook", "bob").unwrap().value,
        serde_json::json!({"v": 1})
    );
    assert!(queue.get_context("runbook", "carol").is_err());
    let token = queue.issue_token("alice").unwrap();
    assert_eq!(
        queue.reviewer_for_token(&token).unwrap().as_deref(),
        Some("alice")
    );
    assert!(queue.has_token("alice").unwrap());
    assert_eq!(queue.reviewer_for_token("grt_wrong").unwrap(), None);
    // What the queue says it is.
    assert!(
        queue.place().contains("PostgreSQL") && queue.sqlite_path().is_none(),
        "{}",
        queue.place()
    );
}

#[test]
fn a_database_from_a_newer_grace_is_refused_not_rewritten() {
    let pg = PostgresServer::start();
    let dir = tempfile::tempdir().unwrap();
    let config = server_config(&pg, dir.path());
    let psql = |sql: &str| pg.psql(sql);
    // A damaged row is an error naming the database, not a panic.
    let queue = ReviewQueue::open(&config).unwrap();
    let id = escalate(&queue, "Damaged?", None);
    psql(&format!(
        "UPDATE grace.escalations SET run = '{{not json' WHERE id = {id}"
    ));
    let e = queue.get(id, Viewer::Admin).unwrap_err().to_string();
    assert!(
        e.contains("is damaged")
            && e.contains("PostgreSQL")
            && e.contains(&format!("escalation {id} run")),
        "{e}"
    );
    drop(queue);
    psql("UPDATE grace.grace_schema_versions SET version = 99 WHERE store = 'review'");
    let e = ReviewQueue::open(&config)
        .err()
        .expect("refused")
        .to_string();
    assert!(
        e.contains("schema version 99 is newer than this GRACE understands (4)"),
        "{e}"
    );
    assert!(e.contains("upgrade grace"), "{e}");
}

#[test]
fn knowledge_bases_keep_their_queues_in_their_own_schemas() {
    let pg = PostgresServer::start();
    let dir = tempfile::tempdir().unwrap();
    let yaml = format!(
        "storage:\n  data_dir: {}\n  state: postgres\n  postgres:\n    url: {}\nkbs:\n  hr-docs: {{}}\n",
        dir.path().display(),
        pg.url()
    );
    let file = dir.path().join("grace_config.yml");
    std::fs::write(&file, yaml).unwrap();
    let config = Config::load_with_env(Some(&file), &[]).unwrap();
    let hr = config.for_kb("hr-docs").unwrap().unwrap();
    assert_eq!(hr.storage.postgres.schema, "grace_hr_docs");
    let default_queue = ReviewQueue::open(&config).unwrap();
    let hr_queue = ReviewQueue::open(&hr).unwrap();
    escalate(&default_queue, "A default question?", None);
    assert_eq!(default_queue.list(Viewer::Admin, None).unwrap().len(), 1);
    assert!(hr_queue.list(Viewer::Admin, None).unwrap().is_empty());
    // Dropping a knowledge base drops its schema: a new one of the same
    // name starts empty, and the old reviewer's token and the old asker's
    // handle are worth nothing there.
    register(&hr_queue, "rita");
    let token = hr_queue.issue_token("rita").unwrap();
    let id = escalate(&hr_queue, "An HR question?", None);
    let handle = hr_queue.asker_handle(id);
    drop(hr_queue);
    grace::service::kbs::drop_kb(&hr).unwrap();
    let again = ReviewQueue::open(&hr).unwrap();
    assert!(again.list(Viewer::Admin, None).unwrap().is_empty());
    assert_eq!(again.reviewer_for_token(&token).unwrap(), None);
    escalate(&again, "A new HR question?", None);
    assert!(again.check_asker_handle(id, &handle).is_err());
    // The default knowledge base kept its own.
    assert_eq!(default_queue.list(Viewer::Admin, None).unwrap().len(), 1);
}

/// `grace review list` in `dir` on `storage.state: postgres` at `url`,
/// the password variable set to `password` (or unset).
fn review_list(dir: &std::path::Path, url: &str, password: Option<&str>) -> std::process::Output {
    let mut c = common::grace_cmd(dir, &["review", "list"]);
    c.env("GRACE_STORAGE__STATE", "postgres")
        .env("GRACE_STORAGE__POSTGRES__URL", url)
        .env("GRACE_STORAGE__POSTGRES__CONNECT_TIMEOUT_SECONDS", "2")
        .env(
            "GRACE_STORAGE__POSTGRES__PASSWORD_ENV",
            "GRACE_TEST_PG_PASSWORD",
        )
        .env_remove("GRACE_TEST_PG_PASSWORD");
    if let Some(p) = password {
        c.env("GRACE_TEST_PG_PASSWORD", p);
    }
    c.output().unwrap()
}

#[test]
fn a_wrong_url_or_password_is_a_clear_error() {
    let pg = PostgresServer::start();
    let dir = tempfile::tempdir().unwrap();
    let right = review_list(
        dir.path(),
        &pg.secure_url(),
        Some(postgres_server::PASSWORD),
    );
    assert!(right.status.success(), "{}", common::output_text(&right));
    let wrong = review_list(dir.path(), &pg.secure_url(), Some("not-the-password"));
    let text = common::output_text(&wrong);
    assert!(!wrong.status.success());
    assert!(
        text.contains("password authentication failed for user \"secure\""),
        "{text}"
    );
    assert!(text.contains("storage.postgres.password_env"), "{text}");
    assert!(
        !text.contains("not-the-password"),
        "the password is never shown: {text}"
    );
    // No password at all.
    let none = review_list(dir.path(), &pg.secure_url(), None);
    assert!(!none.status.success());
    // A password in the file's URL is refused before any connection.
    let inline = format!(
        "postgres://secure:{}@127.0.0.1:{}/postgres",
        postgres_server::PASSWORD,
        pg.port()
    );
    let text = common::output_text(&review_list(dir.path(), &inline, None));
    assert!(
        text.contains("storage.postgres.url") && text.contains("holds a password"),
        "{text}"
    );
    assert!(!text.contains(postgres_server::PASSWORD), "{text}");
    // Nobody listening there.
    let closed = format!("postgres://grace@127.0.0.1:{}/postgres", free_port());
    let out = review_list(dir.path(), &closed, None);
    let text = common::output_text(&out);
    assert!(!out.status.success());
    assert!(
        text.contains("cannot connect") && text.contains("127.0.0.1"),
        "{text}"
    );
    // Not a PostgreSQL URL.
    let text = common::output_text(&review_list(dir.path(), "mysql://grace@127.0.0.1/db", None));
    assert!(
        text.contains("storage.postgres.url") && text.contains("postgres://"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn postgresql_down_mid_request_is_503_with_retry_after_and_the_server_recovers() {
    let mut pg = PostgresServer::start();
    let dir = tempfile::tempdir().unwrap();
    let mut config = common::config(dir.path());
    config.storage.state = StateBackend::Postgres;
    config.storage.postgres.url = pg.url();
    config.storage.postgres.connect_timeout_seconds = 1.0;
    let grace = grace::Grace::builder(config)
        .embedder(common::embedder())
        .build()
        .unwrap();
    let queue = grace.escalations().clone();
    let token = common::reviewer(&queue, "alice", "alice");
    let server = common::serve(grace).await;
    let http = reqwest::Client::new();
    let url = format!("{}/v1/review/escalations", server.base);
    let get = || http.get(&url).bearer_auth(&token).send();
    assert_eq!(get().await.unwrap().status(), 200);
    pg.stop();
    let down = get().await.unwrap();
    assert_eq!(down.status(), 503);
    assert_eq!(down.headers()["retry-after"], "1");
    let body: serde_json::Value = down.json().await.unwrap();
    assert_eq!(body["error"]["type"], "busy", "{body}");
    // The message names no server detail.
    assert!(!body.to_string().contains("127.0.0.1"), "{body}");
    pg.spawn();
    // The same server, not restarted, answers again.
    let started = Instant::now();
    loop {
        let status = get().await.unwrap().status();
        if status == 200 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "still {status}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    server.stop().await;
}

/// Every store besides the review queue, as two servers share it: what
/// one server writes, the other reads and continues (an asker's session,
/// a key, a rating, a run-time tool, a tool's figures), with each store's
/// own rules (limits, ownership, one rating per asker) kept across them.
#[test]
fn sessions_keys_feedback_and_tools_written_on_one_server_work_on_the_other() {
    use grace::auth::Principals;
    use grace::feedback::{Asker, FeedbackStore, Rating, RecordedRun, Vote};
    use grace::session::{SessionError, SessionStore, Turn};
    use grace::tools::stats::{CallOutcome, ToolStats};

    let pg = PostgresServer::start();
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let configs: Vec<Config> = dirs
        .iter()
        .map(|d| {
            let mut c = server_config(&pg, d.path());
            c.sessions.max_turns = 3;
            c
        })
        .collect();

    // Sessions: created on one server, continued on the other; the
    // oldest turns go past the limit whichever server appends.
    let sessions: Vec<SessionStore> = configs
        .iter()
        .map(|c| SessionStore::open(c).unwrap())
        .collect();
    let mine = sessions[0].create_for(Some("ann")).unwrap();
    for i in 0..5 {
        let turn = Turn {
            question: format!("q{i}"),
            standalone: None,
            answer: Some(format!("a{i}")),
            sources: vec!["a.md".into()],
            decision: grace::exec::Decision::Answer,
            confidence: 0.9,
        };
        sessions[i % 2].append(&mine.id, &turn).unwrap();
    }
    let got = sessions[1].get(&mine.id).unwrap();
    let questions: Vec<&str> = got.turns.iter().map(|t| t.question.as_str()).collect();
    assert_eq!(questions, ["q2", "q3", "q4"]);
    sessions[1].check_owner(&mine.id, Some("ann")).unwrap();
    assert!(matches!(
        sessions[0].check_owner(&mine.id, Some("bo")),
        Err(SessionError::NotFound { .. })
    ));
    // A run parked on one server is taken back once, on the other.
    let run = sessions[0]
        .park_run(&serde_json::json!({"step": 3}), 60.0)
        .unwrap();
    let back: serde_json::Value = sessions[1].take_run(&run, |_| true).unwrap();
    assert_eq!(back["step"], 3);
    assert!(
        sessions[0]
            .take_run::<serde_json::Value>(&run, |_| true)
            .is_err()
    );
    sessions[0].delete(&mine.id).unwrap();
    assert!(sessions[1].get(&mine.id).is_err());

    // Keys: issued on one server, accepted (and revoked) on the other.
    let principals: Vec<Principals> = configs
        .iter()
        .map(|c| Principals::open(c).unwrap())
        .collect();
    let issued = principals[0].add_key("ann", &["hr".into()]).unwrap();
    let ann = principals[1]
        .principal_for_key(&issued.key)
        .unwrap()
        .unwrap();
    assert_eq!(
        (ann.name.as_str(), ann.groups.as_slice()),
        ("ann", &["hr".to_string()][..])
    );
    principals[0].add_key("bo", &[]).unwrap();
    let names: Vec<String> = principals[1]
        .list()
        .unwrap()
        .into_iter()
        .map(|p| p.name)
        .collect();
    assert_eq!(names, ["ann", "bo"]);
    assert_eq!(principals[1].revoke("ann").unwrap(), 1);
    assert!(
        principals[0]
            .principal_for_key(&issued.key)
            .unwrap()
            .is_none()
    );
    // The knowledge bases' own configurations share the server's principals.
    let mut with_kb = configs[1].clone();
    with_kb.kbs.insert("hr-docs".into(), Default::default());
    let hr = with_kb.for_kb("hr-docs").unwrap().unwrap();
    assert_eq!(hr.storage.postgres.schema, "grace_hr_docs");
    assert_eq!(Principals::open(&hr).unwrap().list().unwrap().len(), 2);

    // Feedback: a run recorded on one server is rated on the other, once
    // per asker; a refit on either reads the label.
    let feedback: Vec<FeedbackStore> = configs
        .iter()
        .map(|c| FeedbackStore::open(c).unwrap())
        .collect();
    let asker = Asker::named("ann").unwrap();
    let recorded = RecordedRun {
        question: "How long are backups kept?".into(),
        standalone: None,
        answer: Some("Thirty days. [1]".into()),
        decision: grace::exec::Decision::Answer,
        confidence: 0.8,
        factors: None,
        weights_version: "logistic:0123456789abcdef".into(),
        collection: "grace".into(),
        sources: vec!["backups.md".into()],
    };
    let id = feedback[0]
        .record_asked(&recorded, &asker, None, Some(&[0.6, 0.8]))
        .unwrap()
        .unwrap();
    let down = Rating {
        vote: Vote::Down,
        reason: None,
        text: None,
    };
    assert!(!feedback[1].rate(&id, &asker, &down).unwrap().replaced);
    assert!(feedback[0].rate(&id, &asker, &down).unwrap().replaced);
    let other = Asker::named("bo").unwrap();
    assert!(feedback[1].rate(&id, &other, &down).is_err());
    assert_eq!(feedback[0].label_count().unwrap(), 1);
    let labelled = feedback[1].labelled().unwrap();
    assert_eq!(labelled.len(), 1);
    assert_eq!(
        labelled[0].rating.as_ref().map(|r| r.vote),
        Some(Vote::Down)
    );
    let history = feedback[0].document_ratings(10).unwrap();
    assert_eq!(history.len(), 1);
    assert_eq!(
        (history[0].source.as_str(), history[0].up),
        ("backups.md", false)
    );
    let unmet = feedback[1]
        .unmet(chrono::Utc::now() - chrono::Duration::hours(1), 10)
        .unwrap();
    assert_eq!(unmet.len(), 1);
    assert_eq!(unmet[0].question, "How long are backups kept?");
    assert!(feedback[1].link_review(&id, 7).unwrap());
    assert_eq!(feedback[0].review_of(&id).unwrap(), Some(7));

    // Run-time tools: saved on one server, listed with their history on
    // the other; tool figures add up across both.
    let tools: Vec<grace::tools::runtime::Store> = configs
        .iter()
        .map(|c| grace::tools::runtime::Store::open(c).unwrap())
        .collect();
    let spec = grace::tools::runtime::ToolSpec {
        name: "word_count".into(),
        description: "Counts words.".into(),
        input_schema: serde_json::json!({"type": "object"}),
        code: "function run(i) { return 1; }".into(),
        examples: Vec::new(),
    };
    tools[0]
        .save(&spec, "verified", 1.0, &[], "cli", 10)
        .unwrap();
    let saved = tools[1]
        .save(&spec, "verified", 1.0, &[], "http", 10)
        .unwrap();
    assert_eq!(saved.version, 2);
    tools[1].refuse("bad name", "mcp", "not a name").unwrap();
    let history = tools[0].history("word_count").unwrap().unwrap();
    assert_eq!(history.versions.len(), 2);
    let actions: Vec<&str> = history.audit.iter().map(|a| a.action.as_str()).collect();
    assert_eq!(actions, ["create", "update"]);
    assert_eq!(tools[0].delete("word_count", "cli").unwrap(), Some(2));
    assert!(tools[1].live().unwrap().is_empty());

    let stats: Vec<ToolStats> = configs
        .iter()
        .map(|c| ToolStats::open(c).unwrap())
        .collect();
    for (i, ms) in [10u64, 20, 30, 40].into_iter().enumerate() {
        let outcome = CallOutcome {
            failure: (i == 3).then_some(grace::tools::ToolErrorKind::Timeout),
            error: (i == 3).then_some("no result within 40 ms"),
            latency: Duration::from_millis(ms),
        };
        stats[i % 2].record("search", &outcome).unwrap();
    }
    stats[1].seen("never_called").unwrap();
    let usage = stats[0].usage("search").unwrap();
    assert_eq!(
        (usage.calls, usage.successes, usage.failures_in_a_row),
        (4, 3, 1)
    );
    let all: Vec<String> = stats[1]
        .all()
        .unwrap()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(all, ["never_called", "search"]);
    let reflection = stats[0].reflect().unwrap();
    assert_eq!(reflection.never_used, ["never_called"]);
    assert_eq!(reflection.patterns.len(), 1);
}

/// What a knowledge base keeps whole (the manifest, the fits) and the
/// audit log, as several servers share them: a manifest written through
/// one server's Qdrant node is the one another reads through its own; a
/// fit kept on one scores the other's runs; both append to one log.
#[test]
fn the_manifest_the_fits_and_the_audit_log_are_shared() {
    use grace::audit::{Action, AuditLog, Record};
    use grace::confidence::calibration::{Calibration, Source};
    use grace::ingest::manifest::{Manifest, ManifestStore};

    let pg = PostgresServer::start();
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let configs: Vec<Config> = dirs
        .iter()
        .enumerate()
        .map(|(n, d)| {
            let mut c = server_config(&pg, d.path());
            c.storage.backend = grace::config::Backend::Qdrant;
            // Each server reaches the cluster through its own node.
            c.qdrant.url = format!("http://127.0.0.1:{}", 6333 + n);
            c
        })
        .collect();

    let manifest = Manifest::new("pipeline-1");
    ManifestStore::open(&configs[0])
        .unwrap()
        .save(&manifest)
        .unwrap();
    let other = ManifestStore::open(&configs[1]).unwrap();
    assert_eq!(other.load().unwrap(), Some(manifest));
    assert!(other.place().contains("manifest/grace") && other.place().contains("PostgreSQL"));
    // Nothing was written in either data folder.
    for d in &dirs {
        assert!(!d.path().join("manifests").exists());
    }
    // With the embedded store each server has its own points, so its own
    // manifest file.
    let mut edge = configs[1].clone();
    edge.storage.backend = grace::config::Backend::Edge;
    assert_eq!(ManifestStore::open(&edge).unwrap().load().unwrap(), None);

    // A fit kept on one server is read on the other.
    let fit = Calibration::stored(&configs[1], Source::Feedback).unwrap();
    assert!(fit.is_none());
    let fare = grace::confidence::fit::Fare::of(&[(0.9, true), (0.2, false)]);
    let calibration = Calibration {
        version: grace::confidence::calibration::VERSION,
        created: "2026-11-29T00:00:00Z".into(),
        fitted_on: grace::confidence::calibration::FittedOn {
            set: "feedback".into(),
            questions: 2,
            questions_sha256: String::new(),
            collection: "grace".into(),
            embedding_model: "minilm".into(),
            generator: "extractive".into(),
            sources: Vec::new(),
        },
        weights: grace::config::Weights {
            bias: -1.25,
            ..Default::default()
        },
        l2: 0.1,
        folds: 5,
        fold_figures: vec![fare.clone()],
        cross_validated: fare.clone(),
        hand_set: fare,
        self_calibration: None,
    };
    let kept = calibration.store(&configs[0], Source::Feedback).unwrap();
    assert!(kept.display().to_string().contains("feedback-calibration"));
    let read = Calibration::stored(&configs[1], Source::Feedback)
        .unwrap()
        .unwrap();
    assert_eq!(read.weights.bias, -1.25);

    // One audit log: both servers append, either reads everything.
    let logs: Vec<AuditLog> = configs.iter().map(|c| AuditLog::open(c).unwrap()).collect();
    for i in 0..10 {
        logs[i % 2]
            .record(&Record::new(&format!("p{i}"), "default", Action::Ask).decision("answer"));
    }
    let all = logs[0].read(&|_| true).unwrap();
    let who: Vec<String> = all.iter().map(|r| r.principal.clone()).collect();
    assert_eq!(who, (0..10).map(|i| format!("p{i}")).collect::<Vec<_>>());
    assert!(!dirs[0].path().join("audit.log").exists());
    // Bounded as the file is: past audit.max_bytes × (keep_files + 1)
    // the oldest go, and no record of the newest is lost.
    let mut small = configs[0].clone();
    small.audit.max_bytes = 2_000;
    small.audit.keep_files = 1;
    let log = AuditLog::open(&small).unwrap();
    for i in 0..300 {
        log.record(&Record::new(&format!("q{i}"), "default", Action::Search));
    }
    let kept = log.read(&|_| true).unwrap();
    let bytes: usize = kept
        .iter()
        .map(|r| serde_json::to_string(r).unwrap().len())
        .sum();
    assert!(bytes <= 4_000 + 64 * 100, "{bytes} bytes kept");
    assert!(kept.len() > 10, "{}", kept.len());
    assert_eq!(kept.last().unwrap().principal, "q299");
}

/// One leader among the servers, and one writer at a time: a lock held
/// by one server is refused to another until it is released, and a
/// waiting writer goes on as soon as it is.
#[test]
fn one_server_leads_and_another_takes_over_when_it_goes() {
    use grace::state::{CAMPAIGN_EVERY, ClusterLock, LEADER};

    let pg = PostgresServer::start();
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let a = server_config(&pg, dirs[0].path());
    let b = server_config(&pg, dirs[1].path());
    let leader = ClusterLock::try_take(&a, LEADER).unwrap().expect("free");
    assert!(leader.held());
    assert!(ClusterLock::try_take(&b, LEADER).unwrap().is_none());
    // Another knowledge base has a leader of its own.
    let mut with_kb = b.clone();
    with_kb.kbs.insert("hr".into(), Default::default());
    let hr = with_kb.for_kb("hr").unwrap().unwrap();
    assert!(ClusterLock::try_take(&hr, LEADER).unwrap().is_some());
    // The leader goes: the next campaign wins.
    drop(leader);
    let started = Instant::now();
    let taken = loop {
        if let Some(lock) = ClusterLock::try_take(&b, LEADER).unwrap() {
            break lock;
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "never taken over"
        );
        std::thread::sleep(CAMPAIGN_EVERY / 10);
    };
    assert!(taken.held());

    // A writer waits for the other server's ingest, then goes on.
    let first = ClusterLock::writer(&a).unwrap();
    let waited = std::thread::spawn(move || {
        let started = Instant::now();
        let _second = ClusterLock::writer(&b).unwrap();
        started.elapsed()
    });
    std::thread::sleep(Duration::from_millis(600));
    drop(first);
    let waited = waited.join().unwrap();
    assert!(waited >= Duration::from_millis(500), "{waited:?}");
    assert!(waited < Duration::from_secs(3), "{waited:?}");
}

/// What callers send the newly shared stores, on PostgreSQL: forged and
/// huge ids and keys are refused before any query, a NUL and non-ASCII in
/// a turn are kept (PostgreSQL's text cannot hold a NUL: it reads back as
/// U+FFFD), and a manifest row damaged by hand is an error naming the row,
/// not a panic and not an empty knowledge base.
#[test]
fn hostile_ids_keys_texts_and_a_damaged_manifest_row_on_postgresql() {
    use grace::auth::Principals;
    use grace::ingest::manifest::ManifestStore;
    use grace::session::{SessionError, SessionStore, Turn};

    let pg = PostgresServer::start();
    let dir = tempfile::tempdir().unwrap();
    let mut config = server_config(&pg, dir.path());
    config.storage.backend = grace::config::Backend::Qdrant;
    let sessions = SessionStore::open(&config).unwrap();
    let huge = format!("ses_{}", "a".repeat(100_000));
    for id in [
        "",
        "ses_",
        "' OR 1=1 --",
        "ses_\u{0}x",
        huge.as_str(),
        "ses_ünïcödé",
    ] {
        let e = sessions.get(id).unwrap_err();
        assert!(matches!(e, SessionError::NotFound { .. }), "{id:?}");
        assert!(e.to_string().len() < 200, "{e}");
    }
    let session = sessions.create().unwrap();
    let question = format!("日本語 ça\u{0}va {}", "é".repeat(7_000));
    let turn = Turn {
        question: question.clone(),
        standalone: None,
        answer: Some("x\u{0}y".into()),
        sources: vec!["/kb/ünï.md".into()],
        decision: grace::exec::Decision::Answer,
        confidence: f64::MAX,
    };
    sessions.append(&session.id, &turn).unwrap();
    let back = &sessions.get(&session.id).unwrap().turns[0];
    assert_eq!(back.question, question.replace('\u{0}', "\u{FFFD}"));
    assert_eq!(back.sources, ["/kb/ünï.md"]);

    let principals = Principals::open(&config).unwrap();
    principals.add_key("ann", &["hr".into()]).unwrap();
    let forged = format!("gk_{}", "0".repeat(64));
    let huge_key = format!("gk_{}", "f".repeat(10 << 20));
    for token in [forged.as_str(), huge_key.as_str(), "gk_\u{0}", "gk_ünï", ""] {
        assert!(principals.principal_for_key(token).unwrap().is_none());
    }
    assert!(
        principals
            .add_key("ann'; DROP TABLE keys; --", &[])
            .is_err()
    );
    assert_eq!(principals.list().unwrap().len(), 1);

    let manifest = ManifestStore::open(&config).unwrap();
    manifest
        .save(&grace::ingest::manifest::Manifest::new("p"))
        .unwrap();
    pg.psql("UPDATE grace.documents SET body = '\\x7b6e6f74' WHERE name = 'manifest/grace'");
    let e = manifest.load().unwrap_err().to_string();
    assert!(
        e.contains("manifest/grace") && e.contains("PostgreSQL"),
        "{e}"
    );
}
