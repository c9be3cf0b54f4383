//! Calling a registered tool under its policy: a timeout per attempt on
//! the tool's own thread, retries with exponential backoff after
//! transient failures and timeouts, cancellation, suggestions on failure,
//! and the call counted in the statistics.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{Entry, ToolRegistry};
use crate::config::ToolPolicy;
use crate::tools::stats::{CallOutcome, Health};
use crate::tools::{ReadScope, Tool, ToolError, ToolErrorKind, ToolResult};

impl ToolRegistry {
    /// Calls a tool under its policy. Never fails: a failure is a result
    /// with `success: false`, the error and suggestions.
    pub fn call(&self, name: &str, input: &Value, scope: &ReadScope) -> ToolResult {
        self.call_within(name, input, None, scope)
    }

    /// [`call`](Self::call) with a per-call timeout instead of the tool's
    /// `timeout_seconds` (a plan step's `timeout`).
    pub fn call_within(
        &self,
        name: &str,
        input: &Value,
        timeout: Option<Duration>,
        scope: &ReadScope,
    ) -> ToolResult {
        self.call_until(name, input, timeout, &AtomicBool::new(false), scope)
    }

    /// [`call_within`](Self::call_within) that also gives up, with a failed
    /// result, as soon as `cancel` is set (checked every 20 ms while the
    /// tool runs, and before each retry). The tool's thread is left to
    /// finish and its result discarded, as after a timeout. Every call of
    /// a registered tool is counted in the statistics.
    pub fn call_until(
        &self,
        name: &str,
        input: &Value,
        timeout: Option<Duration>,
        cancel: &AtomicBool,
        scope: &ReadScope,
    ) -> ToolResult {
        let started = Instant::now();
        let found = self.read().iter().find(|e| e.tool.name() == name).cloned();
        let Some(Entry { tool, policy, .. }) = found else {
            let names = self.names().join(", ");
            let e = ToolError::new(
                name,
                ToolErrorKind::Unknown,
                format!("not an enabled tool (enabled: {names})"),
            );
            return ToolResult::failed(&e, vec![format!("use one of: {names}")]);
        };
        if let Health::Disabled(why) = self.health(name) {
            let e = ToolError::new(
                name,
                ToolErrorKind::Unknown,
                format!("disabled after {why} (tools.reflection.disable_after)"),
            );
            return ToolResult::failed(
                &e,
                vec![format!(
                    "an administrator can run `grace tools enable {name}`"
                )],
            );
        }
        let result = call_with_policy(&tool, &policy, input, timeout, cancel, scope, started);
        self.count(name, &result);
        result
    }

    /// Records a finished call in the statistics (a failure to record is
    /// logged, never the call's failure). A cancelled call is not the
    /// tool's failure and is not counted.
    fn count(&self, name: &str, result: &ToolResult) {
        let Some(stats) = &self.stats else { return };
        if result.error_kind == Some(ToolErrorKind::Cancelled) {
            return;
        }
        let outcome = CallOutcome {
            failure: (!result.success)
                .then_some(result.error_kind.unwrap_or(ToolErrorKind::Failed)),
            error: result.error.as_deref(),
            latency: result.duration,
        };
        if let Err(e) = stats.record(name, &outcome) {
            tracing::warn!(tool = name, error = %e, "cannot record tool statistics");
        }
    }
}

/// One call under `policy`: attempts with a timeout each, retried after
/// transient failures and timeouts with exponential backoff.
fn call_with_policy(
    tool: &Arc<dyn Tool>,
    policy: &ToolPolicy,
    input: &Value,
    timeout: Option<Duration>,
    cancel: &AtomicBool,
    scope: &ReadScope,
    started: Instant,
) -> ToolResult {
    let name = tool.name();
    // A step may ask for less time than the tool's policy, never more.
    let own = Duration::from_secs_f64(policy.timeout_seconds);
    let timeout = timeout.map_or(own, |t| t.min(own));
    let mut delay = Duration::from_secs_f64(policy.retry_delay_seconds);
    let mut attempt = 0;
    loop {
        attempt += 1;
        let outcome = call_with_timeout(tool.clone(), input.clone(), timeout, cancel, scope);
        match outcome {
            Ok(mut result) => {
                result.duration = started.elapsed();
                result.attempts = attempt;
                return result;
            }
            Err(e)
                if e.is_retryable()
                    && attempt <= policy.retry_count
                    && !cancel.load(Ordering::Relaxed) =>
            {
                tracing::info!(tool = name, attempt, error = %e, ?delay, "retrying");
                std::thread::sleep(delay);
                delay *= 2;
            }
            Err(e) => {
                let mut result = ToolResult::failed(&e, suggestions(&e, tool.as_ref()));
                result.duration = started.elapsed();
                result.attempts = attempt;
                return result;
            }
        }
    }
}

/// How often a waiting call looks at its cancellation flag.
const CANCEL_POLL: Duration = Duration::from_millis(20);

/// Runs one attempt on its own thread and waits at most `timeout`, or
/// until `cancel` is set.
fn call_with_timeout(
    tool: Arc<dyn Tool>,
    input: Value,
    timeout: Duration,
    cancel: &AtomicBool,
    scope: &ReadScope,
) -> Result<ToolResult, ToolError> {
    let name = tool.name().to_string();
    let scope = scope.clone();
    let name = name.as_str();
    let (tx, rx) = mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name(format!("tool-{}", crate::text::truncate_chars(name, 40)))
        .spawn(move || {
            // The receiver may be gone after a timeout; nothing to do then.
            let _ = tx.send(tool.execute(&input, &scope));
        });
    if let Err(e) = spawned {
        return Err(ToolError::new(
            name,
            ToolErrorKind::Transient,
            format!("cannot start a thread: {e}"),
        ));
    }
    let deadline = Instant::now() + timeout;
    loop {
        if cancel.load(Ordering::Relaxed) {
            return Err(ToolError::new(name, ToolErrorKind::Cancelled, "cancelled"));
        }
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left.min(CANCEL_POLL)) {
            Ok(outcome) => return outcome,
            Err(mpsc::RecvTimeoutError::Timeout) if left > CANCEL_POLL => {}
            Err(mpsc::RecvTimeoutError::Timeout) => {
                return Err(ToolError::new(
                    name,
                    ToolErrorKind::Timeout,
                    format!("no result within {:.1} s", timeout.as_secs_f64()),
                ));
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(ToolError::new(
                    name,
                    ToolErrorKind::Failed,
                    "the tool panicked",
                ));
            }
        }
    }
}

fn suggestions(e: &ToolError, tool: &dyn Tool) -> Vec<String> {
    match e.kind {
        ToolErrorKind::InvalidInput => vec![format!(
            "fix the input; it must match {}",
            tool.input_schema()
        )],
        ToolErrorKind::Timeout => vec![format!(
            "raise tools.{}.timeout_seconds, or ask a narrower question",
            tool.name()
        )],
        ToolErrorKind::Transient => vec!["try again in a moment".to_string()],
        ToolErrorKind::Failed | ToolErrorKind::Unknown | ToolErrorKind::Cancelled => Vec::new(),
    }
}
