//! Security review: `/v1/ingest` and MCP `ingest` read any path the
//! server could read (absolute paths, `..`, symbolic links out of a
//! folder, a glob walked from `/`), and the text came back through search.
//! Now remote callers name server paths only inside `ingest.allowed_roots`
//! (none configured: they may only upload), links that leave a root are
//! passed over, and the CLI (the machine's own user) stays unrestricted.

use crate::support::common;

use std::path::Path;

use grace::ingest::{IngestError, IngestOptions};
use grace::{Config, Grace};
use reqwest::StatusCode;
use serde_json::{Value, json};

const SECRET: &str = "The vault combination is orange falcon seventeen.";

/// `allowed/` with a page, a link to a file outside and a link to a folder
/// outside; `outside/` with the secret.
fn layout(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let allowed = dir.join("allowed");
    let outside = dir.join("outside");
    std::fs::create_dir_all(allowed.join("sub")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(
        allowed.join("sub/pets.md"),
        "# Office pets\n\nDogs are welcome in the office on Wednesdays.\n",
    )
    .unwrap();
    std::fs::write(outside.join("secret.md"), format!("# Vault\n\n{SECRET}\n")).unwrap();
    std::os::unix::fs::symlink(outside.join("secret.md"), allowed.join("leak.md")).unwrap();
    std::os::unix::fs::symlink(&outside, allowed.join("escape")).unwrap();
    (allowed, outside)
}

struct Server {
    base: String,
    http: reqwest::Client,
    grace: Grace,
    server: common::TestServer,
}

async fn start(data: &Path, tweak: impl FnOnce(&mut Config)) -> Server {
    let mut config = common::config(data);
    tweak(&mut config);
    let grace = common::service(config);
    let server = common::serve(grace.clone()).await;
    Server {
        base: server.base.clone(),
        http: reqwest::Client::new(),
        grace,
        server,
    }
}

impl Server {
    async fn ingest(&self, paths: Value) -> (StatusCode, Value) {
        let r = self
            .http
            .post(format!("{}/v1/ingest", self.base))
            .json(&json!({ "paths": paths }))
            .send()
            .await
            .unwrap();
        (r.status(), r.json().await.unwrap_or(Value::Null))
    }

    /// Whether any passage in the store holds `text`.
    async fn holds(&self, text: &str) -> bool {
        let found = self
            .grace
            .search(text, Some(10), None, grace::access::ReadScope::All)
            .await
            .unwrap_or_default();
        found.iter().any(|p| p.text.contains(text))
    }

    async fn stop(self) {
        self.server.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_no_allowed_roots_remote_callers_may_only_upload() {
    let dir = tempfile::tempdir().unwrap();
    let (allowed, outside) = layout(dir.path());
    let server = start(&dir.path().join("data"), |_| {}).await;
    for paths in [
        json!([allowed]),
        json!([outside.join("secret.md")]),
        json!(["/etc/passwd"]),
        json!(["/**/*.md"]),
    ] {
        let (status, body) = server.ingest(paths.clone()).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{paths}: {body}");
        assert!(body.to_string().contains("ingest.allowed_roots"), "{body}");
    }
    assert!(!server.holds("orange falcon").await);
    // An upload still works: the server writes the file itself.
    let boundary = "b0undary";
    let upload = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"parking.md\"\r\n\
         Content-Type: text/markdown\r\n\r\n# Parking\n\nVisitors park on level -2.\n\r\n--{boundary}--\r\n"
    );
    let r = server
        .http
        .post(format!("{}/v1/ingest", server.base))
        .header(
            "content-type",
            format!("multipart/form-data; boundary={boundary}"),
        )
        .body(upload)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert!(server.holds("Visitors park on level -2").await);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_callers_read_inside_the_roots_and_nothing_a_link_leads_out_to() {
    let dir = tempfile::tempdir().unwrap();
    let (allowed, outside) = layout(dir.path());
    let root = allowed.clone();
    let server = start(&dir.path().join("data"), move |c| {
        c.ingest.allowed_roots = vec![root]
    })
    .await;

    // Outside the root, however it is spelled: refused, and a missing path
    // inside gets the same answer (no probing for files).
    let dotdot = allowed.join("../outside/secret.md");
    for paths in [
        json!([outside.join("secret.md")]),
        json!([dotdot]),
        json!([outside]),
        json!(["/etc/passwd"]),
        json!(["/**/*.md"]),
        json!([format!("{}/../**/*.md", allowed.display())]),
        json!([allowed.join("no-such.md")]),
        json!([allowed.join("leak.md")]),
        json!([allowed.join("escape/secret.md")]),
    ] {
        let (status, body) = server.ingest(paths.clone()).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{paths}: {body}");
    }

    // The root itself: its own page, not what the links point to.
    let (status, report) = server.ingest(json!([allowed])).await;
    assert_eq!(status, StatusCode::OK, "{report}");
    assert_eq!(report["added"], 1, "{report}");
    let passed = report["skipped"].to_string();
    assert!(
        passed.contains("leak.md") && passed.contains("escape"),
        "{report}"
    );
    assert!(passed.contains("outside ingest.allowed_roots"), "{report}");
    // A glob inside the root is fine.
    let (status, report) = server
        .ingest(json!([format!("{}/**/*.md", allowed.display())]))
        .await;
    assert_eq!(status, StatusCode::OK, "{report}");
    assert!(server.holds("welcome in the office").await);
    assert!(
        !server.holds("orange falcon").await,
        "the secret was ingested"
    );
    server.stop().await;
}

#[test]
fn the_cli_user_is_not_bound_by_the_roots_and_a_walk_is_bounded_in_files() {
    let dir = tempfile::tempdir().unwrap();
    let (allowed, outside) = layout(dir.path());
    let mut config = common::config(&dir.path().join("data"));
    config.ingest.allowed_roots = vec![allowed.clone()];
    config.ingest.max_files = 1;
    let kb = common::open(config);
    // The machine's own user may read anywhere (no `roots` in the options).
    let report = kb
        .ingest(
            &[outside.join("secret.md")],
            &IngestOptions::default(),
            &mut |_| {},
        )
        .unwrap();
    assert_eq!(report.added, 1);
    // More files than ingest.max_files: refused, naming the key.
    std::fs::write(
        allowed.join("sub/more.md"),
        "# More\n\nAnother page of text here.\n",
    )
    .unwrap();
    let err = kb
        .ingest(
            &[allowed.join("sub")],
            &IngestOptions::default(),
            &mut |_| {},
        )
        .unwrap_err();
    assert!(
        matches!(
            err,
            grace::Error::Ingest(IngestError::TooManyFiles { limit: 1 })
        ),
        "{err}"
    );
    assert!(err.to_string().contains("ingest.max_files"), "{err}");
}

#[test]
fn a_missing_allowed_root_is_a_config_error_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("grace.yml");
    std::fs::write(&file, "ingest:\n  allowed_roots:\n    - /no/such/root\n").unwrap();
    let err = Config::load(Some(&file)).unwrap_err();
    assert!(err.to_string().contains("ingest.allowed_roots[0]"), "{err}");
}

/// Finding 10: one request naming a file twice, and uploads of one name at
/// once (they shared one temporary file, so their bytes could mix).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uploads_of_one_name_never_mix_and_one_request_names_a_file_once() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(&dir.path().join("data"), |_| {}).await;
    let part = |name: &str, body: &str| {
        format!(
            "--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\n\r\n{body}\r\n"
        )
    };
    let post = |body: String| {
        server
            .http
            .post(format!("{}/v1/ingest", server.base))
            .header("content-type", "multipart/form-data; boundary=b")
            .body(body)
            .send()
    };
    let twice = format!(
        "{}{}--b--\r\n",
        part("a.md", "# A\n\none"),
        part("a.md", "# A\n\ntwo")
    );
    let r = post(twice).await.unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    assert!(r.text().await.unwrap().contains("a.md"));

    // Eight uploads of one name at once: each whole, the last one stays.
    let bodies: Vec<String> = (0..8)
        .map(|i| format!("# Shared\n\n{}\n", format!("variant{i} ").repeat(20_000)))
        .collect();
    let requests = bodies
        .iter()
        .map(|b| post(format!("{}--b--\r\n", part("shared.md", b))));
    for r in futures_util::future::join_all(requests).await {
        // 200, or 429 when the server is busy with the others: never mixed.
        let status = r.unwrap().status();
        assert!(
            status == StatusCode::OK || status == StatusCode::TOO_MANY_REQUESTS,
            "{status}"
        );
    }
    let saved = std::fs::read_to_string(dir.path().join("data/uploads/grace/shared.md")).unwrap();
    assert!(
        bodies.iter().any(|b| b == &saved),
        "the upload mixed two bodies"
    );
    let leftovers: Vec<_> = std::fs::read_dir(dir.path().join("data/uploads/grace"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".upload"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    server.stop().await;
}

/// Finding 10: chunks were bounded in words only, so a megabyte without a
/// space became one chunk (stored, encoded and returned whole).
#[test]
fn a_megabyte_without_spaces_is_stored_in_bounded_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    let blob = "QUJD".repeat(250_000);
    std::fs::write(docs.join("blob.txt"), format!("Header line.\n\n{blob}\n")).unwrap();
    let config = common::config(&dir.path().join("data"));
    let bound =
        config.ingest.chunk_size * grace::ingest::chunk::MAX_WORD_CHARS + config.ingest.chunk_size;
    let kb = common::open(config);
    let report = kb
        .ingest(&[docs], &IngestOptions::default(), &mut |_| {})
        .unwrap();
    assert_eq!(report.added, 1);
    assert!(
        report.chunks_written >= blob.len() / bound,
        "{}",
        report.chunks_written
    );
    for p in kb.search("QUJDQUJD", Some(50), None).unwrap() {
        assert!(p.text.chars().count() <= bound, "{} chars", p.text.len());
    }
}

/// A watched folder's files are judged by their stat before their bytes
/// (large folders): a file swapped for a link out of the root, a huge
/// sparse file, a far-future time and a non-ASCII name must each still be
/// judged as if every byte were read.
#[test]
fn a_file_swapped_for_a_link_out_a_huge_one_and_a_future_one_are_never_trusted_from_their_stat() {
    let dir = tempfile::tempdir().unwrap();
    let (allowed, _outside) = layout(dir.path());
    let root = std::fs::canonicalize(&allowed).unwrap();
    let page = allowed.join("page.md");
    std::fs::write(&page, "# Parking\n\nThe visitor car park opens at seven.\n").unwrap();
    let unicode = allowed.join("ünïcødé 日本語.md");
    std::fs::write(&unicode, "# Kantine\n\nDie Kantine öffnet um zwölf.\n").unwrap();
    let future = std::time::SystemTime::now() + std::time::Duration::from_secs(50 * 365 * 86_400);
    let f = std::fs::File::options().write(true).open(&unicode).unwrap();
    f.set_modified(future).unwrap();
    // Everything else settles: its stat would be trusted from now on.
    std::thread::sleep(grace::ingest::manifest::SETTLE + std::time::Duration::from_millis(200));

    let kb = common::open(common::config(&dir.path().join("data")));
    let remote = IngestOptions {
        prune: true,
        roots: Some(vec![root.clone()]),
        ..Default::default()
    };
    let run = || {
        kb.ingest(std::slice::from_ref(&root), &remote, &mut |_| {})
            .unwrap()
    };
    let first = run();
    assert_eq!(first.added, 3, "{first:?}"); // pets, page, the non-ASCII one
    let held = |q: &str, text: &str| {
        kb.search(q, Some(10), None)
            .unwrap()
            .iter()
            .any(|p| p.text.contains(text))
    };
    assert!(held("When does the canteen open?", "zwölf"));

    // The page swapped for a link out of the root: the walk passes it over
    // (whatever its stat), and its old chunks go.
    std::fs::remove_file(&page).unwrap();
    std::os::unix::fs::symlink(dir.path().join("outside/secret.md"), &page).unwrap();
    // A sparse file of 20 GB: refused by its size, never read.
    let huge = allowed.join("huge.md");
    std::fs::File::create(&huge)
        .unwrap()
        .set_len(20 << 30)
        .unwrap();
    let second = run();
    let skipped = serde_json::to_string(&second.skipped).unwrap();
    assert!(
        skipped.contains("page.md") && skipped.contains("outside ingest.allowed_roots"),
        "{skipped}"
    );
    assert!(
        skipped.contains("huge.md") && skipped.contains("too large"),
        "{skipped}"
    );
    assert!(!held("What is the vault combination?", "orange falcon"));
    assert!(!held("When does the car park open?", "visitor car park"));
    // A time fifty years ahead never settles: that file is read every run.
    assert!(second.read >= 1, "{second:?}");
    let third = run();
    assert_eq!((third.added, third.updated), (0, 0), "{third:?}");
    assert!(
        third.read >= 1,
        "the future-dated file was trusted: {third:?}"
    );
    assert!(held("When does the canteen open?", "zwölf"));
}
