//! `rag_search {query, limit?, filter?}`: ranked passages from the knowledge
//! base with the retrieval factors of the confidence model.

use crate::access::ReadScope;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use super::{Tool, ToolError, ToolErrorKind, ToolOutput, ToolResult, required_str};
use crate::confidence::{Factor, retrieval_factors};

/// Nearest passages the top passage is compared with (its neighbourhood).
const NEIGHBOURS: usize = 10;
use crate::config::MAX_RAG_SEARCH_LIMIT;
use crate::store::PayloadFilter;
use crate::{error::Error, kb::KnowledgeBase};

/// Longest `focus` (characters).
const MAX_FOCUS_CHARS: usize = 4_000;

/// Vector search over a knowledge base.
pub struct RagSearch {
    kb: Arc<KnowledgeBase>,
    default_limit: usize,
    withheld: Withheld,
}

impl RagSearch {
    /// The tool's name, as plans, the agent and callers name it.
    pub const NAME: &'static str = crate::config::RAG_SEARCH;
}

/// Points a [`RagSearch`] leaves out of every result and every neighbour
/// score, set from outside between questions: self-calibration withholds
/// the section a question was built from, to ask it as a question the
/// collection cannot answer. Clones share one set.
#[derive(Debug, Clone, Default)]
pub struct Withheld(Arc<Mutex<Vec<u64>>>);

impl Withheld {
    /// Withholds these points (and no others) from now on.
    pub fn set(&self, ids: Vec<u64>) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = ids;
    }

    /// The points withheld now.
    pub fn ids(&self) -> Vec<u64> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl RagSearch {
    /// A `rag_search` tool over `kb`, returning `default_limit` passages when a
    /// call gives no `limit`.
    pub fn new(kb: Arc<KnowledgeBase>, default_limit: usize) -> Self {
        Self::withholding(kb, default_limit, Withheld::default())
    }

    /// The same, leaving out the points `withheld` holds at each call.
    pub fn withholding(kb: Arc<KnowledgeBase>, default_limit: usize, withheld: Withheld) -> Self {
        Self {
            kb,
            default_limit,
            withheld,
        }
    }
}

impl Tool for RagSearch {
    fn name(&self) -> &str {
        RagSearch::NAME
    }

    fn description(&self) -> &str {
        "Search the knowledge base; returns ranked passages with their source, section and similarity."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 1, "description": "what to look for"},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_RAG_SEARCH_LIMIT},
                "focus": {"type": "string", "maxLength": MAX_FOCUS_CHARS,
                          "description": "when `query` is a follow-up made standalone, the follow-up as typed: its own words must be found too"},
                "filter": {
                    "type": "object",
                    "description": "payload fields that must equal the given strings, e.g. {\"source\": \"/kb/a.md\"}",
                    "additionalProperties": {"type": "string"}
                }
            },
            "required": ["query"],
            "additionalProperties": false
        })
    }

    fn execute(&self, input: &Value, scope: &ReadScope) -> Result<ToolResult, ToolError> {
        let invalid = |m: String| ToolError::new(RagSearch::NAME, ToolErrorKind::InvalidInput, m);
        let query = required_str(RagSearch::NAME, input, "query")?;
        let limit = match input.get("limit") {
            None | Some(Value::Null) => self.default_limit,
            Some(v) => v
                .as_u64()
                .filter(|n| (1..=MAX_RAG_SEARCH_LIMIT as u64).contains(n))
                .ok_or_else(|| {
                    invalid(format!(
                        "`limit` must be an integer in 1..={MAX_RAG_SEARCH_LIMIT}, got {v}"
                    ))
                })? as usize,
        };
        let filter = match input.get("filter") {
            None | Some(Value::Null) => None,
            Some(Value::Object(map)) => {
                let mut f = PayloadFilter::default();
                for (k, v) in map {
                    let v = v.as_str().ok_or_else(|| {
                        invalid(format!("filter value of `{k}` must be a string"))
                    })?;
                    f.must.push((k.clone(), v.to_string()));
                }
                Some(f)
            }
            Some(other) => return Err(invalid(format!("`filter` must be an object, got {other}"))),
        };
        // What the caller may not read, and what self-calibration
        // withholds, is left out of the rankings and the neighbours alike.
        let readers = scope.tokens();
        let withheld = self.withheld.ids();
        let neighbour_filter = PayloadFilter {
            exclude_ids: withheld.clone(),
            readers: readers.clone(),
            ..PayloadFilter::default()
        };
        let neighbour_filter = (!neighbour_filter.is_empty()).then_some(neighbour_filter);
        let filter = PayloadFilter {
            exclude_ids: withheld,
            readers,
            ..filter.unwrap_or_default()
        };
        let filter = (!filter.is_empty()).then_some(filter);
        let passages = self
            .kb
            .search(query, Some(limit), filter.as_ref())
            .map_err(|e| match &e {
                Error::InvalidInput(m) => invalid(m.clone()),
                Error::Store(s) if s.is_transient() => {
                    ToolError::new(RagSearch::NAME, ToolErrorKind::Transient, e.to_string())
                }
                _ => ToolError::new(RagSearch::NAME, ToolErrorKind::Failed, e.to_string()),
            })?;
        let focus = match input.get("focus") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if s.chars().count() <= MAX_FOCUS_CHARS => Some(s.as_str()),
            Some(other) => {
                return Err(invalid(format!(
                    "`focus` must be a string of at most {MAX_FOCUS_CHARS} characters, got {}",
                    crate::text::truncate_chars(&other.to_string(), 80)
                )));
            }
        };
        let mut factors = retrieval_factors(self.kb.lexical(), query, focus, &passages);
        if let Some(top) = passages.first() {
            // Evidence, not a requirement: a failure here only leaves the factor out.
            match self
                .kb
                .neighbour_similarity(top, NEIGHBOURS, neighbour_filter.as_ref())
            {
                Ok(Some(s)) => {
                    factors.set(Factor::NeighbourScore, s);
                }
                Ok(None) => {}
                Err(e) => tracing::warn!(error = %e, "neighbour similarity of the top passage"),
            }
        }
        let mut sources: Vec<String> = Vec::new();
        for p in &passages {
            if !sources.contains(&p.source) {
                sources.push(p.source.clone());
            }
        }
        let mut result = ToolResult::ok(ToolOutput::Passages(passages), sources, factors);
        if let ToolOutput::Passages(p) = &result.output
            && p.is_empty()
        {
            result.suggestions.push(
                "nothing matched: rephrase the query, drop the filter, or ingest the documents that answer it".into(),
            );
        }
        Ok(result)
    }
}
