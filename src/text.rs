//! Small helpers for text from outside: two checks kept in step with the
//! patterns the OpenAPI document publishes for them (`NOT_BLANK`,
//! `PLAIN_ID`), so that what a client's schema check accepts the server
//! accepts too; cutting text on a character boundary; and splitting a
//! paragraph into sentences (chunking, answering and grading share it).

/// The published pattern of a text that must not be blank: at least one
/// character that is neither white space nor a control character.
pub const NOT_BLANK: &str = r"[^\s\x00-\x1f\x7f-\x9f]";

/// The published pattern of an id (a reviewer's): no white space or
/// control characters at all.
pub const PLAIN_ID: &str = r"^[^\s\x00-\x1f\x7f-\x9f]+$";

fn invisible(c: char) -> bool {
    c.is_whitespace() || c.is_control()
}

/// Whether `text` has nothing but white space and control characters.
pub fn is_blank(text: &str) -> bool {
    text.chars().all(invisible)
}

/// Whether `id` is non-empty and has no white space or control characters.
pub fn is_plain_id(id: &str) -> bool {
    !id.is_empty() && !id.chars().any(invisible)
}

/// `text` cut to at most `max` characters on a character boundary, with
/// `…` when it was cut (for quoting outside text in messages and traces).
pub fn ellipsized(text: &str, max: usize) -> String {
    let cut = truncate_chars(text, max);
    if cut.len() < text.len() {
        format!("{cut}…")
    } else {
        cut.to_string()
    }
}

/// The first `max` characters of `text` (all of it when shorter), cut on a
/// character boundary.
pub fn truncate_chars(text: &str, max: usize) -> &str {
    match text.char_indices().nth(max) {
        Some((i, _)) => &text[..i],
        None => text,
    }
}

/// Splits a paragraph after `.`, `!` or `?` (optionally followed by a
/// closing quote or bracket) when whitespace and an upper-case letter, digit
/// or opening quote follow; a line break inside a paragraph also ends a
/// sentence when the next line starts like a list item.
pub fn sentences(paragraph: &str) -> Vec<String> {
    let chars: Vec<char> = paragraph.chars().collect();
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let mut end = None;
        if matches!(c, '.' | '!' | '?') {
            let mut j = i + 1;
            while j < chars.len() && matches!(chars[j], '"' | '\'' | ')' | ']' | '”' | '’') {
                j += 1;
            }
            if j < chars.len() && chars[j].is_whitespace() {
                let mut k = j;
                while k < chars.len() && chars[k].is_whitespace() {
                    k += 1;
                }
                if k == chars.len()
                    || chars[k].is_uppercase()
                    || chars[k].is_ascii_digit()
                    || matches!(chars[k], '"' | '“' | '(' | '*' | '-')
                {
                    end = Some(j);
                }
            }
        } else if c == '\n' {
            end = Some(i);
        }
        if let Some(e) = end {
            let s: String = chars[start..e].iter().collect();
            if !s.trim().is_empty() {
                out.push(s.trim().to_string());
            }
            start = e;
            i = e;
        }
        i += 1;
    }
    let s: String = chars[start.min(chars.len())..].iter().collect();
    if !s.trim().is_empty() {
        out.push(s.trim().to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blank_means_only_white_space_and_controls() {
        for blank in [
            "",
            " ",
            "\t\n",
            "\u{1c}\u{1f}",
            "\u{85}\u{a0}\u{3000}",
            "\0\u{7f}",
        ] {
            assert!(is_blank(blank), "{blank:?}");
        }
        for text in ["a", " x ", "\u{feff}", "日本", "é"] {
            assert!(!is_blank(text), "{text:?}");
        }
        assert!(is_plain_id("alice") && is_plain_id("ops-team_2"));
        for bad in ["", "a b", "a\u{c}b", "a\u{1c}", "x\u{3000}"] {
            assert!(!is_plain_id(bad), "{bad:?}");
        }
    }

    #[test]
    fn truncation_cuts_on_character_boundaries() {
        assert_eq!(truncate_chars("ñandú", 2), "ña");
        assert_eq!(truncate_chars("ab", 5), "ab");
        assert_eq!(truncate_chars("", 0), "");
    }
}
