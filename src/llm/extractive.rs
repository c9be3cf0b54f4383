//! The offline answerer: picks the source sentences that best answer the
//! question (embedding similarity plus lexical coverage of the question),
//! returns them with `[n]` citations, and abstains when no sentence is
//! close enough. It draws only from the sources that name most of the
//! question's identifiers (`core.autocrlf`, `E0392`) when some do, and,
//! when the answerability reader has read the sources, only from those it
//! reads as answering (probability at least one half; if none is, the one
//! it rates best), so a sentence from a neighbouring passage about the same
//! thing does not slip into the answer.
//! Deterministic; needs no model beyond the embedder.

use std::collections::HashSet;
use std::sync::Arc;

use super::{
    AnswerDraft, GenerateRequest, Generation, LlmClient, LlmError, Result, SourceText, StopReason,
    Usage,
};
use crate::embed::{Embedder, cosine};
use crate::lexical::term_coverage;
use crate::lexical::{LexicalEncoder, distinct_identifiers, identifiers_found};
use crate::text::sentences;

/// What an extractive answer says when the sources do not answer.
pub const NOT_IN_SOURCES: &str = "The sources do not answer this question.";

/// Weight of lexical coverage next to cosine similarity when ranking sentences.
const COVERAGE_WEIGHT: f32 = 0.2;
/// Sentences within this of the best one may join the answer.
const JOIN_MARGIN: f32 = 0.1;
/// A source the reader gives at least this probability answers the question.
const ANSWERING: f32 = 0.5;

/// The sources to draw sentences from. When the question names
/// identifiers and some sources contain them, only those containing the
/// most; of these, the ones the reader reads as answering, else its best
/// one (sources the reader did not read are kept).
pub fn answering_sources<'a>(question: &str, sources: &'a [SourceText]) -> Vec<&'a SourceText> {
    let wanted = distinct_identifiers(question);
    let found: Vec<usize> = sources
        .iter()
        .map(|s| identifiers_found(&wanted, &s.text))
        .collect();
    let most = found.iter().copied().max().unwrap_or(0);
    let named: Vec<&SourceText> = sources
        .iter()
        .zip(&found)
        .filter(|(_, n)| **n == most)
        .map(|(s, _)| s)
        .collect();
    let best = named
        .iter()
        .filter_map(|s| s.reader_score)
        .max_by(f32::total_cmp);
    let Some(best) = best else {
        return named;
    };
    let cut = best.min(ANSWERING);
    named
        .into_iter()
        .filter(|s| s.reader_score.is_none_or(|p| p >= cut))
        .collect()
}

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
        if !request.tools.is_empty() {
            return Err(LlmError::Unsupported {
                generator: "extractive".into(),
                message: "cannot call tools (use llm.provider gemini or ollama)".into(),
            });
        }
        let Some(task) = &request.answer else {
            return Err(LlmError::Unsupported {
                generator: "extractive".into(),
                message:
                    "only answers questions from sources (no free-form generation, no planning)"
                        .into(),
            });
        };
        let sources: Vec<(usize, &str)> = answering_sources(&task.question, &task.sources)
            .into_iter()
            .map(|s| (s.number, s.text.as_str()))
            .collect();
        let draft = self.answer(&task.question, &sources)?;
        let text = serde_json::to_string(&draft).map_err(|e| Self::fail(e.to_string()))?;
        Ok(Generation::plain(
            text,
            StopReason::Complete,
            Usage::default(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(number: usize, reader_score: Option<f32>) -> SourceText {
        SourceText {
            number,
            label: format!("s{number}"),
            text: format!("text {number}"),
            reader_score,
        }
    }

    fn numbers(sources: &[SourceText]) -> Vec<usize> {
        answering_sources("how does it work", sources)
            .iter()
            .map(|s| s.number)
            .collect()
    }

    #[test]
    fn draws_from_the_sources_the_reader_reads_as_answering() {
        let sources = [
            source(1, Some(0.3)),
            source(2, Some(0.8)),
            source(3, Some(0.6)),
        ];
        assert_eq!(numbers(&sources), vec![2, 3]);
    }

    #[test]
    fn none_answering_keeps_the_best_one_and_unread_keeps_all() {
        let weak = [source(1, Some(0.1)), source(2, Some(0.2)), source(3, None)];
        // The best read source, and the one the reader did not read.
        assert_eq!(numbers(&weak), vec![2, 3]);
        let unread = [source(1, None), source(2, None)];
        assert_eq!(numbers(&unread), vec![1, 2]);
        assert!(answering_sources("q", &[]).is_empty());
    }

    #[test]
    fn sources_naming_the_questions_identifiers_come_first() {
        let mut sources = [source(1, Some(0.9)), source(2, Some(0.4)), source(3, None)];
        sources[0].text = "fetch.pruneTags: prune tags too.".into();
        sources[1].text = "fetch.prune: remove remote-tracking references.".into();
        sources[2].text = "Also see fetch.prune and fetch.all.".into();
        let chosen: Vec<usize> = answering_sources("What does fetch.prune do?", &sources)
            .iter()
            .map(|s| s.number)
            .collect();
        // 1 reads well but never names fetch.prune; of 2 and 3, the reader
        // rates 2 best and did not read 3.
        assert_eq!(chosen, vec![2, 3]);
        // No source names the identifier: the reader alone decides.
        let chosen: Vec<usize> = answering_sources("What does core.bare do?", &sources)
            .iter()
            .map(|s| s.number)
            .collect();
        assert_eq!(chosen, vec![1, 3]);
    }
}
