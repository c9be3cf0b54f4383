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
//!   manifest from the store's points ([`rebuild`]): a source whose points
//!   are whole and of one content is committed; any other is marked
//!   pending, so the next ingest writes it again. No entry keeps a file
//!   stat, so the next ingest reads and hashes every file once.
//!
//! The store must not be in use: a running server holds its lock, and
//! doctor says so instead of waiting.

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
        Ok(()) => check("data folder", data, Finding::Ok, "can be written".into()),
        Err(e) => check("data folder", data, Finding::Problem, e.to_string()),
    });
    if config.storage.state == StateBackend::Sqlite {
        for file in state_files(data)? {
            checks.push(state_file(&file, repair));
        }
    }
    let (manifest_check, store_points, sources) = manifest_and_store(config, repair)?;
    checks.extend(manifest_check);
    let healthy = checks.iter().all(|c| c.finding != Finding::Problem);
    Ok(DoctorReport {
        checks,
        store_points,
        manifest_sources: sources,
        healthy,
    })
}

fn check(what: &'static str, place: &Path, finding: Finding, detail: String) -> Check {
    Check {
        what,
        place: place.display().to_string(),
        finding,
        detail,
    }
}

/// The `*.sqlite3` files directly in `data`, sorted.
fn state_files(data: &Path) -> Result<Vec<std::path::PathBuf>> {
    let Ok(entries) = std::fs::read_dir(data) else {
        return Ok(Vec::new());
    };
    let mut files: Vec<_> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "sqlite3") && p.is_file())
        .take(MAX_STATE_FILES)
        .collect();
    files.sort();
    Ok(files)
}

/// SQLite's integrity check of one state file; a damaged one moved aside
/// with `repair`.
fn state_file(file: &Path, repair: bool) -> Check {
    let Err(problem) = crate::state::check_sqlite_file(file) else {
        return check(
            "state file",
            file,
            Finding::Ok,
            "integrity check passed".into(),
        );
    };
    if !repair {
        return check(
            "state file",
            file,
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
    let moved = std::fs::rename(file, &aside).and_then(|()| {
        for suffix in ["-wal", "-shm"] {
            let side = Path::new(&format!("{}{suffix}", file.display())).to_path_buf();
            if side.exists() {
                std::fs::rename(&side, format!("{}{suffix}", aside.display()))?;
            }
        }
        Ok(())
    });
    match moved {
        Ok(()) => check(
            "state file",
            file,
            Finding::Repaired,
            format!(
                "{problem}; moved to {} (GRACE starts an empty one; `sqlite3 {} .recover` may salvage rows)",
                aside.display(),
                aside.display()
            ),
        ),
        Err(e) => check(
            "state file",
            file,
            Finding::Problem,
            format!("{problem}; could not move it aside: {e}"),
        ),
    }
}

/// The manifest's and the store's checks, the store's point count and the
/// manifest's source count.
fn manifest_and_store(config: &Config, repair: bool) -> Result<(Vec<Check>, usize, usize)> {
    let mut checks = Vec::new();
    let manifests = ManifestStore::open(config)?;
    let place = manifests.place();
    let loaded = manifests.load();
    let store = match open_store(config, OpenMode::Existing, 0) {
        Ok(store) => Some(store),
        Err(crate::error::Error::Store(StoreError::NotFound { .. })) => None,
        Err(e) => return Err(e),
    };
    let Some(store) = store else {
        let finding = match &loaded {
            Ok(Some(m)) if !m.sources.is_empty() => Finding::Problem,
            _ => Finding::Ok,
        };
        let detail = match finding {
            Finding::Ok => "no collection yet, and no manifest listing one".to_string(),
            _ => "the manifest lists sources but there is no collection: move the manifest away and ingest again".into(),
        };
        checks.push(Check {
            what: "store",
            place: config.collection_dir().display().to_string(),
            finding,
            detail,
        });
        return Ok((checks, 0, 0));
    };
    let points = store.count(None)?;
    let held = sources_in(store.as_ref())?;
    let (manifest, mut finding, mut detail) = match loaded {
        Ok(Some(m)) => {
            let differences = compare(&m, &held);
            if differences.is_empty() {
                let pending = m
                    .sources
                    .values()
                    .filter(|e| e.state == EntryState::Pending)
                    .count();
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
            let rebuilt = rebuild(&pipeline, &held);
            let pending = rebuilt
                .sources
                .values()
                .filter(|e| e.state == EntryState::Pending)
                .count();
            manifests.save(&rebuilt)?;
            sources = rebuilt.sources.len();
            finding = Finding::Repaired;
            detail = format!(
                "{detail}; rebuilt from the store's {points} points: {sources} sources, {pending} of them pending \
                 (the next ingest writes those again, and reads every file once)"
            );
        } else {
            detail =
                format!("{detail}; `grace doctor --repair` rebuilds the manifest from the store");
        }
    }
    checks.push(Check {
        what: "manifest",
        place,
        finding,
        detail,
    });
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
    const NAMED: usize = 3;
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
    let name = |v: &[&str]| {
        let mut s = v.iter().take(NAMED).copied().collect::<Vec<_>>().join(", ");
        if v.len() > NAMED {
            s.push_str(&format!(" and {} more", v.len() - NAMED));
        }
        s
    };
    let mut out = Vec::new();
    if !differ.is_empty() {
        out.push(format!(
            "{} sources hold other points than the manifest lists ({})",
            differ.len(),
            name(&differ)
        ));
    }
    if !missing.is_empty() {
        out.push(format!(
            "the store holds {} sources the manifest lacks ({})",
            missing.len(),
            name(&missing)
        ));
    }
    out
}

/// A manifest for `pipeline` made from what the store holds: a source is
/// committed when its points are chunks 0..n of one content, with the ids
/// those make; else pending (its store state is not one ingest's).
pub fn rebuild(pipeline: &str, held: &BTreeMap<String, Held>) -> Manifest {
    let mut manifest = Manifest::new(pipeline);
    let now = crate::ingest::manifest::now();
    for (source, h) in held {
        let mut points = h.points.clone();
        points.sort_by_key(|p| p.0);
        let hash = points.first().map(|p| p.1.clone()).unwrap_or_default();
        let whole = points.iter().enumerate().all(|(i, (index, h, id))| {
            *index == i && *h == hash && *id == point_id(source, i, &hash)
        });
        manifest.sources.insert(
            source.clone(),
            SourceEntry {
                content_hash: hash,
                point_ids: points.iter().map(|p| p.2).collect(),
                state: if whole {
                    EntryState::Committed
                } else {
                    EntryState::Pending
                },
                updated_at: now,
                readers: h.readers.clone(),
                pinned: false,
                from_document: false,
                stat: None,
            },
        );
    }
    manifest
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(source: &str, hash: &str, n: usize) -> Held {
        Held {
            points: (0..n)
                .map(|i| (i, hash.to_string(), point_id(source, i, hash)))
                .collect(),
            readers: vec!["public".into()],
        }
    }

    #[test]
    fn a_whole_source_is_committed_and_a_mixed_one_pending() {
        let mut store = BTreeMap::new();
        store.insert("/a.md".to_string(), held("/a.md", "h1", 3));
        // Half old, half new content: an ingest cut off in the middle.
        let mut mixed = held("/b.md", "old", 2);
        mixed.points[1] = (1, "new".into(), point_id("/b.md", 1, "new"));
        store.insert("/b.md".to_string(), mixed);
        let m = rebuild("p", &store);
        assert_eq!(m.sources["/a.md"].state, EntryState::Committed);
        assert_eq!(m.sources["/a.md"].point_ids.len(), 3);
        assert_eq!(m.sources["/a.md"].readers, vec!["public".to_string()]);
        assert_eq!(m.sources["/b.md"].state, EntryState::Pending);
        assert!(m.sources.values().all(|e| e.stat.is_none()));
        assert!(compare(&m, &store).is_empty());
    }

    #[test]
    fn differences_name_the_sources() {
        let mut store = BTreeMap::new();
        store.insert("/a.md".to_string(), held("/a.md", "h1", 2));
        store.insert("/c.md".to_string(), held("/c.md", "h3", 1));
        let mut m = rebuild("p", &store);
        m.sources.remove("/c.md");
        m.sources.get_mut("/a.md").unwrap().point_ids.pop();
        let d = compare(&m, &store);
        assert_eq!(d.len(), 2, "{d:?}");
        assert!(d[0].contains("/a.md") && d[1].contains("/c.md"), "{d:?}");
    }
}
