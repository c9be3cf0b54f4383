//! Small helpers for text from outside: two checks kept in step with the
//! patterns the OpenAPI document publishes for them (`NOT_BLANK`,
//! `PLAIN_ID`), so that what a client's schema check accepts the server
//! accepts too, and cutting text on a character boundary.

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

/// The first `max` characters of `text` (all of it when shorter), cut on a
/// character boundary.
pub fn truncate_chars(text: &str, max: usize) -> &str {
    match text.char_indices().nth(max) {
        Some((i, _)) => &text[..i],
        None => text,
    }
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
