//! `grace mcp` with a real MCP client (rmcp's, over the child's stdio):
//! list the tools, call each one, and the errors for an unknown tool and
//! for arguments that do not match a tool's schema.

mod common;

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
        "[ask, rag_search, ingest, list_escalations, answer_escalation]",
    );
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
    let passages = b["data"]["output"]["data"].as_array().unwrap();
    assert_eq!(passages.len(), 2);
    // Shown without the server's path (issue 15, finding 10): the sample
    // was ingested from outside any allowed root, so by its file name.
    assert_eq!(passages[0]["source"], "secrets.html", "{b}");
    assert!(
        !b.to_string().contains(&*common::repo().to_string_lossy()),
        "{b}"
    );

    // ask: a confident answer with citations, and an escalated one.
    let r = call(
        &client,
        "ask",
        json!({"question": "How do I rotate an API key?"}),
    )
    .await
    .unwrap();
    let b = body(&r);
    assert_eq!(b["success"], true, "{b}");
    assert!(b["data"]["confidence"].as_f64().unwrap() > 0.0);
    assert!(
        !b["data"]["answer"]["citations"]
            .as_array()
            .unwrap()
            .is_empty()
    );
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
        b["data"]["rewrite"]["question"], "and on staging? (roll back deployment)",
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
        b["data"]["output"]["data"][0]["source"]
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
    let err = grace::mcp::McpServer::new(grace).err().unwrap().to_string();
    assert!(
        err.contains("mcp.tools") && err.contains("shell") && err.contains("known: ask"),
        "{err}"
    );
}
