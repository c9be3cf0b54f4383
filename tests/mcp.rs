//! `grace mcp` with a real MCP client (rmcp's, over the child's stdio):
//! list the tools, call each one, and the errors for an unknown tool and
//! for arguments that do not match a tool's schema; results a model can
//! read (the gist as text, the whole run only with `detail: full`); and
//! registry tools offered by their `callers`.

use crate::support::common;

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult, JsonObject};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};

use common::{grace, output_text as text};

fn args(v: Value) -> JsonObject {
    match v {
        Value::Object(m) => m,
        _ => panic!("arguments must be an object"),
    }
}

async fn call(
    client: &RunningService<RoleClient, ()>,
    name: &str,
    arguments: Value,
) -> Result<CallToolResult, rmcp::ServiceError> {
    client
        .call_tool(CallToolRequestParams::new(name.to_string()).with_arguments(args(arguments)))
        .await
}

/// `ask` about the sample knowledge base's key rotation (secrets.html).
async fn ask_rotate(client: &RunningService<RoleClient, ()>) -> CallToolResult {
    call(
        client,
        "ask",
        json!({"question": "How do I rotate an API key?"}),
    )
    .await
    .unwrap()
}

/// A result's body, cut for an assertion message.
fn cut(b: &Value) -> String {
    b.to_string().chars().take(500).collect()
}

/// The text content of a result.
fn text_of(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The `{success, data, error, suggestions}` object of a result.
fn body(result: &CallToolResult) -> Value {
    result
        .structured_content
        .clone()
        .unwrap_or_else(|| panic!("no structured content: {result:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_client_lists_and_calls_every_tool() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let kb = common::repo().join("examples/kb");
    let out = grace(d, &["ingest", kb.to_str().unwrap(), "-q"]);
    assert!(out.status.success(), "{}", text(&out));
    let out = grace(d, &["review", "register", "alice", "--name", "Alice"]);
    assert!(out.status.success(), "{}", text(&out));

    // The MCP client may name server paths only inside this folder.
    let docs = tempfile::tempdir().unwrap();
    let mut cmd = tokio::process::Command::from(common::grace_cmd(d, &["mcp"]));
    cmd.env(
        "GRACE_INGEST__ALLOWED_ROOTS",
        format!("[{}]", docs.path().display()),
    );
    // The reviewer tools are off by default (they act as any reviewer).
    cmd.env(
        "GRACE_MCP__TOOLS",
        "[ask, rag_search, ingest, feedback, list_escalations, answer_escalation]",
    );
    // The MCP mechanics (answers, escalations, sessions) are written
    // against the hand-set confidence scale, where a grounded answer on the
    // sample knowledge base is given and only "Fridays" escalates.
    cmd.envs(common::hand_set_weight_env());
    cmd.stderr(std::process::Stdio::null());
    let client = ().serve(TokioChildProcess::new(cmd).unwrap()).await.unwrap();
    let info = client.peer_info().expect("the server introduced itself");
    assert_eq!(info.server_info.as_ref().unwrap().name, "grace");

    // The tools, with the registry's schema for rag_search.
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(
        names,
        [
            "ask",
            "rag_search",
            "ingest",
            "feedback",
            "list_escalations",
            "answer_escalation"
        ]
    );
    let rag = tools.iter().find(|t| t.name == "rag_search").unwrap();
    assert_eq!(rag.input_schema["required"], json!(["query"]));
    assert_eq!(rag.input_schema["properties"]["limit"]["maximum"], 100);

    // rag_search: passages with their scores, through the registry.
    let r = call(
        &client,
        "rag_search",
        json!({"query": "rotate an API key", "limit": 2}),
    )
    .await
    .unwrap();
    let b = body(&r);
    assert_eq!(r.is_error, Some(false), "{b}");
    assert_eq!(b["success"], true);
    let passages = b["data"]["passages"].as_array().unwrap();
    assert_eq!(passages.len(), 2);
    // Source, section, text and score: not the ranks, vectors or factors.
    assert!(passages[0]["score"].as_f64().unwrap() > 0.0, "{b}");
    assert!(b["data"].get("factors").is_none() && passages[0].get("dense_rank").is_none());
    let t = text_of(&r);
    assert!(t.starts_with("1. secrets.html"), "{t}");
    assert!(t.contains("(score 0."), "{t}");
    // The whole result when asked.
    let r = call(
        &client,
        "rag_search",
        json!({"query": "rotate an API key", "limit": 2, "detail": "full"}),
    )
    .await
    .unwrap();
    let b = body(&r);
    assert_eq!(
        b["data"]["output"]["data"].as_array().unwrap().len(),
        2,
        "{b}"
    );
    assert!(b["data"]["factors"].is_object(), "{b}");
    // Shown without the server's path (security review): the sample
    // was ingested from outside any allowed root, so by its file name.
    assert_eq!(passages[0]["source"], "secrets.html", "{b}");
    assert!(
        !b.to_string().contains(&*common::repo().to_string_lossy()),
        "{b}"
    );

    // ask: a confident answer with citations, and an escalated one.
    let r = ask_rotate(&client).await;
    let b = body(&r);
    assert_eq!(b["success"], true, "{b}");
    assert!(b["data"]["confidence"].as_f64().unwrap() > 0.0);
    assert!(
        !b["data"]["citations"].as_array().unwrap().is_empty(),
        "{b}"
    );
    // What the calling model reads: the answer, its citations, the
    // confidence and the decision, in well under 2 KB (the whole run is
    // about 12 KB); no steps.
    let t = text_of(&r);
    assert!(t.len() < 2_048, "{} bytes: {t}", t.len());
    assert!(t.contains("Sources:\n[1] secrets.html"), "{t}");
    assert!(
        t.contains("Confidence: 0.")
            && (t.contains("decision: answer") || t.contains("decision: caveat")),
        "{t}"
    );
    assert!(b["data"].get("steps").is_none(), "{b}");
    assert!(b.to_string().len() < 2_048, "{b}");
    // feedback: the asker rates that answer by its id; a second rating
    // replaces the first; another asker's is refused as not found.
    let answer_id = b["data"]["answer_id"]
        .as_str()
        .expect("an answer id")
        .to_string();
    let rate = |vote: &str, asker: &str| {
        let mut rating = json!({"answer_id": answer_id, "vote": vote, "asker": asker});
        if vote == "down" {
            rating["reason"] = json!("incomplete");
        }
        rating
    };
    let r = call(&client, "feedback", rate("up", "mcp")).await.unwrap();
    assert_eq!(body(&r)["data"]["replaced"], false, "{}", cut(&body(&r)));
    let r = call(&client, "feedback", rate("down", "mcp"))
        .await
        .unwrap();
    assert_eq!(body(&r)["data"]["replaced"], true, "{}", cut(&body(&r)));
    assert_eq!(body(&r)["data"]["reason"], "incomplete");
    let r = call(&client, "feedback", rate("down", "someone-else"))
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(true));
    assert!(text_of(&r).contains("no answer"), "{}", text_of(&r));
    // A rating that does not match the schema is a protocol error.
    let e = call(
        &client,
        "feedback",
        json!({"answer_id": answer_id, "vote": "sideways"}),
    )
    .await
    .unwrap_err();
    assert!(e.to_string().contains("one of"), "{e}");
    // detail: full keeps the whole run in the structured content only.
    let r = call(
        &client,
        "ask",
        json!({"question": "How do I rotate an API key?", "detail": "full"}),
    )
    .await
    .unwrap();
    let b = body(&r);
    assert!(!b["data"]["steps"].as_array().unwrap().is_empty(), "{b}");
    assert!(b["data"]["answer"]["citations"].is_array(), "{b}");
    assert!(b.to_string().len() > 4 * text_of(&r).len(), "{b}");
    assert!(text_of(&r).len() < 2_048);
    let r = call(
        &client,
        "ask",
        json!({"question": "Can I deploy on Fridays?"}),
    )
    .await
    .unwrap();
    let b = body(&r);
    assert_eq!(b["data"]["decision"], "escalate", "{b}");
    let id = b["data"]["review_id"].as_i64().unwrap();
    assert!(
        text_of(&r).contains(&format!("review_id {id}")),
        "{}",
        text_of(&r)
    );

    // A conversation: "new" starts a session, a follow-up in it is read
    // against the question before, and a malformed session id is refused.
    let r = call(
        &client,
        "ask",
        json!({"question": "How do I roll back a deployment?", "session_id": "new"}),
    )
    .await
    .unwrap();
    let session = body(&r)["data"]["session_id"].as_str().unwrap().to_string();
    assert!(session.starts_with("ses_"), "{session}");
    let r = call(
        &client,
        "ask",
        json!({"question": "and on staging?", "session_id": session}),
    )
    .await
    .unwrap();
    let b = body(&r);
    assert_eq!(
        b["data"]["rewritten_question"], "and on staging? (roll back deployment)",
        "{b}"
    );
    let r = call(
        &client,
        "ask",
        json!({"question": "q?", "session_id": "../../etc/passwd"}),
    )
    .await
    .unwrap();
    assert_eq!(r.is_error, Some(true));
    let b = body(&r);
    assert!(
        b["error"].as_str().unwrap().contains("does not exist"),
        "{b}"
    );
    assert!(text_of(&r).starts_with("Error: "), "{}", text_of(&r));

    // list_escalations, then answer it as a reviewer.
    let r = call(&client, "list_escalations", json!({"status": "pending"}))
        .await
        .unwrap();
    let b = body(&r);
    let listed: Vec<i64> = b["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_i64().unwrap())
        .collect();
    assert_eq!(listed, [id]);
    let r = call(
        &client,
        "answer_escalation",
        json!({"id": id, "reviewer": "alice", "text": "Only with a rollback plan approved by the on-call lead."}),
    )
    .await
    .unwrap();
    let b = body(&r);
    assert_eq!(b["success"], true, "{b}");
    assert_eq!(b["data"]["status"], "answered");
    assert_eq!(b["data"]["resolution"]["decided_by"], "reviewer:alice");
    // Answering it again is refused, with a suggestion.
    let r = call(
        &client,
        "answer_escalation",
        json!({"id": id, "reviewer": "alice", "option": 1}),
    )
    .await
    .unwrap();
    let b = body(&r);
    assert_eq!(r.is_error, Some(true));
    assert_eq!(b["success"], false);
    assert!(b["error"].as_str().unwrap().contains("answered"), "{b}");
    assert!(!b["suggestions"].as_array().unwrap().is_empty());

    // ingest: a new document inside the allowed root, then it is found.
    std::fs::write(
        docs.path().join("pets.md"),
        "# Office pets\n\nDogs are welcome in the office on Wednesdays if they are vaccinated.\n",
    )
    .unwrap();
    let r = call(&client, "ingest", json!({"paths": [docs.path()]}))
        .await
        .unwrap();
    let b = body(&r);
    assert_eq!(b["success"], true, "{b}");
    assert_eq!(b["data"]["added"], 1);
    let r = call(
        &client,
        "rag_search",
        json!({"query": "dogs in the office", "limit": 1}),
    )
    .await
    .unwrap();
    let b = body(&r);
    assert!(
        b["data"]["passages"][0]["source"]
            .as_str()
            .unwrap()
            .ends_with("pets.md"),
        "{b}"
    );
    // Outside the root (or missing, the same answer): refused.
    for outside in ["/no/such/folder", "/etc/passwd"] {
        let r = call(&client, "ingest", json!({ "paths": [outside] }))
            .await
            .unwrap();
        assert_eq!(r.is_error, Some(true));
        let b = body(&r);
        assert!(
            b["error"]
                .as_str()
                .unwrap()
                .contains("ingest.allowed_roots"),
            "{b}"
        );
        assert!(!b["suggestions"].as_array().unwrap().is_empty());
    }

    // Protocol errors: an unknown tool, arguments that break the schema.
    let e = call(&client, "shell", json!({})).await.unwrap_err();
    assert!(e.to_string().contains("unknown or disabled tool"), "{e}");
    let e = call(&client, "ask", json!({})).await.unwrap_err();
    assert!(e.to_string().contains("`question` is required"), "{e}");
    let e = call(&client, "rag_search", json!({"query": "x", "limit": "ten"}))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("limit"), "{e}");
    let e = call(&client, "list_escalations", json!({"status": "lost"}))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("one of"), "{e}");

    client.cancel().await.unwrap();
}

#[test]
fn an_unknown_name_in_mcp_tools_is_refused_by_the_server_naming_the_key() {
    // Config is data (it loads); the MCP server checks the names against
    // the tools it offers.
    let dir = tempfile::tempdir().unwrap();
    let mut config = common::config(dir.path());
    config.mcp.tools = vec!["ask".into(), "shell".into()];
    let grace = common::service(config);
    let err = grace_mcp::McpServer::new(grace).err().unwrap().to_string();
    assert!(
        err.contains("mcp.tools") && err.contains("shell") && err.contains("known: ask"),
        "{err}"
    );
}

/// A tool beyond the built-in ones, seen by the callers given.
struct Extra(&'static str);

impl grace::tools::Tool for Extra {
    fn name(&self) -> &str {
        self.0
    }
    fn description(&self) -> &str {
        "an extra tool"
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"q": {"type": "string"}}, "additionalProperties": false})
    }
    fn execute(
        &self,
        input: &Value,
        _scope: &grace::access::ReadScope,
    ) -> Result<grace::tools::ToolResult, grace::tools::ToolError> {
        Ok(grace::tools::ToolResult::ok(
            grace::tools::ToolOutput::Data(json!({"got": input})),
            vec![],
            Default::default(),
        ))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registry_tools_are_offered_to_mcp_clients_by_their_callers() {
    use grace::config::{Caller, Callers};
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    let mut config = common::config(dir.path());
    // rag_search is in mcp.tools, but its policy keeps it from MCP clients.
    config.tools.rag_search.callers = Callers::AGENT;
    let grace = common::service(config);
    let policy = grace.config().tools.runtime.policy();
    let registry = grace.registry();
    registry
        .register(
            Arc::new(Extra("rt.for_mcp")),
            policy,
            Callers::from(vec![Caller::Mcp]),
        )
        .unwrap();
    registry
        .register(Arc::new(Extra("rt.agent_only")), policy, Callers::AGENT)
        .unwrap();
    let server = grace_mcp::McpServer::new(grace.clone()).unwrap();
    let names: Vec<String> = server.tools().iter().map(|t| t.name.to_string()).collect();
    assert_eq!(names, ["ask", "ingest", "feedback", "rt.for_mcp"]);

    // Called by a real client (in-process, over a pipe): `detail` is
    // GRACE's, taken out before the tool sees its input.
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let served = server.clone();
    tokio::spawn(async move {
        let running = served.serve(theirs).await.unwrap();
        let _ = running.waiting().await;
    });
    let client = ().serve(ours).await.unwrap();
    let listed = client.list_all_tools().await.unwrap();
    assert!(listed.iter().any(|t| t.name == "rt.for_mcp"));
    let r = call(&client, "rt.for_mcp", json!({"q": "x", "detail": "full"}))
        .await
        .unwrap();
    let b = body(&r);
    assert_eq!(
        b["data"]["output"]["data"],
        json!({"got": {"q": "x"}}),
        "{b}"
    );
    let r = call(&client, "rt.for_mcp", json!({"q": "y"}))
        .await
        .unwrap();
    assert_eq!(body(&r)["data"], json!({"data": {"got": {"q": "y"}}}));
    assert_eq!(text_of(&r), r#"{"got":{"q":"y"}}"#);
    // Neither the agent's tool nor a built-in kept from MCP can be called.
    for hidden in ["rt.agent_only", "rag_search"] {
        let e = call(&client, hidden, json!({})).await.unwrap_err();
        assert!(e.to_string().contains("unknown or disabled tool"), "{e}");
    }
    client.cancel().await.unwrap();

    let extra = server
        .tools()
        .into_iter()
        .find(|t| t.name == "rt.for_mcp")
        .unwrap();
    // Offered with GRACE's `detail` beside the tool's own arguments.
    assert!(extra.input_schema["properties"]["detail"].is_object());
    assert!(extra.input_schema["properties"]["q"].is_object());
    // A tool that leaves the registry leaves the list.
    assert!(registry.unregister("rt.for_mcp"));
    let names: Vec<String> = server.tools().iter().map(|t| t.name.to_string()).collect();
    assert_eq!(names, ["ask", "ingest", "feedback"]);
}

/// `grace` with nothing from this repository but its `models/` layout,
/// found through `GRACE_HOME`: run from `/`, no config file, every setting
/// from the environment, as an MCP client (Claude Desktop, Cursor) starts
/// it.
fn grace_from_root(data: &std::path::Path, args: &[&str]) -> std::process::Command {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_grace"));
    c.args(args)
        .current_dir("/")
        .env_remove("GRACE_CONFIG")
        .env_remove("GRACE_REVIEWER")
        .env_remove("GRACE_EMBEDDING__MODEL_DIR")
        .env_remove("GRACE_EMBEDDING__RUNTIME_PATH")
        .env_remove("GRACE_READER__MODEL_DIR")
        .env("GRACE_HOME", common::repo())
        .env("GRACE_STORAGE__DATA_DIR", data);
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grace_mcp_started_from_the_root_folder_with_environment_only_answers() {
    let data = tempfile::tempdir().unwrap();
    let kb = common::repo().join("examples/kb");
    let out = grace_from_root(data.path(), &["ingest", kb.to_str().unwrap(), "-q"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    // `grace status` names where the models came from.
    let out = grace_from_root(data.path(), &["status"]).output().unwrap();
    let s = text(&out);
    let models = common::repo().join("models/minilm");
    assert!(s.contains(&format!("from {}", models.display())), "{s}");

    let mut cmd = tokio::process::Command::from(grace_from_root(data.path(), &["mcp"]));
    cmd.stderr(std::process::Stdio::null());
    let client = ().serve(TokioChildProcess::new(cmd).unwrap()).await.unwrap();
    let r = ask_rotate(&client).await;
    assert_eq!(body(&r)["success"], true, "{}", body(&r));
    assert!(text_of(&r).contains("secrets.html"), "{}", text_of(&r));
    // Started in `/`, it still may not read the server's files: the
    // current folder is no allowed root, and none is set.
    for outside in ["/etc/passwd", "/", "etc/passwd", "../../etc/passwd"] {
        let r = call(&client, "ingest", json!({ "paths": [outside] }))
            .await
            .unwrap();
        assert_eq!(r.is_error, Some(true), "{outside}");
        let e = body(&r)["error"].as_str().unwrap().to_string();
        assert!(e.contains("ingest.allowed_roots"), "{outside}: {e}");
    }
    // A question in another script, and one far past the size limit.
    let r = call(
        &client,
        "ask",
        json!({"question": "APIキーを入れ替えるには？"}),
    )
    .await
    .unwrap();
    assert_eq!(body(&r)["success"], true, "{}", body(&r));
    // Two megabytes of question: not an answer (the model reads its first
    // tokens only), and the server keeps serving.
    let huge = "why ".repeat(500_000);
    let r = call(&client, "ask", json!({ "question": huge }))
        .await
        .unwrap();
    let b = body(&r);
    assert!(
        r.is_error == Some(true) || b["data"]["decision"] == "decline",
        "{}",
        cut(&b)
    );
    assert_eq!(body(&ask_rotate(&client).await)["success"], true);
    client.cancel().await.unwrap();
}
