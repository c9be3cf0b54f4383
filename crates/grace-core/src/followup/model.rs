//! A follow-up rewritten by the language model from the conversation.

use serde_json::json;

use super::PriorTurn;
use crate::llm::{GenerateRequest, LlmClient, Message};

/// A model's rewrite longer than this (in characters) is not used.
const MAX_REWRITE_CHARS: usize = 1_000;
/// Turns of history a model sees when rewriting.
const MODEL_HISTORY_TURNS: usize = 4;
/// Characters of an earlier answer a model sees when rewriting.
const MODEL_ANSWER_CHARS: usize = 400;

/// Asks `llm` to rewrite `question` as a standalone question. `Ok(None)`
/// when the model says it already stands alone.
pub fn rewrite_with_model(
    llm: &dyn LlmClient,
    question: &str,
    history: &[PriorTurn<'_>],
) -> crate::llm::Result<Option<String>> {
    let mut conversation = String::new();
    let start = history.len().saturating_sub(MODEL_HISTORY_TURNS);
    for (i, turn) in history[start..].iter().enumerate() {
        conversation.push_str(&format!("Q{}: {}\n", i + 1, turn.question));
        if let Some(answer) = turn.answer {
            conversation.push_str(&format!(
                "A{}: {}\n",
                i + 1,
                crate::text::truncate_chars(answer, MODEL_ANSWER_CHARS)
            ));
        }
    }
    let request = GenerateRequest {
        messages: vec![
            Message::system(
                "You rewrite the last question of a conversation so that it can be \
                    understood without the conversation: replace pronouns and fill in what an \
                    elliptical question leaves out, using only the conversation. Keep the \
                    asker's intent; do not answer it. If it already stands alone, return it \
                    unchanged.",
            ),
            Message::user(format!(
                "Conversation:\n{conversation}\nLast question: {question}"
            )),
        ],
        json_schema: Some(json!({
            "type": "object",
            "properties": {"question": {"type": "string"}},
            "required": ["question"]
        })),
        ..GenerateRequest::default()
    };
    let generation = llm.generate(&request)?;
    let failed = |message: String| crate::llm::LlmError::Failed {
        generator: llm.name().to_string(),
        message,
    };
    let value: serde_json::Value = serde_json::from_str(&generation.text)
        .map_err(|e| failed(format!("the rewrite is not JSON: {e}")))?;
    let rewritten = value
        .get("question")
        .and_then(|q| q.as_str())
        .map(str::trim)
        .ok_or_else(|| failed("the rewrite has no `question`".into()))?;
    if crate::text::is_blank(rewritten) || rewritten.chars().count() > MAX_REWRITE_CHARS {
        return Err(failed("the rewrite is empty or too long".into()));
    }
    Ok((rewritten != question.trim()).then(|| rewritten.to_string()))
}
