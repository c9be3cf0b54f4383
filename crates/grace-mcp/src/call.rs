//! What each offered tool does when called: `ask` (a question, or a run
//! continued with a reply), `ingest`, the escalation tools, the run-time
//! tools' admin tools and the registry's tools; and a failed call as the
//! client reads it.

use rmcp::RoleServer;
use rmcp::service::Peer;
use serde_json::Value;

use super::McpServer;
use grace::exec::HumanReply;
use grace::review::{ReviewAnswer, Status, Viewer};
use grace::service::AskOptions;
use grace::{Error, Result};

impl McpServer {
    pub(super) async fn call(
        &self,
        name: &str,
        args: Value,
        grace: &grace::service::Grace,
        peer: &Peer<RoleServer>,
    ) -> std::result::Result<Value, Failure> {
        let grace = grace.clone();
        match name {
            "ask" if args.get("run_id").is_some() => {
                let run_id = args["run_id"].as_str().unwrap_or_default().to_string();
                let reply = args["reply"].as_str().map(str::to_string);
                let outcome = tokio::time::timeout(
                    self.timeout,
                    grace.reply(run_id, reply, self.scope.clone()),
                )
                .await
                .map_err(|_| self.timed_out())??;
                let outcome = self.clarify(outcome, &grace, peer).await?;
                Ok(serde_json::to_value(outcome).unwrap_or(Value::Null))
            }
            "ask" => {
                // Present and a string: `call_tool` checked both.
                let question = args["question"].as_str().unwrap_or_default().to_string();
                let session_id = match args["session_id"].as_str() {
                    Some("new") => {
                        let g = grace.clone();
                        let scope = self.scope.clone();
                        Some(blocking(move || g.create_session_as(&scope)).await?.id)
                    }
                    other => other.map(str::to_string),
                };
                let options = AskOptions {
                    limit: args["limit"].as_u64().map(|n| n as usize),
                    asker: args["asker"].as_str().unwrap_or("mcp").to_string(),
                    session_id,
                    scope: self.scope.clone(),
                    ..AskOptions::default()
                };
                let outcome = tokio::time::timeout(self.timeout, grace.ask(question, options))
                    .await
                    .map_err(|_| self.timed_out())??;
                let outcome = self.clarify(outcome, &grace, peer).await?;
                Ok(serde_json::to_value(outcome).unwrap_or(Value::Null))
            }
            "ingest" => {
                let paths = args["paths"]
                    .as_array()
                    .map(|a| a.iter().filter_map(Value::as_str).map(Into::into).collect())
                    .unwrap_or_default();
                let prune = args["prune"].as_bool().unwrap_or(false);
                let report = tokio::time::timeout(self.timeout, grace.ingest_remote(paths, prune))
                    .await
                    .map_err(|_| self.timed_out())??;
                Ok(serde_json::to_value(report).unwrap_or(Value::Null))
            }
            "feedback" => {
                use grace::feedback::{Asker, Rating, Reason, Vote};
                // Present, strings and in their enums: `call_tool` checked.
                let id = args["answer_id"].as_str().unwrap_or_default().to_string();
                let asker = Asker::of(
                    args["session_id"].as_str(),
                    args["asker"].as_str().unwrap_or("mcp"),
                )
                .map_err(Error::from)?;
                let rating = Rating {
                    vote: if args["vote"] == "up" {
                        Vote::Up
                    } else {
                        Vote::Down
                    },
                    reason: args["reason"].as_str().and_then(Reason::parse),
                    text: args["text"].as_str().map(str::to_string),
                };
                let stored = grace.rate(id, asker, rating).await?;
                Ok(serde_json::to_value(stored).unwrap_or(Value::Null))
            }
            "list_escalations" => {
                let status: Option<Status> = match args["status"].as_str() {
                    Some(s) => Some(s.parse().map_err(|e: grace::review::ReviewError| {
                        Failure::new(e.to_string(), vec![])
                    })?),
                    None => None,
                };
                let reviewer = args["reviewer"].as_str().map(str::to_string);
                let list = blocking(move || {
                    let viewer = reviewer.as_deref().map_or(Viewer::Anyone, Viewer::Reviewer);
                    Ok(grace.escalations().list(viewer, status)?)
                })
                .await?;
                Ok(serde_json::to_value(list).unwrap_or(Value::Null))
            }
            "answer_escalation" => {
                let id = args["id"].as_i64().unwrap_or_default();
                let reviewer = args["reviewer"].as_str().unwrap_or_default().to_string();
                let reply = match (args["text"].as_str(), args["option"].as_u64()) {
                    (Some(t), None) => HumanReply::Text(t.to_string()),
                    (None, Some(n)) => HumanReply::Option(n as usize),
                    _ => {
                        return Err(Failure::new(
                            "give exactly one of `text` and `option`".into(),
                            vec!["call list_escalations to see the offered options".into()],
                        ));
                    }
                };
                let promote = args["promote"].as_bool().unwrap_or(false);
                let verdict = args["verdict"]
                    .as_str()
                    .and_then(grace::review::Verdict::parse);
                let resolution = blocking(move || {
                    let queue = grace.escalations();
                    let answer = ReviewAnswer {
                        reply,
                        sources: Vec::new(),
                        confidence: None,
                        verdict,
                    };
                    let resolution = queue.answer(id, &reviewer, &answer)?;
                    if promote && resolution.outcome == grace::review::Outcome::Answered {
                        grace.promote_blocking(id, &reviewer)?;
                    }
                    // A verdict is a label.
                    grace.learn_if_due();
                    Ok(queue.get(id, Viewer::Reviewer(&reviewer))?)
                })
                .await?;
                Ok(serde_json::to_value(resolution).unwrap_or(Value::Null))
            }
            // Run-time tools' admin tools (offered only when allowed).
            #[cfg(feature = "js-tools")]
            "create_tool" | "list_dynamic_tools" | "run_dynamic_tool" | "delete_dynamic_tool" => {
                let name = name.to_string();
                let scope = self.scope.clone();
                blocking(move || {
                    let (config, kb) = (grace.config(), grace.knowledge_base());
                    grace::tools::runtime::mcp::call(
                        config,
                        kb,
                        grace.registry(),
                        &name,
                        &args,
                        &scope,
                    )
                    .map_err(Error::InvalidInput)
                })
                .await
            }
            // A registry tool, under its own policy.
            tool => {
                let tool = tool.to_string();
                let scope = self.scope.clone();
                let result = blocking(move || {
                    let result = grace.registry().call(&tool, &args, &scope);
                    grace.audit_tool_call(scope.label(), &tool, &result);
                    Ok(result)
                })
                .await?;
                if result.success {
                    Ok(serde_json::to_value(&result).unwrap_or(Value::Null))
                } else {
                    Err(Failure::new(
                        result.error.clone().unwrap_or_else(|| "failed".into()),
                        result.suggestions.clone(),
                    ))
                }
            }
        }
    }

    pub(super) fn timed_out(&self) -> Failure {
        Failure::new(
            format!(
                "no result within {:.0} s (mcp.timeout_seconds)",
                self.timeout.as_secs_f64()
            ),
            vec!["raise mcp.timeout_seconds, or ask a narrower question".into()],
        )
    }
}

/// A failed call, reported to the client as a result with `isError`.
pub(super) struct Failure {
    pub(super) error: String,
    pub(super) suggestions: Vec<String>,
}

impl Failure {
    fn new(error: String, suggestions: Vec<String>) -> Self {
        Self { error, suggestions }
    }
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        let suggestions = match &e {
            Error::Review(grace::review::ReviewError::NotFound { .. }) => {
                vec!["call list_escalations for the ids you may see".into()]
            }
            Error::Review(grace::review::ReviewError::Conflict { .. }) => {
                vec!["only a pending or claimed escalation can be answered".into()]
            }
            Error::Ingest(grace::ingest::IngestError::PathNotFound { .. }) => {
                vec!["paths are read on the server running `grace mcp`".into()]
            }
            Error::Ingest(
                grace::ingest::IngestError::NotAllowed { .. }
                | grace::ingest::IngestError::RemotePathsOff,
            ) => {
                vec!["name paths inside the server's ingest.allowed_roots".into()]
            }
            _ => Vec::new(),
        };
        Self::new(e.to_string(), suggestions)
    }
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T> + Send + 'static,
) -> std::result::Result<T, Failure> {
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => r.map_err(Failure::from),
        Err(e) => Err(Failure::new(format!("the call failed: {e}"), vec![])),
    }
}
