//! Questions written by the configured language model
//! (`confidence.self_calibration.model_questions`): the model reads a
//! section and writes one question a user would ask that the section
//! answers, in the user's words rather than the section's, in the
//! section's language. Questions built by fixed patterns share every word
//! with their section, which makes them easier or harder than people's
//! depending on the corpus (the book, "Self-calibration"); a model's
//! paraphrase is the closer stand-in for a person.
//!
//! A reply that is no usable question (empty, several lines of prose, too
//! long, the heading copied, a safety stop) is not used: the caller keeps
//! the pattern-built question for that section.

use crate::lang::Lang;
use crate::llm::{GenerateRequest, LlmClient, Message, StopReason};
use crate::text::truncate_chars;

use super::questions::{MAX_CHARS, last_heading};

/// Most characters of a section the model reads.
const MAX_SECTION_CHARS: usize = 2_000;
/// Most characters of the section's heading the model reads.
const MAX_HEADING_CHARS: usize = 200;
/// Shortest question accepted (characters; a Japanese question can be
/// short).
const MIN_CHARS: usize = 6;

/// The instructions: what to write, and what not to.
const SYSTEM: &str = "You write test questions for a documentation search system. \
Read the section and write ONE question that a user who has not read it would type, \
which this section answers. Use the user's own everyday words, not the section's \
wording or its heading; do not name the section. Reply with the question alone, \
on one line, ending with a question mark.";

/// The request for a question about the section `path` with `text`.
pub fn request(path: &str, text: &str) -> GenerateRequest {
    let lang = Lang::of(text);
    let user = format!(
        "Write the question in {}.\n\nSection: {}\n\n{}",
        lang.name(),
        truncate_chars(last_heading(path), MAX_HEADING_CHARS),
        truncate_chars(text, MAX_SECTION_CHARS)
    );
    GenerateRequest {
        messages: vec![Message::system(SYSTEM), Message::user(user)],
        json_schema: None,
        answer: None,
        tools: Vec::new(),
    }
}

/// The question in a model's `reply`, or `None` when it is no usable
/// question about the section `path`: its first non-empty line, without
/// a list mark, a "Question:" label or quotes; it must end with a
/// question mark, be 6 to 200 characters long, and not be the heading
/// itself.
pub fn vet(reply: &str, path: &str) -> Option<String> {
    let line = reply.lines().map(str::trim).find(|l| !l.is_empty())?;
    let mut q = without_list_mark(line);
    for label in ["Question:", "question:", "Q:", "質問:", "質問："] {
        if let Some(rest) = q.strip_prefix(label) {
            q = rest.trim();
        }
    }
    let q = q
        .trim_matches(|c: char| matches!(c, '"' | '\'' | '“' | '”' | '「' | '」' | '*' | '`'))
        .trim();
    let chars = q.chars().count();
    if !(q.ends_with('?') || q.ends_with('？')) || !(MIN_CHARS..=MAX_CHARS).contains(&chars) {
        return None;
    }
    let bare = |s: &str| -> String {
        s.chars()
            .filter(|c| c.is_alphanumeric())
            .flat_map(char::to_lowercase)
            .collect()
    };
    if bare(q) == bare(last_heading(path)) {
        return None;
    }
    Some(q.to_string())
}

/// `line` without a leading list mark followed by a space (`- `, `* `,
/// `• `, `1. `, `2) `); a question that starts with a digit or a dash
/// (`2FA …?`, `--purge …?`) keeps it.
fn without_list_mark(line: &str) -> &str {
    let after_bullet = line.strip_prefix(['-', '*', '•']);
    let digits = line.len() - line.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let after_number = (digits > 0)
        .then(|| line[digits..].strip_prefix(['.', ')']))
        .flatten();
    match after_bullet.or(after_number) {
        Some(rest) if rest.starts_with(char::is_whitespace) => rest.trim(),
        _ => line,
    }
}

/// A question written by `llm` about the section `path`, or `None` when
/// its reply is unusable ([`vet`]) or stopped for safety. An error of the
/// model (unreachable, out of retries) is returned: the user asked for
/// its questions, and silently using patterns instead would hide it.
pub fn write(llm: &dyn LlmClient, path: &str, text: &str) -> crate::error::Result<Option<String>> {
    let generation = llm.generate(&request(path, text))?;
    if generation.stop_reason == StopReason::Safety {
        return Ok(None);
    }
    Ok(vet(&generation.text, path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_question_is_kept() {
        assert_eq!(
            vet(
                "How can I stop apt from asking about config files?",
                "a > Conffiles"
            )
            .as_deref(),
            Some("How can I stop apt from asking about config files?")
        );
    }

    #[test]
    fn labels_marks_and_quotes_are_taken_off_and_only_the_first_line_counts() {
        for (reply, want) in [
            (
                "\n1. Question: \"Why is my disk full?\"\nBecause…",
                "Why is my disk full?",
            ),
            ("「パッケージを消すには？」", "パッケージを消すには？"),
            // A question that starts with a digit or a dash keeps it; a
            // list mark followed by a space goes.
            ("2FA for ssh, how?", "2FA for ssh, how?"),
            ("--purge removes what?", "--purge removes what?"),
            ("- Why is it slow?", "Why is it slow?"),
            ("12) Why is it slow?", "Why is it slow?"),
        ] {
            assert_eq!(vet(reply, "x").as_deref(), Some(want), "{reply:?}");
        }
    }

    #[test]
    fn hostile_replies_are_bounded_and_cut_on_character_boundaries() {
        // Megabytes on one line: refused as too long, not copied about.
        let huge = format!("{}?", "数".repeat(2_000_000));
        assert_eq!(vet(&huge, "x"), None);
        // A usable first line before megabytes of anything.
        let reply = format!("Why does apt hang?\n{}", "\u{0}\u{202e}".repeat(1_000_000));
        assert_eq!(vet(&reply, "x").as_deref(), Some("Why does apt hang?"));
        // Multi-byte marks and spaces next to the list number.
        assert_eq!(
            vet("１. ３\u{3000}設定ファイルを消すには？", "x").as_deref(),
            Some("１. ３\u{3000}設定ファイルを消すには？")
        );
        assert_eq!(
            vet("7.\u{3000}設定ファイルを消すには？", "x").as_deref(),
            Some("設定ファイルを消すには？")
        );
        // Only marks, quotes or a lone question mark: nothing to ask.
        for reply in ["?", "「？」", "1. ?", "\"\"\"?\"\"\"", "🙂🙂🙂🙂🙂?"] {
            let got = vet(reply, "x");
            assert!(
                got.as_deref()
                    .is_none_or(|q| q.chars().count() >= MIN_CHARS),
                "{reply:?}: {got:?}"
            );
        }
        // A heading of any length, in the prompt, is cut too.
        let r = request(&"見".repeat(100_000), "本文");
        let user = r.messages[1].content.chars().count();
        assert!(user < MAX_HEADING_CHARS + 200, "{user} characters");
    }

    #[test]
    fn prose_the_heading_and_overlong_replies_are_refused() {
        assert_eq!(vet("Here is a question about apt.", "x"), None);
        assert_eq!(vet("", "x"), None);
        assert_eq!(vet("Why?", "x"), None);
        assert_eq!(
            vet("What is Debian?", "1 General > 1.1 What is Debian?"),
            None
        );
        let long = format!("{}?", "why ".repeat(60));
        assert_eq!(vet(&long, "x"), None);
    }

    #[test]
    fn the_request_names_the_sections_language_and_bounds_its_text() {
        let text = "あ".repeat(5_000);
        let r = request("章 > 節", &text);
        let user = &r.messages[1].content;
        assert!(user.contains("in Japanese"), "{user}");
        assert!(user.chars().count() < MAX_SECTION_CHARS + 200);
        let r = request("Installing", "Run apt-get install.");
        assert!(r.messages[1].content.contains("in English"));
        assert!(r.json_schema.is_none() && r.tools.is_empty());
    }
}
