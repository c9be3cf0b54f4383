//! Security review: error bodies and `/v1/status` showed the
//! server's internal paths (the data folder, the manifest, the model
//! folder) to any client. Now a server-side failure's text goes to the log
//! and the client gets its kind; the status leaves the paths out.
//! Answers, citations, search results, ingest reports and the review
//! endpoints showed every source as the server's absolute path; now
//! clients see it relative to the folder it came from (an allowed root,
//! the uploads or reviewed folder, `server.display_root`), or its file
//! name, over HTTP (JSON and event streams) and MCP alike.

use crate::support::common;

use grace::Config;
use reqwest::StatusCode;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_and_server_errors_do_not_show_server_paths() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("secret-data-folder");
    let config: Config = common::config(&data);
    let manifest = config.manifest_path();
    let model_dir = config.embedding.model_dir.clone();
    let grace = common::service(config);
    let server = common::serve(grace.clone()).await;
    let base = server.base.clone();
    let http = reqwest::Client::new();

    let status = http
        .get(format!("{base}/v1/status"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(status.contains("\"collection\""), "{status}");
    assert!(!status.contains("secret-data-folder"), "{status}");
    assert!(!status.contains(&*model_dir.to_string_lossy()), "{status}");

    // A damaged manifest makes the next ingest fail on the server's side.
    std::fs::create_dir_all(manifest.parent().unwrap()).unwrap();
    std::fs::write(&manifest, "not a manifest").unwrap();
    let r = http
        .post(format!("{base}/v1/ingest"))
        .header("content-type", "multipart/form-data; boundary=b")
        .body("--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.md\"\r\n\r\n# A\n\ntext\r\n--b--\r\n")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::INTERNAL_SERVER_ERROR);
    let body = r.text().await.unwrap();
    assert!(body.contains("internal"), "{body}");
    assert!(!body.contains("secret-data-folder"), "{body}");
    // The CLI, run on the machine, still says where the problem is.
    let e = grace
        .ingest(vec![common::repo().join("examples/kb")], Default::default())
        .await
        .unwrap_err();
    assert!(e.to_string().contains("secret-data-folder"), "{e}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_searches_and_reports_show_sources_relative_not_as_server_paths() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("secret-server-layout").join("handbook");
    common::copy_tree(&common::repo().join("examples/kb"), &root);
    let mut config = common::config(&dir.path().join("data"));
    config.ingest.allowed_roots = vec![root.clone()];
    let grace = common::service(config);
    let server = common::serve(grace.clone()).await;
    let http = reqwest::Client::new();
    let post = |path: &str, body: serde_json::Value| {
        http.post(format!("{}{path}", server.base))
            .json(&body)
            .send()
    };
    let mut seen = String::new();
    let r = post("/v1/ingest", serde_json::json!({"paths": [root]}))
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    seen.push_str(&r.text().await.unwrap());
    let r = post(
        "/v1/search",
        serde_json::json!({"query": "rotate an API key"}),
    )
    .await
    .unwrap();
    let found: serde_json::Value = r.json().await.unwrap();
    let first = found["passages"][0]["source"].as_str().unwrap().to_string();
    assert!(first.starts_with("handbook/"), "{found}");
    seen.push_str(&found.to_string());
    for body in [
        serde_json::json!({"question": "How do I rotate an API key?"}),
        serde_json::json!({"question": "How do I rotate an API key?", "stream": true}),
    ] {
        let r = post("/v1/ask", body).await.unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        seen.push_str(&r.text().await.unwrap());
    }
    assert!(seen.contains("handbook/"), "{seen}");
    assert!(
        !seen.contains("secret-server-layout"),
        "a server path reached the client: {seen}"
    );
    // The CLI's library view keeps the full path.
    let passages = grace
        .search(
            "rotate an API key",
            None,
            None,
            grace::access::ReadScope::All,
        )
        .await
        .unwrap();
    assert!(passages[0].source.contains("secret-server-layout"));
    server.stop().await;
}
