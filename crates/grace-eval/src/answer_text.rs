//! What an answer is made of: whether its sentences come from a gold
//! source, whether it mixes sources, how close it is to the gold answer
//! and how long it is. `grace eval` reads every answer of an answerable
//! question through [`measure`] and reports the means separately for
//! answers, caveats and escalation drafts ([`AnswerTextReport`]).
//!
//! Each sentence belongs to the `[n]` marker that closes it
//! ([`grace::confidence::cited_sentences`], the rule groundedness uses),
//! and a marker to the document its citation names; answers of every
//! generator (extractive, Gemini, Ollama) are read the same way.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::set::{Question, corpus_file, is_gold};
use grace::confidence::{cited_sentences, strip_markers};
use grace::exec::Decision;
use grace::text::{word_count, word_tokens};
use grace::tools::Answer;

/// One answer's make-up.
#[derive(Debug, Clone, PartialEq)]
pub struct AnswerText {
    /// Share of its sentences attributed to a gold source (0 for an
    /// answer without sentences).
    pub precision: f64,
    /// Token F1 against the question's `gold_answer`, when it has one.
    pub f1: Option<f64>,
    /// Whether its sentences come from more than one document.
    pub mixed_sources: bool,
    /// Length in words, markers left out.
    pub words: usize,
}

/// What `answer` is made of, judged against `question`'s gold sources and
/// gold answer; `None` for an abstention (nothing was answered).
pub fn measure(question: &Question, answer: &Answer) -> Option<AnswerText> {
    if answer.abstained {
        return None;
    }
    let source_of: BTreeMap<usize, &str> = answer
        .citations
        .iter()
        .filter_map(|c| c.source.as_deref().map(|s| (c.number, s)))
        .collect();
    let sentences = cited_sentences(&answer.text);
    let mut documents: BTreeSet<String> = BTreeSet::new();
    let mut from_gold = 0;
    for sentence in &sentences {
        let sources: Vec<&str> = sentence
            .citations
            .iter()
            .filter_map(|n| source_of.get(n).copied())
            .collect();
        documents.extend(sources.iter().map(|s| corpus_file(s)));
        if sources.iter().any(|s| is_gold(question, s)) {
            from_gold += 1;
        }
    }
    let plain = strip_markers(&answer.text);
    Some(AnswerText {
        precision: if sentences.is_empty() {
            0.0
        } else {
            from_gold as f64 / sentences.len() as f64
        },
        f1: question
            .gold_answer
            .as_deref()
            .filter(|g| !g.trim().is_empty())
            .map(|gold| token_f1(&plain, gold)),
        mixed_sources: documents.len() > 1,
        words: word_count(&plain),
    })
}

/// Token F1 of `answer` against `gold` (SQuAD's measure: the harmonic mean
/// of the shares of each side's tokens, counted with multiplicity, that the
/// other side has).
pub fn token_f1(answer: &str, gold: &str) -> f64 {
    let a = word_tokens(answer);
    let g = word_tokens(gold);
    if a.is_empty() || g.is_empty() {
        return 0.0;
    }
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for t in &g {
        *counts.entry(t).or_default() += 1;
    }
    let mut common = 0usize;
    for t in &a {
        if let Some(n) = counts.get_mut(t.as_str()).filter(|n| **n > 0) {
            *n -= 1;
            common += 1;
        }
    }
    if common == 0 {
        return 0.0;
    }
    let precision = common as f64 / a.len() as f64;
    let recall = common as f64 / g.len() as f64;
    2.0 * precision * recall / (precision + recall)
}

/// The means over a group of answers.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct AnswerTextFigures {
    /// Answers in the group.
    pub count: usize,
    /// Mean share of an answer's sentences from a gold source.
    pub precision: Option<f64>,
    /// Mean token F1 against the gold answer (questions that have one).
    pub f1: Option<f64>,
    /// Share of answers whose sentences come from more than one document.
    pub mixed_sources: Option<f64>,
    /// Mean length in words.
    pub words: Option<f64>,
}

impl AnswerTextFigures {
    fn of(items: &[&AnswerText]) -> Self {
        let mean = |values: Vec<f64>| {
            (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
        };
        Self {
            count: items.len(),
            precision: mean(items.iter().map(|t| t.precision).collect()),
            f1: mean(items.iter().filter_map(|t| t.f1).collect()),
            mixed_sources: mean(
                items
                    .iter()
                    .map(|t| if t.mixed_sources { 1.0 } else { 0.0 })
                    .collect(),
            ),
            words: mean(items.iter().map(|t| t.words as f64).collect()),
        }
    }
}

/// The answer-text figures of one group of questions, by decision.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ByDecision {
    /// Answered without a caveat.
    pub answer: AnswerTextFigures,
    /// Answered with a caveat.
    pub caveat: AnswerTextFigures,
    /// The drafts put to a reviewer.
    pub escalation: AnswerTextFigures,
}

impl ByDecision {
    fn of(rows: &[(Decision, &AnswerText)]) -> Self {
        let group = |d: Decision| -> AnswerTextFigures {
            let items: Vec<&AnswerText> = rows
                .iter()
                .filter(|(decision, _)| *decision == d)
                .map(|(_, t)| *t)
                .collect();
            AnswerTextFigures::of(&items)
        };
        Self {
            answer: group(Decision::Answer),
            caveat: group(Decision::Caveat),
            escalation: group(Decision::Escalate),
        }
    }
}

/// What `grace eval` reports of the answers' text, over answerable
/// questions: the whole set, and each question style the set names.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct AnswerTextReport {
    /// Answered without a caveat.
    pub answer: AnswerTextFigures,
    /// Answered with a caveat.
    pub caveat: AnswerTextFigures,
    /// The drafts put to a reviewer.
    pub escalation: AnswerTextFigures,
    /// The same per question style (`style` in `questions.jsonl`), for
    /// sets whose questions have one.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub by_style: BTreeMap<String, ByDecision>,
}

/// The report over `(question, decision, measured answer)` rows of
/// answerable questions.
pub fn report(rows: &[(&Question, Decision, &AnswerText)]) -> AnswerTextReport {
    let all: Vec<(Decision, &AnswerText)> = rows.iter().map(|(_, d, t)| (*d, *t)).collect();
    let whole = ByDecision::of(&all);
    let mut styles: BTreeMap<String, Vec<(Decision, &AnswerText)>> = BTreeMap::new();
    for (q, d, t) in rows {
        if let Some(style) = q.style.as_deref().filter(|s| !s.is_empty()) {
            styles.entry(style.to_string()).or_default().push((*d, *t));
        }
    }
    AnswerTextReport {
        answer: whole.answer,
        caveat: whole.caveat,
        escalation: whole.escalation,
        by_style: styles
            .into_iter()
            .map(|(style, rows)| (style, ByDecision::of(&rows)))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use grace::llm::Usage;
    use grace::tools::Citation;

    fn question(gold: &[&str], gold_answer: Option<&str>) -> Question {
        Question {
            id: "q".into(),
            question: "How do I roll back?".into(),
            answerable: true,
            gold_sources: gold.iter().map(|s| s.to_string()).collect(),
            gold_answer: gold_answer.map(str::to_string),
            kind: "in-corpus".into(),
            origin: None,
            style: None,
        }
    }

    fn answer(text: &str, sources: &[&str]) -> Answer {
        Answer {
            text: text.into(),
            citations: sources
                .iter()
                .enumerate()
                .map(|(i, s)| Citation {
                    number: i + 1,
                    source: Some(format!("/kb/{s}")),
                    section: None,
                    page: None,
                })
                .collect(),
            abstained: false,
            self_confidence: None,
            generator: "extractive".into(),
            usage: Usage::default(),
        }
    }

    #[test]
    fn precision_counts_sentences_from_a_gold_source() {
        let q = question(&["troubleshooting.md"], None);
        // The glued answer: one sentence answers, two come from
        // other documents.
        let a = answer(
            "To return to the previous release immediately, run orbit rollback api --env production. [1] \
             promote Copy the release running on staging to production. [2] \
             To restore a project's deployment history, run orbit restore history. [3]",
            &["troubleshooting.md", "orbit.1", "backups.md"],
        );
        let t = measure(&q, &a).expect("answered");
        assert!((t.precision - 1.0 / 3.0).abs() < 1e-9, "{t:?}");
        assert!(t.mixed_sources);
        // The answer it should give.
        let a = answer(
            "To return to the previous release immediately, run `orbit rollback api --env production`. [1]",
            &["troubleshooting.md"],
        );
        let t = measure(&q, &a).expect("answered");
        assert_eq!(t.precision, 1.0);
        assert!(!t.mixed_sources);
        assert_eq!(t.words, 13);
    }

    #[test]
    fn a_remote_models_unmarked_sentences_belong_to_the_marker_that_closes_them() {
        let q = question(&["a.md"], None);
        // Two chunks of one document are one source, not a mix.
        let a = answer(
            "Backups run nightly. They are kept for 35 days [1]. Restores need approval [2].",
            &["a.md", "a.md"],
        );
        let t = measure(&q, &a).expect("answered");
        assert_eq!(t.precision, 1.0);
        assert!(!t.mixed_sources);
        // A trailing sentence no marker closes comes from nowhere.
        let a = answer("Backups run nightly [1]. Nobody knows why.", &["a.md"]);
        assert_eq!(measure(&q, &a).expect("answered").precision, 0.5);
        // A statement of absence is no sentence of the answer.
        let a = answer(
            "The sources do not mention ORB-9999. Backups run nightly. [1]",
            &["a.md"],
        );
        assert_eq!(measure(&q, &a).expect("answered").precision, 1.0);
        let mut abstained = answer("The sources do not answer this question.", &[]);
        abstained.abstained = true;
        assert_eq!(measure(&q, &abstained), None);
    }

    #[test]
    fn f1_compares_tokens_with_the_gold_answer() {
        assert_eq!(token_f1("the cat sat", "the cat sat"), 1.0);
        assert_eq!(token_f1("", "x"), 0.0);
        assert_eq!(token_f1("dog", "cat"), 0.0);
        // 2 common of 3 and of 4 tokens: P 2/3, R 1/2.
        let f = token_f1("Backups are kept", "backups kept 35 days");
        assert!((f - 2.0 * (2.0 / 3.0) * 0.5 / (2.0 / 3.0 + 0.5)).abs() < 1e-9);
        // Identifiers stay whole; CJK counts by character.
        assert_eq!(
            grace::text::word_tokens("asn1_der_decoding() 削除"),
            ["asn1_der_decoding", "削", "除"]
        );
        let q = question(&["a.md"], Some("Backups are kept for 35 days."));
        let a = answer("Backups are kept for 35 days. [1]", &["a.md"]);
        assert_eq!(measure(&q, &a).expect("answered").f1, Some(1.0));
    }

    #[test]
    fn the_report_groups_by_decision_and_style() {
        let mut q = question(&["a.md"], Some("kept for 35 days"));
        q.style = Some("casual".into());
        let right = measure(&q, &answer("Kept for 35 days. [1]", &["a.md"])).unwrap();
        let wrong = measure(&q, &answer("Leave is 28 days. [1]", &["b.md"])).unwrap();
        let rows = [
            (&q, Decision::Answer, &right),
            (&q, Decision::Caveat, &wrong),
            (&q, Decision::Caveat, &right),
        ];
        let r = report(&rows);
        assert_eq!(r.answer.count, 1);
        assert_eq!(r.answer.precision, Some(1.0));
        assert_eq!(r.caveat.count, 2);
        assert_eq!(r.caveat.precision, Some(0.5));
        assert_eq!(r.caveat.mixed_sources, Some(0.0));
        assert_eq!(r.escalation.count, 0);
        assert_eq!(r.escalation.precision, None);
        assert_eq!(r.by_style["casual"].caveat.count, 2);
        let json = serde_json::to_value(&r).unwrap();
        for key in ["count", "precision", "f1", "mixed_sources", "words"] {
            assert!(json["answer"].get(key).is_some(), "{key}");
            assert!(json["caveat"].get(key).is_some(), "{key}");
        }
    }
}
