//! The web tools: `web_fetch` (one page, read by GRACE's loaders and
//! returned as passages scored against the question) and `web_search` (a
//! configured search endpoint's results, which feed `web_fetch`). Both are
//! off by default (`tools.web.fetch.enabled`, `tools.web.search.enabled`).
//!
//! Every request goes through `client`: the address policy of [`guard`]
//! (no loopback, private, link-local or metadata address unless
//! `tools.web.allow_hosts` lists the host), redirects followed by hand and
//! each checked, bodies read up to a limit, and `robots.txt`
//! ([`robots`]) for pages. Tools are synchronous; each call runs its own
//! small tokio runtime on the registry's thread.

mod client;
mod fetch;
pub mod guard;
pub mod robots;
mod search;

use std::sync::Arc;
use std::time::{Duration, Instant};

pub use self::fetch::WebFetch;
pub use self::search::WebSearch;

use super::{ToolError, ToolErrorKind, ToolRegistry};
use crate::{config::Config, kb::KnowledgeBase};

/// Registers the web tools that `tools.web` enables.
pub fn register(
    registry: &ToolRegistry,
    config: &Config,
    kb: &Arc<KnowledgeBase>,
) -> crate::error::Result<()> {
    let web = &config.tools.web;
    if web.fetch.enabled {
        let chunking = crate::ingest::chunk::ChunkParams {
            size: config.ingest.chunk_size,
            overlap: config.ingest.chunk_overlap,
        };
        let tool = WebFetch::new(web, chunking, kb.clone());
        registry.register(Arc::new(tool), web.fetch.policy(), web.fetch.callers)?;
    }
    if web.search.enabled {
        let tool = WebSearch::new(web)?;
        registry.register(Arc::new(tool), web.search.policy(), web.search.callers)?;
    }
    Ok(())
}

/// Why a web request failed; [`WebError::kind`] decides whether the
/// registry retries it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WebError {
    /// The URL itself is not acceptable (scheme, credentials, length).
    #[error("{0}")]
    InvalidUrl(String),
    /// A rule refused the request (address, robots.txt, content type,
    /// redirects); the message names the rule and the key to change.
    #[error("{0}")]
    Refused(String),
    /// The network or the server failed (connection, 5xx): may work later.
    #[error("{0}")]
    Network(String),
    /// The call's time ran out.
    #[error("timed out {0}")]
    Timeout(String),
    /// The server answered, but not with something usable (4xx, not a
    /// text document, malformed JSON).
    #[error("{0}")]
    Failed(String),
}

impl WebError {
    /// How the registry treats it.
    pub fn kind(&self) -> ToolErrorKind {
        match self {
            WebError::InvalidUrl(_) => ToolErrorKind::InvalidInput,
            WebError::Refused(_) | WebError::Failed(_) => ToolErrorKind::Failed,
            WebError::Network(_) => ToolErrorKind::Transient,
            WebError::Timeout(_) => ToolErrorKind::Timeout,
        }
    }

    /// As the `tool`'s error.
    pub fn into_tool_error(self, tool: &str) -> ToolError {
        ToolError::new(tool, self.kind(), self.to_string())
    }
}

/// Runs `work` to completion on a fresh current-thread runtime, giving up
/// at `deadline`. The runtime is shut down in the background, so a stuck
/// DNS lookup on its blocking pool cannot hold the caller. Called from
/// inside a runtime (an embedding application calling the tool directly),
/// it runs on a thread of its own, since a runtime cannot block inside
/// another.
fn run<T: Send>(
    tool: &str,
    deadline: Instant,
    work: impl std::future::Future<Output = Result<T, WebError>> + Send,
) -> Result<T, ToolError> {
    if tokio::runtime::Handle::try_current().is_ok() {
        return std::thread::scope(|s| {
            s.spawn(|| block_on(tool, deadline, work))
                .join()
                .unwrap_or_else(|_| {
                    Err(ToolError::new(
                        tool,
                        ToolErrorKind::Failed,
                        "the fetch panicked",
                    ))
                })
        });
    }
    block_on(tool, deadline, work)
}

fn block_on<T>(
    tool: &str,
    deadline: Instant,
    work: impl std::future::Future<Output = Result<T, WebError>>,
) -> Result<T, ToolError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            ToolError::new(
                tool,
                ToolErrorKind::Transient,
                format!("cannot start a runtime: {e}"),
            )
        })?;
    let outcome = rt.block_on(async {
        match tokio::time::timeout_at(deadline.into(), work).await {
            Ok(r) => r,
            Err(_) => Err(WebError::Timeout("before the response was read".into())),
        }
    });
    rt.shutdown_background();
    outcome.map_err(|e| e.into_tool_error(tool))
}

/// The deadline of a call that may take `seconds`.
fn deadline_in(seconds: f64) -> Instant {
    let d = Duration::try_from_secs_f64(seconds).unwrap_or(Duration::from_secs(15));
    Instant::now() + d
}
