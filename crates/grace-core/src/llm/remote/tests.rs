//! Stop reasons, call ids, tool modes and set-up errors of the remote
//! clients, without a provider.

use std::sync::atomic::Ordering;

use genai::adapter::AdapterKind;
use genai::chat::StopReason as GenaiStop;

use super::exchange::{generated_number, next_call_number};
use super::native::{provider_call_ids, stop_reason};
use super::*;
use crate::llm::{Message, StopReason, ToolCall};

#[test]
fn provider_stop_reasons_map_to_grace_s() {
    let map = |raw: &str| stop_reason(Some(&GenaiStop::from(raw.to_string())));
    assert_eq!(stop_reason(None), StopReason::Complete);
    for (raw, expected) in [
        ("STOP", StopReason::Complete),
        ("stop", StopReason::Complete),
        ("MAX_TOKENS", StopReason::MaxTokens),
        ("length", StopReason::MaxTokens),
        ("tool_calls", StopReason::ToolUse),
        ("SAFETY", StopReason::Safety),
        ("RECITATION", StopReason::Safety),
        ("PROHIBITED_CONTENT", StopReason::Safety),
        ("BLOCKLIST", StopReason::Safety),
        ("SPII", StopReason::Safety),
        ("IMAGE_SAFETY", StopReason::Safety),
        ("MALFORMED_FUNCTION_CALL", StopReason::Other),
        ("STOP_SEQUENCE", StopReason::Other),
    ] {
        assert_eq!(map(raw), expected, "{raw}");
    }
}

#[test]
fn provider_call_ids_are_read_from_the_raw_body() {
    let gemini = serde_json::json!({"candidates": [{"content": {"parts": [
        {"text": "thinking"},
        {"functionCall": {"name": "a", "args": {}, "id": "g-1"}},
        {"functionCall": {"name": "b", "args": {}}}
    ]}}]});
    assert_eq!(
        provider_call_ids(AdapterKind::Gemini, &gemini),
        [Some("g-1".to_string()), None]
    );
    let ollama = serde_json::json!({"message": {"tool_calls": [
        {"function": {"name": "a", "arguments": {}}},
        {"id": "call_x", "function": {"name": "b", "arguments": {}}}
    ]}});
    assert_eq!(
        provider_call_ids(AdapterKind::Ollama, &ollama),
        [None, Some("call_x".to_string())]
    );
    assert!(provider_call_ids(AdapterKind::Ollama, &serde_json::json!({})).is_empty());
}

#[test]
fn generated_ids_go_back_to_gemini_as_genai_stand_ins() {
    let config = crate::config::LlmConfig::default();
    let gemini = RemoteLlm::gemini(&config.gemini, Some("k".into())).unwrap();
    let ollama = RemoteLlm::ollama(&config.ollama, None).unwrap();
    let call = |id: &str| ToolCall {
        id: id.into(),
        name: "rag_search".into(),
        arguments: serde_json::json!({}),
    };
    assert_eq!(
        gemini.genai_call(&call("call_7")).call_id,
        "call#rag_search#7"
    );
    assert_eq!(gemini.genai_call(&call("fc-42")).call_id, "fc-42");
    assert_eq!(ollama.genai_call(&call("call_7")).call_id, "call_7");
    assert_eq!(generated_number("call_12"), Some(12));
    assert_eq!(generated_number("call_x"), None);
    let messages = vec![
        Message::assistant_calls("", vec![call("call_1"), call("call_2")]),
        Message::tool_result(&call("call_1"), &serde_json::json!(1)),
    ];
    assert_eq!(next_call_number(&messages), 3);
}

#[test]
fn the_tool_mode_decides_json_tools() {
    let config = crate::config::LlmConfig::default().ollama;
    let llm = RemoteLlm::ollama(&config, None).unwrap();
    assert_eq!(llm.tool_mode(), ToolMode::Auto);
    assert!(!llm.uses_json_tools());
    llm.json_fallback.store(true, Ordering::Relaxed);
    assert!(llm.uses_json_tools(), "auto after a refusal");
    let llm = llm.with_tool_mode(ToolMode::Native);
    assert!(!llm.uses_json_tools());
    assert!(llm.with_tool_mode(ToolMode::Json).uses_json_tools());
}

#[test]
fn a_missing_gemini_key_is_a_setup_error_naming_the_variable() {
    let config = crate::config::LlmConfig::default().gemini;
    for key in [None, Some(String::new()), Some("  ".into())] {
        let err = RemoteLlm::gemini(&config, key).unwrap_err();
        assert!(matches!(err, LlmError::Setup { .. }), "{err:?}");
        assert!(
            err.to_string().contains("GEMINI_API_KEY is not set"),
            "{err}"
        );
    }
}

#[test]
fn the_ollama_url_comes_from_config_then_environment_then_default() {
    let mut config = crate::config::LlmConfig::default().ollama;
    RemoteLlm::ollama(&config, None).unwrap();
    RemoteLlm::ollama(&config, Some("http://gpu-box:11434".into())).unwrap();
    let err = RemoteLlm::ollama(&config, Some("gpu-box:11434".into())).unwrap_err();
    assert!(err.to_string().contains("OLLAMA_BASE_URL"), "{err}");
    config.base_url = "http://configured:1".into();
    // The config wins over a bad environment value.
    RemoteLlm::ollama(&config, Some("gpu-box".into())).unwrap();
}
