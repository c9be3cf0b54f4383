//! Following folders: file-system events (the `notify` crate: inotify,
//! FSEvents, ReadDirectoryChanges) gathered into debounced batches, each
//! handed to a callback, which re-ingests (`grace ingest --watch`, the
//! `server.watch` folders of `grace serve`).
//!
//! A batch says only that something changed, not what: the callback runs
//! an ordinary incremental ingest of the watched paths with pruning, which
//! reads and hashes only the files whose size or modification time changed
//! and rewrites only those whose hash did. So a lost or
//! overflowed event queue, an editor's rename dance or a crash in the
//! middle cost nothing but a rescan, and a batch keeps the ingest's crash
//! safety: the manifest, not the events, says what the store holds.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, sync_channel};
use std::time::{Duration, Instant};

use notify::{Event, EventKind, RecursiveMode, Watcher};

/// How often a quiet watcher looks at its stop flag.
const POLL: Duration = Duration::from_millis(200);
/// A batch is handed on at the latest this many debounce periods after its
/// first event, even while events keep coming (a folder written to
/// without pause still gets ingested).
const MAX_WAIT_PERIODS: u32 = 20;
/// Paths a batch remembers to show (the rest are counted).
const SAMPLE: usize = 5;
/// Events queued between two looks at the queue (a burst during an
/// ingest); past it events are dropped and the next batch is a rescan,
/// so a flood of changes costs bounded memory and loses nothing.
const MAX_QUEUED: usize = 10_000;

/// The watcher's side of the queue: never blocks the watcher, drops what
/// does not fit and says so.
struct Bounded {
    tx: SyncSender<notify::Result<Event>>,
    dropped: Arc<AtomicBool>,
}

impl notify::EventHandler for Bounded {
    fn handle_event(&mut self, event: notify::Result<Event>) {
        if let Err(std::sync::mpsc::TrySendError::Full(_)) = self.tx.try_send(event) {
            self.dropped.store(true, Ordering::Relaxed);
        }
    }
}

/// The reading side: events, and whether any were dropped.
struct Queue {
    rx: Receiver<notify::Result<Event>>,
    dropped: Arc<AtomicBool>,
}

/// A queue of at most `capacity` events.
fn queue(capacity: usize) -> (Bounded, Queue) {
    let (tx, rx) = sync_channel(capacity);
    let dropped = Arc::new(AtomicBool::new(false));
    (
        Bounded {
            tx,
            dropped: dropped.clone(),
        },
        Queue { rx, dropped },
    )
}

/// What went wrong while watching.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    /// A path cannot be watched (missing, no permission, or the system's
    /// limit on watches reached).
    #[error(
        "cannot watch {path}: {message} (on Linux a large tree may need a higher fs.inotify.max_user_watches)"
    )]
    Watch {
        /// The path.
        path: PathBuf,
        /// The watcher's error.
        message: String,
    },
    /// The watcher stopped delivering events.
    #[error("the file watcher stopped: {0}")]
    Stopped(String),
}

/// The watcher's results.
pub type Result<T> = std::result::Result<T, WatchError>;

/// How changes are gathered.
#[derive(Debug, Clone)]
pub struct WatchOptions {
    /// A batch ends after this long without a new event
    /// (`ingest.watch_debounce_seconds`).
    pub debounce: Duration,
    /// Changes below these folders are not changes (GRACE's own data
    /// folder, when it lies inside a watched one).
    pub ignore: Vec<PathBuf>,
}

impl WatchOptions {
    /// `ingest.watch_debounce_seconds`, and GRACE's own data folder left
    /// out (it changes with every ingest).
    pub fn for_config(config: &crate::config::Config) -> Self {
        Self {
            debounce: Duration::from_secs_f64(config.ingest.watch_debounce_seconds),
            ignore: std::fs::canonicalize(&config.storage.data_dir)
                .into_iter()
                .collect(),
        }
    }
}

/// Changes gathered over one debounce.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Batch {
    /// File-system events in it.
    pub events: usize,
    /// The first few paths named (at most 5).
    pub sample: Vec<PathBuf>,
    /// Whether the system dropped events (its queue overflowed): only a
    /// full rescan knows what changed, which is what a batch triggers.
    pub rescan: bool,
}

/// Watches `paths` (folders recursively, files by their folder) until
/// `stop` is set, calling `on_change` with each batch of changes; returns
/// when `stop` is set. A batch that arrives while `on_change` runs waits
/// for the next call, so changes made during an ingest are not missed.
pub fn watch(
    paths: &[PathBuf],
    options: &WatchOptions,
    stop: &AtomicBool,
    on_change: &mut dyn FnMut(&Batch),
) -> Result<()> {
    Watch::start(paths, options)?.run(stop, on_change)
}

/// A watch in place: events are queued from [`Watch::start`] on, so work
/// done between starting it and [`Watch::run`] (the first ingest) misses
/// no change.
pub struct Watch {
    // Dropping the watcher ends the events.
    _watcher: notify::RecommendedWatcher,
    queue: Queue,
    scope: Scope,
    debounce: Duration,
}

impl Watch {
    /// Starts watching `paths`: folders recursively, a file through its
    /// folder.
    pub fn start(paths: &[PathBuf], options: &WatchOptions) -> Result<Self> {
        let (tx, queue) = queue(MAX_QUEUED);
        let mut watcher = notify::recommended_watcher(tx).map_err(|e| WatchError::Watch {
            path: PathBuf::from("."),
            message: e.to_string(),
        })?;
        let mut files = Vec::new();
        for path in paths {
            let (target, mode) = if path.is_dir() {
                (path.clone(), RecursiveMode::Recursive)
            } else {
                // A file is watched through its folder: editors replace a
                // file by renaming a new one over it, which ends a watch on
                // the file.
                files.push(path.clone());
                let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
                (
                    parent.map_or_else(|| PathBuf::from("."), Path::to_path_buf),
                    RecursiveMode::NonRecursive,
                )
            };
            watcher
                .watch(&target, mode)
                .map_err(|e| WatchError::Watch {
                    path: target.clone(),
                    message: e.to_string(),
                })?;
        }
        Ok(Self {
            _watcher: watcher,
            queue,
            scope: Scope {
                dirs: paths.iter().filter(|p| p.is_dir()).cloned().collect(),
                files,
                ignore: options.ignore.clone(),
            },
            debounce: options.debounce,
        })
    }

    /// Hands each batch of changes to `on_change` until `stop` is set.
    pub fn run(&self, stop: &AtomicBool, on_change: &mut dyn FnMut(&Batch)) -> Result<()> {
        while !stop.load(Ordering::Relaxed) {
            if let Some(batch) = next_batch(&self.queue, &self.scope, self.debounce, stop)? {
                on_change(&batch);
            }
        }
        Ok(())
    }
}

/// Which events count.
struct Scope {
    dirs: Vec<PathBuf>,
    files: Vec<PathBuf>,
    ignore: Vec<PathBuf>,
}

impl Scope {
    fn covers(&self, path: &Path) -> bool {
        !self.ignore.iter().any(|i| path.starts_with(i))
            && (self.dirs.iter().any(|d| path.starts_with(d))
                || self.files.iter().any(|f| f == path))
    }
}

/// Waits for the first relevant event (checking `stop` every [`POLL`]),
/// then gathers events until `debounce` passes without one; `None` when
/// `stop` was set first.
fn next_batch(
    queue: &Queue,
    scope: &Scope,
    debounce: Duration,
    stop: &AtomicBool,
) -> Result<Option<Batch>> {
    let mut batch = Batch::default();
    let mut first: Option<Instant> = None;
    let mut last = Instant::now();
    loop {
        if stop.load(Ordering::Relaxed) {
            return Ok(None);
        }
        let wait = match first {
            None => POLL,
            Some(_) => debounce.saturating_sub(last.elapsed()).min(POLL),
        };
        match queue.rx.recv_timeout(wait) {
            Ok(event) => {
                if add(&mut batch, event, scope) {
                    first.get_or_insert_with(Instant::now);
                    last = Instant::now();
                }
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                return Err(WatchError::Stopped("its channel closed".into()));
            }
        }
        if queue.dropped.swap(false, Ordering::Relaxed) {
            tracing::warn!("more than {MAX_QUEUED} file-system events at once; rescanning");
            batch.rescan = true;
            batch.events += 1;
            first.get_or_insert_with(Instant::now);
            last = Instant::now();
        }
        if let Some(started) = first
            && (last.elapsed() >= debounce || started.elapsed() >= debounce * MAX_WAIT_PERIODS)
        {
            return Ok(Some(batch));
        }
    }
}

/// Adds `event` to `batch` when it is a change within `scope`.
fn add(batch: &mut Batch, event: notify::Result<Event>, scope: &Scope) -> bool {
    let event = match event {
        Ok(e) => e,
        Err(e) => {
            // An error from the watcher (an overflowed queue among them):
            // only a full rescan knows what changed.
            tracing::warn!(error = %e, "the file watcher reported an error; rescanning");
            batch.rescan = true;
            batch.events += 1;
            return true;
        }
    };
    if event.need_rescan() {
        batch.rescan = true;
        batch.events += 1;
        return true;
    }
    if matches!(event.kind, EventKind::Access(_)) {
        return false;
    }
    let relevant: Vec<&PathBuf> = event.paths.iter().filter(|p| scope.covers(p)).collect();
    if relevant.is_empty() {
        return false;
    }
    batch.events += 1;
    for p in relevant {
        if batch.sample.len() < SAMPLE && !batch.sample.contains(p) {
            batch.sample.push(p.clone());
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn scope(dir: &Path, ignore: &Path) -> Scope {
        Scope {
            dirs: vec![dir.to_path_buf()],
            files: vec![PathBuf::from("/elsewhere/one.md")],
            ignore: vec![ignore.to_path_buf()],
        }
    }

    fn event(kind: EventKind, path: &str) -> notify::Result<Event> {
        Ok(Event::new(kind).add_path(PathBuf::from(path)))
    }

    #[test]
    fn only_changes_inside_the_watched_paths_and_outside_the_data_folder_count() {
        let s = scope(Path::new("/kb"), Path::new("/kb/.grace"));
        let mut b = Batch::default();
        let modify = EventKind::Modify(notify::event::ModifyKind::Any);
        assert!(add(&mut b, event(modify, "/kb/a.md"), &s));
        assert!(!add(&mut b, event(modify, "/kb/.grace/manifest.json"), &s));
        assert!(!add(&mut b, event(modify, "/other/a.md"), &s));
        assert!(add(&mut b, event(modify, "/elsewhere/one.md"), &s));
        assert!(!add(&mut b, event(modify, "/elsewhere/two.md"), &s));
        let read = EventKind::Access(notify::event::AccessKind::Any);
        assert!(!add(&mut b, event(read, "/kb/a.md"), &s));
        assert_eq!(b.events, 2);
        assert_eq!(
            b.sample,
            [
                PathBuf::from("/kb/a.md"),
                PathBuf::from("/elsewhere/one.md")
            ]
        );
    }

    #[test]
    fn a_burst_is_one_batch_with_a_bounded_sample_and_an_overflow_asks_for_a_rescan() {
        let s = scope(Path::new("/kb"), Path::new("/kb/.grace"));
        let (mut tx, rx) = queue(MAX_QUEUED);
        for i in 0..1000 {
            notify::EventHandler::handle_event(
                &mut tx,
                event(
                    EventKind::Create(notify::event::CreateKind::File),
                    &format!("/kb/{i}.md"),
                ),
            );
        }
        notify::EventHandler::handle_event(&mut tx, Err(notify::Error::generic("queue overflow")));
        let stop = AtomicBool::new(false);
        let batch = next_batch(&rx, &s, Duration::from_millis(50), &stop)
            .unwrap()
            .unwrap();
        assert_eq!(batch.events, 1001);
        assert_eq!(batch.sample.len(), SAMPLE);
        assert!(batch.rescan);
    }

    #[test]
    fn a_flood_beyond_the_queue_is_dropped_and_becomes_a_rescan() {
        let s = scope(Path::new("/kb"), Path::new("/kb/.grace"));
        let (mut tx, rx) = queue(10);
        for i in 0..50 {
            notify::EventHandler::handle_event(
                &mut tx,
                event(
                    EventKind::Modify(notify::event::ModifyKind::Any),
                    &format!("/kb/{i}.md"),
                ),
            );
        }
        let stop = AtomicBool::new(false);
        let batch = next_batch(&rx, &s, Duration::from_millis(50), &stop)
            .unwrap()
            .unwrap();
        // The ten that fitted, and the drop as one more.
        assert_eq!(batch.events, 11);
        assert!(batch.rescan);
        // Nothing is left over: the next look finds the queue empty.
        stop.store(true, Ordering::Relaxed);
        assert_eq!(
            next_batch(&rx, &s, Duration::from_millis(50), &stop).unwrap(),
            None
        );
    }

    #[test]
    fn a_watch_sees_a_new_file_and_stops_when_told() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let writer = {
            let (root, stop) = (root.clone(), stop.clone());
            std::thread::spawn(move || {
                // Until the watch has seen it: the watch starts after us.
                for i in 0..100 {
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    std::fs::write(root.join(format!("{i}.md")), "# New\n\ntext\n").unwrap();
                    std::thread::sleep(Duration::from_millis(100));
                }
            })
        };
        let mut batches = Vec::new();
        let options = WatchOptions {
            debounce: Duration::from_millis(50),
            ignore: Vec::new(),
        };
        let flag = stop.clone();
        watch(std::slice::from_ref(&root), &options, &stop, &mut |b| {
            batches.push(b.clone());
            flag.store(true, Ordering::Relaxed);
        })
        .unwrap();
        writer.join().unwrap();
        assert_eq!(batches.len(), 1);
        assert!(batches[0].sample.iter().all(|p| p.starts_with(&root)));
    }

    #[test]
    fn a_missing_path_is_an_error_that_names_it() {
        let stop = AtomicBool::new(true);
        let err = watch(
            &[PathBuf::from("/no/such/folder")],
            &WatchOptions {
                debounce: Duration::from_millis(50),
                ignore: Vec::new(),
            },
            &stop,
            &mut |_| {},
        )
        .unwrap_err();
        assert!(err.to_string().contains("/no/such"), "{err}");
    }
}
