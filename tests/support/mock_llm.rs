//! A scripted language model behind a local mock server that speaks the
//! provider's REST shape, for tests of tool calling and of agent loops.
//!
//! A [`ScriptedModel`] starts a wiremock server on its own tokio runtime
//! (the generator under test blocks on its own, as in a run) and answers
//! each request with the next [`Turn`] of its script, rendered the way the
//! provider ([`Provider`]) answers in the tool mode ([`Mode`]):
//!
//! - Gemini, native: `candidates[0].content.parts` with `{"functionCall":
//!   {"name", "args"}}` parts (after a text part for the thought),
//!   `finishReason` `STOP`, `MAX_TOKENS` or `SAFETY`, and `usageMetadata`;
//! - Ollama, native: `{"message": {"role": "assistant", "content":
//!   <thought>, "tool_calls": [{"function": {"name", "arguments"}}]},
//!   "done": true, "done_reason": "stop" | "length"}` with
//!   `prompt_eval_count`/`eval_count`;
//! - JSON mode, either provider: the turn as the JSON protocol's object
//!   (`{"thought", "action", "input"}` or `{"thought", "final"}`) in the
//!   text (Gemini) or content (Ollama).
//!
//! Every reply reports [`PROMPT_TOKENS`] and [`OUTPUT_TOKENS`]. A request
//! beyond the script gets HTTP 500 saying so ("no turn left"), which the
//! client reports as a transient error. Nothing touches the network.
//!
//! ```ignore
//! let model = ScriptedModel::start(Provider::Gemini, Mode::Native, vec![
//!     Turn::call("rag_search", json!({"query": "keys"})),
//!     Turn::answer("Rotate it [1]."),
//! ]);
//! let llm = model.client();
//! // … drive llm.generate(…) …
//! assert_eq!(model.offered_tools(0), ["rag_search"]);
//! ```

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use grace::config::{LlmConfig, RemoteLlmConfig, ToolMode};
use grace::llm::{LlmClient, RemoteLlm};
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// Prompt tokens every scripted reply reports.
pub const PROMPT_TOKENS: u64 = 120;
/// Output tokens every scripted reply reports.
pub const OUTPUT_TOKENS: u64 = 12;
/// The Gemini model the client asks for.
pub const GEMINI_MODEL: &str = "gemini-test";
/// The Ollama model the client asks for.
pub const OLLAMA_MODEL: &str = "llama-test";

/// One reply of the scripted model.
#[derive(Debug, Clone, PartialEq)]
pub enum Turn {
    /// Calls one tool, with an optional thought alongside.
    Call {
        /// The tool's name.
        name: String,
        /// Its arguments.
        args: Value,
        /// What the model says alongside (native: a text part or the
        /// message content; JSON mode: `"thought"`).
        thought: Option<String>,
    },
    /// Calls several tools in one turn (native mode; in JSON mode, one
    /// protocol object per line, which the protocol does not allow).
    Calls(Vec<(String, Value)>),
    /// The final answer.
    Final {
        /// The answer text.
        text: String,
        /// Reasoning alongside (native: a Gemini thought part or Ollama's
        /// `thinking`; JSON mode: `"thought"`).
        thought: Option<String>,
    },
    /// Text cut off by the token limit (`MAX_TOKENS` / `"length"`).
    Length(String),
    /// A safety stop without content (Gemini `SAFETY`; Ollama has none and
    /// answers HTTP 500 saying so).
    Safety,
    /// Exactly this text as the model's output, e.g. malformed JSON.
    Raw(String),
    /// An HTTP error status with this JSON body.
    HttpError(u16, Value),
}

impl Turn {
    /// A call of `name` with `args`, without a thought.
    pub fn call(name: &str, args: Value) -> Self {
        Turn::Call {
            name: name.into(),
            args,
            thought: None,
        }
    }

    /// A call of `name` with `args`, with a thought.
    pub fn call_thinking(name: &str, args: Value, thought: &str) -> Self {
        Turn::Call {
            name: name.into(),
            args,
            thought: Some(thought.into()),
        }
    }

    /// The final answer `text`, without a thought.
    pub fn answer(text: &str) -> Self {
        Turn::Final {
            text: text.into(),
            thought: None,
        }
    }

    /// Exactly `text` as the model's output.
    pub fn raw(text: &str) -> Self {
        Turn::Raw(text.into())
    }
}

/// The provider whose REST shape the server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    /// Gemini `POST /v1beta/models/<model>:generateContent`.
    Gemini,
    /// Ollama `POST /api/chat`.
    Ollama,
}

/// How the script's turns are rendered, and the tool mode of
/// [`ScriptedModel::client`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Native tool calls.
    Native,
    /// The JSON protocol in the text.
    Json,
}

/// A mock server answering with a script (see the module documentation).
pub struct ScriptedModel {
    rt: tokio::runtime::Runtime,
    server: MockServer,
    provider: Provider,
    mode: Mode,
    call_ids: Arc<AtomicBool>,
}

impl ScriptedModel {
    /// Starts the server with `script`, one turn per request.
    pub fn start(provider: Provider, mode: Mode, script: Vec<Turn>) -> Self {
        let rt = tokio::runtime::Runtime::new().expect("a tokio runtime");
        let server = rt.block_on(MockServer::start());
        let call_ids = Arc::new(AtomicBool::new(false));
        let endpoint = match provider {
            Provider::Gemini => format!("/v1beta/models/{GEMINI_MODEL}:generateContent"),
            Provider::Ollama => "/api/chat".to_string(),
        };
        let responder = Script {
            provider,
            mode,
            turns: script,
            next: Mutex::new(0),
            call_ids: call_ids.clone(),
        };
        rt.block_on(
            Mock::given(method("POST"))
                .and(path(endpoint))
                .respond_with(responder)
                .mount(&server),
        );
        Self {
            rt,
            server,
            provider,
            mode,
            call_ids,
        }
    }

    /// From now on, native tool calls carry provider ids (`prov_<k>`,
    /// counted over the whole script), as some provider versions send.
    pub fn give_call_ids(self) -> Self {
        self.call_ids.store(true, Ordering::Relaxed);
        self
    }

    /// The server's base URL.
    pub fn uri(&self) -> String {
        self.server.uri()
    }

    /// The provider settings pointing at this server (model, base URL, a
    /// 5 s timeout).
    pub fn config(&self) -> RemoteLlmConfig {
        let defaults = LlmConfig::default();
        match self.provider {
            Provider::Gemini => RemoteLlmConfig {
                model: GEMINI_MODEL.into(),
                base_url: format!("{}/v1beta/", self.uri()),
                timeout_seconds: 5.0,
                ..defaults.gemini
            },
            Provider::Ollama => RemoteLlmConfig {
                model: OLLAMA_MODEL.into(),
                base_url: self.uri(),
                timeout_seconds: 5.0,
                ..defaults.ollama
            },
        }
    }

    /// A client of this server in the script's mode ([`ToolMode::Native`]
    /// or [`ToolMode::Json`]).
    pub fn client(&self) -> Arc<dyn LlmClient> {
        self.client_with(match self.mode {
            Mode::Native => ToolMode::Native,
            Mode::Json => ToolMode::Json,
        })
    }

    /// A client of this server in `mode` (e.g. [`ToolMode::Auto`]).
    pub fn client_with(&self, mode: ToolMode) -> Arc<dyn LlmClient> {
        Arc::new(self.remote(mode))
    }

    /// The concrete client, for what the trait does not show
    /// ([`RemoteLlm::uses_json_tools`]).
    pub fn remote(&self, mode: ToolMode) -> RemoteLlm {
        let config = self.config();
        let client = match self.provider {
            Provider::Gemini => RemoteLlm::gemini(&config, Some("test-key".into())),
            Provider::Ollama => RemoteLlm::ollama(&config, None),
        };
        client.expect("a client of the mock").with_tool_mode(mode)
    }

    /// The JSON bodies of the requests received so far, in order.
    pub fn requests(&self) -> Vec<Value> {
        self.rt
            .block_on(self.server.received_requests())
            .unwrap_or_default()
            .iter()
            .map(|r| serde_json::from_slice(&r.body).expect("a JSON request body"))
            .collect()
    }

    /// The `i`-th request's body.
    pub fn request(&self, i: usize) -> Value {
        let requests = self.requests();
        requests
            .get(i)
            .cloned()
            .unwrap_or_else(|| panic!("request {i} of {} was not made", requests.len()))
    }

    /// The names of the tools the `i`-th request declared natively (Gemini
    /// `tools[].functionDeclarations[].name`, Ollama
    /// `tools[].function.name`); empty when it declared none.
    pub fn offered_tools(&self, i: usize) -> Vec<String> {
        let body = self.request(i);
        let tools = body["tools"].as_array().cloned().unwrap_or_default();
        let name = |v: &Value| v["name"].as_str().map(str::to_string);
        match self.provider {
            Provider::Gemini => tools
                .iter()
                .flat_map(|t| {
                    t["functionDeclarations"]
                        .as_array()
                        .cloned()
                        .unwrap_or_default()
                })
                .filter_map(|d| name(&d))
                .collect(),
            Provider::Ollama => tools.iter().filter_map(|t| name(&t["function"])).collect(),
        }
    }

    /// The `i`-th request's system instruction (Gemini
    /// `systemInstruction`, Ollama's first message when it is a system one).
    pub fn system_text(&self, i: usize) -> String {
        let body = self.request(i);
        match self.provider {
            Provider::Gemini => texts(&body["systemInstruction"]["parts"]),
            Provider::Ollama => match body["messages"][0]["role"].as_str() {
                Some("system") => body["messages"][0]["content"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                _ => String::new(),
            },
        }
    }

    /// The `i`-th request's conversation without the system instruction:
    /// Gemini `contents`, Ollama `messages` after a system one.
    pub fn turns(&self, i: usize) -> Vec<Value> {
        let body = self.request(i);
        match self.provider {
            Provider::Gemini => body["contents"].as_array().cloned().unwrap_or_default(),
            Provider::Ollama => body["messages"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .filter(|m| m["role"] != "system")
                .collect(),
        }
    }

    /// The text of turn `turn` of the `i`-th request (Gemini: its text
    /// parts joined; Ollama: its content).
    pub fn turn_text(&self, i: usize, turn: usize) -> String {
        let turns = self.turns(i);
        let t = &turns[turn];
        match self.provider {
            Provider::Gemini => texts(&t["parts"]),
            Provider::Ollama => t["content"].as_str().unwrap_or_default().to_string(),
        }
    }

    /// Asserts the `i`-th request asked for JSON tool mode: no native tools,
    /// the catalogue (every name in `tools`) and the protocol in the system
    /// instruction, and JSON output (Gemini: a `responseJsonSchema` with
    /// both shapes; Ollama: `"format": "json"`).
    pub fn assert_json_mode_request(&self, i: usize, tools: &[&str]) {
        let body = self.request(i);
        assert!(body.get("tools").is_none(), "no native tools: {body}");
        let system = self.system_text(i);
        for name in tools {
            assert!(
                system.contains(&format!("\"{name}\"")),
                "{name} in: {system}"
            );
        }
        assert!(
            system.contains("\"action\"") && system.contains("\"final\""),
            "{system}"
        );
        match self.provider {
            Provider::Gemini => {
                let schema = &body["generationConfig"]["responseJsonSchema"];
                assert!(schema["anyOf"].is_array(), "{body}");
                assert_eq!(
                    body["generationConfig"]["responseMimeType"],
                    "application/json"
                );
            }
            Provider::Ollama => assert_eq!(body["format"], "json", "{body}"),
        }
    }
}

fn texts(parts: &Value) -> String {
    parts
        .as_array()
        .map(|ps| {
            ps.iter()
                .filter_map(|p| p["text"].as_str())
                .collect::<Vec<_>>()
                .join("")
        })
        .unwrap_or_default()
}

/// The responder: the next turn of the script per request.
struct Script {
    provider: Provider,
    mode: Mode,
    turns: Vec<Turn>,
    next: Mutex<usize>,
    call_ids: Arc<AtomicBool>,
}

impl Respond for Script {
    fn respond(&self, _request: &Request) -> ResponseTemplate {
        let index = {
            let mut next = self.next.lock().unwrap_or_else(|e| e.into_inner());
            let i = *next;
            *next += 1;
            i
        };
        let Some(turn) = self.turns.get(index) else {
            return error_response(
                500,
                &format!(
                    "scripted model: no turn left (the script has {} turns; this is request {})",
                    self.turns.len(),
                    index + 1
                ),
            );
        };
        let ids = self.call_ids.load(Ordering::Relaxed);
        match (turn, self.provider) {
            (Turn::HttpError(status, body), _) => {
                ResponseTemplate::new(*status).set_body_json(body.clone())
            }
            (Turn::Safety, Provider::Ollama) => {
                error_response(500, "scripted model: Ollama has no safety stop")
            }
            (turn, Provider::Gemini) => {
                ResponseTemplate::new(200).set_body_json(gemini(turn, self.mode, index, ids))
            }
            (turn, Provider::Ollama) => {
                ResponseTemplate::new(200).set_body_json(ollama(turn, self.mode, index, ids))
            }
        }
    }
}

fn error_response(status: u16, message: &str) -> ResponseTemplate {
    ResponseTemplate::new(status).set_body_json(json!({ "error": message }))
}

/// A turn in the JSON protocol, as the model's text.
fn protocol_text(turn: &Turn) -> String {
    let object = |thought: &Option<String>, mut fields: serde_json::Map<String, Value>| {
        if let Some(t) = thought {
            fields.insert("thought".into(), Value::String(t.clone()));
        }
        Value::Object(fields).to_string()
    };
    match turn {
        Turn::Call {
            name,
            args,
            thought,
        } => {
            let mut fields = serde_json::Map::new();
            fields.insert("action".into(), json!(name));
            fields.insert("input".into(), args.clone());
            object(thought, fields)
        }
        Turn::Calls(calls) => calls
            .iter()
            .map(|(name, args)| json!({"action": name, "input": args}).to_string())
            .collect::<Vec<_>>()
            .join("\n"),
        Turn::Final { text, thought } => {
            let mut fields = serde_json::Map::new();
            fields.insert("final".into(), json!(text));
            object(thought, fields)
        }
        Turn::Length(text) | Turn::Raw(text) => text.clone(),
        Turn::Safety | Turn::HttpError(..) => String::new(),
    }
}

/// A native turn's calls (name, arguments) and the thought alongside.
type NativeCalls = (Vec<(String, Value)>, Option<String>);

/// The calls of a native turn, if it calls tools.
fn native_calls(turn: &Turn) -> Option<NativeCalls> {
    match turn {
        Turn::Call {
            name,
            args,
            thought,
        } => Some((vec![(name.clone(), args.clone())], thought.clone())),
        Turn::Calls(calls) => Some((calls.clone(), None)),
        _ => None,
    }
}

fn gemini(turn: &Turn, mode: Mode, index: usize, ids: bool) -> Value {
    let usage = json!({
        "promptTokenCount": PROMPT_TOKENS,
        "candidatesTokenCount": OUTPUT_TOKENS,
        "totalTokenCount": PROMPT_TOKENS + OUTPUT_TOKENS
    });
    let finish = match turn {
        Turn::Length(_) => "MAX_TOKENS",
        Turn::Safety => "SAFETY",
        _ => "STOP",
    };
    if *turn == Turn::Safety {
        return json!({
            "candidates": [{
                "finishReason": finish,
                "index": 0,
                "safetyRatings": [{"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": true}]
            }],
            "usageMetadata": {"promptTokenCount": PROMPT_TOKENS, "totalTokenCount": PROMPT_TOKENS},
            "modelVersion": GEMINI_MODEL
        });
    }
    let parts: Vec<Value> = match (mode, native_calls(turn), turn) {
        (Mode::Native, Some((calls, thought)), _) => thought
            .map(|t| json!({"text": t}))
            .into_iter()
            .chain(calls.into_iter().enumerate().map(|(k, (name, args))| {
                let mut call = json!({"name": name, "args": args});
                if ids {
                    call["id"] = json!(format!("prov_{index}_{k}"));
                }
                json!({ "functionCall": call })
            }))
            .collect(),
        (Mode::Native, None, Turn::Final { text, thought }) => thought
            .as_ref()
            .map(|t| json!({"text": t, "thought": true}))
            .into_iter()
            .chain([json!({ "text": text })])
            .collect(),
        (Mode::Native, None, other) => vec![json!({ "text": protocol_text(other) })],
        (Mode::Json, _, other) => vec![json!({ "text": protocol_text(other) })],
    };
    json!({
        "candidates": [{
            "content": {"role": "model", "parts": parts},
            "finishReason": finish,
            "index": 0
        }],
        "usageMetadata": usage,
        "modelVersion": GEMINI_MODEL
    })
}

fn ollama(turn: &Turn, mode: Mode, index: usize, ids: bool) -> Value {
    let done_reason = match turn {
        Turn::Length(_) => "length",
        _ => "stop",
    };
    let message = match (mode, native_calls(turn), turn) {
        (Mode::Native, Some((calls, thought)), _) => {
            let calls: Vec<Value> = calls
                .into_iter()
                .enumerate()
                .map(|(k, (name, args))| {
                    let mut call = json!({"function": {"name": name, "arguments": args}});
                    if ids {
                        call["id"] = json!(format!("prov_{index}_{k}"));
                    }
                    call
                })
                .collect();
            json!({"role": "assistant", "content": thought.unwrap_or_default(), "tool_calls": calls})
        }
        (Mode::Native, None, Turn::Final { text, thought }) => {
            let mut m = json!({"role": "assistant", "content": text});
            if let Some(t) = thought {
                m["thinking"] = json!(t);
            }
            m
        }
        (_, _, other) => json!({"role": "assistant", "content": protocol_text(other)}),
    };
    json!({
        "model": OLLAMA_MODEL,
        "created_at": "2026-11-22T00:00:00Z",
        "message": message,
        "done": true,
        "done_reason": done_reason,
        "prompt_eval_count": PROMPT_TOKENS,
        "eval_count": OUTPUT_TOKENS
    })
}

/// The passage of troubleshooting.md on ORB-2001, nearly verbatim: grounded
/// in the passage the first search for "ORB-2001" ranks first.
pub const GROUNDED: &str = "The new pods started but did not become healthy within the rollout \
                        timeout (300 seconds by default), and Orbit rolls back automatically [1].";

/// The script of a run that asks which error the asker sees (options
/// `ORB-1042`, `ORB-2001`), then searches for `ORB-2001` and answers
/// [`GROUNDED`] (tests/agent.rs, tests/ask_page.rs).
pub fn clarifying_script() -> Vec<Turn> {
    vec![
        Turn::call(
            "ask_user",
            json!({
                "question": "Which error code do you see?",
                "reason": "Several errors can stop a deployment.",
                "options": ["ORB-1042", "ORB-2001"],
                "urgency": "blocking"
            }),
        ),
        Turn::call("rag_search", json!({"query": "ORB-2001"})),
        Turn::answer(GROUNDED),
    ]
}
