//! Conversations end to end on the sample knowledge base with the real
//! model and store: `grace chat` from stdin and under a pseudo-terminal,
//! the HTTP session endpoints with `session_id` on `/v1/ask` (expiry
//! included), and follow-ups read against the turns before them.

use crate::support::common;

use reqwest::StatusCode;
use serde_json::{Value, json};

/// A data folder with the sample knowledge base ingested by the CLI.
fn sample_data() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let kb = common::repo().join("examples/kb");
    let out = common::grace(
        dir.path(),
        &[
            "--data-dir",
            data.to_str().unwrap(),
            "ingest",
            kb.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", common::output_text(&out));
    dir
}

fn chat(dir: &std::path::Path, extra: &[&str], input: &str) -> std::process::Output {
    let data = dir.join("data");
    let mut args = vec!["--data-dir", data.to_str().unwrap()];
    args.extend_from_slice(extra);
    args.push("chat");
    common::with_input(common::grace_cmd(dir, &args), input)
}

#[test]
fn chat_reads_a_follow_up_against_the_question_before_it_from_stdin() {
    let dir = sample_data();
    let out = chat(
        dir.path(),
        &[],
        "How do I roll back a deployment?\nand on staging?\n/sources\n/trace\n/bogus\n/new\n/quit\nnever asked\n",
    );
    let text = common::output_text(&out);
    assert!(out.status.success(), "{text}");
    // A transcript: each answer under its question.
    assert!(
        text.contains("> How do I roll back a deployment?"),
        "{text}"
    );
    // The follow-up inherited the first question's terms, and says so.
    assert!(
        text.contains("(read as: and on staging? (roll back deployment))"),
        "{text}"
    );
    assert!(text.contains("follow-up read as:"), "{text}");
    assert!(text.contains("Unknown command \"/bogus\""), "{text}");
    assert!(text.contains("New conversation (session ses_"), "{text}");
    // /quit ends it: the line after is never asked.
    assert!(!text.contains("never asked"), "{text}");
}

#[test]
fn chat_json_prints_one_line_per_turn_with_the_session() {
    let dir = sample_data();
    let out = chat(
        dir.path(),
        &["--json"],
        "What does error ORB-2001 mean?\nhow do I fix it?\n",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", common::output_text(&out));
    let turns: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(turns.len(), 2, "{stdout}");
    assert_eq!(turns[0]["session_id"], turns[1]["session_id"]);
    assert!(turns[0].get("rewrite").is_none());
    let rewritten = turns[1]["rewrite"]["question"].as_str().unwrap();
    assert!(rewritten.contains("ORB-2001"), "{rewritten}");
    assert_eq!(turns[1]["rewrite"]["by"], "rule");
}

#[test]
fn chat_refuses_an_unknown_session_and_a_missing_knowledge_base() {
    let dir = sample_data();
    let out = chat(dir.path(), &[], "");
    assert!(out.status.success());
    let data = dir.path().join("data");
    let o = common::grace(
        dir.path(),
        &[
            "--data-dir",
            data.to_str().unwrap(),
            "chat",
            "--session",
            "ses_0123456789abcdef0123456789abcdef",
        ],
    );
    assert_eq!(o.status.code(), Some(3), "{}", common::output_text(&o));
    assert!(common::output_text(&o).contains("does not exist or has expired"));
    let o = common::grace(dir.path(), &["--data-dir", "nowhere", "chat"]);
    assert_eq!(o.status.code(), Some(3), "{}", common::output_text(&o));
}

#[test]
fn chat_holds_a_conversation_under_a_pseudo_terminal() {
    let dir = sample_data();
    let data = dir.path().join("data");
    let cmd = common::grace_cmd(dir.path(), &["--data-dir", data.to_str().unwrap(), "chat"]);
    let out = common::at_a_terminal(
        &cmd,
        "How do I roll back a deployment?\nand on staging?\n/quit\n",
    );
    let text = common::output_text(&out);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("GRACE chat (session ses_"), "{text}");
    assert!(text.contains("\n> "), "the prompt: {text}");
    assert!(
        text.contains("(read as: and on staging? (roll back deployment))"),
        "{text}"
    );
}

async fn post(http: &reqwest::Client, url: String, body: Value) -> (StatusCode, Value) {
    let r = http.post(url).json(&body).send().await.unwrap();
    let status = r.status();
    (status, r.json().await.unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_sessions_hold_turns_and_expire() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = common::config(dir.path());
    config.sessions.ttl_seconds = 3.0;
    let server = common::serve(common::sample_service(config).await).await;
    let http = reqwest::Client::new();
    let url = |p: &str| format!("{}{p}", server.base);

    let (status, session) = post(&http, url("/v1/sessions"), json!({})).await;
    assert_eq!(status, StatusCode::CREATED, "{session}");
    let id = session["id"].as_str().unwrap().to_string();
    assert!(id.starts_with("ses_"), "{id}");

    let ask = |q: &str| json!({"question": q, "session_id": id, "queue": false});
    let (status, first) = post(
        &http,
        url("/v1/ask"),
        ask("How do I roll back a deployment?"),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{first}");
    assert_eq!(first["session_id"], id.as_str());
    let (status, second) = post(&http, url("/v1/ask"), ask("and on staging?")).await;
    assert_eq!(status, StatusCode::OK, "{second}");
    assert_eq!(
        second["rewrite"]["question"],
        "and on staging? (roll back deployment)"
    );
    // A question that names its own subject is no follow-up, pronoun or
    // not: it is searched in its own words.
    for own in [
        "who is on call for the platform team this week and when should I page them?",
        "I saw ORB-2001 in the deploy log. What does it mean?",
    ] {
        let (status, third) = post(&http, url("/v1/ask"), ask(own)).await;
        assert_eq!(status, StatusCode::OK, "{third}");
        assert!(third.get("rewrite").is_none(), "{own}: {third}");
    }

    let r = http
        .get(url(&format!("/v1/sessions/{id}")))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let got: Value = r.json().await.unwrap();
    let turns = got["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 4, "{got}");
    assert_eq!(turns[1]["question"], "and on staging?");
    assert_eq!(
        turns[1]["standalone"],
        "and on staging? (roll back deployment)"
    );
    // Sources are shown relative, never as the server's full path.
    let shown = turns[0]["sources"].to_string();
    assert!(!shown.contains(dir.path().to_str().unwrap()), "{shown}");

    // Unknown, malformed and deleted sessions are 404, on ask too.
    for bad in [
        "ses_0123456789abcdef0123456789abcdef",
        "nope",
        "..%2F..%2Fetc",
    ] {
        let r = http
            .get(url(&format!("/v1/sessions/{bad}")))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::NOT_FOUND, "{bad}");
    }
    let (status, body) = post(
        &http,
        url("/v1/ask"),
        json!({"question": "q?", "session_id": "ses_0123456789abcdef0123456789abcdef"}),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    let (status, body) = post(
        &http,
        url("/v1/ask"),
        json!({"question": "q?", "session_id": 7}),
    )
    .await;
    assert!(status.is_client_error(), "{status} {body}");

    let r = http
        .delete(url(&format!("/v1/sessions/{id}")))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    let r = http
        .get(url(&format!("/v1/sessions/{id}")))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);

    // A session nobody continues expires after sessions.ttl_seconds.
    let (_, session) = post(&http, url("/v1/sessions"), json!({})).await;
    let id = session["id"].as_str().unwrap().to_string();
    tokio::time::sleep(std::time::Duration::from_millis(3_300)).await;
    let r = http
        .get(url(&format!("/v1/sessions/{id}")))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    let (status, _) = post(
        &http,
        url("/v1/ask"),
        json!({"question": "and on staging?", "session_id": id}),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unanswerable_follow_up_is_not_answered_from_the_subject_it_inherited() {
    // "and Kubernetes?" after a question about rollbacks inherits
    // "roll back deployment" and finds rollback pages; answering from
    // them would be a confident wrong answer, the worst outcome.
    let dir = tempfile::tempdir().unwrap();
    let grace = common::sample_service(common::config(dir.path())).await;
    let session = grace.create_session().unwrap();
    let options = grace::AskOptions {
        queue: false,
        session_id: Some(session.id.clone()),
        ..Default::default()
    };
    let first = grace
        .ask("How do I roll back a deployment?", options.clone())
        .await
        .unwrap();
    assert!(matches!(
        first.report.decision,
        grace::exec::Decision::Answer | grace::exec::Decision::Caveat
    ));
    let follow = grace
        .ask("and with the Kubernetes operator from AWS?", options)
        .await
        .unwrap();
    assert!(follow.report.rewrite.is_some());
    assert!(
        !matches!(
            follow.report.decision,
            grace::exec::Decision::Answer | grace::exec::Decision::Caveat
        ),
        "answered {:?} with confidence {}",
        follow.report.answer,
        follow.report.confidence
    );
    let factors = follow.report.answer_factors().unwrap();
    assert_eq!(
        factors.get(grace::confidence::Factor::FollowUpCoverage),
        Some(0.0)
    );
}

#[test]
fn eval_conversations_names_a_missing_or_bad_file() {
    let dir = tempfile::tempdir().unwrap();
    let set = common::eval_sets().join("debian-faq");
    let set = set.to_str().unwrap();
    let out = common::grace(dir.path(), &["eval", set, "--conversations", "nope.jsonl"]);
    assert_eq!(out.status.code(), Some(3), "{}", common::output_text(&out));
    assert!(common::output_text(&out).contains("nope.jsonl: no such file"));
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(
        &bad,
        "{\"id\": \"a\", \"turns\": [{\"question\": \"q?\"}]}\n",
    )
    .unwrap();
    let out = common::grace(
        dir.path(),
        &["eval", set, "--conversations", bad.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(2), "{}", common::output_text(&out));
    assert!(
        common::output_text(&out).contains("bad.jsonl:1:"),
        "{}",
        common::output_text(&out)
    );
}

/// `grace eval --one-session N`: the set's questions, each standing on its
/// own, asked in one session; none of the sample's is taken for a
/// follow-up. A count outside 2..=1000 is refused before anything runs.
#[test]
fn eval_one_session_counts_self_contained_questions_taken_for_follow_ups() {
    let dir = tempfile::tempdir().unwrap();
    let set = common::repo().join("eval/sample-users-words");
    let set = set.to_str().unwrap();
    let out = common::grace(dir.path(), &["--json", "eval", set, "--one-session", "12"]);
    assert!(out.status.success(), "{}", common::output_text(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["asked"], 11, "{report}");
    assert_eq!(report["rewritten"], 0, "{report}");
    assert_eq!(report["share"], 0.0);
    for bad in ["1", "1001"] {
        let out = common::grace(dir.path(), &["eval", set, "--one-session", bad]);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{bad}: {}",
            common::output_text(&out)
        );
        assert!(common::output_text(&out).contains("between 2 and 1000"));
    }
}
