//! JSON tool mode: tool calling for models without native tool support
//! (`llm.tool_mode: json`, or `auto` after the provider said the model does
//! not support tools).
//!
//! No tools are declared to the provider. The catalogue and a protocol go
//! into the system instruction instead ([`instruction`]): the model answers
//! with exactly one JSON object per turn, either
//! `{"thought": "...", "action": "<tool>", "input": {...}}` to call a tool
//! or `{"thought": "...", "final": "<answer>"}`. Earlier tool calls and
//! results in the conversation are rendered as text ([`render_history`]),
//! and the reply is parsed and checked against the catalogue ([`parse`]):
//! the tool must exist and its input must carry the schema's required keys
//! with the schema's simple top-level types ([`check_arguments`]). The
//! caller (`remote.rs`) asks once more, quoting the error
//! ([`retry_message`]), when a reply is invalid.

use serde_json::{Map, Value, json};

use super::{Message, Role, ToolCall, ToolSpec};

/// Most characters of an invalid reply sent back to the model with the
/// request to correct it.
pub(super) const MAX_ECHOED_REPLY_CHARS: usize = 4000;
/// Most characters of a validation error (it may quote the model's words).
const MAX_ERROR_CHARS: usize = 500;
/// Most characters of a name or key from the model quoted in an error.
const MAX_NAME_CHARS: usize = 80;

/// The protocol and the tool catalogue, for the system instruction.
/// With `final_schema`, the final answer is a JSON object following it.
pub(super) fn instruction(tools: &[ToolSpec], final_schema: Option<&Value>) -> String {
    let catalogue = serde_json::to_string_pretty(tools).unwrap_or_else(|_| "[]".into());
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    let final_shape = match final_schema {
        None => r#"{"thought": "<your reasoning, briefly>", "final": "<your answer>"}"#.to_string(),
        Some(schema) => format!(
            "{{\"thought\": \"<your reasoning, briefly>\", \"final\": <your answer: a JSON object \
             following this JSON schema: {schema}>}}"
        ),
    };
    format!(
        "You can call tools. The tools, with a JSON schema of each one's parameters:\n{catalogue}\n\n\
         Reply with exactly one JSON object per turn and nothing else, in one of two shapes.\n\
         To call one tool:\n\
         {{\"thought\": \"<your reasoning, briefly>\", \"action\": \"<tool name>\", \"input\": {{<the tool's arguments>}}}}\n\
         Its result comes back as \"Observation from <tool> (<call id>): <result as JSON>\".\n\
         When you have the answer:\n\
         {final_shape}\n\
         \"action\" must be one of: {}. \"input\" must be an object following that tool's parameters schema.",
        names.join(", ")
    )
}

/// A JSON schema of a reply in either shape, for providers that constrain
/// output to a schema (Gemini's `responseJsonSchema`): one branch per tool
/// (its name as the only `action`, its parameters as `input`) and one for
/// the final answer.
pub(super) fn reply_schema(tools: &[ToolSpec], final_schema: Option<&Value>) -> Value {
    let mut branches: Vec<Value> = tools
        .iter()
        .map(|t| {
            json!({
                "type": "object",
                "properties": {
                    "thought": {"type": "string"},
                    "action": {"type": "string", "enum": [t.name]},
                    "input": t.parameters,
                },
                "required": ["action", "input"]
            })
        })
        .collect();
    branches.push(json!({
        "type": "object",
        "properties": {
            "thought": {"type": "string"},
            "final": final_schema.cloned().unwrap_or_else(|| json!({"type": "string"})),
        },
        "required": ["final"]
    }));
    json!({ "anyOf": branches })
}

/// The conversation as a model without native tools reads it: an assistant
/// turn that called tools becomes the JSON object(s) it would have sent, a
/// tool result a user message `Observation from <name> (<id>): <result>`.
/// Other messages are kept as they are.
pub(super) fn render_history(messages: &[Message]) -> Vec<Message> {
    messages
        .iter()
        .map(|m| match m.role {
            Role::Assistant if !m.tool_calls.is_empty() => {
                let lines: Vec<String> = m
                    .tool_calls
                    .iter()
                    .enumerate()
                    .map(|(i, call)| {
                        let mut object = Map::new();
                        if i == 0 && !m.content.trim().is_empty() {
                            object.insert("thought".into(), Value::String(m.content.clone()));
                        }
                        object.insert("action".into(), Value::String(call.name.clone()));
                        object.insert("input".into(), call.arguments.clone());
                        Value::Object(object).to_string()
                    })
                    .collect();
                Message::assistant(lines.join("\n"))
            }
            Role::Tool => Message::user(match &m.tool_call {
                Some(call) => format!(
                    "Observation from {} ({}): {}",
                    call.name, call.id, m.content
                ),
                None => format!("Observation: {}", m.content),
            }),
            _ => m.clone(),
        })
        .collect()
}

/// A valid reply.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Reply {
    /// Call a tool.
    Action {
        /// The model's reasoning, if it gave any.
        thought: Option<String>,
        /// The tool, one of the catalogue's.
        name: String,
        /// Its arguments, checked against the tool's schema.
        input: Value,
    },
    /// The answer.
    Final {
        /// The model's reasoning, if it gave any.
        thought: Option<String>,
        /// The answer text (JSON text when a final schema was given).
        text: String,
    },
}

impl Reply {
    /// The reply's thought.
    pub(super) fn thought(&self) -> Option<&str> {
        match self {
            Reply::Action { thought, .. } | Reply::Final { thought, .. } => thought.as_deref(),
        }
    }

    /// The reply's tool call, numbered `call_<number>`.
    pub(super) fn call(&self, number: usize) -> Option<ToolCall> {
        match self {
            Reply::Action { name, input, .. } => Some(ToolCall {
                id: format!("call_{number}"),
                name: name.clone(),
                arguments: input.clone(),
            }),
            Reply::Final { .. } => None,
        }
    }
}

/// Parses and checks a reply against the catalogue. With `final_schema`,
/// `final` may also be a JSON object (the caller checks it against the
/// schema); its text is then that object's JSON. The error says what is
/// wrong, for the model to correct, bounded in length.
pub(super) fn parse(
    text: &str,
    tools: &[ToolSpec],
    final_schema: Option<&Value>,
) -> Result<Reply, String> {
    parse_unbounded(text, tools, final_schema).map_err(|e| truncate(&e, MAX_ERROR_CHARS))
}

fn parse_unbounded(
    text: &str,
    tools: &[ToolSpec],
    final_schema: Option<&Value>,
) -> Result<Reply, String> {
    let value = parse_object(text)?;
    let Value::Object(mut object) = value else {
        return Err(format!(
            "the reply must be one JSON object, not {}",
            type_name(&value)
        ));
    };
    let thought = match object.remove("thought") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s).filter(|s| !s.trim().is_empty()),
        Some(other) => {
            return Err(format!(
                "\"thought\" must be a string, not {}",
                type_name(&other)
            ));
        }
    };
    let action = object.remove("action").filter(|v| !v.is_null());
    let answer = object.remove("final").filter(|v| !v.is_null());
    match (action, answer) {
        (Some(_), Some(_)) => Err("give either \"action\" or \"final\", not both".into()),
        (None, None) => Err(
            "the object needs either \"action\" (a tool name, with \"input\") or \"final\" (the answer)"
                .into(),
        ),
        (Some(action), None) => {
            let Value::String(name) = action else {
                return Err(format!(
                    "\"action\" must be a tool name (a string), not {}",
                    type_name(&action)
                ));
            };
            let Some(tool) = tools.iter().find(|t| t.name == name) else {
                let known: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
                return Err(format!(
                    "unknown tool `{}` in \"action\" (the tools are: {})",
                    truncate(&name, MAX_NAME_CHARS),
                    known.join(", ")
                ));
            };
            let input = match object.remove("input") {
                // A tool without required arguments may be called without input.
                None | Some(Value::Null) => Map::new(),
                Some(Value::Object(input)) => input,
                Some(other) => {
                    return Err(format!(
                        "\"input\" must be an object with the arguments of `{name}`, not {}",
                        type_name(&other)
                    ));
                }
            };
            check_arguments(&tool.parameters, &input).map_err(|e| format!("`{name}`: {e}"))?;
            Ok(Reply::Action {
                thought,
                name,
                input: Value::Object(input),
            })
        }
        (None, Some(answer)) => {
            let text = match answer {
                Value::String(s) if !s.trim().is_empty() => s,
                Value::String(_) => return Err("\"final\" must not be empty".into()),
                Value::Object(_) if final_schema.is_some() => answer.to_string(),
                other => {
                    return Err(format!(
                        "\"final\" must be {}, not {}",
                        if final_schema.is_some() {
                            "a JSON object following the answer schema"
                        } else {
                            "the answer as a string"
                        },
                        type_name(&other)
                    ));
                }
            };
            Ok(Reply::Final { thought, text })
        }
    }
}

/// The reply as JSON: code fences removed; if the whole is not JSON, the
/// span from the first `{` to the last `}` (models sometimes add a word
/// before or after the object).
fn parse_object(text: &str) -> Result<Value, String> {
    let text = strip_code_fence(text);
    if text.is_empty() {
        return Err("the reply is empty".into());
    }
    let whole = match serde_json::from_str::<Value>(text) {
        Ok(value) => return Ok(value),
        Err(e) => e,
    };
    if let (Some(start), Some(end)) = (text.find('{'), text.rfind('}'))
        && start < end
        && let Ok(value @ Value::Object(_)) = serde_json::from_str::<Value>(&text[start..=end])
    {
        return Ok(value);
    }
    Err(format!("the reply is not one JSON object ({whole})"))
}

/// Checks `input` against a tool's parameter schema, as far as a small
/// validator goes: every `required` key is present; each top-level property
/// the schema gives a simple `type` (`string`, `integer`, `number`,
/// `boolean`, `array`, `object`, `null`, or a list of them) has a value of
/// that type; with `"additionalProperties": false`, no other keys. Nested
/// schemas, formats, enums and ranges are not checked.
pub(super) fn check_arguments(schema: &Value, input: &Map<String, Value>) -> Result<(), String> {
    let required = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect::<Vec<_>>())
        .unwrap_or_default();
    let missing: Vec<&str> = required
        .iter()
        .copied()
        .filter(|k| !input.contains_key(*k))
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "missing required input key(s): {}",
            missing.join(", ")
        ));
    }
    let properties = schema.get("properties").and_then(Value::as_object);
    for (key, value) in input {
        let Some(property) = properties.and_then(|p| p.get(key)) else {
            if schema.get("additionalProperties") == Some(&Value::Bool(false)) {
                return Err(format!(
                    "unknown input key `{}`",
                    truncate(key, MAX_NAME_CHARS)
                ));
            }
            continue;
        };
        let types: Vec<&str> = match property.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ => continue,
        };
        let known: Vec<&str> = types
            .iter()
            .copied()
            .filter(|t| SIMPLE_TYPES.contains(t))
            .collect();
        if known.is_empty() || known.len() < types.len() {
            // A type this validator does not know: leave it to the tool.
            continue;
        }
        if !known.iter().any(|t| has_type(value, t)) {
            return Err(format!(
                "input key `{key}` must be {}, not {}",
                known.join(" or "),
                type_name(value)
            ));
        }
    }
    Ok(())
}

const SIMPLE_TYPES: &[&str] = &[
    "string", "integer", "number", "boolean", "array", "object", "null",
];

fn has_type(value: &Value, ty: &str) -> bool {
    match ty {
        "string" => value.is_string(),
        "integer" => {
            value.is_i64()
                || value.is_u64()
                || value
                    .as_f64()
                    .is_some_and(|f| f.fract() == 0.0 && f.is_finite())
        }
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        "null" => value.is_null(),
        _ => false,
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_f64() => "a number",
        Value::Number(_) => "an integer",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The user message asking the model to correct an invalid reply.
pub(super) fn retry_message(error: &str) -> String {
    format!("Your reply was not valid: {error}. Reply with one JSON object as described.")
}

pub(super) use crate::text::ellipsized as truncate;

/// Models asked for JSON sometimes wrap it in a Markdown code fence.
pub(super) fn strip_code_fence(text: &str) -> &str {
    let t = text.trim();
    let Some(rest) = t.strip_prefix("```") else {
        return t;
    };
    let rest = rest.strip_prefix("json").unwrap_or(rest);
    rest.strip_suffix("```").unwrap_or(rest).trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tools() -> Vec<ToolSpec> {
        vec![
            ToolSpec {
                name: "rag_search".into(),
                description: "Searches the knowledge base.".into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "query": {"type": "string"},
                        "limit": {"type": "integer", "minimum": 1},
                        "filters": {"type": ["object", "null"]}
                    },
                    "required": ["query"]
                }),
            },
            ToolSpec {
                name: "clock".into(),
                description: "The time.".into(),
                parameters: json!({"type": "object", "properties": {}, "additionalProperties": false}),
            },
        ]
    }

    fn error(text: &str) -> String {
        parse(text, &tools(), None).unwrap_err()
    }

    #[test]
    fn code_fences_around_json_are_removed() {
        assert_eq!(strip_code_fence("```json\n{\"a\":1}\n```"), "{\"a\":1}");
        assert_eq!(strip_code_fence("  {\"a\":1} "), "{\"a\":1}");
        assert_eq!(strip_code_fence("```\n[1]\n```"), "[1]");
    }

    #[test]
    fn an_action_becomes_a_numbered_call() {
        let reply = parse(
            "```json\n{\"thought\": \"search first\", \"action\": \"rag_search\", \"input\": {\"query\": \"keys\", \"limit\": 3}}\n```",
            &tools(),
            None,
        )
        .unwrap();
        assert_eq!(reply.thought(), Some("search first"));
        assert_eq!(
            reply.call(4),
            Some(ToolCall {
                id: "call_4".into(),
                name: "rag_search".into(),
                arguments: json!({"query": "keys", "limit": 3}),
            })
        );
        // No input for a tool without required arguments is an empty input.
        let reply = parse(r#"{"action": "clock"}"#, &tools(), None).unwrap();
        assert_eq!(reply.call(1).unwrap().arguments, json!({}));
    }

    #[test]
    fn a_final_answer_is_text() {
        let reply = parse(r#"{"final": "Rotate it [1]."}"#, &tools(), None).unwrap();
        assert_eq!(
            reply,
            Reply::Final {
                thought: None,
                text: "Rotate it [1].".into()
            }
        );
        assert_eq!(reply.call(1), None);
        // Words around the object are tolerated.
        let reply = parse("Here you go: {\"final\": \"ok\"} Done.", &tools(), None).unwrap();
        assert!(matches!(reply, Reply::Final { text, .. } if text == "ok"));
    }

    #[test]
    fn with_an_answer_schema_final_may_be_an_object() {
        let schema = json!({"type": "object"});
        let reply = parse(r#"{"final": {"answer": "x"}}"#, &tools(), Some(&schema)).unwrap();
        assert!(matches!(reply, Reply::Final { text, .. } if text == r#"{"answer":"x"}"#));
        let err = parse(r#"{"final": {"answer": "x"}}"#, &tools(), None).unwrap_err();
        assert!(err.contains("must be the answer as a string"), "{err}");
    }

    #[test]
    fn invalid_replies_say_what_is_wrong() {
        for (reply, says) in [
            ("", "empty"),
            ("I would search for keys.", "not one JSON object"),
            ("[1, 2]", "one JSON object, not an array"),
            (r#"{"thought": "hm"}"#, "either \"action\""),
            (
                r#"{"action": "rag_search", "input": {"query": "q"}, "final": "x"}"#,
                "not both",
            ),
            (
                r#"{"thought": 3, "final": "x"}"#,
                "\"thought\" must be a string",
            ),
            (r#"{"final": "  "}"#, "must not be empty"),
            (r#"{"final": 42}"#, "must be the answer as a string"),
            (r#"{"action": 7}"#, "must be a tool name"),
            (
                r#"{"action": "web_search", "input": {}}"#,
                "unknown tool `web_search` in \"action\" (the tools are: rag_search, clock)",
            ),
            (
                r#"{"action": "rag_search", "input": "keys"}"#,
                "\"input\" must be an object",
            ),
            (
                r#"{"action": "rag_search", "input": {"limit": 2}}"#,
                "`rag_search`: missing required input key(s): query",
            ),
            (
                r#"{"action": "rag_search", "input": {"query": "q", "limit": "three"}}"#,
                "input key `limit` must be integer, not a string",
            ),
            (
                r#"{"action": "clock", "input": {"zone": "UTC"}}"#,
                "unknown input key `zone`",
            ),
        ] {
            let err = error(reply);
            assert!(err.contains(says), "{reply:?}: {err}");
        }
    }

    #[test]
    fn the_validator_checks_simple_types_only() {
        let schema = tools()[0].parameters.clone();
        let ok = |input: Value| check_arguments(&schema, input.as_object().unwrap());
        ok(json!({"query": "q", "limit": 3, "filters": null})).unwrap();
        ok(json!({"query": "q", "limit": 3.0, "filters": {"a": 1}})).unwrap();
        ok(json!({"query": "q", "extra": [1]})).unwrap();
        assert!(ok(json!({"query": "q", "limit": 2.5})).is_err());
        assert!(ok(json!({"query": 1})).is_err());
        assert!(ok(json!({"query": "q", "filters": "x"})).is_err());
        // A schema without `type`s or `required` accepts anything.
        check_arguments(&json!({}), json!({"x": 1}).as_object().unwrap()).unwrap();
        // An unknown type is not checked.
        let odd = json!({"properties": {"x": {"type": "date"}}});
        check_arguments(&odd, json!({"x": 1}).as_object().unwrap()).unwrap();
    }

    #[test]
    fn errors_are_bounded_on_a_character_boundary() {
        let long = format!(r#"{{"action": "{}", "input": {{}}}}"#, "é".repeat(5000));
        let err = error(&long);
        assert!(err.chars().count() <= MAX_ERROR_CHARS + 1, "{}", err.len());
        assert!(err.contains('…'));
        assert_eq!(truncate("ééé", 2), "éé…");
        assert_eq!(truncate("ééé", 3), "ééé");
    }

    #[test]
    fn history_with_calls_and_results_is_rendered_as_text() {
        let call = ToolCall {
            id: "call_1".into(),
            name: "rag_search".into(),
            arguments: json!({"query": "keys"}),
        };
        let messages = vec![
            Message::system("rules"),
            Message::user("How do I rotate keys?"),
            Message::assistant_calls("search first", vec![call.clone()]),
            Message::tool_result(&call, &json!({"passages": ["p1"]})),
        ];
        let rendered = render_history(&messages);
        assert_eq!(rendered[..2], messages[..2]);
        assert_eq!(rendered[2].role, Role::Assistant);
        let sent: Value = serde_json::from_str(&rendered[2].content).unwrap();
        assert_eq!(
            sent,
            json!({"thought": "search first", "action": "rag_search", "input": {"query": "keys"}})
        );
        assert!(rendered[2].tool_calls.is_empty());
        assert_eq!(rendered[3].role, Role::User);
        assert_eq!(
            rendered[3].content,
            r#"Observation from rag_search (call_1): {"passages":["p1"]}"#
        );
    }

    #[test]
    fn the_instruction_and_schema_carry_the_catalogue() {
        let text = instruction(&tools(), None);
        assert!(text.contains("\"rag_search\"") && text.contains("Searches the knowledge base."));
        assert!(text.contains("\"required\"") && text.contains("one of: rag_search, clock"));
        assert!(text.contains("\"final\""));
        let schema = reply_schema(&tools(), None);
        let branches = schema["anyOf"].as_array().unwrap();
        assert_eq!(branches.len(), 3);
        assert_eq!(
            branches[0]["properties"]["action"]["enum"],
            json!(["rag_search"])
        );
        assert_eq!(branches[2]["required"], json!(["final"]));
    }
}
