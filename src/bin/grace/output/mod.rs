//! Rendering results for people (plain text) and machines (`--json`).
//!
//! Every command renders its results through here (a command prints only
//! its prompts and one-line confirmations itself); this module imports none
//! of the commands. The shared pieces (JSON, paths, errors, numbers) are
//! below; each kind of result has its file.

use std::error::Error as _;

use serde::Serialize;

mod auth;
mod eval;
mod kb;
mod review;
mod run;
mod tools;

pub use auth::{audit_records, issued_key, kb_done, kbs, principals, revoked};
pub use eval::{
    calibration, conversation_report, eval_report, learned, one_session_report, self_calibration,
    self_calibration_note,
};
pub use kb::{config, ingest_report, migrate_report, passages, status, watch_batch};
pub use review::{
    asker_view, audit, escalation, escalations, messages, not_reviewed, redraft, reviewer_token,
    reviewers,
};
pub use run::{
    cited_sources, gaps, how_to_rate, print_citations, queued_for_review, rated, run_report,
    run_report_with_ids, terminal_format, while_waiting,
};
pub use tools::{
    reflection, runtime_tool_created, runtime_tool_history, tool_list, tool_result, tool_usage,
};

/// A path as the user would type it: relative to the current folder when
/// it lies below it.
pub fn display_path(path: &str) -> String {
    let p = std::path::Path::new(path);
    match std::env::current_dir() {
        Ok(cwd) => p
            .strip_prefix(&cwd)
            .map(|r| r.display().to_string())
            .unwrap_or_else(|_| path.to_string()),
        Err(_) => path.to_string(),
    }
}

/// A reply to GRACE's question: the option a number names, else the text.
pub fn chosen(options: &[String], line: &str) -> String {
    line.parse::<usize>()
        .ok()
        .and_then(|n| options.get(n.wrapping_sub(1)))
        .cloned()
        .unwrap_or_else(|| line.to_string())
}

/// "1 question", "2 questions".
pub(super) fn counted(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// One value as one line of JSON (`grace chat --json`: a line per turn).
pub fn print_json_line<T: Serialize>(value: &T) {
    match serde_json::to_string(value) {
        Ok(s) => println!("{s}"),
        Err(e) => eprintln!("error: cannot render JSON: {e}"),
    }
}

pub fn print_json<T: Serialize>(value: &T) {
    match serde_json::to_string_pretty(value) {
        Ok(s) => println!("{s}"),
        Err(e) => eprintln!("error: cannot render JSON: {e}"),
    }
}

/// Prints an error with its causes, on stderr (and as JSON on stdout with `--json`).
pub fn error(e: &grace::Error, json: bool) {
    let mut message = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = s.source();
    }
    if json {
        print_json(&serde_json::json!({
            "error": { "message": message, "exit_code": e.exit_code() }
        }));
    }
    eprintln!("error: {message}");
}

/// Prints `value` as JSON with `--json`, else runs `text`.
pub fn json_or<T: Serialize>(json: bool, value: &T, text: impl FnOnce()) {
    if json {
        print_json(value);
    } else {
        text();
    }
}

pub fn when(t: &chrono::DateTime<chrono::Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%S UTC").to_string()
}

pub fn pct(x: Option<f64>) -> String {
    x.map(|v| format!("{:.1}%", v * 100.0))
        .unwrap_or_else(|| "n/a".into())
}

pub fn num(x: Option<f64>) -> String {
    x.map(|v| format!("{v:.3}")).unwrap_or_else(|| "n/a".into())
}

/// `text` on one line, cut at `max_chars` characters (with an ellipsis),
/// at the end of a word when one ends in the last third: never "a failed
/// producti…".
pub fn snippet(text: &str, max_chars: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max_chars {
        flat
    } else {
        let cut: String = flat.chars().take(max_chars + 1).collect();
        let at_word = cut
            .rfind(' ')
            .filter(|&i| cut[..i].chars().count() * 3 >= max_chars * 2);
        let kept = match at_word {
            Some(i) => &cut[..i],
            None => {
                let end = cut
                    .char_indices()
                    .nth(max_chars)
                    .map_or(cut.len(), |(i, _)| i);
                &cut[..end]
            }
        };
        format!("{}…", kept.trim_end())
    }
}

#[cfg(test)]
mod tests {
    use super::snippet;

    #[test]
    fn a_snippet_ends_at_a_word_and_on_a_character() {
        let text = "Roll back a failed production deployment with orbit rollback";
        assert_eq!(snippet(text, 30), "Roll back a failed production…");
        assert_eq!(snippet(text, 200), text);
        assert_eq!(snippet("a  b\n\tc", 10), "a b c");
        // No space to cut at (or none late enough): characters, never bytes.
        assert_eq!(snippet("デプロイをロールバックする方法", 5), "デプロイを…");
        assert_eq!(snippet("Supercalifragilistic word", 8), "Supercal…");
    }
}
