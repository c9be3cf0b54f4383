//! Confidence factors of an answer: is it grounded in the passages it
//! cites, do its citations point at real sources, did the generator
//! abstain, and what does the generator itself say.

use std::collections::HashSet;

use super::{Factor, Factors, term_coverage};
use crate::lexical::{LexicalEncoder, distinct_identifiers, identifiers_found};
use crate::llm::{AnswerDraft, SourceText};
use crate::text::sentences;

/// A sentence counts as supported when at least this share of its content
/// terms (stemmed words, identifiers) occur in a source it cites.
pub const SUPPORT_THRESHOLD: f64 = 0.6;

/// The `[n]` citation numbers in `text`, in order.
pub fn citation_markers(text: &str) -> Vec<usize> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        rest = &rest[open + 1..];
        if let Some(close) = rest.find(']') {
            if let Ok(n) = rest[..close].trim().parse::<usize>() {
                out.push(n);
            }
            rest = &rest[close + 1..];
        }
    }
    out
}

/// `text` rewritten at its `[n]` citation markers: `at_marker(out, marker,
/// rest)` is given each marker (brackets included) and the text after it,
/// and writes what stands in its place; other text is copied.
fn at_markers(text: &str, mut at_marker: impl FnMut(&mut String, &str, &str)) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        let after = &rest[open + 1..];
        match after.find(']') {
            Some(close) if after[..close].trim().parse::<usize>().is_ok() => {
                out.push_str(&rest[..open]);
                let end = open + 1 + close + 1;
                at_marker(&mut out, &rest[open..end], &rest[end..]);
                rest = &rest[end..];
            }
            _ => {
                out.push_str(&rest[..=open]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// `text` with each `[n]` marker whose `n` is in `map` written as
/// `[map[n]]`, in one pass (so `[1]`→`[2]` and `[2]`→`[1]` swap, not
/// collapse); other markers and text are copied, and so is everything in
/// a code span or block (`a[1]` is code, not a citation).
pub fn renumber_markers(text: &str, map: &[(usize, usize)]) -> String {
    at_markers(text, |out, marker, _| {
        let in_code = out.matches('`').count() % 2 == 1;
        let number = (!in_code)
            .then(|| marker[1..marker.len() - 1].trim().parse::<usize>().ok())
            .flatten();
        match number.and_then(|n| map.iter().find(|(old, _)| *old == n)) {
            Some((_, new)) => out.push_str(&format!("[{new}]")),
            None => out.push_str(marker),
        }
    })
}

/// `text` without its `[n]` citation markers (and the space before each).
pub fn strip_markers(sentence: &str) -> String {
    at_markers(sentence, |out, _, _| {
        while out.ends_with(' ') {
            out.pop();
        }
    })
}

/// `text` with a line break after every `[n]` citation that is followed by
/// more text, so the sentence splitter ends a sentence there.
fn break_after_citations(text: &str) -> String {
    at_markers(text, |out, marker, rest| {
        out.push_str(marker);
        if rest.starts_with(' ')
            && rest
                .trim_start()
                .chars()
                .next()
                .is_some_and(|c| !c.is_ascii_punctuation())
        {
            out.push('\n');
        }
    })
}

/// One sentence of an answer with the sources it is attributed to.
#[derive(Debug, Clone, PartialEq)]
pub struct CitedSentence {
    /// The sentence, citation markers removed.
    pub text: String,
    /// The `[n]` numbers it is attributed to: its own markers, or, for a
    /// sentence without any, those of the next marked sentence of its
    /// paragraph (the marker that closes a run of sentences covers them
    /// all); empty when no marker follows it.
    pub citations: Vec<usize>,
}

/// The sentences of an answer, each with the sources it is attributed to.
/// A citation ends its sentence ("... (apt purge). \[1\] Packages ..."), so
/// two sentences from two sources are told apart; a statement that the
/// sources lack something ("The sources do not mention ORB-9999.") is no
/// claim from them and is left out. Confidence (groundedness) and the
/// evaluation's answer-text measures read answers through this one rule.
pub fn cited_sentences(answer: &str) -> Vec<CitedSentence> {
    let mut out = Vec::new();
    for paragraph in answer.split("\n\n") {
        let start = out.len();
        for s in sentences(&break_after_citations(paragraph)) {
            let text = strip_markers(&s).trim().to_string();
            if text.is_empty() || crate::lang::is_absence(&s) {
                continue;
            }
            out.push(CitedSentence {
                text,
                citations: citation_markers(&s),
            });
        }
        // Unmarked sentences take the markers of the next marked one.
        let mut closing: Vec<usize> = Vec::new();
        for sentence in out[start..].iter_mut().rev() {
            if sentence.citations.is_empty() {
                sentence.citations = closing.clone();
            } else {
                closing = sentence.citations.clone();
            }
        }
    }
    out
}

/// The retrieval factors of the passages an answer cites, in citation
/// order (text with its heading, and the search's cosine when a search
/// found it): they replace the whole search's in the answer's score, so an
/// answer drawn from a weak neighbour scores as that neighbour does, and
/// gluing a weaker source in can only lower it. [`Factor::MaxScore`]
/// becomes the weakest cited passage's cosine and
/// [`Factor::IdentifierCoverage`] (for a question naming identifiers) the
/// share of them the first cited passage holds. The question's coverage
/// stays the search's: whether the knowledge base holds the question's
/// words at all.
pub fn cited_support(question: &str, cited: &[(String, Option<f64>)]) -> Factors {
    let mut f = Factors::default();
    if cited.is_empty() {
        return f;
    }
    if let Some(weakest) = cited
        .iter()
        .filter_map(|(_, s)| *s)
        .min_by(|a, b| a.total_cmp(b))
    {
        f.set(Factor::MaxScore, weakest);
    }
    let wanted = distinct_identifiers(question);
    if !wanted.is_empty() {
        let found = identifiers_found(&wanted, &cited[0].0);
        f.set(
            Factor::IdentifierCoverage,
            found as f64 / wanted.len() as f64,
        );
    }
    f
}

/// The factors of an answer drafted from `sources`.
pub fn answer_factors(
    lexical: &LexicalEncoder,
    draft: &AnswerDraft,
    sources: &[SourceText],
) -> Factors {
    let mut f = Factors::default();
    f.set(Factor::Abstained, if draft.abstained { 1.0 } else { 0.0 });
    if let Some(c) = draft.confidence {
        f.set(Factor::SelfAssessment, c.clamp(0.0, 1.0));
    }
    let valid = |n: &usize| sources.iter().any(|s| s.number == *n);
    let mut cited = citation_markers(&draft.answer);
    cited.extend(draft.citations.iter().copied());
    let validity = if cited.is_empty() {
        if draft.abstained { 1.0 } else { 0.0 }
    } else {
        cited.iter().filter(|n| valid(n)).count() as f64 / cited.len() as f64
    };
    f.set(Factor::CitationValidity, validity);
    if draft.abstained {
        return f;
    }
    let terms: Vec<(usize, HashSet<u32>)> = sources
        .iter()
        .map(|s| {
            (
                s.number,
                lexical
                    .encode_document(&s.with_heading())
                    .indices
                    .into_iter()
                    .collect(),
            )
        })
        .collect();
    let answer_sentences = cited_sentences(&draft.answer);
    if answer_sentences.is_empty() {
        f.set(Factor::Groundedness, 0.0);
        return f;
    }
    let supported = answer_sentences
        .iter()
        .filter(|sentence| {
            sentence.citations.iter().any(|n| {
                terms.iter().any(|(number, set)| {
                    number == n
                        && term_coverage(&lexical.encode_query(&sentence.text), set)
                            .is_none_or(|c| c >= SUPPORT_THRESHOLD)
                })
            })
        })
        .count();
    f.set(
        Factor::Groundedness,
        supported as f64 / answer_sentences.len() as f64,
    );
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sources() -> Vec<SourceText> {
        vec![
            SourceText {
                number: 1,
                label: "a.md".into(),
                text: "Backups run every night at 02:00. Restoring takes ten minutes per 100 GB."
                    .into(),
                heading: None,
            },
            SourceText {
                number: 2,
                label: "b.md".into(),
                text: "Employees get 28 days of paid leave.".into(),
                heading: Some("Leave".into()),
            },
        ]
    }

    fn draft(answer: &str, citations: &[usize], abstained: bool) -> AnswerDraft {
        AnswerDraft {
            answer: answer.into(),
            citations: citations.to_vec(),
            confidence: None,
            abstained,
        }
    }

    #[test]
    fn markers_are_found_and_stripped() {
        assert_eq!(citation_markers("A [1]. B [2][3] and [x]."), vec![1, 2, 3]);
        assert_eq!(strip_markers("A [1] b [x]."), "A b [x].");
        assert_eq!(
            strip_markers("Kept 35 days [1]. Next [2]"),
            "Kept 35 days. Next"
        );
    }

    #[test]
    fn grounded_and_validly_cited() {
        let enc = LexicalEncoder::new().unwrap();
        let d = draft(
            "Restoring takes ten minutes per 100 GB [1]. Employees get 28 days of paid leave [2].",
            &[1, 2],
            false,
        );
        let f = answer_factors(&enc, &d, &sources());
        assert_eq!(f.get(Factor::Groundedness), Some(1.0));
        assert_eq!(f.get(Factor::CitationValidity), Some(1.0));
        assert_eq!(f.get(Factor::Abstained), Some(0.0));
    }

    #[test]
    fn a_citation_ends_its_sentence_and_a_statement_of_absence_is_no_claim() {
        let enc = LexicalEncoder::new().unwrap();
        // The extractive answerer's shape: each sentence followed by its
        // source. Judged as one sentence, neither source covers the two.
        let d = draft(
            "The sources do not mention ORB-9999. Backups run every night at 02:00. [1] \
             Employees get 28 days of paid leave. [2]",
            &[1, 2],
            false,
        );
        let f = answer_factors(&enc, &d, &sources());
        assert_eq!(f.get(Factor::Groundedness), Some(1.0));
        // The same with the second sentence cited to the wrong source.
        let d = draft(
            "Backups run every night at 02:00. [1] Employees get 28 days of paid leave. [1]",
            &[1],
            false,
        );
        let f = answer_factors(&enc, &d, &sources());
        assert_eq!(f.get(Factor::Groundedness), Some(0.5));
    }

    #[test]
    fn wrong_citation_and_unsupported_claims_lower_the_factors() {
        let enc = LexicalEncoder::new().unwrap();
        // First sentence cites the wrong source; second invents a fact; third cites a source that does not exist.
        let d = draft(
            "Restoring takes ten minutes per 100 GB [2]. Backups are encrypted with AES-256 [1]. Leave is 28 days [7].",
            &[],
            false,
        );
        let f = answer_factors(&enc, &d, &sources());
        assert_eq!(f.get(Factor::Groundedness), Some(0.0));
        assert!((f.get(Factor::CitationValidity).unwrap() - 2.0 / 3.0).abs() < 1e-9);
        // No citation at all is no valid citation.
        let f = answer_factors(&enc, &draft("Leave is 28 days.", &[], false), &sources());
        assert_eq!(f.get(Factor::CitationValidity), Some(0.0));
        assert_eq!(f.get(Factor::Groundedness), Some(0.0));
    }

    #[test]
    fn abstention_is_reported_and_not_graded_for_grounding() {
        let enc = LexicalEncoder::new().unwrap();
        let mut d = draft("The sources do not answer this question.", &[], true);
        d.confidence = Some(1.7);
        let f = answer_factors(&enc, &d, &sources());
        assert_eq!(f.get(Factor::Abstained), Some(1.0));
        assert_eq!(f.get(Factor::CitationValidity), Some(1.0));
        assert_eq!(f.get(Factor::Groundedness), None);
        assert_eq!(f.get(Factor::SelfAssessment), Some(1.0));
    }
}
