//! Real Qdrant servers for tests, started, killed, restarted and stopped
//! by `scripts/qdrant` (one node, or a cluster of N: Raft, peer-to-peer
//! port) on free loopback ports with their data in a temporary folder: the
//! script's registry of running nodes is the only one, for people and
//! tests alike. The server is the first of `GRACE_QDRANT_BIN`, a `qdrant`
//! on the PATH and the one `scripts/setup --qdrant` put in
//! `~/.cache/grace/qdrant/` (the script looks in the same order; the path
//! found here is handed to it).
//!
//! Every node is stopped when the fixture is dropped, also when a test
//! fails (its log's tail is printed then, and its folder kept). The nodes
//! belong to the test process (`--owner`): a node left by a test process
//! that was killed is a stray, which the next start stops.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

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

/// One node of a [`QdrantCluster`], as `scripts/qdrant start --json` gives it.
#[derive(serde::Deserialize)]
struct Node {
    http: u16,
    grpc: u16,
    log: PathBuf,
    /// Killed by the test and not restarted.
    #[serde(skip)]
    down: bool,
}

/// What `scripts/qdrant start --json` prints.
#[derive(serde::Deserialize)]
struct Started {
    nodes: Vec<Node>,
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

/// `scripts/qdrant ARGS`, with the server [`binary`] this fixture found.
fn script_command(args: &[&str]) -> Command {
    let mut command = Command::new("bash");
    command
        .arg(super::common::repo().join("scripts/qdrant"))
        .args(args)
        .env("GRACE_QDRANT_BIN", binary());
    command
}

/// Runs `scripts/qdrant ARGS` for the nodes in `dir`; its standard output.
/// A failure panics with what the script said (the logs' tails included).
fn script(args: &[&str]) -> String {
    let out = script_command(args).output().expect("run scripts/qdrant");
    assert!(
        out.status.success(),
        "scripts/qdrant {} failed ({}):\n{}",
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

impl QdrantCluster {
    /// One node.
    pub fn single() -> Self {
        Self::start(Options::default())
    }

    /// Starts the nodes and waits until each answers `/readyz` and listens
    /// on its gRPC port (and, for a cluster, until node 0 sees every peer
    /// and a Raft leader): `scripts/qdrant start`.
    pub fn start(options: Options) -> Self {
        let dir = tempfile::Builder::new()
            .prefix("grace-qdrant-")
            .tempdir()
            .expect("temporary folder");
        let folder = dir.path().to_string_lossy().into_owned();
        let nodes = options.nodes.max(1).to_string();
        let owner = std::process::id().to_string();
        let mut args = vec![
            "start", "--json", "--dir", &folder, "--nodes", &nodes, "--owner", &owner,
        ];
        if let Some(key) = &options.api_key {
            args.extend(["--api-key", key]);
        }
        let started: Started =
            serde_json::from_str(&script(&args)).expect("scripts/qdrant start --json");
        Self {
            dir: Some(dir),
            nodes: started.nodes,
            options,
        }
    }

    fn folder(&self) -> String {
        self.dir
            .as_ref()
            .map(|d| d.path().to_string_lossy().into_owned())
            .unwrap_or_default()
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
        if !self.nodes[i].down {
            script(&["kill", "--dir", &self.folder(), "--node", &i.to_string()]);
            self.nodes[i].down = true;
        }
    }

    /// Starts node `i` again on its ports and data, and waits until it is
    /// ready (it rejoins the cluster from its stored state).
    pub fn restart(&mut self, i: usize) {
        self.kill(i);
        script(&["restart", "--dir", &self.folder(), "--node", &i.to_string()]);
        self.nodes[i].down = false;
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
                if self.nodes[i].down {
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
}

impl Drop for QdrantCluster {
    fn drop(&mut self) {
        let failed = std::thread::panicking();
        let stopped = script_command(&["stop", "--dir", &self.folder()]).status();
        if !stopped.as_ref().is_ok_and(|s| s.success()) {
            eprintln!(
                "scripts/qdrant stop --dir {} failed: {stopped:?}",
                self.folder()
            );
        }
        if failed {
            for (i, node) in self.nodes.iter().enumerate() {
                eprintln!(
                    "--- Qdrant node {i} log ({}), last lines:\n{}",
                    node.log.display(),
                    tail(&node.log, 30)
                );
            }
            if let Some(dir) = self.dir.take() {
                eprintln!("--- Qdrant data and logs kept in {}", dir.keep().display());
            }
        }
    }
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
