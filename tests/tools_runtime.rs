//! Run-time tools end to end: created, verified on their examples, stored
//! with versions and an audit log, registered (at start-up too) and called
//! through the registry; `grace.search` on the sample knowledge base;
//! `fetch` through `web_fetch` only when it is enabled; and who may create
//! (CLI, HTTP with the admin key, MCP when allowed, the agent only when
//! allowed).

use crate::support::common;

use std::sync::Arc;

use grace::confidence::Factors;
use grace::config::{Caller, Callers, ToolPolicy};
use grace::search::Passage;
use grace::tools::runtime::sandbox::Host;
use grace::tools::runtime::{Actor, Example, RuntimeError, RuntimeTools, ToolSpec};
use grace::tools::{Origin, Tool, ToolError, ToolOutput, ToolRegistry, ToolResult};
use grace::{Config, KnowledgeBase};
use serde_json::{Value, json};

fn word_count(expect: i64) -> ToolSpec {
    ToolSpec {
        name: "word_count".to_string(),
        description: "Counts the words of `text`.".to_string(),
        input_schema: json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
        code: "function run(input) { return input.text.split(/\\s+/).filter(Boolean).length; }"
            .to_string(),
        examples: vec![
            Example {
                input: json!({"text": "one two three"}),
                expect: json!(3),
            },
            Example {
                input: json!({"text": "  four  "}),
                expect: json!(expect),
            },
        ],
    }
}

/// A registry from config (rag_search only: no generator needed), with
/// the stored run-time tools registered by `tools::extend`.
fn registry(kb: &Arc<KnowledgeBase>, config: &Config) -> ToolRegistry {
    let mut config = config.clone();
    config.tools.enabled = vec!["rag_search".into()];
    ToolRegistry::from_config(&config, kb.clone()).unwrap()
}

fn runtime(kb: &Arc<KnowledgeBase>, registry: &ToolRegistry) -> RuntimeTools {
    let host = RuntimeTools::host_for(kb.config(), kb, registry);
    RuntimeTools::open(kb.config(), host).unwrap()
}

fn version_of(registry: &ToolRegistry, name: &str) -> Option<u32> {
    registry
        .describe()
        .into_iter()
        .find_map(|t| match t.origin {
            Origin::Runtime { version, .. } if t.name == name => Some(version),
            _ => None,
        })
}

#[test]
fn create_verify_register_update_delete_and_reopen() {
    let data = tempfile::tempdir().unwrap();
    let kb = common::open_sample(data.path());
    let reg = registry(&kb, kb.config());
    let tools = runtime(&kb, &reg);

    // Verified: registered and callable through the registry.
    let created = tools
        .create_in(&reg.registrar(), word_count(1), Actor::Cli)
        .unwrap();
    assert_eq!(
        (created.stored.status.as_str(), created.stored.quality),
        ("verified", 1.0)
    );
    assert!(created.registered);
    let r = reg.call(
        "rt.word_count",
        &json!({"text": "a b c d e"}),
        &grace::access::ReadScope::All,
    );
    assert!(r.success, "{r:?}");
    assert_eq!(r.output, ToolOutput::Data(json!(5)));
    assert_eq!(version_of(&reg, "rt.word_count"), Some(1));
    // Input without the schema's required key: refused before the script.
    let bad = reg.call("rt.word_count", &json!({}), &grace::access::ReadScope::All);
    assert_eq!(
        bad.error_kind,
        Some(grace::tools::ToolErrorKind::InvalidInput)
    );

    // A version failing an example: stored as failed, quality 0.5, not offered.
    let failed = tools
        .create_in(&reg.registrar(), word_count(2), Actor::Cli)
        .unwrap();
    assert_eq!(
        (
            failed.stored.version,
            failed.stored.status.as_str(),
            failed.stored.quality
        ),
        (2, "failed", 0.5)
    );
    assert!(!failed.registered && reg.get("rt.word_count").is_none());
    assert_eq!(failed.stored.verification[1].output, Some(json!(1)));

    // Version 3 passes again: the registry has it.
    tools
        .create_in(&reg.registrar(), word_count(1), Actor::Http)
        .unwrap();
    assert_eq!(version_of(&reg, "rt.word_count"), Some(3));

    // A fresh start registers the stored tool at its latest version.
    drop(reg);
    let reg = registry(&kb, kb.config());
    assert_eq!(version_of(&reg, "rt.word_count"), Some(3));
    assert!(reg.visible_to("rt.word_count", Caller::Agent));

    // Deleted: unregistered, history kept (every version, every action).
    assert_eq!(
        tools
            .delete(Some(&reg.registrar()), "rt.word_count", Actor::Cli)
            .unwrap(),
        3
    );
    assert!(reg.get("rt.word_count").is_none());
    assert!(matches!(
        tools.delete(Some(&reg.registrar()), "word_count", Actor::Cli),
        Err(RuntimeError::NotFound(_))
    ));
    let history = tools.history("word_count").unwrap();
    assert!(history.deleted);
    assert_eq!(history.versions.len(), 3);
    let actions: Vec<(&str, &str)> = history
        .audit
        .iter()
        .map(|a| (a.action.as_str(), a.actor.as_str()))
        .collect();
    assert_eq!(
        actions,
        [
            ("create", "cli"),
            ("update", "cli"),
            ("update", "http"),
            ("delete", "cli")
        ]
    );
    assert!(history.audit[1].detail.contains("failed"));
    let reg = registry(&kb, kb.config());
    assert!(reg.get("rt.word_count").is_none());
}

#[test]
fn grace_search_returns_passages_of_the_knowledge_base() {
    let data = tempfile::tempdir().unwrap();
    let kb = common::open_sample(data.path());
    let reg = registry(&kb, kb.config());
    let tools = runtime(&kb, &reg);
    let spec = ToolSpec {
        name: "sources".to_string(),
        description: "Sources of the passages about a query.".to_string(),
        input_schema: json!({"type": "object", "required": ["query"]}),
        code: "function run(input) {
            const found = grace.search(input.query, 3);
            return {n: found.length, sources: found.map(p => p.source), section: found[0].section};
        }"
        .to_string(),
        examples: vec![Example {
            input: json!({"query": "What does ORB-2001 mean?"}),
            expect: Value::Null,
        }],
    };
    // The example's expectation is wrong on purpose: the outcome shows what
    // the search gave.
    let stored = tools.create(spec, Actor::Cli).unwrap();
    let out = stored.verification[0].output.clone().unwrap();
    assert_eq!(out["n"], json!(3), "{out}");
    assert!(
        out["section"].as_str().unwrap().contains("ORB-2001"),
        "{out}"
    );
    assert!(
        out["sources"][0]
            .as_str()
            .unwrap()
            .ends_with("troubleshooting.md"),
        "{out}"
    );
}

/// A stand-in for `web_fetch` (its own helper's tool): one passage per URL.
struct FakeFetch;

impl Tool for FakeFetch {
    fn name(&self) -> &str {
        "web_fetch"
    }
    fn description(&self) -> &str {
        "fake"
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    fn execute(
        &self,
        input: &Value,
        _scope: &grace::access::ReadScope,
    ) -> Result<ToolResult, ToolError> {
        let url = input["url"].as_str().unwrap_or_default().to_string();
        let passage = Passage {
            source: url,
            section: "Page".into(),
            text: "fetched text".into(),
            ..serde_json::from_value(
                json!({"id": 0, "source": "", "section": "", "chunk_index": 0,
                "text": "", "score": 0.5, "fused_score": 0.5}),
            )
            .unwrap()
        };
        Ok(ToolResult::ok(
            ToolOutput::Passages(vec![passage]),
            vec![],
            Factors::default(),
        ))
    }
}

#[test]
fn fetch_goes_through_web_fetch_only_when_it_is_enabled() {
    let data = tempfile::tempdir().unwrap();
    let kb = common::open_sample(data.path());
    let reg = registry(&kb, kb.config());
    let policy = ToolPolicy {
        timeout_seconds: 5.0,
        retry_count: 0,
        retry_delay_seconds: 0.0,
    };
    reg.register(Arc::new(FakeFetch), policy, Callers::ALL)
        .unwrap();
    let code = "function run(input) { return typeof fetch === 'function' ? fetch(input.url)[0] : 'no fetch'; }";
    let probe = |config: &Config| {
        let host = RuntimeTools::host_for(config, &kb, &reg);
        grace::tools::runtime::sandbox::run(
            code,
            &json!({"url": "https://example.test/page"}),
            grace::tools::runtime::sandbox::Limits {
                memory_bytes: 16 << 20,
                stack_bytes: 256 << 10,
                max_output_bytes: 65_536,
                time: std::time::Duration::from_secs(2),
            },
            &host,
        )
        .unwrap()
    };
    let mut config = kb.config().clone();
    assert!(!config.tools.web.fetch.enabled, "disabled by default");
    assert_eq!(probe(&config), json!("no fetch"));
    config.tools.web.fetch.enabled = true;
    let page = probe(&config);
    assert_eq!(page["source"], json!("https://example.test/page"));
    assert_eq!(page["text"], json!("fetched text"));
}

#[test]
fn max_tools_and_disabled_runtime_tools_are_enforced() {
    let data = tempfile::tempdir().unwrap();
    let mut config = common::config(data.path());
    config.tools.runtime.max_tools = 1;
    let tools = RuntimeTools::open(&config, Host::default()).unwrap();
    tools.create(word_count(1), Actor::Cli).unwrap();
    // A new version of an existing tool is not a new tool.
    tools.create(word_count(1), Actor::Cli).unwrap();
    let mut other = word_count(1);
    other.name = "other".into();
    let full = tools.create(other.clone(), Actor::Cli).unwrap_err();
    assert!(full.to_string().contains("max_tools"), "{full}");
    tools.delete(None, "word_count", Actor::Cli).unwrap();
    tools.create(other, Actor::Cli).unwrap();

    config.tools.runtime.enabled = false;
    let off = RuntimeTools::open(&config, Host::default()).unwrap();
    assert!(matches!(
        off.create(word_count(1), Actor::Cli),
        Err(RuntimeError::Disabled)
    ));
}

#[test]
fn the_agent_creates_only_when_allowed_and_is_audited() {
    let data = tempfile::tempdir().unwrap();
    let kb = common::open_sample(data.path());
    let reg = registry(&kb, kb.config());
    assert!(reg.get("create_tool").is_none(), "off by default");
    let mut config = kb.config().clone();
    config.tools.runtime.allow_agent_create = true;
    let reg = registry(&kb, &config);
    assert!(reg.visible_to("create_tool", Caller::Agent));
    assert!(!reg.visible_to("create_tool", Caller::Mcp));
    assert!(!reg.visible_to("create_tool", Caller::Http));
    let spec = serde_json::to_value(word_count(1)).unwrap();
    let r = reg.call("create_tool", &spec, &grace::access::ReadScope::All);
    assert!(r.success, "{r:?}");
    let ToolOutput::Data(d) = &r.output else {
        panic!("{r:?}")
    };
    assert_eq!(d["status"], json!("verified"));
    assert_eq!(d["registered"], json!(true));
    let tools = runtime(&kb, &reg);
    let history = tools.history("word_count").unwrap();
    assert_eq!(history.audit[0].actor, "agent");
    // Registered at once, and from every later start.
    let now = reg.call(
        "rt.word_count",
        &json!({"text": "one two three"}),
        &grace::access::ReadScope::All,
    );
    assert!(now.success, "{now:?}");
    assert!(registry(&kb, &config).get("rt.word_count").is_some());
    // A hostile spec is refused and audited, not run.
    let mut bad = word_count(1);
    bad.name = "bad".into();
    bad.code = "function run() { return eval('1'); }".into();
    let r = reg.call(
        "create_tool",
        &serde_json::to_value(bad).unwrap(),
        &grace::access::ReadScope::All,
    );
    assert!(
        !r.success && r.error.as_deref().unwrap().contains("eval"),
        "{r:?}"
    );
    assert_eq!(tools.history("bad").unwrap().audit[0].action, "refuse");
}

#[test]
fn mcp_offers_the_admin_tools_only_when_allowed() {
    let data = tempfile::tempdir().unwrap();
    let config = common::config(data.path());
    let g = common::service(config.clone());
    let names = |g: &grace::Grace| -> Vec<String> {
        grace_mcp::McpServer::new(g.clone())
            .unwrap()
            .tools()
            .iter()
            .map(|t| t.name.to_string())
            .collect()
    };
    assert!(!names(&g).contains(&"create_tool".to_string()));
    drop(g);
    let mut config = config;
    config.tools.runtime.allow_mcp_create = true;
    let g = common::service(config);
    let offered = names(&g);
    for n in grace::tools::runtime::mcp::NAMES {
        assert!(offered.contains(&n.to_string()), "{n}: {offered:?}");
    }
    let call = |name: &str, args: &Value| {
        grace::tools::runtime::mcp::call(
            g.config(),
            g.knowledge_base(),
            g.registry(),
            name,
            args,
            &grace::access::ReadScope::All,
        )
    };
    let spec = serde_json::to_value(word_count(1)).unwrap();
    let created = call("create_tool", &spec).unwrap();
    assert_eq!(created["registered"], json!(true));
    let listed = call("list_dynamic_tools", &json!({})).unwrap();
    assert_eq!(listed["tools"][0]["name"], json!("rt.word_count"));
    let ran = call(
        "run_dynamic_tool",
        &json!({"tool_name": "word_count", "parameters": {"text": "x y"}}),
    )
    .unwrap();
    assert_eq!(ran["output"]["data"], json!(2));
    let refused = call("delete_dynamic_tool", &json!({"tool_name": "word_count"}));
    assert!(refused.unwrap_err().contains("confirm"));
    call(
        "delete_dynamic_tool",
        &json!({"tool_name": "rt.word_count", "confirm": true}),
    )
    .unwrap();
    assert!(g.registry().get("rt.word_count").is_none());
    let audit = call("list_dynamic_tools", &json!({})).unwrap();
    assert_eq!(audit["tools"], json!([]));
}

#[test]
fn cli_creates_runs_shows_and_deletes_with_json() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.json");
    std::fs::write(&spec, serde_json::to_string(&word_count(1)).unwrap()).unwrap();
    let data = dir.path().join("data");
    let data = data.to_str().unwrap();
    let run = |args: &[&str]| {
        let mut all = vec!["--data-dir", data, "--json", "tools"];
        all.extend_from_slice(args);
        let out = common::grace(dir.path(), &all);
        let json: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", common::output_text(&out)));
        (out.status.code(), json)
    };
    let (code, created) = run(&["create", "--spec", spec.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{created}");
    assert_eq!(created["status"], json!("verified"));
    let (code, ran) = run(&["run", "word_count", "--input", r#"{"text": "a b"}"#]);
    assert_eq!(code, Some(0), "{ran}");
    assert_eq!(ran["output"]["data"], json!(2));
    // From files and flags, a failing example: stored as failed, exit 1.
    let code_file = dir.path().join("wc.js");
    std::fs::write(&code_file, &word_count(1).code).unwrap();
    let (code, failed) = run(&[
        "create",
        "--name",
        "word_count",
        "--description",
        "counts",
        "--code",
        code_file.to_str().unwrap(),
        "--examples",
        r#"[{"input": {"text": "a"}, "expect": 7}]"#,
    ]);
    assert_eq!(
        (code, &failed["status"]),
        (Some(1), &json!("failed")),
        "{failed}"
    );
    let (code, deleted) = run(&["delete", "rt.word_count"]);
    assert_eq!(
        (code, &deleted["version"]),
        (Some(0), &json!(2)),
        "{deleted}"
    );
    let (code, history) = run(&["history", "word_count"]);
    assert_eq!(code, Some(0));
    assert_eq!(history["versions"].as_array().unwrap().len(), 2);
    assert_eq!(history["audit"][2]["action"], json!("delete"));
    // A refused definition: exit 2 with the reason.
    let bad = dir.path().join("bad.json");
    let mut spec = word_count(1);
    spec.code = "function run() { return require('fs'); }".into();
    std::fs::write(&bad, serde_json::to_string(&spec).unwrap()).unwrap();
    let (code, refused) = run(&["create", "--spec", bad.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{refused}");
    assert!(refused.to_string().contains("require"), "{refused}");
}

#[tokio::test(flavor = "multi_thread")]
async fn http_creation_needs_the_admin_key() {
    const ADMIN: &str = "admin-key-0123456789";
    const SERVICE: &str = "service-key-0123456789";
    let dir = tempfile::tempdir().unwrap();
    let mut config = common::config(dir.path());
    config.server.api_key = SERVICE.into();
    config.server.admin_api_key = ADMIN.into();
    let g = common::service(config);
    let server = common::serve(g.clone()).await;
    let base = server.base.clone();
    let http = reqwest::Client::new();
    let url = format!("{base}/v1/tools/runtime");
    let spec = serde_json::to_value(word_count(1)).unwrap();
    let post = |key: Option<&str>| {
        let mut r = http.post(&url).json(&spec);
        if let Some(k) = key {
            r = r.bearer_auth(k);
        }
        r.send()
    };
    assert_eq!(post(None).await.unwrap().status(), 401);
    assert_eq!(post(Some(SERVICE)).await.unwrap().status(), 403);
    let created = post(Some(ADMIN)).await.unwrap();
    assert_eq!(created.status(), 201);
    let body: Value = created.json().await.unwrap();
    assert_eq!(
        (&body["status"], &body["registered"]),
        (&json!("verified"), &json!(true))
    );
    assert!(g.registry().get("rt.word_count").is_some());
    // A refused definition: 422 with the reason.
    let mut bad = word_count(1);
    bad.code = "function run() { return Function('return this')(); }".into();
    let r = http
        .post(&url)
        .bearer_auth(ADMIN)
        .json(&bad)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 422);
    assert!(r.text().await.unwrap().contains("Function"));
    let history = http
        .get(format!("{url}/word_count/history"))
        .bearer_auth(SERVICE)
        .send()
        .await
        .unwrap();
    assert_eq!(history.status(), 403);
    let deleted = http
        .delete(format!("{url}/word_count"))
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 200);
    assert!(g.registry().get("rt.word_count").is_none());
    let history: Value = http
        .get(format!("{url}/word_count/history"))
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let actions: Vec<(&str, &str)> = history["audit"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["action"].as_str().unwrap(), a["actor"].as_str().unwrap()))
        .collect();
    assert_eq!(
        actions,
        [("create", "http"), ("refuse", "http"), ("delete", "http")]
    );
    let missing = http
        .delete(format!("{url}/nothing"))
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
    server.stop().await;
}

/// The MCP admin tools over the protocol, with rmcp's client and a real
/// `grace mcp` (the result's shape is `grace mcp`'s; only what it says is
/// checked here).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_client_creates_runs_and_deletes_when_allowed() {
    use rmcp::ServiceExt;
    use rmcp::model::CallToolRequestParams;
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = tokio::process::Command::from(common::grace_cmd(dir.path(), &["mcp"]));
    cmd.env("GRACE_TOOLS__RUNTIME__ALLOW_MCP_CREATE", "true");
    cmd.stderr(std::process::Stdio::null());
    let client = ().serve(rmcp::transport::TokioChildProcess::new(cmd).unwrap()).await.unwrap();
    let call = |name: &str, args: Value| {
        let Value::Object(args) = args else {
            panic!("arguments must be an object")
        };
        client.call_tool(CallToolRequestParams::new(name.to_string()).with_arguments(args))
    };
    let created = call("create_tool", serde_json::to_value(word_count(1)).unwrap())
        .await
        .unwrap();
    assert_ne!(created.is_error, Some(true), "{created:?}");
    assert!(format!("{created:?}").contains("verified"), "{created:?}");
    let ran = call(
        "run_dynamic_tool",
        json!({"tool_name": "word_count", "parameters": {"text": "x y z"}}),
    )
    .await
    .unwrap();
    assert_ne!(ran.is_error, Some(true), "{ran:?}");
    let shown = serde_json::to_string(&ran).unwrap();
    assert!(shown.contains("\"data\":3"), "{shown}");
    let hostile = call(
        "run_dynamic_tool",
        json!({"tool_name": "nothing", "parameters": {}}),
    )
    .await
    .unwrap();
    assert_eq!(hostile.is_error, Some(true), "{hostile:?}");
    let deleted = call(
        "delete_dynamic_tool",
        json!({"tool_name": "word_count", "confirm": true}),
    )
    .await
    .unwrap();
    assert_ne!(deleted.is_error, Some(true), "{deleted:?}");
    client.cancel().await.unwrap();
    // The audit log names the MCP client (`grace mcp` kept its data in
    // the default `.grace` of its folder).
    let config = common::config(&dir.path().join(".grace"));
    let tools = RuntimeTools::open(&config, Host::default()).unwrap();
    let actors: Vec<String> = tools
        .history("word_count")
        .unwrap()
        .audit
        .into_iter()
        .map(|a| a.actor)
        .collect();
    assert_eq!(actors, ["mcp", "mcp"]);
}
