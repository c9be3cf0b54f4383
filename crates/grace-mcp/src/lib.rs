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
//!   `ingest`, `feedback` (the asker's rating of an answer `ask` gave, by
//!   its `answer_id`), `list_escalations` and `answer_escalation`, bounded by
//!   `mcp.timeout_seconds`.
//!
//! `mcp.tools` lists what is offered (a registry tool must also be in
//! `tools.enabled`); by default `ask`, `rag_search`, `ingest` and
//! `feedback`: the escalation tools take any reviewer's name, so they are
//! only for a client trusted to act as every reviewer. Every result's structured content is
//! a JSON object `{success, data, error, suggestions}` (`isError` when
//! `success` is false); its text content is the gist for a model to read
//! (`brief`): `ask`'s answer, citations, confidence and decision, or
//! `rag_search`'s passages with source and score. `data` is that gist too,
//! unless the call asks for `detail: full` (the whole run or tool result);
//! arguments that do not match a tool's schema are a protocol error
//! (`invalid_params`), as is an unknown tool. Stdout carries the protocol
//! only; logs go to stderr.

#![warn(missing_docs)]

use grace::tools::{AskUser, RagSearch, Reasoning};
use std::sync::Arc;
use std::time::Duration;

mod brief;
mod call;
mod elicit;
mod schema;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};

pub use self::elicit::MAX_ELICITATIONS;
use self::schema::{answer_schema, ask_schema, feedback_schema, ingest_schema, list_schema};
use grace::config::Caller;
pub use grace::tools::check_arguments;
use grace::{
    Error, Result,
    config::{Config, DEFAULT_KB},
    service::{Grace, kbs::Kbs},
};

/// The argument every tool takes to name its knowledge base.
pub const KB_ARGUMENT: &str = "kb";

/// Names `mcp.tools` may list.
pub const MCP_TOOL_NAMES: &[&str] = &[
    "ask",
    RagSearch::NAME,
    Reasoning::NAME,
    AskUser::NAME,
    "ingest",
    "feedback",
    "list_escalations",
    "answer_escalation",
];

/// Serves MCP on stdin/stdout until the client closes stdin: every
/// knowledge base `base` names that the client's principal may ask, `kb`
/// when a call names none.
pub fn serve_stdio(base: Config, kb: &str) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::Server(format!("cannot start the runtime: {e}")))?;
    let server = McpServer::serving(Kbs::open(&base)?, kb)?;
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

/// The tools a principal is not offered (the local operator's alone).
const PRINCIPAL_REFUSED: &[&str] = &[
    "ingest",
    "list_escalations",
    "answer_escalation",
    "create_tool",
    "delete_dynamic_tool",
];

/// Who the client acts as: `mcp.principal` (a name `grace auth list`
/// shows, else an error: never everything), or the local operator.
fn principal_scope(config: &grace::config::Config) -> Result<grace::access::ReadScope> {
    if config.mcp.principal.is_empty() {
        return Ok(grace::access::ReadScope::All);
    }
    let name = &config.mcp.principal;
    let scope = grace::auth::scope_of(config, name)?;
    tracing::info!(principal = %name, "MCP client acts as a principal");
    Ok(scope)
}

/// A knowledge base the MCP client may ask.
struct Askable {
    name: String,
    grace: Grace,
    /// How its sources are shown (its own uploads and reviewed folders).
    display: Arc<grace::display::SourceDisplay>,
}

/// The MCP tool server over the knowledge bases its client may ask.
#[derive(Clone)]
pub struct McpServer {
    /// The knowledge base a call that names none is for.
    grace: Grace,
    /// Every knowledge base the client may ask, by name (the `kb`
    /// argument's choices).
    kbs: Arc<Vec<Askable>>,
    /// The tools `mcp.tools` names (a built-in registry tool among them is
    /// offered only while its `callers` include `mcp`).
    tools: Arc<Vec<Tool>>,
    timeout: Duration,
    /// Sources are shown relative, never as the server's full paths
    /// (the default knowledge base's folders).
    display: Arc<grace::display::SourceDisplay>,
    /// What the client may read: stdio carries no credentials, so the
    /// process's own (the local operator's: everything).
    scope: grace::access::ReadScope,
}

impl McpServer {
    /// The server over one knowledge base, `grace`, as `default`.
    pub fn new(grace: Grace) -> Result<Self> {
        Self::serving(Kbs::single(grace), DEFAULT_KB)
    }

    /// The tools `mcp.tools` names that are available (a registry tool only
    /// when `tools.enabled` has it), over the knowledge bases of `kbs` the
    /// principal may ask; `default_kb` answers a call that names none (and
    /// must be one of them: else the same error as a name not served).
    pub fn serving(kbs: Kbs, default_kb: &str) -> Result<Self> {
        let grace = kbs
            .get(default_kb)
            .cloned()
            .ok_or_else(|| Error::UnknownKb(default_kb.to_string()))?;
        let config = grace.config();
        let registry = grace.registry();
        let mut tools = Vec::new();
        for name in &config.mcp.tools {
            // Config is data; the names are checked here, against what this
            // server offers.
            if !MCP_TOOL_NAMES.contains(&name.as_str()) {
                return Err(grace::config::ConfigError::Invalid {
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
                "ask" if registry.get(Reasoning::NAME).is_some() => tool(
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
                "feedback" => tool(
                    "feedback",
                    "Rate an answer `ask` gave (its answer_id): up or down, with a reason for \
                     down (wrong, incomplete, not_what_i_asked, outdated, other with a text). \
                     One rating per asker per answer; a second replaces the first.",
                    feedback_schema(),
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
        let scope = principal_scope(config)?;
        let may_ask = |name: &str| kbs.may_ask(name, &scope);
        if !may_ask(default_kb) {
            return Err(Error::UnknownKb(default_kb.to_string()));
        }
        let askable: Vec<Askable> = kbs
            .handles()
            .filter(|(name, _)| may_ask(name))
            .map(|(name, g)| Askable {
                name: name.to_string(),
                grace: g.clone(),
                display: Arc::new(grace::display::SourceDisplay::new(g.config())),
            })
            .collect();
        // Run-time tools' admin tools (seed 002), only when allowed.
        #[cfg(feature = "js-tools")]
        if grace::tools::runtime::mcp::offered(config) {
            for (name, description, schema, read_only) in grace::tools::runtime::mcp::tools() {
                tools.push(tool(name, description, schema, read_only));
            }
        }
        // A principal asks and searches what it may read: it does not
        // ingest, act on escalations or write tools.
        if scope != grace::access::ReadScope::All {
            tools.retain(|t| !PRINCIPAL_REFUSED.contains(&t.name.as_ref()));
        }
        Ok(Self {
            timeout: Duration::from_secs_f64(config.mcp.timeout_seconds),
            display: Arc::new(grace::display::SourceDisplay::new(config)),
            scope,
            grace,
            kbs: Arc::new(askable),
            tools: Arc::new(tools),
        })
    }

    /// The knowledge base a call's `kb` argument names (taken out of the
    /// arguments), or the default one; a name the client may not ask is
    /// the same error as one not served.
    fn kb_of(
        &self,
        args: &mut Value,
    ) -> std::result::Result<(Grace, Arc<grace::display::SourceDisplay>), McpError> {
        let named = args.as_object_mut().and_then(|m| m.remove(KB_ARGUMENT));
        match named {
            None => Ok((self.grace.clone(), self.display.clone())),
            Some(Value::String(name)) => self
                .kbs
                .iter()
                .find(|k| k.name == name)
                .map(|k| (k.grace.clone(), k.display.clone()))
                .ok_or_else(|| McpError::invalid_params(Error::UnknownKb(name).to_string(), None)),
            Some(_) => Err(McpError::invalid_params(
                "kb: a knowledge base's name",
                None,
            )),
        }
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
        let names: Vec<&str> = self.kbs.iter().map(|k| k.name.as_str()).collect();
        offered
            .into_iter()
            .map(|mut t| {
                let mut schema = (*t.input_schema).clone();
                schema::add_kb(&mut schema, &names, self.grace.config().kb_name());
                t.input_schema = Arc::new(schema);
                t
            })
            .collect()
    }

    /// The offered tool called `name`.
    fn find(&self, name: &str) -> Option<Tool> {
        self.tools().into_iter().find(|t| t.name == name)
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
        let (grace, display) = self.kb_of(&mut args)?;
        let result = match self.call(&name, args, &grace, &context.peer).await {
            Ok(mut data) => {
                display.rewrite(&mut data);
                let (gist, text) = match name.as_str() {
                    "ask" => {
                        let b = brief::ask(&data);
                        let t = brief::ask_text(&b);
                        (b, t)
                    }
                    "ingest" | "feedback" | "list_escalations" | "answer_escalation" => {
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
    grace::tools::TOOL_NAMES.contains(&name)
}

/// A registry tool as MCP offers it: its schema with GRACE's `detail`
/// argument (unless it has its own), read-only when it is `rag_search`.
fn registry_tool(t: &dyn grace::tools::Tool, description: String) -> Tool {
    tool(
        t.name().to_string(),
        description,
        brief::with_detail(&t.input_schema()).0,
        t.name() == RagSearch::NAME,
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
