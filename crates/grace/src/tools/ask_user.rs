//! `ask_user {question, reason, options?, urgency}`: a structured question
//! for a human. The tool only builds and validates the request (it is
//! `awaiting_response`); a reviewer channel — the prompt at a terminal, a
//! review queue — is what talks to the human.

use crate::access::ReadScope;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{Tool, ToolError, ToolErrorKind, ToolOutput, ToolResult, required_str};
use crate::confidence::Factors;

/// Whether the run must wait for the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Urgency {
    /// The run cannot go on without an answer.
    Blocking,
    /// The run may go on with its best answer, marked as unconfirmed.
    Optional,
}

/// A question for a human.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct UserRequest {
    /// The question to put to the human.
    pub question: String,
    /// Why GRACE asks (e.g. which confidence factors were low).
    pub reason: String,
    /// Choices to offer; free text is always allowed.
    pub options: Vec<String>,
    /// Whether the run must wait for the answer.
    pub urgency: Urgency,
    /// Always true: the request waits for a human.
    pub awaiting_response: bool,
}

/// Builds questions for humans.
#[derive(Debug, Default)]
pub struct AskUser;

impl AskUser {
    /// The tool's name, as plans, the agent and callers name it.
    pub const NAME: &'static str = crate::config::ASK_USER;
}

impl Tool for AskUser {
    fn name(&self) -> &str {
        AskUser::NAME
    }

    fn description(&self) -> &str {
        "Ask a human a structured question (with the reason and optional choices) when the sources do not settle it."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "question": {"type": "string", "minLength": 1},
                "reason": {"type": "string", "minLength": 1},
                "options": {"type": "array", "items": {"type": "string", "minLength": 1}},
                "urgency": {"type": "string", "enum": ["blocking", "optional"]}
            },
            "required": ["question", "reason", "urgency"],
            "additionalProperties": false
        })
    }

    fn execute(&self, input: &Value, _scope: &ReadScope) -> Result<ToolResult, ToolError> {
        let invalid = |m: String| ToolError::new(AskUser::NAME, ToolErrorKind::InvalidInput, m);
        let question = required_str(AskUser::NAME, input, "question")?.to_string();
        let reason = required_str(AskUser::NAME, input, "reason")?.to_string();
        let urgency = match required_str(AskUser::NAME, input, "urgency")? {
            "blocking" => Urgency::Blocking,
            "optional" => Urgency::Optional,
            other => {
                return Err(invalid(format!(
                    "`urgency` must be \"blocking\" or \"optional\", got \"{other}\""
                )));
            }
        };
        let options = match input.get("options") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => {
                let mut options = Vec::with_capacity(items.len());
                for item in items {
                    match item.as_str().map(str::trim) {
                        Some(s) if !s.is_empty() => options.push(s.to_string()),
                        _ => {
                            return Err(invalid(format!(
                                "every option must be a non-empty string, got {item}"
                            )));
                        }
                    }
                }
                options
            }
            Some(other) => {
                return Err(invalid(format!(
                    "`options` must be an array of strings, got {other}"
                )));
            }
        };
        let request = UserRequest {
            question,
            reason,
            options,
            urgency,
            awaiting_response: true,
        };
        Ok(ToolResult::ok(
            ToolOutput::UserRequest(request),
            Vec::new(),
            Factors::default(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_a_request_awaiting_response() {
        let r = AskUser
            .execute(
                &json!({
                    "question": "Which release do you mean?",
                    "reason": "two releases match (max_score 0.41, margin 0.01)",
                    "options": ["bookworm", "trixie"],
                    "urgency": "blocking"
                }),
                &crate::access::ReadScope::All,
            )
            .unwrap();
        assert!(r.success);
        let ToolOutput::UserRequest(req) = r.output else {
            panic!("not a user request: {:?}", r.output)
        };
        assert!(req.awaiting_response);
        assert_eq!(req.options, vec!["bookworm", "trixie"]);
        assert_eq!(req.urgency, Urgency::Blocking);
    }

    #[test]
    fn rejects_bad_input() {
        for bad in [
            json!({"reason": "r", "urgency": "optional"}),
            json!({"question": " ", "reason": "r", "urgency": "optional"}),
            json!({"question": "q", "reason": "r", "urgency": "soon"}),
            json!({"question": "q", "reason": "r", "urgency": "optional", "options": ["a", ""]}),
            json!({"question": "q", "reason": "r", "urgency": "optional", "options": "a"}),
            json!({"question": 3, "reason": "r", "urgency": "optional"}),
        ] {
            let err = AskUser
                .execute(&bad, &crate::access::ReadScope::All)
                .unwrap_err();
            assert_eq!(err.kind, ToolErrorKind::InvalidInput, "{bad}");
            assert!(!err.is_retryable());
        }
    }
}
