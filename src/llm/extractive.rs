//! The offline answerer: picks the source sentences that best answer the
//! question (embedding similarity plus lexical coverage of the question),
//! returns them with `[n]` citations, and abstains when no sentence is
//! close enough. Deterministic; needs no model beyond the embedder.

use std::collections::HashSet;
use std::sync::Arc;

use super::{
    AnswerDraft, GenerateRequest, Generation, LlmClient, LlmError, Result, StopReason, Usage,
};
use crate::confidence::term_coverage;
use crate::embed::{Embedder, cosine};
use crate::ingest::chunk::sentences;
use crate::lexical::LexicalEncoder;

/// What an extractive answer says when the sources do not answer.
pub const NOT_IN_SOURCES: &str = "The sources do not answer this question.";

/// Weight of lexical coverage next to cosine similarity when ranking sentences.
const COVERAGE_WEIGHT: f32 = 0.2;
/// Sentences within this of the best one may join the answer.
const JOIN_MARGIN: f32 = 0.1;

/// Sentence-selecting answerer.
pub struct Extractive {
    embedder: Arc<dyn Embedder>,
    lexical: LexicalEncoder,
    max_sentences: usize,
    min_similarity: f32,
}

impl Extractive {
    /// `max_sentences` in the answer; abstains when the best sentence's
    /// cosine similarity to the question is below `min_similarity`.
    pub fn new(
        embedder: Arc<dyn Embedder>,
        max_sentences: usize,
        min_similarity: f32,
    ) -> Result<Self> {
        let lexical = LexicalEncoder::new().map_err(|e| LlmError::Failed {
            generator: "extractive".into(),
            message: e.to_string(),
        })?;
        Ok(Self {
            embedder,
            lexical,
            max_sentences: max_sentences.max(1),
            min_similarity,
        })
    }

    fn fail(message: impl Into<String>) -> LlmError {
        LlmError::Failed {
            generator: "extractive".into(),
            message: message.into(),
        }
    }

    /// The answer draft for a question and numbered sources.
    pub fn answer(&self, question: &str, sources: &[(usize, &str)]) -> Result<AnswerDraft> {
        // (source number, position, sentence)
        let mut candidates: Vec<(usize, usize, String)> = Vec::new();
        for (number, text) in sources {
            let mut position = 0;
            for paragraph in text.split("\n\n") {
                for s in sentences(paragraph) {
                    // A question (an FAQ heading, a promoted review's
                    // title) states nothing: it never answers.
                    if s.split_whitespace().count() >= 3 && !s.trim_end().ends_with('?') {
                        candidates.push((*number, position, s));
                        position += 1;
                    }
                }
            }
        }
        let abstain = || AnswerDraft {
            answer: NOT_IN_SOURCES.to_string(),
            citations: Vec::new(),
            confidence: None,
            abstained: true,
        };
        if candidates.is_empty() {
            return Ok(abstain());
        }
        let q = self
            .embedder
            .embed_query(question)
            .map_err(|e| Self::fail(e.to_string()))?;
        let texts: Vec<String> = candidates.iter().map(|c| c.2.clone()).collect();
        let vectors = self
            .embedder
            .embed(&texts)
            .map_err(|e| Self::fail(e.to_string()))?;
        // The question's terms are encoded once, not once per sentence.
        let question_terms = self.lexical.encode_query(question);
        let scored: Vec<(f32, f32, usize)> = vectors
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let cos = cosine(&q, v);
                let sentence_terms: HashSet<u32> = self
                    .lexical
                    .encode_document(&texts[i])
                    .indices
                    .into_iter()
                    .collect();
                let coverage =
                    term_coverage(&question_terms, &sentence_terms).unwrap_or(0.0) as f32;
                (cos + COVERAGE_WEIGHT * coverage, cos, i)
            })
            .collect();
        let best = scored
            .iter()
            .copied()
            .max_by(|a, b| a.0.total_cmp(&b.0).then(b.2.cmp(&a.2)));
        let Some((best_score, best_cos, _)) = best else {
            return Ok(abstain());
        };
        if best_cos < self.min_similarity {
            return Ok(abstain());
        }
        let mut chosen: Vec<(f32, f32, usize)> = scored
            .into_iter()
            .filter(|(s, cos, _)| *s >= best_score - JOIN_MARGIN && *cos >= self.min_similarity)
            .collect();
        chosen.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.2.cmp(&b.2)));
        chosen.truncate(self.max_sentences);
        // Reading order: by source, then position in the source.
        chosen.sort_by_key(|c| (candidates[c.2].0, candidates[c.2].1));
        let mut answer = String::new();
        let mut citations = Vec::new();
        for (_, _, i) in &chosen {
            let (number, _, sentence) = &candidates[*i];
            if !answer.is_empty() {
                answer.push(' ');
            }
            answer.push_str(&format!("{sentence} [{number}]"));
            if !citations.contains(number) {
                citations.push(*number);
            }
        }
        Ok(AnswerDraft {
            answer,
            citations,
            confidence: None,
            abstained: false,
        })
    }
}

impl LlmClient for Extractive {
    fn name(&self) -> &str {
        "extractive"
    }

    fn generate(&self, request: &GenerateRequest) -> Result<Generation> {
        let Some(task) = &request.answer else {
            return Err(LlmError::Unsupported {
                generator: "extractive".into(),
                message:
                    "only answers questions from sources (no free-form generation, no planning)"
                        .into(),
            });
        };
        let sources: Vec<(usize, &str)> = task
            .sources
            .iter()
            .map(|s| (s.number, s.text.as_str()))
            .collect();
        let draft = self.answer(&task.question, &sources)?;
        let text = serde_json::to_string(&draft).map_err(|e| Self::fail(e.to_string()))?;
        Ok(Generation {
            text,
            stop_reason: StopReason::Complete,
            usage: Usage::default(),
        })
    }
}
