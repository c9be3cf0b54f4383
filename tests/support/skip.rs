//! Tests that need a program a plain clone may lack (a Qdrant server,
//! Chromium) skip themselves when it is missing, and say so: one line per
//! test module on the terminal, written past the test harness's capture,
//! and the same line in `$GRACE_SKIP_LOG`, which `scripts/test` sums up at
//! the end. Under `CI=true` or the program's `GRACE_REQUIRE_…=1` a missing
//! program fails the test instead: a CI run never skips quietly.

use std::collections::BTreeSet;
use std::io::Write;
use std::sync::Mutex;

/// The (test module, missing program) pairs already said.
static SAID: Mutex<BTreeSet<(String, String)>> = Mutex::new(BTreeSet::new());

/// `false`, after saying (once per test module) that the tests needing
/// `what` are skipped and what would run them (`fix`); panics instead
/// under `CI=true` or `require_var=1`.
pub fn skipped(what: &str, fix: &str, require_var: &str) -> bool {
    let set = |var: &str, value: &str| std::env::var(var).is_ok_and(|v| v == value);
    assert!(
        !set("CI", "true") && !set(require_var, "1"),
        "missing {what}: {fix} (CI=true or {require_var}=1 requires it)"
    );
    let module = module();
    let first = SAID
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .insert((module.clone(), what.to_string()));
    if first {
        let line = format!("SKIPPED in {module}: the tests that need {what}: {fix}\n");
        let _ = std::io::stderr().write_all(line.as_bytes());
        if let Some(log) = std::env::var_os("GRACE_SKIP_LOG").filter(|l| !l.is_empty()) {
            let _ = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(log)
                .and_then(|mut f| f.write_all(line.as_bytes()));
        }
    }
    false
}

/// The running test's module (`store_suite`), from the name the test
/// harness gives the test's thread (`store_suite::a_test`).
fn module() -> String {
    let thread = std::thread::current();
    let name = thread.name().unwrap_or("it");
    name.split("::").next().unwrap_or(name).to_string()
}
