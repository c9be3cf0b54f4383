//! Issue 15, finding 6 (the parts done so far): a reviewer token without an
//! API key left every endpoint open while looking protected, and `grace mcp`
//! offered `list_escalations` and `answer_escalation` by default, which
//! take any reviewer's name, so any MCP client could act as any reviewer.

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
