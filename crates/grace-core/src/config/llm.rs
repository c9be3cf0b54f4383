//! The `llm` section: the generator that writes answers, and how a
//! language model is reached and offered tools; and the `answer` section:
//! how an answer is shown.

use super::Result;
use super::check::{above_zero, in_range, invalid};
use serde::{Deserialize, Serialize};

/// The generator that writes answers (see [`crate::llm`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LlmConfig {
    /// Which generator writes answers: `extractive`, `gemini` or `ollama`.
    pub provider: LlmProvider,
    /// How a language model is offered tools (`llm.tool_mode`): `auto`,
    /// `native` or `json`.
    pub tool_mode: ToolMode,
    /// Settings of the extractive answerer (`llm.extractive`).
    pub extractive: ExtractiveConfig,
    /// Google Gemini settings (`llm.gemini`), used when `provider` is `gemini`.
    pub gemini: RemoteLlmConfig,
    /// Ollama settings (`llm.ollama`), used when `provider` is `ollama`.
    pub ollama: RemoteLlmConfig,
}

impl Default for LlmConfig {
    fn default() -> Self {
        Self {
            provider: LlmProvider::default(),
            tool_mode: ToolMode::default(),
            extractive: ExtractiveConfig::default(),
            gemini: RemoteLlmConfig {
                model: "gemini-2.5-flash".into(),
                base_url: "https://generativelanguage.googleapis.com/v1beta/".into(),
                timeout_seconds: 25.0,
                temperature: 0.0,
                max_output_tokens: 1024,
            },
            ollama: RemoteLlmConfig {
                model: "llama3.1:8b".into(),
                base_url: String::new(),
                timeout_seconds: 25.0,
                temperature: 0.0,
                max_output_tokens: 1024,
            },
        }
    }
}

/// The generators GRACE has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum LlmProvider {
    /// Offline sentence selection with citations (no model beyond the embedder).
    #[default]
    Extractive,
    /// Google Gemini (needs `GEMINI_API_KEY`).
    Gemini,
    /// An Ollama server (`base_url`, else `OLLAMA_BASE_URL`, else localhost).
    Ollama,
}

impl LlmProvider {
    /// The name used in the configuration (`extractive`, `gemini`, `ollama`).
    pub fn as_str(self) -> &'static str {
        match self {
            LlmProvider::Extractive => "extractive",
            LlmProvider::Gemini => "gemini",
            LlmProvider::Ollama => "ollama",
        }
    }
}

/// How a language model is offered tools (`llm.tool_mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ToolMode {
    /// Native tool calling; if the provider answers that the model does
    /// not support tools, JSON mode from then on (with a warning).
    #[default]
    Auto,
    /// The provider's native tool calling (Gemini function declarations,
    /// Ollama `tools`).
    Native,
    /// No native tools: the catalogue and a JSON reply protocol go into the
    /// instruction, and the model answers with one JSON object per turn, for
    /// models without native tool calling.
    Json,
}

/// A language model behind an HTTP API.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RemoteLlmConfig {
    /// Model name sent to the provider (e.g. `gemini-2.5-flash`, `llama3.1:8b`).
    pub model: String,
    /// The API's base URL; empty means the provider's default (Ollama:
    /// `OLLAMA_BASE_URL`, else `http://localhost:11434`).
    pub base_url: String,
    /// Give up on one request after this long (the tool's own timeout and
    /// retries apply on top).
    pub timeout_seconds: f64,
    /// Sampling temperature sent with each request.
    pub temperature: f64,
    /// Most tokens the model may generate in one reply.
    pub max_output_tokens: u32,
}

impl Default for RemoteLlmConfig {
    fn default() -> Self {
        LlmConfig::default().gemini
    }
}

/// The extractive answerer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ExtractiveConfig {
    /// Sentences in an answer at most.
    pub max_sentences: usize,
    /// Abstain when no source sentence has at least this cosine similarity
    /// to the question.
    pub min_similarity: f32,
}

impl Default for ExtractiveConfig {
    fn default() -> Self {
        Self {
            max_sentences: 3,
            min_similarity: 0.35,
        }
    }
}

/// How answers are shown (`answer`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AnswerConfig {
    /// `markdown` (code in backticks, terms in bold, lists a line an item)
    /// or `text` (the same without the marks); unset (`null`), each front
    /// door's own: Markdown over HTTP, on the asker's and reviewer's pages
    /// and through MCP, text in the terminal.
    pub format: Option<AnswerFormat>,
}

/// An answer's format (`answer.format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnswerFormat {
    /// Markdown: what GRACE writes.
    Markdown,
    /// Plain text: Markdown's marks removed.
    Text,
}

/// The `llm` section.
pub(super) fn validate_llm(llm: &super::LlmConfig) -> Result<()> {
    let x = &llm.extractive;
    in_range("llm.extractive.max_sentences", x.max_sentences, 1..=20, "")?;
    in_range(
        "llm.extractive.min_similarity",
        x.min_similarity,
        -1.0..=1.0,
        " (a cosine similarity)",
    )?;
    for (key, r) in [("llm.gemini", &llm.gemini), ("llm.ollama", &llm.ollama)] {
        if r.model.trim().is_empty() {
            return Err(invalid(&format!("{key}.model"), "must name a model"));
        }
        let is_url = |u: &str| u.starts_with("http://") || u.starts_with("https://");
        if !(r.base_url.is_empty() || is_url(&r.base_url)) {
            return Err(invalid(
                &format!("{key}.base_url"),
                format!("`{}` is not an http(s) URL", r.base_url),
            ));
        }
        in_range(
            &format!("{key}.timeout_seconds"),
            r.timeout_seconds,
            above_zero(3600.0),
            " seconds",
        )?;
        in_range(&format!("{key}.temperature"), r.temperature, 0.0..=2.0, "")?;
        in_range(
            &format!("{key}.max_output_tokens"),
            r.max_output_tokens,
            16..=65_536,
            "",
        )?;
    }
    Ok(())
}
