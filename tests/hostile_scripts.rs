//! Hostile run-time tools: scripts that loop, allocate, recurse, flood the
//! output or try to reach outside the sandbox end as failures of the right
//! kind, and GRACE (the process, other calls) is not harmed.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use grace::Config;
use grace::config::ToolPolicy;
use grace::tools::runtime::sandbox::{self, Host, Limits, SearchFn};
use grace::tools::runtime::{Actor, Example, RuntimeError, RuntimeTools, ToolSpec};
use grace::tools::{Tool, ToolErrorKind, ToolOutput, ToolRegistry};
use serde_json::{Value, json};

fn limits(time_ms: u64) -> Limits {
    Limits {
        memory_bytes: 16 << 20,
        stack_bytes: 256 << 10,
        max_output_bytes: 65_536,
        time: Duration::from_millis(time_ms),
    }
}

fn run(code: &str) -> Result<Value, sandbox::SandboxError> {
    sandbox::run(code, &json!({}), limits(1_000), &Host::default())
}

fn fails_with(code: &str, kind: ToolErrorKind, needle: &str) {
    let e = run(code).expect_err(code);
    assert_eq!(e.kind, kind, "{code}: {e:?}");
    assert!(e.message.contains(needle), "{code}: {e:?}");
}

#[test]
fn an_infinite_loop_ends_at_the_budget_as_a_timeout() {
    for code in [
        "function run() { for (;;) {} }",
        // Catching the interruption buys nothing: every later check interrupts.
        "function run() { for (;;) { try { for (;;) {} } catch (e) {} } }",
        "async function run() { for (;;) { await null; } }",
        // Reading the error's message, or the result, runs the script again.
        "class E extends Error { get message() { for (;;) {} } } function run() { throw new E(); }",
        "function run() { return { get x() { for (;;) {} } }; }",
    ] {
        let started = Instant::now();
        let e = sandbox::run(code, &json!({}), limits(300), &Host::default()).unwrap_err();
        assert_eq!(e.kind, ToolErrorKind::Timeout, "{code}: {e:?}");
        assert!(
            started.elapsed() < Duration::from_millis(1_500),
            "{code}: {:?}",
            started.elapsed()
        );
    }
}

#[test]
fn a_memory_bomb_fails_and_the_next_call_is_fine() {
    fails_with(
        "function run() { const a = []; for (;;) { a.push('x'.repeat(1 << 16) + a.length); } }",
        ToolErrorKind::Failed,
        "memory",
    );
    fails_with(
        "function run() { let s = 'x'; for (;;) { s = s + s; } }",
        ToolErrorKind::Failed,
        "memory",
    );
    assert_eq!(
        run("function run() { return 'still here'; }"),
        Ok(json!("still here"))
    );
}

#[test]
fn deep_recursion_fails_on_the_stack_cap() {
    fails_with(
        "function f(n) { return f(n + 1) + 1; } function run() { return f(0); }",
        ToolErrorKind::Failed,
        "stack",
    );
}

#[test]
fn a_huge_output_is_refused_not_cut() {
    fails_with(
        "function run() { return 'x'.repeat(100000); }",
        ToolErrorKind::Failed,
        "max_output_bytes",
    );
    // Nested deeper than JSON can be read back: a failure, not a crash.
    let e =
        run("function run() { let a = []; for (let i = 0; i < 100000; i++) a = [a]; return a; }")
            .unwrap_err();
    assert_eq!(e.kind, ToolErrorKind::Failed, "{e:?}");
    // Cyclic values cannot be serialised: a failure, not a hang.
    let e = run("function run() { const a = {}; a.a = a; return a; }").unwrap_err();
    assert_eq!(e.kind, ToolErrorKind::Failed, "{e:?}");
}

#[test]
fn escape_attempts_find_nothing_to_escape_with() {
    // These bypass the creation check (the sandbox is the boundary).
    for code in [
        "function run() { return require('fs').readFileSync('/etc/passwd', 'utf8'); }",
        "function run() { return import('os'); }",
        "function run() { return eval('1 + 1'); }",
        "function run() { return Function('return this')(); }",
        "var g = this; function run() { return g.constructor.constructor('return 1')(); }",
        "function run() { return globalThis.constructor.constructor('return 1')(); }",
        "function run() { return (function(){}).constructor('return 1')(); }",
        "function run() { return (async function(){}).constructor('return 1')(); }",
        "function run() { return (function*(){}).constructor('yield 1')().next().value; }",
        "function run() { return (async function*(){}).constructor('yield 1')(); }",
        "function run() { return Reflect.construct(Object.getPrototypeOf(function(){}).constructor, ['return 1'])(); }",
        "function run() { return std.loadFile('/etc/passwd'); }",
        "function run() { return os.exec(['ls']); }",
        "function run() { return process.env; }",
        "function run() { return fetch('http://127.0.0.1/'); }",
    ] {
        let e = run(code).expect_err(code);
        assert_eq!(e.kind, ToolErrorKind::Failed, "{code}: {e:?}");
        // Refused by the language (not defined, or code generation refused).
        assert!(
            ["ReferenceError", "EvalError"]
                .iter()
                .any(|n| e.message.contains(n)),
            "{code}: {e:?}"
        );
    }
    // Nothing of the host's but `grace` is in the global scope.
    let globals = run(
        "function run() { return ['std','os','require','process','fetch','eval','print','scriptArgs','setTimeout']
            .filter(n => typeof globalThis[n] !== 'undefined'); }",
    );
    assert_eq!(globals, Ok(json!([])));
}

#[test]
fn fetch_exists_only_when_granted() {
    let absent = sandbox::run(
        "function run() { return typeof fetch; }",
        &json!({}),
        limits(1_000),
        &Host::default(),
    );
    assert_eq!(absent, Ok(json!("undefined")));
    let granted = Host {
        search: None,
        fetch: Some(Arc::new(|url: &str| {
            Ok(json!([{"source": url, "text": "page"}]))
        })),
        scope: Default::default(),
    };
    let present = sandbox::run(
        "function run() { return fetch('http://example.test/a')[0].source; }",
        &json!({}),
        limits(1_000),
        &granted,
    );
    assert_eq!(present, Ok(json!("http://example.test/a")));
}

/// A search callback returning one passage and counting its calls.
fn fake_search(calls: Arc<AtomicU32>) -> SearchFn {
    Arc::new(move |query: &str, k: usize, _: &grace::access::ReadScope| {
        calls.fetch_add(1, Ordering::SeqCst);
        Ok(json!([{"source": "/kb/a.md", "section": "A", "text": query, "score": 0.5, "k": k}]))
    })
}

#[test]
fn prototype_pollution_does_not_reach_host_results_or_later_calls() {
    let calls = Arc::new(AtomicU32::new(0));
    let host = Host {
        search: Some(fake_search(calls.clone())),
        fetch: None,
        scope: Default::default(),
    };
    // A setter on Object.prototype is not run by the host's results (their
    // properties are their own), and its getter does not shadow them.
    let code = "function run() {
        let hit = false;
        Object.defineProperty(Object.prototype, 'source', {
            get() { return 'evil'; }, set(v) { hit = true; }, configurable: true });
        Array.prototype.polluted = 'yes';
        const r = grace.search('rollback', 2);
        return {source: r[0].source, hit: hit};
    }";
    let out = sandbox::run(code, &json!({}), limits(1_000), &host);
    assert_eq!(out, Ok(json!({"source": "/kb/a.md", "hit": false})));
    // The next call has a fresh realm.
    let clean = sandbox::run(
        "function run() { return [({}).source === undefined, [].polluted === undefined]; }",
        &json!({}),
        limits(1_000),
        &host,
    );
    assert_eq!(clean, Ok(json!([true, true])));
}

#[test]
fn host_calls_are_bounded() {
    let calls = Arc::new(AtomicU32::new(0));
    let host = Host {
        search: Some(fake_search(calls.clone())),
        fetch: None,
        scope: Default::default(),
    };
    let e = sandbox::run(
        "function run() { for (let i = 0; i < 1000; i++) grace.search('q' + i, 1); }",
        &json!({}),
        limits(2_000),
        &host,
    )
    .unwrap_err();
    assert!(e.message.contains("host calls"), "{e:?}");
    assert_eq!(calls.load(Ordering::SeqCst), sandbox::MAX_HOST_CALLS);
    for code in [
        "function run() { return grace.search('q', 1000); }",
        "function run() { return grace.search('', 1); }",
        "function run() { return grace.search('x'.repeat(5000), 1); }",
    ] {
        let e = sandbox::run(code, &json!({}), limits(1_000), &host).unwrap_err();
        assert!(e.message.contains("RangeError"), "{code}: {e:?}");
    }
}

fn config(dir: &std::path::Path) -> Config {
    let mut c = Config::default();
    c.storage.data_dir = dir.to_path_buf();
    c
}

fn spec(name: &str, code: &str) -> ToolSpec {
    ToolSpec {
        name: name.to_string(),
        description: "test tool".to_string(),
        input_schema: json!({"type": "object"}),
        code: code.to_string(),
        examples: vec![Example {
            input: json!({}),
            expect: json!(1),
        }],
    }
}

#[test]
fn the_creation_check_refuses_escape_spellings_and_oversized_code() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path());
    c.tools.runtime.max_code_bytes = 200;
    let tools = RuntimeTools::open(&c, Host::default()).unwrap();
    let refused = tools
        .create(
            spec("escape", "function run() { return require('fs'); }"),
            Actor::Cli,
        )
        .unwrap_err();
    assert!(
        matches!(&refused, RuntimeError::Refused(p) if p[0].contains("require")),
        "{refused:?}"
    );
    let big = format!("function run() {{ return 1; }} // {}", "x".repeat(300));
    let refused = tools.create(spec("big", &big), Actor::Cli).unwrap_err();
    assert!(refused.to_string().contains("max_code_bytes"), "{refused}");
    // Refusals are audited; nothing was stored.
    let history = tools.history("escape").unwrap();
    assert_eq!(history.audit[0].action, "refuse");
    assert!(history.versions.is_empty());
    assert!(tools.list().unwrap().is_empty());
}

/// The burning script's budget.
const BUDGET: Duration = Duration::from_secs(4);

#[test]
fn grace_stays_responsive_while_a_script_burns_its_budget() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path());
    // The budget is long enough that the quick calls finish inside it even
    // on a loaded machine: the test asserts their order, not their speed.
    c.tools.runtime.timeout_seconds = BUDGET.as_secs_f64();
    let tools = RuntimeTools::open(&c, Host::default()).unwrap();
    let mut quick = spec("quick", "function run() { return 1; }");
    quick.examples = vec![Example {
        input: json!({}),
        expect: json!(1),
    }];
    let quick = tools.create(quick, Actor::Cli).unwrap();
    // A script that loops only when asked (its example does not).
    let burner = tools
        .create(
            spec(
                "burner",
                "function run(input) { if (input.burn) { for (;;) {} } return 1; }",
            ),
            Actor::Cli,
        )
        .unwrap();
    assert_eq!(burner.status, "verified");
    let policy = ToolPolicy {
        timeout_seconds: BUDGET.as_secs_f64(),
        retry_count: 0,
        retry_delay_seconds: 0.0,
    };
    let registry = Arc::new(ToolRegistry::with_tools(vec![
        (Arc::new(tools.tool(&quick)) as Arc<dyn Tool>, policy),
        (Arc::new(tools.tool(&burner)) as Arc<dyn Tool>, policy),
    ]));
    let r = registry.clone();
    let started = Instant::now();
    let burning = std::thread::spawn(move || {
        r.call(
            "rt.burner",
            &json!({"burn": true}),
            &grace::access::ReadScope::All,
        )
    });
    std::thread::sleep(Duration::from_millis(100));
    // Five quick calls, each answered while the burner still burns.
    for _ in 0..5 {
        let out = registry.call("rt.quick", &json!({}), &grace::access::ReadScope::All);
        assert!(out.success, "{out:?}");
        assert_eq!(out.output, ToolOutput::Data(json!(1)));
    }
    assert!(
        !burning.is_finished(),
        "the quick calls waited for the burner ({:?})",
        started.elapsed()
    );
    // The burner is stopped at its budget, not left running.
    while !burning.is_finished() {
        assert!(
            started.elapsed() < BUDGET + Duration::from_secs(10),
            "the burner ran past its budget"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let burnt = burning.join().unwrap();
    assert!(!burnt.success);
    assert_eq!(burnt.error_kind, Some(ToolErrorKind::Timeout), "{burnt:?}");
    assert!(started.elapsed() >= BUDGET, "{:?}", started.elapsed());
}

#[test]
fn an_oversized_or_non_object_input_is_refused_before_the_script() {
    let dir = tempfile::tempdir().unwrap();
    let tools = RuntimeTools::open(&config(dir.path()), Host::default()).unwrap();
    let stored = tools
        .create(
            spec("echo", "function run(input) { return 1; }"),
            Actor::Cli,
        )
        .unwrap();
    let tool = tools.tool(&stored);
    for input in [
        json!({"x": "y".repeat(100_000)}),
        json!([1, 2]),
        json!("text"),
    ] {
        let e = tool
            .execute(&input, &grace::access::ReadScope::All)
            .unwrap_err();
        assert_eq!(e.kind, ToolErrorKind::InvalidInput, "{e:?}");
    }
}
