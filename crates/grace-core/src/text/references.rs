//! Cross-references in manuals: "see Section 12.1, “What other
//! documentation exists on and for a Debian system?”". The quoted title
//! says what *another* section is about: searched or scored as this text's
//! own words, it puts the pointer above the section it points to (the
//! title is often the asker's question word for word). What is searched and
//! scored is the text without such titles; what is shown keeps them.

use std::borrow::Cow;

/// The words that open a numbered cross-reference, lowercased.
const REFERENCE_WORDS: &[&str] = &["section", "chapter", "appendix", "part", "§"];

/// The longest quoted title read as one, in characters: a quote left open
/// beyond it is no title and is kept.
const MAX_TITLE_CHARS: usize = 300;

/// `text` without the quoted titles of its numbered cross-references
/// ("Section 12.1, “…”", "chapter 4 \"…\""): the reference itself
/// ("Section 12.1") stays. Borrowed when there is none. Linear in the
/// text's length.
pub fn without_cross_references(text: &str) -> Cow<'_, str> {
    // Most texts quote nothing: they cost one scan, not a copy.
    if !text.contains(['“', '"']) {
        return Cow::Borrowed(text);
    }
    let chars: Vec<char> = text.chars().collect();
    let mut out: Option<String> = None;
    // Characters of `chars` up to here are in `out` (when it exists).
    let mut copied = 0;
    let mut i = 0;
    while i < chars.len() {
        let Some(open) = title_after_reference(&chars, i) else {
            i += 1;
            continue;
        };
        let close = if chars[open] == '“' { '”' } else { '"' };
        let end = chars[open + 1..]
            .iter()
            .take(MAX_TITLE_CHARS)
            .position(|&c| c == close)
            .map(|at| open + 1 + at);
        match end {
            Some(end) => {
                let kept = out.get_or_insert_with(String::new);
                kept.extend(&chars[copied..open]);
                copied = end + 1;
                i = end + 1;
            }
            None => i = open + 1,
        }
    }
    match out {
        None => Cow::Borrowed(text),
        Some(mut kept) => {
            kept.extend(&chars[copied..]);
            Cow::Owned(kept)
        }
    }
}

/// Where the quote opens when a numbered reference starts at `at`
/// ("Section 12.1, “", "Chapter 4 \""): the reference word at a word's
/// start, a number, an optional comma, white space, an opening quote.
fn title_after_reference(chars: &[char], at: usize) -> Option<usize> {
    if at > 0 && chars[at - 1].is_alphanumeric() {
        return None;
    }
    let word = REFERENCE_WORDS.iter().find(|w| {
        let n = w.chars().count();
        chars.len() >= at + n
            && chars[at..at + n]
                .iter()
                .flat_map(|c| c.to_lowercase())
                .eq(w.chars())
    })?;
    let mut j = at + word.chars().count();
    let spaces = |j: usize| chars[j..].iter().take_while(|c| c.is_whitespace()).count();
    j += spaces(j);
    let number = chars[j..]
        .iter()
        .take_while(|c| c.is_ascii_digit() || c.is_ascii_uppercase() || **c == '.')
        .count();
    if number == 0 || !chars[j].is_ascii_digit() && number > 1 {
        return None;
    }
    j += number;
    if chars.get(j) == Some(&',') {
        j += 1;
    }
    let gap = spaces(j);
    j += gap;
    (gap > 0 && matches!(chars.get(j), Some('“' | '"'))).then_some(j)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_numbered_references_title_is_dropped() {
        assert_eq!(
            without_cross_references(
                "If you can't find it, check out Section 12.1, “What other documentation exists?”."
            ),
            "If you can't find it, check out Section 12.1, ."
        );
        assert_eq!(
            without_cross_references(
                "See chapter 4 \"Control files\" and Appendix B, “Glossary” too."
            ),
            "See chapter 4  and Appendix B,  too."
        );
    }

    #[test]
    fn other_quotes_and_words_stay() {
        for text in [
            "The “stable” distribution.",
            "This section describes “apt”.",
            "Subsection 3, “x”.",
            "Section AB, “no number”.",
            "Section 12.1 “unclosed and on",
            "Section",
            "section 3,",
            "",
        ] {
            assert!(
                matches!(without_cross_references(text), Cow::Borrowed(_)),
                "{text}"
            );
        }
    }

    #[test]
    fn hostile_references_are_read_in_one_pass_on_character_boundaries() {
        let open = "Section 1 “".repeat(50_000);
        assert_eq!(without_cross_references(&open), open);
        let many = "Section 1, “é” ".repeat(50_000);
        assert_eq!(
            without_cross_references(&many),
            "Section 1,  ".repeat(50_000)
        );
    }
}
