//! The input schemas of GRACE's own MCP tools (a call's arguments are
//! checked against them by `tools::check_arguments`).

use serde_json::{Value, json};

pub(super) fn ask_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "question": {"type": "string", "minLength": 1, "maxLength": grace::service::MAX_QUESTION_CHARS,
                         "description": "the question"},
            "limit": {"type": "integer", "minimum": 1, "maximum": grace::config::MAX_RAG_SEARCH_LIMIT, "description": "passages retrieved"},
            "asker": {"type": "string", "description": "who asks, shown to reviewers"},
            "run_id": {"type": "string", "pattern": "^run_[0-9a-f]{32}$",
                       "description": "continue a run that needs input (decision needs_input) with `reply`; `question` is then ignored"},
            "reply": {"type": "string", "maxLength": grace::service::MAX_REPLY_CHARS,
                      "description": "with run_id: the answer to the run's clarification question (absent: none, GRACE proceeds on its best assumption)"},
            "session_id": {"type": "string", "pattern": "^(new|ses_[0-9a-f]{32})$",
                           "description": "continue a conversation: the session_id an earlier ask returned, or \"new\" to start one; follow-ups are read against its earlier turns"}
        },
        "required": [],
        "additionalProperties": false
    })
}

pub(super) fn ingest_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "paths": {"type": "array", "items": {"type": "string"}, "minItems": 1,
                      "description": "files, folders or glob patterns on the server"},
            "prune": {"type": "boolean", "description": "remove chunks of files gone from the folders"}
        },
        "required": ["paths"],
        "additionalProperties": false
    })
}

pub(super) fn feedback_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "answer_id": {"type": "string", "pattern": grace::feedback::ANSWER_ID_PATTERN,
                          "description": "the answer_id an ask returned"},
            "vote": {"type": "string", "enum": ["up", "down"]},
            "reason": {"type": "string", "enum": grace::feedback::Reason::ALL.map(grace::feedback::Reason::as_str),
                       "description": "why, with a down vote"},
            "text": {"type": "string", "maxLength": grace::feedback::MAX_RATING_TEXT_CHARS,
                     "description": "the asker's words, with the reason other"},
            "asker": {"type": "string", "description": "who asked, as given to ask (default mcp)"},
            "session_id": {"type": "string", "pattern": "^ses_[0-9a-f]{32}$",
                           "description": "the conversation the question was asked in, as ask returned it"}
        },
        "required": ["answer_id", "vote"],
        "additionalProperties": false
    })
}

pub(super) fn list_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "status": {"type": "string", "enum": ["pending", "claimed", "answered", "rejected", "expired", "cancelled"]},
            "reviewer": {"type": "string", "description": "list as this reviewer (restricted escalations)"}
        },
        "additionalProperties": false
    })
}

pub(super) fn answer_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "id": {"type": "integer", "minimum": 1},
            "reviewer": {"type": "string", "minLength": 1, "description": "a registered reviewer id"},
            "text": {"type": "string", "minLength": 1, "description": "the answer in the reviewer's words"},
            "option": {"type": "integer", "minimum": 1, "description": "the number of an offered option"},
            "promote": {"type": "boolean", "description": "add the answer to the knowledge base"},
            "verdict": {"type": "string", "enum": grace::review::Verdict::ALL.map(grace::review::Verdict::as_str),
                        "description": "what GRACE's draft was (absent: implied by the answer)"}
        },
        "required": ["id", "reviewer"],
        "additionalProperties": false
    })
}

/// Adds the `kb` argument to a tool's schema: the knowledge bases the
/// client may ask, by name (`default` when left out). A schema without
/// properties gains them.
pub(super) fn add_kb(schema: &mut serde_json::Map<String, Value>, names: &[&str], default: &str) {
    let properties = schema.entry("properties").or_insert_with(|| json!({}));
    if let Some(p) = properties.as_object_mut() {
        p.insert(
            super::KB_ARGUMENT.to_string(),
            json!({"type": "string", "enum": names,
                   "description": format!("the knowledge base (default: {default})")}),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use grace::tools::check_arguments;

    #[test]
    fn arguments_are_checked_against_the_schema() {
        let s = ask_schema();
        assert!(check_arguments(&s, &json!({"question": "why?"})).is_ok());
        assert!(check_arguments(&s, &json!({"question": "why?", "limit": 3})).is_ok());
        // `ask` takes a question or a run_id: the call checks which.
        assert!(check_arguments(&s, &json!({})).is_ok());
        assert_eq!(
            check_arguments(&answer_schema(), &json!({"reviewer": "alice"})).unwrap_err(),
            "`id` is required"
        );
        assert!(
            check_arguments(&s, &json!({"question": 3}))
                .unwrap_err()
                .contains("type string")
        );
        assert!(
            check_arguments(&s, &json!({"question": " "}))
                .unwrap_err()
                .contains("empty")
        );
        assert!(
            check_arguments(&s, &json!({"question": "q", "limit": 0}))
                .unwrap_err()
                .contains("at least")
        );
        assert!(
            check_arguments(&s, &json!({"question": "q", "x": 1}))
                .unwrap_err()
                .contains("unknown argument")
        );
        let l = list_schema();
        assert!(
            check_arguments(&l, &json!({"status": "lost"}))
                .unwrap_err()
                .contains("one of")
        );
    }
}
