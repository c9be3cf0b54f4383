//! The review endpoints over real HTTP (the router on a loopback port):
//! success and each error status, reviewer visibility, messages, context,
//! and an asker waiting on `/v1/escalations/{id}?wait=`.

use crate::support::common;

use std::sync::Arc;

use grace::confidence::Level;
use grace::exec::{CONFIRM_OPTION_PREFIX, Decision, NOT_ANSWERED_OPTION, RunReport};
use grace::plan::PlanOrigin;
use grace::review::{NewEscalation, ReviewQueue};
use grace::tools::{Answer, Urgency, UserRequest};
use serde_json::{Value, json};

fn escalated_run(question: &str) -> RunReport {
    RunReport {
        question: question.into(),
        rewrite: None,
        answer: Some(Answer {
            text: "A draft [1].".into(),
            citations: Vec::new(),
            abstained: false,
            self_confidence: None,
            usage: Default::default(),
            generator: "extractive".into(),
        }),
        confidence: 0.4,
        level: Level::Confirm,
        decision: Decision::Escalate,
        escalation: Some(UserRequest {
            question: question.into(),
            reason: "confidence 0.40 is below 0.70 (notify)".into(),
            options: vec![
                format!("{CONFIRM_OPTION_PREFIX}A draft [1]."),
                NOT_ANSWERED_OPTION.into(),
            ],
            urgency: Urgency::Blocking,
            awaiting_response: true,
        }),
        plan: PlanOrigin::Default,
        recovered: false,
        decided_by: None,
        steps: Vec::new(),
        agent: None,
        clarification: None,
        parked: None,
        conversation: Vec::new(),
        scope: Default::default(),
    }
}

struct Server {
    _dir: tempfile::TempDir,
    server: common::TestServer,
    queue: Arc<ReviewQueue>,
    http: reqwest::Client,
    /// Each reviewer's own token: the only thing that names a reviewer.
    tokens: std::sync::Mutex<std::collections::HashMap<String, String>>,
}

impl Server {
    async fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let config = common::config(dir.path());
        let grace = grace::Grace::builder(config)
            .embedder(common::embedder())
            .build()
            .unwrap();
        let queue: Arc<ReviewQueue> = grace.escalations().clone();
        let mut tokens = std::collections::HashMap::new();
        for id in ["alice", "bob"] {
            tokens.insert(id.to_string(), common::reviewer(&queue, id, id));
        }
        let server = common::serve(grace).await;
        Self {
            _dir: dir,
            server,
            queue,
            http: reqwest::Client::new(),
            tokens: std::sync::Mutex::new(tokens),
        }
    }

    fn escalate(&self, allowed: Option<Vec<String>>) -> i64 {
        let run = escalated_run("How do I roll back?");
        self.queue
            .escalate(NewEscalation {
                report: &run,
                collection: "grace",
                asker: "user",
                allowed,
                timeout: None,
                vector: None,
            })
            .unwrap()
            .id
    }

    async fn call(
        &self,
        method: &str,
        path: &str,
        who: Option<&str>,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut req = self.http.request(
            method.parse().unwrap(),
            format!("{}{path}", self.server.base),
        );
        if let Some(w) = who {
            // Someone never registered presents a well-formed token GRACE
            // never issued.
            let token = self.tokens.lock().unwrap().get(w).cloned();
            req = req.bearer_auth(token.unwrap_or_else(|| format!("grv_{}", "0".repeat(64))));
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        let res = req.send().await.unwrap();
        let status = res.status().as_u16();
        let text = res.text().await.unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }
}

fn error_type(v: &Value) -> &str {
    v["error"]["type"].as_str().unwrap_or("")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_review_flow_over_http_with_every_error_status() {
    let s = Server::start().await;
    let (code, health) = s.call("GET", "/health", None, None).await;
    assert_eq!((code, health["status"].as_str()), (200, Some("ok")));
    let (code, page) = s.call("GET", "/review", None, None).await;
    assert_eq!(code, 200);
    assert!(page.as_str().unwrap().contains("escalations to review"));

    let public = s.escalate(None);
    let private = s.escalate(Some(vec!["alice".into()]));
    let ids = |v: &Value| -> Vec<i64> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|e| e["id"].as_i64().unwrap())
            .collect()
    };
    let (_, l) = s
        .call("GET", "/v1/review/escalations", Some("alice"), None)
        .await;
    assert_eq!(ids(&l), [private, public]);
    let (_, l) = s
        .call("GET", "/v1/review/escalations", Some("bob"), None)
        .await;
    assert_eq!(ids(&l), [public]);
    // Without keys (loopback), no token is the administrator: sees all.
    let (_, l) = s.call("GET", "/v1/review/escalations", None, None).await;
    assert_eq!(ids(&l), [private, public]);
    let (code, v) = s
        .call("GET", "/v1/review/escalations?status=bogus", None, None)
        .await;
    assert_eq!((code, error_type(&v)), (400, "invalid_request"));

    // Not visible = not found, the same as a missing id.
    let (code, v) = s
        .call(
            "GET",
            &format!("/v1/review/escalations/{private}"),
            Some("bob"),
            None,
        )
        .await;
    assert_eq!((code, error_type(&v)), (404, "not_found"));
    let (code, _) = s
        .call("GET", "/v1/review/escalations/999", Some("bob"), None)
        .await;
    assert_eq!(code, 404);
    let (code, v) = s
        .call(
            "GET",
            &format!("/v1/review/escalations/{public}"),
            Some("bob"),
            None,
        )
        .await;
    assert_eq!(code, 200);
    assert_eq!(v["request"]["options"].as_array().unwrap().len(), 2);

    // Claims: a reviewer's token is required (the administrator acts as
    // no reviewer); the second claimer conflicts.
    let claim = format!("/v1/review/escalations/{public}/claim");
    let (code, v) = s.call("POST", &claim, None, None).await;
    assert_eq!((code, error_type(&v)), (403, "forbidden"));
    let (code, v) = s.call("POST", &claim, Some("alice"), None).await;
    assert_eq!((code, v["status"].as_str()), (200, Some("claimed")));
    let (code, v) = s.call("POST", &claim, Some("bob"), None).await;
    assert_eq!((code, error_type(&v)), (409, "conflict"));
    let (code, v) = s.call("POST", &claim, Some("mallory"), None).await;
    assert_eq!((code, error_type(&v)), (401, "unauthorized"));

    let answer = format!("/v1/review/escalations/{public}/answer");
    // No body is not JSON (415); both an answer and an option fit neither
    // shape (422); an option the escalation does not offer is a conflict
    // with its state (409). The published schema says the same.
    let (code, _) = s.call("POST", &answer, Some("alice"), None).await;
    assert_eq!(code, 415);
    let (code, v) = s
        .call(
            "POST",
            &answer,
            Some("alice"),
            Some(json!({"text": "x", "option": 1})),
        )
        .await;
    assert_eq!((code, error_type(&v)), (422, "invalid_request"));
    let (code, _) = s
        .call("POST", &answer, Some("alice"), Some(json!({"option": 7})))
        .await;
    assert_eq!(code, 409);
    let (code, _) = s
        .call("POST", &answer, Some("alice"), Some(json!([{"option": 1}])))
        .await;
    assert_eq!(code, 422, "an array is not an answer");

    // The asker waits on the HTTP endpoint while alice answers.
    let waiting = {
        let http = s.http.clone();
        let url = format!(
            "{}/v1/escalations/{public}?wait=30&handle={}",
            s.server.base,
            s.queue.asker_handle(public)
        );
        tokio::spawn(async move {
            http.get(url)
                .send()
                .await
                .unwrap()
                .json::<Value>()
                .await
                .unwrap()
        })
    };
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let (code, v) = s
        .call(
            "POST",
            &answer,
            Some("alice"),
            Some(json!({"text": "Run orbit rollback.", "confidence": 0.95})),
        )
        .await;
    assert_eq!((code, v["status"].as_str()), (200, Some("answered")), "{v}");
    let got = waiting.await.unwrap();
    assert_eq!(got["status"], "answered");
    assert_eq!(
        got["resolution"]["report"]["answer"]["text"],
        "Run orbit rollback."
    );
    assert_eq!(got["resolution"]["report"]["decided_by"], "reviewer:alice");

    let (code, v) = s
        .call("POST", &answer, Some("alice"), Some(json!({"option": 1})))
        .await;
    assert_eq!((code, error_type(&v)), (409, "conflict"));
    let (code, v) = s
        .call(
            "GET",
            &format!("/v1/review/escalations/{public}/log"),
            None,
            None,
        )
        .await;
    assert_eq!(code, 200);
    assert_eq!(v.as_array().unwrap().len(), 3);

    let reject = format!("/v1/review/escalations/{private}/reject");
    let (code, _) = s
        .call("POST", &reject, Some("bob"), Some(json!({"why": "no"})))
        .await;
    assert_eq!(code, 404);
    let (code, _) = s
        .call("POST", &reject, Some("alice"), Some(json!({"why": " "})))
        .await;
    assert_eq!(code, 400);
    let (code, v) = s
        .call(
            "POST",
            &reject,
            Some("alice"),
            Some(json!({"why": "Ask the release team."})),
        )
        .await;
    assert_eq!((code, v["outcome"].as_str()), (200, Some("rejected")));
    let handle = s.queue.asker_handle(private);
    // Without the asker's handle (or with another's) it reads as missing.
    for wrong in [String::new(), s.queue.asker_handle(public)] {
        let (code, _) = s
            .call(
                "GET",
                &format!("/v1/escalations/{private}?handle={wrong}"),
                None,
                None,
            )
            .await;
        assert_eq!(code, 404);
    }
    let (code, v) = s
        .call(
            "GET",
            &format!("/v1/escalations/{private}?handle={handle}"),
            None,
            None,
        )
        .await;
    assert_eq!(
        (code, v["resolution"]["note"].as_str()),
        (200, Some("Ask the release team."))
    );
    let (code, _) = s.call("GET", "/v1/escalations/999", None, None).await;
    assert_eq!(code, 404);
    let (code, _) = s
        .call(
            "GET",
            &format!("/v1/escalations/{private}?wait=9999&handle={handle}"),
            None,
            None,
        )
        .await;
    assert_eq!(code, 400);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reviewers_messages_and_context_over_http() {
    let s = Server::start().await;
    let (code, _) = s
        .call(
            "POST",
            "/v1/review/reviewers",
            None,
            Some(json!({"id": "", "name": "x", "description": ""})),
        )
        .await;
    assert_eq!(code, 400);
    let (code, v) = s
        .call(
            "POST",
            "/v1/review/reviewers",
            None,
            Some(json!({"id": "carol", "name": "Carol", "description": "docs"})),
        )
        .await;
    assert_eq!(code, 200, "{v}");
    // The token comes back once, and names carol.
    let carol = v["token"].as_str().unwrap().to_string();
    s.tokens.lock().unwrap().insert("carol".into(), carol);
    let (_, me) = s.call("GET", "/v1/review/me", Some("carol"), None).await;
    assert_eq!(
        (me["role"].as_str(), me["reviewer"].as_str()),
        (Some("reviewer"), Some("carol"))
    );
    let (_, v) = s.call("GET", "/v1/review/reviewers", None, None).await;
    assert_eq!(v.as_array().unwrap().len(), 3);

    let (code, v) = s
        .call(
            "POST",
            "/v1/review/messages",
            Some("alice"),
            Some(json!({"recipient": "bob", "subject": "hi", "body": "Look at #1"})),
        )
        .await;
    assert_eq!(code, 200);
    let msg = v["id"].as_i64().unwrap();
    let (code, _) = s
        .call(
            "POST",
            "/v1/review/messages",
            Some("alice"),
            Some(json!({"body": ""})),
        )
        .await;
    assert_eq!(code, 400);
    let (_, v) = s
        .call(
            "GET",
            "/v1/review/messages?status=pending",
            Some("bob"),
            None,
        )
        .await;
    assert_eq!(v[0]["body"], "Look at #1");
    let (code, _) = s.call("GET", "/v1/review/messages", None, None).await;
    assert_eq!(code, 403);
    let (code, v) = s
        .call(
            "POST",
            &format!("/v1/review/messages/{msg}/read"),
            Some("bob"),
            None,
        )
        .await;
    assert_eq!((code, v["status"].as_str()), (200, Some("read")));
    let (code, _) = s
        .call(
            "POST",
            &format!("/v1/review/messages/{msg}/read"),
            Some("carol"),
            None,
        )
        .await;
    assert_eq!(code, 404);
    let (code, v) = s
        .call(
            "POST",
            &format!("/v1/review/messages/{msg}/archive"),
            Some("bob"),
            None,
        )
        .await;
    assert_eq!((code, v["status"].as_str()), (200, Some("archived")));
    let (_, v) = s
        .call(
            "GET",
            "/v1/review/messages?status=pending",
            Some("bob"),
            None,
        )
        .await;
    assert!(v.as_array().unwrap().is_empty());

    let (code, v) = s
        .call(
            "PUT",
            "/v1/review/context/incident",
            Some("alice"),
            Some(json!({"value": {"id": "INC-7"}, "allowed": ["bob"]})),
        )
        .await;
    assert_eq!((code, v["owner"].as_str()), (200, Some("alice")));
    let (code, v) = s
        .call("GET", "/v1/review/context/incident", Some("bob"), None)
        .await;
    assert_eq!((code, v["value"]["id"].as_str()), (200, Some("INC-7")));
    let (hidden, hv) = s
        .call("GET", "/v1/review/context/incident", Some("carol"), None)
        .await;
    let (missing, mv) = s
        .call("GET", "/v1/review/context/nothing", Some("carol"), None)
        .await;
    assert_eq!((hidden, missing), (404, 404));
    assert_eq!(error_type(&hv), error_type(&mv));
    let (code, _) = s
        .call(
            "PUT",
            "/v1/review/context/incident",
            Some("bob"),
            Some(json!({"value": 1})),
        )
        .await;
    assert_eq!(code, 400);
}
