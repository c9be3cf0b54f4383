//! Tool calling through the Gemini and Ollama clients, natively and in JSON
//! mode, against a scripted model that speaks each provider's REST shape
//! (tests/support/mock_llm.rs): calls and their arguments come back, the
//! catalogue and the conversation with calls and results go out in the
//! right shape, length and safety stops, the JSON protocol's validation and
//! its one retry, `auto` mode's fall back to JSON, and a generator without
//! tools refusing them. Nothing here touches the network.

use crate::support;

use std::sync::Arc;

use grace::config::ToolMode;
use grace::embed::Embedder;
use grace::llm::{
    Extractive, GenerateRequest, Generation, LlmClient, LlmError, Message, StopReason, ToolCall,
    ToolSpec,
};
use serde_json::{Value, json};
use support::mock_llm::{Mode, OUTPUT_TOKENS, PROMPT_TOKENS, Provider, ScriptedModel, Turn};

const QUESTION: &str = "How do I rotate an API key?";
const ANSWER: &str = "Rotate it with `orbit keys rotate` [1].";

fn catalogue() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "rag_search".into(),
            description: "Searches the knowledge base for passages.".into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "What to look for"},
                    "limit": {"type": "integer", "minimum": 1}
                },
                "required": ["query"]
            }),
        },
        ToolSpec {
            name: "ask_user".into(),
            description: "Asks the user a clarifying question.".into(),
            parameters: json!({
                "type": "object",
                "properties": {"question": {"type": "string"}},
                "required": ["question"]
            }),
        },
    ]
}

fn ask(messages: Vec<Message>) -> GenerateRequest {
    GenerateRequest {
        messages,
        tools: catalogue(),
        ..Default::default()
    }
}

fn first_turn() -> GenerateRequest {
    ask(vec![
        Message::system("Answer from the knowledge base."),
        Message::user(QUESTION),
    ])
}

fn search_call() -> ToolCall {
    ToolCall {
        id: "call_1".into(),
        name: "rag_search".into(),
        arguments: json!({"query": "rotate API key", "limit": 3}),
    }
}

fn search_result() -> Value {
    json!({"passages": [{"text": "Rotate a key with `orbit keys rotate`.", "source": "/kb/secrets.md"}]})
}

/// The conversation after the model called `rag_search` and got its result.
fn follow_up() -> GenerateRequest {
    let call = search_call();
    ask(vec![
        Message::system("Answer from the knowledge base."),
        Message::user(QUESTION),
        Message::assistant_calls("I should search first.", vec![call.clone()]),
        Message::tool_result(&call, &search_result()),
    ])
}

fn usage_of(g: &Generation) -> (u64, u64) {
    (g.usage.input_tokens, g.usage.output_tokens)
}

// ------------------------------------------------------- per combination ---

/// A tool call comes back with its name, arguments and thought, and the
/// request carried the catalogue.
fn a_call_comes_back(provider: Provider, mode: Mode) {
    let model = ScriptedModel::start(
        provider,
        mode,
        vec![Turn::call_thinking(
            "rag_search",
            json!({"query": "rotate API key", "limit": 3}),
            "I should search first.",
        )],
    );
    let g = model.client().generate(&first_turn()).unwrap();
    assert_eq!(g.stop_reason, StopReason::ToolUse);
    assert_eq!(g.tool_calls, vec![search_call()], "{g:?}");
    assert_eq!(g.text, "");
    assert_eq!(g.thought.as_deref(), Some("I should search first."));
    assert_eq!(usage_of(&g), (PROMPT_TOKENS, OUTPUT_TOKENS));

    let body = model.request(0);
    match mode {
        Mode::Native => {
            assert_eq!(model.offered_tools(0), ["rag_search", "ask_user"], "{body}");
            let schema = match provider {
                Provider::Gemini => {
                    &body["tools"][0]["functionDeclarations"][0]["parametersJsonSchema"]
                }
                Provider::Ollama => &body["tools"][0]["function"]["parameters"],
            };
            assert_eq!(schema["required"], json!(["query"]), "{body}");
            let description = match provider {
                Provider::Gemini => &body["tools"][0]["functionDeclarations"][0]["description"],
                Provider::Ollama => &body["tools"][0]["function"]["description"],
            };
            assert_eq!(description, "Searches the knowledge base for passages.");
        }
        Mode::Json => {
            model.assert_json_mode_request(0, &["rag_search", "ask_user"]);
            let system = model.system_text(0);
            assert!(
                system.starts_with("Answer from the knowledge base."),
                "{system}"
            );
            assert!(system.contains("What to look for"), "the schema: {system}");
        }
    }
    assert_eq!(model.requests().len(), 1);
}

/// The conversation with the call and its result goes out in the
/// provider's (or the protocol's) shape, and the answer comes back as text.
fn the_follow_up_is_rendered_and_answered(provider: Provider, mode: Mode) {
    let model = ScriptedModel::start(provider, mode, vec![Turn::answer(ANSWER)]);
    let g = model.client().generate(&follow_up()).unwrap();
    assert_eq!(g.text, ANSWER);
    assert_eq!(g.stop_reason, StopReason::Complete);
    assert!(g.tool_calls.is_empty());

    let turns = model.turns(0);
    assert_eq!(turns.len(), 3, "{turns:#?}");
    match (provider, mode) {
        (Provider::Gemini, Mode::Native) => {
            assert_eq!(turns[0]["role"], "user");
            assert_eq!(turns[1]["role"], "model");
            let parts = turns[1]["parts"].as_array().unwrap();
            assert_eq!(parts[0]["text"], "I should search first.");
            let call = &parts[1]["functionCall"];
            assert_eq!(call["name"], "rag_search");
            assert_eq!(call["args"], search_call().arguments);
            // GRACE's own `call_1` is not an id Gemini gave: none is sent.
            assert!(call.get("id").is_none(), "{call}");
            assert_eq!(turns[2]["role"], "user");
            let response = &turns[2]["parts"][0]["functionResponse"];
            assert_eq!(response["name"], "rag_search");
            let content = response["response"]["content"].as_str().unwrap();
            assert_eq!(
                serde_json::from_str::<Value>(content).unwrap(),
                search_result()
            );
            assert_eq!(model.offered_tools(0), ["rag_search", "ask_user"]);
        }
        (Provider::Ollama, Mode::Native) => {
            assert_eq!(turns[1]["role"], "assistant");
            assert_eq!(turns[1]["content"], "I should search first.");
            let call = &turns[1]["tool_calls"][0]["function"];
            assert_eq!(call["name"], "rag_search");
            assert_eq!(call["arguments"], search_call().arguments);
            assert_eq!(turns[2]["role"], "tool");
            let content = turns[2]["content"].as_str().unwrap();
            assert_eq!(
                serde_json::from_str::<Value>(content).unwrap(),
                search_result()
            );
            assert_eq!(model.offered_tools(0), ["rag_search", "ask_user"]);
        }
        (_, Mode::Json) => {
            model.assert_json_mode_request(0, &["rag_search", "ask_user"]);
            let said: Value = serde_json::from_str(&model.turn_text(0, 1)).unwrap();
            assert_eq!(
                said,
                json!({"thought": "I should search first.", "action": "rag_search",
                       "input": {"query": "rotate API key", "limit": 3}})
            );
            let observation = model.turn_text(0, 2);
            let prefix = "Observation from rag_search (call_1): ";
            assert!(observation.starts_with(prefix), "{observation}");
            assert_eq!(
                serde_json::from_str::<Value>(&observation[prefix.len()..]).unwrap(),
                search_result()
            );
            let roles: Vec<&str> = turns.iter().map(|t| t["role"].as_str().unwrap()).collect();
            let assistant = if provider == Provider::Gemini {
                "model"
            } else {
                "assistant"
            };
            assert_eq!(roles, ["user", assistant, "user"]);
        }
    }
}

/// Text cut off by the token limit comes back as it is, not retried.
fn a_length_stop_is_max_tokens(provider: Provider, mode: Mode) {
    let cut = r#"{"thought": "The passages say", "final": "Rotate it with `orbit ke"#;
    let model = ScriptedModel::start(provider, mode, vec![Turn::Length(cut.into())]);
    let g = model.client().generate(&first_turn()).unwrap();
    assert_eq!(g.stop_reason, StopReason::MaxTokens);
    assert_eq!(g.text, cut);
    assert!(g.tool_calls.is_empty());
    assert_eq!(
        model.requests().len(),
        1,
        "a length stop is not retried here"
    );
}

/// A safety stop is a generation with no text, not an error.
fn a_safety_stop_is_returned(provider: Provider, mode: Mode) {
    if provider == Provider::Ollama {
        // Ollama has no safety stop: nothing to test.
        return;
    }
    let model = ScriptedModel::start(provider, mode, vec![Turn::Safety]);
    let g = model.client().generate(&first_turn()).unwrap();
    assert_eq!(g.stop_reason, StopReason::Safety);
    assert_eq!(g.text, "");
    assert!(g.tool_calls.is_empty());
    assert_eq!(g.usage.input_tokens, PROMPT_TOKENS);
    assert_eq!(model.requests().len(), 1);
}

macro_rules! per_combination {
    ($($module:ident: $provider:expr, $mode:expr;)*) => {$(
        mod $module {
            use super::*;

            #[test]
            fn a_tool_call_comes_back_and_the_catalogue_went_out() {
                a_call_comes_back($provider, $mode);
            }

            #[test]
            fn the_call_and_its_result_go_out_and_the_answer_comes_back() {
                the_follow_up_is_rendered_and_answered($provider, $mode);
            }

            #[test]
            fn a_length_stop_is_max_tokens() {
                super::a_length_stop_is_max_tokens($provider, $mode);
            }

            #[test]
            fn a_safety_stop_is_an_empty_generation_not_an_error() {
                a_safety_stop_is_returned($provider, $mode);
            }
        }
    )*};
}

per_combination! {
    gemini_native: Provider::Gemini, Mode::Native;
    gemini_json: Provider::Gemini, Mode::Json;
    ollama_native: Provider::Ollama, Mode::Native;
    ollama_json: Provider::Ollama, Mode::Json;
}

// --------------------------------------------------------- native only ---

#[test]
fn several_calls_in_one_turn_get_distinct_ids() {
    for provider in [Provider::Gemini, Provider::Ollama] {
        let model = ScriptedModel::start(
            provider,
            Mode::Native,
            vec![Turn::Calls(vec![
                ("rag_search".into(), json!({"query": "rotate"})),
                ("rag_search".into(), json!({"query": "expiry"})),
            ])],
        );
        // One call is already in the conversation: numbering goes on from it.
        let g = model.client().generate(&follow_up()).unwrap();
        assert_eq!(g.stop_reason, StopReason::ToolUse, "{provider:?}");
        let ids: Vec<&str> = g.tool_calls.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["call_2", "call_3"], "{provider:?}");
        assert_eq!(g.tool_calls[1].arguments, json!({"query": "expiry"}));
        assert_eq!(g.thought, None);
    }
}

#[test]
fn the_providers_own_call_ids_are_kept() {
    for provider in [Provider::Gemini, Provider::Ollama] {
        let model = ScriptedModel::start(
            provider,
            Mode::Native,
            vec![Turn::call("rag_search", json!({"query": "rotate"}))],
        )
        .give_call_ids();
        let g = model.client().generate(&first_turn()).unwrap();
        assert_eq!(g.tool_calls[0].id, "prov_0_0", "{provider:?}");
    }
}

#[test]
fn a_final_answer_with_reasoning_keeps_both() {
    for provider in [Provider::Gemini, Provider::Ollama] {
        let model = ScriptedModel::start(
            provider,
            Mode::Native,
            vec![Turn::Final {
                text: ANSWER.into(),
                thought: Some("The passage answers it.".into()),
            }],
        );
        let g = model.client().generate(&follow_up()).unwrap();
        assert_eq!(g.text, ANSWER, "{provider:?}");
        assert_eq!(g.thought.as_deref(), Some("The passage answers it."));
        assert_eq!(g.stop_reason, StopReason::Complete);
    }
}

#[test]
fn a_tool_result_without_its_call_is_refused_before_sending() {
    let model = ScriptedModel::start(Provider::Ollama, Mode::Native, vec![]);
    let mut request = first_turn();
    request.messages.push(Message {
        tool_call: None,
        ..Message::tool_result(&search_call(), &search_result())
    });
    let err = model.client().generate(&request).unwrap_err();
    assert!(matches!(err, LlmError::Unsupported { .. }), "{err:?}");
    assert!(err.to_string().contains("message 3"), "{err}");
    assert!(model.requests().is_empty());
}

// ----------------------------------------------------------- JSON mode ---

#[test]
fn json_mode_asks_again_after_a_malformed_reply_quoting_the_error() {
    for provider in [Provider::Gemini, Provider::Ollama] {
        let model = ScriptedModel::start(
            provider,
            Mode::Json,
            vec![
                Turn::raw("I think I should search for key rotation."),
                Turn::call("rag_search", json!({"query": "rotate API key"})),
            ],
        );
        let g = model.client().generate(&first_turn()).unwrap();
        assert_eq!(g.stop_reason, StopReason::ToolUse, "{provider:?}");
        assert_eq!(g.tool_calls[0].name, "rag_search");
        assert_eq!(g.tool_calls[0].id, "call_1");
        assert_eq!(
            usage_of(&g),
            (2 * PROMPT_TOKENS, 2 * OUTPUT_TOKENS),
            "both attempts count"
        );

        assert_eq!(model.requests().len(), 2);
        let turns = model.turns(1);
        let n = turns.len();
        assert_eq!(
            model.turn_text(1, n - 2),
            "I think I should search for key rotation.",
            "the bad reply is shown back"
        );
        let correction = model.turn_text(1, n - 1);
        assert!(
            correction.starts_with("Your reply was not valid: the reply is not one JSON object")
                && correction.ends_with("Reply with one JSON object as described."),
            "{correction}"
        );
        model.assert_json_mode_request(1, &["rag_search", "ask_user"]);
    }
}

#[test]
fn json_mode_malformed_twice_is_a_malformed_error_naming_the_problem() {
    for provider in [Provider::Gemini, Provider::Ollama] {
        let model = ScriptedModel::start(
            provider,
            Mode::Json,
            vec![
                Turn::raw(
                    r#"{"thought": "search", "action": "rag_search", "input": {"limit": 2}}"#,
                ),
                Turn::raw(r#"{"action": "rag_search", "input": {"limit": 2}}"#),
            ],
        );
        let err = model.client().generate(&first_turn()).unwrap_err();
        let LlmError::Malformed { message, .. } = &err else {
            panic!("{provider:?}: {err:?}");
        };
        assert!(
            message.contains("`rag_search`: missing required input key(s): query"),
            "{message}"
        );
        assert_eq!(model.requests().len(), 2, "one retry, no more");
        // The first error was quoted back too.
        let turns = model.turns(1);
        let correction = model.turn_text(1, turns.len() - 1);
        assert!(
            correction.contains("missing required input key(s): query"),
            "{correction}"
        );
    }
}

#[test]
fn json_mode_catches_an_unknown_tool_and_accepts_the_correction() {
    let model = ScriptedModel::start(
        Provider::Ollama,
        Mode::Json,
        vec![
            Turn::raw(r#"{"action": "web_search", "input": {"query": "keys"}}"#),
            Turn::answer(ANSWER),
        ],
    );
    let g = model.client().generate(&first_turn()).unwrap();
    assert_eq!(g.text, ANSWER);
    assert_eq!(g.stop_reason, StopReason::Complete);
    let turns = model.turns(1);
    let correction = model.turn_text(1, turns.len() - 1);
    assert!(
        correction.contains("unknown tool `web_search`")
            && correction.contains("rag_search, ask_user"),
        "{correction}"
    );
}

#[test]
fn json_mode_a_wrong_argument_type_is_caught() {
    let model = ScriptedModel::start(
        Provider::Gemini,
        Mode::Json,
        vec![
            Turn::raw(r#"{"action": "rag_search", "input": {"query": "keys", "limit": "3"}}"#),
            Turn::raw(
                r#"```json
{"action": "rag_search", "input": {"query": "keys", "limit": 3}}
```"#,
            ),
        ],
    );
    let g = model.client().generate(&first_turn()).unwrap();
    assert_eq!(
        g.tool_calls[0].arguments,
        json!({"query": "keys", "limit": 3})
    );
    let turns = model.turns(1);
    let correction = model.turn_text(1, turns.len() - 1);
    assert!(
        correction.contains("input key `limit` must be integer, not a string"),
        "{correction}"
    );
}

// ----------------------------------------------------------- auto mode ---

#[test]
fn auto_mode_falls_back_to_json_when_ollama_says_the_model_has_no_tools() {
    let model = ScriptedModel::start(
        Provider::Ollama,
        Mode::Json,
        vec![
            Turn::HttpError(
                400,
                json!({"error": "registry.ollama.ai/library/x does not support tools"}),
            ),
            Turn::call("rag_search", json!({"query": "rotate API key"})),
            Turn::answer(ANSWER),
        ],
    );
    let llm = Arc::new(model.remote(ToolMode::Auto));
    assert!(!llm.uses_json_tools());
    let g = llm.generate(&first_turn()).unwrap();
    assert_eq!(g.stop_reason, StopReason::ToolUse);
    assert_eq!(g.tool_calls[0].name, "rag_search");
    assert!(llm.uses_json_tools(), "the client stays in JSON mode");

    // The refused request offered native tools; the retry did not.
    assert_eq!(model.offered_tools(0), ["rag_search", "ask_user"]);
    model.assert_json_mode_request(1, &["rag_search", "ask_user"]);
    // The next turn goes straight to JSON mode.
    let g = llm.generate(&follow_up()).unwrap();
    assert_eq!(g.text, ANSWER);
    assert_eq!(model.requests().len(), 3);
    model.assert_json_mode_request(2, &["rag_search", "ask_user"]);
}

#[test]
fn only_auto_mode_falls_back_and_only_for_that_refusal() {
    let refusal = json!({"error": "registry.ollama.ai/library/x does not support tools"});
    // Native mode reports the refusal.
    let model = ScriptedModel::start(
        Provider::Ollama,
        Mode::Native,
        vec![Turn::HttpError(400, refusal.clone())],
    );
    let err = model.client().generate(&first_turn()).unwrap_err();
    assert!(matches!(err, LlmError::Failed { .. }), "{err:?}");
    assert!(err.to_string().contains("does not support tools"), "{err}");
    assert_eq!(model.requests().len(), 1);

    // Another 400 in auto mode is an error, and the client stays native.
    let model = ScriptedModel::start(
        Provider::Ollama,
        Mode::Native,
        vec![
            Turn::HttpError(400, json!({"error": "invalid options"})),
            Turn::call("rag_search", json!({"query": "q"})),
        ],
    );
    let llm = model.remote(ToolMode::Auto);
    assert!(matches!(
        llm.generate(&first_turn()),
        Err(LlmError::Failed { .. })
    ));
    assert!(!llm.uses_json_tools());
    llm.generate(&first_turn()).unwrap();
    assert_eq!(model.offered_tools(1), ["rag_search", "ask_user"]);
}

// ----------------------------------------------------- without tools ---

struct NoEmbedder;

impl Embedder for NoEmbedder {
    fn dimension(&self) -> usize {
        3
    }
    fn model_id(&self) -> &str {
        "none"
    }
    fn embed(&self, texts: &[String]) -> grace::embed::Result<Vec<Vec<f32>>> {
        Ok(texts.iter().map(|_| vec![1.0, 0.0, 0.0]).collect())
    }
}

#[test]
fn extractive_refuses_tools() {
    let extractive = Extractive::new(Arc::new(NoEmbedder), 3, 0.35).unwrap();
    assert!(!extractive.supports_tools());
    let err = extractive.generate(&first_turn()).unwrap_err();
    assert!(matches!(err, LlmError::Unsupported { .. }), "{err:?}");
    assert!(err.to_string().contains("cannot call tools"), "{err}");
}

#[test]
fn the_remote_clients_support_tools_and_a_plain_request_still_works() {
    let model = ScriptedModel::start(Provider::Gemini, Mode::Native, vec![Turn::answer(ANSWER)]);
    let llm = model.client();
    assert!(llm.supports_tools());
    let g = llm
        .generate(&GenerateRequest {
            messages: vec![Message::user(QUESTION)],
            ..Default::default()
        })
        .unwrap();
    assert_eq!(g.text, ANSWER);
    assert!(model.request(0).get("tools").is_none());
}

#[test]
fn a_request_beyond_the_script_is_a_clear_transient_error() {
    let model = ScriptedModel::start(Provider::Ollama, Mode::Native, vec![]);
    let err = model.client().generate(&first_turn()).unwrap_err();
    assert!(matches!(err, LlmError::Transient { .. }), "{err:?}");
    assert!(err.to_string().contains("no turn left"), "{err}");
}
