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
//! An answer reads as an answer: it is made of one source's text (another
//! source joins only for a part of the question the first leaves out),
//! never their headings ("Your first deployment" is no sentence); a term
//! keeps its description, a numbered procedure stays a list, a command
//! stays code; and it says what it did not find: an identifier the
//! question names that no source mentions ("ORB-9999") opens the answer
//! with "The sources do not mention ORB-9999." Deterministic; needs no
//! model beyond the embedder.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::{
    AnswerDraft, GenerateRequest, Generation, LlmClient, LlmError, Result, SourceText, StopReason,
    Usage,
};
use crate::embed::{Embedder, cosine};
use crate::lang::Lang;
use crate::lexical::{
    LexicalEncoder, coverage_with_compounds, distinct_identifiers, identifier_term,
    identifiers_found,
};
use crate::text::blocks::{Block, blocks};
use crate::text::references::without_cross_references;

mod render;
mod select;

use self::render::render;
use self::select::{Heading, QuestionParts, choose};

/// Weight of lexical coverage next to cosine similarity when ranking sentences.
const COVERAGE_WEIGHT: f32 = 0.2;
/// Blocks of the best source within this of the best one may join the
/// answer.
const JOIN_MARGIN: f32 = 0.2;
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
    /// `max_sentences` blocks in the answer; abstains when the best block's
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
    /// heading the text sits under, the text. The text is read into blocks
    /// ([`crate::text::blocks`]): sentences, a term with its description, a
    /// numbered list; headings vouch for the text under them ("What does
    /// ORB-2001 mean?" and "Error ORB-2001: health check failed") when no
    /// block of it is close on its own. The answer comes from the
    /// best-supported source, the first in the given (search) order with a
    /// block close enough: its best block, and its other sentences within
    /// `JOIN_MARGIN` of it. A block of another source, or another term
    /// with its description, is added only when it covers a part of the
    /// question the answer does not yet (an identifier, or at least two of
    /// the terms still missing and half of them): never because it is
    /// merely close. `missing`: identifiers the
    /// question names that no source mentions; the answer says so first.
    /// The answer is Markdown (code in backticks, a term in bold, a list a
    /// line an item); [`crate::text::blocks::to_text`] makes it plain.
    pub fn answer(
        &self,
        question: &str,
        sources: &[(usize, Option<&str>, &str)],
        missing: &[String],
    ) -> Result<AnswerDraft> {
        let lang = Lang::of(question);
        let lead = not_mentioned(missing, lang);
        let mut candidates: Vec<Candidate> = Vec::new();
        for (number, _, text) in sources {
            for (position, block) in blocks(text).into_iter().enumerate() {
                // A question (an FAQ heading, a promoted review's title)
                // states nothing: it never answers. Nor does the tail of a
                // sentence cut where the passage starts (a page break):
                // "process (the asn1_der_decoding() function)."
                let plain = block.plain.trim_end();
                let cut = position == 0 && plain.starts_with(|c: char| c.is_lowercase());
                if crate::text::word_count(plain) >= 3 && !plain.ends_with(['?', '？']) && !cut {
                    candidates.push(Candidate {
                        source: *number,
                        position,
                        block,
                    });
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
        // A block is scored by its own words, not by the title of the
        // section a cross-reference of it points to: "check out Section
        // 12.1, “What other documentation exists?”" answers nothing.
        let texts: Vec<String> = candidates
            .iter()
            .map(|c| without_cross_references(&c.block.plain).into_owned())
            .collect();
        let vectors = self
            .embedder
            .embed(&texts)
            .map_err(|e| Self::fail(e.to_string()))?;
        // On GRACE's similarity scale, the units of `min_similarity`.
        let similarity = self.embedder.similarity_scale().query;
        let heading_cos = self.heading_cosines(&q, sources)?;
        // The question's terms are encoded once, not once per block; its
        // identifiers are found whole in a block's text (`asn1_der_decoding`
        // in `asn1_der_decoding()`), its words as terms.
        let question_terms = self.lexical.encode_query(question);
        let compounds = self.lexical.compounds(question);
        let identifiers = distinct_identifiers(question);
        let identifier_terms: HashSet<u32> =
            identifiers.iter().map(|id| identifier_term(id)).collect();
        let term_set = |t: &str| -> HashSet<u32> {
            self.lexical
                .encode_document(t)
                .indices
                .into_iter()
                .collect()
        };
        let terms: Vec<HashSet<u32>> = texts.iter().map(|t| term_set(t)).collect();
        let scored: Vec<Scored> = vectors
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let cos = similarity.apply(cosine(&q, v));
                let coverage = coverage_with_compounds(&question_terms, &compounds, &terms[i])
                    .unwrap_or(0.0) as f32;
                // How close the block, or the heading it sits under, is.
                let close = cos.max(
                    heading_cos
                        .get(&candidates[i].source)
                        .copied()
                        .unwrap_or(f32::MIN),
                );
                Scored {
                    score: cos + COVERAGE_WEIGHT * coverage,
                    close,
                    index: i,
                }
            })
            .collect();
        // The best-supported passage: the first the search ranked with a
        // block close enough to the question (the ranking weighs the whole
        // passage, identifiers pinned; on GRACE's users'-words sets taking
        // the block closest to the question from any passage instead cut
        // the share of right answers by 2 to 7 points), and its best block.
        let best_of = |source: usize| {
            scored
                .iter()
                .copied()
                .filter(|s| candidates[s.index].source == source && s.close >= self.min_similarity)
                .max_by(|a, b| a.score.total_cmp(&b.score).then(b.index.cmp(&a.index)))
        };
        let Some(best) = sources.iter().find_map(|(n, _, _)| best_of(*n)) else {
            return Ok(abstain());
        };
        let primary = candidates[best.index].source;
        let mut ranked: Vec<Scored> = scored
            .iter()
            .copied()
            .filter(|s| {
                s.index != best.index
                    && s.score >= best.score - JOIN_MARGIN
                    && s.close >= self.min_similarity
            })
            .collect();
        ranked.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.index.cmp(&b.index)));
        let question_parts = QuestionParts {
            terms: &question_terms,
            compounds: &compounds,
            identifiers: &identifiers,
            identifier_terms: &identifier_terms,
        };
        let heading = sources
            .iter()
            .find(|(n, _, _)| *n == primary)
            .and_then(|(_, h, _)| *h)
            .map(|text| Heading {
                text,
                terms: term_set(text),
            });
        let mut chosen = choose(
            best.index,
            &ranked,
            &candidates,
            &terms,
            &question_parts,
            heading.as_ref(),
            self.max_sentences,
        );
        // The best source first, each source's blocks in reading order.
        chosen.sort_by_key(|&i| {
            let c = &candidates[i];
            (c.source != primary, c.source, c.position)
        });
        let (answer, citations) = render(lead, &chosen, &candidates);
        Ok(AnswerDraft {
            answer,
            citations,
            confidence: None,
            abstained: false,
        })
    }

    /// Each source's heading's cosine to the question, computed once.
    fn heading_cosines(
        &self,
        q: &[f32],
        sources: &[(usize, Option<&str>, &str)],
    ) -> Result<HashMap<usize, f32>> {
        let similarity = self.embedder.similarity_scale().query;
        let headings: Vec<(usize, String)> = sources
            .iter()
            .filter_map(|(n, h, _)| {
                h.filter(|h| !h.trim().is_empty())
                    .map(|h| (*n, h.to_string()))
            })
            .collect();
        let mut heading_cos: HashMap<usize, f32> = HashMap::new();
        if headings.is_empty() {
            return Ok(heading_cos);
        }
        let texts: Vec<String> = headings.iter().map(|(_, h)| h.clone()).collect();
        let vectors = self
            .embedder
            .embed(&texts)
            .map_err(|e| Self::fail(e.to_string()))?;
        for ((n, _), v) in headings.iter().zip(&vectors) {
            let cos = similarity.apply(cosine(q, v));
            heading_cos
                .entry(*n)
                .and_modify(|c| *c = c.max(cos))
                .or_insert(cos);
        }
        Ok(heading_cos)
    }
}

/// A block of a source that may answer.
pub(super) struct Candidate {
    /// The source's `[n]` number.
    pub(super) source: usize,
    /// The block's place in its source, from 0.
    pub(super) position: usize,
    pub(super) block: Block,
}

/// How well a candidate answers: cosine plus lexical coverage, and how
/// close it (or its heading) is.
#[derive(Debug, Clone, Copy)]
pub(super) struct Scored {
    score: f32,
    close: f32,
    pub(super) index: usize,
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
