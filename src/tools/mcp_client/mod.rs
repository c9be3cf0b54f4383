//! Tools of other MCP servers (`tools.mcp_servers`): GRACE connects to
//! each enabled server with rmcp's client (a child process on stdio, or
//! streamable HTTP), lists its tools, keeps those `include` and `exclude`
//! let through, and registers each as `mcp.<server>.<tool>` with the
//! server's schema and its own policy. A server that cannot be reached at
//! start-up is logged and skipped (GRACE starts without its tools); one
//! that goes away later is reconnected with backoff, its tools failing as
//! `Transient` meanwhile.

mod connection;
mod remote_tool;
mod result;

use std::sync::Arc;
use std::time::Duration;

use globset::{Glob, GlobSet, GlobSetBuilder};

pub use self::connection::{Connection, MAX_REMOTE_TOOLS};
pub use self::remote_tool::{MAX_SCHEMA_BYTES, MAX_SCHEMA_DEPTH, RemoteTool};
pub use self::result::MAX_PASSAGE_CHARS;

use crate::config::McpServerConfig;
use crate::tools::ToolRegistry;
use crate::{Config, KnowledgeBase};

/// Registers the tools of every enabled server in `tools.mcp_servers`.
/// Never fails GRACE's start: a server that cannot be reached, or a tool
/// that cannot be taken, is logged.
pub(crate) fn register(registry: &ToolRegistry, config: &Config, kb: &Arc<KnowledgeBase>) {
    for server in config.tools.mcp_servers.iter().filter(|s| s.enabled) {
        match register_server(registry, server, kb) {
            Ok(names) => {
                tracing::info!(server = %server.name, tools = ?names, "MCP server's tools registered");
            }
            Err(e) => tracing::warn!(
                server = %server.name,
                error = %e,
                "cannot take the MCP server's tools; GRACE goes on without them"
            ),
        }
    }
}

/// Connects to `server` and registers the tools it lets through; their
/// names.
pub fn register_server(
    registry: &ToolRegistry,
    server: &McpServerConfig,
    kb: &Arc<KnowledgeBase>,
) -> Result<Vec<String>, String> {
    let include = globs(&server.include)?;
    let exclude = globs(&server.exclude)?;
    let (conn, tools) = Connection::open(server)?;
    let mut names = Vec::new();
    for tool in tools {
        let remote = tool.name.to_string();
        let taken =
            (server.include.is_empty() || include.is_match(&remote)) && !exclude.is_match(&remote);
        let Some((policy, callers)) = server.tool_policy(&remote).filter(|_| taken) else {
            continue;
        };
        let spec = remote_tool::Spec {
            server: server.name.clone(),
            tool,
            timeout: Duration::from_secs_f64(policy.timeout_seconds),
            max_result_bytes: server.max_result_bytes,
        };
        let registered = RemoteTool::new(spec, conn.clone(), kb.clone()).and_then(|t| {
            let name = t_name(&t);
            registry
                .register(Arc::new(t), policy, callers)
                .map(|()| name)
                .map_err(|e| e.to_string())
        });
        match registered {
            Ok(name) => names.push(name),
            Err(e) => tracing::warn!(
                server = %server.name,
                tool = %result::one_line(&remote, 80),
                error = %e,
                "MCP tool not registered"
            ),
        }
    }
    Ok(names)
}

fn t_name(t: &RemoteTool) -> String {
    crate::tools::Tool::name(t).to_string()
}

fn globs(patterns: &[String]) -> Result<GlobSet, String> {
    let mut set = GlobSetBuilder::new();
    for p in patterns {
        set.add(Glob::new(p).map_err(|e| format!("`{p}` is not a glob pattern: {e}"))?);
    }
    set.build().map_err(|e| e.to_string())
}
