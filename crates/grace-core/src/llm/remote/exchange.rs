//! Turning GRACE's requests into genai's, sending them on the client's
//! runtime, sorting failures for the retry policy, and numbering the
//! calls GRACE makes up ids for.

use std::borrow::Cow;

use genai::adapter::AdapterKind;
use genai::chat::{
    ChatMessage, ChatOptions, ChatRequest, ChatResponse, ContentPart, MessageContent,
    ToolCall as GenaiCall, ToolResponse,
};

use super::RemoteLlm;
use crate::llm::json_mode;
use crate::llm::{GenerateRequest, LlmError, Message, Result, Role, ToolCall};

/// Why a request got no response to read.
pub(super) enum Failure {
    /// None within the configured time.
    Timeout,
    /// The provider refused it, or could not be reached or read.
    Provider(genai::Error),
}

impl RemoteLlm {
    /// The request as genai's: system messages joined into the system
    /// instruction (with `extra_system` last), tool calls and results as
    /// genai's parts, or, with `text_history`, rendered as text for JSON
    /// mode.
    pub(super) fn chat_request(
        &self,
        request: &GenerateRequest,
        text_history: bool,
        extra_system: Option<String>,
    ) -> Result<ChatRequest> {
        let history: Cow<'_, [Message]> = if text_history {
            Cow::Owned(json_mode::render_history(&request.messages))
        } else {
            Cow::Borrowed(&request.messages)
        };
        let mut system: Vec<String> = Vec::new();
        let mut messages = Vec::new();
        for (i, m) in history.iter().enumerate() {
            match m.role {
                Role::System => system.push(m.content.clone()),
                Role::User => messages.push(ChatMessage::user(m.content.clone())),
                Role::Assistant if m.tool_calls.is_empty() => {
                    messages.push(ChatMessage::assistant(m.content.clone()))
                }
                Role::Assistant => {
                    let mut parts = Vec::new();
                    if !m.content.is_empty() {
                        parts.push(ContentPart::Text(m.content.clone()));
                    }
                    parts.extend(
                        m.tool_calls
                            .iter()
                            .map(|c| ContentPart::ToolCall(self.genai_call(c))),
                    );
                    messages.push(ChatMessage::assistant(MessageContent::from_parts(parts)));
                }
                Role::Tool => {
                    let Some(call) = &m.tool_call else {
                        return Err(LlmError::Unsupported {
                            generator: self.name.clone(),
                            message: format!(
                                "message {}: a tool result must name the call it answers \
                                 (Message::tool_result)",
                                i + 1
                            ),
                        });
                    };
                    let response =
                        ToolResponse::from_tool_call(&self.genai_call(call), m.content.clone());
                    messages.push(ChatMessage::from(response));
                }
            }
        }
        system.extend(extra_system);
        let mut chat = ChatRequest::new(messages);
        if !system.is_empty() {
            chat = chat.with_system(system.join("\n\n"));
        }
        Ok(chat)
    }

    /// A call as genai sends it back. Gemini matches calls without an id
    /// by name and order, and genai leaves the id out for its own stand-in
    /// ids (`call#<name>#<n>`), so GRACE's `call_<n>` travels as one of
    /// those rather than as an id Gemini never gave.
    pub(super) fn genai_call(&self, call: &ToolCall) -> GenaiCall {
        let call_id = match (self.kind, generated_number(&call.id)) {
            (AdapterKind::Gemini, Some(n)) => format!("call#{}#{n}", call.name),
            _ => call.id.clone(),
        };
        GenaiCall {
            call_id,
            fn_name: call.name.clone(),
            fn_arguments: call.arguments.clone(),
            thought_signatures: None,
        }
    }

    /// Sends one request and waits for the response.
    pub(super) fn exec(
        &self,
        chat: ChatRequest,
        options: &ChatOptions,
    ) -> std::result::Result<ChatResponse, Failure> {
        let call = self
            .client
            .exec_chat(self.model.as_str(), chat, Some(options));
        let Some(runtime) = &self.runtime else {
            // Only `drop` takes it; no call can come after.
            return Err(Failure::Timeout);
        };
        runtime
            .block_on(async { tokio::time::timeout(self.timeout, call).await })
            .map_err(|_| Failure::Timeout)?
            .map_err(Failure::Provider)
    }

    pub(super) fn error(&self, failure: Failure) -> LlmError {
        match failure {
            Failure::Timeout => LlmError::Timeout {
                generator: self.name.clone(),
                seconds: self.timeout.as_secs_f64(),
            },
            Failure::Provider(e) => self.classify(e),
        }
    }

    fn classify(&self, e: genai::Error) -> LlmError {
        let generator = self.name.clone();
        match e.status() {
            Some(s) if s.as_u16() == 429 || s.is_server_error() => LlmError::Transient {
                generator,
                message: format!("HTTP {s}: {}", first_line(&e.to_string(), 300)),
            },
            Some(s) => LlmError::Failed {
                generator,
                message: format!(
                    "HTTP {s}: {}{}",
                    first_line(&e.to_string(), 300),
                    if s.as_u16() == 401 || s.as_u16() == 403 {
                        " (check the API key)"
                    } else if s.as_u16() == 404 {
                        " (check the model name and base_url)"
                    } else {
                        ""
                    }
                ),
            },
            // No HTTP response: a refused or dropped connection, or a body
            // that is not the provider's JSON. Worth another try.
            None => LlmError::Transient {
                generator,
                message: format!(
                    "{} (is {} reachable?)",
                    first_line(&e.to_string(), 300),
                    self.base_url
                ),
            },
        }
    }
}

/// The number the next generated call id takes: one more than the calls
/// already in the conversation, so `call_<n>` ids do not repeat in it.
pub(super) fn next_call_number(messages: &[Message]) -> usize {
    messages.iter().map(|m| m.tool_calls.len()).sum::<usize>() + 1
}

/// `n` when `id` is a generated `call_<n>`.
pub(super) fn generated_number(id: &str) -> Option<usize> {
    id.strip_prefix("call_")?.parse().ok()
}

pub(super) fn first_line(text: &str, max: usize) -> String {
    crate::text::ellipsized(&text.replace('\n', " "), max)
}
