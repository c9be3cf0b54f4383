//! Crash safety: `grace ingest` killed with SIGKILL at several points, then
//! run again, must leave exactly the chunks a clean ingest leaves — none
//! lost, none twice — also when the re-run updates and prunes files.

use crate::support::common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use grace::ingest::manifest::{EntryState, Manifest};
use grace::store::PayloadFilter;

fn write_config(dir: &Path, data: &Path) -> PathBuf {
    let repo = common::repo();
    let text = format!(
        "storage:\n  data_dir: {}\nembedding:\n  model_dir: {}\n  runtime_path: {}\ningest:\n  commit_chunks: 12\n",
        data.display(),
        repo.join("models/minilm").display(),
        repo.join("models/libonnxruntime.so").display()
    );
    let path = dir.join(format!(
        "{}.yml",
        data.file_name().unwrap().to_string_lossy()
    ));
    fs::write(&path, text).unwrap();
    path
}

fn grace(config: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_grace"));
    c.arg("--config").arg(config).arg("-q").args(args);
    c.env_remove("GRACE_CONFIG")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    c
}

fn run_to_end(config: &Path, args: &[&str]) {
    let status = grace(config, args).status().unwrap();
    assert!(status.success(), "grace {args:?} failed: {status}");
}

/// Runs `grace args` repeatedly, killing it after each delay, until a run
/// finishes by itself; returns, per killed run, the manifest's committed and
/// pending source counts right after the kill.
fn run_with_kills(
    config: &Path,
    data: &Path,
    args: &[&str],
    delays_ms: &[u64],
) -> Vec<(usize, usize)> {
    let mut killed = Vec::new();
    for delay in delays_ms.iter().copied().chain(std::iter::repeat(u64::MAX)) {
        let mut child = grace(config, args).spawn().unwrap();
        let started = Instant::now();
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                assert!(
                    status.success(),
                    "grace {args:?} failed on its own: {status}"
                );
                return killed;
            }
            if started.elapsed() >= Duration::from_millis(delay) {
                child.kill().unwrap(); // SIGKILL
                child.wait().unwrap();
                killed.push(common::manifest_progress(data));
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    unreachable!()
}

/// The manifest and, per source, the store's point count.
fn snapshot(data: &Path) -> (Manifest, Vec<(String, usize)>, usize) {
    let (kb, manifest) = common::open_existing(data);
    let counts = manifest
        .sources
        .keys()
        .map(|s| {
            (
                s.clone(),
                kb.store().count(Some(&PayloadFilter::source(s))).unwrap(),
            )
        })
        .collect();
    let total = kb.store().count(None).unwrap();
    (manifest, counts, total)
}

fn assert_same(crashed: &Path, clean: &Path) {
    let (m_crash, counts_crash, total_crash) = snapshot(crashed);
    let (m_clean, counts_clean, total_clean) = snapshot(clean);
    assert!(
        m_crash
            .sources
            .values()
            .all(|e| e.state == EntryState::Committed)
    );
    assert_eq!(m_crash.sources.len(), m_clean.sources.len());
    for (src, entry) in &m_clean.sources {
        let other = &m_crash.sources[src];
        assert_eq!(other.content_hash, entry.content_hash, "{src}");
        assert_eq!(other.point_ids, entry.point_ids, "{src}");
    }
    assert_eq!(counts_crash, counts_clean, "per-source chunk counts differ");
    assert_eq!(total_crash, total_clean, "total chunks differ");
    assert_eq!(total_crash, m_clean.committed_points());
}

#[test]
fn sigkill_during_ingest_loses_nothing_and_duplicates_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let docs = tmp.path().join("docs");
    fs::create_dir(&docs).unwrap();
    for e in fs::read_dir(common::eval_sets().join("debian-faq/corpus")).unwrap() {
        let e = e.unwrap();
        fs::copy(e.path(), docs.join(e.file_name())).unwrap();
    }
    let docs_arg = docs.to_string_lossy().into_owned();

    // Reference: one clean, uninterrupted ingest.
    let clean = tmp.path().join("clean");
    run_to_end(&write_config(tmp.path(), &clean), &["ingest", &docs_arg]);

    // Killed repeatedly while it works, then allowed to finish.
    let crashed = tmp.path().join("crashed");
    let crashed_cfg = write_config(tmp.path(), &crashed);
    let total = fs::read_dir(&docs).unwrap().count();
    let kills = run_with_kills(
        &crashed_cfg,
        &crashed,
        &["ingest", &docs_arg],
        &[300, 1200, 1800, 2500, 3000, 3500],
    );
    println!(
        "first ingest: killed {} times; (committed, pending) sources after each kill: {kills:?}",
        kills.len()
    );
    let mid_way = kills
        .iter()
        .filter(|(c, p)| *c + *p > 0 && *c < total)
        .count();
    assert!(
        mid_way >= 2,
        "only {mid_way} kills hit a half-done ingest: the test did not exercise crashes"
    );
    assert_same(&crashed, &clean);

    // Change the corpus: edit two files, delete one, add one; kill the
    // update (with --prune) mid-way too.
    let names: Vec<PathBuf> = {
        let mut v: Vec<PathBuf> = fs::read_dir(&docs)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        v.sort();
        v
    };
    fs::write(
        &names[3],
        "Edited.\n\nThis answer was rewritten for the crash test.",
    )
    .unwrap();
    fs::write(&names[10], "Also edited: a much shorter document now.").unwrap();
    fs::remove_file(&names[20]).unwrap();
    fs::write(
        docs.join("new.md"),
        "# New\n\nA new document added before the second run.",
    )
    .unwrap();

    let kills = run_with_kills(
        &crashed_cfg,
        &crashed,
        &["ingest", "--prune", &docs_arg],
        &[200, 1200, 1500],
    );
    println!(
        "update ingest: killed {} times; (committed, pending) sources after each kill: {kills:?}",
        kills.len()
    );
    let clean2 = tmp.path().join("clean2");
    run_to_end(&write_config(tmp.path(), &clean2), &["ingest", &docs_arg]);
    assert_same(&crashed, &clean2);
}
