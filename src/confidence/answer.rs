//! Confidence factors of an answer: is it grounded in the passages it
//! cites, do its citations point at real sources, did the generator
//! abstain, and what does the generator itself say.

use std::collections::HashSet;

use super::{Factor, Factors, term_coverage};
use crate::lexical::LexicalEncoder;
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

fn strip_markers(sentence: &str) -> String {
    at_markers(sentence, |_, _, _| {})
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
    // A citation ends its sentence ("... (apt purge). [1] Packages ..."):
    // two sentences from two sources are judged one by one. A statement
    // that the sources lack something is no claim from them.
    let answer_sentences: Vec<String> = draft
        .answer
        .split("\n\n")
        .flat_map(|p| sentences(&break_after_citations(p)))
        .filter(|s| !strip_markers(s).trim().is_empty() && !crate::lang::is_absence(s))
        .collect();
    if answer_sentences.is_empty() {
        f.set(Factor::Groundedness, 0.0);
        return f;
    }
    let supported = answer_sentences
        .iter()
        .filter(|sentence| {
            let text = strip_markers(sentence);
            citation_markers(sentence).iter().any(|n| {
                terms.iter().any(|(number, set)| {
                    number == n
                        && term_coverage(&lexical.encode_query(&text), set)
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
        assert_eq!(strip_markers("A [1] b [x]."), "A  b [x].");
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
