//! `server.watch`: the folders `grace serve` keeps its knowledge base in
//! step with. A thread of its own ingests them at start (with pruning:
//! what was deleted while the server was down goes), then again after
//! each batch of changes ([`grace::watch`]). It takes no request permit:
//! answering goes on while it ingests, and the ingest takes the same
//! writer lock as `/v1/ingest`, so the two never interleave. At shutdown
//! the ingest in progress stops at its next file, committed as far as it
//! got; the next start finishes it.
//!
//! With `storage.state: postgres` only the leader follows: the server
//! holding the knowledge base's leader lock ([`grace::state::LEADER`]).
//! The others wait for it and try again every
//! [`grace::state::CAMPAIGN_EVERY`]; when the leader dies its connection
//! closes, PostgreSQL releases the lock, and one of them takes over,
//! ingesting first what changed meanwhile.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Instant;

use grace::ingest::IngestOptions;
use grace::service::Grace;
use grace::watch::{Batch, WatchOptions};

/// The thread that follows `server.watch`, and its stop flag.
pub struct Follower {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Follower {
    /// Starts following `grace`'s `server.watch` paths; `None` when there
    /// are none.
    pub fn start(grace: &Grace) -> Option<Self> {
        let config = grace.config();
        if config.server.watch.is_empty() {
            return None;
        }
        let roots: Vec<PathBuf> = config
            .server
            .watch
            .iter()
            .map(|p| std::fs::canonicalize(p).unwrap_or_else(|_| p.clone()))
            .collect();
        let options = WatchOptions::for_config(config);
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (grace, stop) = (grace.clone(), stop.clone());
            std::thread::Builder::new()
                .name("grace-watch".into())
                .spawn(move || follow(&grace, &roots, &options, &stop))
        };
        match thread {
            Ok(thread) => Some(Self {
                stop,
                thread: Some(thread),
            }),
            Err(e) => {
                tracing::error!(error = %e, "cannot start the thread that follows server.watch");
                None
            }
        }
    }

    /// Stops following: the ingest in progress stops at its next file.
    pub fn stop(mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Waits until this server leads (at once with SQLite); `None` when asked
/// to stop first.
fn lead(grace: &Grace, stop: &AtomicBool) -> Option<grace::state::ClusterLock> {
    let mut told = false;
    while !stop.load(Ordering::SeqCst) {
        match grace::state::ClusterLock::try_take(grace.config(), grace::state::LEADER) {
            Ok(Some(lock)) => {
                if told {
                    tracing::info!("server.watch: this server leads now and follows the folders");
                }
                return Some(lock);
            }
            Ok(None) if !told => {
                tracing::info!(
                    "server.watch: another server leads and follows the folders; this one takes over if it stops"
                );
                told = true;
            }
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(error = %e, "server.watch: cannot campaign for leadership; trying again")
            }
        }
        std::thread::sleep(grace::state::CAMPAIGN_EVERY);
    }
    None
}

fn follow(grace: &Grace, roots: &[PathBuf], options: &WatchOptions, stop: &Arc<AtomicBool>) {
    let Some(leader) = lead(grace, stop) else {
        return;
    };
    // Lost when PostgreSQL restarts: then this server ingests again only
    // once it leads again (another may have taken over meanwhile).
    let leader = std::cell::RefCell::new(Some(leader));
    let ingest = |batch: Option<&Batch>| {
        let mut held = leader.borrow_mut();
        if !held.as_ref().is_some_and(grace::state::ClusterLock::held) {
            *held = grace::state::ClusterLock::try_take(grace.config(), grace::state::LEADER)
                .ok()
                .flatten();
            match &*held {
                Some(_) => tracing::info!("server.watch: this server leads again"),
                None => {
                    tracing::info!(
                        "server.watch: another server leads now; this batch is its to ingest"
                    );
                    return;
                }
            }
        }
        drop(held);
        let started = Instant::now();
        let options = IngestOptions {
            prune: true,
            roots: None,
            cancel: Some(stop.clone()),
            access: None,
        };
        match grace.ingest_blocking(roots, &options, &mut |_| {}) {
            Ok(r) => tracing::info!(
                changes = batch.map_or(0, |b| b.events),
                added = r.added,
                updated = r.updated,
                removed = r.removed.len(),
                skipped = r.skipped.len(),
                seconds = started.elapsed().as_secs_f64(),
                "server.watch: ingested"
            ),
            Err(e) if stop.load(Ordering::SeqCst) => {
                tracing::info!(error = %e, "server.watch: ingest stopped by the shutdown");
            }
            Err(e) => {
                tracing::error!(error = %e, "server.watch: ingest failed; the next change tries again")
            }
        }
    };
    // Watching before the first ingest: a change made while it runs is
    // a batch afterwards, not lost.
    let watch = match grace::watch::Watch::start(roots, options) {
        Ok(w) => w,
        Err(e) => {
            tracing::error!(error = %e, "server.watch: cannot follow the folders");
            return;
        }
    };
    ingest(None);
    eprintln!("GRACE is following {} path(s) of server.watch", roots.len());
    if let Err(e) = watch.run(stop, &mut |b| ingest(Some(b))) {
        tracing::error!(error = %e, "server.watch: no longer following the folders");
    }
}
