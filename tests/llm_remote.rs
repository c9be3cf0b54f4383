//! The Gemini and Ollama generators against local mock servers that speak
//! each API's REST shape: answers with usage, retried 429/500, timeouts,
//! malformed output, and the LLM planner end to end through `grace ask`.
//! Nothing here touches the network.

use crate::support::common;

use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use grace::config::{LlmConfig, RemoteLlmConfig, ToolPolicy};
use grace::llm::{LlmClient, LlmError, RemoteLlm};
use grace::tools::{Reasoning, ToolOutput, ToolRegistry, ToolResult};
use serde_json::{Value, json};
use wiremock::matchers::{body_string_contains, header, method, path};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

const GEMINI_PATH: &str = "/v1beta/models/gemini-test:generateContent";

/// A mock server on its own runtime; the generators under test block on
/// theirs, as they do in a run.
struct Server {
    rt: tokio::runtime::Runtime,
    mock: MockServer,
}

impl Server {
    fn start() -> Self {
        let rt = tokio::runtime::Runtime::new().unwrap();
        let mock = rt.block_on(MockServer::start());
        Self { rt, mock }
    }
    fn mount(&self, m: Mock) {
        self.rt.block_on(m.mount(&self.mock));
    }
    fn requests(&self) -> Vec<Request> {
        self.rt
            .block_on(self.mock.received_requests())
            .unwrap_or_default()
    }
    fn uri(&self) -> String {
        self.mock.uri()
    }
}

fn remote_config(base_url: String, model: &str, timeout: f64) -> RemoteLlmConfig {
    RemoteLlmConfig {
        model: model.into(),
        base_url,
        timeout_seconds: timeout,
        ..LlmConfig::default().gemini
    }
}

fn gemini(server: &Server, timeout: f64) -> Arc<dyn LlmClient> {
    let config = remote_config(format!("{}/v1beta/", server.uri()), "gemini-test", timeout);
    Arc::new(RemoteLlm::gemini(&config, Some("test-key".into())).unwrap())
}

fn ollama(server: &Server, timeout: f64) -> Arc<dyn LlmClient> {
    let config = remote_config(server.uri(), "llama-test", timeout);
    Arc::new(RemoteLlm::ollama(&config, None).unwrap())
}

/// Gemini's generateContent response carrying `text`.
fn gemini_body(text: &str) -> Value {
    json!({
        "candidates": [{
            "content": {"role": "model", "parts": [{"text": text}]},
            "finishReason": "STOP",
            "index": 0
        }],
        "usageMetadata": {"promptTokenCount": 211, "candidatesTokenCount": 37, "totalTokenCount": 248},
        "modelVersion": "gemini-test"
    })
}

/// Ollama's /api/chat response carrying `text`.
fn ollama_body(text: &str) -> Value {
    json!({
        "model": "llama-test",
        "created_at": "2026-11-22T00:00:00Z",
        "message": {"role": "assistant", "content": text},
        "done": true,
        "done_reason": "stop",
        "prompt_eval_count": 180,
        "eval_count": 25
    })
}

const ANSWER: &str = r#"{"answer": "Rotate a key with `orbit keys rotate` [1].", "citations": [1], "confidence": 0.85, "abstained": false}"#;

/// `reasoning` over one source, run through a registry with `retries`.
fn answer_with(llm: Arc<dyn LlmClient>, retries: u32) -> ToolResult {
    answer_question(llm, retries, "How do I rotate an API key?")
}

fn answer_question(llm: Arc<dyn LlmClient>, retries: u32, question: &str) -> ToolResult {
    let registry = ToolRegistry::with_tools(vec![(
        Arc::new(Reasoning::new(llm).unwrap()),
        ToolPolicy {
            timeout_seconds: 10.0,
            retry_count: retries,
            retry_delay_seconds: 0.01,
        },
    )]);
    registry.call(
        "reasoning",
        &json!({
            "query": question,
            "sources": [{
                "text": "Rotate a key with `orbit keys rotate`. The old key stays valid for one hour.",
                "source": "/kb/secrets.md",
                "section": "Keys"
            }]
        }),
&grace::access::ReadScope::All,
    )
}

fn answer(result: &ToolResult) -> &grace::tools::Answer {
    match &result.output {
        ToolOutput::Answer(a) => a,
        other => panic!("expected an answer, got {other:?} ({:?})", result.error),
    }
}

#[test]
fn gemini_answers_with_citations_usage_and_the_answering_rules() {
    let server = Server::start();
    server.mount(
        Mock::given(method("POST"))
            .and(path(GEMINI_PATH))
            .and(header("x-goog-api-key", "test-key"))
            .respond_with(ResponseTemplate::new(200).set_body_json(gemini_body(ANSWER))),
    );
    let result = answer_with(gemini(&server, 5.0), 0);
    assert!(result.success, "{:?}", result.error);
    let a = answer(&result);
    assert_eq!(a.text, "Rotate a key with `orbit keys rotate` [1].");
    assert_eq!(a.citations[0].source.as_deref(), Some("/kb/secrets.md"));
    assert_eq!(a.self_confidence, Some(0.85));
    assert_eq!(a.generator, "gemini:gemini-test");
    assert_eq!((a.usage.input_tokens, a.usage.output_tokens), (211, 37));

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let body: Value = serde_json::from_slice(&requests[0].body).unwrap();
    let system = body["systemInstruction"]["parts"][0]["text"]
        .as_str()
        .unwrap();
    assert!(
        system.contains("only") && system.contains("cite"),
        "{system}"
    );
    assert_eq!(
        body["generationConfig"]["responseJsonSchema"]["required"],
        json!(["answer", "citations", "abstained"])
    );
    let user = body["contents"][0]["parts"][0]["text"].as_str().unwrap();
    assert!(
        user.contains("How do I rotate an API key?") && user.contains("\"id\":1"),
        "{user}"
    );
}

#[test]
fn a_japanese_question_asks_the_model_for_a_japanese_answer() {
    for (question, japanese) in [
        ("APIキーを更新するにはどうすればいいですか？", true),
        ("How do I rotate an API key?", false),
    ] {
        let server = Server::start();
        server.mount(
            Mock::given(method("POST"))
                .and(path(GEMINI_PATH))
                .respond_with(ResponseTemplate::new(200).set_body_json(gemini_body(ANSWER))),
        );
        assert!(answer_question(gemini(&server, 5.0), 0, question).success);
        let server_ollama = Server::start();
        server_ollama.mount(
            Mock::given(method("POST"))
                .and(path("/api/chat"))
                .respond_with(ResponseTemplate::new(200).set_body_json(ollama_body(ANSWER))),
        );
        assert!(answer_question(ollama(&server_ollama, 5.0), 0, question).success);
        let gemini_body: Value = serde_json::from_slice(&server.requests()[0].body).unwrap();
        let ollama_body: Value = serde_json::from_slice(&server_ollama.requests()[0].body).unwrap();
        for prompt in [gemini_body.to_string(), ollama_body.to_string()] {
            assert!(prompt.contains(question), "{prompt}");
            assert_eq!(
                prompt.contains("write the answer in Japanese"),
                japanese,
                "{question}: {prompt}"
            );
        }
    }
}

#[test]
fn gemini_429_and_500_are_retried_then_answered() {
    for status in [429, 500, 503] {
        let server = Server::start();
        server.mount(
            Mock::given(method("POST"))
                .respond_with(ResponseTemplate::new(status).set_body_json(
                    json!({"error": {"code": status, "message": "try later", "status": "UNAVAILABLE"}}),
                ))
                .up_to_n_times(1)
                .with_priority(1),
        );
        server.mount(
            Mock::given(method("POST"))
                .respond_with(ResponseTemplate::new(200).set_body_json(gemini_body(ANSWER))),
        );
        let result = answer_with(gemini(&server, 5.0), 2);
        assert!(result.success, "HTTP {status}: {:?}", result.error);
        assert_eq!(result.attempts, 2, "HTTP {status}");
        assert_eq!(server.requests().len(), 2);
    }
}

#[test]
fn retries_run_out_and_the_error_says_why() {
    let server = Server::start();
    server.mount(Mock::given(method("POST")).respond_with(ResponseTemplate::new(500)));
    let result = answer_with(gemini(&server, 5.0), 2);
    assert!(!result.success);
    assert_eq!(result.attempts, 3);
    let error = result.error.unwrap();
    assert!(error.contains("HTTP 500"), "{error}");
}

#[test]
fn a_refused_request_is_not_retried() {
    let server = Server::start();
    server.mount(
        Mock::given(method("POST")).respond_with(ResponseTemplate::new(403).set_body_json(
            json!({"error": {"code": 403, "message": "API key not valid", "status": "PERMISSION_DENIED"}}),
        )),
    );
    let result = answer_with(gemini(&server, 5.0), 3);
    assert!(!result.success);
    assert_eq!(result.attempts, 1);
    let error = result.error.unwrap();
    assert!(
        error.contains("HTTP 403") && error.contains("check the API key"),
        "{error}"
    );
}

#[test]
fn a_slow_server_times_out_and_is_retried() {
    let server = Server::start();
    server.mount(
        Mock::given(method("POST")).respond_with(
            ResponseTemplate::new(200)
                .set_body_json(gemini_body(ANSWER))
                .set_delay(Duration::from_secs(3)),
        ),
    );
    let llm = gemini(&server, 0.3);
    let err = llm
        .generate(&grace::llm::GenerateRequest {
            messages: vec![grace::llm::Message::user("hi")],
            ..Default::default()
        })
        .unwrap_err();
    assert!(matches!(err, LlmError::Timeout { .. }), "{err:?}");
    assert!(
        err.to_string().contains("no response within 0.3 s"),
        "{err}"
    );

    let result = answer_with(llm, 1);
    assert!(!result.success);
    assert_eq!(result.attempts, 2, "a timeout is retried");
    assert!(result.error.unwrap().contains("no response within"));
}

#[test]
fn a_safety_stop_fails_the_answer_without_a_retry() {
    let server = Server::start();
    server.mount(Mock::given(method("POST")).respond_with(
        ResponseTemplate::new(200).set_body_json(json!({
            "candidates": [{"finishReason": "SAFETY", "index": 0}],
            "usageMetadata": {"promptTokenCount": 211, "totalTokenCount": 211}
        })),
    ));
    let result = answer_with(gemini(&server, 5.0), 2);
    assert!(!result.success);
    assert_eq!(result.attempts, 1, "the same question gets the same block");
    let error = result.error.unwrap();
    assert!(error.contains("safety stop"), "{error}");
}

#[test]
fn malformed_output_is_an_error_not_an_answer() {
    // The model's text is not the answer JSON; then the body is not Gemini's shape.
    for body in [
        gemini_body("Sure! You rotate keys with orbit."),
        gemini_body(r#"{"answer": 42}"#),
        json!({"unexpected": true}),
    ] {
        let server = Server::start();
        server.mount(
            Mock::given(method("POST"))
                .respond_with(ResponseTemplate::new(200).set_body_json(body.clone())),
        );
        let result = answer_with(gemini(&server, 5.0), 1);
        assert!(!result.success, "{body}");
        assert!(matches!(result.output, ToolOutput::None));
        assert_eq!(
            result.attempts, 2,
            "malformed output is retried once: {body}"
        );
    }
    // Not JSON at all.
    let server = Server::start();
    server.mount(Mock::given(method("POST")).respond_with(
        ResponseTemplate::new(200).set_body_raw("<html>proxy error</html>", "text/html"),
    ));
    let result = answer_with(gemini(&server, 5.0), 0);
    assert!(!result.success);
}

#[test]
fn ollama_answers_in_json_mode_with_the_schema_in_the_instruction() {
    let server = Server::start();
    server.mount(
        Mock::given(method("POST"))
            .and(path("/api/chat"))
            .respond_with(ResponseTemplate::new(200).set_body_json(ollama_body(ANSWER))),
    );
    let result = answer_with(ollama(&server, 5.0), 0);
    assert!(result.success, "{:?}", result.error);
    let a = answer(&result);
    assert_eq!(a.generator, "ollama:llama-test");
    assert_eq!((a.usage.input_tokens, a.usage.output_tokens), (180, 25));
    assert_eq!(a.citations.len(), 1);

    let body: Value = serde_json::from_slice(&server.requests()[0].body).unwrap();
    assert_eq!(body["model"], "llama-test");
    assert_eq!(body["format"], "json");
    assert_eq!(body["stream"], false);
    let system = body["messages"][0]["content"].as_str().unwrap();
    assert_eq!(body["messages"][0]["role"], "system");
    assert!(
        system.contains("JSON schema") && system.contains("abstained"),
        "{system}"
    );
}

#[test]
fn ollama_errors_timeouts_and_malformed_output() {
    // 500 once, then an answer.
    let server = Server::start();
    server.mount(
        Mock::given(method("POST"))
            .respond_with(
                ResponseTemplate::new(500).set_body_json(json!({"error": "model is loading"})),
            )
            .up_to_n_times(1)
            .with_priority(1),
    );
    server.mount(
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(200).set_body_json(ollama_body(ANSWER))),
    );
    let result = answer_with(ollama(&server, 5.0), 1);
    assert!(result.success, "{:?}", result.error);
    assert_eq!(result.attempts, 2);

    // Too slow.
    let server = Server::start();
    server.mount(
        Mock::given(method("POST")).respond_with(
            ResponseTemplate::new(200)
                .set_body_json(ollama_body(ANSWER))
                .set_delay(Duration::from_secs(3)),
        ),
    );
    let result = answer_with(ollama(&server, 0.3), 0);
    assert!(!result.success);
    assert!(result.error.unwrap().contains("no response within 0.3 s"));

    // Prose instead of JSON.
    let server = Server::start();
    server.mount(Mock::given(method("POST")).respond_with(
        ResponseTemplate::new(200).set_body_json(ollama_body("I think the answer is 42.")),
    ));
    let result = answer_with(ollama(&server, 5.0), 0);
    assert!(!result.success);
    assert!(result.error.unwrap().contains("malformed JSON"));

    // Nobody listening.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let config = remote_config(format!("http://127.0.0.1:{port}"), "llama-test", 2.0);
    let llm: Arc<dyn LlmClient> = Arc::new(RemoteLlm::ollama(&config, None).unwrap());
    let result = answer_with(llm, 1);
    assert!(!result.success);
    assert_eq!(result.attempts, 2, "a refused connection is transient");
}

fn grace_cmd(dir: &std::path::Path) -> Command {
    let repo = common::repo();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_grace"));
    cmd.current_dir(dir)
        .env_remove("GRACE_CONFIG")
        .env_remove("GEMINI_API_KEY")
        .env("GRACE_EMBEDDING__MODEL_DIR", repo.join("models/minilm"))
        .env(
            "GRACE_EMBEDDING__RUNTIME_PATH",
            repo.join("models/libonnxruntime.so"),
        );
    cmd
}

/// `cmd` answering with Gemini at the mock `server`.
fn with_gemini(mut cmd: Command, server: &Server) -> Command {
    cmd.env("GRACE_LLM__PROVIDER", "gemini")
        .env("GRACE_LLM__GEMINI__MODEL", "gemini-test")
        .env(
            "GRACE_LLM__GEMINI__BASE_URL",
            format!("{}/v1beta/", server.uri()),
        )
        .env("GEMINI_API_KEY", "test-key");
    cmd
}

#[test]
fn gemini_without_a_key_fails_at_start_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let kb = common::repo().join("examples/kb");
    let out = grace_cmd(dir.path())
        .args(["ingest", kb.to_str().unwrap(), "-q"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let out = grace_cmd(dir.path())
        .env("GRACE_LLM__PROVIDER", "gemini")
        .args(["ask", "How do I rotate an API key?"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("GEMINI_API_KEY is not set"), "{stderr}");
    assert!(out.stdout.is_empty(), "nothing is answered");
}

/// `grace ask` with Gemini: the model plans two searches, then answers from
/// their passages; the report says the plan came from the model and counts
/// the tokens.
#[test]
fn grace_ask_with_gemini_runs_the_models_plan() {
    let server = Server::start();
    let plan = json!({"steps": [
        {"id": "keys", "action": "rag_search", "input": {"query": "rotate API key", "limit": 3}},
        {"id": "expiry", "action": "rag_search", "input": {"query": "old key expiry", "limit": 2}},
        {"id": "answer", "action": "reasoning", "depends_on": ["keys", "expiry"],
         "input": {"query": "rewritten", "sources": [{"$from": "keys"}, {"$from": "expiry"}]}}
    ]});
    server.mount(
        Mock::given(method("POST"))
            .and(body_string_contains("You plan how to answer"))
            .respond_with(ResponseTemplate::new(200).set_body_json(gemini_body(&plan.to_string())))
            .with_priority(1),
    );
    server.mount(
        Mock::given(method("POST"))
            .and(body_string_contains(
                "Question: How do I rotate an API key?",
            ))
            .respond_with(ResponseTemplate::new(200).set_body_json(gemini_body(ANSWER))),
    );

    let dir = tempfile::tempdir().unwrap();
    let kb = common::repo().join("examples/kb");
    let out = grace_cmd(dir.path())
        .args(["ingest", kb.to_str().unwrap(), "-q"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let out = with_gemini(grace_cmd(dir.path()), &server)
        // Whatever the score, no recovery run: this test is about the plan.
        .env("GRACE_CONFIDENCE__THRESHOLDS__CONFIRM", "0.0")
        .env("GRACE_CONFIDENCE__THRESHOLDS__NOTIFY", "0.0")
        .args(["ask", "How do I rotate an API key?", "--json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{stderr}", String::from_utf8_lossy(&out.stdout)));
    assert_eq!(report["plan"]["by"], "llm", "{report}");
    assert_eq!(report["plan"]["usage"]["input_tokens"], 211);
    let steps = report["steps"].as_array().unwrap();
    let ids: Vec<&str> = steps.iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert_eq!(&ids[..3], ["keys", "expiry", "answer"], "{report}");
    // The answer step got both searches' passages (each once), and the
    // question as asked.
    let answer_input = &steps[2]["input"];
    assert_eq!(answer_input["query"], "How do I rotate an API key?");
    let mut found: Vec<&str> = Vec::new();
    for s in &steps[..2] {
        for p in s["result"]["output"]["data"].as_array().unwrap() {
            let text = p["text"].as_str().unwrap();
            if !found.contains(&text) {
                found.push(text);
            }
        }
    }
    let sources: Vec<&str> = answer_input["sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["text"].as_str().unwrap())
        .collect();
    assert_eq!(sources, found, "{report}");
    assert_eq!(report["answer"]["generator"], "gemini:gemini-test");
    assert_eq!(report["answer"]["usage"]["output_tokens"], 37);
    assert!(
        report["answer"]["citations"][0]["source"]
            .as_str()
            .unwrap()
            .ends_with("secrets.html"),
        "{report}"
    );
    assert_eq!(report["recovered"], false);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
}

/// `grace eval` with Gemini: the answer-text figures read a remote model's
/// answer as they read the extractive one's (each `[n]` closes its
/// sentences; a marker names its passage's document), so what a model's
/// answers are made of is measured the same way.
#[test]
fn grace_eval_with_gemini_measures_what_the_answers_are_made_of() {
    let server = Server::start();
    // Not a plan: the default plan (search, then answer) runs.
    server.mount(
        Mock::given(method("POST"))
            .and(body_string_contains("You plan how to answer"))
            .respond_with(ResponseTemplate::new(200).set_body_json(gemini_body("no plan")))
            .with_priority(1),
    );
    // Half the answer from the gold page, half from another.
    let glued = json!({
        "answer": "Rotate a key with `orbit keys rotate`, and the old one stays valid for an hour [1]. Employees get 28 days of paid leave [2].",
        "citations": [1, 2], "confidence": 0.9, "abstained": false
    });
    server.mount(
        Mock::given(method("POST"))
            .and(body_string_contains(
                "Question: How do I rotate an API key?",
            ))
            .respond_with(
                ResponseTemplate::new(200).set_body_json(gemini_body(&glued.to_string())),
            ),
    );
    let set = tempfile::tempdir().unwrap();
    std::fs::create_dir(set.path().join("corpus")).unwrap();
    std::fs::write(
        set.path().join("corpus/keys.md"),
        "# API keys\n\nRotate a key with `orbit keys rotate`. The old key stays valid for one hour.\n",
    )
    .unwrap();
    std::fs::write(
        set.path().join("corpus/leave.md"),
        "# Leave\n\nEmployees get 28 days of paid leave.\n",
    )
    .unwrap();
    std::fs::write(
        set.path().join("questions.jsonl"),
        r#"{"id": "q1", "question": "How do I rotate an API key?", "answerable": true, "gold_sources": ["keys.md"], "gold_answer": "Rotate a key with orbit keys rotate. The old key stays valid for one hour.", "kind": "in-corpus", "style": "command"}"#,
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = with_gemini(grace_cmd(dir.path()), &server)
        .args(["--json", "eval", set.path().to_str().unwrap(), "-k", "2"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = &report["answer_text"];
    // The one answerable question was answered, caveated or escalated:
    // its answer counts once, wherever it went.
    let groups = ["answer", "caveat", "escalation"];
    let counts: Vec<u64> = groups
        .iter()
        .map(|g| text[g]["count"].as_u64().unwrap())
        .collect();
    assert_eq!(counts.iter().sum::<u64>(), 1, "{text}");
    let group = &text[groups[counts.iter().position(|&c| c == 1).unwrap()]];
    // One sentence of two from the gold page; two documents mixed.
    assert_eq!(group["precision"], 0.5, "{text}");
    assert_eq!(group["mixed_sources"], 1.0, "{text}");
    assert_eq!(group["words"], 23.0, "{text}");
    let f1 = group["f1"].as_f64().unwrap();
    assert!(f1 > 0.4 && f1 < 0.9, "{text}");
    assert_eq!(
        text["by_style"]["command"][groups[counts.iter().position(|&c| c == 1).unwrap()]]["count"],
        1,
        "{text}"
    );
}
