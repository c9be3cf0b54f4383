//! `web_search`: a configured search endpoint (a SearXNG instance's JSON
//! API by default) asked under the web address policy; its results come
//! back as bounded data (title, URL, snippet), http(s) URLs only, for
//! `web_fetch` to read.

use crate::access::ReadScope;
use std::time::Instant;

use serde_json::{Value, json};

use super::client::{Client, read_body, shown};
use super::guard::{AddressPolicy, MAX_URL_CHARS, parse_url};
use super::{WebError, deadline_in, run};
use crate::confidence::Factors;
use crate::config::WebConfig;
use crate::tools::{Origin, Tool, ToolError, ToolErrorKind, ToolOutput, ToolResult};

const NAME: &str = "web_search";

/// Bytes of the endpoint's response read at most.
const MAX_RESPONSE_BYTES: usize = 2 * 1024 * 1024;
/// Characters of a query at most.
const MAX_QUERY_CHARS: usize = 500;
/// Characters of a result's title and snippet at most.
const MAX_TITLE_CHARS: usize = 200;
const MAX_SNIPPET_CHARS: usize = 500;
/// Results of the response looked at at most (invalid ones are skipped).
const MAX_SCANNED: usize = 200;

/// The `web_search` tool.
pub struct WebSearch {
    client: Client,
    endpoint: reqwest::Url,
    query_param: String,
    params: Vec<(String, String)>,
    timeout_seconds: f64,
    max_results: usize,
}

impl WebSearch {
    /// The tool as `tools.web` configures it; an endpoint that is not an
    /// http(s) URL is refused here.
    pub fn new(web: &WebConfig) -> Result<Self, ToolError> {
        let s = &web.search;
        let endpoint = parse_url(&s.endpoint, "tools.web.search.endpoint")
            .map_err(|e| e.into_tool_error(NAME))?;
        Ok(Self {
            client: Client {
                policy: AddressPolicy::new(&web.allow_hosts),
                user_agent: web.fetch.user_agent.clone(),
                max_redirects: web.fetch.max_redirects,
            },
            endpoint,
            query_param: s.query_param.clone(),
            params: s
                .params
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            timeout_seconds: s.timeout_seconds,
            max_results: s.max_results,
        })
    }

    /// The endpoint's JSON answer for `query`, by `deadline`.
    async fn search(&self, query: &str, deadline: Instant) -> Result<Value, WebError> {
        let mut url = self.endpoint.clone();
        {
            let mut q = url.query_pairs_mut();
            for (k, v) in &self.params {
                q.append_pair(k, v);
            }
            q.append_pair(&self.query_param, query);
        }
        let opened = self
            .client
            .open(&url, "application/json", None, deadline)
            .await?;
        let status = opened.response.status();
        let shown_url = shown(&self.endpoint);
        if status.is_server_error() || status.as_u16() == 429 {
            return Err(WebError::Network(format!(
                "the search endpoint {shown_url} answered HTTP {}",
                status.as_u16()
            )));
        }
        if !status.is_success() {
            return Err(WebError::Failed(format!(
                "the search endpoint {shown_url} answered HTTP {} (check \
                 tools.web.search.endpoint and params)",
                status.as_u16()
            )));
        }
        let body = read_body(opened.response, MAX_RESPONSE_BYTES, deadline).await?;
        if body.cut {
            return Err(WebError::Failed(format!(
                "the search endpoint {shown_url} answered more than {MAX_RESPONSE_BYTES} bytes"
            )));
        }
        serde_json::from_slice(&body.bytes).map_err(|e| {
            WebError::Failed(format!(
                "the search endpoint {shown_url} did not answer JSON ({e}); SearXNG needs \
                 `format: json` in tools.web.search.params and json among its formats"
            ))
        })
    }
}

impl Tool for WebSearch {
    fn name(&self) -> &str {
        NAME
    }

    fn description(&self) -> &str {
        "Search the web for a query; returns titles, URLs and snippets (untrusted quoted \
         material). Read a promising result with web_fetch."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to search for."},
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": self.max_results,
                    "description": "Results to return at most."
                }
            },
            "required": ["query"],
            "additionalProperties": false
        })
    }

    fn origin(&self) -> Origin {
        Origin::Web
    }

    fn execute(&self, input: &Value, _scope: &ReadScope) -> Result<ToolResult, ToolError> {
        let query = crate::tools::required_str(NAME, input, "query")?;
        if query.chars().count() > MAX_QUERY_CHARS {
            return Err(ToolError::new(
                NAME,
                ToolErrorKind::InvalidInput,
                format!("`query` is longer than {MAX_QUERY_CHARS} characters"),
            ));
        }
        let limit = match input.get("limit") {
            None | Some(Value::Null) => self.max_results,
            Some(v) => match v.as_u64() {
                Some(n) if n >= 1 => usize::try_from(n)
                    .unwrap_or(usize::MAX)
                    .min(self.max_results),
                _ => {
                    return Err(ToolError::new(
                        NAME,
                        ToolErrorKind::InvalidInput,
                        format!("`limit` must be a positive integer, got {v}"),
                    ));
                }
            },
        };
        let deadline = deadline_in(self.timeout_seconds);
        let response = run(NAME, deadline, self.search(query, deadline))?;
        let results = results(&response, limit).map_err(|e| e.into_tool_error(NAME))?;
        let sources = results
            .iter()
            .filter_map(|r| r["url"].as_str().map(str::to_string))
            .collect();
        Ok(ToolResult::ok(
            ToolOutput::Data(json!({ "results": results })),
            sources,
            Factors::default(),
        ))
    }
}

/// The SearXNG shape (`{results: [{title, url, content}]}`) as at most
/// `limit` bounded results with http(s) URLs.
fn results(response: &Value, limit: usize) -> Result<Vec<Value>, WebError> {
    let Some(list) = response.get("results").and_then(Value::as_array) else {
        return Err(WebError::Failed(
            "the search endpoint's answer has no `results` list (tools.web.search.shape: \
             searxng expects {results: [{title, url, content}]})"
                .into(),
        ));
    };
    let text = |v: &Value, key: &str, max: usize| {
        v.get(key)
            .and_then(Value::as_str)
            .map(|s| crate::text::ellipsized(s.trim(), max))
            .unwrap_or_default()
    };
    Ok(list
        .iter()
        .take(MAX_SCANNED)
        .filter_map(|r| {
            let url = r.get("url").and_then(Value::as_str)?;
            if url.len() > MAX_URL_CHARS {
                return None;
            }
            let url = parse_url(url, "a result").ok()?;
            Some(json!({
                "title": text(r, "title", MAX_TITLE_CHARS),
                "url": url.as_str(),
                "snippet": text(r, "content", MAX_SNIPPET_CHARS),
            }))
        })
        .take(limit)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_are_bounded_and_only_http() {
        let long = "x".repeat(5_000);
        let response = json!({"results": [
            {"title": long, "url": "https://example.com/a", "content": long},
            {"title": "file", "url": "file:///etc/passwd", "content": "no"},
            {"title": "js", "url": "javascript:alert(1)"},
            {"title": "creds", "url": "http://u:p@example.com/"},
            {"title": "no url"},
            {"title": 5, "url": "http://example.org/b"},
            {"title": "c", "url": "http://example.org/c"},
        ]});
        let r = results(&response, 2).unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(r[0]["title"].as_str().unwrap().chars().count(), 201);
        assert_eq!(r[0]["snippet"].as_str().unwrap().chars().count(), 501);
        assert_eq!(r[1]["url"], "http://example.org/b");
        assert_eq!(r[1]["title"], "");
        assert!(results(&json!({"hits": []}), 5).is_err());
        assert!(results(&json!([1, 2]), 5).is_err());
    }
}
