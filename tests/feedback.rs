//! Askers' ratings and reviewers' verdicts, end to end on the sample
//! knowledge base with the real store and model: over HTTP (the answer's
//! id from `/v1/ask`, one rating per asker that a second replaces, another
//! asker's or a missing answer 404, an escalated run 409, a 1 MB reason
//! refused, a flood rate-limited), from the command line (`grace ask`
//! prints how to rate, `grace feedback` rates, another asker is refused),
//! in `grace chat` (`/good`, `/bad wrong`), and a reviewer's verdict kept
//! with the escalation's resolution, given or implied by the answer.
//!
//! A rating is a label for the confidence model: a confident wrong answer
//! rated down is the signal GRACE most needs, so a rating that cannot be
//! stored must say why, never vanish.

mod common;

use grace::config::Config;
use reqwest::StatusCode;
use serde_json::{Value, json};

const ANSWERED: &str = "How long are nightly backups kept?";

struct Api {
    base: String,
    http: reqwest::Client,
    grace: grace::Grace,
    _server: common::TestServer,
    _dir: tempfile::TempDir,
}

impl Api {
    async fn start(tweak: impl FnOnce(&mut Config)) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let mut config = common::config(dir.path());
        tweak(&mut config);
        let grace = common::sample_service(config).await;
        let server = common::serve(grace.clone()).await;
        Self {
            base: server.base.clone(),
            http: reqwest::Client::new(),
            grace,
            _server: server,
            _dir: dir,
        }
    }

    async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.post_as(path, body, None).await
    }

    async fn post_as(&self, path: &str, body: Value, token: Option<&str>) -> (StatusCode, Value) {
        let mut request = self.http.post(format!("{}{path}", self.base)).json(&body);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let r = request.send().await.unwrap();
        let status = r.status();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    /// Asks `question` as `asker`; the outcome.
    async fn ask(&self, question: &str, asker: &str) -> Value {
        let (status, outcome) = self
            .post("/v1/ask", json!({ "question": question, "asker": asker }))
            .await;
        assert_eq!(status, StatusCode::OK, "{outcome}");
        outcome
    }
}

fn error_type(body: &Value) -> &str {
    body["error"]["type"].as_str().unwrap_or("<no error body>")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_asker_rates_an_answer_once_and_nobody_else_can() {
    let api = Api::start(|_| {}).await;
    let outcome = api.ask(ANSWERED, "alice").await;
    assert_eq!(outcome["status"], "answered", "{outcome}");
    let id = outcome["answer_id"]
        .as_str()
        .expect("an answer id")
        .to_string();
    let path = format!("/v1/answers/{id}/feedback");

    // Another asker, and an answer that does not exist: both 404, the
    // same way (an id does not tell whether someone else's answer exists).
    let (s, body) = api
        .post(&path, json!({"vote": "down", "asker": "mallory"}))
        .await;
    assert_eq!(s, StatusCode::NOT_FOUND, "{body}");
    let (s, missing) = api
        .post(
            "/v1/answers/ans_0123456789abcdef0123456789abcdef/feedback",
            json!({"vote": "up", "asker": "alice"}),
        )
        .await;
    assert_eq!(s, StatusCode::NOT_FOUND, "{missing}");
    assert_eq!(error_type(&body), error_type(&missing));

    // The asker's own rating, then a change that replaces it.
    let (s, first) = api
        .post(&path, json!({"vote": "up", "asker": "alice"}))
        .await;
    assert_eq!(s, StatusCode::OK, "{first}");
    assert_eq!(first["replaced"], false);
    let (s, second) = api
        .post(
            &path,
            json!({"vote": "down", "reason": "other", "text": "It is 30 days on staging only.", "asker": "alice"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{second}");
    assert_eq!(second["replaced"], true);

    // Hostile and malformed ratings.
    let huge = "x".repeat(1 << 20);
    let (s, body) = api
        .post(
            &path,
            json!({"vote": "down", "reason": "other", "text": huge, "asker": "alice"}),
        )
        .await;
    assert!(
        s == StatusCode::PAYLOAD_TOO_LARGE || s == StatusCode::UNPROCESSABLE_ENTITY,
        "{s} {body}"
    );
    let over = "é".repeat(501);
    let (s, body) = api
        .post(
            &path,
            json!({"vote": "down", "reason": "other", "text": over, "asker": "alice"}),
        )
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(
        body["error"]["message"].as_str().unwrap().contains("500"),
        "{body}"
    );
    for bad in [
        json!({"vote": "sideways", "asker": "alice"}),
        json!({"vote": "up", "reason": "wrong", "asker": "alice"}),
        json!({"vote": "down", "reason": "wrong", "text": "only with other", "asker": "alice"}),
        json!({"vote": "up", "asker": "alice", "extra": 1}),
    ] {
        let (s, body) = api.post(&path, bad.clone()).await;
        assert!(
            s.is_client_error() && s != StatusCode::NOT_FOUND,
            "{bad}: {s} {body}"
        );
    }

    // One rating kept, the last, with what a refit reads.
    let labelled = api.grace.feedback().labelled().unwrap();
    assert_eq!(labelled.len(), 1);
    let label = &labelled[0];
    assert_eq!(label.id, id);
    assert_eq!(
        label.rating.as_ref().unwrap().text.as_deref(),
        Some("It is 30 days on staging only.")
    );
    assert!(
        label.run.factors.is_some(),
        "the answer's factors as scored"
    );
    assert!(label.run.weights_version.starts_with("logistic:"));
    assert!(!label.run.sources.is_empty(), "the cited documents");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_ratings_is_rate_limited_and_an_escalation_has_nothing_to_rate() {
    let api = Api::start(|c| c.feedback.max_ratings_per_hour = 3).await;
    let outcome = api.ask(ANSWERED, "flood").await;
    let path = format!(
        "/v1/answers/{}/feedback",
        outcome["answer_id"].as_str().unwrap()
    );
    let mut statuses = Vec::new();
    for i in 0..6 {
        let vote = if i % 2 == 0 { "up" } else { "down" };
        let (s, _) = api
            .post(&path, json!({"vote": vote, "asker": "flood"}))
            .await;
        statuses.push(s.as_u16());
    }
    assert_eq!(statuses, [200, 200, 200, 429, 429, 429]);

    // Put to a person: there is no answer to rate (the verdict labels it).
    let (s, escalated) = api
        .post(
            "/v1/ask",
            json!({"question": ANSWERED, "asker": "bob", "escalate": true}),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(escalated["status"], "escalated");
    let path = format!(
        "/v1/answers/{}/feedback",
        escalated["answer_id"].as_str().unwrap()
    );
    let (s, body) = api.post(&path, json!({"vote": "up", "asker": "bob"})).await;
    assert_eq!(s, StatusCode::CONFLICT, "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reviewers_verdict_is_kept_with_the_resolution_given_or_implied() {
    let api = Api::start(|_| {}).await;
    let token = common::reviewer(api.grace.escalations(), "rev", "Rev");
    let mut ids = Vec::new();
    for _ in 0..2 {
        let outcome = api
            .post(
                "/v1/ask",
                json!({"question": ANSWERED, "asker": "carol", "escalate": true}),
            )
            .await
            .1;
        ids.push(outcome["review_id"].as_i64().expect("queued"));
    }
    // The first: the draft confirmed (option 1), no verdict given → right.
    let (s, e) = api
        .post_as(
            &format!("/v1/review/escalations/{}/answer", ids[0]),
            json!({"option": 1}),
            Some(&token),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{e}");
    assert_eq!(e["resolution"]["verdict"], "right", "{e}");
    // The second: the reviewer's own words, and their verdict.
    let (s, e) = api
        .post_as(
            &format!("/v1/review/escalations/{}/answer", ids[1]),
            json!({"text": "Nightly backups are kept for 90 days since March.", "verdict": "wrong"}),
            Some(&token),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{e}");
    assert_eq!(e["resolution"]["verdict"], "wrong");
    // A verdict that is not one is refused.
    let third = api
        .post(
            "/v1/ask",
            json!({"question": ANSWERED, "asker": "carol", "escalate": true}),
        )
        .await
        .1;
    let (s, _) = api
        .post_as(
            &format!("/v1/review/escalations/{}/answer", third["review_id"]),
            json!({"option": 1, "verdict": "maybe"}),
            Some(&token),
        )
        .await;
    assert!(s.is_client_error(), "{s}");
    // The escalated runs are recorded with their review ids, for the refit.
    let labelled = api.grace.feedback().labelled().unwrap();
    let review_ids: Vec<_> = labelled.iter().filter_map(|l| l.review_id).collect();
    assert_eq!(review_ids.len(), 3, "{labelled:?}");
    assert!(review_ids.contains(&ids[0]) && review_ids.contains(&ids[1]));
}

#[test]
fn the_command_line_rates_the_answer_it_printed() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| common::grace(dir.path(), args);
    let kb = common::repo().join("examples/kb");
    let ingest = run(&["ingest", kb.to_str().unwrap()]);
    assert!(ingest.status.success(), "{}", common::output_text(&ingest));

    let asked = run(&["ask", "--asker", "dana", ANSWERED]);
    let text = common::output_text(&asked);
    let id = text
        .split("grace feedback ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no rating hint in: {text}"))
        .to_string();
    assert!(id.starts_with("ans_"), "{text}");

    let rated = run(&[
        "feedback", &id, "down", "--reason", "outdated", "--asker", "dana",
    ]);
    assert!(rated.status.success(), "{}", common::output_text(&rated));
    assert_eq!(
        String::from_utf8_lossy(&rated.stdout).trim(),
        format!("Rated {id}: down (outdated).")
    );
    let changed = run(&["--json", "feedback", &id, "up", "--asker", "dana"]);
    let stored: Value = serde_json::from_slice(&changed.stdout).unwrap();
    assert_eq!(stored["replaced"], true);
    assert_eq!(stored["vote"], "up");

    // Someone else, or an id that is not one: not found (exit 5), said.
    let other = run(&["feedback", &id, "down", "--asker", "erin"]);
    assert_eq!(other.status.code(), Some(grace::EXIT_NOT_FOUND as i32));
    assert!(
        common::output_text(&other).contains("no answer"),
        "{}",
        common::output_text(&other)
    );
    let bogus = run(&["feedback", "ans_' OR 1=1", "up", "--asker", "dana"]);
    assert_eq!(bogus.status.code(), Some(grace::EXIT_NOT_FOUND as i32));
    // A reason with an up vote is refused before anything is stored.
    let bad = run(&[
        "feedback", &id, "up", "--reason", "wrong", "--asker", "dana",
    ]);
    assert_eq!(bad.status.code(), Some(grace::EXIT_BAD_INPUT as i32));

    // The JSON of an ask carries the id too.
    let json = run(&["--json", "ask", "--asker", "dana", ANSWERED]);
    let report: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert!(report["answer_id"].as_str().unwrap().starts_with("ans_"));

    // In a conversation: /good, /bad with a reason, and a bad reason said.
    let chat = common::with_input(
        common::grace_cmd(dir.path(), &["chat"]),
        &format!("/good\n{ANSWERED}\n/bad wrong\n/bad sideways\n/good\n"),
    );
    let out = common::output_text(&chat);
    assert!(chat.status.success(), "{out}");
    assert!(out.contains("no answer to rate yet"), "{out}");
    assert!(out.contains(": down (wrong)."), "{out}");
    assert!(out.contains("unknown reason \"sideways\""), "{out}");
    assert!(out.contains("Changed your rating of ans_"), "{out}");

    // The ratings become a fit: `grace calibrate --from-feedback`.
    let file = dir.path().join("feedback-fit.json");
    let fitted = run(&[
        "--json",
        "calibrate",
        "--from-feedback",
        "--out",
        file.to_str().unwrap(),
    ]);
    assert!(fitted.status.success(), "{}", common::output_text(&fitted));
    let fit: Value = serde_json::from_slice(&fitted.stdout).unwrap();
    assert_eq!(fit["fit"]["labels"], 2, "{fit}");
    assert!(fit["fit"]["out_of_fold"]["n"].as_u64() == Some(2), "{fit}");
    let on_file: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(on_file["fitted_on"]["questions"], 2);
    // GRACE scores with it once configured.
    let asked = common::grace_cmd(dir.path(), &["--json", "ask", ANSWERED])
        .env("GRACE_CONFIDENCE__CALIBRATION", &file)
        .output()
        .unwrap();
    assert!(asked.status.success(), "{}", common::output_text(&asked));
}

#[test]
fn calibrating_from_no_feedback_says_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let kb = common::repo().join("examples/kb");
    let ingest = common::grace(dir.path(), &["ingest", kb.to_str().unwrap(), "-q"]);
    assert!(ingest.status.success(), "{}", common::output_text(&ingest));
    let out = common::grace(dir.path(), &["calibrate", "--from-feedback"]);
    assert_eq!(out.status.code(), Some(grace::EXIT_BAD_INPUT as i32));
    assert!(
        common::output_text(&out).contains("no labels"),
        "{}",
        common::output_text(&out)
    );
}

/// `grace eval --feedback N`: the learning curve of refits on simulated
/// ratings, in the fixed JSON shape, and its bad inputs refused up front.
#[test]
fn eval_simulates_ratings_and_prints_the_learning_curve() {
    let dir = tempfile::tempdir().unwrap();
    let set = common::repo().join("eval/sample-users-words");
    let set = set.to_str().unwrap();
    // `grace --json eval SET --feedback 30 --seed 3` and `extra`.
    let simulate = |extra: &[&str]| {
        let mut args = vec!["--json", "eval", set, "--feedback", "30", "--seed", "3"];
        args.extend_from_slice(extra);
        common::grace(dir.path(), &args)
    };
    let out = simulate(&["--feedback-noise", "0.1"]);
    assert!(out.status.success(), "{}", common::output_text(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let feedback = &report["feedback"];
    assert_eq!(feedback["ratings"], 30);
    assert_eq!(
        feedback["held_out"],
        report["questions"].as_u64().unwrap() - 30
    );
    let curve = feedback["curve"].as_array().unwrap();
    let labels: Vec<u64> = curve
        .iter()
        .map(|p| p["labels"].as_u64().unwrap())
        .collect();
    assert_eq!(labels, [0, 25, 30]);
    for p in curve {
        assert!(p["fare"]["ece"].is_number(), "{p}");
        assert!(p["fare"]["auroc"].is_number(), "{p}");
        assert!(p["ece_floor"]["median"].is_number() && p["ece_floor"]["p95"].is_number());
        assert!(p["auroc_in_domain"].is_number(), "{p}");
        let coverage = p["coverage_at_risk_10"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&coverage), "{p}");
    }
    // The same seed, the same curve.
    let again = simulate(&["--feedback-noise", "0.1"]);
    let again: Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(again["feedback"], report["feedback"]);
    // One asker's flood of false ratings is fitted too, capped.
    let flooded = simulate(&["--feedback-flood", "50"]);
    assert!(
        flooded.status.success(),
        "{}",
        common::output_text(&flooded)
    );
    let flooded: Value = serde_json::from_slice(&flooded.stdout).unwrap();
    assert_eq!(flooded["feedback"]["flood"], 50);
    assert_eq!(flooded["feedback"]["curve"].as_array().unwrap().len(), 3);

    for bad in [
        vec!["eval", set, "--feedback", "42"],
        vec!["eval", set, "--feedback", "10", "--feedback-noise", "1.5"],
    ] {
        let out = common::grace(dir.path(), &bad);
        assert_eq!(
            out.status.code(),
            Some(grace::EXIT_BAD_INPUT as i32),
            "{bad:?}"
        );
        let text = common::output_text(&out);
        assert!(text.contains("--feedback"), "{text}");
    }
}
