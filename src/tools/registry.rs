//! The tools a run may call and the call policy: a timeout per call,
//! retries with exponential backoff for transient failures and timeouts
//! only, who may see each tool, and usage statistics for each call.
//!
//! The registry is built from config (the built-in tools in
//! `tools.enabled`, then the web tools, run-time tools and other MCP
//! servers' tools), and tools may be added and removed while it serves
//! (a run-time tool created, a reconnected server's tools).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;

use super::stats::{CallOutcome, Health, ToolStats, ToolUsage};
use super::{AskUser, Origin, RagSearch, Reasoning, Tool, ToolError, ToolErrorKind, ToolResult};
use crate::config::{Caller, Callers, Config, ToolPolicy};
use crate::{kb::KnowledgeBase, llm};

/// Registers the tools beyond the built-in ones that config enables: the
/// web tools, stored run-time tools, and other MCP servers' tools.
fn extend(
    registry: &ToolRegistry,
    config: &Config,
    kb: &Arc<KnowledgeBase>,
) -> crate::error::Result<()> {
    // The web tools first: run-time tools are granted `web_fetch` if it is there.
    super::web::register(registry, config, kb)?;
    super::runtime::extend(registry, config, kb)?;
    super::mcp_client::register(registry, config, kb);
    Ok(())
}

/// What a tool name looks like, for published schemas (a superset of
/// [`valid_tool_name`]: a name that is not registered is not found).
pub const TOOL_NAME_PATTERN: &str = r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$";

/// Characters of a tool name at most.
const MAX_NAME_CHARS: usize = 64;

/// Whether `name` may name a tool: 1-64 characters, dot-separated parts of
/// ASCII letters, digits, `_` and `-`, the first starting with a letter
/// (`rag_search`, `mcp.tickets.find-issue`, `rt.word_count`). Models'
/// function-calling APIs accept these names as they are.
pub fn valid_tool_name(name: &str) -> bool {
    name.len() <= MAX_NAME_CHARS
        && name.starts_with(|c: char| c.is_ascii_alphabetic())
        && name.split('.').all(|part| {
            !part.is_empty()
                && part
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        })
}

/// One registered tool with its policy and who may see it.
#[derive(Clone)]
struct Entry {
    tool: Arc<dyn Tool>,
    policy: ToolPolicy,
    callers: Callers,
}

/// A tool as a caller's catalogue shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CatalogueEntry {
    /// The tool's name.
    pub name: String,
    /// What it does; an unreliable tool's says so first.
    pub description: String,
    /// JSON schema of its input.
    pub input_schema: Value,
}

/// Everything about a registered tool (`grace tools list`, `GET /v1/tools`).
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct ToolInfo {
    /// The tool's name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// JSON schema of its input.
    pub input_schema: Value,
    /// Where it comes from.
    pub origin: Origin,
    /// Seconds one call may take.
    pub timeout_seconds: f64,
    /// Retries after a timeout or a transient failure.
    pub retry_count: u32,
    /// Who may see it.
    pub callers: Vec<Caller>,
    /// Its usage (zeros without a statistics store).
    pub stats: Option<ToolUsage>,
    /// Whether it is offered.
    #[serde(flatten)]
    pub health: Health,
}

/// Adds and removes tools of a [`ToolRegistry`] from elsewhere (a
/// background reconnection, a tool call that creates a tool); does
/// nothing once the registry is gone.
#[derive(Clone)]
pub struct Registrar {
    tools: std::sync::Weak<RwLock<Vec<Entry>>>,
    stats: Option<Arc<ToolStats>>,
}

impl std::fmt::Debug for Registrar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registrar")
            .field("live", &self.is_live())
            .finish()
    }
}

impl Registrar {
    /// Whether the registry is still there.
    pub fn is_live(&self) -> bool {
        self.tools.strong_count() > 0
    }

    fn add(
        &self,
        tool: Arc<dyn Tool>,
        policy: ToolPolicy,
        callers: Callers,
        replace: bool,
    ) -> Result<(), ToolError> {
        let name = tool.name().to_string();
        if !valid_tool_name(&name) {
            return Err(ToolError::new(
                crate::text::truncate_chars(&name, 80),
                ToolErrorKind::InvalidInput,
                "not a valid tool name (1-64 letters, digits, `_`, `-`, dot-separated)",
            ));
        }
        let Some(tools) = self.tools.upgrade() else {
            return Err(ToolError::new(
                &name,
                ToolErrorKind::Failed,
                "the registry is gone (GRACE is shutting down)",
            ));
        };
        let mut tools = tools.write().unwrap_or_else(|p| p.into_inner());
        match tools.iter().position(|e| e.tool.name() == name) {
            Some(i) if replace => {
                tools.remove(i);
            }
            Some(_) => {
                return Err(ToolError::new(
                    &name,
                    ToolErrorKind::InvalidInput,
                    "a tool of that name is already registered",
                ));
            }
            None => {}
        }
        tools.push(Entry {
            tool,
            policy,
            callers,
        });
        drop(tools);
        if let Some(stats) = &self.stats {
            note_seen(stats, &name);
        }
        Ok(())
    }

    /// Adds a tool; a name that is not [valid](valid_tool_name) or already
    /// registered is refused.
    pub fn register(
        &self,
        tool: Arc<dyn Tool>,
        policy: ToolPolicy,
        callers: Callers,
    ) -> Result<(), ToolError> {
        self.add(tool, policy, callers, false)
    }

    /// Adds a tool, or replaces the one of the same name.
    pub fn replace(
        &self,
        tool: Arc<dyn Tool>,
        policy: ToolPolicy,
        callers: Callers,
    ) -> Result<(), ToolError> {
        self.add(tool, policy, callers, true)
    }

    /// Removes the tool called `name`; whether there was one.
    pub fn unregister(&self, name: &str) -> bool {
        let Some(tools) = self.tools.upgrade() else {
            return false;
        };
        let mut tools = tools.write().unwrap_or_else(|p| p.into_inner());
        let before = tools.len();
        tools.retain(|e| e.tool.name() != name);
        tools.len() != before
    }
}

/// The registered tools, each with its call policy.
pub struct ToolRegistry {
    tools: Arc<RwLock<Vec<Entry>>>,
    /// The generator `reasoning` answers with (the planner uses it too).
    generator: Option<Arc<dyn llm::LlmClient>>,
    /// Usage statistics and health, when kept.
    stats: Option<Arc<ToolStats>>,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRegistry")
            .field("tools", &self.names())
            .finish()
    }
}

impl ToolRegistry {
    /// The tools config names: the built-in tools in `tools.enabled` (the
    /// generator only when `reasoning` is enabled), then the enabled web
    /// tools, run-time tools and other MCP servers' tools, with usage
    /// statistics in `<data_dir>/tool_stats.sqlite3`. A generator that is
    /// not set up (Gemini without `GEMINI_API_KEY`) fails here, before any
    /// question is asked.
    pub fn from_config(config: &Config, kb: Arc<KnowledgeBase>) -> crate::error::Result<Self> {
        let generator = if config.tools.enabled.iter().any(|n| n == "reasoning") {
            Some(llm::from_config(&config.llm, kb.embedder_handle())?)
        } else {
            None
        };
        Self::from_config_with(config, kb, generator)
    }

    /// [`from_config`](Self::from_config) with a given generator for
    /// `reasoning` (required when it is enabled).
    pub fn from_config_with(
        config: &Config,
        kb: Arc<KnowledgeBase>,
        generator: Option<Arc<dyn llm::LlmClient>>,
    ) -> crate::error::Result<Self> {
        let stats = ToolStats::open(&config.tool_stats_path(), config.tools.reflection.clone())?;
        let registry = Self::builtins(config, kb.clone(), generator)?.with_stats(Arc::new(stats));
        extend(&registry, config, &kb)?;
        Ok(registry)
    }

    /// The built-in tools named in `tools.enabled`, and no others.
    pub fn builtins(
        config: &Config,
        kb: Arc<KnowledgeBase>,
        generator: Option<Arc<dyn llm::LlmClient>>,
    ) -> Result<Self, ToolError> {
        let tc = &config.tools;
        let mut tools = Vec::new();
        for name in &tc.enabled {
            let entry = match name.as_str() {
                "rag_search" => Entry {
                    tool: Arc::new(RagSearch::new(kb.clone(), tc.rag_search.limit)),
                    policy: tc.rag_search.policy(),
                    callers: tc.rag_search.callers,
                },
                "reasoning" => {
                    let generator = generator.clone().ok_or_else(|| {
                        ToolError::new(
                            "reasoning",
                            ToolErrorKind::Failed,
                            "enabled without a generator",
                        )
                    })?;
                    Entry {
                        tool: Arc::new(Reasoning::new(generator)?),
                        policy: tc.reasoning.policy(),
                        callers: tc.reasoning.callers,
                    }
                }
                "ask_user" => Entry {
                    tool: Arc::new(AskUser),
                    policy: tc.ask_user.policy(),
                    callers: tc.ask_user.callers,
                },
                other => {
                    return Err(ToolError::new(
                        other,
                        ToolErrorKind::Unknown,
                        format!(
                            "unknown tool in tools.enabled (known: {})",
                            super::TOOL_NAMES.join(", ")
                        ),
                    ));
                }
            };
            tools.push(entry);
        }
        // Kept only when `reasoning` uses it (the planner asks the same model).
        let generator = generator.filter(|_| tools.iter().any(|e| e.tool.name() == "reasoning"));
        Ok(Self {
            tools: Arc::new(RwLock::new(tools)),
            generator,
            stats: None,
        })
    }

    /// A registry of the given tools, seen by every caller (for tests and
    /// embedding applications).
    pub fn with_tools(tools: Vec<(Arc<dyn Tool>, ToolPolicy)>) -> Self {
        Self {
            tools: Arc::new(RwLock::new(
                tools
                    .into_iter()
                    .map(|(tool, policy)| Entry {
                        tool,
                        policy,
                        callers: Callers::ALL,
                    })
                    .collect(),
            )),
            generator: None,
            stats: None,
        }
    }

    /// Keeps usage statistics (and health marks) in `stats`, which learns
    /// of every tool registered from now on.
    pub fn with_stats(mut self, stats: Arc<ToolStats>) -> Self {
        for name in self.names() {
            note_seen(&stats, &name);
        }
        self.stats = Some(stats);
        self
    }

    /// The statistics store, when kept.
    pub fn stats(&self) -> Option<&Arc<ToolStats>> {
        self.stats.as_ref()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Vec<Entry>> {
        self.tools.read().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds a tool; a name that is not [valid](valid_tool_name) or already
    /// registered is refused.
    pub fn register(
        &self,
        tool: Arc<dyn Tool>,
        policy: ToolPolicy,
        callers: Callers,
    ) -> Result<(), ToolError> {
        self.registrar().register(tool, policy, callers)
    }

    /// Adds a tool, or replaces the one of the same name (a run-time
    /// tool's new version) in one step: no call sees it missing.
    pub fn replace(
        &self,
        tool: Arc<dyn Tool>,
        policy: ToolPolicy,
        callers: Callers,
    ) -> Result<(), ToolError> {
        self.registrar().replace(tool, policy, callers)
    }

    /// Removes the tool called `name`; whether there was one.
    pub fn unregister(&self, name: &str) -> bool {
        self.registrar().unregister(name)
    }

    /// A handle that adds and removes tools later (a server that comes
    /// back, a tool the agent creates during a call) without keeping the
    /// registry alive.
    pub fn registrar(&self) -> Registrar {
        Registrar {
            tools: Arc::downgrade(&self.tools),
            stats: self.stats.clone(),
        }
    }

    /// The generator `reasoning` answers with, when it is enabled.
    pub fn generator(&self) -> Option<Arc<dyn llm::LlmClient>> {
        self.generator.clone()
    }

    fn health(&self, name: &str) -> Health {
        self.stats.as_ref().map_or(Health::Ok, |s| s.health(name))
    }

    /// What `caller` is offered: the tools its policy lets it see, not
    /// disabled; an unreliable tool's description starts with the mark.
    pub fn catalogue(&self, caller: Caller) -> Vec<CatalogueEntry> {
        self.read()
            .iter()
            .filter(|e| e.callers.allows(caller))
            .filter_map(|e| {
                let name = e.tool.name().to_string();
                let description = match self.health(&name) {
                    Health::Ok => e.tool.description().to_string(),
                    Health::Unreliable(why) => {
                        format!("[unreliable: {why}] {}", e.tool.description())
                    }
                    Health::Disabled(_) => return None,
                };
                Some(CatalogueEntry {
                    name,
                    description,
                    input_schema: e.tool.input_schema(),
                })
            })
            .collect()
    }

    /// What a planner may use: the agent's catalogue but `ask_user`
    /// (whether to ask a human is the executor's decision, not the plan's).
    pub fn plannable(&self) -> Vec<crate::plan::ToolSpec> {
        self.catalogue(Caller::Agent)
            .into_iter()
            .filter(|t| t.name != "ask_user")
            .map(|t| crate::plan::ToolSpec {
                name: t.name,
                description: t.description,
                input_schema: t.input_schema,
            })
            .collect()
    }

    /// Every registered tool with its policy, origin, statistics and health.
    pub fn describe(&self) -> Vec<ToolInfo> {
        self.read()
            .iter()
            .map(|e| {
                let name = e.tool.name().to_string();
                let stats = self.stats.as_ref().and_then(|s| match s.usage(&name) {
                    Ok(u) => Some(u),
                    Err(err) => {
                        tracing::warn!(tool = %name, error = %err, "cannot read tool statistics");
                        None
                    }
                });
                ToolInfo {
                    description: e.tool.description().to_string(),
                    input_schema: e.tool.input_schema(),
                    origin: e.tool.origin(),
                    timeout_seconds: e.policy.timeout_seconds,
                    retry_count: e.policy.retry_count,
                    callers: e.callers.list(),
                    stats,
                    health: self.health(&name),
                    name,
                }
            })
            .collect()
    }

    /// Names of the registered tools, in registration order.
    pub fn names(&self) -> Vec<String> {
        self.read()
            .iter()
            .map(|e| e.tool.name().to_string())
            .collect()
    }

    /// The tool called `name`, if registered.
    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.read()
            .iter()
            .find(|e| e.tool.name() == name)
            .map(|e| e.tool.clone())
    }

    /// Whether `caller` may call the tool `name` (registered, its policy
    /// lets the caller see it, not disabled).
    pub fn visible_to(&self, name: &str, caller: Caller) -> bool {
        self.read()
            .iter()
            .any(|e| e.tool.name() == name && e.callers.allows(caller))
            && !matches!(self.health(name), Health::Disabled(_))
    }

    /// Calls a tool under its policy. Never fails: a failure is a result
    /// with `success: false`, the error and suggestions.
    pub fn call(&self, name: &str, input: &Value) -> ToolResult {
        self.call_within(name, input, None)
    }

    /// [`call`](Self::call) with a per-call timeout instead of the tool's
    /// `timeout_seconds` (a plan step's `timeout`).
    pub fn call_within(&self, name: &str, input: &Value, timeout: Option<Duration>) -> ToolResult {
        self.call_until(name, input, timeout, &AtomicBool::new(false))
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
        let result = call_with_policy(&tool, &policy, input, timeout, cancel, started);
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

fn note_seen(stats: &ToolStats, name: &str) {
    if let Err(e) = stats.seen(name) {
        tracing::warn!(tool = name, error = %e, "cannot record the tool in the statistics");
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
        let outcome = call_with_timeout(tool.clone(), input.clone(), timeout, cancel);
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
) -> Result<ToolResult, ToolError> {
    let name = tool.name().to_string();
    let name = name.as_str();
    let (tx, rx) = mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name(format!("tool-{}", crate::text::truncate_chars(name, 40)))
        .spawn(move || {
            // The receiver may be gone after a timeout; nothing to do then.
            let _ = tx.send(tool.execute(&input));
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

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use serde_json::json;

    use super::*;
    use crate::confidence::Factors;
    use crate::tools::ToolOutput;

    /// Fails with `kind` the first `failures` calls, sleeps `sleep` on each.
    struct Fake {
        calls: AtomicU32,
        failures: u32,
        kind: ToolErrorKind,
        sleep: Duration,
    }

    impl Fake {
        fn new(failures: u32, kind: ToolErrorKind, sleep_ms: u64) -> Arc<Self> {
            Arc::new(Self {
                calls: AtomicU32::new(0),
                failures,
                kind,
                sleep: Duration::from_millis(sleep_ms),
            })
        }
    }

    impl Tool for Fake {
        fn name(&self) -> &'static str {
            "fake"
        }
        fn description(&self) -> &'static str {
            "test double"
        }
        fn input_schema(&self) -> Value {
            json!({"type": "object"})
        }
        fn execute(&self, _input: &Value) -> Result<ToolResult, ToolError> {
            let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
            std::thread::sleep(self.sleep);
            if n <= self.failures {
                return Err(ToolError::new("fake", self.kind, format!("failure {n}")));
            }
            Ok(ToolResult::ok(ToolOutput::None, vec![], Factors::default()))
        }
    }

    fn policy(timeout_ms: u64, retries: u32) -> ToolPolicy {
        ToolPolicy {
            timeout_seconds: timeout_ms as f64 / 1000.0,
            retry_count: retries,
            retry_delay_seconds: 0.01,
        }
    }

    fn registry(tool: Arc<Fake>, p: ToolPolicy) -> ToolRegistry {
        ToolRegistry::with_tools(vec![(tool as Arc<dyn Tool>, p)])
    }

    #[test]
    fn transient_failures_are_retried_until_success() {
        let fake = Fake::new(2, ToolErrorKind::Transient, 0);
        let r = registry(fake.clone(), policy(1000, 2)).call("fake", &json!({}));
        assert!(r.success, "{r:?}");
        assert_eq!(r.attempts, 3);
        assert_eq!(fake.calls.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn retries_stop_at_retry_count() {
        let fake = Fake::new(5, ToolErrorKind::Transient, 0);
        let r = registry(fake.clone(), policy(1000, 2)).call("fake", &json!({}));
        assert!(!r.success);
        assert_eq!(r.attempts, 3);
        assert!(r.error.as_deref().unwrap().contains("failure 3"), "{r:?}");
        assert!(!r.suggestions.is_empty());
    }

    #[test]
    fn invalid_input_and_hard_failures_are_not_retried() {
        for kind in [ToolErrorKind::InvalidInput, ToolErrorKind::Failed] {
            let fake = Fake::new(1, kind, 0);
            let r = registry(fake.clone(), policy(1000, 3)).call("fake", &json!({}));
            assert!(!r.success);
            assert_eq!(
                (r.attempts, fake.calls.load(Ordering::SeqCst)),
                (1, 1),
                "{kind:?}"
            );
        }
    }

    #[test]
    fn a_slow_call_times_out_and_is_retried() {
        // Sleeps 300 ms every time; timeout 50 ms; one retry.
        let fake = Fake::new(0, ToolErrorKind::Failed, 300);
        let started = Instant::now();
        let r = registry(fake.clone(), policy(50, 1)).call("fake", &json!({}));
        assert!(!r.success);
        assert_eq!(r.attempts, 2);
        assert!(
            r.error.as_deref().unwrap().contains("no result within"),
            "{r:?}"
        );
        // Two 50 ms waits and a 10 ms backoff: the registry did not wait for
        // the tool's two 300 ms sleeps.
        assert!(
            started.elapsed() < Duration::from_millis(550),
            "{:?}",
            started.elapsed()
        );
        assert!(r.suggestions[0].contains("timeout_seconds"));
    }

    #[test]
    fn unknown_tool_is_a_failed_result_naming_the_enabled_ones() {
        let r = registry(Fake::new(0, ToolErrorKind::Failed, 0), policy(100, 0))
            .call("web_search", &json!({}));
        assert!(!r.success);
        assert!(
            r.error.as_deref().unwrap().contains("enabled: fake"),
            "{r:?}"
        );
    }
}
