//! Real Qdrant servers for tests: the first of `GRACE_QDRANT_BIN`, a
//! `qdrant` on the PATH and the server `scripts/setup --qdrant` put in
//! `~/.cache/grace/qdrant/` (see that script), started on
//! free loopback ports with its data in a temporary folder: one node, or a
//! cluster of N (Raft, peer-to-peer port) whose nodes can be killed with
//! SIGKILL and restarted on the same ports and data.
//!
//! Every node is stopped when the fixture is dropped, also when a test
//! fails (its log's tail is printed then, and its folder kept). A node is
//! started under `setpriv --pdeathsig KILL`, so it dies with the test
//! process even when that is killed; and every node is written to the
//! registry `scripts/qdrant` shares (`$TMPDIR/grace-qdrant/instances/<pid>.env`,
//! with its owner's pid), so a stray left by a test process that died
//! anyway is found and stopped by the next start.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a node may take to answer `/readyz`.
const READY_TIMEOUT: Duration = Duration::from_secs(60);

use super::skip;

/// The server binary: `GRACE_QDRANT_BIN`, else a `qdrant` on the PATH,
/// else the one `scripts/setup --qdrant` installed; `None` when none is.
pub fn find_binary() -> Option<PathBuf> {
    if let Some(bin) = std::env::var_os("GRACE_QDRANT_BIN").filter(|b| !b.is_empty()) {
        return Some(PathBuf::from(bin));
    }
    let on_path = std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join("qdrant"))
        .find(|bin| bin.is_file());
    let cached = std::env::var_os("HOME")
        .map(|home| Path::new(&home).join(".cache/grace/qdrant/qdrant"))
        .filter(|bin| bin.is_file());
    on_path.or(cached)
}

/// Whether a Qdrant server can be started; when not, a test calling this
/// first returns at once, skipped and said so (`skip.rs`).
pub fn available() -> bool {
    find_binary().is_some()
        || skip::skipped(
            "a Qdrant server",
            "set GRACE_QDRANT_BIN to a Qdrant 1.16-1.21 server binary (or run scripts/setup --qdrant)",
            "GRACE_REQUIRE_QDRANT",
        )
}

/// The server binary ([`find_binary`]).
pub fn binary() -> PathBuf {
    find_binary().expect(
        "no Qdrant server: set GRACE_QDRANT_BIN, put qdrant on the PATH, or run `bash scripts/setup --qdrant` (scripts/test does)",
    )
}

/// One node of a [`QdrantCluster`].
struct Node {
    http: u16,
    grpc: u16,
    /// 0 for a single node (no cluster mode).
    p2p: u16,
    dir: PathBuf,
    child: Option<Child>,
}

impl Node {
    fn log(&self) -> PathBuf {
        self.dir.join("qdrant.log")
    }
}

/// How to start a [`QdrantCluster`].
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Nodes; 0 and 1 both mean one node without cluster mode.
    pub nodes: usize,
    /// Require this API key (`QDRANT__SERVICE__API_KEY`).
    pub api_key: Option<String>,
}

/// One Qdrant node, or a cluster of them, on loopback.
pub struct QdrantCluster {
    dir: Option<tempfile::TempDir>,
    nodes: Vec<Node>,
    options: Options,
}

impl QdrantCluster {
    /// One node.
    pub fn single() -> Self {
        Self::start(Options::default())
    }

    /// Starts the nodes and waits until each answers `/readyz` (and, for
    /// a cluster, until node 0 sees every peer and a Raft leader).
    pub fn start(options: Options) -> Self {
        reap_strays();
        let dir = tempfile::Builder::new()
            .prefix("grace-qdrant-")
            .tempdir()
            .expect("temporary folder");
        let count = options.nodes.max(1);
        let clustered = options.nodes > 1;
        let mut cluster = Self {
            nodes: Vec::new(),
            options,
            dir: None,
        };
        for i in 0..count {
            let node_dir = dir.path().join(format!("node{i}"));
            std::fs::create_dir_all(&node_dir).expect("node folder");
            let [http, grpc, p2p] = free_ports();
            cluster.nodes.push(Node {
                http,
                grpc,
                p2p: if clustered { p2p } else { 0 },
                dir: node_dir,
                child: None,
            });
        }
        cluster.dir = Some(dir);
        for i in 0..count {
            cluster.spawn(i);
            // The first peer must be up before the others bootstrap from it.
            if i == 0 {
                cluster.wait_ready(0);
            }
        }
        for i in 1..count {
            cluster.wait_ready(i);
        }
        if clustered {
            cluster.wait_for_peers(count);
        }
        cluster
    }

    /// The gRPC URL of node 0 (what `qdrant.url` wants).
    pub fn url(&self) -> String {
        self.node_url(0)
    }

    /// The gRPC URL of node `i`.
    pub fn node_url(&self, i: usize) -> String {
        format!("http://127.0.0.1:{}", self.nodes[i].grpc)
    }

    /// The REST port of node `i`.
    pub fn http_port(&self, i: usize) -> u16 {
        self.nodes[i].http
    }

    /// Nodes in the cluster.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Kills node `i` with SIGKILL (no shutdown of any kind).
    pub fn kill(&mut self, i: usize) {
        if let Some(mut child) = self.nodes[i].child.take() {
            let pid = child.id();
            let _ = child.kill();
            let _ = child.wait();
            let _ = std::fs::remove_file(registry_file(pid));
        }
    }

    /// Starts node `i` again on its ports and data, and waits until it is
    /// ready (it rejoins the cluster from its stored state).
    pub fn restart(&mut self, i: usize) {
        self.kill(i);
        self.spawn(i);
        self.wait_ready(i);
    }

    /// Sends a REST request to node `i`; `(status, body as JSON)`.
    pub fn rest(
        &self,
        i: usize,
        method: &str,
        path: &str,
        body: Option<&serde_json::Value>,
    ) -> (u16, serde_json::Value) {
        let (status, text) = http(
            self.nodes[i].http,
            method,
            path,
            body.map(|b| b.to_string()).as_deref(),
            self.options.api_key.as_deref(),
        )
        .unwrap_or_else(|e| panic!("{method} {path} on node {i}: {e}"));
        let json = serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text));
        (status, json)
    }

    /// Waits until every replica of every shard of `collection` is Active
    /// on every running node (after a node rejoined, it copies what it
    /// missed first).
    pub fn wait_replicas_active(&self, collection: &str, timeout: Duration) {
        let started = Instant::now();
        loop {
            let mut states = Vec::new();
            for i in 0..self.nodes.len() {
                if self.nodes[i].child.is_none() {
                    continue;
                }
                let (status, info) = self.rest(
                    i,
                    "GET",
                    &format!("/collections/{collection}/cluster"),
                    None,
                );
                if status != 200 {
                    states.push(format!("node {i}: HTTP {status}"));
                    continue;
                }
                let r = &info["result"];
                for shard in r["local_shards"].as_array().into_iter().flatten() {
                    states.push(shard["state"].as_str().unwrap_or("?").to_string());
                }
                for shard in r["remote_shards"].as_array().into_iter().flatten() {
                    states.push(shard["state"].as_str().unwrap_or("?").to_string());
                }
            }
            if !states.is_empty() && states.iter().all(|s| s == "Active") {
                return;
            }
            assert!(
                started.elapsed() < timeout,
                "replicas of {collection} not all Active after {timeout:?}: {states:?}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn spawn(&mut self, i: usize) {
        let bin = binary();
        let clustered = self.nodes[i].p2p != 0;
        let first_p2p = self.nodes[0].p2p;
        let node = &mut self.nodes[i];
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(node.log())
            .expect("log file");
        let mut cmd = if Path::new("/usr/bin/setpriv").is_file() {
            let mut c = Command::new("/usr/bin/setpriv");
            c.args(["--pdeathsig", "KILL", "--"]).arg(&bin);
            c
        } else {
            Command::new(&bin)
        };
        cmd.current_dir(&node.dir)
            .env("QDRANT__SERVICE__HOST", "127.0.0.1")
            .env("QDRANT__SERVICE__HTTP_PORT", node.http.to_string())
            .env("QDRANT__SERVICE__GRPC_PORT", node.grpc.to_string())
            .env("QDRANT__STORAGE__STORAGE_PATH", node.dir.join("storage"))
            .env(
                "QDRANT__STORAGE__SNAPSHOTS_PATH",
                node.dir.join("snapshots"),
            )
            .env("QDRANT__TELEMETRY_DISABLED", "true")
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log file"))
            .stderr(log);
        if let Some(key) = &self.options.api_key {
            cmd.env("QDRANT__SERVICE__API_KEY", key);
        }
        if clustered {
            cmd.env("QDRANT__CLUSTER__ENABLED", "true")
                .env("QDRANT__CLUSTER__P2P__PORT", node.p2p.to_string());
            if i == 0 {
                cmd.args(["--uri", &format!("http://127.0.0.1:{}", node.p2p)]);
            } else {
                cmd.args(["--bootstrap", &format!("http://127.0.0.1:{first_p2p}")]);
            }
        }
        let child = cmd.spawn().expect("start the Qdrant server");
        register(&child, node);
        node.child = Some(child);
    }

    fn wait_ready(&mut self, i: usize) {
        let started = Instant::now();
        loop {
            if let Some(child) = self.nodes[i].child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                panic!(
                    "Qdrant node {i} exited ({status}) before it was ready:\n{}",
                    tail(&self.nodes[i].log(), 40)
                );
            }
            // REST answers first; the gRPC port opens a moment later.
            if matches!(
                http(self.nodes[i].http, "GET", "/readyz", None, None),
                Ok((200, _))
            ) && TcpStream::connect(("127.0.0.1", self.nodes[i].grpc)).is_ok()
            {
                return;
            }
            assert!(
                started.elapsed() < READY_TIMEOUT,
                "Qdrant node {i} not ready after {READY_TIMEOUT:?}:\n{}",
                tail(&self.nodes[i].log(), 40)
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn wait_for_peers(&self, count: usize) {
        let started = Instant::now();
        loop {
            let (_, c) = self.rest(0, "GET", "/cluster", None);
            let peers = c["result"]["peers"].as_object().map_or(0, |p| p.len());
            let leader = c["result"]["raft_info"]["leader"].as_u64().unwrap_or(0);
            if peers == count && leader != 0 {
                return;
            }
            assert!(
                started.elapsed() < READY_TIMEOUT,
                "the cluster did not form: {c}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for QdrantCluster {
    fn drop(&mut self) {
        let failed = std::thread::panicking();
        for i in 0..self.nodes.len() {
            self.kill(i);
            if failed {
                eprintln!(
                    "--- Qdrant node {i} log ({}), last lines:\n{}",
                    self.nodes[i].log().display(),
                    tail(&self.nodes[i].log(), 30)
                );
            }
        }
        if failed && let Some(dir) = self.dir.take() {
            eprintln!("--- Qdrant data and logs kept in {}", dir.keep().display());
        }
    }
}

/// Three free loopback ports (held together while chosen, so they differ).
fn free_ports() -> [u16; 3] {
    let listeners: Vec<TcpListener> = (0..3)
        .map(|_| TcpListener::bind("127.0.0.1:0").expect("a free port"))
        .collect();
    let port = |l: &TcpListener| l.local_addr().expect("local address").port();
    [
        port(&listeners[0]),
        port(&listeners[1]),
        port(&listeners[2]),
    ]
}

/// A minimal HTTP/1.1 request (`Connection: close`); `(status, body)`.
/// Not reqwest's blocking client: the fixture also runs inside
/// `#[tokio::test]`s, where that client panics when dropped.
fn http(
    port: u16,
    method: &str,
    path: &str,
    body: Option<&str>,
    api_key: Option<&str>,
) -> std::io::Result<(u16, String)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(60)))?;
    let body = body.unwrap_or("");
    let key = api_key.map_or(String::new(), |k| format!("api-key: {k}\r\n"));
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n{key}\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    let text = String::from_utf8_lossy(&raw);
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let (head, rest) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(rest)
    } else {
        rest.to_string()
    };
    Ok((status, body))
}

fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || after.len() < n {
            break;
        }
        out.push_str(&after[..n]);
        rest = after[n..].trim_start_matches("\r\n");
    }
    out
}

fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

// ------------------------------------------------------------ the registry

fn registry_dir() -> PathBuf {
    std::env::temp_dir().join("grace-qdrant").join("instances")
}

fn registry_file(pid: u32) -> PathBuf {
    registry_dir().join(format!("{pid}.env"))
}

/// Writes the node to the registry `scripts/qdrant` reads too.
fn register(child: &Child, node: &Node) {
    let dir = registry_dir();
    let _ = std::fs::create_dir_all(&dir);
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let text = format!(
        "pid={}\nowner={}\nhttp={}\ngrpc={}\np2p={}\ndir={}\nlog={}\nstarted={started}\n",
        child.id(),
        std::process::id(),
        node.http,
        node.grpc,
        node.p2p,
        node.dir.display(),
        node.log().display()
    );
    let _ = std::fs::write(registry_file(child.id()), text);
}

fn alive(pid: u32) -> bool {
    // A zombie has exited: it holds no port and no file.
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit(')')
            .next()
            .is_some_and(|r| !r.trim_start().starts_with('Z'))
    })
}

/// Stops registered nodes whose owner process is gone (left by a test
/// process that was killed), and forgets nodes that are gone.
fn reap_strays() {
    let Ok(entries) = std::fs::read_dir(registry_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let field = |key: &str| -> u32 {
            text.lines()
                .find_map(|l| l.strip_prefix(&format!("{key}=")))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0)
        };
        let (pid, owner) = (field("pid"), field("owner"));
        if pid == 0 || !alive(pid) {
            let _ = std::fs::remove_file(&path);
            continue;
        }
        let is_qdrant = std::fs::read(format!("/proc/{pid}/cmdline"))
            .is_ok_and(|c| String::from_utf8_lossy(&c).contains("qdrant"));
        if owner != 0 && !alive(owner) && is_qdrant {
            eprintln!(
                "stopping a stray Qdrant (pid {pid}) left by process {owner}, which is gone ({})",
                path.display()
            );
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
            let _ = std::fs::remove_file(&path);
        }
    }
}
