//! Language models behind an HTTP API — Gemini and Ollama — through the
//! `genai` crate.
//!
//! The [`LlmClient`] trait is synchronous (tools run on their own threads),
//! so each client owns a small tokio runtime and blocks on it. Errors are
//! sorted for the caller's retry policy: HTTP 429 and 5xx, dropped
//! connections and timeouts are transient; any other failure is not. This
//! client does not retry by itself: the `reasoning` tool's
//! `retry_count`/`retry_delay_seconds` do, so there is one retry policy.
//!
//! Structured output: Gemini receives the JSON schema as
//! `generationConfig.responseJsonSchema`. genai drops a schema for Ollama
//! (it sends only `"format": "json"`), so the schema is also written into
//! the system instruction; the caller validates the JSON either way.

use std::time::Duration;

use genai::adapter::AdapterKind;
use genai::chat::{
    ChatMessage, ChatOptions, ChatRequest, ChatResponseFormat, JsonSpec, StopReason as GenaiStop,
};
use genai::resolver::{AuthData, Endpoint};

use super::{GenerateRequest, Generation, LlmClient, LlmError, Result, Role, StopReason, Usage};
use crate::config::RemoteLlmConfig;

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
    runtime: tokio::runtime::Runtime,
}

impl std::fmt::Debug for RemoteLlm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteLlm")
            .field("name", &self.name)
            .field("timeout", &self.timeout)
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
            runtime,
        })
    }

    fn chat_request(&self, request: &GenerateRequest) -> ChatRequest {
        let mut system: Vec<String> = Vec::new();
        let mut messages = Vec::new();
        for m in &request.messages {
            match m.role {
                Role::System => system.push(m.content.clone()),
                Role::User => messages.push(ChatMessage::user(m.content.clone())),
                Role::Assistant => messages.push(ChatMessage::assistant(m.content.clone())),
            }
        }
        if let (Some(schema), AdapterKind::Ollama) = (&request.json_schema, self.kind) {
            system.push(format!(
                "Reply with one JSON object and nothing else. It must follow this JSON schema:\n{schema}"
            ));
        }
        let mut chat = ChatRequest::new(messages);
        if !system.is_empty() {
            chat = chat.with_system(system.join("\n\n"));
        }
        chat
    }

    fn options_for(&self, request: &GenerateRequest) -> ChatOptions {
        match &request.json_schema {
            None => self.options.clone(),
            Some(schema) => self.options.clone().with_response_format(match self.kind {
                // genai ignores JsonMode for Gemini and drops a JsonSpec for Ollama.
                AdapterKind::Ollama => ChatResponseFormat::JsonMode,
                _ => ChatResponseFormat::JsonSpec(JsonSpec::new("grace_output", schema.clone())),
            }),
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

impl LlmClient for RemoteLlm {
    fn name(&self) -> &str {
        &self.name
    }

    fn can_plan(&self) -> bool {
        true
    }

    fn generate(&self, request: &GenerateRequest) -> Result<Generation> {
        let chat = self.chat_request(request);
        let options = self.options_for(request);
        let call = self
            .client
            .exec_chat(self.model.as_str(), chat, Some(&options));
        let response = self
            .runtime
            .block_on(async { tokio::time::timeout(self.timeout, call).await })
            .map_err(|_| LlmError::Timeout {
                generator: self.name.clone(),
                seconds: self.timeout.as_secs_f64(),
            })?
            .map_err(|e| self.classify(e))?;

        let stop_reason = match &response.stop_reason {
            None | Some(GenaiStop::Completed(_)) => StopReason::Complete,
            Some(GenaiStop::MaxTokens(_)) => StopReason::MaxTokens,
            Some(_) => StopReason::Other,
        };
        let usage = Usage {
            input_tokens: response.usage.prompt_tokens.unwrap_or(0).max(0) as u64,
            output_tokens: response.usage.completion_tokens.unwrap_or(0).max(0) as u64,
        };
        let text = response.into_first_text().unwrap_or_default();
        if text.trim().is_empty() {
            // A refusal or a safety block comes back without text.
            return Err(LlmError::Failed {
                generator: self.name.clone(),
                message: format!("the model returned no text (stop reason: {stop_reason:?})"),
            });
        }
        tracing::debug!(
            generator = %self.name,
            input_tokens = usage.input_tokens,
            output_tokens = usage.output_tokens,
            "generated"
        );
        Ok(Generation {
            text: strip_code_fence(&text).to_string(),
            stop_reason,
            usage,
        })
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
    let line = text.replace('\n', " ");
    match line.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line,
    }
}

/// Models asked for JSON sometimes wrap it in a Markdown code fence.
fn strip_code_fence(text: &str) -> &str {
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

    #[test]
    fn code_fences_around_json_are_removed() {
        assert_eq!(strip_code_fence("```json\n{\"a\":1}\n```"), "{\"a\":1}");
        assert_eq!(strip_code_fence("  {\"a\":1} "), "{\"a\":1}");
        assert_eq!(strip_code_fence("```\n[1]\n```"), "[1]");
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
