//! Counts, percentiles, health marks, reflection and the kept history,
//! on a real SQLite file in a temporary folder.

use super::*;

fn fail(kind: ToolErrorKind) -> CallOutcome<'static> {
    CallOutcome {
        failure: Some(kind),
        error: Some("no result within 1.5 s"),
        latency: Duration::from_millis(1500),
    }
}

fn ok(ms: u64) -> CallOutcome<'static> {
    CallOutcome {
        failure: None,
        error: None,
        latency: Duration::from_millis(ms),
    }
}

fn open(dir: &std::path::Path, reflection: ReflectionConfig) -> ToolStats {
    let mut config = Config::default();
    config.storage.data_dir = dir.to_path_buf();
    config.tools.reflection = reflection;
    ToolStats::open(&config).unwrap()
}

#[test]
fn counts_and_percentiles_survive_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let stats = open(dir.path(), ReflectionConfig::default());
    for ms in 1..=100 {
        stats.record("rag_search", &ok(ms)).unwrap();
    }
    stats
        .record("rag_search", &fail(ToolErrorKind::Timeout))
        .unwrap();
    drop(stats);
    let stats = open(dir.path(), ReflectionConfig::default());
    let u = stats.usage("rag_search").unwrap();
    assert_eq!((u.calls, u.successes), (101, 100));
    assert_eq!(u.failures.get("timeout"), Some(&1));
    assert_eq!(u.p50_ms, Some(51.0));
    assert_eq!(u.p95_ms, Some(96.0));
    assert!(u.last_used.is_some());
    assert_eq!(stats.usage("never").unwrap().calls, 0);
}

#[test]
fn the_same_failure_in_a_row_marks_unreliable_and_a_success_clears_it() {
    let dir = tempfile::tempdir().unwrap();
    let stats = open(dir.path(), ReflectionConfig::default());
    // Two timeouts and a transient failure: not the same kind 3 times.
    stats.record("t", &fail(ToolErrorKind::Timeout)).unwrap();
    stats.record("t", &fail(ToolErrorKind::Timeout)).unwrap();
    assert_eq!(
        stats.record("t", &fail(ToolErrorKind::Transient)).unwrap(),
        Health::Ok
    );
    for _ in 0..2 {
        stats.record("t", &fail(ToolErrorKind::Transient)).unwrap();
    }
    assert!(matches!(stats.health("t"), Health::Unreliable(r) if r.contains("3 transient")));
    drop(stats);
    let stats = open(dir.path(), ReflectionConfig::default());
    assert!(
        matches!(stats.health("t"), Health::Unreliable(_)),
        "kept across a reopen"
    );
    assert_eq!(stats.record("t", &ok(5)).unwrap(), Health::Ok);
}

#[test]
fn disable_after_disables_until_enabled() {
    let dir = tempfile::tempdir().unwrap();
    let reflection = ReflectionConfig {
        failures: 2,
        disable_after: 4,
        ..ReflectionConfig::default()
    };
    let stats = open(dir.path(), reflection);
    for _ in 0..4 {
        stats.record("t", &fail(ToolErrorKind::Failed)).unwrap();
    }
    assert!(matches!(stats.health("t"), Health::Disabled(_)));
    stats.enable("t").unwrap();
    assert_eq!(stats.health("t"), Health::Ok);
    assert_eq!(stats.usage("t").unwrap().failures_in_a_row, 0);
}

#[test]
fn reflection_reports_unreliable_slow_unused_and_patterns() {
    let dir = tempfile::tempdir().unwrap();
    let reflection = ReflectionConfig {
        slow_seconds: 1.0,
        ..ReflectionConfig::default()
    };
    let stats = open(dir.path(), reflection);
    for _ in 0..3 {
        stats
            .record("slowpoke", &fail(ToolErrorKind::Timeout))
            .unwrap();
    }
    stats.record("quick", &ok(3)).unwrap();
    stats.seen("idle").unwrap();
    stats.seen("quick").unwrap();
    let r = stats.reflect().unwrap();
    assert_eq!(r.unreliable.len(), 1);
    assert_eq!(r.unreliable[0].0, "slowpoke");
    assert_eq!(r.slow, vec![("slowpoke".to_string(), 1500.0)]);
    assert_eq!(r.never_used, vec!["idle".to_string()]);
    assert_eq!(r.patterns[0].count, 3);
    assert_eq!(r.patterns[0].pattern, "no result within #.# s");
}

#[test]
fn only_the_last_history_calls_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let reflection = ReflectionConfig {
        history: 10,
        ..ReflectionConfig::default()
    };
    let stats = open(dir.path(), reflection);
    for ms in 1..=30 {
        stats.record("t", &ok(ms)).unwrap();
    }
    let u = stats.usage("t").unwrap();
    assert_eq!(u.calls, 30);
    // Percentiles over calls 21..=30 only.
    assert_eq!(u.p50_ms, Some(25.0));
}
