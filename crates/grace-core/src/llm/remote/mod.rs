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

mod exchange;
mod json_tools;
mod native;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use genai::adapter::AdapterKind;
use genai::chat::ChatOptions;
use genai::resolver::{AuthData, Endpoint};

use super::{GenerateRequest, Generation, LlmClient, LlmError, Result};
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

#[cfg(test)]
mod tests;
