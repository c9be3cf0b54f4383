//! Faults one at a time, each on the real binary, the real embedded store
//! and the real model (the book, "Reliability"): a disk that fills up, a
//! read-only data folder, damaged files and `grace doctor`, a clock that
//! jumps, a restart (the vector cache kept, a damaged one refused).
//! PostgreSQL going down mid-request is in tests/state_postgres.rs.
//!
//! The disk and read-only cases run `tests/support/faults.py` in a private
//! mount namespace (`unshare -rm`: a tmpfs, a read-only bind mount, seen by
//! nothing else on the machine); the clock case runs it with libfaketime
//! (`scripts/setup --faults`). The script drives `grace` and prints what it
//! saw as JSON; the assertions are here.

use crate::support::common;

use std::path::Path;
use std::process::Command;

use serde_json::Value;

fn grace() -> &'static str {
    env!("CARGO_BIN_EXE_grace")
}

/// Runs a scenario of tests/support/faults.py; `namespace`: inside
/// `unshare -rm`. Its JSON, or a panic with its output.
fn scenario(name: &str, work: &Path, namespace: bool, extra: &[&str]) -> Value {
    let script = common::repo().join("tests/support/faults.py");
    let mut cmd = if namespace {
        let mut c = Command::new("unshare");
        c.args(["-rm", "python3"]);
        c
    } else {
        Command::new("python3")
    };
    let out = cmd
        .arg(&script)
        .args([name, grace(), &work.display().to_string()])
        .args(extra)
        .output()
        .expect("python3 (and unshare, from util-linux) run");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{name}: {} (a mount namespace needs root or unprivileged user namespaces)\n{stdout}\n{stderr}",
        out.status
    );
    serde_json::from_str(stdout.trim().lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{name}: {e}\n{stdout}\n{stderr}"))
}

#[test]
fn a_full_disk_refuses_an_ingest_and_an_answer_cleanly_and_both_complete_once_space_returns() {
    let work = tempfile::tempdir().unwrap();
    let seen = scenario("disk-full", work.path(), true, &[]);
    assert_eq!(seen["first_ingest"], 200, "{seen}");
    assert_eq!(
        (&seen["escalated"], &seen["claim"]),
        (&Value::Bool(true), &Value::from(200)),
        "{seen}"
    );
    // Under storage.min_free_mb the store refuses before writing; with no
    // space at all the manifest and the review database refuse: 507 each
    // time, with a message for people and no path.
    for key in ["ingest_low_space", "ingest_no_space", "answer_no_space"] {
        assert_eq!(seen[key][0], 507, "{key}: {seen}");
        assert_eq!(
            seen[key][1]["error"]["type"], "insufficient_storage",
            "{key}: {seen}"
        );
        let message = seen[key][1]["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("disk is full") && !message.contains('/'),
            "{message}"
        );
    }
    // A refused ingest lost nothing: the edited file's old text is still
    // found (its old chunks go only once the new ones have room).
    assert_eq!(seen["old_text_kept"], true, "{seen}");
    // The server stayed up and kept answering reads (no SIGBUS, no panic);
    // an ask, which writes, is answered or refused as 507.
    assert_eq!(
        (&seen["health_when_full"], &seen["search_when_full"]),
        (&Value::from(200), &Value::from(200))
    );
    assert!(
        [200, 507].contains(&seen["ask_when_full"].as_u64().unwrap()),
        "{seen}"
    );
    // Space back: the ingest completes, the answer goes in once.
    assert_eq!(seen["ingest_after"][0], 200, "{seen}");
    assert_eq!(
        seen["ingest_after"][1]["skipped"],
        Value::Array(vec![]),
        "{seen}"
    );
    assert_eq!(seen["answer_after"], 200, "{seen}");
    assert_eq!(seen["answers_logged"], 1, "{seen}");
    assert_eq!(seen["escalation_status"], "answered", "{seen}");
    assert_eq!(
        (&seen["new_text_in"], &seen["ask_when_back"]),
        (&Value::Bool(true), &Value::from(200)),
        "{seen}"
    );
    // Nothing corrupt: the store and manifest equal a clean ingest of the
    // same files, and doctor finds nothing wrong.
    assert_eq!(
        seen["ingest_after"][1]["points_total"], seen["clean_points"],
        "{seen}"
    );
    assert_eq!(seen["manifest_equal"], true, "{seen}");
    assert_eq!(seen["doctor"]["rc"], 0, "{seen}");
    assert_eq!(seen["server_exit"], 0, "{seen}");
}

#[test]
fn a_read_only_data_folder_is_a_clear_error_at_start() {
    let work = tempfile::tempdir().unwrap();
    let seen = scenario("read-only", work.path(), true, &[]);
    assert_eq!(seen["ingest"], 0, "{seen}");
    for key in ["serve", "ingest_ro", "ask_ro"] {
        assert_eq!(seen[key]["rc"], 2, "{key}: {seen}");
        let err = seen[key]["stderr"].as_str().unwrap();
        assert!(
            err.contains("the data folder")
                && err.contains("cannot be written")
                && err.contains("storage.data_dir"),
            "{key}: {err}"
        );
    }
}

#[test]
fn a_clock_jump_leaves_an_escalation_the_time_it_had_left() {
    let lib = std::env::var("GRACE_FAKETIME_LIB").ok().or_else(|| {
        ["x86_64-linux-gnu", "aarch64-linux-gnu"]
            .iter()
            .map(|arch| format!("/usr/lib/{arch}/faketime/libfaketime.so.1"))
            .find(|p| Path::new(p).exists())
    });
    let lib =
        lib.expect("libfaketime: scripts/setup --faults installs it (or set GRACE_FAKETIME_LIB)");
    let work = tempfile::tempdir().unwrap();
    let seen = scenario("clock-jump", work.path(), false, &[&lib]);
    assert_eq!(seen["escalated"], true, "{seen}");
    // Two hours forward, then three back: still open each time (without
    // the compensation it expired at the first jump)...
    for key in ["before", "after_forward_2h", "after_back_to_minus_1h"] {
        assert_eq!(seen[key]["status"], "pending", "{key}: {seen}");
    }
    assert_eq!(seen["jumps_logged"], 2, "{seen}");
    // ... and it expires by elapsed time: after its 8 seconds, within 2.
    let at = seen["settled"]["at"].as_f64().unwrap();
    assert_eq!(seen["settled"]["status"], "expired", "{seen}");
    assert!((8.0..11.0).contains(&at), "expired at {at} s: {seen}");
}

#[test]
fn a_restarted_server_keeps_its_sentence_vectors_and_a_damaged_cache_file_only_warns() {
    let work = tempfile::tempdir().unwrap();
    let seen = scenario("restart", work.path(), false, &[]);
    assert_eq!(seen["ingest"], 0, "{seen}");
    // The first start has no file; stopping writes it.
    assert_eq!(seen["first"]["loaded"], 0, "{seen}");
    assert!(
        seen["first"]["cache_bytes"].as_u64().unwrap() > 1000,
        "{seen}"
    );
    // The next start loads the vectors the first question embedded.
    assert!(seen["second"]["loaded"].as_u64().unwrap() > 5, "{seen}");
    // A damaged file: refused with a warning, the server answers, and
    // stopping writes a good file again.
    assert_eq!(seen["damaged"]["refused"], true, "{seen}");
    assert_eq!(seen["damaged"]["loaded"], Value::Null, "{seen}");
    for run in ["first", "second", "damaged"] {
        assert_eq!(seen[run]["ask"], 200, "{run}: {seen}");
    }
    assert!(
        seen["damaged"]["cache_bytes"].as_u64().unwrap() > 1000,
        "{seen}"
    );
}

fn run(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(grace())
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

#[test]
fn a_damaged_manifest_or_state_file_is_named_and_doctor_repairs_both() {
    let work = tempfile::tempdir().unwrap();
    let data = work.path().join("data");
    let c = common::config(&data);
    std::fs::write(
        work.path().join("grace_config.yml"),
        format!(
            "embedding:\n  model_dir: {:?}\n  runtime_path: {:?}\nreader:\n  model_dir: {:?}\nstorage:\n  data_dir: {:?}\n",
            c.embedding.model_dir, c.embedding.runtime_path, c.reader.model_dir, data
        ),
    )
    .unwrap();
    let kb = common::repo().join("examples/kb");
    let kb = kb.to_str().unwrap();
    assert!(run(work.path(), &["ingest", kb]).status.success());
    assert!(
        run(work.path(), &["ask", "Can I deploy on Fridays?"])
            .status
            .code()
            == Some(4)
    );
    let healthy = run(work.path(), &["doctor", "--json"]);
    assert!(
        healthy.status.success(),
        "{}",
        String::from_utf8_lossy(&healthy.stdout)
    );

    // A manifest cut short, a review database cut in half.
    let manifest = data.join("manifests/grace.json");
    let whole = std::fs::read(&manifest).unwrap();
    std::fs::write(&manifest, &whole[..whole.len() / 3]).unwrap();
    let review = data.join("review.sqlite3");
    let len = std::fs::metadata(&review).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&review)
        .unwrap()
        .set_len(len / 2)
        .unwrap();

    // Each is an error naming its file, and saying what to do.
    let ingest = run(work.path(), &["ingest", kb]);
    let err = String::from_utf8_lossy(&ingest.stderr);
    assert!(
        !ingest.status.success()
            && err.contains("grace.json")
            && err.contains("grace doctor --repair"),
        "{err}"
    );
    let list = run(work.path(), &["review", "list"]);
    let err = String::from_utf8_lossy(&list.stderr);
    assert!(
        !list.status.success() && err.contains("review.sqlite3") && err.contains("malformed"),
        "{err}"
    );

    // Doctor finds both (exit 1), then mends both and says what it did.
    let found = run(work.path(), &["doctor", "--json"]);
    assert_eq!(found.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&found.stdout).unwrap();
    let problems: Vec<&str> = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["finding"] == "problem")
        .map(|c| c["place"].as_str().unwrap())
        .collect();
    assert!(
        problems.iter().any(|p| p.ends_with("grace.json"))
            && problems.iter().any(|p| p.ends_with("review.sqlite3")),
        "{report}"
    );
    let repaired = run(work.path(), &["doctor", "--repair", "--json"]);
    assert!(
        repaired.status.success(),
        "{}",
        String::from_utf8_lossy(&repaired.stdout)
    );
    let report: Value = serde_json::from_slice(&repaired.stdout).unwrap();
    let detail = |place: &str| {
        report["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["place"].as_str().unwrap().ends_with(place))
            .map(|c| {
                (
                    c["finding"].as_str().unwrap().to_string(),
                    c["detail"].as_str().unwrap().to_string(),
                )
            })
            .unwrap()
    };
    let (finding, text) = detail("grace.json");
    assert_eq!(finding, "repaired", "{text}");
    assert!(text.contains("rebuilt from the store"), "{text}");
    let (finding, text) = detail("review.sqlite3");
    assert_eq!(finding, "repaired", "{text}");
    assert!(text.contains("moved to"), "{text}");

    // The rebuilt manifest lists what a clean ingest does: the next ingest
    // writes nothing, and the review queue works again (empty).
    let again = run(work.path(), &["ingest", kb, "--json"]);
    assert!(
        again.status.success(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    let r: Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(
        (
            r["chunks_written"].as_u64(),
            r["updated"].as_u64(),
            r["added"].as_u64()
        ),
        (Some(0), Some(0), Some(0)),
        "{r}"
    );
    assert!(run(work.path(), &["review", "list"]).status.success());
    let clean: Vec<_> = serde_json::from_slice::<Value>(&whole).unwrap()["sources"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(s, e)| (s.clone(), e["content_hash"].clone(), e["point_ids"].clone()))
        .collect();
    let rebuilt: Value = serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
    let rebuilt: Vec<_> = rebuilt["sources"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(s, e)| (s.clone(), e["content_hash"].clone(), e["point_ids"].clone()))
        .collect();
    assert_eq!(rebuilt, clean);
}
