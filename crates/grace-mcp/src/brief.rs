//! What an MCP client's model reads: a result's text content is the gist
//! in a few lines (an answer with its citations, confidence and decision;
//! passages with source and score), and its structured content the same
//! gist as JSON, unless the caller asks for `detail: full` (the whole
//! run: every step, passage, factor and weight). A model calling `ask`
//! then reads a few hundred bytes instead of the run's trace.

use serde_json::{Map, Value, json};

/// The argument that asks for the whole result.
pub const DETAIL: &str = "detail";
/// Characters of an answer's text kept in the brief.
const MAX_ANSWER_CHARS: usize = 8_000;
/// Characters of one passage's text in the brief's text content.
const MAX_PASSAGE_CHARS: usize = 600;
/// Characters of quoted data in the text content.
const MAX_DATA_CHARS: usize = 8_000;

/// `schema` with a `detail` property (`brief`, the default, or `full`),
/// unless it has its own `detail`; and whether it was added.
pub fn with_detail(schema: &Value) -> (Value, bool) {
    let mut schema = schema.clone();
    let Some(obj) = schema.as_object_mut() else {
        return (schema, false);
    };
    let props = obj
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    let Some(props) = props.as_object_mut() else {
        return (schema, false);
    };
    if props.contains_key(DETAIL) {
        return (schema, false);
    }
    props.insert(
        DETAIL.into(),
        json!({"type": "string", "enum": ["brief", "full"],
               "description": "brief (default): the gist in a few lines; full: the whole result as structured content"}),
    );
    (schema, true)
}

/// Takes `detail` out of `args`: whether it asks for the full result.
pub fn take_detail(args: &mut Value) -> bool {
    args.as_object_mut()
        .and_then(|o| o.remove(DETAIL))
        .is_some_and(|v| v == "full")
}

fn round(v: &Value) -> Value {
    v.as_f64()
        .map_or(Value::Null, |f| json!((f * 1000.0).round() / 1000.0))
}

fn drop_nulls(mut v: Value) -> Value {
    if let Some(o) = v.as_object_mut() {
        o.retain(|_, x| !x.is_null());
    }
    v
}

/// The gist of an `ask` outcome (its JSON, sources already shown
/// relative): answer, citations, confidence, decision and the ids to go
/// on with.
pub fn ask(full: &Value) -> Value {
    let answer = &full["answer"];
    let citations: Vec<Value> = answer["citations"]
        .as_array()
        .filter(|_| full["decision"] != "escalate")
        .into_iter()
        .flatten()
        .map(|c| {
            drop_nulls(
                json!({"number": c["number"], "source": c["source"], "section": c["section"], "page": c["page"]}),
            )
        })
        .collect();
    let ask_back = |r: &Value| {
        (!r.is_null()).then(|| {
            drop_nulls(
                json!({"question": r["question"], "reason": r["reason"], "options": r["options"]}),
            )
        })
    };
    // A person was asked: GRACE's draft is theirs to check, never the
    // asker's answer; the asker has what GRACE found meanwhile.
    let escalated = full["decision"] == "escalate";
    let while_waiting = &full["while_waiting"];
    let possibly_relevant: Option<Vec<Value>> = while_waiting["possibly_relevant"]
        .as_array()
        .map(|ps| {
            ps.iter()
                .map(|p| {
                    drop_nulls(json!({
                        "source": p["source"], "section": p["section"], "page": p["page"],
                        "text": p["text"].as_str().map(|t| grace::text::ellipsized(t, MAX_PASSAGE_CHARS)),
                    }))
                })
                .collect()
        });
    drop_nulls(json!({
        "answer": answer["text"]
            .as_str()
            .filter(|_| !escalated)
            .map(|t| grace::text::ellipsized(t, MAX_ANSWER_CHARS)),
        "citations": citations,
        "confidence": round(&full["confidence"]),
        "level": full["level"],
        "decision": full["decision"],
        "status": full["status"],
        "rewritten_question": full["rewrite"]["question"],
        "possibly_relevant": possibly_relevant,
        "typical_review_seconds": round(&while_waiting["typical_review_seconds"]),
        "clarification": ask_back(&full["clarification"]),
        "review_id": full["review_id"],
        "review_handle": full["review_handle"],
        "session_id": full["session_id"],
        "run_id": full["run_id"],
        "answer_id": full["answer_id"],
    }))
}

/// The text content of an [`ask`] gist.
pub fn ask_text(b: &Value) -> String {
    let mut out = String::new();
    match b["answer"].as_str() {
        Some(a) => out.push_str(a),
        None if b["decision"] == "escalate" => {
            out.push_str("(no answer yet: GRACE was not sure enough, so a person has been asked)")
        }
        None => out.push_str("(no answer)"),
    }
    let cites: Vec<String> = b["citations"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            let mut s = format!("[{}] {}", c["number"], c["source"].as_str().unwrap_or("?"));
            if let Some(page) = c["page"].as_u64() {
                s.push_str(&format!(" p. {page}"));
            }
            if let Some(sec) = c["section"].as_str().filter(|s| !s.is_empty()) {
                s.push_str(&format!(" § {sec}"));
            }
            s
        })
        .collect();
    if !cites.is_empty() {
        out.push_str("\n\nSources:\n");
        out.push_str(&cites.join("\n"));
    }
    out.push_str(&format!(
        "\n\nConfidence: {} ({}); decision: {}",
        b["confidence"],
        b["level"].as_str().unwrap_or("?"),
        b["decision"].as_str().unwrap_or("?")
    ));
    if let Some(q) = b["rewritten_question"].as_str() {
        out.push_str(&format!("\nRead as: {q}"));
    }
    if let Some(id) = b["review_id"].as_i64() {
        out.push_str(&format!(
            "\nA person has been asked: review_id {id} (`grace answer {id}`, or GET \
             /v1/escalations/{id} with the review_handle, gives their answer)"
        ));
        if let Some(seconds) = b["typical_review_seconds"].as_f64() {
            out.push_str(&format!(
                " (people here usually answer within {})",
                grace::text::duration_words(seconds)
            ));
        }
    }
    if let Some(passages) = b["possibly_relevant"].as_array().filter(|p| !p.is_empty()) {
        out.push_str("\nPossibly relevant while a person checks (not an answer):");
        for (i, p) in passages.iter().enumerate() {
            out.push_str(&format!(
                "\n{}. {}",
                i + 1,
                p["source"].as_str().unwrap_or("?")
            ));
            if let Some(s) = p["section"].as_str().filter(|s| !s.is_empty()) {
                out.push_str(&format!(" § {s}"));
            }
            out.push_str(&format!(
                "\n   {}",
                p["text"].as_str().unwrap_or("").replace('\n', " ")
            ));
        }
    }
    if let Some(q) = b["clarification"]["question"].as_str() {
        out.push_str(&format!(
            "\nNeeds the asker's input: {q}\nContinue with ask {{\"run_id\": {}, \"reply\": \"…\"}}",
            b["run_id"]
        ));
    }
    if let Some(s) = b["session_id"].as_str() {
        out.push_str(&format!("\nSession: {s}"));
    }
    out
}

/// The gist of a registry tool's result (its JSON): passages with
/// source, section, text and score; an answer with citations; a question
/// for a human; another tool's data, or a reply that is not a tool
/// result, as it came.
pub fn tool(full: &Value) -> Value {
    let data = &full["output"]["data"];
    match full["output"]["type"].as_str() {
        Some("passages") => {
            let passages: Vec<Value> = data
                .as_array()
                .into_iter()
                .flatten()
                .map(|p| {
                    drop_nulls(json!({
                        "source": p["source"], "section": p["section"], "page": p["page"],
                        "text": p["text"], "score": round(&p["score"]),
                    }))
                })
                .collect();
            json!({"passages": passages})
        }
        Some("answer") => drop_nulls(json!({
            "answer": data["text"],
            "citations": data["citations"],
            "abstained": data["abstained"],
        })),
        Some("user_request") => drop_nulls(json!({
            "question": data["question"], "reason": data["reason"], "options": data["options"],
        })),
        Some("data") => json!({"data": data}),
        // Not a tool result (the run-time admin tools' own replies): as it is.
        _ if full.get("output").is_none() && !full.is_null() => json!({"data": full}),
        _ => json!({}),
    }
}

/// The text content of a [`tool`] gist.
pub fn tool_text(b: &Value) -> String {
    if let Some(passages) = b["passages"].as_array() {
        if passages.is_empty() {
            return "No passages found.".into();
        }
        let lines: Vec<String> = passages
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let mut head = format!("{}. {}", i + 1, p["source"].as_str().unwrap_or("?"));
                if let Some(page) = p["page"].as_u64() {
                    head.push_str(&format!(" p. {page}"));
                }
                if let Some(s) = p["section"].as_str().filter(|s| !s.is_empty()) {
                    head.push_str(&format!(" § {s}"));
                }
                format!(
                    "{head} (score {})\n   {}",
                    p["score"],
                    grace::text::ellipsized(p["text"].as_str().unwrap_or(""), MAX_PASSAGE_CHARS)
                        .replace('\n', " ")
                )
            })
            .collect();
        return lines.join("\n");
    }
    if let Some(a) = b["answer"].as_str() {
        return a.to_string();
    }
    if let Some(q) = b["question"].as_str() {
        return format!("Question for a human: {q}");
    }
    match b.get("data") {
        Some(Value::String(s)) => grace::text::ellipsized(s, MAX_DATA_CHARS),
        Some(v) => grace::text::ellipsized(&v.to_string(), MAX_DATA_CHARS),
        None => "Done.".into(),
    }
}

/// The text content of a failed call.
pub fn failure_text(error: &str, suggestions: &[String]) -> String {
    let mut out = format!("Error: {error}");
    for s in suggestions {
        out.push_str(&format!("\nTry: {s}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_that_is_not_a_tool_result_is_kept_as_data() {
        let reply = json!({"tool": "rt.word_count", "version": 2, "status": "verified"});
        let b = tool(&reply);
        assert_eq!(b, json!({"data": reply}));
        assert!(tool_text(&b).contains("\"status\":\"verified\""));
    }

    #[test]
    fn detail_is_added_unless_the_tool_has_its_own() {
        let (s, added) = with_detail(&json!({"type": "object", "additionalProperties": false}));
        assert!(added);
        assert_eq!(s["properties"]["detail"]["enum"], json!(["brief", "full"]));
        let own = json!({"type": "object", "properties": {"detail": {"type": "integer"}}});
        assert_eq!(with_detail(&own), (own.clone(), false));
        let mut args = json!({"q": "x", "detail": "full"});
        assert!(take_detail(&mut args));
        assert_eq!(args, json!({"q": "x"}));
        assert!(!take_detail(&mut json!({"detail": "brief"})));
    }

    #[test]
    fn an_escalated_outcome_shows_what_was_found_never_the_draft() {
        let full = json!({
            "question": "q", "status": "escalated", "confidence": 0.55, "level": "low",
            "decision": "escalate", "review_id": 12, "review_handle": "h",
            "answer": {"text": "DRAFT rotate it [1].", "citations": [{"number": 1, "source": "a.md"}],
                       "generator": "x", "usage": {}},
            "escalation": {"question": "q", "reason": "r", "options": ["Confirm this answer: DRAFT"]},
            "while_waiting": {"possibly_relevant": [{"source": "a.md", "section": "Keys", "text": "Rotate keys with orbit."}],
                              "typical_review_seconds": 600.0},
        });
        let b = ask(&full);
        assert!(
            b.get("answer").is_none() && b.get("escalation").is_none(),
            "{b}"
        );
        assert_eq!(b["citations"], json!([]));
        assert_eq!(b["possibly_relevant"][0]["section"], "Keys");
        let t = ask_text(&b);
        assert!(!t.contains("DRAFT"), "{t}");
        assert!(
            t.contains("review_id 12") && t.contains("within 10 min"),
            "{t}"
        );
        assert!(
            t.contains("Possibly relevant while a person checks (not an answer):\n1. a.md § Keys\n   Rotate keys with orbit."),
            "{t}"
        );
    }

    #[test]
    fn an_outcome_becomes_a_few_lines() {
        let full = json!({
            "question": "q", "status": "answered", "confidence": 0.812345, "level": "high",
            "decision": "answer", "review_id": null, "session_id": "ses_1",
            "answer": {"text": "Rotate it [1].", "citations": [{"number": 1, "source": "a.md", "section": "Keys"}],
                       "generator": "x", "usage": {}},
            "steps": [{"id": "s1", "huge": "x".repeat(10_000)}],
        });
        let b = ask(&full);
        assert_eq!(b["confidence"], json!(0.812));
        assert!(b.get("steps").is_none() && b.get("review_id").is_none());
        let t = ask_text(&b);
        assert!(t.starts_with("Rotate it [1]."), "{t}");
        assert!(
            t.contains("[1] a.md § Keys") && t.contains("decision: answer"),
            "{t}"
        );
        assert!(t.len() < 300, "{t}");
    }
}
