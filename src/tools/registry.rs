//! The tools a run may call, built from `tools.enabled`, and the call
//! policy: a timeout per call, retries with exponential backoff for
//! transient failures and timeouts only.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{AskUser, RagSearch, Reasoning, Tool, ToolError, ToolErrorKind, ToolResult};
use crate::config::{Config, ToolPolicy};
use crate::{KnowledgeBase, llm};

/// The enabled tools, each with its call policy.
pub struct ToolRegistry {
    tools: Vec<(Arc<dyn Tool>, ToolPolicy)>,
    /// The generator `reasoning` answers with (the planner uses it too).
    generator: Option<Arc<dyn llm::LlmClient>>,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRegistry")
            .field("tools", &self.names())
            .finish()
    }
}

impl ToolRegistry {
    /// Constructs the tools named in `tools.enabled`, and no others (the
    /// generator only when `reasoning` is enabled). A generator that is not
    /// set up (Gemini without `GEMINI_API_KEY`) fails here, before any
    /// question is asked.
    pub fn from_config(config: &Config, kb: Arc<KnowledgeBase>) -> crate::Result<Self> {
        let generator = if config.tools.enabled.iter().any(|n| n == "reasoning") {
            Some(llm::from_config(&config.llm, kb.embedder_handle())?)
        } else {
            None
        };
        Ok(Self::from_config_with(config, kb, generator)?)
    }

    /// [`from_config`](Self::from_config) with a given generator for
    /// `reasoning` (required when it is enabled).
    pub fn from_config_with(
        config: &Config,
        kb: Arc<KnowledgeBase>,
        generator: Option<Arc<dyn llm::LlmClient>>,
    ) -> Result<Self, ToolError> {
        let tc = &config.tools;
        let mut tools: Vec<(Arc<dyn Tool>, ToolPolicy)> = Vec::new();
        for name in &tc.enabled {
            let entry: (Arc<dyn Tool>, ToolPolicy) = match name.as_str() {
                "rag_search" => (
                    Arc::new(RagSearch::new(kb.clone(), tc.rag_search.limit)),
                    tc.rag_search.policy(),
                ),
                "reasoning" => {
                    let generator = generator.clone().ok_or_else(|| {
                        ToolError::new(
                            "reasoning",
                            ToolErrorKind::Failed,
                            "enabled without a generator",
                        )
                    })?;
                    (Arc::new(Reasoning::new(generator)?), tc.reasoning.policy())
                }
                "ask_user" => (Arc::new(AskUser), tc.ask_user.policy()),
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
        let generator = generator.filter(|_| tools.iter().any(|(t, _)| t.name() == "reasoning"));
        Ok(Self { tools, generator })
    }

    /// A registry of the given tools (for tests and embedding applications).
    pub fn with_tools(tools: Vec<(Arc<dyn Tool>, ToolPolicy)>) -> Self {
        Self {
            tools,
            generator: None,
        }
    }

    /// The generator `reasoning` answers with, when it is enabled.
    pub fn generator(&self) -> Option<Arc<dyn llm::LlmClient>> {
        self.generator.clone()
    }

    /// What a planner may use: every enabled tool but `ask_user` (whether
    /// to ask a human is the executor's decision, not the plan's).
    pub fn plannable(&self) -> Vec<crate::plan::ToolSpec> {
        self.tools
            .iter()
            .filter(|(t, _)| t.name() != "ask_user")
            .map(|(t, _)| crate::plan::ToolSpec {
                name: t.name().to_string(),
                description: t.description().to_string(),
                input_schema: t.input_schema(),
            })
            .collect()
    }

    /// Names of the enabled tools, in configuration order.
    pub fn names(&self) -> Vec<&'static str> {
        self.tools.iter().map(|(t, _)| t.name()).collect()
    }

    /// The tool called `name`, if enabled.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools
            .iter()
            .find(|(t, _)| t.name() == name)
            .map(|(t, _)| t)
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
    /// finish and its result discarded, as after a timeout.
    pub fn call_until(
        &self,
        name: &str,
        input: &Value,
        timeout: Option<Duration>,
        cancel: &AtomicBool,
    ) -> ToolResult {
        let started = Instant::now();
        let Some((tool, policy)) = self.tools.iter().find(|(t, _)| t.name() == name) else {
            let e = ToolError::new(
                name,
                ToolErrorKind::Unknown,
                format!("not an enabled tool (enabled: {})", self.names().join(", ")),
            );
            return ToolResult::failed(
                &e,
                vec![format!("use one of: {}", self.names().join(", "))],
            );
        };
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
    let name = tool.name();
    let (tx, rx) = mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name(format!("tool-{name}"))
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
            return Err(ToolError::new(name, ToolErrorKind::Failed, "cancelled"));
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
        ToolErrorKind::Failed | ToolErrorKind::Unknown => Vec::new(),
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
