//! `grace mcp`: GRACE as a Model Context Protocol tool server on stdio
//! (rmcp). It exposes
//!
//! - the registry's tools (`rag_search`, `reasoning`, `ask_user`) with the
//!   registry's own JSON schemas, called through the registry so each
//!   keeps its `tools.<name>` timeout and retries; and every other registry
//!   tool (`mcp.<server>.<tool>`, `web_*`, `rt.<name>`) whose `callers`
//!   include `mcp`, looked up at each list and call (tools join and leave);
//! - `ask` (a whole run: plan, search, answer, confidence, escalation; a
//!   `session_id` for follow-ups; with `planner.strategy: agent`, a
//!   question back to the asker goes through MCP elicitation when the
//!   client supports it, else comes back with a `run_id` that `ask`
//!   continues with `reply`),
//!   `ingest`, `list_escalations` and `answer_escalation`, bounded by
//!   `mcp.timeout_seconds`.
//!
//! `mcp.tools` lists what is offered (a registry tool must also be in
//! `tools.enabled`); by default `ask`, `rag_search` and `ingest`: the
//! escalation tools take any reviewer's name, so they are only for a client
//! trusted to act as every reviewer. Every result's structured content is
//! a JSON object `{success, data, error, suggestions}` (`isError` when
//! `success` is false); its text content is the gist for a model to read
//! ([`brief`]): `ask`'s answer, citations, confidence and decision, or
//! `rag_search`'s passages with source and score. `data` is that gist too,
//! unless the call asks for `detail: full` (the whole run or tool result);
//! arguments that do not match a tool's schema are a protocol error
//! (`invalid_params`), as is an unknown tool. Stdout carries the protocol
//! only; logs go to stderr.

use std::sync::Arc;
use std::time::Duration;

mod brief;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ElicitRequestParams,
    ElicitationAction, ElicitationSchema, Implementation, JsonObject, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::{ElicitationMode, Peer, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};

use crate::config::Caller;
use crate::exec::HumanReply;
use crate::review::{ReviewAnswer, Status, Viewer};
use crate::{
    config::Config,
    error::{Error, Result},
    service::{AskOptions, Grace},
};

/// Questions to the asker one `ask` call puts through MCP elicitation.
pub const MAX_ELICITATIONS: usize = 3;

/// Puts `request` to the client's user as a form with one `reply` field:
/// `Ok(None)` when the user declines, cancels or gives nothing; `Err` when
/// the request fails (the client does not answer within `wait`, or its
/// protocol forbids server requests).
async fn elicit(
    peer: &Peer<RoleServer>,
    request: &crate::tools::UserRequest,
    wait: Duration,
) -> std::result::Result<Option<String>, ()> {
    let mut message = format!("{}\n({})", request.question, request.reason);
    for (i, o) in request.options.iter().enumerate() {
        message.push_str(&format!("\n{}. {o}", i + 1));
    }
    let schema = ElicitationSchema::builder()
        .required_string_with("reply", |s| {
            s.description("your answer: an option's text or your own words")
        })
        .build()
        .map_err(|e| tracing::warn!(error = e, "cannot build the elicitation form"))?;
    let result = peer
        .create_elicitation_with_timeout(
            ElicitRequestParams::FormElicitationParams {
                meta: None,
                message,
                requested_schema: schema,
            },
            Some(wait),
        )
        .await;
    match result {
        Ok(r) if r.action == ElicitationAction::Accept => Ok(r
            .content
            .as_ref()
            .and_then(|c| c.get("reply"))
            .and_then(Value::as_str)
            .map(|s| crate::text::truncate_chars(s, crate::service::MAX_REPLY_CHARS).to_string())),
        Ok(_) => Ok(None),
        Err(e) => {
            tracing::warn!(error = %e, "MCP elicitation failed; the run_id goes back instead");
            Err(())
        }
    }
}

/// Names `mcp.tools` may list.
pub const MCP_TOOL_NAMES: &[&str] = &[
    "ask",
    "rag_search",
    "reasoning",
    "ask_user",
    "ingest",
    "list_escalations",
    "answer_escalation",
];

/// Serves MCP on stdin/stdout until the client closes stdin.
pub fn serve_stdio(config: Config) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::Server(format!("cannot start the runtime: {e}")))?;
    let server = McpServer::new(Grace::open(config)?)?;
    runtime.block_on(async move {
        let running = server
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| Error::Server(format!("MCP initialisation failed: {e}")))?;
        let reason = running
            .waiting()
            .await
            .map_err(|e| Error::Server(format!("MCP server stopped: {e}")))?;
        tracing::info!(?reason, "MCP client disconnected");
        Ok::<_, Error>(())
    })?;
    Ok(())
}

/// The MCP tool server over one [`Grace`] handle.
#[derive(Clone)]
pub struct McpServer {
    grace: Grace,
    /// The tools `mcp.tools` names (a built-in registry tool among them is
    /// offered only while its `callers` include `mcp`).
    tools: Arc<Vec<Tool>>,
    timeout: Duration,
    /// Sources are shown relative, never as the server's full paths.
    display: crate::display::SourceDisplay,
}

impl McpServer {
    /// The tools `mcp.tools` names that are available (a registry tool only
    /// when `tools.enabled` has it).
    pub fn new(grace: Grace) -> Result<Self> {
        let config = grace.config();
        let registry = grace.registry();
        let mut tools = Vec::new();
        for name in &config.mcp.tools {
            // Config is data; the names are checked here, against what this
            // server offers.
            if !MCP_TOOL_NAMES.contains(&name.as_str()) {
                return Err(crate::config::ConfigError::Invalid {
                    key: "mcp.tools".into(),
                    message: format!(
                        "unknown tool `{name}` (known: {})",
                        MCP_TOOL_NAMES.join(", ")
                    ),
                    file: None,
                    line: None,
                }
                .into());
            }
            let tool = match name.as_str() {
                "ask" if registry.get("reasoning").is_some() => tool(
                    "ask",
                    "Answer a question from the knowledge base with citations and a confidence \
                     in [0,1] that decides: answer, answer with a caveat, escalate to a human \
                     reviewer (the result carries review_id), or decline.",
                    brief::with_detail(&ask_schema()).0,
                    false,
                ),
                "ingest" => tool(
                    "ingest",
                    "Add or update documents (Markdown, text, reStructuredText, HTML) from files \
                     or folders on the server; unchanged files are skipped.",
                    ingest_schema(),
                    false,
                ),
                "list_escalations" => tool(
                    "list_escalations",
                    "Questions escalated to human reviewers, with their status and resolution.",
                    list_schema(),
                    true,
                ),
                "answer_escalation" => tool(
                    "answer_escalation",
                    "Answer an escalated question as a reviewer: free text or the number of an \
                     offered option; optionally promote the answer to the knowledge base.",
                    answer_schema(),
                    false,
                ),
                other => match registry.get(other) {
                    Some(t) => registry_tool(t.as_ref(), t.description().to_string()),
                    None => continue,
                },
            };
            tools.push(tool);
        }
        // Run-time tools' admin tools (seed 002), only when allowed.
        if crate::tools::runtime::mcp::offered(config) {
            for (name, description, schema, read_only) in crate::tools::runtime::mcp::tools() {
                tools.push(tool(name, description, schema, read_only));
            }
        }
        Ok(Self {
            timeout: Duration::from_secs_f64(config.mcp.timeout_seconds),
            display: crate::display::SourceDisplay::new(config),
            grace,
            tools: Arc::new(tools),
        })
    }

    /// The tools offered now: those `mcp.tools` names (a registry tool
    /// while its `callers` include `mcp`), then every other registry tool
    /// whose `callers` do.
    pub fn tools(&self) -> Vec<Tool> {
        let registry = self.grace.registry();
        let mut offered: Vec<Tool> = self
            .tools
            .iter()
            .filter(|t| !is_registry_builtin(&t.name) || registry.visible_to(&t.name, Caller::Mcp))
            .cloned()
            .collect();
        for entry in registry.catalogue(Caller::Mcp) {
            if is_registry_builtin(&entry.name) || offered.iter().any(|t| t.name == entry.name) {
                continue;
            }
            if let Some(t) = registry.get(&entry.name) {
                offered.push(registry_tool(t.as_ref(), entry.description));
            }
        }
        offered
    }

    /// The offered tool called `name`.
    fn find(&self, name: &str) -> Option<Tool> {
        self.tools().into_iter().find(|t| t.name == name)
    }

    /// A run that needs the asker's input: when the client supports MCP
    /// elicitation (form mode), the question is put to its user and the
    /// run continued with the reply (a declined or cancelled request
    /// continues it without one: the agent proceeds on its best
    /// assumption; a request that fails leaves the run waiting); at most
    /// [`MAX_ELICITATIONS`] times a call. Otherwise the outcome goes back
    /// as it is: `decision: needs_input`, the `clarification` and a
    /// `run_id` that `ask` with `run_id` and `reply` continues.
    async fn clarify(
        &self,
        mut outcome: crate::service::AskOutcome,
        peer: &Peer<RoleServer>,
    ) -> std::result::Result<crate::service::AskOutcome, Failure> {
        if !peer
            .supported_elicitation_modes()
            .contains(&ElicitationMode::Form)
        {
            return Ok(outcome);
        }
        let wait = Duration::from_secs_f64(self.grace.config().agent.reply_timeout_seconds);
        for _ in 0..MAX_ELICITATIONS {
            let (Some(run_id), Some(request)) =
                (outcome.run_id.clone(), outcome.report.clarification.clone())
            else {
                break;
            };
            // A client that cannot be asked after all (a protocol without
            // server requests): the run_id goes back instead.
            let Ok(reply) = elicit(peer, &request, wait).await else {
                break;
            };
            outcome = tokio::time::timeout(self.timeout, self.grace.reply(run_id, reply))
                .await
                .map_err(|_| self.timed_out())??;
        }
        Ok(outcome)
    }

    async fn call(
        &self,
        name: &str,
        args: Value,
        peer: &Peer<RoleServer>,
    ) -> std::result::Result<Value, Failure> {
        let grace = self.grace.clone();
        match name {
            "ask" if args.get("run_id").is_some() => {
                let run_id = args["run_id"].as_str().unwrap_or_default().to_string();
                let reply = args["reply"].as_str().map(str::to_string);
                let outcome = tokio::time::timeout(self.timeout, grace.reply(run_id, reply))
                    .await
                    .map_err(|_| self.timed_out())??;
                let outcome = self.clarify(outcome, peer).await?;
                Ok(serde_json::to_value(outcome).unwrap_or(Value::Null))
            }
            "ask" => {
                // Present and a string: `call_tool` checked both.
                let question = args["question"].as_str().unwrap_or_default().to_string();
                let session_id = match args["session_id"].as_str() {
                    Some("new") => {
                        let g = grace.clone();
                        Some(blocking(move || g.create_session()).await?.id)
                    }
                    other => other.map(str::to_string),
                };
                let options = AskOptions {
                    limit: args["limit"].as_u64().map(|n| n as usize),
                    asker: args["asker"].as_str().unwrap_or("mcp").to_string(),
                    session_id,
                    ..AskOptions::default()
                };
                let outcome = tokio::time::timeout(self.timeout, grace.ask(question, options))
                    .await
                    .map_err(|_| self.timed_out())??;
                let outcome = self.clarify(outcome, peer).await?;
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
            "list_escalations" => {
                let status: Option<Status> = match args["status"].as_str() {
                    Some(s) => Some(s.parse().map_err(|e: crate::review::ReviewError| {
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
                let resolution = blocking(move || {
                    let queue = grace.escalations();
                    let answer = ReviewAnswer {
                        reply,
                        sources: Vec::new(),
                        confidence: None,
                    };
                    let resolution = queue.answer(id, &reviewer, &answer)?;
                    if promote && resolution.outcome == crate::review::Outcome::Answered {
                        grace.promote_blocking(id, &reviewer)?;
                    }
                    Ok(queue.get(id, Viewer::Reviewer(&reviewer))?)
                })
                .await?;
                Ok(serde_json::to_value(resolution).unwrap_or(Value::Null))
            }
            // Run-time tools' admin tools (offered only when allowed).
            "create_tool" | "list_dynamic_tools" | "run_dynamic_tool" | "delete_dynamic_tool" => {
                let name = name.to_string();
                blocking(move || {
                    let (config, kb) = (grace.config(), grace.knowledge_base());
                    crate::tools::runtime::mcp::call(config, kb, grace.registry(), &name, &args)
                        .map_err(Error::InvalidInput)
                })
                .await
            }
            // A registry tool, under its own policy.
            tool => {
                let tool = tool.to_string();
                let result = blocking(move || Ok(grace.registry().call(&tool, &args))).await?;
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

    fn timed_out(&self) -> Failure {
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
struct Failure {
    error: String,
    suggestions: Vec<String>,
}

impl Failure {
    fn new(error: String, suggestions: Vec<String>) -> Self {
        Self { error, suggestions }
    }
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        let suggestions = match &e {
            Error::Review(crate::review::ReviewError::NotFound { .. }) => {
                vec!["call list_escalations for the ids you may see".into()]
            }
            Error::Review(crate::review::ReviewError::Conflict { .. }) => {
                vec!["only a pending or claimed escalation can be answered".into()]
            }
            Error::Ingest(crate::ingest::IngestError::PathNotFound { .. }) => {
                vec!["paths are read on the server running `grace mcp`".into()]
            }
            Error::Ingest(
                crate::ingest::IngestError::NotAllowed { .. }
                | crate::ingest::IngestError::RemotePathsOff,
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

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("grace", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "GRACE answers questions from a knowledge base and knows when it does not know: \
                 use `ask` for answers with citations and a confidence, `rag_search` for passages.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<CallToolResponse, McpError> {
        let Some(tool) = self.find(&request.name) else {
            let offered = self.tools();
            let names: Vec<&str> = offered.iter().map(|t| t.name.as_ref()).collect();
            return Err(McpError::invalid_params(
                format!(
                    "unknown or disabled tool `{}` (offered: {})",
                    request.name,
                    names.join(", ")
                ),
                None,
            ));
        };
        let mut args = Value::Object(request.arguments.unwrap_or_default());
        if let Err(problem) = check_arguments(&Value::Object((*tool.input_schema).clone()), &args) {
            return Err(McpError::invalid_params(
                format!("{}: {problem}", request.name),
                Some(json!({"schema": *tool.input_schema})),
            ));
        }
        let name = request.name.to_string();
        // `ask` takes a question, or a run_id to continue: one of the two.
        if name == "ask" && args.get("question").is_none() && args.get("run_id").is_none() {
            return Err(McpError::invalid_params(
                "ask: `question` is required (or `run_id` with `reply` to continue a run that needs input)",
                Some(json!({"schema": *tool.input_schema})),
            ));
        }
        // `detail` is GRACE's, not the tool's (unless the tool has its own).
        let own_detail = self
            .grace
            .registry()
            .get(&name)
            .is_some_and(|t| !brief::with_detail(&t.input_schema()).1);
        let full = if own_detail {
            false
        } else {
            brief::take_detail(&mut args)
        };
        let result = match self.call(&name, args, &context.peer).await {
            Ok(mut data) => {
                self.display.rewrite(&mut data);
                let (gist, text) = match name.as_str() {
                    "ask" => {
                        let b = brief::ask(&data);
                        let t = brief::ask_text(&b);
                        (b, t)
                    }
                    "ingest" | "list_escalations" | "answer_escalation" => {
                        let t = data.to_string();
                        (data.clone(), t)
                    }
                    _ => {
                        let b = brief::tool(&data);
                        let t = brief::tool_text(&b);
                        (b, t)
                    }
                };
                let mut r = CallToolResult::success(vec![ContentBlock::text(text)]);
                r.structured_content = Some(json!({
                    "success": true, "data": if full { data } else { gist },
                    "error": null, "suggestions": []
                }));
                r
            }
            Err(f) => {
                let mut r = CallToolResult::error(vec![ContentBlock::text(brief::failure_text(
                    &f.error,
                    &f.suggestions,
                ))]);
                r.structured_content = Some(json!({
                    "success": false, "data": null, "error": f.error, "suggestions": f.suggestions
                }));
                r
            }
        };
        Ok(result.into())
    }
}

/// Whether `name` is a built-in registry tool (offered when `mcp.tools`
/// names it and its `callers` include `mcp`).
fn is_registry_builtin(name: &str) -> bool {
    crate::tools::TOOL_NAMES.contains(&name)
}

/// A registry tool as MCP offers it: its schema with GRACE's `detail`
/// argument (unless it has its own), read-only when it is `rag_search`.
fn registry_tool(t: &dyn crate::tools::Tool, description: String) -> Tool {
    tool(
        t.name().to_string(),
        description,
        brief::with_detail(&t.input_schema()).0,
        t.name() == "rag_search",
    )
}

fn tool(
    name: impl Into<std::borrow::Cow<'static, str>>,
    description: impl Into<std::borrow::Cow<'static, str>>,
    schema: Value,
    read_only: bool,
) -> Tool {
    let schema: JsonObject = match schema {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    };
    Tool::new(name, description, schema)
        .with_annotations(ToolAnnotations::new().read_only(read_only))
}

/// Checks `args` against the subset of JSON Schema GRACE's schemas use:
/// `required`, `additionalProperties: false`, and each property's `type`,
/// `minLength`, `minimum`, `maximum`, `enum`.
pub fn check_arguments(schema: &Value, args: &Value) -> std::result::Result<(), String> {
    let Some(obj) = args.as_object() else {
        return Err("arguments must be a JSON object".into());
    };
    let props = schema["properties"].as_object();
    for field in schema["required"].as_array().into_iter().flatten() {
        if let Some(f) = field.as_str()
            && obj.get(f).is_none_or(Value::is_null)
        {
            return Err(format!("`{f}` is required"));
        }
    }
    for (key, value) in obj {
        let Some(spec) = props.and_then(|p| p.get(key)) else {
            if schema["additionalProperties"] == json!(false) {
                return Err(format!("unknown argument `{key}`"));
            }
            continue;
        };
        if value.is_null() {
            continue;
        }
        let ok = match spec["type"].as_str() {
            Some("string") => value.is_string(),
            Some("integer") => value.is_i64() || value.is_u64(),
            Some("number") => value.is_number(),
            Some("boolean") => value.is_boolean(),
            Some("array") => value.is_array(),
            Some("object") => value.is_object(),
            _ => true,
        };
        if !ok {
            return Err(format!(
                "`{key}` must be of type {}, got {value}",
                spec["type"].as_str().unwrap_or("?")
            ));
        }
        if let (Some(min), Some(s)) = (spec["minLength"].as_u64(), value.as_str())
            && (s.trim().chars().count() as u64) < min
        {
            return Err(format!("`{key}` must not be empty"));
        }
        if let Some(n) = value.as_f64() {
            if spec["minimum"].as_f64().is_some_and(|m| n < m) {
                return Err(format!("`{key}` must be at least {}", spec["minimum"]));
            }
            if spec["maximum"].as_f64().is_some_and(|m| n > m) {
                return Err(format!("`{key}` must be at most {}", spec["maximum"]));
            }
        }
        if let Some(allowed) = spec["enum"].as_array()
            && !allowed.contains(value)
        {
            return Err(format!(
                "`{key}` must be one of {}",
                Value::Array(allowed.clone())
            ));
        }
    }
    Ok(())
}

fn ask_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "question": {"type": "string", "minLength": 1, "description": "the question"},
            "limit": {"type": "integer", "minimum": 1, "maximum": crate::config::MAX_RAG_SEARCH_LIMIT, "description": "passages retrieved"},
            "asker": {"type": "string", "description": "who asks, shown to reviewers"},
            "run_id": {"type": "string", "pattern": "^run_[0-9a-f]{32}$",
                       "description": "continue a run that needs input (decision needs_input) with `reply`; `question` is then ignored"},
            "reply": {"type": "string", "maxLength": crate::service::MAX_REPLY_CHARS,
                      "description": "with run_id: the answer to the run's clarification question (absent: none, GRACE proceeds on its best assumption)"},
            "session_id": {"type": "string", "pattern": "^(new|ses_[0-9a-f]{32})$",
                           "description": "continue a conversation: the session_id an earlier ask returned, or \"new\" to start one; follow-ups are read against its earlier turns"}
        },
        "required": [],
        "additionalProperties": false
    })
}

fn ingest_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "paths": {"type": "array", "items": {"type": "string"}, "minItems": 1,
                      "description": "files, folders or glob patterns on the server"},
            "prune": {"type": "boolean", "description": "remove chunks of files gone from the folders"}
        },
        "required": ["paths"],
        "additionalProperties": false
    })
}

fn list_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "status": {"type": "string", "enum": ["pending", "claimed", "answered", "rejected", "expired", "cancelled"]},
            "reviewer": {"type": "string", "description": "list as this reviewer (restricted escalations)"}
        },
        "additionalProperties": false
    })
}

fn answer_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "id": {"type": "integer", "minimum": 1},
            "reviewer": {"type": "string", "minLength": 1, "description": "a registered reviewer id"},
            "text": {"type": "string", "minLength": 1, "description": "the answer in the reviewer's words"},
            "option": {"type": "integer", "minimum": 1, "description": "the number of an offered option"},
            "promote": {"type": "boolean", "description": "add the answer to the knowledge base"}
        },
        "required": ["id", "reviewer"],
        "additionalProperties": false
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_checked_against_the_schema() {
        let s = ask_schema();
        assert!(check_arguments(&s, &json!({"question": "why?"})).is_ok());
        assert!(check_arguments(&s, &json!({"question": "why?", "limit": 3})).is_ok());
        // `ask` takes a question or a run_id: the call checks which.
        assert!(check_arguments(&s, &json!({})).is_ok());
        assert_eq!(
            check_arguments(&answer_schema(), &json!({"reviewer": "alice"})).unwrap_err(),
            "`id` is required"
        );
        assert!(
            check_arguments(&s, &json!({"question": 3}))
                .unwrap_err()
                .contains("type string")
        );
        assert!(
            check_arguments(&s, &json!({"question": " "}))
                .unwrap_err()
                .contains("empty")
        );
        assert!(
            check_arguments(&s, &json!({"question": "q", "limit": 0}))
                .unwrap_err()
                .contains("at least")
        );
        assert!(
            check_arguments(&s, &json!({"question": "q", "x": 1}))
                .unwrap_err()
                .contains("unknown argument")
        );
        let l = list_schema();
        assert!(
            check_arguments(&l, &json!({"status": "lost"}))
                .unwrap_err()
                .contains("one of")
        );
    }
}
