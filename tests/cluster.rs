//! Several `grace serve` behind a load balancer, as a team runs them:
//! three servers over one PostgreSQL (`storage.state: postgres`) and one
//! Qdrant server (`storage.backend: qdrant`), HAProxy in front
//! health-checking `/health`, every part a real program started in a
//! temporary folder on free loopback ports (Debian's PostgreSQL and
//! HAProxy, Qdrant's server: `scripts/setup --postgres --qdrant
//! --cluster`).
//!
//! Any server answers any request: a session continued and an escalation
//! claimed and answered through the load balancer, whichever server it
//! picks. One server, the leader, follows `server.watch`; killed, another
//! takes over and ingests what changed. A server configured with another
//! embedding model for the same knowledge base refuses to start.

use crate::support::common;
use crate::support::haproxy;
use crate::support::postgres_server;
use crate::support::qdrant_server;

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::free_port;
use haproxy::Haproxy;
use postgres_server::PostgresServer;
use qdrant_server::QdrantCluster;

/// One `grace serve` in a folder of its own, its log in `serve.log`;
/// killed (its whole process group) when dropped.
struct Server {
    child: Child,
    dir: PathBuf,
    port: u16,
}

impl Server {
    fn start(dir: &Path, model: &str) -> Self {
        use std::os::unix::process::CommandExt as _;
        let port = free_port();
        let log = std::fs::File::create(dir.join("serve.log")).unwrap();
        let child = common::grace_cmd(dir, &["serve", "--bind", &format!("127.0.0.1:{port}")])
            .env(
                "GRACE_EMBEDDING__MODEL_DIR",
                common::repo().join("models").join(model),
            )
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(log)
            .process_group(0)
            .spawn()
            .unwrap();
        Self {
            child,
            dir: dir.to_path_buf(),
            port,
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("serve.log")).unwrap_or_default()
    }

    fn kill(&mut self) {
        if let Ok(group) = libc::pid_t::try_from(self.child.id()) {
            // SAFETY: killpg only sends a signal to the server's own group.
            unsafe { libc::killpg(group, libc::SIGKILL) };
        }
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
        if std::thread::panicking() {
            let log = self.log();
            let tail: String = log
                .lines()
                .rev()
                .take(40)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect::<Vec<_>>()
                .join("\n");
            eprintln!("--- {} (port {}):\n{tail}", self.dir.display(), self.port);
        }
    }
}

/// A server's configuration: the shared PostgreSQL and Qdrant, the watched
/// folder, and thresholds under which every answer goes to a reviewer.
fn write_config(dir: &Path, pg: &PostgresServer, qdrant: &QdrantCluster, watched: &Path) {
    std::fs::write(
        dir.join("grace_config.yml"),
        format!(
            "storage:\n  state: postgres\n  backend: qdrant\n  postgres:\n    url: \"{}\"\n\
             qdrant:\n  url: \"{}\"\n\
             server:\n  watch: [\"{}\"]\n\
             confidence:\n  thresholds: {{silent: 0.9995, notify: 0.999, confirm: 0.001}}\n",
            pg.url(),
            qdrant.url(),
            watched.display()
        ),
    )
    .unwrap();
}

async fn call(
    http: &reqwest::Client,
    method: reqwest::Method,
    url: String,
    token: Option<&str>,
    body: Option<Value>,
) -> (u16, Value) {
    let mut request = http.request(method, url);
    if let Some(t) = token {
        request = request.bearer_auth(t);
    }
    if let Some(b) = body {
        request = request.json(&b);
    }
    match request.send().await {
        Ok(r) => {
            let status = r.status().as_u16();
            (status, r.json().await.unwrap_or(Value::Null))
        }
        Err(e) => (0, json!({"error": e.to_string()})),
    }
}

/// Polls `probe` every 250 ms until it is true or `limit` passes.
async fn eventually(limit: Duration, what: &str, mut probe: impl AsyncFnMut() -> bool) -> Duration {
    let started = Instant::now();
    while !probe().await {
        assert!(started.elapsed() < limit, "{what}: not within {limit:?}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    started.elapsed()
}

async fn found(http: &reqwest::Client, lb: &str, query: &str, source: &str) -> bool {
    let (code, v) = call(
        http,
        reqwest::Method::POST,
        format!("{lb}/v1/search"),
        None,
        Some(json!({"query": query, "limit": 5})),
    )
    .await;
    code == 200 && v.to_string().contains(source)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_servers_behind_haproxy_share_sessions_escalations_and_a_leader() {
    if !qdrant_server::available() {
        return;
    }
    let pg = PostgresServer::start();
    let qdrant = QdrantCluster::single();
    let root = tempfile::tempdir().unwrap();
    let watched = root.path().join("kb");
    common::copy_tree(&common::repo().join("examples/kb"), &watched);
    let dirs: Vec<PathBuf> = (0..3)
        .map(|i| {
            let d = root.path().join(format!("server-{i}"));
            std::fs::create_dir_all(&d).unwrap();
            write_config(&d, &pg, &qdrant, &watched);
            d
        })
        .collect();
    let mut servers: Vec<Server> = dirs.iter().map(|d| Server::start(d, "minilm")).collect();
    let ports: Vec<u16> = servers.iter().map(|s| s.port).collect();
    let lb = Haproxy::start(&ports);
    let lb = lb.url();
    let http = reqwest::Client::new();

    // Up, and the leader ingested the watched folder.
    eventually(Duration::from_secs(120), "the servers answer", async || {
        call(
            &http,
            reqwest::Method::GET,
            format!("{lb}/health"),
            None,
            None,
        )
        .await
        .0 == 200
    })
    .await;
    eventually(
        Duration::from_secs(180),
        "the leader ingests server.watch",
        async || {
            found(
                &http,
                &lb,
                "install the orbit command-line tool",
                "getting-started.md",
            )
            .await
        },
    )
    .await;
    let leaders: Vec<usize> = (0..3)
        .filter(|&i| servers[i].log().contains("GRACE is following"))
        .collect();
    assert_eq!(leaders.len(), 1, "one leader follows the folders");

    // A session continued through the load balancer: round robin puts
    // each turn on another server.
    let (code, v) = call(
        &http,
        reqwest::Method::POST,
        format!("{lb}/v1/sessions"),
        None,
        None,
    )
    .await;
    assert_eq!(code, 201, "{v}");
    let session = v["id"].as_str().unwrap().to_string();
    for q in [
        "How do I install the Orbit CLI?",
        "Which Python does it need?",
        "And how do I check it?",
    ] {
        let (code, v) = call(
            &http,
            reqwest::Method::POST,
            format!("{lb}/v1/ask"),
            None,
            Some(json!({"question": q, "session_id": session, "queue": false})),
        )
        .await;
        assert_eq!(code, 200, "{v}");
    }
    let (code, v) = call(
        &http,
        reqwest::Method::GET,
        format!("{lb}/v1/sessions/{session}"),
        None,
        None,
    )
    .await;
    assert_eq!(code, 200, "{v}");
    assert_eq!(v["turns"].as_array().map(Vec::len), Some(3), "{v}");

    // An escalation queued on one server, claimed and answered through
    // the others, read back by its asker on yet another.
    let register = |dir: &Path, id: &str| {
        let registered = common::grace(dir, &["--json", "review", "register", id, "--name", id]);
        assert!(
            registered.status.success(),
            "{}",
            common::output_text(&registered)
        );
        let v: Value = serde_json::from_slice(&registered.stdout).unwrap();
        v["token"].as_str().unwrap().to_string()
    };
    // Registered on two servers' command lines: one shared queue.
    let token = register(&dirs[0], "alice");
    let bob = register(&dirs[1], "bob");
    let (code, asked) = call(
        &http,
        reqwest::Method::POST,
        format!("{lb}/v1/ask"),
        None,
        Some(json!({"question": "Which release of the Orbit CLI is current?"})),
    )
    .await;
    assert_eq!(code, 200, "{asked}");
    let id = asked["review_id"]
        .as_i64()
        .unwrap_or_else(|| panic!("not escalated: {asked}"));
    let handle = asked["review_handle"].as_str().unwrap().to_string();
    let claim = format!("{lb}/v1/review/escalations/{id}/claim");
    let (code, v) = call(
        &http,
        reqwest::Method::POST,
        claim.clone(),
        Some(&token),
        None,
    )
    .await;
    assert_eq!((code, v["status"].as_str()), (200, Some("claimed")), "{v}");
    // The claim holds on every server.
    for _ in 0..3 {
        let (code, _) = call(
            &http,
            reqwest::Method::POST,
            claim.clone(),
            Some(&bob),
            None,
        )
        .await;
        assert_eq!(code, 409);
    }
    let (code, v) = call(
        &http,
        reqwest::Method::POST,
        format!("{lb}/v1/review/escalations/{id}/answer"),
        Some(&token),
        Some(json!({"text": "Not after 15:00; ask the release manager."})),
    )
    .await;
    assert_eq!(code, 200, "{v}");
    let (code, v) = call(
        &http,
        reqwest::Method::GET,
        format!("{lb}/v1/escalations/{id}?handle={handle}"),
        None,
        None,
    )
    .await;
    assert_eq!(code, 200, "{v}");
    assert!(v.to_string().contains("release manager"), "{v}");

    // The leader dies: requests go on through the others, and another
    // server takes over the folders within seconds, ingesting what
    // changed meanwhile.
    let leader = leaders[0];
    let killed = Instant::now();
    servers[leader].kill();
    std::fs::write(
        watched.join("zanzibar.md"),
        "# Zanzibar runbook\n\nThe zanzibar failover drill runs every second Tuesday.\n",
    )
    .unwrap();
    let mut failed = 0;
    for _ in 0..20 {
        let (code, _) = call(
            &http,
            reqwest::Method::POST,
            format!("{lb}/v1/search"),
            None,
            Some(json!({"query": "orbit cli", "limit": 3})),
        )
        .await;
        failed += usize::from(code != 200);
    }
    assert_eq!(failed, 0, "requests failed after a server died");
    eventually(
        Duration::from_secs(60),
        "another server takes over server.watch",
        async || found(&http, &lb, "zanzibar failover drill", "zanzibar.md").await,
    )
    .await;
    let took = killed.elapsed();
    assert!(took < Duration::from_secs(10), "taken over after {took:?}");
    let new_leader: Vec<usize> = (0..3)
        .filter(|&i| i != leader && servers[i].log().contains("leads now"))
        .collect();
    assert_eq!(new_leader.len(), 1, "one server took over");
    eprintln!(
        "another server took over and ingested the new file {took:?} after the leader's death"
    );

    // A server configured with another model for this knowledge base
    // refuses to start, saying which models differ.
    let other = root.path().join("server-e5");
    std::fs::create_dir_all(&other).unwrap();
    write_config(&other, &pg, &qdrant, &watched);
    let mut e5 = Server::start(&other, "e5");
    let status = {
        let started = Instant::now();
        loop {
            if let Some(status) = e5.child.try_wait().unwrap() {
                break status;
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "it started: {}",
                e5.log()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    let log = e5.log();
    e5.kill();
    assert!(!status.success());
    assert!(
        log.contains("was embedded with") && log.contains("e5"),
        "{log}"
    );
}
