//! One registry for every tool: tools join while GRACE serves, each seen
//! only by the callers its policy names; usage statistics survive a
//! restart; reflection marks a tool that keeps failing the same way
//! unreliable (the catalogue says so) and, when configured, disables it
//! until `grace tools enable`. Shown through the library, the CLI and HTTP.

use crate::support::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use grace::config::{Caller, Callers, ToolPolicy};
use grace::tools::stats::Health;
use grace::tools::{Tool, ToolError, ToolErrorKind, ToolOutput, ToolResult};
use serde_json::{Value, json};

/// `grace --config FILE ARGS` in `dir`, FILE being `config` written there:
/// another process on the same data folder.
fn cli(dir: &std::path::Path, config: &grace::Config, args: &[&str]) -> std::process::Output {
    let file = dir.join("grace.yml");
    std::fs::write(&file, config.to_yaml().unwrap()).unwrap();
    let mut all = vec!["--config", file.to_str().unwrap()];
    all.extend_from_slice(args);
    common::grace(dir, &all)
}

/// A tool outside GRACE's own that fails with `kind` while `failing` is
/// above zero (each call counts it down), else returns data.
struct Flaky {
    name: String,
    kind: ToolErrorKind,
    failing: AtomicU32,
}

impl Flaky {
    fn new(name: &str, kind: ToolErrorKind, failing: u32) -> Arc<Self> {
        Arc::new(Self {
            name: name.into(),
            kind,
            failing: AtomicU32::new(failing),
        })
    }
}

impl Tool for Flaky {
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &str {
        "Looks up a ticket"
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"id": {"type": "string"}}})
    }
    fn execute(
        &self,
        _input: &Value,
        _scope: &grace::access::ReadScope,
    ) -> Result<ToolResult, ToolError> {
        let left = self.failing.load(Ordering::SeqCst);
        if left > 0 {
            self.failing.store(left - 1, Ordering::SeqCst);
            return Err(ToolError::new(
                &self.name,
                self.kind,
                format!("ticket service said 503 ({left} left)"),
            ));
        }
        Ok(ToolResult::ok(
            ToolOutput::Data(json!({"status": "open"})),
            vec![],
            Default::default(),
        ))
    }
}

const NO_RETRY: ToolPolicy = ToolPolicy {
    timeout_seconds: 5.0,
    retry_count: 0,
    retry_delay_seconds: 0.0,
};

fn offered(grace: &grace::Grace, caller: Caller) -> Vec<(String, String)> {
    grace
        .registry()
        .catalogue(caller)
        .into_iter()
        .map(|t| (t.name, t.description))
        .collect()
}

#[tokio::test]
async fn statistics_survive_a_restart_and_show_in_list_stats_and_status() {
    let dir = tempfile::tempdir().unwrap();
    let config = common::config(dir.path());
    let grace = common::sample_service(config.clone()).await;
    for q in ["roll back a deployment", "ORB-2001", ""] {
        grace.registry().call(
            "rag_search",
            &json!({"query": q}),
            &grace::access::ReadScope::All,
        );
    }
    let usage = |g: &grace::Grace| {
        g.registry()
            .describe()
            .into_iter()
            .find(|t| t.name == "rag_search")
            .and_then(|t| t.stats)
            .unwrap()
    };
    let before = usage(&grace);
    assert_eq!((before.calls, before.successes), (3, 2), "{before:?}");
    assert_eq!(before.failures.get("invalid_input"), Some(&1));
    assert!(before.p50_ms.is_some() && before.p95_ms >= before.p50_ms);
    drop(grace);

    // Another process, then the library again: the figures are kept.
    let out = cli(dir.path(), &config, &["--json", "tools", "stats"]);
    assert!(out.status.success(), "{}", common::output_text(&out));
    let stats: Value = serde_json::from_slice(&out.stdout).unwrap();
    // Every tool registered is listed, called or not.
    let calls: Vec<(&str, u64)> = stats["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["name"].as_str().unwrap(), t["calls"].as_u64().unwrap()))
        .collect();
    assert_eq!(
        calls,
        vec![("ask_user", 0), ("rag_search", 3), ("reasoning", 0)]
    );

    let out = cli(dir.path(), &config, &["--json", "tools", "list"]);
    assert!(out.status.success(), "{}", common::output_text(&out));
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rag = list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "rag_search")
        .unwrap();
    assert_eq!(rag["origin"]["kind"], "built_in");
    assert_eq!(rag["input_schema"]["required"], json!(["query"]));
    assert_eq!(rag["callers"], json!(["agent", "mcp", "http"]));
    assert_eq!(rag["timeout_seconds"], json!(10.0));
    assert_eq!(rag["stats"]["calls"], 3);
    assert_eq!(rag["health"], "ok");

    let out = cli(dir.path(), &config, &["--json", "status"]);
    let status: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(status["tools"][1]["name"], "rag_search");
    assert_eq!(status["tools"][1]["calls"], 3);

    let grace = common::service(config);
    assert_eq!(usage(&grace), before, "the same figures after a restart");
}

#[tokio::test]
async fn the_same_failure_three_times_marks_a_tool_unreliable_for_agent_and_planner() {
    let dir = tempfile::tempdir().unwrap();
    let config = common::config(dir.path());
    let grace = common::service(config.clone());
    let flaky = Flaky::new("mcp.tickets.lookup", ToolErrorKind::Transient, 3);
    grace
        .registry()
        .register(flaky, NO_RETRY, Callers::ALL)
        .unwrap();
    for _ in 0..2 {
        assert!(
            !grace
                .registry()
                .call(
                    "mcp.tickets.lookup",
                    &json!({}),
                    &grace::access::ReadScope::All
                )
                .success
        );
    }
    let description = |g: &grace::Grace| {
        offered(g, Caller::Agent)
            .into_iter()
            .find(|(n, _)| n == "mcp.tickets.lookup")
            .map(|(_, d)| d)
    };
    assert_eq!(description(&grace).as_deref(), Some("Looks up a ticket"));
    assert!(
        !grace
            .registry()
            .call(
                "mcp.tickets.lookup",
                &json!({}),
                &grace::access::ReadScope::All
            )
            .success
    );
    let marked = description(&grace).unwrap();
    assert!(
        marked.starts_with("[unreliable: 3 transient failures in a row]"),
        "{marked}"
    );
    let planned = grace.registry().plannable();
    let spec = planned
        .iter()
        .find(|t| t.name == "mcp.tickets.lookup")
        .unwrap();
    assert!(spec.description.starts_with("[unreliable"), "{spec:?}");

    // The report names it and its recurring failure; a success clears it.
    let out = cli(dir.path(), &config, &["--json", "tools", "reflect"]);
    assert!(out.status.success(), "{}", common::output_text(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["unreliable"][0][0], "mcp.tickets.lookup");
    assert_eq!(
        report["never_used"],
        json!(["ask_user", "rag_search", "reasoning"])
    );
    let pattern = &report["patterns"][0];
    assert_eq!(pattern["count"], 3);
    assert_eq!(
        pattern["pattern"],
        "mcp.tickets.lookup: ticket service said ### (# left)"
    );
    let out = cli(dir.path(), &config, &["tools", "reflect"]);
    let text = common::output_text(&out);
    assert!(text.contains("mcp.tickets.lookup: UNRELIABLE"), "{text}");

    assert!(
        grace
            .registry()
            .call(
                "mcp.tickets.lookup",
                &json!({}),
                &grace::access::ReadScope::All
            )
            .success
    );
    assert_eq!(description(&grace).as_deref(), Some("Looks up a ticket"));
}

#[tokio::test]
async fn disable_after_takes_a_tool_away_until_an_admin_enables_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = common::config(dir.path());
    config.tools.reflection.failures = 2;
    config.tools.reflection.disable_after = 3;
    let grace = common::service(config.clone());
    let flaky = Flaky::new("web_fetch", ToolErrorKind::Timeout, 3);
    grace
        .registry()
        .register(flaky, NO_RETRY, Callers::ALL)
        .unwrap();
    for _ in 0..3 {
        grace
            .registry()
            .call("web_fetch", &json!({}), &grace::access::ReadScope::All);
    }
    let stats = grace.registry().stats().unwrap();
    assert!(matches!(stats.health("web_fetch"), Health::Disabled(_)));
    assert!(
        !offered(&grace, Caller::Agent)
            .iter()
            .any(|(n, _)| n == "web_fetch")
    );
    let refused = grace
        .registry()
        .call("web_fetch", &json!({}), &grace::access::ReadScope::All);
    assert!(!refused.success);
    assert!(
        refused
            .error
            .as_deref()
            .unwrap()
            .contains("disabled after 3 timeout failures")
    );
    assert!(refused.suggestions[0].contains("grace tools enable web_fetch"));

    // `grace tools enable` in another process counts at once here.
    let out = cli(dir.path(), &config, &["tools", "enable", "web_fetch"]);
    assert!(out.status.success(), "{}", common::output_text(&out));
    assert!(
        offered(&grace, Caller::Agent)
            .iter()
            .any(|(n, _)| n == "web_fetch")
    );
    assert!(
        grace
            .registry()
            .call("web_fetch", &json!({}), &grace::access::ReadScope::All)
            .success
    );
}

#[test]
fn callers_decide_who_sees_a_tool_and_names_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = common::config(dir.path());
    config.tools.ask_user.callers = Callers::from(vec![Caller::Http]);
    let grace = common::service(config);
    let registry = grace.registry();
    let agent = offered(&grace, Caller::Agent);
    assert!(!agent.iter().any(|(n, _)| n == "ask_user"), "{agent:?}");
    assert!(registry.visible_to("ask_user", Caller::Http));
    assert!(!registry.visible_to("ask_user", Caller::Mcp));

    // Names: namespaced, bounded, unique.
    for bad in [
        "",
        "1tool",
        "rt..x",
        "a b",
        "mcp.x.",
        &"x".repeat(65),
        "rt.é",
    ] {
        let tool = Flaky::new(bad, ToolErrorKind::Failed, 0);
        let err = registry.register(tool, NO_RETRY, Callers::ALL).unwrap_err();
        assert_eq!(err.kind, ToolErrorKind::InvalidInput, "{bad:?}");
    }
    let dup = Flaky::new("rag_search", ToolErrorKind::Failed, 0);
    assert!(registry.register(dup, NO_RETRY, Callers::ALL).is_err());
    let ok = Flaky::new("mcp.kb_two.find-issue", ToolErrorKind::Failed, 0);
    registry.register(ok, NO_RETRY, Callers::AGENT).unwrap();
    assert!(registry.unregister("mcp.kb_two.find-issue"));
    assert!(registry.get("mcp.kb_two.find-issue").is_none());
}

#[tokio::test]
async fn http_lists_and_calls_the_tools_offered_to_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = common::config(dir.path());
    config.tools.ask_user.callers = Callers::AGENT;
    let grace = common::sample_service(config).await;
    let server = common::serve(grace).await;
    let http = reqwest::Client::new();

    let list: Value = http
        .get(format!("{}/v1/tools", server.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let names: Vec<&str> = list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["rag_search", "reasoning"]);

    let call = |name: &str, body: Value| {
        let http = http.clone();
        let url = format!("{}/v1/tools/{name}/call", server.base);
        async move {
            let r = http.post(url).json(&body).send().await.unwrap();
            (r.status().as_u16(), r.json::<Value>().await.unwrap())
        }
    };
    let (status, body) = call(
        "rag_search",
        json!({"input": {"query": "ORB-2001", "limit": 2}}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["success"], true);
    assert_eq!(body["output"]["data"].as_array().unwrap().len(), 2);
    // Sources are shown relative, never as the server's paths.
    assert!(
        !body["sources"][0].as_str().unwrap().starts_with('/'),
        "{body}"
    );

    let (status, body) = call("rag_search", json!({"input": {"query": ""}})).await;
    assert_eq!((status, &body["success"]), (200, &json!(false)));
    assert_eq!(body["error_kind"], "invalid_input");

    // Not offered to HTTP, unknown, hostile names: 404; a bad body: 4xx.
    for name in ["ask_user", "nope", "rt.%2e%2e%2fetc", &"x".repeat(300)] {
        let (status, body) = call(name, json!({"input": {}})).await;
        assert_eq!(status, 404, "{name}: {body}");
    }
    let (status, _) = call("rag_search", json!({"input": "query"})).await;
    assert!((400..500).contains(&status), "{status}");
    let (status, _) = call("rag_search", json!({"input": {}, "extra": 1})).await;
    assert!((400..500).contains(&status), "{status}");

    let status: Value = http
        .get(format!("{}/v1/status", server.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let rag = &status["tools"][0];
    assert_eq!(rag["name"], "rag_search");
    assert_eq!(rag["stats"]["calls"], 2);
    assert_eq!(status["tools"].as_array().unwrap().len(), 2);
    server.stop().await;
}
