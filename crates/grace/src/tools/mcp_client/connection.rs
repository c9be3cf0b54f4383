//! One live connection to another MCP server: started as a child process
//! on stdio or reached over streamable HTTP, kept on a runtime of its own
//! (tools are synchronous and called outside any runtime), and restored
//! with backoff when the server goes away. Meanwhile its tools fail as
//! `Transient`, so the registry's retries and the caller's plan apply.

use std::sync::mpsc;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ErrorCode, JsonObject, Tool as RemoteTool,
};
use rmcp::service::{Peer, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceError, ServiceExt};
use tokio::sync::Notify;

use crate::config::McpServerConfig;
use crate::tools::ToolErrorKind;

/// Tools taken from one server at most; the rest of its list is ignored.
pub const MAX_REMOTE_TOOLS: usize = 128;
/// First wait before reconnecting; doubled up to `reconnect_max_seconds`.
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
/// How often the supervisor looks whether the transport closed.
const WATCH_EVERY: Duration = Duration::from_millis(200);
/// Time a closing connection is given before it is dropped (and its
/// child killed).
const CLOSE_WAIT: Duration = Duration::from_secs(2);
/// Bytes of protocol overhead allowed above `max_result_bytes` in one
/// message (a result carries its text and its structured content).
const MESSAGE_SLACK: usize = 65_536;

/// Why a call did not produce a result.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct CallError {
    /// How it failed (decides retries).
    pub kind: ToolErrorKind,
    /// What went wrong, bounded.
    pub message: String,
}

impl CallError {
    fn new(kind: ToolErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: crate::text::ellipsized(&message.into(), 500),
        }
    }
}

/// A running service and, for stdio, the child it talks to (killed when
/// dropped).
struct Live {
    service: RunningService<RoleClient, ()>,
    _child: Option<tokio::process::Child>,
}

/// What the supervisor and the callers share.
struct Shared {
    server: String,
    /// The peer to call while connected.
    peer: RwLock<Option<Peer<RoleClient>>>,
    /// A call saw the transport fail: reconnect.
    broken: Notify,
    /// The connection is dropped: stop.
    stop: Notify,
}

impl Shared {
    fn set_peer(&self, peer: Option<Peer<RoleClient>>) {
        *self.peer.write().unwrap_or_else(|p| p.into_inner()) = peer;
    }

    fn peer(&self) -> Option<Peer<RoleClient>> {
        self.peer.read().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// A runtime shut down without waiting when dropped (dropping a runtime
/// inside another's context would panic).
struct OwnRuntime(Option<tokio::runtime::Runtime>);

impl Drop for OwnRuntime {
    fn drop(&mut self) {
        if let Some(rt) = self.0.take() {
            rt.shutdown_background();
        }
    }
}

/// A connection to one server, shared by its tools.
pub struct Connection {
    shared: Arc<Shared>,
    handle: tokio::runtime::Handle,
    _runtime: OwnRuntime,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("server", &self.shared.server)
            .finish()
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.shared.stop.notify_one();
    }
}

impl Connection {
    /// Connects to `config`'s server and lists its tools (at most
    /// [`MAX_REMOTE_TOOLS`]), within `connect_timeout_seconds`; then keeps
    /// the connection, reconnecting with backoff when it is lost.
    pub fn open(config: &McpServerConfig) -> Result<(Arc<Self>, Vec<RemoteTool>), String> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name(format!("mcp-{}", config.name))
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start a runtime: {e}"))?;
        let handle = runtime.handle().clone();
        let runtime = OwnRuntime(Some(runtime));
        let connect_timeout = Duration::from_secs_f64(config.connect_timeout_seconds);
        let (tx, rx) = mpsc::channel();
        let cfg = config.clone();
        handle.spawn(async move {
            let first = tokio::time::timeout(connect_timeout, async {
                let live = connect(&cfg).await?;
                let tools = live
                    .service
                    .peer()
                    .list_all_tools()
                    .await
                    .map_err(|e| format!("cannot list its tools: {e}"))?;
                Ok::<_, String>((live, tools))
            })
            .await
            .unwrap_or_else(|_| {
                Err(format!(
                    "no connection within {:.0} s (connect_timeout_seconds)",
                    connect_timeout.as_secs_f64()
                ))
            });
            // The receiver is gone only if `open` gave up; nothing to do.
            let _ = tx.send(first);
        });
        let waited = rx.recv_timeout(connect_timeout + Duration::from_secs(1));
        let (live, mut tools) = match waited {
            Ok(r) => r?,
            Err(_) => return Err("the connection attempt did not finish".into()),
        };
        tools.truncate(MAX_REMOTE_TOOLS);
        let shared = Arc::new(Shared {
            server: config.name.clone(),
            peer: RwLock::new(None),
            broken: Notify::new(),
            stop: Notify::new(),
        });
        shared.set_peer(Some(live.service.peer().clone()));
        handle.spawn(supervise(config.clone(), shared.clone(), live));
        Ok((
            Arc::new(Self {
                shared,
                handle,
                _runtime: runtime,
            }),
            tools,
        ))
    }

    /// Calls the server's tool `tool` with `args`, waiting at most
    /// `timeout`.
    pub fn call(
        &self,
        tool: &str,
        args: JsonObject,
        timeout: Duration,
    ) -> Result<CallToolResult, CallError> {
        let Some(peer) = self.shared.peer() else {
            return Err(CallError::new(
                ToolErrorKind::Transient,
                format!(
                    "MCP server `{}` is not connected (reconnecting)",
                    self.shared.server
                ),
            ));
        };
        let (tx, rx) = mpsc::channel();
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(args);
        self.handle.spawn(async move {
            let r = tokio::time::timeout(timeout, peer.call_tool(params)).await;
            let _ = tx.send(r);
        });
        let outcome = match rx.recv_timeout(timeout + Duration::from_secs(1)) {
            Ok(Ok(r)) => r,
            Ok(Err(_)) | Err(_) => {
                return Err(CallError::new(
                    ToolErrorKind::Timeout,
                    format!("no result within {:.1} s", timeout.as_secs_f64()),
                ));
            }
        };
        outcome.map_err(|e| {
            if matches!(
                e,
                ServiceError::TransportSend(_) | ServiceError::TransportClosed
            ) {
                self.shared.broken.notify_one();
            }
            classify(&e)
        })
    }
}

/// How a failed request counts: a lost transport is transient, a
/// response the transport could not take (malformed, too large) a failure
/// (the server would send it again); both renew the connection. The
/// server's refusal of the arguments is invalid input, anything else (a
/// result of the wrong shape, the server's error) a failure.
fn classify(e: &ServiceError) -> CallError {
    match e {
        ServiceError::TransportSend(inner) => {
            let text = inner.to_string();
            if text.contains("unexpected server response")
                || text.contains("exceeded the maximum size")
            {
                CallError::new(ToolErrorKind::Failed, format!("unusable response: {text}"))
            } else {
                CallError::new(ToolErrorKind::Transient, format!("connection lost: {text}"))
            }
        }
        ServiceError::TransportClosed => {
            CallError::new(ToolErrorKind::Transient, format!("connection lost: {e}"))
        }
        ServiceError::Timeout { .. } => CallError::new(ToolErrorKind::Timeout, e.to_string()),
        ServiceError::McpError(data) if data.code == ErrorCode::INVALID_PARAMS => CallError::new(
            ToolErrorKind::InvalidInput,
            format!("the server refused the arguments: {}", data.message),
        ),
        ServiceError::McpError(data) => CallError::new(
            ToolErrorKind::Failed,
            format!("the server answered with an error: {}", data.message),
        ),
        other => CallError::new(ToolErrorKind::Failed, format!("unusable response: {other}")),
    }
}

/// Keeps the connection: watches it, and when it is lost (the transport
/// closed, or a call saw it fail) reconnects after 1 s, 2 s, 4 s …, up to
/// `reconnect_max_seconds` between attempts, until the connection is
/// dropped.
async fn supervise(config: McpServerConfig, shared: Arc<Shared>, first: Live) {
    let max = Duration::from_secs_f64(config.reconnect_max_seconds).max(FIRST_BACKOFF);
    let connect_timeout = Duration::from_secs_f64(config.connect_timeout_seconds);
    let mut live = Some(first);
    let mut wait = FIRST_BACKOFF;
    loop {
        if let Some(mut current) = live.take() {
            shared.set_peer(Some(current.service.peer().clone()));
            let stopped = tokio::select! {
                _ = shared.stop.notified() => true,
                _ = shared.broken.notified() => false,
                _ = closed(&current) => false,
            };
            shared.set_peer(None);
            let _ = current.service.close_with_timeout(CLOSE_WAIT).await;
            drop(current);
            if stopped {
                return;
            }
            tracing::warn!(server = %config.name, "MCP server went away; reconnecting");
        }
        tokio::select! {
            _ = shared.stop.notified() => return,
            _ = tokio::time::sleep(wait) => {}
        }
        match tokio::time::timeout(connect_timeout, connect(&config)).await {
            Ok(Ok(l)) => {
                tracing::info!(server = %config.name, "MCP server reconnected");
                live = Some(l);
                wait = FIRST_BACKOFF;
            }
            Ok(Err(e)) => {
                tracing::warn!(server = %config.name, error = %e, ?wait, "cannot reconnect");
                wait = (wait * 2).min(max);
            }
            Err(_) => {
                tracing::warn!(server = %config.name, ?wait, "reconnection timed out");
                wait = (wait * 2).min(max);
            }
        }
    }
}

/// Resolves when the transport has closed (the child exited, the stream
/// ended).
async fn closed(live: &Live) {
    while !live.service.peer().is_transport_closed() && !live.service.is_closed() {
        tokio::time::sleep(WATCH_EVERY).await;
    }
}

/// Starts (stdio) or reaches (HTTP) the server and does the handshake.
async fn connect(config: &McpServerConfig) -> Result<Live, String> {
    let limit = config.max_result_bytes.saturating_mul(2) + MESSAGE_SLACK;
    if let Some(command) = &config.command {
        let mut cmd = tokio::process::Command::new(command);
        cmd.args(&config.args).env_clear();
        // Nothing of GRACE's environment goes to the server but these and
        // what its `env` names (API keys stay here).
        for key in ["PATH", "HOME", "LANG"] {
            if let Some(v) = std::env::var_os(key) {
                cmd.env(key, v);
            }
        }
        cmd.envs(&config.env)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot start `{command}`: {e}"))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err("the child's stdio is not available".into());
        };
        if let Some(stderr) = child.stderr.take() {
            tokio::spawn(forward_stderr(config.name.clone(), stderr));
        }
        let transport = AsyncRwTransport::new_client(stdout, stdin).with_max_line_length(limit);
        let service = ().serve(transport).await.map_err(|e| format!("MCP handshake failed: {e}"))?;
        return Ok(Live {
            service,
            _child: Some(child),
        });
    }
    let Some(url) = &config.url else {
        return Err("neither `command` nor `url` is set".into());
    };
    let mut http =
        StreamableHttpClientTransportConfig::with_uri(url.as_str()).max_sse_event_size(limit);
    http.max_json_response_size = limit;
    if let Some(var) = &config.bearer_token_env {
        let token = std::env::var(var)
            .map_err(|_| format!("bearer_token_env names `{var}`, which is not set"))?;
        http = http.auth_header(token);
    }
    let transport = StreamableHttpClientTransport::from_config(http);
    let service = ()
        .serve(transport)
        .await
        .map_err(|e| format!("MCP handshake with {url} failed: {e}"))?;
    Ok(Live {
        service,
        _child: None,
    })
}

/// Bytes of a child's stderr logged per read at most.
const STDERR_CHUNK: usize = 4_096;

/// Logs what a child writes on stderr (at debug level, cut), so that its
/// output neither fills a pipe nor mixes into GRACE's own.
async fn forward_stderr(server: String, mut stderr: tokio::process::ChildStderr) {
    use tokio::io::AsyncReadExt;
    let mut buf = vec![0u8; STDERR_CHUNK];
    loop {
        match stderr.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                let text = String::from_utf8_lossy(&buf[..n]);
                tracing::debug!(server = %server, stderr = %text.trim_end(), "MCP server says");
            }
        }
    }
}
