//! The offline answerer: picks the source sentences that best answer the
//! question (embedding similarity plus lexical coverage of the question),
//! returns them with `[n]` citations, and abstains when no sentence is
//! close enough. It draws only from the sources that name most of the
//! question's identifiers (`core.autocrlf`, `E0392`) when some do, so a
//! sentence from a neighbouring page about a similar option does not slip
//! into the answer. The answerability reader does not choose its sources:
//! with the reader on, following it cut the share of right answers from
//! 75% to 47% on debian-faq-paraphrased and from 75% to 56% on the
//! users'-words dev set (it picks a neighbour more often than the search
//! ranks one first).
//!
//! An answer reads as an answer: its sentences come from the sources' text,
//! never their headings ("Your first deployment" is no sentence), in the
//! order of the sources and of the text within each; and it says what it
//! did not find: an identifier the question names that no source mentions
//! ("ORB-9999") opens the answer with "The sources do not mention ORB-9999."
//! Deterministic; needs no model beyond the embedder.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::{
    AnswerDraft, GenerateRequest, Generation, LlmClient, LlmError, Result, SourceText, StopReason,
    Usage,
};
use crate::embed::{Embedder, cosine};
use crate::lang::Lang;
use crate::lexical::term_coverage;
use crate::lexical::{LexicalEncoder, distinct_identifiers, identifiers_found};
use crate::text::sentences;

/// Weight of lexical coverage next to cosine similarity when ranking sentences.
const COVERAGE_WEIGHT: f32 = 0.2;
/// Sentences within this of the best one may join the answer.
const JOIN_MARGIN: f32 = 0.1;
/// What the question's identifiers (`core.autocrlf`, `E0392`) say about
/// the sources, headings included: the sources to draw sentences from
/// (when some contain the identifiers, only those containing the most;
/// otherwise all of them), and the identifiers no source mentions, spelt
/// as in the question.
pub fn by_identifiers<'a>(
    question: &str,
    sources: &'a [SourceText],
) -> (Vec<&'a SourceText>, Vec<String>) {
    let wanted = distinct_identifiers(question);
    let texts: Vec<String> = sources.iter().map(SourceText::with_heading).collect();
    let found: Vec<usize> = texts
        .iter()
        .map(|t| identifiers_found(&wanted, t))
        .collect();
    let most = found.iter().copied().max().unwrap_or(0);
    let answering = sources
        .iter()
        .zip(&found)
        .filter(|(_, n)| **n == most)
        .map(|(s, _)| s)
        .collect();
    let missing = wanted
        .into_iter()
        .filter(|id| {
            !texts
                .iter()
                .any(|t| identifiers_found(std::slice::from_ref(id), t) > 0)
        })
        .map(|id| as_spelt(question, &id))
        .collect();
    (answering, missing)
}

/// `id` (lowercased) as `text` spells it, when it can be found there.
fn as_spelt(text: &str, id: &str) -> String {
    if !text.is_ascii() {
        return id.to_string();
    }
    text.to_ascii_lowercase()
        .find(id)
        .map(|at| text[at..at + id.len()].to_string())
        .unwrap_or_else(|| id.to_string())
}

/// "The sources do not mention A, B or C."
fn not_mentioned(ids: &[String], lang: Lang) -> Option<String> {
    let (last, rest) = ids.split_last()?;
    let texts = lang.texts();
    let list = if rest.is_empty() {
        last.clone()
    } else {
        format!("{}{}{last}", rest.join(", "), texts.and)
    };
    Some(crate::lang::fill(texts.not_mentioned, &[("list", &list)]))
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

    /// The answer draft for a question and numbered sources: number, the
    /// heading the text sits under, the text. Sentences are drawn from the
    /// text only; a heading close to the question vouches for the text
    /// under it ("What does ORB-2001 mean?" and "Error ORB-2001: health
    /// check failed") when no sentence of it is close on its own.
    /// `missing`: identifiers the question names that no source mentions;
    /// the answer says so first.
    pub fn answer(
        &self,
        question: &str,
        sources: &[(usize, Option<&str>, &str)],
        missing: &[String],
    ) -> Result<AnswerDraft> {
        let lang = Lang::of(question);
        let lead = not_mentioned(missing, lang);
        // (source number, position, sentence)
        let mut candidates: Vec<(usize, usize, String)> = Vec::new();
        for (number, _, text) in sources {
            let mut position = 0;
            for paragraph in text.split("\n\n") {
                for s in sentences(paragraph) {
                    // A question (an FAQ heading, a promoted review's
                    // title) states nothing: it never answers.
                    if crate::text::word_count(&s) >= 3 && !s.trim_end().ends_with(['?', '？']) {
                        candidates.push((*number, position, s));
                        position += 1;
                    }
                }
            }
        }
        let abstain = || AnswerDraft {
            answer: match &lead {
                Some(lead) => format!("{lead} {}", lang.texts().not_in_sources),
                None => lang.texts().not_in_sources.to_string(),
            },
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
        // On GRACE's similarity scale, the units of `min_similarity`.
        let similarity = self.embedder.similarity_scale().query;
        // Each source's heading's cosine to the question, computed once.
        let headings: Vec<(usize, String)> = sources
            .iter()
            .filter_map(|(n, h, _)| {
                h.filter(|h| !h.trim().is_empty())
                    .map(|h| (*n, h.to_string()))
            })
            .collect();
        let mut heading_cos: HashMap<usize, f32> = HashMap::new();
        if !headings.is_empty() {
            let texts: Vec<String> = headings.iter().map(|(_, h)| h.clone()).collect();
            let vectors = self
                .embedder
                .embed(&texts)
                .map_err(|e| Self::fail(e.to_string()))?;
            for ((n, _), v) in headings.iter().zip(&vectors) {
                let cos = similarity.apply(cosine(&q, v));
                heading_cos
                    .entry(*n)
                    .and_modify(|c| *c = c.max(cos))
                    .or_insert(cos);
            }
        }
        // The question's terms are encoded once, not once per sentence.
        let question_terms = self.lexical.encode_query(question);
        let scored: Vec<(f32, f32, usize)> = vectors
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let cos = similarity.apply(cosine(&q, v));
                let sentence_terms: HashSet<u32> = self
                    .lexical
                    .encode_document(&texts[i])
                    .indices
                    .into_iter()
                    .collect();
                let coverage =
                    term_coverage(&question_terms, &sentence_terms).unwrap_or(0.0) as f32;
                // How close the sentence, or the heading it sits under, is.
                let close = cos.max(
                    heading_cos
                        .get(&candidates[i].0)
                        .copied()
                        .unwrap_or(f32::MIN),
                );
                (cos + COVERAGE_WEIGHT * coverage, close, i)
            })
            .collect();
        let best = scored
            .iter()
            .copied()
            .max_by(|a, b| a.0.total_cmp(&b.0).then(b.2.cmp(&a.2)));
        let Some((best_score, best_close, _)) = best else {
            return Ok(abstain());
        };
        if best_close < self.min_similarity {
            return Ok(abstain());
        }
        let mut chosen: Vec<(f32, f32, usize)> = scored
            .into_iter()
            .filter(|(s, close, _)| *s >= best_score - JOIN_MARGIN && *close >= self.min_similarity)
            .collect();
        chosen.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.2.cmp(&b.2)));
        chosen.truncate(self.max_sentences);
        // Reading order: by source, then position in the source.
        chosen.sort_by_key(|c| (candidates[c.2].0, candidates[c.2].1));
        let mut answer = lead.clone().unwrap_or_default();
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
        let (answering, missing) = by_identifiers(&task.question, &task.sources);
        let sources: Vec<(usize, Option<&str>, &str)> = answering
            .into_iter()
            .map(|s| (s.number, s.heading.as_deref(), s.text.as_str()))
            .collect();
        let draft = self.answer(&task.question, &sources, &missing)?;
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

    fn source(number: usize, text: &str) -> SourceText {
        SourceText {
            number,
            label: format!("s{number}"),
            text: text.to_string(),
            heading: None,
        }
    }

    fn numbers(question: &str, sources: &[SourceText]) -> Vec<usize> {
        by_identifiers(question, sources)
            .0
            .iter()
            .map(|s| s.number)
            .collect()
    }

    #[test]
    fn without_identifiers_every_source_may_answer() {
        let sources = [source(1, "text 1"), source(2, "text 2")];
        assert_eq!(numbers("how does it work", &sources), vec![1, 2]);
        assert!(by_identifiers("q", &[]).0.is_empty());
    }

    #[test]
    fn sources_naming_the_questions_identifiers_come_first() {
        let sources = [
            source(1, "fetch.pruneTags: prune tags too."),
            source(2, "fetch.prune: remove remote-tracking references."),
            source(3, "Also see fetch.prune and fetch.all."),
        ];
        // 1 never names fetch.prune.
        assert_eq!(numbers("What does fetch.prune do?", &sources), vec![2, 3]);
        // No source names the identifier: all may answer.
        assert_eq!(numbers("What does core.bare do?", &sources), vec![1, 2, 3]);
    }
}
