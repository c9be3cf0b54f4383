//! The HTTP API end to end on the real store and model: every service
//! endpoint with its success and error statuses, auth on and off, the body
//! and concurrency limits, the request timeout, server-sent event order, a
//! client that disconnects mid-stream (its run is cancelled, not leaked), a
//! slow generator that does not hold up other requests, and a graceful
//! shutdown that finishes the request in flight. The slow generator is an
//! in-process mock: the extractive answerer, delayed for questions that
//! contain "SLOWLY".

use crate::support::common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use grace::llm::{GenerateRequest, Generation, LlmClient};
use grace::{Config, Grace};
use reqwest::StatusCode;
use serde_json::{Value, json};

/// How long a "SLOWLY" question keeps the generator busy.
const SLOW: Duration = Duration::from_secs(4);

/// The extractive answerer, `SLOW` late for questions containing "SLOWLY".
struct SlowLlm(Arc<dyn LlmClient>);

impl LlmClient for SlowLlm {
    fn name(&self) -> &str {
        "slow-extractive"
    }
    fn generate(&self, request: &GenerateRequest) -> grace::llm::Result<Generation> {
        if format!("{request:?}").contains("SLOWLY") {
            std::thread::sleep(SLOW);
        }
        self.0.generate(request)
    }
}

struct Api {
    base: String,
    http: reqwest::Client,
    grace: Grace,
    server: Option<common::TestServer>,
    _dir: tempfile::TempDir,
}

impl Api {
    /// A server on the sample knowledge base, with `tweak` applied to the
    /// configuration.
    async fn start(tweak: impl FnOnce(&mut Config)) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let mut config = common::config(dir.path());
        // Generous: a slow ask must not time out unless a test wants it.
        config.tools.reasoning.timeout_seconds = 30.0;
        config.tools.reasoning.retry_count = 0;
        tweak(&mut config);
        let extractive = grace::llm::from_config(&config.llm, common::embedder()).unwrap();
        let grace = Grace::builder(config)
            .embedder(common::embedder())
            .generator(Arc::new(SlowLlm(extractive)))
            .build()
            .unwrap();
        grace
            .ingest(vec![common::repo().join("examples/kb")], Default::default())
            .await
            .unwrap();
        let server = common::serve(grace.clone()).await;
        Self {
            base: server.base.clone(),
            http: reqwest::Client::new(),
            grace,
            server: Some(server),
            _dir: dir,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        let r = self
            .http
            .post(self.url(path))
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = r.status();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    async fn get(&self, path: &str) -> (StatusCode, Value) {
        let r = self.http.get(self.url(path)).send().await.unwrap();
        let status = r.status();
        (status, r.json().await.unwrap_or(Value::Null))
    }
}

fn error_type(body: &Value) -> &str {
    body["error"]["type"].as_str().unwrap_or("<no error body>")
}

/// An asker may ask for a person whatever GRACE decides (the asker's page
/// offers it after a decline): the run is queued with its answer as the
/// reviewer's draft, and the asker follows it like any escalation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_asker_who_asks_for_a_person_is_queued_whatever_grace_decided() {
    let api = Api::start(|_| {}).await;
    let question = "How long are nightly backups kept?";
    let (s, plain) = api.post("/v1/ask", json!({ "question": question })).await;
    assert_eq!(s, StatusCode::OK, "{plain}");
    assert_eq!(plain["decision"], "answer", "{plain}");
    let (s, asked) = api
        .post("/v1/ask", json!({ "question": question, "escalate": true }))
        .await;
    assert_eq!(s, StatusCode::OK, "{asked}");
    assert_eq!(asked["decision"], "escalate", "{asked}");
    assert_eq!(asked["status"], "escalated");
    let id = asked["review_id"].as_i64().expect("queued");
    let handle = asked["review_handle"].as_str().unwrap();
    let (s, view) = api
        .get(&format!("/v1/escalations/{id}?handle={handle}"))
        .await;
    assert_eq!(
        (s, view["status"].as_str()),
        (StatusCode::OK, Some("pending"))
    );
    let escalation = api
        .grace
        .escalations()
        .get(id, grace::review::Viewer::Admin)
        .unwrap();
    assert!(
        escalation.reason.contains("the asker asked for a person"),
        "{}",
        escalation.reason
    );
    // The draft is offered to the reviewer to confirm, never sent as an answer.
    assert!(
        escalation.request.options[0].contains("35 days"),
        "{:?}",
        escalation.request.options
    );
    // Not queued when the asker says so: escalated, no id.
    let (_, unqueued) = api
        .post(
            "/v1/ask",
            json!({ "question": question, "escalate": true, "queue": false }),
        )
        .await;
    assert_eq!(unqueued["decision"], "escalate");
    assert!(unqueued["review_id"].is_null());
    let (s, bad) = api
        .post(
            "/v1/ask",
            json!({ "question": question, "escalate": "yes" }),
        )
        .await;
    assert!(s.is_client_error(), "{bad}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_endpoint_answers_and_reports_errors_as_json() {
    // Remote callers may name server paths only inside ingest.allowed_roots.
    let docs = tempfile::tempdir().unwrap();
    let root = docs.path().to_path_buf();
    let api = Api::start(move |c| {
        c.server.max_body_bytes = 64 * 1024;
        c.ingest.allowed_roots = vec![root];
    })
    .await;

    let (s, body) = api.get("/health").await;
    assert_eq!((s, body["status"].as_str()), (StatusCode::OK, Some("ok")));

    let (s, doc) = api.get("/openapi.json").await;
    assert_eq!(s, StatusCode::OK);
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    for p in ["/v1/ask", "/v1/search", "/v1/ingest", "/v1/status"] {
        assert!(doc["paths"][p].is_object(), "{p} not documented");
    }

    let (s, status) = api.get("/v1/status").await;
    assert_eq!(s, StatusCode::OK);
    assert!(
        status["knowledge_base"]["store"]["points"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert_eq!(status["runs"]["in_flight"], 0);

    // search
    let (s, found) = api
        .post(
            "/v1/search",
            json!({"query": "rotate an API key", "limit": 3}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{found}");
    let passages = found["passages"].as_array().unwrap();
    assert_eq!(passages.len(), 3);
    assert!(
        passages[0]["source"]
            .as_str()
            .unwrap()
            .ends_with("secrets.html")
    );
    let (s, e) = api.post("/v1/search", json!({"query": "  "})).await;
    assert_eq!(
        (s, error_type(&e)),
        (StatusCode::BAD_REQUEST, "invalid_request")
    );
    // A huge limit is refused with 400, not allocated (it aborted the
    // process before).
    let (s, e) = api
        .post(
            "/v1/search",
            json!({"query": "x", "limit": 1_000_000_000_000u64}),
        )
        .await;
    assert_eq!(
        (s, error_type(&e)),
        (StatusCode::BAD_REQUEST, "invalid_request")
    );
    assert!(e["error"]["message"].as_str().unwrap().contains("1..=1000"));

    // ask, as JSON
    let (s, answer) = api
        .post(
            "/v1/ask",
            json!({"question": "How do I rotate an API key?"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{answer}");
    assert!(answer["confidence"].as_f64().unwrap() > 0.0);
    assert!(
        answer["answer"]["citations"]
            .as_array()
            .is_some_and(|c| !c.is_empty())
    );
    assert_eq!(answer["review_id"], Value::Null);
    // An escalated one is queued and the asker can follow it.
    let (s, escalated) = api
        .post(
            "/v1/ask",
            json!({"question": "Can I deploy on Fridays?", "asker": "svc"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(escalated["decision"], "escalate", "{escalated}");
    let id = escalated["review_id"].as_i64().unwrap();
    let handle = escalated["review_handle"].as_str().unwrap();
    let (s, _) = api.get(&format!("/v1/escalations/{id}")).await;
    assert_eq!(s, StatusCode::NOT_FOUND, "readable by id alone");
    let (s, view) = api
        .get(&format!("/v1/escalations/{id}?handle={handle}"))
        .await;
    assert_eq!(
        (s, view["status"].as_str()),
        (StatusCode::OK, Some("pending"))
    );

    // 400s: empty question (asked for JSON or for a stream), malformed
    // JSON, unknown field, wrong type
    for stream in [false, true] {
        let (s, e) = api
            .post("/v1/ask", json!({"question": "", "stream": stream}))
            .await;
        assert_eq!(
            (s, error_type(&e)),
            (StatusCode::BAD_REQUEST, "invalid_request"),
            "stream: {stream}"
        );
    }
    let r = api
        .http
        .post(api.url("/v1/ask"))
        .header("content-type", "application/json")
        .body("{\"question\": ")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    let e: Value = r.json().await.unwrap();
    assert_eq!(error_type(&e), "invalid_request");
    let (s, e) = api
        .post("/v1/ask", json!({"question": "q", "colour": 1}))
        .await;
    assert!(s.is_client_error(), "{s}");
    assert!(
        e["error"]["message"].as_str().unwrap().contains("colour"),
        "{e}"
    );
    let (s, _) = api
        .post("/v1/ask", json!({"question": "q", "limit": "many"}))
        .await;
    assert!(s.is_client_error());

    // 404: unknown route, unknown escalation, missing ingest path
    let (s, e) = api.get("/v1/nothing").await;
    assert_eq!((s, error_type(&e)), (StatusCode::NOT_FOUND, "not_found"));
    let (s, _) = api.get("/v1/escalations/9999").await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    // A path outside the roots, missing or not: 403, the same answer for both.
    let (s, e) = api
        .post("/v1/ingest", json!({"paths": ["/no/such/folder"]}))
        .await;
    assert_eq!((s, error_type(&e)), (StatusCode::FORBIDDEN, "forbidden"));

    // 413: a body over server.max_body_bytes
    let big = "x".repeat(100 * 1024);
    let (s, e) = api.post("/v1/ask", json!({"question": big})).await;
    assert_eq!(
        (s, error_type(&e)),
        (StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large")
    );

    // ingest: paths on the server (inside the root), then an upload
    std::fs::write(
        docs.path().join("pets.md"),
        "# Office pets\n\nDogs are welcome in the office on Wednesdays if they are vaccinated.\n",
    )
    .unwrap();
    let (s, report) = api
        .post("/v1/ingest", json!({"paths": [docs.path()]}))
        .await;
    assert_eq!(s, StatusCode::OK, "{report}");
    assert_eq!(report["added"], 1);
    let (s, again) = api
        .post("/v1/ingest", json!({"paths": [docs.path()]}))
        .await;
    assert_eq!((s, again["unchanged"].as_u64()), (StatusCode::OK, Some(1)));

    let boundary = "graceboundary7";
    let upload = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"parking.md\"\r\n\
         Content-Type: text/markdown\r\n\r\n# Parking\n\nVisitors park on level -2; badges open the gate.\n\r\n--{boundary}--\r\n"
    );
    let r = api
        .http
        .post(api.url("/v1/ingest"))
        .header(
            "content-type",
            format!("multipart/form-data; boundary={boundary}"),
        )
        .body(upload)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let report: Value = r.json().await.unwrap();
    assert_eq!(report["added"], 1, "{report}");
    let (_, found) = api
        .post(
            "/v1/search",
            json!({"query": "where do visitors park", "limit": 1}),
        )
        .await;
    // Shown relative to the uploads folder, not as the server's path; the
    // shown name works as a filter.
    assert_eq!(
        found["passages"][0]["source"], "uploads/parking.md",
        "{found}"
    );
    let (_, only) = api
        .post(
            "/v1/search",
            json!({"query": "where do visitors park", "source": "uploads/parking.md"}),
        )
        .await;
    assert_eq!(only["passages"].as_array().unwrap().len(), 1, "{only}");
    let (s, e) = api.post("/v1/ingest", json!({"paths": []})).await;
    assert_eq!(
        (s, error_type(&e)),
        (StatusCode::BAD_REQUEST, "invalid_request")
    );

    // 405 is JSON too
    let (s, e) = api.get("/v1/ask").await;
    assert_eq!(
        (s, error_type(&e)),
        (StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn with_an_api_key_every_endpoint_but_health_needs_the_token() {
    let key = "service-key-0123456789";
    let admin_key = "admin-key-0123456789";
    let api = Api::start(|c| {
        c.server.api_key = key.into();
        c.server.admin_api_key = admin_key.into();
    })
    .await;
    let call = |path: &str, token: Option<&str>| {
        let mut r = api.http.get(api.url(path));
        if let Some(t) = token {
            r = r.bearer_auth(t);
        }
        r.send()
    };
    assert_eq!(
        call("/health", None).await.unwrap().status(),
        StatusCode::OK
    );
    assert_eq!(
        call("/openapi.json", None).await.unwrap().status(),
        StatusCode::OK
    );
    assert_eq!(
        call("/review", None).await.unwrap().status(),
        StatusCode::OK
    );
    // The asker's page and its files hold no data: open; its key goes
    // with each API call it makes.
    for page in ["/", "/assets/ask.js", "/assets/ask.css"] {
        assert_eq!(
            call(page, None).await.unwrap().status(),
            StatusCode::OK,
            "{page}"
        );
    }

    let r = call("/v1/status", None).await.unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(r.headers()["www-authenticate"], "Bearer");
    let e: Value = r.json().await.unwrap();
    assert_eq!(error_type(&e), "unauthorized");
    assert_eq!(
        call("/v1/status", Some("wrong-key-0123456789"))
            .await
            .unwrap()
            .status(),
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        call("/v1/status", Some(key)).await.unwrap().status(),
        StatusCode::OK
    );
    // The admin key opens the service endpoints and the review ones; the
    // service key does not open the review endpoints (a service could
    // otherwise read every asker's escalation).
    assert_eq!(
        call("/v1/status", Some(admin_key)).await.unwrap().status(),
        StatusCode::OK
    );
    assert_eq!(
        call("/v1/review/escalations", Some(admin_key))
            .await
            .unwrap()
            .status(),
        StatusCode::OK
    );
    assert_eq!(
        call("/v1/review/escalations", Some(key))
            .await
            .unwrap()
            .status(),
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        call("/v1/review/escalations", None).await.unwrap().status(),
        StatusCode::UNAUTHORIZED
    );
    let r = api
        .http
        .post(api.url("/v1/ask"))
        .bearer_auth(key)
        .json(&json!({"question": "How do I rotate an API key?"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn events_stream_in_order_and_end_with_the_outcome() {
    let api = Api::start(|_| {}).await;
    let r = api
        .http
        .post(api.url("/v1/ask"))
        .header("accept", "text/event-stream")
        .json(&json!({"question": "How do I rotate an API key?"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert!(
        r.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let text = r.text().await.unwrap();
    let events: Vec<(String, Value)> = parse_sse(&text);
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    // search, then answer, each started then finished; the outcome last.
    assert_eq!(
        &names[..4],
        [
            "step_started",
            "step_finished",
            "step_started",
            "step_finished"
        ],
        "{names:?}"
    );
    assert_eq!(events[0].1["action"], "rag_search");
    assert_eq!(events[2].1["action"], "reasoning");
    assert_eq!(names.last(), Some(&"done"));
    assert_eq!(names.iter().filter(|n| **n == "done").count(), 1);
    let outcome = &events.last().unwrap().1["outcome"];
    assert_eq!(outcome["question"], "How do I rotate an API key?");
    assert!(outcome["steps"].as_array().unwrap().len() >= 2);
    // `stream: true` in the body does the same.
    let r = api
        .post_stream(json!({"question": "How do I rotate an API key?", "stream": true}))
        .await;
    assert_eq!(
        parse_sse(&r.text().await.unwrap()).last().unwrap().0,
        "done"
    );
}

impl Api {
    async fn post_stream(&self, body: Value) -> reqwest::Response {
        self.http
            .post(self.url("/v1/ask"))
            .json(&body)
            .send()
            .await
            .unwrap()
    }
}

fn parse_sse(text: &str) -> Vec<(String, Value)> {
    text.split("\n\n")
        .filter_map(|block| {
            let mut name = None;
            let mut data = String::new();
            for line in block.lines() {
                if let Some(n) = line.strip_prefix("event:") {
                    name = Some(n.trim().to_string());
                } else if let Some(d) = line.strip_prefix("data:") {
                    data.push_str(d.trim_start());
                }
            }
            Some((name?, serde_json::from_str(&data).unwrap_or(Value::Null)))
        })
        .collect()
}

/// Polls `/v1/status` until `done` holds of its `runs`, for at most `within`.
async fn wait_for_runs(api: &Api, within: Duration, done: impl Fn(&Value) -> bool) -> Value {
    let started = Instant::now();
    loop {
        let (_, status) = api.get("/v1/status").await;
        if done(&status["runs"]) {
            return status["runs"].clone();
        }
        assert!(
            started.elapsed() < within,
            "runs did not settle: {}",
            status["runs"]
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_client_that_disconnects_mid_stream_cancels_its_run() {
    let api = Api::start(|_| {}).await;
    let mut r = api
        .post_stream(json!({"question": "How do I rotate an API key SLOWLY?", "stream": true}))
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    // The first event arrives; the generator is now asleep in the run.
    let first = r.chunk().await.unwrap().unwrap();
    assert!(String::from_utf8_lossy(&first).contains("step_started"));
    let runs = wait_for_runs(&api, Duration::from_secs(2), |r| r["in_flight"] == 1).await;
    assert_eq!(runs["cancelled"], 0);
    let dropped = Instant::now();
    drop(r);
    // Cancelled well before the generator would have finished.
    let runs = wait_for_runs(&api, SLOW / 2, |r| r["in_flight"] == 0).await;
    assert_eq!(runs["cancelled"], 1, "{runs}");
    assert_eq!(runs["finished"], 0, "{runs}");
    assert!(dropped.elapsed() < SLOW / 2);
    assert_eq!(api.grace.runs().in_flight, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_slow_generator_does_not_hold_up_other_requests() {
    let api = Arc::new(Api::start(|_| {}).await);
    let slow = {
        let api = api.clone();
        tokio::spawn(async move {
            let started = Instant::now();
            let (s, _) = api
                .post(
                    "/v1/ask",
                    json!({"question": "How do I rotate an API key SLOWLY?"}),
                )
                .await;
            (s, started.elapsed())
        })
    };
    wait_for_runs(&api, Duration::from_secs(2), |r| r["in_flight"] == 1).await;
    let started = Instant::now();
    let (s, _) = api
        .post("/v1/search", json!({"query": "rotate an API key"}))
        .await;
    assert_eq!(s, StatusCode::OK);
    let (s, answer) = api
        .post(
            "/v1/ask",
            json!({"question": "How do I rotate an API key?"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(answer["question"], "How do I rotate an API key?");
    let others = started.elapsed();
    assert!(
        others < SLOW / 2,
        "a search and an ask took {others:?} behind a slow run"
    );
    let (s, slow_took) = slow.await.unwrap();
    assert_eq!(s, StatusCode::OK);
    assert!(slow_took >= SLOW, "{slow_took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn beyond_the_concurrency_limit_requests_get_429_at_once() {
    let api = Arc::new(Api::start(|c| c.server.max_concurrency = 1).await);
    let slow = {
        let api = api.clone();
        tokio::spawn(async move {
            api.post(
                "/v1/ask",
                json!({"question": "How do I rotate an API key SLOWLY?"}),
            )
            .await
            .0
        })
    };
    wait_for_runs(&api, Duration::from_secs(2), |r| r["in_flight"] == 1).await;
    let started = Instant::now();
    let r = api
        .http
        .post(api.url("/v1/search"))
        .json(&json!({"query": "rotate"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(r.headers()["retry-after"], "1");
    let e: Value = r.json().await.unwrap();
    assert_eq!(error_type(&e), "too_many_requests");
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "429 must not queue"
    );
    // Light endpoints are not limited.
    assert_eq!(api.get("/v1/status").await.0, StatusCode::OK);
    assert_eq!(slow.await.unwrap(), StatusCode::OK);
    // The permit is back.
    let (s, _) = api.post("/v1/search", json!({"query": "rotate"})).await;
    assert_eq!(s, StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_request_over_the_timeout_gets_504_and_its_run_is_cancelled() {
    let api = Api::start(|c| c.server.request_timeout = 1.0).await;
    let started = Instant::now();
    let (s, e) = api
        .post(
            "/v1/ask",
            json!({"question": "How do I rotate an API key SLOWLY?"}),
        )
        .await;
    assert_eq!(
        (s, error_type(&e)),
        (StatusCode::GATEWAY_TIMEOUT, "timeout")
    );
    assert!(started.elapsed() < SLOW, "{:?}", started.elapsed());
    let runs = wait_for_runs(&api, Duration::from_secs(1), |r| r["in_flight"] == 0).await;
    assert_eq!(runs["cancelled"], 1, "{runs}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn shutdown_finishes_the_request_in_flight_and_refuses_new_ones() {
    let mut api = Api::start(|_| {}).await;
    let http = api.http.clone();
    let url = api.url("/v1/ask");
    let in_flight = tokio::spawn(async move {
        let r = http
            .post(url)
            .json(&json!({"question": "How do I rotate an API key SLOWLY?"}))
            .send()
            .await
            .unwrap();
        let status = r.status();
        (status, r.json::<Value>().await.unwrap())
    });
    wait_for_runs(&api, Duration::from_secs(2), |r| r["in_flight"] == 1).await;
    let server = api.server.take().unwrap().begin_stop();
    tokio::time::sleep(Duration::from_millis(200)).await;
    // New work is refused: a new connection is not accepted at all (or,
    // on a kept-alive one, gets 503).
    match api.http.get(api.url("/health")).send().await {
        Ok(r) => assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE),
        Err(e) => assert!(e.is_connect() || e.is_request(), "{e}"),
    }
    let (status, answer) = in_flight.await.unwrap();
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["question"], "How do I rotate an API key SLOWLY?");
    // The server then stops by itself, with the store flushed.
    tokio::time::timeout(Duration::from_secs(5), server)
        .await
        .expect("the server did not stop")
        .unwrap()
        .unwrap();
    assert_eq!(api.grace.runs().finished, 1);
}

/// Security review: a shutdown waited for every request in flight,
/// however long. Now it waits `server.shutdown_grace_seconds`, cancels the
/// rest and flushes the store.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn shutdown_ends_within_the_grace_period_cancelling_what_still_runs() {
    let mut api = Api::start(|c| c.server.shutdown_grace_seconds = 0.5).await;
    let http = api.http.clone();
    let url = api.url("/v1/ask");
    let in_flight = tokio::spawn(async move {
        http.post(url)
            .json(&json!({"question": "How do I rotate an API key SLOWLY?"}))
            .send()
            .await
    });
    wait_for_runs(&api, Duration::from_secs(2), |r| r["in_flight"] == 1).await;
    let started = std::time::Instant::now();
    let server = api.server.take().unwrap().begin_stop();
    tokio::time::timeout(Duration::from_secs(10), server)
        .await
        .expect("the server did not stop")
        .unwrap()
        .unwrap();
    // The slow step takes 4 s: the server did not wait for it.
    assert!(
        started.elapsed() < SLOW,
        "the shutdown waited {:?} for a request past its grace",
        started.elapsed()
    );
    // The asker was told at the end of the grace, not left hanging.
    let r = in_flight.await.unwrap().unwrap();
    assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
    let e: Value = r.json().await.unwrap();
    assert_eq!(error_type(&e), "shutting_down", "{e}");
}

/// The same question asked three times while a person is asked is one
/// escalation for reviewers (the administrator's list), answered once and
/// delivered to each asker through their own handle.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_question_asked_three_times_is_one_pending_escalation() {
    let api = Api::start(|_| {}).await;
    let question = "Can I deploy on Fridays?";
    let mut asked = Vec::new();
    for asker in ["ann", "ben", "cat"] {
        let (s, outcome) = api
            .post(
                "/v1/ask",
                json!({ "question": question, "escalate": true, "asker": asker }),
            )
            .await;
        assert_eq!(s, StatusCode::OK, "{outcome}");
        assert_eq!(outcome["status"], "escalated", "{outcome}");
        // No dead end: the passages found, as possibly relevant, and no
        // typical wait before any person has answered here.
        let waiting = &outcome["while_waiting"];
        assert!(
            !waiting["possibly_relevant"].as_array().unwrap().is_empty(),
            "{outcome}"
        );
        assert!(waiting["typical_review_seconds"].is_null(), "{outcome}");
        asked.push(outcome);
    }
    let (s, list) = api.get("/v1/review/escalations").await;
    assert_eq!(s, StatusCode::OK, "{list}");
    let pending: Vec<&Value> = list
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["status"] == "pending")
        .collect();
    assert_eq!(pending.len(), 1, "{list}");
    let lead = pending[0];
    assert_eq!(lead["id"], asked[0]["review_id"]);
    let others: Vec<&str> = lead["also_asked"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["asker"].as_str().unwrap())
        .collect();
    assert_eq!(others, ["ben", "cat"]);

    let reviewer = common::reviewer(api.grace.escalations(), "rev", "Rev");
    let r = api
        .http
        .post(api.url(&format!("/v1/review/escalations/{}/answer", lead["id"])))
        .bearer_auth(&reviewer)
        .json(&json!({ "text": "Only with the release manager's approval." }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    for outcome in &asked {
        let (s, view) = api
            .get(&format!(
                "/v1/escalations/{}?handle={}",
                outcome["review_id"],
                outcome["review_handle"].as_str().unwrap()
            ))
            .await;
        assert_eq!(s, StatusCode::OK, "{view}");
        assert_eq!(view["status"], "answered", "{view}");
        assert_eq!(
            view["resolution"]["report"]["answer"]["text"],
            "Only with the release manager's approval."
        );
    }
    // Answered once: the next asker is told how long people take here.
    let (_, next) = api
        .post(
            "/v1/ask",
            json!({ "question": "Who approves expense reports?", "escalate": true }),
        )
        .await;
    let typical = next["while_waiting"]["typical_review_seconds"].as_f64();
    assert!(typical.is_some_and(|s| (0.0..60.0).contains(&s)), "{next}");
}
