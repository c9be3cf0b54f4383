//! Native generation: tools declared to the provider, and the provider's
//! reply (its stop reason, usage and tool calls) read back as GRACE's.

use std::sync::atomic::Ordering;

use genai::adapter::AdapterKind;
use genai::chat::{ChatResponse, ChatResponseFormat, JsonSpec, StopReason as GenaiStop, Tool};
use serde_json::Value;

use super::RemoteLlm;
use super::exchange::{Failure, first_line, next_call_number};
use crate::config::ToolMode;
use crate::llm::json_mode::strip_code_fence;
use crate::llm::{GenerateRequest, Generation, LlmError, Result, StopReason, ToolCall, Usage};

impl RemoteLlm {
    /// Native generation: tools (if any) declared to the provider, calls
    /// and results in the provider's shapes. In `auto` mode, a provider
    /// that says the model does not support tools turns this client to
    /// JSON mode and the request is made again that way.
    pub(super) fn generate_native(&self, request: &GenerateRequest) -> Result<Generation> {
        let tools = !request.tools.is_empty();
        let schema_instruction = request
            .json_schema
            .as_ref()
            .filter(|_| tools || self.kind == AdapterKind::Ollama)
            .map(|schema| {
                format!(
                    "{}Reply with one JSON object and nothing else. It must follow this JSON schema:\n{schema}",
                    if tools { "When you answer (rather than call a tool): " } else { "" }
                )
            });
        let mut chat = self.chat_request(request, self.uses_json_tools(), schema_instruction)?;
        let mut options = self.options.clone();
        if tools {
            chat = chat.with_tools(request.tools.iter().map(|t| {
                Tool::new(t.name.clone())
                    .with_description(t.description.clone())
                    .with_schema(t.parameters.clone())
            }));
            // For the provider's own call ids, which genai replaces when missing.
            options = options.with_capture_raw_body(true);
        } else if let Some(schema) = &request.json_schema {
            options = options.with_response_format(match self.kind {
                // genai ignores JsonMode for Gemini and drops a JsonSpec for Ollama.
                AdapterKind::Ollama => ChatResponseFormat::JsonMode,
                _ => ChatResponseFormat::JsonSpec(JsonSpec::new("grace_output", schema.clone())),
            });
        }
        let response = match self.exec(chat, &options) {
            Ok(response) => response,
            Err(Failure::Provider(e))
                if tools && self.tool_mode == ToolMode::Auto && refuses_tools(&e) =>
            {
                self.json_fallback.store(true, Ordering::Relaxed);
                tracing::warn!(
                    generator = %self.name,
                    error = %first_line(&e.to_string(), 300),
                    "the model does not support native tool calling; using JSON tool mode from now on \
                     (set llm.tool_mode: json to skip this attempt)"
                );
                return self.generate_json(request);
            }
            Err(failure) => return Err(self.error(failure)),
        };
        self.native_generation(request, response)
    }

    fn native_generation(
        &self,
        request: &GenerateRequest,
        response: ChatResponse,
    ) -> Result<Generation> {
        let mut stop_reason = stop_reason(response.stop_reason.as_ref());
        let usage = usage(&response.usage);
        let provider_ids = response
            .captured_raw_body
            .as_ref()
            .map(|body| provider_call_ids(self.kind, body))
            .unwrap_or_default();
        let first = next_call_number(&request.messages);
        let tool_calls: Vec<ToolCall> = response
            .content
            .tool_calls()
            .into_iter()
            .enumerate()
            .map(|(i, call)| ToolCall {
                id: provider_ids
                    .get(i)
                    .cloned()
                    .flatten()
                    .unwrap_or_else(|| format!("call_{}", first + i)),
                name: call.fn_name.clone(),
                arguments: match &call.fn_arguments {
                    Value::Null => Value::Object(Default::default()),
                    args => args.clone(),
                },
            })
            .collect();
        let said = response.content.texts().join("\n");
        let reasoning = response.reasoning_content.filter(|r| !r.trim().is_empty());
        let (text, thought) = if tool_calls.is_empty() {
            (strip_code_fence(&said).to_string(), reasoning)
        } else {
            stop_reason = StopReason::ToolUse;
            let said = said.trim();
            (
                String::new(),
                (!said.is_empty()).then(|| said.to_string()).or(reasoning),
            )
        };
        if text.is_empty() && tool_calls.is_empty() && stop_reason != StopReason::Safety {
            // A refusal comes back without text.
            return Err(LlmError::Failed {
                generator: self.name.clone(),
                message: format!("the model returned no text (stop reason: {stop_reason:?})"),
            });
        }
        tracing::debug!(
            generator = %self.name,
            input_tokens = usage.input_tokens,
            output_tokens = usage.output_tokens,
            tool_calls = tool_calls.len(),
            stop_reason = ?stop_reason,
            "generated"
        );
        Ok(Generation {
            text,
            stop_reason,
            usage,
            tool_calls,
            thought,
        })
    }
}

/// Whether the provider refused a request because the model has no tool
/// calling: Ollama answers HTTP 400 "… does not support tools", Gemini
/// (for Gemma models) 400 "Function calling is not enabled for …".
fn refuses_tools(e: &genai::Error) -> bool {
    if e.status().map(|s| s.as_u16()) != Some(400) {
        return false;
    }
    let text = e.to_string().to_ascii_lowercase();
    text.contains("does not support tools") || text.contains("function calling is not enabled")
}

pub(super) fn stop_reason(reason: Option<&GenaiStop>) -> StopReason {
    match reason {
        None | Some(GenaiStop::Completed(_)) => StopReason::Complete,
        Some(GenaiStop::MaxTokens(_)) => StopReason::MaxTokens,
        Some(GenaiStop::ToolCall(_)) => StopReason::ToolUse,
        Some(GenaiStop::ContentFilter(_)) => StopReason::Safety,
        Some(GenaiStop::StopSequence(_) | GenaiStop::Other(_)) => StopReason::Other,
    }
}

pub(super) fn usage(usage: &genai::chat::Usage) -> Usage {
    Usage {
        input_tokens: usage.prompt_tokens.unwrap_or(0).max(0) as u64,
        output_tokens: usage.completion_tokens.unwrap_or(0).max(0) as u64,
    }
}

/// The ids the provider gave its tool calls, in order (`None` where it
/// gave none): Gemini `candidates[0].content.parts[].functionCall.id`,
/// Ollama `message.tool_calls[].id`.
pub(super) fn provider_call_ids(kind: AdapterKind, body: &Value) -> Vec<Option<String>> {
    let id = |v: &Value| {
        v.get("id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    let items = |pointer: &str| {
        body.pointer(pointer)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    match kind {
        AdapterKind::Ollama => items("/message/tool_calls").iter().map(id).collect(),
        _ => items("/candidates/0/content/parts")
            .iter()
            .filter_map(|p| p.get("functionCall"))
            .map(id)
            .collect(),
    }
}
