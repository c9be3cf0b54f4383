//! Language models behind an HTTP API — Gemini and Ollama — through the
//! `genai` crate.
//!
//! The [`LlmClient`] trait is synchronous (tools run on their own threads),
//! so each client owns a small tokio runtime and blocks on it. Errors are
//! sorted for the caller's retry policy: HTTP 429 and 5xx, dropped
//! connections and timeouts are transient; any other failure is not. This
//! client does not retry by itself: the `reasoning` tool's
//! `retry_count`/`retry_delay_seconds` do, so there is one retry policy.
//! (The one exception: in JSON tool mode, an invalid reply is asked for
//! again once, with the reason, before [`LlmError::Malformed`].)
//!
//! Structured output: Gemini receives the JSON schema as
//! `generationConfig.responseJsonSchema`. genai drops a schema for Ollama
//! (it sends only `"format": "json"`), so the schema is also written into
//! the system instruction; the caller validates the JSON either way. With
//! native tools the schema goes into the instruction for both providers
//! (Gemini 2.5 refuses function calling together with a JSON response
//! type).
//!
//! Tools (`llm.tool_mode`): natively, through genai's `Tool`, `ToolCall` and
//! `ToolResponse` (Gemini `functionDeclarations` / `functionCall` /
//! `functionResponse`; Ollama `tools` / `tool_calls` / `role: tool`); or,
//! in JSON mode, by the protocol in `json_mode.rs`. genai makes up call ids
//! when the provider gives none (Gemini `call#<name>#<n>`, Ollama
//! `call_<random>`); GRACE reads the provider's own ids from the raw
//! response body instead and numbers the rest `call_<n>`.

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use genai::adapter::AdapterKind;
use genai::chat::{
    ChatMessage, ChatOptions, ChatRequest, ChatResponse, ChatResponseFormat, ContentPart, JsonSpec,
    MessageContent, StopReason as GenaiStop, Tool, ToolCall as GenaiCall, ToolResponse,
};
use genai::resolver::{AuthData, Endpoint};
use serde_json::Value;

use super::json_mode::{self, strip_code_fence};
use super::{
    GenerateRequest, Generation, LlmClient, LlmError, Message, Result, Role, StopReason, ToolCall,
    Usage,
};
use crate::config::{RemoteLlmConfig, ToolMode};

/// The environment variable holding the Gemini API key (as in the original).
pub const GEMINI_API_KEY: &str = "GEMINI_API_KEY";
/// The environment variable naming the Ollama server (as in the original).
pub const OLLAMA_BASE_URL: &str = "OLLAMA_BASE_URL";
/// Where Ollama listens when nothing else is said.
pub const OLLAMA_DEFAULT_URL: &str = "http://localhost:11434";

/// A Gemini or Ollama model.
pub struct RemoteLlm {
    name: String,
    kind: AdapterKind,
    model: String,
    /// The API base, for error messages.
    base_url: String,
    client: genai::Client,
    options: ChatOptions,
    timeout: Duration,
    /// Always `Some` until dropped (see the `Drop` impl).
    runtime: Option<tokio::runtime::Runtime>,
    tool_mode: ToolMode,
    /// Set (once, in `auto` mode) when the provider said the model does
    /// not support tools: JSON mode from then on.
    json_fallback: AtomicBool,
}

impl std::fmt::Debug for RemoteLlm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteLlm")
            .field("name", &self.name)
            .field("timeout", &self.timeout)
            .field("tool_mode", &self.tool_mode)
            .field("json_tools", &self.uses_json_tools())
            .finish()
    }
}

/// Why a request got no response to read.
enum Failure {
    /// None within the configured time.
    Timeout,
    /// The provider refused it, or could not be reached or read.
    Provider(genai::Error),
}

impl RemoteLlm {
    /// A Gemini client. `api_key` is the value of `GEMINI_API_KEY`; a
    /// missing or empty key is an error now, not at the first question.
    pub fn gemini(config: &RemoteLlmConfig, api_key: Option<String>) -> Result<Self> {
        let name = format!("gemini:{}", config.model);
        let key = api_key
            .filter(|k| !k.trim().is_empty())
            .ok_or_else(|| LlmError::Setup {
                generator: name.clone(),
                message: format!(
                    "{GEMINI_API_KEY} is not set: export {GEMINI_API_KEY}=<your key>, \
                 or use another llm.provider (extractive needs no key)"
                ),
            })?;
        Self::build(
            name,
            AdapterKind::Gemini,
            config,
            with_slash(&config.base_url),
            AuthData::from_single(key),
        )
    }

    /// An Ollama client at `config.base_url`, else `base_url_env` (the value
    /// of `OLLAMA_BASE_URL`), else `http://localhost:11434`.
    pub fn ollama(config: &RemoteLlmConfig, base_url_env: Option<String>) -> Result<Self> {
        let name = format!("ollama:{}", config.model);
        let base = if !config.base_url.is_empty() {
            config.base_url.clone()
        } else {
            base_url_env
                .filter(|u| !u.trim().is_empty())
                .unwrap_or_else(|| OLLAMA_DEFAULT_URL.to_string())
        };
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(LlmError::Setup {
                generator: name,
                message: format!(
                    "`{base}` is not an http(s) URL (set {OLLAMA_BASE_URL} or llm.ollama.base_url, \
                     e.g. {OLLAMA_DEFAULT_URL})"
                ),
            });
        }
        Self::build(
            name,
            AdapterKind::Ollama,
            config,
            with_slash(&base),
            AuthData::from_single("ollama"),
        )
    }

    /// This client with tools offered in `mode` (`llm.tool_mode`; the
    /// default is [`ToolMode::Auto`]).
    pub fn with_tool_mode(mut self, mode: ToolMode) -> Self {
        self.tool_mode = mode;
        self.json_fallback = AtomicBool::new(false);
        self
    }

    /// The configured tool mode.
    pub fn tool_mode(&self) -> ToolMode {
        self.tool_mode
    }

    /// Whether tools are offered by the JSON protocol rather than natively:
    /// in `json` mode, and in `auto` mode once the provider said the model
    /// does not support tools.
    pub fn uses_json_tools(&self) -> bool {
        match self.tool_mode {
            ToolMode::Json => true,
            ToolMode::Native => false,
            ToolMode::Auto => self.json_fallback.load(Ordering::Relaxed),
        }
    }

    fn build(
        name: String,
        kind: AdapterKind,
        config: &RemoteLlmConfig,
        base_url: String,
        auth: AuthData,
    ) -> Result<Self> {
        let setup = |message: String| LlmError::Setup {
            generator: name.clone(),
            message,
        };
        let client = genai::Client::builder()
            .with_adapter_kind(kind)
            .append_provider_config(kind, (Endpoint::from_owned(base_url.clone()), auth))
            .build()
            .map_err(|e| setup(format!("cannot build the HTTP client: {e}")))?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| setup(format!("cannot start the async runtime: {e}")))?;
        let options = ChatOptions::default()
            .with_temperature(config.temperature)
            .with_max_tokens(config.max_output_tokens);
        Ok(Self {
            name,
            kind,
            model: config.model.clone(),
            base_url,
            client,
            options,
            timeout: Duration::from_secs_f64(config.timeout_seconds),
            runtime: Some(runtime),
            tool_mode: ToolMode::default(),
            json_fallback: AtomicBool::new(false),
        })
    }

    /// The request as genai's: system messages joined into the system
    /// instruction (with `extra_system` last), tool calls and results as
    /// genai's parts, or, with `text_history`, rendered as text for JSON
    /// mode.
    fn chat_request(
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
    fn genai_call(&self, call: &ToolCall) -> GenaiCall {
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
    fn exec(
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

    fn error(&self, failure: Failure) -> LlmError {
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

    /// Native generation: tools (if any) declared to the provider, calls
    /// and results in the provider's shapes. In `auto` mode, a provider
    /// that says the model does not support tools turns this client to
    /// JSON mode and the request is made again that way.
    fn generate_native(&self, request: &GenerateRequest) -> Result<Generation> {
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

    /// JSON tool mode (see `json_mode.rs`): no native tools; the catalogue
    /// and protocol in the instruction, a JSON reply, checked, and asked
    /// for once more with the reason when invalid.
    fn generate_json(&self, request: &GenerateRequest) -> Result<Generation> {
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

impl LlmClient for RemoteLlm {
    fn name(&self) -> &str {
        &self.name
    }

    fn can_plan(&self) -> bool {
        true
    }

    fn supports_tools(&self) -> bool {
        true
    }

    fn generate(&self, request: &GenerateRequest) -> Result<Generation> {
        if !request.tools.is_empty() && self.uses_json_tools() {
            self.generate_json(request)
        } else {
            self.generate_native(request)
        }
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

fn stop_reason(reason: Option<&GenaiStop>) -> StopReason {
    match reason {
        None | Some(GenaiStop::Completed(_)) => StopReason::Complete,
        Some(GenaiStop::MaxTokens(_)) => StopReason::MaxTokens,
        Some(GenaiStop::ToolCall(_)) => StopReason::ToolUse,
        Some(GenaiStop::ContentFilter(_)) => StopReason::Safety,
        Some(GenaiStop::StopSequence(_) | GenaiStop::Other(_)) => StopReason::Other,
    }
}

fn usage(usage: &genai::chat::Usage) -> Usage {
    Usage {
        input_tokens: usage.prompt_tokens.unwrap_or(0).max(0) as u64,
        output_tokens: usage.completion_tokens.unwrap_or(0).max(0) as u64,
    }
}

/// The ids the provider gave its tool calls, in order (`None` where it
/// gave none): Gemini `candidates[0].content.parts[].functionCall.id`,
/// Ollama `message.tool_calls[].id`.
fn provider_call_ids(kind: AdapterKind, body: &Value) -> Vec<Option<String>> {
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

/// The number the next generated call id takes: one more than the calls
/// already in the conversation, so `call_<n>` ids do not repeat in it.
fn next_call_number(messages: &[Message]) -> usize {
    messages.iter().map(|m| m.tool_calls.len()).sum::<usize>() + 1
}

/// `n` when `id` is a generated `call_<n>`.
fn generated_number(id: &str) -> Option<usize> {
    id.strip_prefix("call_")?.parse().ok()
}

impl Drop for RemoteLlm {
    /// The client may be dropped inside another runtime's async context
    /// (`grace mcp` and `grace serve` drop their handle there at exit),
    /// where dropping a runtime that blocks would panic: it is shut down in
    /// the background instead.
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

fn with_slash(url: &str) -> String {
    if url.ends_with('/') {
        url.to_string()
    } else {
        format!("{url}/")
    }
}

fn first_line(text: &str, max: usize) -> String {
    crate::text::ellipsized(&text.replace('\n', " "), max)
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
