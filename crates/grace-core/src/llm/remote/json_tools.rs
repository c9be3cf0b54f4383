//! JSON tool mode on a remote model: the protocol of `json_mode.rs` in the
//! instruction, a JSON reply, checked, and asked for once more when
//! invalid.

use genai::adapter::AdapterKind;
use genai::chat::{ChatMessage, ChatOptions, ChatRequest, ChatResponseFormat, JsonSpec};

use super::RemoteLlm;
use super::exchange::next_call_number;
use super::native::{stop_reason, usage};
use crate::llm::json_mode;
use crate::llm::{GenerateRequest, Generation, LlmError, Result, StopReason, Usage};

impl RemoteLlm {
    /// JSON tool mode (see `json_mode.rs`): no native tools; the catalogue
    /// and protocol in the instruction, a JSON reply, checked, and asked
    /// for once more with the reason when invalid.
    pub(super) fn generate_json(&self, request: &GenerateRequest) -> Result<Generation> {
        let schema = request.json_schema.as_ref();
        let chat = self.chat_request(
            request,
            true,
            Some(json_mode::instruction(&request.tools, schema)),
        )?;
        let options = self.options.clone().with_response_format(match self.kind {
            AdapterKind::Ollama => ChatResponseFormat::JsonMode,
            _ => ChatResponseFormat::JsonSpec(JsonSpec::new(
                "grace_tool_reply",
                json_mode::reply_schema(&request.tools, schema),
            )),
        });
        let first = next_call_number(&request.messages);

        let (text, stop, usage) = self.json_reply(chat.clone(), &options)?;
        if stop == StopReason::MaxTokens || (stop == StopReason::Safety && text.trim().is_empty()) {
            return Ok(Generation::plain(text, stop, usage));
        }
        let error = match json_mode::parse(&text, &request.tools, schema) {
            Ok(reply) => return Ok(json_generation(reply, first, stop, usage)),
            Err(error) => error,
        };
        tracing::debug!(generator = %self.name, %error, "invalid JSON tool-mode reply; asking again");
        let chat = chat
            .append_message(ChatMessage::assistant(json_mode::truncate(
                &text,
                json_mode::MAX_ECHOED_REPLY_CHARS,
            )))
            .append_message(ChatMessage::user(json_mode::retry_message(&error)));
        let (text, stop, again) = self.json_reply(chat, &options)?;
        let usage = Usage {
            input_tokens: usage.input_tokens + again.input_tokens,
            output_tokens: usage.output_tokens + again.output_tokens,
        };
        if stop == StopReason::MaxTokens || (stop == StopReason::Safety && text.trim().is_empty()) {
            return Ok(Generation::plain(text, stop, usage));
        }
        match json_mode::parse(&text, &request.tools, schema) {
            Ok(reply) => Ok(json_generation(reply, first, stop, usage)),
            Err(error) => Err(LlmError::Malformed {
                generator: self.name.clone(),
                message: format!("the reply broke the JSON tool protocol twice, last: {error}"),
            }),
        }
    }

    /// One JSON-mode exchange: the reply's text, stop reason and usage.
    fn json_reply(
        &self,
        chat: ChatRequest,
        options: &ChatOptions,
    ) -> Result<(String, StopReason, Usage)> {
        let response = self.exec(chat, options).map_err(|f| self.error(f))?;
        let stop = stop_reason(response.stop_reason.as_ref());
        let usage = usage(&response.usage);
        let text = response.content.texts().join("\n");
        Ok((text, stop, usage))
    }
}

fn json_generation(
    reply: json_mode::Reply,
    first: usize,
    stop: StopReason,
    usage: Usage,
) -> Generation {
    let thought = reply.thought().map(str::to_string);
    let call = reply.call(first);
    let (text, stop_reason) = match reply {
        json_mode::Reply::Final { text, .. } => (text, stop),
        json_mode::Reply::Action { .. } => (String::new(), StopReason::ToolUse),
    };
    Generation {
        text,
        stop_reason,
        usage,
        tool_calls: call.into_iter().collect(),
        thought,
    }
}
