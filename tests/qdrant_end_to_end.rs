//! GRACE end to end on a real Qdrant server, as a user runs it: `grace
//! ingest`, `grace ask` and `grace eval eval/debian-faq` with
//! `storage.backend: qdrant` (set through the environment), next to the
//! same commands on the embedded store. Retrieval and confidence must be
//! the same on both (recall, AUROC, and the decision of each question).

use crate::support;
use crate::support::common;

use serde_json::Value;
use support::qdrant_server::QdrantCluster;

/// `grace ARGS` on the embedded store (`url` None) or the server at `url`.
fn grace(dir: &std::path::Path, url: Option<&str>, args: &[&str]) -> std::process::Output {
    let mut cmd = common::grace_cmd(dir, args);
    if let Some(url) = url {
        cmd.env("GRACE_STORAGE__BACKEND", "qdrant")
            .env("GRACE_QDRANT__URL", url);
    }
    cmd.output().unwrap()
}

fn json(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", common::output_text(out)))
}

#[test]
fn ingest_ask_and_eval_on_qdrant_equal_the_embedded_store() {
    if !support::qdrant_server::available() {
        return;
    }
    let server = QdrantCluster::single();
    let url = server.url();
    let work = tempfile::tempdir().unwrap();
    let kb = common::repo().join("examples/kb");
    let kb = kb.to_str().unwrap();

    // ingest and ask on each backend.
    let mut asked = Vec::new();
    for backend in [None, Some(url.as_str())] {
        let out = grace(work.path(), backend, &["ingest", "--json", kb]);
        assert!(out.status.success(), "{}", common::output_text(&out));
        assert!(json(&out)["chunks_written"].as_u64() > Some(0));
        let out = grace(
            work.path(),
            backend,
            &["ask", "--json", "How do I roll back a deployment?"],
        );
        let run = json(&out);
        asked.push((
            out.status.code(),
            run["decision"].clone(),
            run["answer"]["text"].clone(),
            run["answer"]["citations"].clone(),
            run["confidence"].as_f64().map(|c| (c * 1e4).round()),
        ));
    }
    assert_eq!(asked[0], asked[1], "the same answer from both backends");
    assert!(asked[1].3.as_array().is_some_and(|c| !c.is_empty()));

    // The evaluation: the set's corpus in a temporary collection on the
    // server (deleted afterwards), the same questions.
    let set = common::eval_sets().join("debian-faq");
    let set = set.to_str().unwrap();
    let edge = json(&grace(work.path(), None, &["eval", "--json", set]));
    let out = grace(work.path(), Some(&url), &["eval", "--json", set]);
    assert!(out.status.success(), "{}", common::output_text(&out));
    let qdrant = json(&out);
    assert_eq!(edge["backend"], "edge");
    assert_eq!(qdrant["backend"], "qdrant");
    for key in [
        "/chunks",
        "/recall_at_1",
        "/recall_at_k",
        "/answered",
        "/unanswerable_answered",
        "/top1_cosine/auroc",
        "/answer_confidence/auroc",
    ] {
        let (a, b) = (&edge.pointer(key).unwrap(), &qdrant.pointer(key).unwrap());
        eprintln!("{key}: embedded {a}, qdrant {b}");
        let (a, b) = (a.as_f64().unwrap(), b.as_f64().unwrap());
        assert!((a - b).abs() <= 0.01, "{key}: embedded {a}, qdrant {b}");
    }
    // The evaluation's collection is gone; the knowledge base's stays.
    let (_, list) = server.rest(0, "GET", "/collections", None);
    let names: Vec<&str> = list["result"]["collections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["grace"], "{list}");
}
