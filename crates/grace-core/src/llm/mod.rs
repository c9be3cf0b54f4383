//! Generators: the [`LlmClient`] trait and its implementations:
//! [`Extractive`], the offline default (no model beyond the embedder), and
//! [`RemoteLlm`] for Gemini and Ollama.
//!
//! A request carries chat messages (what a language model reads) and,
//! when the task is answering from sources, the same question and sources
//! as data ([`AnswerTask`]), which a non-LLM generator such as
//! [`Extractive`] works from. Answers come back as JSON in the
//! [`answer_schema`] shape whatever the generator.
//!
//! Tool calling: a request may offer tools ([`ToolSpec`]); a generator that
//! [`supports_tools`](LlmClient::supports_tools) may then answer with
//! [`ToolCall`]s (stop reason [`StopReason::ToolUse`]) instead of text. The
//! caller runs them and sends the conversation back with
//! [`Message::assistant_calls`] and [`Message::tool_result`]. [`RemoteLlm`]
//! uses the provider's native tool calling, or, for models without it, a
//! JSON protocol in the prompt (`llm.tool_mode`, see `json_mode.rs`).

mod extractive;
mod json_mode;
mod remote;

pub use self::extractive::Extractive;
pub use self::remote::{GEMINI_API_KEY, OLLAMA_BASE_URL, OLLAMA_DEFAULT_URL, RemoteLlm};

use std::sync::Arc;

use crate::config::{LlmConfig, LlmProvider};
use crate::embed::Embedder;

/// The configured generator. Gemini reads `GEMINI_API_KEY` and Ollama
/// `OLLAMA_BASE_URL` from the environment here, so a missing key fails
/// before any question is asked.
pub fn from_config(config: &LlmConfig, embedder: Arc<dyn Embedder>) -> Result<Arc<dyn LlmClient>> {
    let env = |name: &str| std::env::var(name).ok();
    match config.provider {
        LlmProvider::Extractive => Ok(Arc::new(Extractive::new(
            embedder,
            config.extractive.max_sentences,
            config.extractive.min_similarity,
        )?)),
        LlmProvider::Gemini => Ok(Arc::new(
            RemoteLlm::gemini(&config.gemini, env(GEMINI_API_KEY))?
                .with_tool_mode(config.tool_mode),
        )),
        LlmProvider::Ollama => Ok(Arc::new(
            RemoteLlm::ollama(&config.ollama, env(OLLAMA_BASE_URL))?
                .with_tool_mode(config.tool_mode),
        )),
    }
}

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Result of generator calls.
pub type Result<T> = std::result::Result<T, LlmError>;

/// What went wrong while generating.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LlmError {
    /// The request cannot be served by this generator.
    #[error("{generator}: {message}")]
    Unsupported {
        /// The generator's name ([`LlmClient::name`]).
        generator: String,
        /// Why the request cannot be served.
        message: String,
    },
    /// The generator is not set up (a missing API key, a bad URL).
    #[error("{generator}: {message}")]
    Setup {
        /// The generator's name ([`LlmClient::name`]).
        generator: String,
        /// What is missing or wrong.
        message: String,
    },
    /// Might work on another try: HTTP 429 or 5xx, a dropped connection.
    #[error("{generator}: {message}")]
    Transient {
        /// The generator's name ([`LlmClient::name`]).
        generator: String,
        /// What failed.
        message: String,
    },
    /// No response within the configured time.
    #[error("{generator}: no response within {seconds} s")]
    Timeout {
        /// The generator's name ([`LlmClient::name`]).
        generator: String,
        /// The time waited, in seconds.
        seconds: f64,
    },
    /// Will fail again (a refused request, an empty response, a model error).
    #[error("{generator}: {message}")]
    Failed {
        /// The generator's name ([`LlmClient::name`]).
        generator: String,
        /// What failed.
        message: String,
    },
    /// In JSON tool mode, the model's reply broke the protocol twice (the
    /// first time it was told why and asked again).
    #[error("{generator}: malformed reply: {message}")]
    Malformed {
        /// The generator's name ([`LlmClient::name`]).
        generator: String,
        /// What was wrong with the second reply.
        message: String,
    },
}

/// Who says a chat message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Instructions (sent as the system instruction).
    System,
    /// The asker's turn.
    User,
    /// The model's turn.
    Assistant,
    /// A tool's result, answering one of the model's calls.
    Tool,
}

/// A tool a language model may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The tool's name, as the model calls it.
    pub name: String,
    /// What the tool does and when to use it, for the model.
    pub description: String,
    /// JSON schema of the tool's arguments (`"type": "object"`).
    pub parameters: Value,
}

/// A model's call of a tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ToolCall {
    /// The call's id: the provider's when it gives one, else `call_<n>`,
    /// unique within the conversation.
    pub id: String,
    /// The tool called ([`ToolSpec::name`]).
    pub name: String,
    /// The arguments, a JSON object.
    pub arguments: Value,
}

/// One chat message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who says it.
    pub role: Role,
    /// The message text; for a [`Role::Tool`] message, the result as JSON
    /// text; for an assistant message with calls, what it said alongside.
    pub content: String,
    /// The tools an assistant message called.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For a [`Role::Tool`] message, the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call: Option<ToolCall>,
}

impl Message {
    fn new(role: Role, content: impl Into<String>) -> Self {
        Self {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call: None,
        }
    }

    /// Instructions.
    pub fn system(text: impl Into<String>) -> Self {
        Self::new(Role::System, text)
    }

    /// The asker's turn.
    pub fn user(text: impl Into<String>) -> Self {
        Self::new(Role::User, text)
    }

    /// The model's turn in words.
    pub fn assistant(text: impl Into<String>) -> Self {
        Self::new(Role::Assistant, text)
    }

    /// The model's turn calling tools, with what it said alongside (may be
    /// empty).
    pub fn assistant_calls(thought_text: impl Into<String>, calls: Vec<ToolCall>) -> Self {
        Self {
            tool_calls: calls,
            ..Self::new(Role::Assistant, thought_text)
        }
    }

    /// A tool's `result` for `call`.
    pub fn tool_result(call: &ToolCall, result: &Value) -> Self {
        Self {
            tool_call: Some(call.clone()),
            ..Self::new(Role::Tool, result.to_string())
        }
    }
}

/// A numbered source an answer may cite as `[n]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SourceText {
    /// 1-based citation number.
    pub number: usize,
    /// Where it comes from (path and section), for the reader.
    pub label: String,
    /// The source's text.
    pub text: String,
    /// The heading the text sits under, when it has one. A model reads it
    /// with the text (an answer may rest on it: "Error ORB-2001: health
    /// check failed"), and an answer that repeats it is grounded; the
    /// extractive answerer never quotes it as a sentence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heading: Option<String>,
}

/// Answering a question from sources, as data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnswerTask {
    /// The question as asked.
    pub question: String,
    /// The sources the answer may draw on and cite.
    pub sources: Vec<SourceText>,
}

/// A generation request.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GenerateRequest {
    /// The chat messages a language model reads, in order.
    pub messages: Vec<Message>,
    /// JSON schema the output must follow, if any.
    pub json_schema: Option<Value>,
    /// The answering task behind the messages, if that is the task.
    pub answer: Option<AnswerTask>,
    /// Tools the model may call instead of answering (empty: none). Only a
    /// generator that [`supports_tools`](LlmClient::supports_tools) takes
    /// them; any other answers [`LlmError::Unsupported`].
    pub tools: Vec<ToolSpec>,
}

/// Token counts, where the generator reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Usage {
    /// Prompt tokens (0 when not reported).
    pub input_tokens: u64,
    /// Generated tokens (0 when not reported).
    pub output_tokens: u64,
}

/// Why generation stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The generator finished its output.
    Complete,
    /// The output hit the token limit (`max_output_tokens`) and may be cut off.
    MaxTokens,
    /// The model asked for tools ([`Generation::tool_calls`]).
    ToolUse,
    /// The provider stopped the output for safety, recitation, a blocklist
    /// or personal data (Gemini `SAFETY`, `RECITATION`, `PROHIBITED_CONTENT`,
    /// `BLOCKLIST`, `SPII`, …); the text is then usually empty.
    Safety,
    /// Any other reason the provider reports.
    Other,
}

/// What a generator returned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Generation {
    /// The model's final text (JSON when a schema was given); empty when it
    /// calls tools instead, or after a [`StopReason::Safety`] stop.
    pub text: String,
    /// Why generation stopped.
    pub stop_reason: StopReason,
    /// Token counts (zeros where the generator reports none).
    pub usage: Usage,
    /// The tools the model asked for, in order (empty: none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// Reasoning the model gave alongside: JSON tool mode's `thought`, or the
    /// text that came with native tool calls, or a thinking model's reasoning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought: Option<String>,
}

impl SourceText {
    /// The heading (when there is one) and the text, as a model reads them.
    pub fn with_heading(&self) -> String {
        match &self.heading {
            Some(h) => format!("{h}\n\n{}", self.text),
            None => self.text.clone(),
        }
    }
}

impl Generation {
    /// A plain text generation: no tool calls, no thought.
    pub fn plain(text: impl Into<String>, stop_reason: StopReason, usage: Usage) -> Self {
        Self {
            text: text.into(),
            stop_reason,
            usage,
            tool_calls: Vec::new(),
            thought: None,
        }
    }
}

/// A text generator.
pub trait LlmClient: Send + Sync {
    /// A name for traces (`extractive`, `gemini:gemini-2.5-flash`, …).
    fn name(&self) -> &str;
    /// Whether it can follow free instructions, such as writing a plan
    /// (a language model can; the extractive answerer cannot).
    fn can_plan(&self) -> bool {
        false
    }
    /// Whether it takes [`GenerateRequest::tools`] and answers with tool
    /// calls; one that does not answers a request offering tools with
    /// [`LlmError::Unsupported`].
    fn supports_tools(&self) -> bool {
        false
    }
    /// Generates a response to the request.
    fn generate(&self, request: &GenerateRequest) -> Result<Generation>;
}

/// The JSON an answer comes back in: the answer text with `[n]` citations,
/// the cited numbers, the generator's confidence in 0..1 (if it gives
/// one) and whether it declined to answer.
pub fn answer_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "answer": {"type": "string"},
            "citations": {"type": "array", "items": {"type": "integer", "minimum": 1}},
            "confidence": {"type": ["number", "null"], "minimum": 0, "maximum": 1},
            "abstained": {"type": "boolean"}
        },
        "required": ["answer", "citations", "abstained"]
    })
}

/// An answer parsed from a generator's JSON output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnswerDraft {
    /// The answer text, citing sources as `[n]`.
    pub answer: String,
    /// The source numbers the answer cites.
    pub citations: Vec<usize>,
    /// The generator's confidence in 0..1; `None` when it gives none.
    #[serde(default)]
    pub confidence: Option<f64>,
    /// Whether the generator declined to answer from these sources.
    pub abstained: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call() -> ToolCall {
        ToolCall {
            id: "call_1".into(),
            name: "rag_search".into(),
            arguments: json!({"query": "keys"}),
        }
    }

    #[test]
    fn a_plain_message_serializes_as_before() {
        let m = Message::user("hi");
        assert_eq!(
            serde_json::to_value(&m).unwrap(),
            json!({"role": "user", "content": "hi"})
        );
        let back: Message =
            serde_json::from_value(json!({"role": "assistant", "content": "x"})).unwrap();
        assert_eq!(back, Message::assistant("x"));
        assert_eq!(Message::system("s").role, Role::System);
    }

    #[test]
    fn calls_and_results_round_trip() {
        let asked = Message::assistant_calls("search first", vec![call()]);
        assert_eq!(asked.role, Role::Assistant);
        assert_eq!(asked.content, "search first");
        let answered = Message::tool_result(&call(), &json!({"passages": []}));
        assert_eq!(answered.role, Role::Tool);
        assert_eq!(answered.content, r#"{"passages":[]}"#);
        assert_eq!(answered.tool_call, Some(call()));
        for m in [asked, answered] {
            let text = serde_json::to_string(&m).unwrap();
            assert_eq!(serde_json::from_str::<Message>(&text).unwrap(), m);
        }
        let v = serde_json::to_value(Message::tool_result(&call(), &json!(1))).unwrap();
        assert_eq!(v["role"], "tool");
        assert!(v.get("tool_calls").is_none());
    }

    #[test]
    fn stop_reasons_and_generations_read_back() {
        for (reason, name) in [
            (StopReason::ToolUse, "tool_use"),
            (StopReason::Safety, "safety"),
            (StopReason::MaxTokens, "max_tokens"),
        ] {
            assert_eq!(serde_json::to_value(reason).unwrap(), json!(name));
            assert_eq!(
                serde_json::from_value::<StopReason>(json!(name)).unwrap(),
                reason
            );
        }
        let g = Generation {
            tool_calls: vec![call()],
            thought: Some("why".into()),
            ..Generation::plain("", StopReason::ToolUse, Usage::default())
        };
        let text = serde_json::to_string(&g).unwrap();
        assert_eq!(serde_json::from_str::<Generation>(&text).unwrap(), g);
        let plain = serde_json::to_value(Generation::plain(
            "a",
            StopReason::Complete,
            Usage::default(),
        ))
        .unwrap();
        assert!(plain.get("tool_calls").is_none() && plain.get("thought").is_none());
    }
}
