//! Tests that need a program a plain clone may lack (a Qdrant server,
//! Chromium) skip themselves when it is missing, and say so: one line per
//! test binary on the terminal, written past the test harness's capture,
//! and the same line in `$GRACE_SKIP_LOG`, which `scripts/test` sums up at
//! the end. Under `CI=true` or the program's `GRACE_REQUIRE_…=1` a missing
//! program fails the test instead: a CI run never skips quietly.

use std::io::Write;
use std::sync::Once;

static SAID: Once = Once::new();

/// `false`, after saying (once per test binary) that the tests needing
/// `what` are skipped and what would run them (`fix`); panics instead
/// under `CI=true` or `require_var=1`.
pub fn skipped(what: &str, fix: &str, require_var: &str) -> bool {
    let set = |var: &str, value: &str| std::env::var(var).is_ok_and(|v| v == value);
    assert!(
        !set("CI", "true") && !set(require_var, "1"),
        "missing {what}: {fix} (CI=true or {require_var}=1 requires it)"
    );
    SAID.call_once(|| {
        let line = format!(
            "SKIPPED in {}: the tests that need {what}: {fix}\n",
            binary()
        );
        let _ = std::io::stderr().write_all(line.as_bytes());
        if let Some(log) = std::env::var_os("GRACE_SKIP_LOG").filter(|l| !l.is_empty()) {
            let _ = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(log)
                .and_then(|mut f| f.write_all(line.as_bytes()));
        }
    });
    false
}

/// The test binary's name without cargo's hash (`store_suite`).
fn binary() -> String {
    let exe = std::env::current_exe().unwrap_or_default();
    let stem = exe.file_stem().unwrap_or_default().to_string_lossy();
    match stem.rsplit_once('-') {
        Some((name, hash)) if hash.chars().all(|c| c.is_ascii_hexdigit()) => name.to_string(),
        _ => stem.into_owned(),
    }
}
