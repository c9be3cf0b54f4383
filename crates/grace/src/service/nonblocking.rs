//! The async forms: each operation on tokio's blocking pool, a run's
//! events on a stream; a dropped future or stream cancels its run.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::mpsc;

use super::Grace;
use super::ask::{AskOptions, AskOutcome};
use super::events::RunEvent;
use crate::error::{Error, Result};
use crate::ingest::{IngestError, IngestOptions, IngestReport};
use crate::search::Passage;
use crate::store::PayloadFilter;

/// The events of one run ([`Grace::ask_stream`]), ending with `Done` or
/// `Failed`. Dropping it cancels the run.
pub struct RunStream {
    events: mpsc::Receiver<RunEvent>,
    _cancel: CancelOnDrop,
}

impl RunStream {
    /// The next event; `None` after the last one.
    pub async fn next(&mut self) -> Option<RunEvent> {
        self.events.recv().await
    }
}

/// Sets a run's cancellation flag when dropped (a dropped future or stream
/// means nobody waits for the run any more). Harmless after the run ended.
pub struct CancelOnDrop(pub Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

impl Grace {
    /// [`ingest_blocking`](Self::ingest_blocking) on tokio's blocking pool;
    /// dropping the future (a request that timed out) stops the run at the
    /// next file, with what was ingested so far committed.
    pub async fn ingest(
        &self,
        paths: Vec<PathBuf>,
        mut options: IngestOptions,
    ) -> Result<IngestReport> {
        let cancel = options
            .cancel
            .get_or_insert_with(|| Arc::new(AtomicBool::new(false)))
            .clone();
        let _guard = CancelOnDrop(cancel);
        let this = self.clone();
        blocking(move || this.ingest_blocking(&paths, &options, &mut |_| {})).await
    }

    /// Ingest for a remote caller (HTTP `/v1/ingest`, MCP `ingest`): the
    /// paths must lie inside `ingest.allowed_roots`, and symbolic links that
    /// lead out of them are not followed. With no roots configured, naming
    /// server paths is refused ([`IngestError::RemotePathsOff`]); uploads
    /// go through [`ingest`](Self::ingest).
    pub async fn ingest_remote(&self, paths: Vec<PathBuf>, prune: bool) -> Result<IngestReport> {
        let options = self.remote_ingest_options(prune)?;
        self.ingest(paths, options).await
    }

    /// The options of a remote caller's ingest: inside the configured
    /// `ingest.allowed_roots` only ([`IngestError::RemotePathsOff`] when
    /// there are none).
    pub fn remote_ingest_options(&self, prune: bool) -> Result<IngestOptions> {
        // A root that cannot be resolved (removed since the config was
        // loaded) allows nothing.
        let roots: Vec<PathBuf> = self
            .config()
            .ingest
            .allowed_roots
            .iter()
            .filter_map(|r| std::fs::canonicalize(r).ok())
            .collect();
        if roots.is_empty() {
            return Err(IngestError::RemotePathsOff.into());
        }
        Ok(IngestOptions {
            prune,
            roots: Some(roots),
            cancel: None,
            access: None,
        })
    }

    /// [`search_blocking`](Self::search_blocking) on tokio's blocking pool.
    pub async fn search(
        &self,
        query: impl Into<String>,
        limit: Option<usize>,
        filter: Option<PayloadFilter>,
        scope: crate::access::ReadScope,
    ) -> Result<Vec<Passage>> {
        let (this, query) = (self.clone(), query.into());
        blocking(move || this.search_blocking(&query, limit, filter.as_ref(), &scope)).await
    }

    /// [`ask_blocking`](Self::ask_blocking) on tokio's blocking pool;
    /// dropping the future cancels the run.
    pub async fn ask(
        &self,
        question: impl Into<String>,
        options: AskOptions,
    ) -> Result<AskOutcome> {
        let cancel = Arc::new(AtomicBool::new(false));
        let _guard = CancelOnDrop(cancel.clone());
        let (this, question) = (self.clone(), question.into());
        blocking(move || this.ask_blocking(&question, &options, cancel, &mut |_| {})).await
    }

    /// Answers `question`, reporting each step as it goes; the stream ends
    /// with [`RunEvent::Done`] or [`RunEvent::Failed`]. Dropping the stream
    /// cancels the run. A bad ask ([`check_ask`](super::check_ask)) is an
    /// error at once, before any stream. Must be called within a tokio
    /// runtime.
    pub fn ask_stream(
        &self,
        question: impl Into<String>,
        options: AskOptions,
    ) -> Result<RunStream> {
        let question = question.into();
        super::check_ask(&question, &options)?;
        Ok(self
            .stream(move |this, cancel, send| this.ask_blocking(&question, &options, cancel, send)))
    }

    /// [`reply_blocking`](Self::reply_blocking) on tokio's blocking pool;
    /// dropping the future cancels the run.
    pub async fn reply(
        &self,
        run_id: impl Into<String>,
        reply: Option<String>,
        scope: crate::access::ReadScope,
    ) -> Result<AskOutcome> {
        let cancel = Arc::new(AtomicBool::new(false));
        let _guard = CancelOnDrop(cancel.clone());
        let (this, run_id) = (self.clone(), run_id.into());
        blocking(move || {
            this.reply_blocking_as(&run_id, reply.as_deref(), &scope, cancel, &mut |_| {})
        })
        .await
    }

    /// [`reply_blocking`](Self::reply_blocking) as a stream of run events
    /// (see [`ask_stream`](Self::ask_stream)); a reply that is too long
    /// ([`check_reply`](super::check_reply)) is an error at once.
    pub fn reply_stream(
        &self,
        run_id: impl Into<String>,
        reply: Option<String>,
        scope: crate::access::ReadScope,
    ) -> Result<RunStream> {
        super::check_reply(reply.as_deref())?;
        let run_id = run_id.into();
        Ok(self.stream(move |this, cancel, send| {
            this.reply_blocking_as(&run_id, reply.as_deref(), &scope, cancel, send)
        }))
    }

    /// Runs `work` on the blocking pool, its events and outcome on a stream.
    fn stream(
        &self,
        work: impl FnOnce(&Grace, Arc<AtomicBool>, &mut dyn FnMut(RunEvent)) -> Result<AskOutcome>
        + Send
        + 'static,
    ) -> RunStream {
        let (tx, rx) = mpsc::channel(64);
        let cancel = Arc::new(AtomicBool::new(false));
        let (this, flag) = (self.clone(), cancel.clone());
        tokio::task::spawn_blocking(move || {
            let mut send = |event: RunEvent| {
                // Nobody listening any more: stop the run.
                if tx.blocking_send(event).is_err() {
                    flag.store(true, Ordering::Relaxed);
                }
            };
            let last = match work(&this, flag.clone(), &mut send) {
                Ok(outcome) => RunEvent::Done {
                    outcome: Box::new(outcome),
                },
                Err(e) => RunEvent::Failed {
                    error: e.to_string(),
                },
            };
            send(last);
        });
        RunStream {
            events: rx,
            _cancel: CancelOnDrop(cancel),
        }
    }
}

/// Runs `f` on tokio's blocking pool.
pub(super) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Error::Server(format!("a worker task failed: {e}")))?
}
