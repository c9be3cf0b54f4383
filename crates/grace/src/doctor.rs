//! `grace doctor`: checks a knowledge base's files against each other and
//! says what it found; with `--repair` it mends what can be mended and
//! says what it did.
//!
//! What it checks, in order:
//! - the data folder can be written;
//! - each SQLite file of the state (`*.sqlite3` in the data folder, with
//!   `storage.state: sqlite`) passes SQLite's integrity check. Repair moves
//!   a damaged one aside (`<file>.corrupt-<seconds>`), so GRACE starts an
//!   empty one; its rows are not recovered (`sqlite3 FILE .recover` may
//!   salvage some);
//! - the ingest manifest can be read, and agrees with the store: every
//!   committed source has exactly the points the store holds for it, and
//!   the store holds no source the manifest lacks. Repair rebuilds the
//!   manifest from the store's points ([`rebuild`]), checked against the
//!   files: a source is committed when its points are chunks 0..n of one
//!   content and, if its file still has that content, n is the file's
//!   chunk count; any other is marked pending, so the next ingest writes
//!   it again. Doctor never changes who may read a document: a source
//!   whose stored readers differ from what its folder says now (a request
//!   gave them, or the folder changed since) keeps them, pinned, and is
//!   named. No entry keeps a file stat, so the next ingest reads every
//!   file once.
//!
//! The store is opened first, and held to the end: a running server (or
//! ingest) holds its lock, and doctor says so instead of waiting; with the
//! collection shared by several servers it takes their writers' lock.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use crate::config::{Config, StateBackend};
use crate::embed::Embedder;
use crate::error::Result;
use crate::ingest::manifest::{EntryState, Manifest, ManifestStore, SourceEntry};
use crate::kb::{OpenMode, open_store};
use crate::store::{StoreError, VectorStore, point_id};

/// State files in the data folder looked at, at most (GRACE makes a few).
const MAX_STATE_FILES: usize = 64;
/// Points read per page while comparing the store with the manifest.
const SCROLL_PAGE: usize = 512;

/// What one check found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Finding {
    /// Sound.
    Ok,
    /// Wrong, and left as it is (run with `--repair`, or mend it by hand).
    Problem,
    /// Wrong, and mended.
    Repaired,
}

/// One check: what was looked at, what was found, and what was done.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// What was checked (`data folder`, `state file`, `manifest`, `store`).
    pub what: &'static str,
    /// The file, folder or row.
    pub place: String,
    /// The verdict.
    pub finding: Finding,
    /// What was found, and what was done or is to be done.
    pub detail: String,
}

/// What `grace doctor` found and did.
#[derive(Debug, Clone, Serialize)]
pub struct DoctorReport {
    /// Every check, in order.
    pub checks: Vec<Check>,
    /// Points in the store.
    pub store_points: usize,
    /// Sources in the manifest (after any repair).
    pub manifest_sources: usize,
    /// Whether nothing is left wrong.
    pub healthy: bool,
}

/// Checks `config`'s knowledge base; mends what it can with `repair`.
pub fn doctor(config: &Config, repair: bool) -> Result<DoctorReport> {
    let mut checks = Vec::new();
    let data = &config.storage.data_dir;
    checks.push(match crate::kb::check_writable(data) {
        Ok(()) => check(
            "data folder",
            data.display(),
            Finding::Ok,
            "can be written".into(),
        ),
        Err(e) => check(
            "data folder",
            data.display(),
            Finding::Problem,
            e.to_string(),
        ),
    });
    // The store, and its lock, before any file is looked at.
    let store = match open_store(config, OpenMode::Existing, 0) {
        Ok(store) => Some(store),
        Err(crate::error::Error::Store(
            StoreError::NotFound { .. } | StoreError::CollectionNotFound { .. },
        )) => None,
        Err(e) => return Err(e),
    };
    let _writer = match crate::state::shares_collection(config) {
        true => Some(
            crate::state::ClusterLock::try_take(config, crate::state::WRITER)?.ok_or_else(
                || {
                    crate::error::Error::InvalidInput(
                    "a server is ingesting into this collection; run grace doctor when it is done"
                        .into(),
                )
                },
            )?,
        ),
        false => None,
    };
    if config.storage.state == StateBackend::Sqlite {
        for file in state_files(data) {
            checks.push(state_file(&file, repair));
        }
    }
    let (manifest_check, store_points, sources) =
        manifest_and_store(config, store.as_deref(), repair)?;
    checks.extend(manifest_check);
    let healthy = checks.iter().all(|c| c.finding != Finding::Problem);
    Ok(DoctorReport {
        checks,
        store_points,
        manifest_sources: sources,
        healthy,
    })
}

fn check(
    what: &'static str,
    place: impl std::fmt::Display,
    finding: Finding,
    detail: String,
) -> Check {
    Check {
        what,
        place: place.to_string(),
        finding,
        detail,
    }
}

/// The `*.sqlite3` files directly in `data`, sorted.
fn state_files(data: &Path) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(data) else {
        return Vec::new();
    };
    let mut files: Vec<_> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "sqlite3") && p.is_file())
        .take(MAX_STATE_FILES)
        .collect();
    files.sort();
    files
}

/// SQLite's integrity check of one state file; a damaged one moved aside
/// with `repair` (never one that could only not be read).
fn state_file(file: &Path, repair: bool) -> Check {
    use crate::state::FileCheck;
    let problem = match crate::state::check_sqlite_file(file) {
        FileCheck::Sound => {
            return check(
                "state file",
                file.display(),
                Finding::Ok,
                "integrity check passed".into(),
            );
        }
        FileCheck::Unchecked(why) => {
            return check(
                "state file",
                file.display(),
                Finding::Problem,
                format!("cannot be checked ({why}); nothing was done to it"),
            );
        }
        FileCheck::Damaged(problem) => problem,
    };
    if !repair {
        return check(
            "state file",
            file.display(),
            Finding::Problem,
            format!(
                "{problem}; `grace doctor --repair` moves it aside so GRACE starts an empty one"
            ),
        );
    }
    let aside = file.with_extension(format!(
        "sqlite3.corrupt-{}",
        crate::ingest::manifest::now()
    ));
    // Its log and shared memory first: the main file last, so that a
    // failure midway never leaves a database beside another's log.
    let side =
        |p: &Path, suffix: &str| std::path::PathBuf::from(format!("{}{suffix}", p.display()));
    let moved = ["-wal", "-shm"]
        .iter()
        .filter(|suffix| side(file, suffix).exists())
        .try_for_each(|suffix| std::fs::rename(side(file, suffix), side(&aside, suffix)))
        .and_then(|()| std::fs::rename(file, &aside));
    match moved {
        Ok(()) => check(
            "state file",
            file.display(),
            Finding::Repaired,
            format!(
                "{problem}; moved to {} (GRACE starts an empty one; `sqlite3 {} .recover` may salvage rows)",
                aside.display(),
                aside.display()
            ),
        ),
        Err(e) => check(
            "state file",
            file.display(),
            Finding::Problem,
            format!("{problem}; could not move it aside: {e}"),
        ),
    }
}

/// The manifest's and the store's checks, the store's point count and the
/// manifest's source count.
fn manifest_and_store(
    config: &Config,
    store: Option<&dyn VectorStore>,
    repair: bool,
) -> Result<(Vec<Check>, usize, usize)> {
    let mut checks = Vec::new();
    let manifests = ManifestStore::open(config)?;
    let place = manifests.place();
    let loaded = manifests.load();
    let Some(store) = store else {
        let finding = match &loaded {
            Ok(Some(m)) if !m.sources.is_empty() => Finding::Problem,
            _ => Finding::Ok,
        };
        let detail = match finding {
            Finding::Ok => "no collection yet, and no manifest listing one".to_string(),
            _ => "the manifest lists sources but there is no collection: move the manifest away and ingest again".into(),
        };
        checks.push(check(
            "store",
            config.collection_dir().display(),
            finding,
            detail,
        ));
        return Ok((checks, 0, 0));
    };
    let held = sources_in(store)?;
    let points: usize = held.values().map(|h| h.points.len()).sum();
    let (manifest, mut finding, mut detail) = match loaded {
        Ok(Some(m)) => {
            let differences = compare(&m, &held);
            if differences.is_empty() {
                let pending = pending(&m);
                let note = if pending > 0 {
                    format!(
                        "; {pending} sources pending (an interrupted ingest): the next ingest writes them again"
                    )
                } else {
                    String::new()
                };
                (
                    Some(m.clone()),
                    Finding::Ok,
                    format!(
                        "{} sources agree with the store's {points} points{note}",
                        m.sources.len()
                    ),
                )
            } else {
                (Some(m), Finding::Problem, differences.join("; "))
            }
        }
        Ok(None) if held.is_empty() => (None, Finding::Ok, "no manifest and an empty store".into()),
        Ok(None) => (
            None,
            Finding::Problem,
            format!("no manifest, but the store holds {} sources", held.len()),
        ),
        Err(e) => (None, Finding::Problem, e.to_string()),
    };
    let mut sources = manifest.as_ref().map_or(0, |m| m.sources.len());
    if finding == Finding::Problem {
        if repair {
            // The old manifest's pipeline, else the configured model's
            // (loaded only then).
            let pipeline = match &manifest {
                Some(m) => m.pipeline.clone(),
                None => {
                    let model = crate::embed::FastEmbedder::new(&config.embedding)?;
                    crate::ingest::pipeline_id(model.model_id(), &config.ingest)
                }
            };
            let rebuilt = rebuild(&pipeline, &held, manifest.as_ref(), &|source| {
                crate::ingest::inspect(&config.ingest, Path::new(source))
            });
            let pending = pending(&rebuilt);
            let pinned: Vec<&str> = rebuilt
                .sources
                .iter()
                .filter(|(s, e)| {
                    e.pinned
                        && !manifest
                            .as_ref()
                            .is_some_and(|m| m.sources.get(*s).is_some_and(|old| old.pinned))
                })
                .map(|(s, _)| s.as_str())
                .collect();
            manifests.save(&rebuilt)?;
            sources = rebuilt.sources.len();
            finding = Finding::Repaired;
            detail = format!(
                "{detail}; rebuilt from the store's {points} points: {sources} sources, {pending} of them pending \
                 (the next ingest writes those again, and reads every file once)"
            );
            if !pinned.is_empty() {
                detail.push_str(&format!(
                    "; {} sources keep the readers stored with them, which differ from what their folder says \
                     now (a request gave them, or the folder changed since): {}. `grace ingest --access` sets others",
                    pinned.len(),
                    name_some(&pinned)
                ));
            }
        } else {
            detail =
                format!("{detail}; `grace doctor --repair` rebuilds the manifest from the store");
        }
    }
    checks.push(check("manifest", place, finding, detail));
    Ok((checks, points, sources))
}

/// What the store holds for one source.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Held {
    /// `(chunk index, content hash, point id)` of each point.
    pub points: Vec<(usize, String, u64)>,
    /// The readers on its points (the first point's).
    pub readers: Vec<String>,
}

/// Every source in `store`, with its points, read page by page.
fn sources_in(store: &dyn VectorStore) -> Result<BTreeMap<String, Held>> {
    let mut held: BTreeMap<String, Held> = BTreeMap::new();
    let mut offset = None;
    loop {
        let page = store.scroll(offset, SCROLL_PAGE)?;
        for p in page.points {
            let entry = held.entry(p.payload.source.clone()).or_default();
            if entry.points.is_empty() {
                entry.readers = p.payload.readers.clone();
            }
            entry
                .points
                .push((p.payload.chunk_index, p.payload.content_hash, p.id));
        }
        match page.next {
            Some(next) => offset = Some(next),
            None => break,
        }
    }
    Ok(held)
}

/// How `manifest` and the store's `held` sources differ (at most a few of
/// each kind named).
fn compare(manifest: &Manifest, held: &BTreeMap<String, Held>) -> Vec<String> {
    let mut differ = Vec::new();
    let mut missing = Vec::new();
    for (source, entry) in &manifest.sources {
        if entry.state != EntryState::Committed {
            continue;
        }
        let mut stored: Vec<u64> = held
            .get(source)
            .map(|h| h.points.iter().map(|p| p.2).collect())
            .unwrap_or_default();
        let mut listed = entry.point_ids.clone();
        stored.sort_unstable();
        listed.sort_unstable();
        if stored != listed {
            differ.push(source.as_str());
        }
    }
    for source in held.keys() {
        if !manifest.sources.contains_key(source) {
            missing.push(source.as_str());
        }
    }
    let mut out = Vec::new();
    if !differ.is_empty() {
        out.push(format!(
            "{} sources hold other points than the manifest lists ({})",
            differ.len(),
            name_some(&differ)
        ));
    }
    if !missing.is_empty() {
        out.push(format!(
            "the store holds {} sources the manifest lacks ({})",
            missing.len(),
            name_some(&missing)
        ));
    }
    out
}

/// A manifest for `pipeline` made from what the store holds. A source is
/// committed when its points are chunks 0..n of one content with the ids
/// those make and, when `inspect` finds its file with that content, n is
/// the file's chunk count; else pending (its store state is not one
/// ingest's). Its readers are those stored with its points; it is pinned
/// (a folder's access file no longer changes them) when the `old`
/// manifest said so, or when they differ from what `inspect` says the
/// document and its folder give now: doctor never changes who may read.
pub fn rebuild(
    pipeline: &str,
    held: &BTreeMap<String, Held>,
    old: Option<&Manifest>,
    inspect: &dyn Fn(&str) -> std::result::Result<crate::ingest::Inspected, String>,
) -> Manifest {
    let mut manifest = Manifest::new(pipeline);
    let now = crate::ingest::manifest::now();
    for (source, h) in held {
        let mut points = h.points.clone();
        points.sort_by_key(|p| p.0);
        let hash = points.first().map(|p| p.1.clone()).unwrap_or_default();
        let whole = points.iter().enumerate().all(|(i, (index, h, id))| {
            *index == i && *h == hash && *id == point_id(source, i, &hash)
        });
        let file = inspect(source).ok();
        let same = file.as_ref().filter(|f| f.hash == hash);
        let complete = same.is_none_or(|f| f.chunks == points.len());
        let stored = crate::access::Readers::stored(&h.readers);
        let previous = old.and_then(|m| m.sources.get(source));
        let pinned =
            previous.is_some_and(|p| p.pinned) || file.as_ref().is_none_or(|f| f.readers != stored);
        manifest.sources.insert(
            source.clone(),
            SourceEntry {
                content_hash: hash,
                point_ids: points.iter().map(|p| p.2).collect(),
                state: if whole && complete {
                    EntryState::Committed
                } else {
                    EntryState::Pending
                },
                updated_at: now,
                readers: h.readers.clone(),
                pinned,
                from_document: !pinned && file.as_ref().is_some_and(|f| f.from_document),
                stat: None,
            },
        );
    }
    manifest
}

/// Sources a manifest lists as pending.
fn pending(manifest: &Manifest) -> usize {
    manifest
        .sources
        .values()
        .filter(|e| e.state == EntryState::Pending)
        .count()
}

/// A few of `names`, and how many more.
fn name_some(names: &[&str]) -> String {
    const NAMED: usize = 3;
    let mut s = names
        .iter()
        .take(NAMED)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > NAMED {
        s.push_str(&format!(" and {} more", names.len() - NAMED));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::Readers;
    use crate::ingest::Inspected;

    fn held(source: &str, hash: &str, n: usize) -> Held {
        Held {
            points: (0..n)
                .map(|i| (i, hash.to_string(), point_id(source, i, hash)))
                .collect(),
            readers: vec!["public".into()],
        }
    }

    /// Files as `inspect` would find them: `(hash, chunks)` per source,
    /// readable by everyone.
    fn files(
        found: &[(&str, &str, usize)],
    ) -> impl Fn(&str) -> std::result::Result<Inspected, String> {
        let found: Vec<(String, String, usize)> = found
            .iter()
            .map(|(s, h, n)| (s.to_string(), h.to_string(), *n))
            .collect();
        move |source| {
            found
                .iter()
                .find(|f| f.0 == source)
                .map(|f| Inspected {
                    hash: f.1.clone(),
                    chunks: f.2,
                    readers: Readers::parse(&["public".to_string()]).unwrap(),
                    from_document: false,
                })
                .ok_or_else(|| "no such file".to_string())
        }
    }

    #[test]
    fn a_whole_source_is_committed_and_a_mixed_or_cut_one_pending() {
        let mut store = BTreeMap::new();
        store.insert("/a.md".to_string(), held("/a.md", "h1", 3));
        // Half old, half new content: an ingest cut off in the middle.
        let mut mixed = held("/b.md", "old", 2);
        mixed.points[1] = (1, "new".into(), point_id("/b.md", 1, "new"));
        store.insert("/b.md".to_string(), mixed);
        // Chunks 0..2 of a file that has 4: a write cut after a batch.
        store.insert("/c.md".to_string(), held("/c.md", "h3", 2));
        // A file changed since (its next ingest writes it) or gone.
        store.insert("/d.md".to_string(), held("/d.md", "h4", 1));
        let inspect = files(&[
            ("/a.md", "h1", 3),
            ("/c.md", "h3", 4),
            ("/d.md", "other", 9),
        ]);
        let m = rebuild("p", &store, None, &inspect);
        let state = |s: &str| m.sources[s].state;
        assert_eq!(state("/a.md"), EntryState::Committed);
        assert_eq!(state("/b.md"), EntryState::Pending);
        assert_eq!(state("/c.md"), EntryState::Pending);
        assert_eq!(state("/d.md"), EntryState::Committed);
        assert_eq!(m.sources["/a.md"].point_ids.len(), 3);
        assert!(m.sources.values().all(|e| e.stat.is_none()));
        assert!(compare(&m, &store).is_empty());
    }

    #[test]
    fn readers_are_never_changed_only_pinned_when_the_folder_says_otherwise() {
        let mut store = BTreeMap::new();
        store.insert("/a.md".to_string(), held("/a.md", "h1", 1));
        let mut narrow = held("/b.md", "h2", 1);
        narrow.readers = vec!["user:cy".into()];
        store.insert("/b.md".to_string(), narrow);
        let inspect = files(&[("/a.md", "h1", 1), ("/b.md", "h2", 1)]);
        let m = rebuild("p", &store, None, &inspect);
        assert!(!m.sources["/a.md"].pinned);
        assert!(m.sources["/b.md"].pinned);
        assert_eq!(m.sources["/b.md"].readers, vec!["user:cy".to_string()]);
        // A file that cannot be read keeps its readers pinned too.
        let m = rebuild("p", &store, None, &files(&[]));
        assert!(m.sources.values().all(|e| e.pinned));
    }

    #[test]
    fn differences_name_the_sources() {
        let mut store = BTreeMap::new();
        store.insert("/a.md".to_string(), held("/a.md", "h1", 2));
        store.insert("/c.md".to_string(), held("/c.md", "h3", 1));
        let mut m = rebuild("p", &store, None, &files(&[]));
        m.sources.remove("/c.md");
        m.sources.get_mut("/a.md").unwrap().point_ids.pop();
        let d = compare(&m, &store);
        assert_eq!(d.len(), 2, "{d:?}");
        assert!(d[0].contains("/a.md") && d[1].contains("/c.md"), "{d:?}");
    }
}
