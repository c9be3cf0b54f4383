//! A three-node Qdrant cluster on loopback keeps GRACE's answers and data
//! through the loss of a node (the Raft leader, killed with SIGKILL):
//!
//! 1. `grace ingest` the debian-faq corpus (but its last files) into a
//!    collection of 3 shards, each on 2 nodes (replication factor 2);
//! 2. SIGKILL the leader (GRACE talks to another node), and write at once,
//!    in the moment after the loss when a write may wait on the cluster
//!    (Qdrant 1.16.3 was seen timing out the first `wait = true` write
//!    after a kill although it was applied: the ingest's retries ride
//!    through that, and report it). The write goes to a second collection
//!    on the same cluster, so that the first one's statistics, and so its
//!    rankings, stay as they were for step 3;
//! 3. `grace search` and `grace ask` give the same top results for a fixed
//!    set of questions as before;
//! 4. `grace ingest` the rest while the node is down;
//! 5. restart the node and wait until every replica is Active again;
//! 6. every point the manifest records is stored exactly once and on every
//!    replica: ids scrolled with read consistency `all` (each replica,
//!    the restarted node's included, must hold a point for it to be
//!    returned) equal the manifest's, and both replicas of each shard hold
//!    the same number of points;
//! 7. with two nodes of three lost, a search is a clear error, not a
//!    partial answer.

use crate::support;
use crate::support::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::qdrant_server::{Options, QdrantCluster};

const COLLECTION: &str = "faq";
/// Files of the corpus held back and ingested while a node is down.
const LATE_FILES: usize = 6;
/// Questions asked before and after the loss.
const QUESTIONS: usize = 10;

/// `grace` on collection [`COLLECTION`] of the cluster at `url`, with
/// `data` as its data folder.
fn grace(data: &Path, url: &str, args: &[&str]) -> std::process::Output {
    grace_on(COLLECTION, data, url, args)
}

fn grace_on(collection: &str, data: &Path, url: &str, args: &[&str]) -> std::process::Output {
    let started = Instant::now();
    let mut all = vec!["--data-dir", data.to_str().unwrap()];
    all.extend_from_slice(args);
    let out = common::grace_cmd(data.parent().unwrap(), &all)
        .env("GRACE_STORAGE__BACKEND", "qdrant")
        .env("GRACE_QDRANT__URL", url)
        .env("GRACE_COLLECTION__NAME", collection)
        .env("GRACE_COLLECTION__SHARD_NUMBER", "3")
        .env("GRACE_COLLECTION__REPLICATION_FACTOR", "2")
        .env("GRACE_COLLECTION__WRITE_CONSISTENCY_FACTOR", "1")
        .output()
        .unwrap();
    eprintln!(
        "grace {} ({:.1} s, exit {:?})",
        args.join(" "),
        started.elapsed().as_secs_f64(),
        out.status.code()
    );
    out
}

fn json_of(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", common::output_text(out)))
}

/// One passage, by what it is: source, section, position.
type Passage = (String, String, u64);

/// What must not change when a node is lost: per question, the top
/// passages and, for `ask`, the decision and the cited sources.
fn answers(data: &Path, url: &str, questions: &[String]) -> Vec<(Vec<Passage>, Value, Value)> {
    questions
        .iter()
        .map(|q| {
            let out = grace(data, url, &["search", "--json", "-k", "5", q]);
            assert!(out.status.success(), "{}", common::output_text(&out));
            let ids = json_of(&out)
                .as_array()
                .unwrap()
                .iter()
                .map(|p| {
                    (
                        p["source"].as_str().unwrap().to_string(),
                        p["section"].as_str().unwrap().to_string(),
                        p["chunk_index"].as_u64().unwrap(),
                    )
                })
                .collect();
            let out = grace(data, url, &["ask", "--json", q]);
            let run = json_of(&out);
            let sources: Vec<Value> = run["answer"]["citations"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| c["source"].clone())
                .collect();
            (ids, run["decision"].clone(), Value::from(sources))
        })
        .collect()
}

/// The index of the node that is the Raft leader (each node is asked its
/// peer id).
fn leader(cluster: &QdrantCluster) -> usize {
    let (_, c) = cluster.rest(0, "GET", "/cluster", None);
    let leader = c["result"]["raft_info"]["leader"].as_u64().unwrap();
    (0..cluster.len())
        .find(|&i| {
            cluster.rest(i, "GET", "/cluster", None).1["result"]["peer_id"].as_u64() == Some(leader)
        })
        .unwrap_or_else(|| panic!("no node is the leader {leader}: {c}"))
}

/// Every point id, scrolled through node `via` with read consistency
/// `all`: a point is returned only if every active replica of its shard
/// holds it.
fn ids_on_every_replica(cluster: &QdrantCluster, via: usize) -> Vec<u64> {
    let mut ids = Vec::new();
    let mut offset = Value::Null;
    loop {
        let (status, page) = cluster.rest(
            via,
            "POST",
            &format!("/collections/{COLLECTION}/points/scroll?consistency=all"),
            Some(&json!({"limit": 500, "offset": offset, "with_payload": false, "with_vector": false})),
        );
        assert_eq!(status, 200, "{page}");
        for p in page["result"]["points"].as_array().unwrap() {
            ids.push(p["id"].as_u64().unwrap());
        }
        offset = page["result"]["next_page_offset"].clone();
        if offset.is_null() {
            return ids;
        }
    }
}

/// Shard id → points held by each of its replicas, across the nodes.
fn replica_counts(cluster: &QdrantCluster) -> BTreeMap<u64, Vec<u64>> {
    let mut counts: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for i in 0..cluster.len() {
        let (status, info) = cluster.rest(
            i,
            "GET",
            &format!("/collections/{COLLECTION}/cluster"),
            None,
        );
        assert_eq!(status, 200, "{info}");
        for s in info["result"]["local_shards"].as_array().unwrap() {
            counts
                .entry(s["shard_id"].as_u64().unwrap())
                .or_default()
                .push(s["points_count"].as_u64().unwrap());
        }
    }
    counts
}

fn manifest_ids(data: &Path, url: &str) -> Vec<u64> {
    let mut config = common::config(data);
    config.storage.backend = grace::config::Backend::Qdrant;
    config.qdrant.url = url.to_string();
    config.collection.name = COLLECTION.to_string();
    common::manifest_ids(&config)
}

#[test]
fn a_three_node_cluster_keeps_answers_and_data_through_a_node_loss() {
    if !support::qdrant_server::available() {
        return;
    }
    let mut cluster = QdrantCluster::start(Options {
        nodes: 3,
        ..Default::default()
    });
    let work = tempfile::tempdir().unwrap();
    let data = work.path().join("data");
    // The corpus, its last files held back for later.
    let corpus = common::eval_sets().join("debian-faq");
    let mut files: Vec<_> = std::fs::read_dir(corpus.join("corpus"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let (first, late) = (work.path().join("first"), work.path().join("late"));
    for (dir, part) in [
        (&first, &files[..files.len() - LATE_FILES]),
        (&late, &files[files.len() - LATE_FILES..]),
    ] {
        std::fs::create_dir_all(dir).unwrap();
        for f in part {
            std::fs::copy(f, dir.join(f.file_name().unwrap())).unwrap();
        }
    }
    let questions: Vec<String> = std::fs::read_to_string(corpus.join("questions.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|q| q["answerable"] == true)
        .map(|q| q["question"].as_str().unwrap().to_string())
        .take(QUESTIONS)
        .collect();

    // The second collection, written once before the loss and once after.
    let (window_before, window_after) = (work.path().join("w1"), work.path().join("w2"));
    for (dir, file) in [
        (&window_before, "getting-started.md"),
        (&window_after, "troubleshooting.md"),
    ] {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::copy(
            common::repo().join("examples/kb").join(file),
            dir.join(file),
        )
        .unwrap();
    }

    // GRACE talks to a node that is not the leader; the leader is lost.
    let victim = leader(&cluster);
    let via = (victim + 1) % cluster.len();
    let url = cluster.node_url(via);

    // 1. Ingest.
    let out = grace(&data, &url, &["ingest", "--json", first.to_str().unwrap()]);
    assert!(out.status.success(), "{}", common::output_text(&out));
    let before_loss = json_of(&out)["points_total"].as_u64().unwrap();
    let (_, info) = cluster.rest(via, "GET", &format!("/collections/{COLLECTION}"), None);
    let params = &info["result"]["config"]["params"];
    assert_eq!(params["shard_number"], 3, "{params}");
    assert_eq!(params["replication_factor"], 2, "{params}");
    assert_eq!(params["write_consistency_factor"], 1, "{params}");
    let out = grace_on(
        "window",
        &data,
        &url,
        &["ingest", window_before.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", common::output_text(&out));
    cluster.wait_replicas_active(COLLECTION, Duration::from_secs(60));
    cluster.wait_replicas_active("window", Duration::from_secs(60));
    let answered = answers(&data, &url, &questions);
    assert!(answered.iter().all(|(ids, _, _)| ids.len() == 5));

    // 2. Lose the leader, with no warning, and write at once.
    cluster.kill(victim);
    let out = grace_on(
        "window",
        &data,
        &url,
        &["ingest", "--json", window_after.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", common::output_text(&out));
    let report = json_of(&out);
    eprintln!(
        "the write right after the loss: {} chunks in {:.1} s, {} store retries",
        report["chunks_written"], report["elapsed_secs"], report["store_retries"]
    );
    assert_eq!(report["added"], 1, "{report}");
    assert!(report["chunks_written"].as_u64() > Some(0), "{report}");

    // 3. Same answers.
    let started = Instant::now();
    let after_loss = answers(&data, &url, &questions);
    eprintln!(
        "{QUESTIONS} searches and asks with node {victim} down: {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert_eq!(
        after_loss, answered,
        "the top results changed with a node down"
    );
    let out = grace(&data, &url, &["status", "--json"]);
    assert!(out.status.success(), "{}", common::output_text(&out));

    // 4. Ingest more while the node is down: it completes, with retries if
    // the cluster made it wait, and loses nothing.
    let out = grace(&data, &url, &["ingest", "--json", late.to_str().unwrap()]);
    assert!(out.status.success(), "{}", common::output_text(&out));
    let report = json_of(&out);
    eprintln!(
        "ingest with a node down: {} files added, {} chunks in {:.1} s, {} store retries",
        report["added"], report["chunks_written"], report["elapsed_secs"], report["store_retries"]
    );
    assert_eq!(report["added"], LATE_FILES);
    let total = report["points_total"].as_u64().unwrap();
    assert!(total > before_loss);

    // 5. The node comes back and catches up.
    cluster.restart(victim);
    let started = Instant::now();
    cluster.wait_replicas_active(COLLECTION, Duration::from_secs(120));
    eprintln!(
        "node {victim} back, every replica Active after {:.1} s",
        started.elapsed().as_secs_f64()
    );

    // 6. Every point exactly once, on every replica.
    let manifest = manifest_ids(&data, &url);
    assert_eq!(manifest.len() as u64, total);
    for node in 0..cluster.len() {
        let mut ids = ids_on_every_replica(&cluster, node);
        let returned = ids.len();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(
            returned,
            ids.len(),
            "a point came back twice through node {node}"
        );
        assert_eq!(
            ids, manifest,
            "through node {node}: the stored ids are not the manifest's"
        );
    }
    let (_, count) = cluster.rest(
        victim,
        "POST",
        &format!("/collections/{COLLECTION}/points/count"),
        Some(&json!({"exact": true})),
    );
    assert_eq!(count["result"]["count"].as_u64(), Some(total), "{count}");
    let replicas = replica_counts(&cluster);
    assert_eq!(replicas.len(), 3, "{replicas:?}");
    let mut sum = 0;
    for (shard, counts) in &replicas {
        assert_eq!(counts.len(), 2, "shard {shard}: {counts:?}");
        assert_eq!(
            counts[0], counts[1],
            "shard {shard}'s replicas differ: {counts:?}"
        );
        sum += counts[0];
    }
    assert_eq!(sum, total, "{replicas:?}");

    // Two nodes lost of three: some shards have no replica left. A search
    // is then an error that says so, never a silently partial answer.
    for node in 0..cluster.len() {
        if node != via {
            cluster.kill(node);
        }
    }
    let out = grace(&data, &url, &["search", &questions[0]]);
    let text = common::output_text(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("no replica the cluster can reach"), "{text}");
}
