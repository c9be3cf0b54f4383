//! Tools of other MCP servers (`tools.mcp_servers`): GRACE connects to
//! each enabled server with rmcp's client (a child process on stdio, or
//! streamable HTTP), lists its tools, keeps those `include` and `exclude`
//! let through, and registers each as `mcp.<server>.<tool>` with the
//! server's schema and its own policy. A server that cannot be reached at
//! start-up is logged and tried again in the background with backoff
//! (GRACE starts without its tools, which appear once it answers); one
//! that goes away later is reconnected with backoff, its tools failing as
//! `Transient` meanwhile.

mod connection;
mod remote_tool;
mod result;

use std::sync::{Arc, Weak};
use std::time::Duration;

use globset::{Glob, GlobSet, GlobSetBuilder};

pub use self::connection::{Connection, MAX_REMOTE_TOOLS};
pub use self::remote_tool::{MAX_SCHEMA_BYTES, MAX_SCHEMA_DEPTH, RemoteTool};
pub use self::result::MAX_PASSAGE_CHARS;

use crate::config::McpServerConfig;
use crate::tools::{Registrar, ToolRegistry};
use crate::{config::Config, kb::KnowledgeBase};

/// Registers the tools of every enabled server in `tools.mcp_servers`.
/// Never fails GRACE's start: a server that cannot be reached is tried
/// again in the background (the wait doubling from 1 s up to
/// `reconnect_max_seconds`) until its tools are registered or GRACE
/// stops; a tool that cannot be taken is logged.
pub(crate) fn register(registry: &ToolRegistry, config: &Config, kb: &Arc<KnowledgeBase>) {
    for server in config.tools.mcp_servers.iter().filter(|s| s.enabled) {
        let registrar = registry.registrar();
        match register_server(&registrar, server, kb) {
            Ok(names) => {
                tracing::info!(server = %server.name, tools = ?names, "MCP server's tools registered");
            }
            Err(e) => {
                tracing::warn!(
                    server = %server.name,
                    error = %e,
                    "cannot take the MCP server's tools; GRACE goes on and tries again in the background"
                );
                retry_in_background(registrar, server.clone(), Arc::downgrade(kb));
            }
        }
    }
}

/// How often a background retry looks whether GRACE has stopped.
const LIVENESS_POLL: Duration = Duration::from_millis(200);

/// Tries `server` again with backoff until its tools are registered or
/// the registry is gone. Holds neither the registry nor the knowledge base
/// while it waits (both would stay open after GRACE stopped).
fn retry_in_background(registrar: Registrar, server: McpServerConfig, kb: Weak<KnowledgeBase>) {
    let spawned = std::thread::Builder::new()
        .name(format!("mcp-retry-{}", server.name))
        .spawn(move || {
            let max = Duration::from_secs_f64(server.reconnect_max_seconds);
            let mut wait = Duration::from_secs(1).min(max);
            loop {
                let until = std::time::Instant::now() + wait;
                while std::time::Instant::now() < until {
                    if !registrar.is_live() {
                        return;
                    }
                    std::thread::sleep(LIVENESS_POLL);
                }
                let Some(kb) = kb.upgrade() else { return };
                match register_server(&registrar, &server, &kb) {
                    Ok(names) => {
                        tracing::info!(server = %server.name, tools = ?names, "MCP server reached; its tools are registered");
                        return;
                    }
                    Err(e) => {
                        tracing::debug!(server = %server.name, error = %e, ?wait, "MCP server still unreachable");
                    }
                }
                wait = (wait * 2).min(max);
            }
        });
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "cannot start the MCP server's background retry");
    }
}

/// Connects to `server` and registers the tools it lets through; their
/// names.
pub fn register_server(
    registry: &Registrar,
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
