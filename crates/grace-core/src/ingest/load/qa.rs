//! Q&A tables: a FAQ exported as CSV (a header row) or JSON lines. The
//! columns `ingest.qa_question_column` and `ingest.qa_answer_column` name
//! the question and the answer; each row becomes one section whose heading
//! is its question, so the question is indexed with its answer and shown
//! in citations. Rows without both are left out.

use super::{Document, Limits, LoadError, Section};

/// Column names quoted in a "no such column" message, at most.
const NAMES_SHOWN: usize = 12;

pub(super) fn load_csv(text: &str, limits: &Limits) -> Result<Document, LoadError> {
    let mut reader = csv::ReaderBuilder::new()
        .flexible(true)
        .from_reader(text.as_bytes());
    let malformed = |e: csv::Error| LoadError::Malformed {
        format: "CSV",
        message: e.to_string(),
    };
    let header: Vec<String> = reader
        .headers()
        .map_err(malformed)?
        .iter()
        .map(|h| h.trim().to_string())
        .collect();
    let q = column(&header, &limits.qa_question, "ingest.qa_question_column")?;
    let a = column(&header, &limits.qa_answer, "ingest.qa_answer_column")?;
    let mut rows = Rows::new(limits);
    for record in reader.records() {
        let record = record.map_err(malformed)?;
        rows.push(record.get(q), record.get(a))?;
    }
    Ok(rows.finish())
}

pub(super) fn load_jsonl(text: &str, limits: &Limits) -> Result<Document, LoadError> {
    let mut rows = Rows::new(limits);
    let mut keys_seen: Vec<String> = Vec::new();
    let mut any_question = false;
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let value: serde_json::Value =
            serde_json::from_str(line).map_err(|e| LoadError::Malformed {
                format: "JSONL",
                message: format!("line {}: {e}", i + 1),
            })?;
        let Some(object) = value.as_object() else {
            return Err(LoadError::Malformed {
                format: "JSONL",
                message: format!("line {}: not a JSON object", i + 1),
            });
        };
        if keys_seen.is_empty() {
            keys_seen = object.keys().take(NAMES_SHOWN).cloned().collect();
        }
        let field = |name: &str| object.get(name).and_then(scalar);
        let question = field(&limits.qa_question);
        any_question |= question.is_some();
        rows.push(question.as_deref(), field(&limits.qa_answer).as_deref())?;
    }
    if !any_question {
        return Err(missing(
            &limits.qa_question,
            "ingest.qa_question_column",
            &keys_seen,
        ));
    }
    Ok(rows.finish())
}

/// A string, number or boolean as text; other values are not an answer.
fn scalar(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        serde_json::Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// The index of column `name` (case and surrounding spaces ignored).
fn column(header: &[String], name: &str, key: &'static str) -> Result<usize, LoadError> {
    header
        .iter()
        .position(|h| h.eq_ignore_ascii_case(name.trim()))
        .ok_or_else(|| missing(name, key, header))
}

fn missing(name: &str, key: &'static str, found: &[String]) -> LoadError {
    let found = if found.is_empty() {
        "no columns".to_string()
    } else {
        let names: Vec<String> = found
            .iter()
            .take(NAMES_SHOWN)
            .map(|n| format!("`{}`", n.chars().take(40).collect::<String>()))
            .collect();
        format!("columns {}", names.join(", "))
    };
    LoadError::MissingColumn {
        column: name.to_string(),
        key,
        found,
    }
}

/// The rows read so far, at most `ingest.max_pages`.
struct Rows {
    sections: Vec<Section>,
    limit: usize,
}

impl Rows {
    fn new(limits: &Limits) -> Self {
        Self {
            sections: Vec::new(),
            limit: limits.max_pages,
        }
    }

    fn push(&mut self, question: Option<&str>, answer: Option<&str>) -> Result<(), LoadError> {
        let (Some(q), Some(a)) = (question, answer) else {
            return Ok(());
        };
        let q = q.split_whitespace().collect::<Vec<_>>().join(" ");
        if q.is_empty() || a.trim().is_empty() {
            return Ok(());
        }
        if self.sections.len() >= self.limit {
            return Err(LoadError::TooMany {
                what: "rows",
                limit: self.limit,
                key: "ingest.max_pages",
            });
        }
        self.sections.push(Section {
            headings: vec![q],
            text: a.to_string(),
            page: None,
        });
        Ok(())
    }

    fn finish(self) -> Document {
        Document {
            title: None,
            sections: self.sections,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Format, load, outline};
    use super::*;

    #[test]
    fn csv_rows_become_sections_headed_by_their_question() {
        let csv = "id, Question ,Answer\n1,How do I reset my password?,\"Open Settings, then \"\"Reset\"\".\"\n2,,no question\n3,Only a question\n";
        let doc = load(csv.as_bytes(), Format::QaCsv, &Limits::default()).unwrap();
        assert_eq!(
            outline(&doc),
            [(
                vec!["How do I reset my password?"],
                "Open Settings, then \"Reset\"."
            )]
        );
    }

    #[test]
    fn jsonl_rows_and_configured_columns() {
        let limits = Limits {
            qa_question: "q".into(),
            qa_answer: "a".into(),
            ..Limits::default()
        };
        let jsonl = "{\"q\": \"Port?\", \"a\": 8080}\n\n{\"q\": \"Nested?\", \"a\": {\"x\": 1}}\n{\"q\": \"Why?\", \"a\": \"Because.\"}\n";
        let doc = load(jsonl.as_bytes(), Format::QaJsonl, &limits).unwrap();
        assert_eq!(
            outline(&doc),
            [(vec!["Port?"], "8080"), (vec!["Why?"], "Because.")]
        );
    }

    #[test]
    fn missing_columns_bad_lines_and_too_many_rows_are_refused() {
        let limits = Limits::default();
        let err = load(b"title,body\nx,y\n", Format::QaCsv, &limits).unwrap_err();
        assert_eq!(
            err.to_string(),
            "a Q&A table needs a `question` column (ingest.qa_question_column); it has columns `title`, `body`"
        );
        let err = load(b"{\"title\": 1}\n", Format::QaJsonl, &limits).unwrap_err();
        assert!(err.to_string().contains("columns `title`"), "{err}");
        let err = load(
            b"{\"question\": \"a\"}\nnot json\n",
            Format::QaJsonl,
            &limits,
        )
        .unwrap_err();
        assert!(err.to_string().contains("line 2"), "{err}");
        let err = load(b"[1,2]\n", Format::QaJsonl, &limits).unwrap_err();
        assert!(err.to_string().contains("not a JSON object"), "{err}");
        let deep = "[".repeat(100_000);
        assert!(load(deep.as_bytes(), Format::QaJsonl, &limits).is_err());
        let few = Limits {
            max_pages: 2,
            ..Limits::default()
        };
        let rows = "question,answer\n".to_string() + &"q,a\n".repeat(3);
        let err = load(rows.as_bytes(), Format::QaCsv, &few).unwrap_err();
        assert!(
            err.to_string()
                .contains("more than 2 rows (ingest.max_pages)"),
            "{err}"
        );
    }
}
