//! The offline rule: whether a turn reads as a follow-up, and the key
//! terms it inherits from the question before.

/// Longest follow-up (in words) the rule treats as possibly elliptical.
const MAX_FOLLOW_UP_WORDS: usize = 12;
/// At most this many key terms are inherited from the previous question.
pub(super) const MAX_INHERITED_TERMS: usize = 8;

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
