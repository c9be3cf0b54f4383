//! Issue 15, finding 6 (the parts done so far): a reviewer token without an
//! API key left every endpoint open while looking protected, and `grace mcp`
//! offered `list_escalations` and `answer_escalation` by default, which
//! take any reviewer's name, so any MCP client could act as any reviewer.
//! Finding 7: any service client could read any escalation's question and
//! answer by its id (a counter); now the asker gets an unguessable handle
//! and `GET /v1/escalations/{id}` needs it (tests/api_http.rs and
//! tests/review_http.rs check the route).

mod common;

use grace::Config;

#[test]
fn a_reviewer_key_without_an_api_key_is_a_config_error_naming_both() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("grace.yml");
    std::fs::write(
        &file,
        "server:\n  reviewer_api_key: reviewer-key-0123456789\n",
    )
    .unwrap();
    let err = Config::load(Some(&file)).unwrap_err().to_string();
    assert!(
        err.contains("server.reviewer_api_key") && err.contains("server.api_key"),
        "{err}"
    );
    // The CLI says so and exits 2 before serving anything.
    let out = common::grace(dir.path(), &["--config", file.to_str().unwrap(), "status"]);
    assert_eq!(out.status.code(), Some(2), "{}", common::output_text(&out));
    // With the API key too, it loads.
    std::fs::write(
        &file,
        "server:\n  api_key: service-key-0123456789\n  reviewer_api_key: reviewer-key-0123456789\n",
    )
    .unwrap();
    Config::load(Some(&file)).unwrap();
}

#[test]
fn mcp_offers_no_tool_that_acts_as_a_reviewer_by_default() {
    let tools = Config::default().mcp.tools;
    assert_eq!(tools, ["ask", "rag_search", "ingest"]);
    let shipped = Config::load(Some(&common::repo().join("grace_config.yml"))).unwrap();
    assert!(
        !shipped
            .mcp
            .tools
            .iter()
            .any(|t| t == "answer_escalation" || t == "list_escalations"),
        "{:?}",
        shipped.mcp.tools
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_escalated_ask_gives_the_asker_a_handle_that_no_other_id_shares() {
    let dir = tempfile::tempdir().unwrap();
    let grace = common::sample_service(common::config(dir.path())).await;
    let outcome = grace
        .ask("Can I deploy on Fridays?", grace::AskOptions::default())
        .await
        .unwrap();
    let id = outcome.review_id.expect("escalated and queued");
    let handle = outcome.review_handle.expect("a handle for the asker");
    assert_eq!(handle.len(), 32);
    let queue = grace.escalations();
    queue.check_asker_handle(id, &handle).unwrap();
    for wrong in ["", "0", &"0".repeat(32), &queue.asker_handle(id + 1)] {
        let err = queue.check_asker_handle(id, wrong).unwrap_err();
        assert!(err.to_string().contains("not found"), "{err}");
    }
    // The JSON a client receives carries it.
    let json = serde_json::to_value(grace::AskOutcome {
        review_handle: Some(handle.clone()),
        ..outcome
    })
    .unwrap();
    assert_eq!(json["review_handle"], handle.as_str());
}
