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
/// pronoun that points back, a leading conjunction or "what about", or at
/// most one word of its own.
///
/// A question that names its own subject stands alone, pronoun or not
/// (measured with `grace eval DIR --one-session 50`: before these rules
/// one self-contained question in eight on the debian-faq sets was
/// searched with an earlier question's words). A pronoun does not point
/// back when two of the question's own key terms come
/// in an earlier sentence or clause (`EARLIER_CLAUSE_TERMS`; "There's a binary /usr/bin/foo on my
/// system. Which package owns it?", "record keystrokes in bash and replay
/// it"), when "there" is existential ("are there other init systems?"),
/// "one" a number ("one generator", "more than one"), "that" relative
/// ("the programs that come with Debian"), "this" or "that" a time ("this
/// week"), or it is reflexive ("by itself"). A leading "why" marks a
/// follow-up only in a short turn ("why not?"), not "Why are Debian
/// package file names so long?"; one word of its own is enough when it is
/// an identifier ("What does core.checkStat do?").
pub fn is_follow_up(question: &str) -> bool {
    let words = clause_words(question);
    if words.is_empty() || words.len() > MAX_FOLLOW_UP_WORDS {
        return false;
    }
    let lower: Vec<&str> = words.iter().map(|(w, _)| w.as_str()).collect();
    let leads = |prefixes: &[&[&str]]| {
        prefixes
            .iter()
            .any(|p| lower.len() >= p.len() && lower.iter().zip(p.iter()).all(|(a, b)| a == b))
    };
    let pronoun = (0..words.len()).any(|i| points_back(&words, i));
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
        &["why", "not"],
        &["anything", "else"],
    ]) || (leads(&[&["why"]]) && lower.len() <= SHORT_WHY_WORDS);
    // Chinese and Japanese run words together: two characters a word.
    let cjk = question.chars().filter(|&c| crate::text::is_cjk(c)).count() / 2;
    let own_terms = lower.iter().filter(|w| is_key_term(w)).count() + cjk;
    // "What does core.checkStat do?" names its subject in one word.
    let names_identifier = !crate::lexical::distinct_identifiers(question).is_empty();
    pronoun || elliptical || (own_terms <= 1 && !names_identifier)
}

/// Key terms of the question's own, in an earlier sentence or clause, that
/// make a pronoun point within the question.
const EARLIER_CLAUSE_TERMS: usize = 2;
/// Longest turn (in words) a leading "why" makes a follow-up.
const SHORT_WHY_WORDS: usize = 4;

/// A question's words, lowercased, each with the number of its clause:
/// a sentence's or clause's punctuation (`. ? ! ; : ,` or a dash) ends one,
/// and a word of [`CLAUSE_WORDS`] starts one.
fn clause_words(question: &str) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    let mut clause = 0;
    for raw in question.split_whitespace() {
        for w in words(raw) {
            let lower = w.to_lowercase();
            if CLAUSE_WORDS.contains(&lower.as_str()) {
                clause += 1;
            }
            out.push((lower, clause));
        }
        if raw.ends_with(['.', '?', '!', ';', ':', ',']) || matches!(raw, "-" | "–" | "—") {
            clause += 1;
        }
    }
    out
}

/// Whether word `i` of a question (as [`clause_words`] gives them) is a
/// pronoun pointing back at the conversation (see [`is_follow_up`]).
fn points_back(words: &[(String, usize)], i: usize) -> bool {
    let (word, clause) = (words[i].0.as_str(), words[i].1);
    if !PRONOUNS.contains(&word) {
        return false;
    }
    let earlier = words[..i]
        .iter()
        .filter(|(w, c)| *c < clause && is_key_term(w))
        .count();
    let previous = i.checked_sub(1).map_or("", |j| words[j].0.as_str());
    let next = words.get(i + 1).map_or("", |(w, _)| w.as_str());
    let existential =
        word == "there" && (EXISTENTIAL.contains(&previous) || EXISTENTIAL.contains(&next));
    let counted = word == "one" && (is_key_term(next) || COUNTING.contains(&previous));
    // "the programs that come with it": a noun before, a verb after.
    let relative = word == "that"
        && is_key_term(previous)
        && (is_key_term(next) || AUXILIARIES.contains(&next));
    let time = matches!(word, "this" | "that") && TIMES.contains(&next);
    let reflexive = matches!(word, "itself" | "themselves");
    earlier < EARLIER_CLAUSE_TERMS && !existential && !counted && !relative && !time && !reflexive
}

/// Words that start a clause.
const CLAUSE_WORDS: &[&str] = &[
    "and", "or", "but", "if", "when", "because", "so", "then", "after", "before", "while", "since",
    "until", "where",
];
/// Words around an existential "there" ("are there", "there is").
const EXISTENTIAL: &[&str] = &["is", "are", "was", "were", "be", "isn't", "aren't"];
/// Verbs a relative "that" may lead into ("the python that is installed").
const AUXILIARIES: &[&str] = &[
    "is", "are", "was", "were", "has", "have", "had", "can", "will", "does", "do",
];
/// Words before a "one" that counts ("each one", "more than one").
const COUNTING: &[&str] = &["each", "every", "than", "any", "no"];
/// Times after a deictic "this" or "that" ("this week").
const TIMES: &[&str] = &[
    "morning",
    "afternoon",
    "evening",
    "night",
    "day",
    "week",
    "weekend",
    "month",
    "quarter",
    "year",
    "time",
    "sprint",
];

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
pub fn is_key_term(word: &str) -> bool {
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
