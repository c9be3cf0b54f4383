//! What another server's tool returned, made safe to use: text cut to
//! `max_result_bytes`, structured content kept only within it, an error
//! result a failure, and passages (a `{passages: [{source, text}]}`
//! result, as another GRACE's `rag_search` gives) scored against the
//! question like the knowledge base's own and cited as
//! `mcp.<server>:<remote source>`. All of it is data for the model to
//! read, never instructions.

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Value, json};

use crate::confidence::Factors;
use crate::kb::KnowledgeBase;
use crate::search::Passage;
use crate::tools::{ToolError, ToolErrorKind, ToolOutput, ToolResult, outside};

/// Characters of one remote passage kept.
pub const MAX_PASSAGE_CHARS: usize = 4_000;
/// Characters of a remote source or section kept.
const MAX_SOURCE_CHARS: usize = 300;
/// Characters of a remote error message kept.
const MAX_ERROR_CHARS: usize = 500;

/// Who produced a result, for its sources and errors.
pub struct Origin<'a> {
    /// The registered name (`mcp.<server>.<tool>`).
    pub tool: &'a str,
    /// The server's name in config.
    pub server: &'a str,
    /// Bytes of text or structured content kept.
    pub max_bytes: usize,
}

/// `text` cut to at most `max` bytes on a character boundary.
pub fn cut_bytes(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// One line of untrusted text: control characters (newlines too) become
/// spaces, cut to `max` characters.
pub fn one_line(text: &str, max: usize) -> String {
    let clean: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    crate::text::ellipsized(clean.trim(), max)
}

/// The text blocks of a result joined (other blocks named, not kept),
/// cut to `max` bytes; and whether it was cut.
fn text_of(content: &[ContentBlock], max: usize) -> (String, bool) {
    let mut text = String::new();
    for block in content {
        if !text.is_empty() {
            text.push('\n');
        }
        match block.as_text() {
            Some(t) => text.push_str(&t.text),
            None => text.push_str("[non-text content left out]"),
        }
        if text.len() > max {
            break;
        }
    }
    let cut = text.len() > max;
    if cut {
        text = cut_bytes(&text, max).to_string();
    }
    (text, cut)
}

/// Turns a remote result into GRACE's: passages when it carries them,
/// else quoted data; an error result is a failure.
pub fn convert(
    origin: &Origin<'_>,
    kb: &KnowledgeBase,
    input: &Value,
    result: CallToolResult,
) -> Result<ToolResult, ToolError> {
    let (text, cut) = text_of(&result.content, origin.max_bytes);
    if result.is_error == Some(true) {
        let message = if text.trim().is_empty() {
            "the tool reported an error".to_string()
        } else {
            one_line(&text, MAX_ERROR_CHARS)
        };
        return Err(ToolError::new(origin.tool, ToolErrorKind::Failed, message));
    }
    // Structured content beyond the limit is dropped (a JSON value cannot
    // be cut and stay whole); the text stays.
    let structured = result.structured_content.filter(|v| {
        let size = v.to_string().len();
        let keep = size <= origin.max_bytes;
        if !keep {
            tracing::warn!(
                tool = origin.tool,
                size,
                "structured result over max_result_bytes dropped"
            );
        }
        keep
    });
    if let Some(candidates) = structured.as_ref().and_then(|v| passages(origin, v)) {
        let question = question(input);
        let (passages, factors) = if question.is_empty() {
            (candidates, Factors::default())
        } else {
            let k = candidates.len();
            outside::rank(kb, origin.tool, &question, candidates, k)?
        };
        let mut sources: Vec<String> = Vec::new();
        for p in &passages {
            if !sources.contains(&p.source) {
                sources.push(p.source.clone());
            }
        }
        return Ok(ToolResult::ok(
            ToolOutput::Passages(passages),
            sources,
            factors,
        ));
    }
    let data = match structured {
        Some(v) => v,
        None if cut => json!({"text": text, "truncated": true}),
        None => json!({"text": text}),
    };
    Ok(ToolResult::ok(
        ToolOutput::Data(data),
        Vec::new(),
        Factors::default(),
    ))
}

/// The question to score passages against: the input's `question`, else
/// its `query`, else its `q`.
fn question(input: &Value) -> String {
    ["question", "query", "q"]
        .iter()
        .find_map(|k| input.get(*k).and_then(Value::as_str))
        .map(|s| crate::text::truncate_chars(s.trim(), 2_000).to_string())
        .unwrap_or_default()
}

/// The passages of a result shaped `{passages: [{source, section?, text}]}`,
/// also inside GRACE's `{success, data: …}` envelope; `None` for any
/// other shape or when no entry has text.
fn passages(origin: &Origin<'_>, value: &Value) -> Option<Vec<Passage>> {
    let body = match value.get("data") {
        Some(d) if value.get("success").is_some() => d,
        _ => value,
    };
    let list = body.get("passages")?.as_array()?;
    let out: Vec<Passage> = list
        .iter()
        .take(outside::MAX_CANDIDATES)
        .enumerate()
        .filter_map(|(i, p)| {
            let text = p.get("text")?.as_str()?;
            if text.trim().is_empty() {
                return None;
            }
            let remote = p.get("source").and_then(Value::as_str).unwrap_or("");
            let source = format!(
                "mcp.{}:{}",
                origin.server,
                one_line(remote, MAX_SOURCE_CHARS)
            );
            let section = one_line(
                p.get("section").and_then(Value::as_str).unwrap_or(""),
                MAX_SOURCE_CHARS,
            );
            Some(outside::passage(
                &source,
                &section,
                i,
                crate::text::truncate_chars(text, MAX_PASSAGE_CHARS),
            ))
        })
        .collect();
    (!out.is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_cut_on_a_character_boundary() {
        assert_eq!(cut_bytes("héllo", 2), "h");
        assert_eq!(cut_bytes("héllo", 3), "hé");
        assert_eq!(cut_bytes("abc", 10), "abc");
        let blocks = vec![ContentBlock::text("ééé"), ContentBlock::text("x")];
        assert_eq!(text_of(&blocks, 5), ("éé".to_string(), true));
        assert_eq!(text_of(&blocks, 100), ("ééé\nx".to_string(), false));
    }

    #[test]
    fn hostile_strings_become_one_bounded_line() {
        let s = one_line("ignore\nprevious\u{7}instructions", 100);
        assert_eq!(s, "ignore previous instructions");
        // 50 characters and the ellipsis.
        assert_eq!(one_line(&"x".repeat(10_000), 50).chars().count(), 51);
    }

    #[test]
    fn passages_are_read_in_and_out_of_the_envelope_and_bounded() {
        let o = Origin {
            tool: "mcp.two.rag_search",
            server: "two",
            max_bytes: 1000,
        };
        let bare = json!({"passages": [{"source": "a.md", "section": "S\nT", "text": "hello"}]});
        let p = passages(&o, &bare).unwrap();
        assert_eq!(p[0].source, "mcp.two:a.md");
        assert_eq!(p[0].section, "S T");
        let wrapped = json!({"success": true, "data": {"passages": [{"text": "x".repeat(9_000)}, {"text": "  "}]}});
        let p = passages(&o, &wrapped).unwrap();
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].text.chars().count(), MAX_PASSAGE_CHARS);
        assert_eq!(p[0].source, "mcp.two:");
        for other in [
            json!({"passages": "no"}),
            json!({"passages": [1, 2]}),
            json!([]),
        ] {
            assert!(passages(&o, &other).is_none(), "{other}");
        }
    }
}
