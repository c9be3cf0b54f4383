//! Human review end to end: the `grace` commands as an asker and reviewers
//! run them, a killed asker, replanning on feedback, and reviewed answers
//! promoted to knowledge and retracted — all on the real store and model.

use crate::support::common;

use std::path::Path;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use grace::exec::{Decision, Executor, HumanReply};
use grace::review::{NewEscalation, ReviewAnswer, ReviewQueue, Reviewer, Status, Viewer};
use grace::tools::ToolRegistry;

use common::{grace, grace_cmd, output_text as text};

/// A question the sample knowledge base does not answer, which GRACE
/// escalates (its draft is a guess from nearby passages).
const UNANSWERED: &str = "Can I deploy on Fridays?";

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", text(o)))
}

fn ingest_sample(dir: &Path) {
    let kb = common::repo().join("examples/kb");
    let out = grace(dir, &["ingest", kb.to_str().unwrap(), "-q"]);
    assert!(out.status.success(), "{}", text(&out));
}

fn register(dir: &Path, id: &str) {
    let out = grace(
        dir,
        &["review", "register", id, "--name", &id.to_uppercase()],
    );
    assert!(out.status.success(), "{}", text(&out));
}

/// The queue the commands in `dir` use (`.grace/review.sqlite3`).
fn queue(dir: &Path) -> ReviewQueue {
    let mut config = grace::Config::default();
    config.storage.data_dir = dir.join(".grace");
    ReviewQueue::open(&config).unwrap()
}

#[test]
fn an_escalated_ask_is_queued_answered_by_a_reviewer_and_delivered() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ingest_sample(d);
    let out = grace(d, &["ask", UNANSWERED, "--json"]);
    assert_eq!(out.status.code(), Some(4), "{}", text(&out));
    let asked = json(&out);
    assert_eq!(asked["decision"], "escalate", "{asked}");
    let id = asked["review_id"].as_i64().expect("the escalation's id");
    let id_s = id.to_string();

    // Nothing to deliver yet: exit 4 and the status.
    let out = grace(d, &["answer", &id_s]);
    assert_eq!(out.status.code(), Some(4));
    assert!(text(&out).contains("is pending"), "{}", text(&out));

    register(d, "alice");
    register(d, "bob");
    let out = grace(d, &["review", "list", "--json"]);
    let list = json(&out);
    assert_eq!(list[0]["id"], id);
    assert_eq!(list[0]["status"], "pending");
    let out = grace(d, &["review", "--as", "alice", "show", &id_s]);
    let shown = text(&out);
    assert!(
        shown.contains("Why: confidence")
            && shown.contains("Sources GRACE found")
            && shown.contains("Options:"),
        "{shown}"
    );

    // Claims: reviewer identity required, one holder at a time.
    let out = grace(d, &["review", "claim", &id_s]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("--as"), "{}", text(&out));
    let out = grace(d, &["review", "--as", "alice", "claim", &id_s]);
    assert!(out.status.success(), "{}", text(&out));
    let out = grace(
        d,
        &["review", "--as", "bob", "answer", &id_s, "--text", "Mine."],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("claimed by alice"), "{}", text(&out));
    let out = grace(d, &["review", "--as", "mallory", "claim", &id_s]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));

    let out = grace(
        d,
        &[
            "review",
            "--as",
            "alice",
            "answer",
            &id_s,
            "--text",
            "Only with an approved change request from the release team.",
            "--source",
            "README.md#Freeze",
            "--confidence",
            "0.9",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));

    let out = grace(d, &["answer", &id_s, "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let got = json(&out);
    assert_eq!(got["status"], "answered");
    let report = &got["resolution"]["report"];
    assert_eq!(report["decided_by"], "reviewer:alice");
    assert_eq!(report["confidence"], 0.9);
    assert_eq!(
        report["answer"]["text"],
        "Only with an approved change request from the release team."
    );
    assert_eq!(report["answer"]["citations"][0]["section"], "Freeze");

    let out = grace(d, &["review", "log", &id_s, "--json"]);
    let log = json(&out);
    let actions: Vec<&str> = log
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["action"].as_str().unwrap())
        .collect();
    assert_eq!(actions, ["escalated", "claimed", "answered"]);
    assert_eq!(log[1]["actor"], "alice");

    // A settled escalation refuses more answers.
    let out = grace(
        d,
        &["review", "--as", "alice", "answer", &id_s, "--option", "1"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).contains("answered and can no longer be reviewed"),
        "{}",
        text(&out)
    );
    // New escalations reached the reviewers as messages.
    let out = grace(d, &["review", "--as", "bob", "messages", "--json"]);
    assert!(
        json(&out)[0]["subject"]
            .as_str()
            .unwrap()
            .contains(&format!("#{id}"))
    );
}

/// A follow-up escalated in a conversation reaches its reviewer with the
/// conversation and the question as GRACE read it; a question asked alone
/// carries none.
#[test]
fn a_reviewer_sees_the_conversation_and_the_question_as_read() {
    use std::io::Write as _;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ingest_sample(d);
    let mut chat = grace_cmd(d, &["chat"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    chat.stdin
        .take()
        .unwrap()
        .write_all(b"How do I roll back a deployment?\nand on staging?\n")
        .unwrap();
    let out = chat.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let open = queue(d).list(Viewer::Admin, Some(Status::Pending)).unwrap();
    let e = open
        .iter()
        .find(|e| e.question == "and on staging?")
        .unwrap_or_else(|| panic!("the follow-up was not escalated:\n{}", text(&out)));
    assert_eq!(e.run.conversation.len(), 1, "{:?}", e.run.conversation);
    assert_eq!(
        e.run.conversation[0].question,
        "How do I roll back a deployment?"
    );
    assert!(e.run.conversation[0].answer.is_some());
    let read_as = &e.run.rewrite.as_ref().expect("a rewrite").question;
    assert!(read_as.contains("roll back"), "{read_as}");

    // Asked alone: no conversation.
    let out = grace(d, &["--json", "ask", UNANSWERED]);
    let id = json(&out)["review_id"].as_i64().unwrap();
    let alone = queue(d).get(id, Viewer::Admin).unwrap();
    assert!(alone.run.conversation.is_empty());
}

/// The asker is killed (kill -9) while waiting; the escalation is in the
/// database, a reviewer answers it, and `grace answer ID` returns it.
#[test]
fn an_escalation_survives_its_asker_being_killed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ingest_sample(d);
    register(d, "alice");
    let mut asker = grace_cmd(d, &["ask", UNANSWERED, "--wait", "--timeout", "120"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let q = queue(d);
    let started = Instant::now();
    let id = loop {
        if let Some(e) = q
            .list(Viewer::Asker, Some(Status::Pending))
            .unwrap()
            .first()
        {
            break e.id;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "never escalated"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    asker.kill().unwrap(); // SIGKILL
    asker.wait().unwrap();
    drop(q);

    let out = grace(
        d,
        &[
            "review",
            "--as",
            "alice",
            "answer",
            &id.to_string(),
            "--text",
            "Not on Fridays.",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let out = grace(d, &["answer", &id.to_string()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let shown = text(&out);
    assert!(
        shown.contains("Not on Fridays.") && shown.contains("decided by reviewer:alice"),
        "{shown}"
    );
}

/// `grace ask --wait` returns the answer a reviewer gives from another process.
#[test]
fn ask_wait_delivers_the_reviewers_answer() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ingest_sample(d);
    register(d, "alice");
    let asker = grace_cmd(d, &["ask", UNANSWERED, "--wait", "--timeout", "120"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let q = queue(d);
    let started = Instant::now();
    let id = loop {
        if let Some(e) = q.list(Viewer::Asker, None).unwrap().first() {
            break e.id;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "never escalated"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    q.answer(
        id,
        "alice",
        &ReviewAnswer {
            reply: HumanReply::Option(2),
            sources: Vec::new(),
            confidence: None,
            verdict: None,
        },
    )
    .unwrap();
    let out = asker.wait_with_output().unwrap();
    let shown = text(&out);
    // "The knowledge base does not answer this" rejects: exit 4, with the reason.
    assert_eq!(out.status.code(), Some(4), "{shown}");
    assert!(shown.contains("rejected by reviewer:alice"), "{shown}");
}

#[test]
fn expired_escalations_follow_auto_proceed_on_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ingest_sample(d);
    for (auto, code, expect) in [
        ("false", 4, "no reviewer answered in time"),
        ("true", 0, "not reviewed"),
    ] {
        let out = grace_cmd(d, &["ask", UNANSWERED, "--wait", "--timeout", "30"])
            .env("GRACE_REVIEW__ESCALATION_TTL_SECONDS", "0.5")
            .env("GRACE_REVIEW__AUTO_PROCEED_ON_TIMEOUT", auto)
            .output()
            .unwrap();
        let shown = text(&out);
        assert_eq!(out.status.code(), Some(code), "auto={auto}: {shown}");
        assert!(shown.contains(expect), "auto={auto}: {shown}");
    }
}

#[test]
fn the_askers_wait_ends_but_the_escalation_stays_in_the_queue() {
    // Waiting on the asker is not waiting on a reviewer: the asker's wait
    // (review.asker_wait_seconds) ends in seconds, the escalation stays
    // open for reviewers for its life (review.escalation_ttl_seconds).
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ingest_sample(d);
    for (auto, code, expect) in [
        ("false", 4, "pending"),
        ("true", 0, "Not reviewed: no reviewer answered within 1 s"),
    ] {
        let out = grace_cmd(d, &["ask", UNANSWERED, "--wait"])
            .env("GRACE_REVIEW__ASKER_WAIT_SECONDS", "0.6")
            .env("GRACE_REVIEW__AUTO_PROCEED_ON_TIMEOUT", auto)
            .output()
            .unwrap();
        let shown = text(&out);
        assert_eq!(out.status.code(), Some(code), "auto={auto}: {shown}");
        assert!(shown.contains(expect), "auto={auto}: {shown}");
    }
    // Both escalations are still pending, a day from expiring, and say
    // until when their askers waited: the same question, so the second
    // joined the first (one for reviewers, with both askers).
    let list = json(&grace(d, &["review", "list", "--json"]));
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), 1, "{list:?}");
    assert_eq!(list[0]["also_asked"].as_array().unwrap().len(), 1);
    for e in list {
        assert_eq!(e["status"], "pending", "{e}");
        let created =
            chrono::DateTime::parse_from_rfc3339(e["created_at"].as_str().unwrap()).unwrap();
        let expires =
            chrono::DateTime::parse_from_rfc3339(e["expires_at"].as_str().unwrap()).unwrap();
        let waits =
            chrono::DateTime::parse_from_rfc3339(e["asker_waits_until"].as_str().unwrap()).unwrap();
        assert_eq!((expires - created).num_seconds(), 86_400, "{e}");
        assert_eq!(
            (waits - created).num_seconds(),
            300,
            "the configured wait: {e}"
        );
    }
}

#[test]
fn feedback_asking_to_redo_searches_again_with_the_hint() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ingest_sample(d);
    register(d, "alice");
    let out = grace(d, &["ask", UNANSWERED, "--json"]);
    let id = json(&out)["review_id"].as_i64().unwrap().to_string();
    let out = grace(
        d,
        &[
            "review",
            "--as",
            "alice",
            "answer",
            &id,
            "--text",
            "redo: maintenance windows and change freeze",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("searched again"), "{}", text(&out));
    let e = json(&grace(
        d,
        &["review", "--as", "alice", "show", &id, "--json"],
    ));
    assert_eq!(e["status"], "claimed");
    assert_eq!(e["run"]["plan"]["by"], "hint");
    assert!(
        e["reason"]
            .as_str()
            .unwrap()
            .contains("maintenance windows"),
        "{e}"
    );
    let steps: Vec<&str> = e["run"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(steps, ["search", "hint", "answer"]);
    let log = json(&grace(d, &["review", "log", &id, "--json"]));
    assert_eq!(
        log.as_array().unwrap().last().unwrap()["action"],
        "replanned"
    );
}

/// A reviewed answer, promoted, answers the same and a paraphrased question
/// with a citation to the review; retracted, it is gone again.
#[test]
fn a_promoted_answer_is_cited_next_time_and_retracting_removes_it() {
    let data = tempfile::tempdir().unwrap();
    let kb = common::open_sample(data.path());
    let config = kb.config().clone();
    let registry = ToolRegistry::from_config(&config, kb.clone()).unwrap();
    let executor = Executor::new(&registry, &config, kb.scorer(), 5);
    let queue = ReviewQueue::open(&config).unwrap();
    queue
        .register_reviewer(&Reviewer {
            id: "alice".into(),
            name: "Alice Ops".into(),
            description: "release team".into(),
        })
        .unwrap();

    let first = executor.ask(UNANSWERED, &mut |_| {}).unwrap();
    assert_eq!(first.decision, Decision::Escalate);
    let e = queue
        .escalate(NewEscalation {
            report: &first,
            collection: &config.collection.name,
            asker: "user",
            allowed: None,
            timeout: None,
            vector: None,
        })
        .unwrap();
    let answer = "Production deploys are frozen on Fridays; deploy by Thursday 16:00.";
    queue
        .answer(
            e.id,
            "alice",
            &ReviewAnswer {
                reply: HumanReply::Text(answer.into()),
                sources: Vec::new(),
                confidence: None,
                verdict: None,
            },
        )
        .unwrap();
    let doc = grace::review::promote::promote(&kb, &queue, e.id, "alice").unwrap();
    let written = std::fs::read_to_string(&doc).unwrap();
    assert!(written.starts_with(&format!("# {UNANSWERED}")), "{written}");
    assert!(
        written.contains("Reviewed answer by Alice Ops (alice)"),
        "{written}"
    );

    let review_source = grace::ingest::source_key(&doc);
    for q in [
        UNANSWERED,
        "Are production deployments allowed on a Friday?",
    ] {
        let r = executor.ask(q, &mut |_| {}).unwrap();
        assert!(
            matches!(r.decision, Decision::Answer | Decision::Caveat),
            "{q}: {:?} at {:.2}",
            r.decision,
            r.confidence
        );
        let a = r.answer.unwrap();
        assert!(a.text.contains("frozen on Fridays"), "{q}: {}", a.text);
        assert!(
            a.citations
                .iter()
                .any(|c| c.source.as_deref() == Some(&review_source)),
            "{q}: {:?}",
            a.citations
        );
    }

    grace::review::promote::retract(&kb, &queue, e.id, "alice").unwrap();
    assert!(!doc.exists());
    let r = executor.ask(UNANSWERED, &mut |_| {}).unwrap();
    // Back to not knowing: never a confident answer, never the review.
    assert!(matches!(r.decision, Decision::Escalate | Decision::Decline));
    assert!(
        r.answer
            .iter()
            .flat_map(|a| &a.citations)
            .all(|c| c.source.as_deref() != Some(&review_source))
    );
    let log: Vec<String> = queue
        .log(e.id, Viewer::Asker)
        .unwrap()
        .into_iter()
        .map(|a| a.action)
        .collect();
    assert_eq!(
        log,
        ["escalated", "claimed", "answered", "promoted", "retracted"]
    );
}

/// `grace review watch` shows an escalation as it arrives and records the
/// answer typed at its prompt.
#[test]
fn watch_shows_new_escalations_and_takes_answers_at_the_prompt() {
    use std::io::{BufRead, BufReader, Write};
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ingest_sample(d);
    register(d, "alice");
    let mut watcher = grace_cmd(
        d,
        &["review", "--as", "alice", "watch", "--interval", "0.2"],
    )
    .stdin(Stdio::piped())
    .stdout(Stdio::piped())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    let mut stdin = watcher.stdin.take().unwrap();
    let mut lines = BufReader::new(watcher.stdout.take().unwrap()).lines();
    assert!(
        lines
            .next()
            .unwrap()
            .unwrap()
            .contains("Watching for escalations as alice")
    );

    // Escalated after the watcher started.
    let out = grace(d, &["ask", UNANSWERED, "--json"]);
    let id = json(&out)["review_id"].as_i64().unwrap();
    let mut seen = String::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        seen.push_str(&line);
        seen.push('\n');
        if line.contains("Options:") {
            break;
        }
    }
    assert!(
        seen.contains(&format!("Escalation #{id} (pending)")),
        "{seen}"
    );
    writeln!(stdin, "Only with an approved change request.").unwrap();
    let started = Instant::now();
    let q = queue(d);
    while q.get(id, Viewer::Asker).unwrap().status != Status::Answered {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the typed answer was not recorded"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    writeln!(stdin, "q").unwrap();
    let _ = watcher.kill();
    let _ = watcher.wait();
    let r = q.get(id, Viewer::Asker).unwrap().resolution.unwrap();
    assert_eq!(r.decided_by, "reviewer:alice");
    assert_eq!(
        r.report.unwrap().answer.unwrap().text,
        "Only with an approved change request."
    );
}

/// Two reviewer processes claim one escalation at the same moment: exactly
/// one wins; a reviewer left out of `--reviewers` cannot even see it.
#[test]
fn two_reviewer_processes_claiming_at_once_exactly_one_wins() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ingest_sample(d);
    for r in ["alice", "bob", "carol"] {
        register(d, r);
    }
    let out = grace(
        d,
        &["ask", UNANSWERED, "--json", "--reviewers", "alice,bob"],
    );
    let id = json(&out)["review_id"].as_i64().unwrap().to_string();

    let out = grace(d, &["review", "--as", "carol", "show", &id]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let out = grace(d, &["review", "--as", "carol", "list", "--json"]);
    assert_eq!(json(&out), serde_json::json!([]));

    let claimers: Vec<_> = ["alice", "bob"]
        .into_iter()
        .map(|r| {
            grace_cmd(d, &["review", "--as", r, "claim", &id])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let codes: Vec<Option<i32>> = claimers
        .into_iter()
        .map(|c| c.wait_with_output().unwrap().status.code())
        .collect();
    let mut sorted = codes.clone();
    sorted.sort();
    assert_eq!(sorted, [Some(0), Some(2)], "{codes:?}");
    let e = json(&grace(
        d,
        &["review", "--as", "alice", "show", &id, "--json"],
    ));
    let winner = if codes[0] == Some(0) { "alice" } else { "bob" };
    assert_eq!(e["claimed_by"], winner);
}

/// The same "redo: hint" feedback through the HTTP API the page uses.
#[test]
fn redo_feedback_over_http_searches_again() {
    let data = tempfile::tempdir().unwrap();
    let kb = common::open_sample(data.path());
    let config = kb.config().clone();
    let registry = ToolRegistry::from_config(&config, kb.clone()).unwrap();
    let run = Executor::new(&registry, &config, kb.scorer(), 5)
        .ask(UNANSWERED, &mut |_| {})
        .unwrap();
    let queue = std::sync::Arc::new(ReviewQueue::open(&config).unwrap());
    let alice = common::reviewer(&queue, "alice", "Alice");
    let id = queue
        .escalate(NewEscalation {
            report: &run,
            collection: "grace",
            asker: "user",
            allowed: None,
            timeout: None,
            vector: None,
        })
        .unwrap()
        .id;
    // The server holds the knowledge base itself: release ours first.
    drop(registry);
    drop(kb);

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let service = grace::Grace::builder(config)
        .embedder(common::embedder())
        .build()
        .unwrap();
    let e: serde_json::Value = runtime.block_on(async {
        let server = common::serve(service).await;
        let res = reqwest::Client::new()
            .post(format!("{}/v1/review/escalations/{id}/answer", server.base))
            .bearer_auth(&alice)
            .json(&serde_json::json!({"text": "redo: change freeze and maintenance"}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
        res.json().await.unwrap()
    });
    assert_eq!(e["status"], "claimed", "{e}");
    assert_eq!(e["run"]["plan"]["by"], "hint");
    let settled = queue.get(id, Viewer::Asker).unwrap();
    assert_eq!(settled.status, Status::Claimed);
    assert!(
        settled.resolution.is_none(),
        "the feedback was not recorded as the answer"
    );
}

/// Five questions the sample does not answer, three wordings each (the
/// same words, other words, a terse one).
const PARAPHRASED: [[&str; 3]; 5] = [
    [
        "How do I change the wallpaper on my work laptop?",
        "How can I change my work laptop's wallpaper?",
        "how do i set a different wallpaper on my work laptop",
    ],
    [
        "Who approves expense reports for the platform team?",
        "Who signs off on the platform team's expense reports?",
        "who approves platform team expense reports",
    ],
    [
        "What is the Wi-Fi password for the London office?",
        "What's the wifi password at the London office?",
        "London office wifi password?",
    ],
    [
        "Can I deploy Orbit services to Azure?",
        "Is it possible to deploy Orbit services on Azure?",
        "does orbit deploy to azure",
    ],
    [
        "How many vacation days do new employees get?",
        "How much paid vacation does a new employee get?",
        "new hire vacation days - how many?",
    ],
];

/// 20 askers ask three wordings each of five questions the knowledge base
/// does not answer: reviewers see five escalations, answer each once, and
/// every asker gets the answer to their question. Near misses (another
/// office, another cloud) stand apart.
#[test]
fn paraphrases_from_twenty_askers_are_five_escalations_answered_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = grace::Config::default();
    config.storage.data_dir = dir.path().to_path_buf();
    let queue = ReviewQueue::open(&config).unwrap();
    common::reviewer(&queue, "rev", "Rev");
    let embedder = common::embedder();
    let mut asked: Vec<(usize, i64)> = Vec::new();
    for asker in 0..20 {
        for (topic, wordings) in PARAPHRASED.iter().enumerate() {
            let question = wordings[asker % 3];
            let vector = embedder.embed_query(question).unwrap();
            let run = common::escalated(question);
            let e = queue
                .escalate(NewEscalation {
                    report: &run,
                    collection: "grace",
                    asker: &format!("asker-{asker}"),
                    allowed: None,
                    timeout: None,
                    vector: Some(&vector),
                })
                .unwrap();
            asked.push((topic, e.id));
        }
    }
    let open = queue.list(Viewer::Admin, Some(Status::Pending)).unwrap();
    assert_eq!(
        open.len(),
        5,
        "{:#?}",
        open.iter().map(|e| &e.question).collect::<Vec<_>>()
    );
    for e in &open {
        assert_eq!(e.also_asked.len(), 19, "#{}: {}", e.id, e.question);
        let answer = format!("The answer to {:?}.", e.question);
        queue
            .answer(
                e.id,
                "rev",
                &ReviewAnswer {
                    reply: HumanReply::Text(answer),
                    sources: Vec::new(),
                    confidence: None,
                    verdict: None,
                },
            )
            .unwrap();
    }
    for (topic, id) in asked {
        let e = queue.get(id, Viewer::Asker).unwrap();
        assert_eq!(e.status, Status::Answered, "#{id}");
        let text = e.resolution.unwrap().report.unwrap().answer.unwrap().text;
        assert_eq!(
            text,
            format!("The answer to {:?}.", PARAPHRASED[topic][0]),
            "#{id}"
        );
    }
    // Near misses, while the first is open: another office, another cloud.
    for (first, near) in [
        (
            PARAPHRASED[2][0],
            "What is the Wi-Fi password for the Paris office?",
        ),
        (PARAPHRASED[3][0], "Can I deploy Orbit services to AWS?"),
    ] {
        let lead = escalate_embedded(&queue, &*embedder, first);
        let other = escalate_embedded(&queue, &*embedder, near);
        assert_eq!(lead.joined_to, None);
        assert_eq!(other.joined_to, None, "{near}");
    }
}

fn escalate_embedded(
    queue: &ReviewQueue,
    embedder: &dyn grace::embed::Embedder,
    question: &str,
) -> grace::review::Escalation {
    let vector = embedder.embed_query(question).unwrap();
    let run = common::escalated(question);
    queue
        .escalate(NewEscalation {
            report: &run,
            collection: "grace",
            asker: "someone",
            allowed: None,
            timeout: None,
            vector: Some(&vector),
        })
        .unwrap()
}
