//! The call policy: retries, their limit, timeouts and unknown tools.

use crate::access::ReadScope;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;

use super::*;
use crate::confidence::Factors;
use crate::tools::{ToolOutput, ToolResult};

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
    fn execute(&self, _input: &Value, _scope: &ReadScope) -> Result<ToolResult, ToolError> {
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
    let r = registry(fake.clone(), policy(1000, 2)).call(
        "fake",
        &json!({}),
        &crate::access::ReadScope::All,
    );
    assert!(r.success, "{r:?}");
    assert_eq!(r.attempts, 3);
    assert_eq!(fake.calls.load(Ordering::SeqCst), 3);
}

#[test]
fn retries_stop_at_retry_count() {
    let fake = Fake::new(5, ToolErrorKind::Transient, 0);
    let r = registry(fake.clone(), policy(1000, 2)).call(
        "fake",
        &json!({}),
        &crate::access::ReadScope::All,
    );
    assert!(!r.success);
    assert_eq!(r.attempts, 3);
    assert!(r.error.as_deref().unwrap().contains("failure 3"), "{r:?}");
    assert!(!r.suggestions.is_empty());
}

#[test]
fn invalid_input_and_hard_failures_are_not_retried() {
    for kind in [ToolErrorKind::InvalidInput, ToolErrorKind::Failed] {
        let fake = Fake::new(1, kind, 0);
        let r = registry(fake.clone(), policy(1000, 3)).call(
            "fake",
            &json!({}),
            &crate::access::ReadScope::All,
        );
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
    let r = registry(fake.clone(), policy(50, 1)).call(
        "fake",
        &json!({}),
        &crate::access::ReadScope::All,
    );
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
    let r = registry(Fake::new(0, ToolErrorKind::Failed, 0), policy(100, 0)).call(
        "web_search",
        &json!({}),
        &crate::access::ReadScope::All,
    );
    assert!(!r.success);
    assert!(
        r.error.as_deref().unwrap().contains("enabled: fake"),
        "{r:?}"
    );
}
