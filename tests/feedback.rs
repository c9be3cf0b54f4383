//! Askers' ratings and reviewers' verdicts, end to end on the sample
//! knowledge base with the real store and model: over HTTP (the answer's
//! id from `/v1/ask`, one rating per asker that a second replaces, another
//! asker's or a missing answer 404, an escalated run 409, a 1 MB reason
//! refused, a flood rate-limited), from the command line (`grace ask`
//! prints how to rate, `grace feedback` rates, another asker is refused),
//! in `grace chat` (`/good`, `/bad wrong`), and a reviewer's verdict kept
//! with the escalation's resolution, given or implied by the answer; the
//! gap report (`GET /v1/review/gaps`, `grace gaps`) grouping what people
//! did not get an answer to by meaning; and a fit on feedback kept in use
//! when an ingest self-calibrates while serving.
//!
//! A rating is a label for the confidence model: a confident wrong answer
//! rated down is the signal GRACE most needs, so a rating that cannot be
//! stored must say why, never vanish.

use crate::support::common;

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

    /// `asker`'s rating of answer `id`: `vote` with `reason`.
    async fn rate(&self, id: &str, vote: &str, reason: &str, asker: &str) -> (StatusCode, Value) {
        self.post(
            &format!("/v1/answers/{id}/feedback"),
            json!({"vote": vote, "reason": reason, "asker": asker}),
        )
        .await
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

/// Where the answer of an ask's `outcome` is rated.
fn rating_path(outcome: &Value) -> String {
    format!(
        "/v1/answers/{}/feedback",
        outcome["answer_id"].as_str().unwrap()
    )
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
    let path = rating_path(&outcome);
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
    let path = rating_path(&escalated);
    let (s, body) = api.post(&path, json!({"vote": "up", "asker": "bob"})).await;
    assert_eq!(s, StatusCode::CONFLICT, "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reviewers_verdict_is_kept_with_the_resolution_given_or_implied() {
    let api = Api::start(|_| {}).await;
    let token = common::reviewer(api.grace.escalations(), "rev", "Rev");
    let mut ids = Vec::new();
    // Two questions: the same one twice would be one escalation.
    for question in [ANSWERED, "How do I rotate an API key?"] {
        let outcome = api
            .post(
                "/v1/ask",
                json!({"question": question, "asker": "carol", "escalate": true}),
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_rating_reaches_a_person_whose_verdict_outranks_it() {
    let api = Api::start(|_| {}).await;
    let token = common::reviewer(api.grace.escalations(), "rev", "Rev");
    let rate = |outcome: &Value, body: Value| (rating_path(outcome), body);
    // "Incomplete" is a label, not an alarm: nobody is called.
    let first = api.ask(ANSWERED, "erin").await;
    let (path, body) = rate(
        &first,
        json!({"vote": "down", "reason": "incomplete", "asker": "erin"}),
    );
    let (s, stored) = api.post(&path, body).await;
    assert_eq!(s, StatusCode::OK, "{stored}");
    assert!(stored.get("escalation").is_none(), "{stored}");

    // "Wrong" puts the question to a person, once; never for someone who
    // did not ask it (forged: not found, and nobody is called).
    let second = api.ask(ANSWERED, "erin").await;
    let (path, body) = rate(
        &second,
        json!({"vote": "down", "reason": "wrong", "asker": "mallory"}),
    );
    let (s, _) = api.post(&path, body).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    let queue = api.grace.escalations();
    assert!(
        queue
            .list_page(grace::review::Viewer::Admin, &Default::default())
            .unwrap()
            .is_empty()
    );
    let (path, body) = rate(
        &second,
        json!({"vote": "down", "reason": "wrong", "asker": "erin"}),
    );
    let (s, stored) = api.post(&path, body.clone()).await;
    assert_eq!(s, StatusCode::OK, "{stored}");
    let review_id = stored["escalation"]["review_id"]
        .as_i64()
        .expect("escalated");
    let handle = stored["escalation"]["review_handle"].as_str().unwrap();
    let (s, again) = api.post(&path, body).await;
    assert_eq!(s, StatusCode::OK);
    assert!(
        again.get("escalation").is_none(),
        "one escalation per run: {again}"
    );
    let queued = api
        .grace
        .escalations()
        .get(review_id, grace::review::Viewer::Admin)
        .unwrap();
    assert!(
        queued.reason.contains("rated the answer wrong"),
        "{}",
        queued.reason
    );
    assert_eq!(queued.asker, "erin");
    // The asker follows it with the handle.
    let r = api
        .http
        .get(format!(
            "{}/v1/escalations/{review_id}?handle={handle}",
            api.base
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);

    // The reviewer finds the draft right after all: the verdict labels the
    // run and the contradicted rating is dropped.
    let (s, e) = api
        .post_as(
            &format!("/v1/review/escalations/{review_id}/answer"),
            json!({"option": 1}),
            Some(&token),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{e}");
    assert_eq!(e["resolution"]["verdict"], "right");
    let labels = grace::learn::labels(api.grace.feedback(), api.grace.escalations()).unwrap();
    let by: Vec<(&str, bool)> = labels.iter().map(|l| (l.by.as_str(), l.y)).collect();
    // The first run's "incomplete" stays; the second's "wrong" is outranked.
    assert_eq!(
        by,
        [("asker:erin", false), ("reviewer:rev", true)],
        "{labels:?}"
    );
    // Not recorded again: the recheck is no run of its own to rate.
    assert_eq!(api.grace.gaps_blocking(None, 10).unwrap().questions, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_escalate_on_wrong_off_a_wrong_rating_is_only_a_label() {
    let api = Api::start(|c| c.feedback.escalate_on_wrong = false).await;
    let outcome = api.ask(ANSWERED, "fred").await;
    let path = rating_path(&outcome);
    let (s, stored) = api
        .post(
            &path,
            json!({"vote": "down", "reason": "wrong", "asker": "fred"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{stored}");
    assert!(stored.get("escalation").is_none(), "{stored}");
    assert!(
        api.grace
            .escalations()
            .list_page(grace::review::Viewer::Admin, &Default::default())
            .unwrap()
            .is_empty()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ratings_trigger_a_refit_that_is_recorded_and_shown() {
    let api = Api::start(|c| c.confidence.feedback_refit_every = 3).await;
    for k in 0..3 {
        let asker = format!("gina{k}");
        let outcome = api.ask(ANSWERED, &asker).await;
        let path = rating_path(&outcome);
        let (s, _) = api.post(&path, json!({"vote": "up", "asker": asker})).await;
        assert_eq!(s, StatusCode::OK);
    }
    // The third label makes a refit due; it runs on a thread of its own.
    let mut view = Value::Null;
    for _ in 0..100 {
        let r = api
            .http
            .get(format!("{}/v1/review/calibration", api.base))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        view = r.json().await.unwrap();
        if !view["history"].as_array().unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(view["mode"], "auto", "{view:#}");
    assert_eq!(view["labels"], 3);
    assert_eq!(view["next_refit_at"], 6);
    let fit = &view["history"][0];
    assert_eq!(fit["labels"], 3, "{view:#}");
    // Three labels of one kind are too few to be trusted: the weights stay.
    assert_eq!(fit["kept"], false);
    assert!(fit["why"].as_str().unwrap().contains("too few"), "{fit}");
    assert!(view["current"].is_null());
}

/// Questions about something the sample knowledge base does not hold.
const MISSING: [&str; 6] = [
    "How do I submit an expense report?",
    "Where do I file my travel expenses for reimbursement?",
    "How long does an expense reimbursement take to be paid?",
    "Who approves my expense claims?",
    "Can I get my conference ticket reimbursed as an expense?",
    "Which receipts do I need to attach to an expense claim?",
];
/// Other unanswerable questions, each about something else.
const SCATTERED: [&str; 4] = [
    "What is the office Wi-Fi password?",
    "When is the company holiday party this year?",
    "How do I book a meeting room on the fourth floor?",
    "What is on the cafeteria menu today?",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gap_report_groups_what_people_did_not_get_by_meaning() {
    let api = Api::start(|_| {}).await;
    for q in MISSING.iter().chain(&SCATTERED) {
        api.ask(q, "dora").await;
    }
    // An answer rated down counts too; one rated up does not.
    let down = api.ask(ANSWERED, "dora").await;
    assert_eq!(down["status"], "answered", "{down}");
    let rated = rating_path(&down);
    let (s, _) = api
        .post(
            &rated,
            json!({"vote": "down", "reason": "outdated", "asker": "dora"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    let up = api
        .ask("How do I roll back a production deployment?", "dora")
        .await;
    let (s, _) = api
        .post(&rating_path(&up), json!({"vote": "up", "asker": "dora"}))
        .await;
    assert_eq!(s, StatusCode::OK);

    let r = api
        .http
        .get(format!("{}/v1/review/gaps?limit=50", api.base))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let report: Value = r.json().await.unwrap();
    let groups = report["groups"].as_array().unwrap();
    let members = |g: &Value| -> Vec<String> {
        std::iter::once(&g["label"])
            .chain(g["examples"].as_array().unwrap())
            .map(|q| q.as_str().unwrap().to_string())
            .collect()
    };
    // Every question nobody got an answer to is counted once, and the
    // one rated down; the answer rated up is not.
    let counted: u64 = groups.iter().map(|g| g["count"].as_u64().unwrap()).sum();
    assert_eq!(counted, report["questions"].as_u64().unwrap());
    assert!(counted >= 9, "{report:#}");
    assert!(
        groups
            .iter()
            .all(|g| !members(g).iter().any(|q| q.contains("roll back"))),
        "{report:#}"
    );
    assert_eq!(
        groups
            .iter()
            .map(|g| g["rated_down"].as_u64().unwrap())
            .sum::<u64>(),
        1,
        "{report:#}"
    );
    // The expense questions are the top group, and nothing else is in it.
    let top = &groups[0];
    assert!(top["count"].as_u64().unwrap() >= 5, "{report:#}");
    assert!(
        members(top).iter().all(|q| MISSING.contains(&q.as_str())),
        "{report:#}"
    );
    assert!(
        groups[1..]
            .iter()
            .all(|g| g["count"].as_u64().unwrap() <= 2),
        "{report:#}"
    );
    // Bounds are checked: 422 out of range, 400 not a number.
    for (query, status) in [
        ("days=0", StatusCode::UNPROCESSABLE_ENTITY),
        ("days=100000", StatusCode::UNPROCESSABLE_ENTITY),
        ("limit=0", StatusCode::UNPROCESSABLE_ENTITY),
        ("limit=many", StatusCode::BAD_REQUEST),
    ] {
        let r = api
            .http
            .get(format!("{}/v1/review/gaps?{query}", api.base))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), status, "{query}");
    }
    // The library's report is the endpoint's.
    let direct = api.grace.gaps_blocking(None, 50).unwrap();
    assert_eq!(direct.questions as u64, counted);
}

/// `feedback.document_boost` on: a rating moves the rated answer's
/// document in the searches that follow, by its bounded boost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_document_boost_on_a_down_rating_moves_its_document_down() {
    let api = Api::start(|c| {
        c.feedback.document_boost = 0.2;
        c.feedback.escalate_on_wrong = false;
    })
    .await;
    let kb = api.grace.knowledge_base().clone();
    let outcome = api.ask(ANSWERED, "alice").await;
    assert_eq!(outcome["status"], "answered", "{outcome}");
    let id = outcome["answer_id"].as_str().unwrap().to_string();
    // The documents as the store names them (the API shows them relative).
    let cited = api.grace.feedback().run(&id).unwrap().unwrap().sources;
    assert!(!cited.is_empty(), "{outcome}");
    let search = kb.clone();
    let before = tokio::task::spawn_blocking(move || search.search(ANSWERED, Some(5), None))
        .await
        .unwrap()
        .unwrap();
    assert!(kb.document_boosts().is_empty());

    let (s, body) = api.rate(&id, "down", "outdated", "alice").await;
    assert_eq!(s, StatusCode::OK, "{body}");
    let boosts = kb.document_boosts();
    // One vote down: 0.2 × (0 − 1) / (0 + 1 + 1).
    for source in &cited {
        let boost = boosts.get(source).copied();
        assert!(
            boost.is_some_and(|b| (b + 0.1).abs() < 1e-6),
            "{source}: {boosts:?}"
        );
    }
    let search = kb.clone();
    let after = tokio::task::spawn_blocking(move || search.search(ANSWERED, Some(5), None))
        .await
        .unwrap()
        .unwrap();
    for p in before
        .iter()
        .filter(|p| cited.contains(&p.source) && !p.pinned)
    {
        let moved = after.iter().find(|q| q.id == p.id).expect("still found");
        assert!(
            (moved.fused_score - (p.fused_score - 0.1)).abs() < 1e-5,
            "{} {} -> {}",
            p.source,
            p.fused_score,
            moved.fused_score
        );
    }
}

/// A document's rating history is a factor of the next answer citing it:
/// a wrong answer from a page warns about the next one from that page.
/// With a weight (a refit on feedback gives it one), an answer citing a
/// document rated down scores lower, and the run keeps the factor, so the
/// next refit learns from it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_citing_a_document_rated_down_scores_lower() {
    use grace::confidence::Factor;
    let api = Api::start(|c| {
        c.confidence.weights.document_history = 2.0;
        c.feedback.escalate_on_wrong = false;
    })
    .await;
    let first = api.ask(ANSWERED, "alice").await;
    assert_eq!(first["status"], "answered", "{first}");
    let id = first["answer_id"].as_str().unwrap().to_string();
    let run = api.grace.feedback().run(&id).unwrap().unwrap();
    // No rating yet: no history, and no factor that reads as "even".
    let factors = run.factors.clone().unwrap();
    assert_eq!(factors.get(Factor::DocumentHistory), None, "{factors:?}");
    assert!(api.grace.document_history().is_empty());

    let (s, body) = api.rate(&id, "down", "wrong", "alice").await;
    assert_eq!(s, StatusCode::OK, "{body}");
    // One vote down for each cited document: (0 − 1) / (0 + 1 + 1).
    let history = api.grace.document_history();
    for source in &run.sources {
        let h = history.get(source).copied();
        assert!(h.is_some_and(|h| (h + 0.5).abs() < 1e-3), "{history:?}");
    }

    let second = api.ask(ANSWERED, "carol").await;
    let id2 = second["answer_id"].as_str().unwrap().to_string();
    let rerun = api.grace.feedback().run(&id2).unwrap().unwrap();
    assert_eq!(rerun.sources, run.sources, "{second}");
    let factors2 = rerun.factors.clone().unwrap();
    let h = factors2.get(Factor::DocumentHistory);
    assert!(h.is_some_and(|h| (h + 0.5).abs() < 1e-3), "{factors2:?}");
    // Everything else as before: the history alone lowers it, by its
    // weight's share of the logit (2 × −0.5).
    assert!(
        rerun.confidence < run.confidence,
        "{} -> {}",
        run.confidence,
        rerun.confidence
    );
    let logit = |p: f64| (p / (1.0 - p)).ln();
    let drop = logit(run.confidence) - logit(rerun.confidence);
    assert!((drop - 1.0).abs() < 2e-3, "logit fell by {drop}");
    // The page's "why" names it among what lowered the confidence.
    let named = second["steps"].as_array().unwrap().iter().any(|s| {
        s["confidence"]["contributions"]
            .to_string()
            .contains("document_history")
    });
    assert!(named, "{second}");
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
    // The answer rated down is what the knowledge base is missing, said in
    // words a person reads ("1 question", "1 group").
    let gaps = run(&["gaps"]);
    let said = String::from_utf8_lossy(&gaps.stdout);
    assert!(
        said.starts_with(
            "What the knowledge base is missing: 1 question people did not get an answer to in the last 30 days, in 1 group."
        ),
        "{said}"
    );
    assert!(said.contains(&format!("1. \"{ANSWERED}\"")), "{said}");
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
    // Scored with dana's rating (up, now) of the documents it cites, as a
    // server would: one vote up is (1 − 0) / (1 + 0 + 1).
    // (The answer step's; an escalation's `ask_user` step may follow it.)
    let history = report["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["confidence"]["contributions"].as_array())
        .flatten()
        .find(|c| c["factor"] == "document_history")
        .unwrap_or_else(|| panic!("no document_history in {report}"));
    // (A second or two old: its weight has barely begun to decay.)
    let value = history["value"].as_f64().unwrap();
    assert!((value - 0.5).abs() < 1e-3, "{history}");

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

    // Two labels are too few for a fit: said, with what to do.
    let file = dir.path().join("feedback-fit.json");
    let calibrate = || {
        run(&[
            "--json",
            "calibrate",
            "--from-feedback",
            "--out",
            file.to_str().unwrap(),
        ])
    };
    let few = calibrate();
    assert_eq!(few.status.code(), Some(grace::EXIT_BAD_INPUT as i32));
    assert!(
        common::output_text(&few).contains("at least 10 of each"),
        "{}",
        common::output_text(&few)
    );
    assert!(!file.exists());
    // Twenty more, half of them up, in one conversation.
    let mut lines = String::new();
    for k in 0..20 {
        let vote = if k % 2 == 0 {
            "/good"
        } else {
            "/bad incomplete"
        };
        lines.push_str(&format!("{ANSWERED}\n{vote}\n"));
    }
    let chat = common::with_input(common::grace_cmd(dir.path(), &["chat"]), &lines);
    assert!(chat.status.success(), "{}", common::output_text(&chat));
    // The ratings become a fit: `grace calibrate --from-feedback`.
    let fitted = calibrate();
    assert!(fitted.status.success(), "{}", common::output_text(&fitted));
    let fit: Value = serde_json::from_slice(&fitted.stdout).unwrap();
    assert_eq!(fit["fit"]["labels"], 22, "{fit}");
    assert!(fit["fit"]["out_of_fold"]["n"].as_u64() == Some(22), "{fit}");
    let on_file: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(on_file["fitted_on"]["questions"], 22);
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
    // Beside it, what labelling every question would give, on the same
    // held-out questions.
    let reference = &feedback["reference"];
    assert!(reference["labels"].as_u64().unwrap() > 30, "{reference}");
    assert!(reference["fare"]["auroc"].is_number(), "{reference}");
    assert_eq!(reference["fare"]["n"], curve[0]["fare"]["n"]);
    // The factors only feedback makes possible, each beside the
    // refitted confidence alone, on draws of ratings (the first is the
    // curve's), out of fold on the held-out questions with an answer step.
    let factors = &feedback["factors"];
    assert_eq!(factors["draws"], 20, "{factors}");
    let scored = factors["questions"].as_f64().unwrap();
    let held_out = feedback["held_out"].as_f64().unwrap();
    assert!(scored > 0.0 && scored <= held_out, "{factors}");
    for key in ["with_rated_neighbours", "with_rated_documents"] {
        let n = factors[key].as_f64().unwrap();
        assert!((0.0..=scored).contains(&n), "{key}: {factors}");
    }
    assert_eq!(factors["confidence"]["raised_auroc"], 0);
    // Beside them, the refit's own scores without and with the documents'
    // history, as GRACE scores it.
    assert_eq!(factors["refit"]["raised_auroc"], 0);
    let keys = [
        "confidence",
        "nearest_rated",
        "document_history",
        "both",
        "refit",
        "refit_with_history",
    ];
    for key in keys {
        let fare = &factors[key];
        let auroc = fare["auroc"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&auroc), "{key}: {fare}");
        assert!(
            fare["raised_auroc"].as_u64().unwrap() <= 20,
            "{key}: {fare}"
        );
        let coverage = fare["coverage_at_risk_10"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&coverage), "{key}: {fare}");
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
    // The document boost measured on the ranking: the sample's answers
    // rated, the other answerable questions searched without and with it.
    assert!(report["feedback"].get("document_boost").is_none());
    let boosted = simulate(&["--feedback-noise", "0.1", "--document-boost", "0.05"]);
    assert!(
        boosted.status.success(),
        "{}",
        common::output_text(&boosted)
    );
    let boosted: Value = serde_json::from_slice(&boosted.stdout).unwrap();
    let probe = &boosted["feedback"]["document_boost"];
    assert_eq!(probe["boost"], 0.05);
    assert!(probe["rated_answers"].as_u64().unwrap() <= 30, "{probe}");
    assert!(probe["questions"].as_u64().unwrap() > 0, "{probe}");
    for key in [
        "recall_at_1",
        "recall_at_k",
        "boosted_recall_at_1",
        "boosted_recall_at_k",
    ] {
        let r = probe[key].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&r), "{key}: {probe}");
    }
    // Measuring it changes nothing of the learning curve.
    assert_eq!(boosted["feedback"]["curve"], report["feedback"]["curve"]);

    for bad in [
        vec!["eval", set, "--feedback", "42"],
        vec!["eval", set, "--feedback", "10", "--feedback-noise", "1.5"],
        vec!["eval", set, "--feedback", "10", "--document-boost", "0.5"],
    ] {
        let out = common::grace(dir.path(), &bad);
        assert_eq!(
            out.status.code(),
            Some(grace::EXIT_BAD_INPUT as i32),
            "{bad:?}"
        );
        let text = common::output_text(&out);
        let flag = if bad.contains(&"--document-boost") {
            "--document-boost"
        } else {
            "--feedback"
        };
        assert!(text.contains(flag), "{text}");
    }
}

/// `grace gaps` where nothing was recorded: an empty report, no folder
/// created; its bounds said with the exit code for bad input.
#[test]
fn the_gap_report_of_a_fresh_folder_is_empty_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = common::grace(dir.path(), &["gaps"]);
    assert!(out.status.success(), "{}", common::output_text(&out));
    assert!(common::output_text(&out).contains("No unanswered questions"));
    let json = common::grace(dir.path(), &["--json", "gaps"]);
    let report: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(report["questions"], 0);
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "nothing created"
    );
    let bad = common::grace(dir.path(), &["gaps", "--limit", "0"]);
    assert_eq!(bad.status.code(), Some(grace::EXIT_BAD_INPUT as i32));
    assert!(common::output_text(&bad).contains("limit must be between 1 and 1000"));
}

/// Waits up to two minutes for `path` to be written (a fit on a thread of
/// its own).
async fn written(path: &std::path::Path) {
    for _ in 0..1200 {
        if path.exists() {
            // The weights are put in use just after the file is written.
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("{} was never written", path.display());
}

/// A fit on feedback outranks a self-calibration, at start and while
/// serving alike: an ingest that self-calibrates again must not put aside
/// the weights people's ratings gave (a restart would bring them back,
/// so the weights would depend on when the server last started).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_self_calibration_while_serving_leaves_the_fit_on_feedback_in_use() {
    let auto = |c: &mut Config| {
        let sc = &mut c.confidence.self_calibration;
        sc.mode = grace::config::SelfCalibrationMode::Auto;
        sc.min_sections = 10;
        sc.questions = 30;
    };
    // A fit to stand for one on feedback: a self-calibration of the
    // sample, its bias moved so its weights are its own.
    let first = Api::start(auto).await;
    let self_fit = first.grace.config().self_calibration_path();
    written(&self_fit).await;
    let mut fit: Value = serde_json::from_slice(&std::fs::read(&self_fit).unwrap()).unwrap();
    let bias = fit["weights"]["bias"].as_f64().unwrap();
    fit["weights"]["bias"] = json!(bias + 0.5);
    drop(first);

    let dir = tempfile::tempdir().unwrap();
    let mut config = common::config(dir.path());
    auto(&mut config);
    std::fs::create_dir_all(&config.storage.data_dir).unwrap();
    std::fs::write(
        config.feedback_calibration_path(),
        serde_json::to_vec(&fit).unwrap(),
    )
    .unwrap();
    let fitted = serde_json::from_value(fit["weights"].clone()).unwrap();
    let expected = grace::confidence::Scorer::new(&config.confidence, Some(fitted)).version();
    // The ingest of the sample self-calibrates on a thread of its own.
    let grace = common::sample_service(config.clone()).await;
    written(&config.self_calibration_path()).await;
    let server = common::serve(grace.clone()).await;
    let api = Api {
        base: server.base.clone(),
        http: reqwest::Client::new(),
        grace,
        _server: server,
        _dir: dir,
    };
    let outcome = api.ask(ANSWERED, "alice").await;
    let (s, body) = api
        .post(
            &rating_path(&outcome),
            json!({"vote": "up", "asker": "alice"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    let labelled = api.grace.feedback().labelled().unwrap();
    assert_eq!(
        labelled[0].run.weights_version, expected,
        "the run was scored with the self-calibration, not the fit on feedback"
    );
}
