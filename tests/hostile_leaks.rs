//! Issue 15, finding 10 (paths): error bodies and `/v1/status` showed the
//! server's internal paths (the data folder, the manifest, the model
//! folder) to any client. Now a server-side failure's text goes to the log
//! and the client gets its kind; the status leaves the paths out.

mod common;

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
