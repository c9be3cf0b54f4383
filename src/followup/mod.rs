//! Follow-up questions made standalone before retrieval.
//!
//! In a conversation, "and on sparc?" or "how do I remove them?" mean
//! nothing to a search engine on their own. [`resolve`] turns such a turn
//! into a question that stands alone:
//! - with a language model, the model rewrites it from the conversation
//!   ([`rewrite_with_model`]);
//! - offline (or when the model fails), a rule: a short turn with a
//!   pronoun, a leading "and"/"what about", or hardly any words of its own
//!   inherits the key terms and identifiers of the last question that
//!   stood alone ([`rewrite_by_rule`]).
//!
//! A turn that already stands alone is left as it is. The rewrite is what
//! retrieval and the answer see; the run reports it (`--trace`).

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::llm::{GenerateRequest, LlmClient, Message};

/// Longest follow-up (in words) the rule treats as possibly elliptical.
const MAX_FOLLOW_UP_WORDS: usize = 12;
/// At most this many key terms are inherited from the previous question.
const MAX_INHERITED_TERMS: usize = 8;
/// A model's rewrite longer than this (in characters) is not used.
const MAX_REWRITE_CHARS: usize = 1_000;
/// Turns of history a model sees when rewriting.
const MODEL_HISTORY_TURNS: usize = 4;
/// Characters of an earlier answer a model sees when rewriting.
const MODEL_ANSWER_CHARS: usize = 400;

/// One earlier turn, as follow-up resolution reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct PriorTurn<'a> {
    /// The question as the asker typed it.
    pub question: &'a str,
    /// The question as it was run (its own rewrite, when it had one).
    pub standalone: &'a str,
    /// The answer given, if any.
    pub answer: Option<&'a str>,
}

/// Who rewrote a follow-up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RewriteBy {
    /// The language model.
    Model,
    /// The offline rule (inherited key terms).
    Rule,
}

/// A follow-up made standalone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Rewrite {
    /// The question as run.
    pub question: String,
    /// Who rewrote it.
    pub by: RewriteBy,
}

/// Resolves `question` against the conversation so far (oldest first):
/// `None` when it stands alone (or there is no history). A model is tried
/// first when given; any failure falls back to the rule.
pub fn resolve(
    question: &str,
    history: &[PriorTurn<'_>],
    model: Option<&dyn LlmClient>,
) -> Option<Rewrite> {
    let previous = history.last()?;
    if let Some(llm) = model {
        match rewrite_with_model(llm, question, history) {
            Ok(Some(q)) => {
                return Some(Rewrite {
                    question: q,
                    by: RewriteBy::Model,
                });
            }
            Ok(None) => return None,
            Err(e) => {
                tracing::warn!(error = %e, "follow-up rewrite by the model failed; using the rule")
            }
        }
    }
    // The subject of the conversation is in the last question that stood
    // alone: a chain of follow-ups ("why are their names so long?", "and
    // how do I hold one?") inherits its terms, not an earlier follow-up's
    // own words, which would pull retrieval and the answer back to it.
    let anchor = history
        .iter()
        .rev()
        .find(|t| t.standalone == t.question)
        .unwrap_or(previous);
    rewrite_by_rule(question, anchor.standalone).map(|q| Rewrite {
        question: q,
        by: RewriteBy::Rule,
    })
}

/// The rule: when `question` reads as a follow-up, it with the previous
/// question's key terms (identifiers first) that it lacks appended;
/// otherwise `None`.
pub fn rewrite_by_rule(question: &str, previous: &str) -> Option<String> {
    if !is_follow_up(question) {
        return None;
    }
    let own: Vec<String> = words(question).map(|w| w.to_lowercase()).collect();
    let mut inherited: Vec<String> = Vec::new();
    let mut push = |term: String| {
        let lower = term.to_lowercase();
        if !own.contains(&lower)
            && !inherited.iter().any(|t| t.to_lowercase() == lower)
            && inherited.len() < MAX_INHERITED_TERMS
        {
            inherited.push(term);
        }
    };
    for id in crate::lexical::identifiers(previous) {
        // As the asker spelled it (identifiers come back lower-cased).
        let spelled = words(previous).find(|w| w.eq_ignore_ascii_case(&id));
        push(spelled.map_or(id, str::to_string));
    }
    for w in words(previous) {
        if is_key_term(w) {
            push(w.to_string());
        }
    }
    if inherited.is_empty() {
        return None;
    }
    Some(format!("{} ({})", question.trim(), inherited.join(" ")))
}

/// Whether a turn reads as depending on the one before: short, and with a
/// pronoun, a leading conjunction or "what about", or at most one word of
/// its own.
pub fn is_follow_up(question: &str) -> bool {
    let lower: Vec<String> = words(question).map(|w| w.to_lowercase()).collect();
    if lower.is_empty() || lower.len() > MAX_FOLLOW_UP_WORDS {
        return false;
    }
    let leads = |prefixes: &[&[&str]]| {
        prefixes
            .iter()
            .any(|p| lower.len() >= p.len() && lower.iter().zip(p.iter()).all(|(a, b)| a == b))
    };
    let pronoun = lower.iter().any(|w| PRONOUNS.contains(&w.as_str()));
    let elliptical = leads(&[
        &["and"],
        &["but"],
        &["also"],
        &["or"],
        &["so"],
        &["then"],
        &["what", "about"],
        &["how", "about"],
        &["what", "if"],
        &["same", "for"],
        &["the", "same"],
        &["why"],
        &["why", "not"],
        &["anything", "else"],
    ]);
    let own_terms = lower.iter().filter(|w| is_key_term(w)).count();
    pronoun || elliptical || own_terms <= 1
}

/// What a rewritten follow-up adds of its own, for the check that the
/// passages say it too (`follow_up_coverage`): its key terms without the
/// words that only say what the asker wants done ("how do I fix it?" adds
/// nothing a passage must repeat; "and Skype?" adds Skype). Empty when it
/// adds nothing.
pub fn own_terms(question: &str) -> String {
    words(question)
        .filter(|w| is_key_term(w) && !INTENT_WORDS.contains(&w.to_lowercase().as_str()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A rewritten follow-up's own terms as the `focus` of its searches;
/// `None` when it adds nothing of its own.
pub fn focus(asked: &str) -> Option<String> {
    Some(own_terms(asked)).filter(|t| !t.is_empty())
}

/// Words that say what the asker wants done or how they ask, not what about.
const INTENT_WORDS: &[&str] = &[
    "fix",
    "fixed",
    "solve",
    "resolve",
    "work",
    "works",
    "working",
    "happen",
    "happens",
    "happened",
    "help",
    "try",
    "see",
    "check",
    "find",
    "show",
    "handle",
    "deal",
    "way",
    "ways",
    "possible",
    "able",
    "actually",
    "really",
    "exactly",
    "usually",
    "here",
    "again",
    "now",
    "instead",
    "example",
    "case",
    "cases",
    "kind",
    "sort",
    "better",
    "best",
    "good",
    "bad",
    "right",
    "wrong",
    "same",
    "different",
    "difference",
];

/// Words of `text`: runs of letters, digits and `-_.'/+` (trailing dots
/// and quotes trimmed).
fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_alphanumeric() || "-_.'/+".contains(c)))
        .map(|w| w.trim_matches(|c: char| c == '.' || c == '\'' || c == '-'))
        .filter(|w| !w.is_empty())
}

/// A word that carries the question's subject: not a function word, a
/// question word or a pronoun, and longer than two characters (or with a
/// digit: `i386`, `11`).
fn is_key_term(word: &str) -> bool {
    let lower = word.to_lowercase();
    (lower.chars().count() > 2 || lower.chars().any(|c| c.is_ascii_digit()))
        && !STOP_WORDS.contains(&lower.as_str())
        && !PRONOUNS.contains(&lower.as_str())
}

/// Words that point back at something said before.
const PRONOUNS: &[&str] = &[
    "it",
    "its",
    "it's",
    "itself",
    "they",
    "them",
    "their",
    "theirs",
    "themselves",
    "this",
    "that",
    "these",
    "those",
    "there",
    "he",
    "she",
    "him",
    "her",
    "his",
    "one",
    "ones",
    "same",
    "such",
    "former",
    "latter",
    "above",
    "previous",
];

/// Function words, question words and verbs too common to name a subject.
const STOP_WORDS: &[&str] = &[
    "a",
    "about",
    "after",
    "again",
    "all",
    "also",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "been",
    "before",
    "being",
    "but",
    "by",
    "can",
    "could",
    "did",
    "do",
    "does",
    "doing",
    "done",
    "for",
    "from",
    "get",
    "got",
    "had",
    "has",
    "have",
    "having",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "just",
    "know",
    "let",
    "like",
    "may",
    "me",
    "might",
    "more",
    "most",
    "much",
    "must",
    "my",
    "need",
    "no",
    "not",
    "now",
    "of",
    "on",
    "only",
    "or",
    "other",
    "our",
    "out",
    "over",
    "please",
    "should",
    "so",
    "some",
    "than",
    "the",
    "then",
    "there",
    "to",
    "too",
    "under",
    "up",
    "us",
    "use",
    "used",
    "using",
    "very",
    "want",
    "was",
    "way",
    "we",
    "were",
    "what",
    "when",
    "where",
    "whether",
    "which",
    "while",
    "who",
    "whom",
    "whose",
    "why",
    "will",
    "with",
    "would",
    "yes",
    "you",
    "your",
    "else",
    "anything",
    "something",
    "thing",
    "things",
    "tell",
    "say",
    "said",
    "mean",
    "means",
    "there's",
    "what's",
    "how's",
    "i'm",
    "don't",
    "doesn't",
    "can't",
    "isn't",
    "aren't",
    "make",
    "instead",
    "well",
    "still",
    "ever",
    "many",
    "few",
    "each",
    "every",
    "both",
    "either",
    "neither",
    "own",
    "via",
    "per",
    "okay",
];

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_turns_with_pronouns_or_ellipsis_are_follow_ups() {
        for q in [
            "How do I remove them?",
            "and on sparc?",
            "What about testing?",
            "Is it free?",
            "why?",
            "Where can I get those?",
        ] {
            assert!(is_follow_up(q), "{q}");
        }
        for q in [
            "How do I install a package with dpkg?",
            "What is the Debian social contract?",
            "Which architectures does Debian support officially today and since when?",
        ] {
            assert!(!is_follow_up(q), "{q}");
        }
    }

    #[test]
    fn a_follow_up_inherits_the_previous_key_terms_and_identifiers() {
        let q = rewrite_by_rule("How do I remove them?", "What are Debian packages?").unwrap();
        assert_eq!(q, "How do I remove them? (Debian packages)");
        let q = rewrite_by_rule("and on sparc?", "How do I boot the installer on i386?").unwrap();
        assert!(q.starts_with("and on sparc? ("), "{q}");
        assert!(
            q.contains("i386") && q.contains("installer") && q.contains("boot"),
            "{q}"
        );
        // Identifiers come first and whole.
        let q = rewrite_by_rule("what does it do?", "Explain apt-get --purge").unwrap();
        assert!(q.contains("--purge"), "{q}");
        let q = rewrite_by_rule("how do I fix it?", "What does error ORB-2001 mean?").unwrap();
        assert_eq!(q, "how do I fix it? (ORB-2001 error)");
        // A question that stands alone is left alone.
        assert_eq!(
            rewrite_by_rule("How do I install a package with dpkg?", "What is apt?"),
            None
        );
    }

    #[test]
    fn a_chain_of_follow_ups_inherits_from_the_last_standalone_question() {
        let history = [
            PriorTurn {
                question: "What is a Debian package?",
                standalone: "What is a Debian package?",
                answer: None,
            },
            PriorTurn {
                question: "Why are their names so long?",
                standalone: "Why are their names so long? (Debian package)",
                answer: None,
            },
        ];
        let r = resolve("and how do I hold one?", &history, None).unwrap();
        assert_eq!(r.question, "and how do I hold one? (Debian package)");
        assert_eq!(r.by, RewriteBy::Rule);
    }

    #[test]
    fn a_follow_ups_own_terms_leave_out_what_it_asks_to_be_done() {
        assert_eq!(own_terms("how do I fix it?"), "");
        assert_eq!(own_terms("and Skype?"), "Skype");
        assert_eq!(own_terms("Are there logs of them?"), "logs");
        assert_eq!(
            own_terms("does it get security updates?"),
            "security updates"
        );
    }

    /// A model that answers every request with `reply`, and remembers
    /// what it was sent.
    struct Fixed {
        reply: crate::llm::Result<String>,
        sent: std::sync::Mutex<Vec<String>>,
    }

    impl LlmClient for Fixed {
        fn name(&self) -> &str {
            "fixed"
        }
        fn generate(
            &self,
            request: &GenerateRequest,
        ) -> crate::llm::Result<crate::llm::Generation> {
            self.sent
                .lock()
                .unwrap()
                .push(format!("{:?}", request.messages));
            self.reply.clone().map(|text| {
                crate::llm::Generation::plain(
                    text,
                    crate::llm::StopReason::Complete,
                    Default::default(),
                )
            })
        }
    }

    fn history() -> Vec<PriorTurn<'static>> {
        vec![PriorTurn {
            question: "How do I roll back a deployment?",
            standalone: "How do I roll back a deployment?",
            answer: Some("Run orbit rollback api --env production."),
        }]
    }

    #[test]
    fn a_model_rewrites_from_the_conversation_and_a_failing_one_falls_back_to_the_rule() {
        let model = Fixed {
            reply: Ok(r#"{"question": "How do I roll back a deployment on staging?"}"#.into()),
            sent: Default::default(),
        };
        let r = resolve("and on staging?", &history(), Some(&model)).unwrap();
        assert_eq!(r.question, "How do I roll back a deployment on staging?");
        assert_eq!(r.by, RewriteBy::Model);
        let sent = model.sent.lock().unwrap().join("");
        assert!(
            sent.contains("Q1: How do I roll back") && sent.contains("A1: Run orbit"),
            "{sent}"
        );
        // The model says it stands alone: no rewrite.
        let same = Fixed {
            reply: Ok(r#"{"question": "and on staging?"}"#.into()),
            sent: Default::default(),
        };
        assert_eq!(resolve("and on staging?", &history(), Some(&same)), None);
        // Down, or not JSON, or blank: the rule.
        for reply in [
            Err(crate::llm::LlmError::Transient {
                generator: "fixed".into(),
                message: "503".into(),
            }),
            Ok("not json".into()),
            Ok(r#"{"question": "  "}"#.into()),
        ] {
            let model = Fixed {
                reply,
                sent: Default::default(),
            };
            let r = resolve("and on staging?", &history(), Some(&model)).unwrap();
            assert_eq!(r.by, RewriteBy::Rule);
            assert_eq!(r.question, "and on staging? (roll back deployment)");
        }
    }

    #[test]
    fn nothing_to_inherit_leaves_the_question_as_it_is() {
        assert_eq!(rewrite_by_rule("and that?", "what is it?"), None);
        assert_eq!(resolve("and that?", &[], None), None);
    }

    #[test]
    fn terms_are_bounded_and_text_is_sliced_safely() {
        let long = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima";
        let q = rewrite_by_rule("and it?", long).unwrap();
        assert_eq!(q.matches(' ').count(), 2 + MAX_INHERITED_TERMS - 1);
        // Non-ASCII words and punctuation do not break the split.
        let q = rewrite_by_rule("and that one?", "Wie installiert man Pakete über ñandú?").unwrap();
        assert!(q.contains("ñandú"), "{q}");
    }
}
