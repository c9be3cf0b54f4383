//! A knowledge base that follows its folder: `grace serve` with
//! `server.watch` answers from an edited, an added and a deleted file a
//! moment after the change (the latencies are printed), keeps answering
//! through a burst of 1,000 new files; `grace ingest --watch` killed with
//! SIGKILL in the middle of a burst catches up at its next start with
//! exactly what a clean ingest of the folder gives — nothing lost, nothing
//! twice.

use crate::support::common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use grace::Grace;
use grace::ingest::manifest::EntryState;
use serde_json::{Value, json};

/// Long enough for a loaded 2-core machine; the figures printed are the
/// measured ones.
const PATIENCE: Duration = Duration::from_secs(60);

fn wait_for(what: &str, mut done: impl FnMut() -> bool) -> Duration {
    let started = Instant::now();
    while !done() {
        assert!(
            started.elapsed() < PATIENCE,
            "{what}: not within {PATIENCE:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    started.elapsed()
}

struct Server {
    base: String,
    http: reqwest::Client,
    runtime: tokio::runtime::Runtime,
    server: Option<common::TestServer>,
}

impl Server {
    fn start(data: &Path, docs: &Path) -> Self {
        let mut config = common::config(data);
        config.server.watch = vec![docs.to_path_buf()];
        config.ingest.watch_debounce_seconds = 0.2;
        // Every ask embeds its question and sentences for real: the
        // latency during the burst is not a cache hit.
        config.embedding.cache_size = 0;
        let grace = Grace::builder(config)
            .embedder(common::embedder())
            .build()
            .unwrap();
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let server = runtime.block_on(common::serve(grace));
        Self {
            base: server.base.clone(),
            http: reqwest::Client::new(),
            runtime,
            server: Some(server),
        }
    }

    fn post(&self, path: &str, body: Value) -> Value {
        self.runtime.block_on(async {
            let r = self
                .http
                .post(format!("{}{path}", self.base))
                .json(&body)
                .send()
                .await
                .unwrap();
            assert!(r.status().is_success(), "{path}: {}", r.status());
            r.json().await.unwrap()
        })
    }

    /// The sources of the best passages for `query`.
    fn sources(&self, query: &str) -> Vec<String> {
        let found = self.post("/v1/search", json!({"query": query, "limit": 3}));
        found["passages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["source"].as_str().unwrap().to_string())
            .collect()
    }

    fn texts(&self, query: &str) -> String {
        let found = self.post("/v1/search", json!({"query": query, "limit": 3}));
        found["passages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["text"].as_str().unwrap())
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn points(&self) -> u64 {
        let status: Value = self.runtime.block_on(async {
            let r = self
                .http
                .get(format!("{}/v1/status", self.base))
                .send()
                .await
                .unwrap();
            r.json().await.unwrap()
        });
        status["knowledge_base"]["store"]["points"]
            .as_u64()
            .unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            let _ = self.runtime.block_on(server.begin_stop());
        }
    }
}

fn note(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_served_knowledge_base_follows_its_folder_and_answers_through_a_burst() {
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    fs::create_dir(&docs).unwrap();
    let pager = note(
        &docs,
        "pager.md",
        "# Pager\n\nThe on-call engineer carries the pager for one week.\n",
    );
    let coffee = note(
        &docs,
        "coffee.md",
        "# Coffee\n\nThe espresso machine on the third floor is descaled every Friday.\n",
    );
    let server = Server::start(&tmp.path().join("data"), &docs);
    // The start-up ingest.
    wait_for("the first ingest", || {
        server
            .sources("espresso machine descaling")
            .first()
            .is_some_and(|s| s.ends_with("coffee.md"))
    });

    // Edited: the new text is what a search finds.
    fs::write(
        &pager,
        "# Pager\n\nThe on-call engineer carries the pager for two weeks, handing over on Tuesdays.\n",
    )
    .unwrap();
    let edited = wait_for("the edit", || {
        server
            .texts("how long is the pager carried")
            .contains("two weeks")
    });
    // Added.
    note(
        &docs,
        "parking.md",
        "# Parking\n\nVisitors park in the yellow bays behind the warehouse.\n",
    );
    let added = wait_for("the new file", || {
        server
            .sources("where do visitors park")
            .first()
            .is_some_and(|s| s.ends_with("parking.md"))
    });
    // Deleted: its passages are gone.
    fs::remove_file(&coffee).unwrap();
    let deleted = wait_for("the deletion", || {
        !server
            .sources("espresso machine descaling")
            .iter()
            .any(|s| s.ends_with("coffee.md"))
    });
    println!(
        "answers follow the folder: edit {:.2} s, new file {:.2} s, deletion {:.2} s (debounce 0.2 s)",
        edited.as_secs_f64(),
        added.as_secs_f64(),
        deleted.as_secs_f64()
    );

    // A burst of 1,000 new files: questions are answered while it is
    // ingested.
    let before = server.points();
    let burst = docs.join("burst");
    fs::create_dir(&burst).unwrap();
    for i in 0..1000 {
        note(
            &burst,
            &format!("note-{i:04}.md"),
            &format!(
                "# Note {i}\n\nMeeting room {i} seats {} people.\n",
                4 + i % 9
            ),
        );
    }
    let mut during = Vec::new();
    let mut in_progress = 0;
    let started = Instant::now();
    loop {
        let asked = Instant::now();
        let outcome = server.post("/v1/ask", json!({"question": "Where do visitors park?"}));
        during.push(asked.elapsed().as_secs_f64());
        assert!(
            outcome["answer"]["citations"][0]["source"]
                .as_str()
                .is_some_and(|s| s.ends_with("parking.md")),
            "{outcome}"
        );
        let points = server.points();
        if points >= before + 1000 {
            break;
        }
        if points > before {
            in_progress += 1;
        }
        assert!(
            started.elapsed() < PATIENCE * 3,
            "the burst was not ingested"
        );
    }
    during.sort_by(f64::total_cmp);
    println!(
        "a burst of 1,000 files ingested in {:.1} s; {} asks meanwhile, {} of them while it was half-way, latency median {:.2} s, max {:.2} s",
        started.elapsed().as_secs_f64(),
        during.len(),
        in_progress,
        during[during.len() / 2],
        during[during.len() - 1]
    );
    assert!(
        in_progress >= 1,
        "no question was answered while the burst was half-ingested"
    );
}

/// `grace ingest --watch DOCS` with its own configuration at `data`.
fn follower(tmp: &Path, data: &Path, docs: &Path) -> Child {
    let repo = common::repo();
    let config = tmp.join(format!(
        "{}.yml",
        data.file_name().unwrap().to_string_lossy()
    ));
    fs::write(
        &config,
        format!(
            "storage:\n  data_dir: {}\nembedding:\n  model_dir: {}\n  runtime_path: {}\ningest:\n  commit_chunks: 12\n  watch_debounce_seconds: 0.2\n",
            data.display(),
            repo.join("models/minilm").display(),
            repo.join("models/libonnxruntime.so").display()
        ),
    )
    .unwrap();
    Command::new(env!("CARGO_BIN_EXE_grace"))
        .arg("--config")
        .arg(&config)
        .arg("-q")
        .args(["ingest", "--watch"])
        .arg(docs)
        .env_remove("GRACE_CONFIG")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Per source, its content hash and point ids; and the store's count.
fn snapshot(data: &Path) -> (Vec<(String, String, Vec<u64>)>, usize) {
    let (kb, manifest) = common::open_existing(data);
    assert!(
        manifest
            .sources
            .values()
            .all(|e| e.state == EntryState::Committed)
    );
    let sources = manifest
        .sources
        .iter()
        .map(|(s, e)| (s.clone(), e.content_hash.clone(), e.point_ids.clone()))
        .collect();
    (sources, kb.store().count(None).unwrap())
}

#[test]
fn a_follower_killed_mid_burst_catches_up_at_its_next_start_with_nothing_lost_or_twice() {
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    fs::create_dir(&docs).unwrap();
    let keep = note(
        &docs,
        "keep.md",
        "# Keep\n\nThis file is edited while GRACE is down.\n",
    );
    let doomed = note(
        &docs,
        "doomed.md",
        "# Doomed\n\nThis file is deleted while GRACE is down.\n",
    );
    let data = tmp.path().join("followed");
    let mut child = follower(tmp.path(), &data, &docs);
    wait_for("the first ingest", || {
        common::manifest_progress(&data) == (2, 0)
    });

    // A burst; killed once part of it is written.
    for i in 0..300 {
        note(
            &docs,
            &format!("burst-{i:03}.md"),
            &format!("# Burst {i}\n\nItem {i} of the burst, shelf {}.\n", i % 17),
        );
    }
    wait_for("the burst to be half-written", || {
        let (committed, _) = common::manifest_progress(&data);
        committed > 2 && committed < 302
    });
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let (committed, pending) = common::manifest_progress(&data);
    println!("killed with {committed} sources committed, {pending} pending");
    assert!(committed < 302, "the kill came after the burst was done");

    // While it is down: an edit and a deletion.
    fs::write(
        &keep,
        "# Keep\n\nThis file was edited while GRACE was down.\n",
    )
    .unwrap();
    fs::remove_file(&doomed).unwrap();

    let mut child = follower(tmp.path(), &data, &docs);
    let caught_up = wait_for("the restart to catch up", || {
        common::manifest_progress(&data) == (301, 0)
    });
    child.kill().unwrap();
    child.wait().unwrap();
    println!(
        "caught up {:.1} s after the restart",
        caught_up.as_secs_f64()
    );

    // The same as one clean ingest of the folder as it is now.
    let clean = tmp.path().join("clean");
    let kb = common::open(common::config(&clean));
    kb.ingest(
        std::slice::from_ref(&docs),
        &Default::default(),
        &mut |_| {},
    )
    .unwrap();
    drop(kb);
    let (followed, followed_points) = snapshot(&data);
    let (expected, expected_points) = snapshot(&clean);
    assert_eq!(followed.len(), 301);
    assert_eq!(followed, expected);
    assert_eq!(followed_points, expected_points);
}

#[test]
fn watching_a_pattern_or_a_missing_folder_is_refused_before_any_work() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    for path in ["docs/*.md", "no-such-folder"] {
        let out = Command::new(env!("CARGO_BIN_EXE_grace"))
            .arg("--data-dir")
            .arg(&data)
            .args(["ingest", "--watch", path])
            .current_dir(tmp.path())
            .env_remove("GRACE_CONFIG")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{path}: {stderr}");
        assert!(
            stderr.contains("not patterns") && stderr.contains(path),
            "{stderr}"
        );
        assert!(!data.exists(), "{path}: a knowledge base was created");
    }
}
