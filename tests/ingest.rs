//! Ingest end to end on the real embedded store and the real local model.

use crate::support::common;

use std::fs;
use std::path::{Path, PathBuf};

use grace::ingest::manifest::Manifest;
use grace::ingest::{IngestOptions, IngestReport};
use grace::store::PayloadFilter;
use grace::{KnowledgeBase, OpenMode};

fn ingest(kb: &KnowledgeBase, paths: &[PathBuf], prune: bool) -> IngestReport {
    kb.ingest(
        paths,
        &IngestOptions {
            prune,
            ..Default::default()
        },
        &mut |_| {},
    )
    .unwrap()
}

fn source(p: &Path) -> String {
    fs::canonicalize(p).unwrap().to_string_lossy().into_owned()
}

fn manifest(kb: &KnowledgeBase) -> Manifest {
    common::manifest(kb.config())
}

#[test]
fn every_format_is_loaded_and_searchable() {
    let data = tempfile::tempdir().unwrap();
    let kb = common::open(common::config(data.path()));
    let fixtures = common::repo().join("tests/fixtures/formats");
    let r = ingest(&kb, &[fixtures], false);
    assert_eq!((r.files_seen, r.added, r.skipped.len()), (4, 4, 0), "{r:?}");
    assert_eq!(r.points_total, r.chunks_written);

    let top = |q: &str| kb.search(q, Some(1), None).unwrap().remove(0);
    let leave = top("How many days of paid leave do employees get?");
    assert!(leave.source.ends_with("page.html"), "{leave:?}");
    assert!(leave.text.contains("28 days"));
    let restore = top("restore --from latest");
    assert!(restore.source.ends_with("guide.md"), "{restore:?}");
    assert_eq!(restore.section, "Backup guide > Restoring a backup");
    let wifi = top("Which wireless network do I join?");
    assert!(wifi.source.ends_with("guide.rst"), "{wifi:?}");
    assert_eq!(wifi.section, "Network setup > Wireless");
    let budget = top("When are budget requests due?");
    assert!(budget.source.ends_with("notes.txt"), "{budget:?}");

    // A payload filter restricts the search to one source.
    let notes = source(&common::repo().join("tests/fixtures/formats/notes.txt"));
    let only = kb
        .search(
            "How many days of paid leave?",
            Some(5),
            Some(&PayloadFilter::source(&notes)),
        )
        .unwrap();
    assert!(
        !only.is_empty() && only.iter().all(|p| p.source == notes),
        "{only:?}"
    );

    // Scripts never reach the index.
    let all = kb
        .search("tracking variable script", Some(50), None)
        .unwrap();
    assert!(all.iter().all(|p| !p.text.contains("tracking")));
}

#[test]
fn reingest_is_idempotent_and_updates_only_what_changed() {
    let data = tempfile::tempdir().unwrap();
    let docs = tempfile::tempdir().unwrap();
    common::copy_tree(&common::repo().join("tests/fixtures/formats"), docs.path());
    let kb = common::open(common::config(data.path()));

    let first = ingest(&kb, &[docs.path().to_path_buf()], false);
    let total = first.points_total;
    assert_eq!(first.added, 4);
    let before = manifest(&kb);

    // Unchanged: nothing is written, nothing changes.
    let again = ingest(&kb, &[docs.path().to_path_buf()], false);
    assert_eq!(
        (
            again.unchanged,
            again.added,
            again.updated,
            again.chunks_written
        ),
        (4, 0, 0, 0)
    );
    assert_eq!(again.points_total, total);
    assert_eq!(manifest(&kb).sources, before.sources);

    // Edit one file: only its chunks change.
    let notes = docs.path().join("notes.txt");
    fs::write(
        &notes,
        "Meeting notes\n\nThe review is cancelled this quarter.\n",
    )
    .unwrap();
    let edited = ingest(&kb, &[docs.path().to_path_buf()], false);
    assert_eq!((edited.updated, edited.unchanged), (1, 3), "{edited:?}");
    let after = manifest(&kb);
    let notes_src = source(&notes);
    for (src, entry) in &after.sources {
        if *src == notes_src {
            assert_ne!(entry.point_ids, before.sources[src].point_ids);
        } else {
            assert_eq!(
                entry.point_ids, before.sources[src].point_ids,
                "{src} changed"
            );
        }
    }
    let notes_count = kb
        .store()
        .count(Some(&PayloadFilter::source(&notes_src)))
        .unwrap();
    assert_eq!(notes_count, after.sources[&notes_src].point_ids.len());
    assert_eq!(kb.store().count(None).unwrap(), after.committed_points());
    let hit = kb
        .search("Is the review cancelled?", Some(1), None)
        .unwrap()
        .remove(0);
    assert!(hit.text.contains("cancelled"));
    let stale = kb
        .search("second Tuesday of the month", Some(10), None)
        .unwrap();
    assert!(
        stale.iter().all(|p| !p.text.contains("second Tuesday")),
        "old text still served"
    );

    // Delete a file: kept without --prune, removed with it.
    let html = docs.path().join("page.html");
    let html_src = source(&html);
    fs::remove_file(&html).unwrap();
    let kept = ingest(&kb, &[docs.path().to_path_buf()], false);
    assert!(kept.removed.is_empty());
    assert!(
        kb.store()
            .count(Some(&PayloadFilter::source(&html_src)))
            .unwrap()
            > 0
    );
    let pruned = ingest(&kb, &[docs.path().to_path_buf()], true);
    assert_eq!(pruned.removed, vec![html_src.clone()]);
    assert_eq!(
        kb.store()
            .count(Some(&PayloadFilter::source(&html_src)))
            .unwrap(),
        0
    );
    assert_eq!(pruned.points_total, manifest(&kb).committed_points());
    assert!(!manifest(&kb).sources.contains_key(&html_src));
}

#[test]
fn prune_only_touches_the_folders_given() {
    let data = tempfile::tempdir().unwrap();
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    fs::write(a.path().join("a.md"), "# A\n\nApples are red.").unwrap();
    fs::write(b.path().join("b.md"), "# B\n\nBananas are yellow.").unwrap();
    let kb = common::open(common::config(data.path()));
    ingest(
        &kb,
        &[a.path().to_path_buf(), b.path().to_path_buf()],
        false,
    );
    let r = ingest(&kb, &[a.path().to_path_buf()], true);
    assert!(
        r.removed.is_empty(),
        "b/ was not walked, so nothing of it is pruned: {r:?}"
    );
    assert_eq!(r.points_total, 2);
}

#[cfg(unix)]
#[test]
fn bad_files_are_reported_and_skipped_and_the_rest_go_in() {
    let data = tempfile::tempdir().unwrap();
    let docs = tempfile::tempdir().unwrap();
    let d = docs.path();
    fs::write(d.join("good.md"), "# Good\n\nThis file is fine.").unwrap();
    fs::write(d.join("binary.md"), b"# Bin\n\x00\x01\x02\xff").unwrap();
    fs::write(d.join("latin1.txt"), b"Caf\xe9 cr\xe8me").unwrap();
    fs::write(d.join("empty.md"), b"").unwrap();
    fs::write(d.join("huge.txt"), "word ".repeat(1000)).unwrap();
    fs::create_dir(d.join("loop")).unwrap();
    std::os::unix::fs::symlink(d.join("loop"), d.join("loop/again")).unwrap();
    let mut c = common::config(data.path());
    c.ingest.max_file_bytes = 2000;
    let kb = common::open(c);
    let r = ingest(&kb, &[d.to_path_buf()], false);
    assert_eq!(r.added, 1, "{r:?}");
    let reason = |name: &str| {
        r.skipped
            .iter()
            .find(|s| s.path.to_string_lossy().contains(name))
            .map(|s| s.reason.clone())
            .unwrap_or_else(|| panic!("{name} not reported: {:?}", r.skipped))
    };
    assert!(reason("binary.md").contains("binary"));
    assert!(reason("latin1.txt").contains("UTF-8"));
    assert!(reason("empty.md").contains("empty"));
    assert!(reason("huge.txt").contains("too large"));
    assert!(reason("again").contains("symbolic link loop"));
    assert_eq!(r.skipped.len(), 5, "{:?}", r.skipped);
    assert_eq!(r.points_total, 1);
}

#[test]
fn a_file_that_turns_bad_stops_serving_its_old_text() {
    let data = tempfile::tempdir().unwrap();
    let docs = tempfile::tempdir().unwrap();
    let f = docs.path().join("doc.md");
    fs::write(&f, "# Doc\n\nThe launch code is purple.").unwrap();
    let kb = common::open(common::config(data.path()));
    ingest(&kb, &[docs.path().to_path_buf()], false);
    fs::write(&f, b"\x00\x00binary now").unwrap();
    let r = ingest(&kb, &[docs.path().to_path_buf()], false);
    assert_eq!(r.skipped.len(), 1);
    assert_eq!(r.points_total, 0);
}

#[test]
fn score_threshold_drops_passages_below_it_and_keeps_the_fused_order() {
    let data = tempfile::tempdir().unwrap();
    let question = "How do I restore a backup?";
    let all = {
        let kb = common::open(common::config(data.path()));
        ingest(&kb, &[common::repo().join("tests/fixtures/formats")], false);
        kb.search(question, Some(50), None).unwrap()
    };
    let scores: Vec<f32> = all.iter().map(|p| p.score).collect();
    assert!(all.len() >= 4, "{scores:?}");
    let mut sorted = scores.clone();
    sorted.sort_by(|a, b| b.total_cmp(a));
    // Keeps about half of the passages.
    let threshold = sorted[all.len() / 2 - 1];
    let want: Vec<u64> = all
        .iter()
        .filter(|p| p.score >= threshold)
        .map(|p| p.id)
        .collect();
    assert!(want.len() < all.len(), "{scores:?}");

    let mut config = common::config(data.path());
    config.search.score_threshold = threshold;
    let kb = KnowledgeBase::open(config, OpenMode::Existing).unwrap();
    let got = kb.search(question, Some(50), None).unwrap();
    assert_eq!(got.iter().map(|p| p.id).collect::<Vec<_>>(), want);
    assert!(
        got.iter()
            .all(|p| p.score >= threshold && p.vector.is_some())
    );
    // A limit below what passes takes the first of them, in fused order.
    let first = kb.search(question, Some(1), None).unwrap();
    assert_eq!(first.iter().map(|p| p.id).collect::<Vec<_>>(), want[..1]);
}

/// Sets `path`'s modification time to `t` (as a tool that restores one).
fn set_mtime(path: &Path, t: std::time::SystemTime) {
    let f = fs::File::options().write(true).open(path).unwrap();
    f.set_modified(t).unwrap();
}

/// Waits until every file written so far has settled (its times older
/// than `manifest::SETTLE`).
fn settle() {
    std::thread::sleep(grace::ingest::manifest::SETTLE + std::time::Duration::from_millis(200));
}

#[test]
fn a_settled_file_is_judged_by_its_stat_unread_and_any_change_to_it_is_read() {
    let data = tempfile::tempdir().unwrap();
    let docs = tempfile::tempdir().unwrap();
    let (a, b, c) = (
        docs.path().join("a.md"),
        docs.path().join("b.md"),
        docs.path().join("c.md"),
    );
    fs::write(&a, "# Alpha\n\nThe alpha pump runs at dusk.\n").unwrap();
    fs::write(
        &b,
        "---\naccess: [user:cy]\n---\n# Bravo\n\nThe bravo valve is closed.\n",
    )
    .unwrap();
    fs::write(&c, "# Charlie\n\nThe charlie gauge reads low.\n").unwrap();
    settle();
    let kb = common::open(common::config(data.path()));
    let dir = [docs.path().to_path_buf()];
    let first = ingest(&kb, &dir, true);
    assert_eq!((first.added, first.read), (3, 3), "{first:?}");
    let entry = |p: &Path| manifest(&kb).sources[&source(p)].clone();
    assert_eq!(
        entry(&a).stat.map(|s| s.size),
        Some(fs::metadata(&a).unwrap().len())
    );
    assert!(entry(&b).stat.is_some() && entry(&b).from_document);

    // Nothing changed: nothing is read.
    let second = ingest(&kb, &dir, true);
    assert_eq!((second.unchanged, second.read), (3, 0), "{second:?}");

    // A file written just now may change again within its times'
    // resolution: it gets no stat, and the next run reads it again.
    fs::write(&c, "# Charlie\n\nThe charlie gauge reads high.\n").unwrap();
    let third = ingest(&kb, &dir, true);
    assert_eq!((third.updated, third.read), (1, 1), "{third:?}");
    assert_eq!(entry(&c).stat, None);

    // Other bytes of the same size with the old modification time put
    // back: the change time moved, so the file is read and the change found.
    let before = fs::metadata(&a).unwrap().modified().unwrap();
    fs::write(&a, "# Alpha\n\nThe alpha pump runs at dawn.\n").unwrap();
    set_mtime(&a, before);
    let fourth = ingest(&kb, &dir, true);
    assert_eq!((fourth.updated, fourth.read), (1, 2), "{fourth:?}");
    let dawn = kb
        .search("When does the alpha pump run?", Some(1), None)
        .unwrap();
    assert!(dawn[0].text.contains("dawn"), "{dawn:?}");

    // A touch with the same bytes is read and found unchanged; once all
    // have settled their stats are kept, and the next run reads nothing.
    set_mtime(&b, std::time::SystemTime::now());
    set_mtime(&c, std::time::SystemTime::now());
    settle();
    let touched = ingest(&kb, &dir, true);
    assert_eq!((touched.unchanged, touched.read), (3, 3), "{touched:?}");
    let quiet = ingest(&kb, &dir, true);
    assert_eq!((quiet.unchanged, quiet.read), (3, 0), "{quiet:?}");
    let b_meta = fs::metadata(&b).unwrap();
    let ns = b_meta
        .modified()
        .unwrap()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    assert_eq!(entry(&b).stat.map(|s| s.mtime_ns), Some(ns));

    // Readers still follow the folder without reading an unchanged file:
    // a new `.grace-access.yml` relabels `a` and `c`; `b`'s front matter,
    // in bytes that did not change, still names its reader.
    fs::write(docs.path().join(".grace-access.yml"), "read: [group:ops]\n").unwrap();
    let relabelled = ingest(&kb, &dir, true);
    assert_eq!(
        (
            relabelled.relabelled,
            relabelled.chunks_written,
            relabelled.read
        ),
        (2, 0, 0),
        "{relabelled:?}"
    );
    assert_eq!(entry(&a).readers, vec!["group:ops".to_string()]);
    assert_eq!(entry(&b).readers, vec!["user:cy".to_string()]);

    // A lowered ingest.max_file_bytes applies to an unchanged file too.
    let mut small = common::config(data.path());
    small.ingest.max_file_bytes = 10;
    drop(kb);
    let kb = common::open(small);
    let capped = ingest(&kb, &dir, true);
    assert_eq!(capped.skipped.len(), 3, "{capped:?}");
}
