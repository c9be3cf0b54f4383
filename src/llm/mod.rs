//! Generators: the [`LlmClient`] trait and its implementations:
//! [`Extractive`], the offline default (no model beyond the embedder), and
//! [`RemoteLlm`] for Gemini and Ollama.
//!
//! A request carries chat messages (what a language model reads) and,
//! when the task is answering from sources, the same question and sources
//! as data ([`AnswerTask`]), which a non-LLM generator such as
//! [`Extractive`] works from. Answers come back as JSON in the
//! [`answer_schema`] shape whatever the generator.

mod extractive;
mod remote;

pub use self::extractive::{Extractive, NOT_IN_SOURCES};
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
        LlmProvider::Gemini => Ok(Arc::new(RemoteLlm::gemini(
            &config.gemini,
            env(GEMINI_API_KEY),
        )?)),
        LlmProvider::Ollama => Ok(Arc::new(RemoteLlm::ollama(
            &config.ollama,
            env(OLLAMA_BASE_URL),
        )?)),
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
}

/// One chat message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who says it.
    pub role: Role,
    /// The message text.
    pub content: String,
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
    /// The answerability reader's probability that this source answers the
    /// question, when it read it (the extractive answerer draws from the
    /// sources it reads as answering).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reader_score: Option<f32>,
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
}

/// Token counts, where the generator reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens (0 when not reported).
    pub input_tokens: u64,
    /// Generated tokens (0 when not reported).
    pub output_tokens: u64,
}

/// Why generation stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The generator finished its output.
    Complete,
    /// The output hit the token limit (`max_output_tokens`) and may be cut off.
    MaxTokens,
    /// Any other reason the provider reports.
    Other,
}

/// What a generator returned.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Generation {
    /// The output text (JSON when a schema was given).
    pub text: String,
    /// Why generation stopped.
    pub stop_reason: StopReason,
    /// Token counts (zeros where the generator reports none).
    pub usage: Usage,
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
