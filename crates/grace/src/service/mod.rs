//! [`Grace`]: the library API for services. One handle holds the knowledge
//! base (store, embedder, lexical encoder), the tool registry and the review
//! queue. It is cheap to clone (an `Arc` inside), `Send + Sync`, and keeps
//! no global state: a service opens it once and shares it across tasks.
//!
//! Every operation has a blocking form (`*_blocking`, for threads and the
//! CLI) and an async form that runs it on tokio's blocking pool. An async
//! [`Grace::ask`] whose future is dropped (a client that went away, a
//! request that timed out) cancels its run: the step in progress is
//! abandoned within milliseconds and nothing keeps running for nobody.
//!
//! ```no_run
//! # async fn demo() -> grace::Result<()> {
//! use grace::{AskOptions, Config, Grace};
//!
//! let grace = Grace::open(Config::load(None)?)?;
//! grace.ingest(vec!["examples/kb".into()], Default::default()).await?;
//! let outcome = grace.ask("How do I roll back a deploy?", AskOptions::default()).await?;
//! println!("{:?} at {:.2}", outcome.report.decision, outcome.report.confidence);
//! if let Some(id) = outcome.review_id {
//!     // Escalated: a reviewer's answer arrives through the handle.
//!     let settled = grace.escalation(id).settled(std::time::Duration::from_secs(300)).await?;
//!     println!("{:?}", settled.resolution);
//! }
//! # Ok(())
//! # }
//! ```

mod ask;
mod events;
mod feedback;
pub mod kbs;
mod learn;
mod nonblocking;
mod refit;
mod run;

pub use self::ask::{
    AskOptions, AskOutcome, MAX_POSSIBLY_RELEVANT, MAX_QUESTION_CHARS, MAX_REPLY_CHARS, RunStatus,
    WhileWaiting, check_ask, check_ask_limit, check_question, check_reply,
};
pub use self::events::RunEvent;
pub use self::nonblocking::{CancelOnDrop, RunStream};

use crate::access::ReadScope;
use crate::audit::{Action, AuditLog, Record};
use crate::ingest::manifest::Manifest;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use crate::embed::{Embedder, FastEmbedder};
use crate::feedback::FeedbackStore;
use crate::ingest::{IngestOptions, IngestReport};
use crate::llm::LlmClient;
use crate::review::{Escalation, EscalationHandle, ReviewQueue};
use crate::session::{Session, SessionStore};
use crate::store::PayloadFilter;
use crate::tools::RagSearch;
use crate::tools::ToolRegistry;
use crate::{
    config::Config,
    error::Result,
    kb::{KnowledgeBase, OpenMode},
    search::Passage,
};

/// A shared handle on one knowledge base and everything that answers from
/// it. See the [module documentation](self).
#[derive(Clone)]
pub struct Grace {
    inner: Arc<Inner>,
}

struct Inner {
    kb: Arc<KnowledgeBase>,
    registry: ToolRegistry,
    queue: Arc<ReviewQueue>,
    sessions: SessionStore,
    /// Recorded runs, askers' ratings and reviewers' verdicts.
    feedback: FeedbackStore,
    /// One writer at a time in this process (across the servers, each
    /// ingest takes `state::WRITER`): ingests, promotions and retractions
    /// all rewrite the manifest.
    writer: Mutex<()>,
    runs: RunCounters,
    /// Weights of a self-calibration fitted while serving (after an
    /// ingest): they score every run from then on.
    refit: std::sync::RwLock<Option<crate::config::Weights>>,
    /// A self-calibration is running in the background.
    refitting: AtomicBool,
    /// Weights fitted on people's feedback while serving and kept
    /// (`confidence.feedback_calibration: auto`): they score every run from
    /// then on, before a self-calibration's.
    learned: std::sync::RwLock<Option<crate::config::Weights>>,
    /// A refit on feedback is running in the background.
    learning: AtomicBool,
    /// Each document's rating history (by path), read from the feedback
    /// store at start and after each rating: the `document_history`
    /// factor of every answer citing it.
    document_history: std::sync::RwLock<Arc<HashMap<String, f32>>>,
    /// Who asked, searched and reviewed what (`audit.log`).
    audit: AuditLog,
    /// With `storage.state: postgres`: the fits every server shares,
    /// watched, and whether another server changed one since they were
    /// last read (the next run reads them again).
    shared_fits: Option<(crate::state::Documents, Arc<AtomicBool>)>,
    /// Held while the documents' history is read and published.
    history_refresh: Mutex<()>,
}

#[derive(Default)]
struct RunCounters {
    in_flight: AtomicUsize,
    finished: AtomicU64,
    cancelled: AtomicU64,
}

/// Questions answered so far by this handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RunCounts {
    /// Runs in progress now.
    pub in_flight: usize,
    /// Runs that ended with an outcome.
    pub finished: u64,
    /// Runs stopped before the end (client gone, timed out).
    pub cancelled: u64,
}

/// Builds a [`Grace`] with parts other than the configured ones.
pub struct GraceBuilder {
    config: Config,
    embedder: Option<Arc<dyn Embedder>>,
    generator: Option<Arc<dyn LlmClient>>,
    mode: OpenMode,
}

impl GraceBuilder {
    /// Embeds with `embedder` instead of the configured local model.
    pub fn embedder(mut self, embedder: Arc<dyn Embedder>) -> Self {
        self.embedder = Some(embedder);
        self
    }

    /// Refuses to start on a collection that does not exist yet (a
    /// client that only asks), instead of creating it.
    pub fn existing(mut self) -> Self {
        self.mode = OpenMode::Existing;
        self
    }

    /// Answers with `generator` instead of the configured `llm.provider`.
    pub fn generator(mut self, generator: Arc<dyn LlmClient>) -> Self {
        self.generator = Some(generator);
        self
    }

    /// Opens the collection (creating it when it does not exist yet, unless
    /// [`existing`](Self::existing): a service may start before anything is
    /// ingested), the tools, the review queue and the sessions.
    pub fn build(self) -> Result<Grace> {
        let embedder: Arc<dyn Embedder> = match self.embedder {
            Some(e) => e,
            None => Arc::new(FastEmbedder::new(&self.config.embedding)?),
        };
        // The collection first: with `existing`, a missing one is refused
        // before anything is created in the data folder.
        let kb = Arc::new(KnowledgeBase::with_embedder(
            self.config,
            embedder,
            self.mode,
        )?);
        let config = kb.config();
        let audit = AuditLog::open(config)?;
        let queue = Arc::new(ReviewQueue::open(config)?);
        let sessions = SessionStore::open(config)?;
        let feedback = FeedbackStore::open(config)?;
        let shared_fits = match config.storage.state {
            crate::config::StateBackend::Sqlite => None,
            crate::config::StateBackend::Postgres => {
                let docs =
                    crate::state::Documents::open(config, crate::state::Scope::KnowledgeBase)?;
                let changed = Arc::new(AtomicBool::new(false));
                let flag = Arc::clone(&changed);
                docs.watch(move || flag.store(true, std::sync::atomic::Ordering::Release));
                Some((docs, changed))
            }
        };
        let registry = match self.generator {
            Some(g) => ToolRegistry::from_config_with(kb.config(), kb.clone(), Some(g))?,
            None => ToolRegistry::from_config(kb.config(), kb.clone())?,
        };
        let grace = Grace {
            inner: Arc::new(Inner {
                kb,
                registry,
                queue,
                sessions,
                feedback,
                writer: Mutex::new(()),
                runs: RunCounters::default(),
                refit: std::sync::RwLock::new(None),
                refitting: AtomicBool::new(false),
                learned: std::sync::RwLock::new(None),
                learning: AtomicBool::new(false),
                document_history: std::sync::RwLock::new(Arc::new(HashMap::new())),
                audit,
                shared_fits,
                history_refresh: Mutex::new(()),
            }),
        };
        // Labels given while it was not serving (verdicts from the command
        // line) count too.
        grace.learn_if_due();
        grace.refresh_document_history();
        Ok(grace)
    }
}

impl Grace {
    /// Opens GRACE as configured (see [`GraceBuilder::build`]).
    pub fn open(config: Config) -> Result<Self> {
        Self::builder(config).build()
    }

    /// A builder, to replace the embedder or the generator.
    pub fn builder(config: Config) -> GraceBuilder {
        GraceBuilder {
            config,
            embedder: None,
            generator: None,
            mode: OpenMode::Create,
        }
    }

    /// The configuration it was opened with.
    pub fn config(&self) -> &Config {
        self.inner.kb.config()
    }

    /// The knowledge base.
    pub fn knowledge_base(&self) -> &Arc<KnowledgeBase> {
        &self.inner.kb
    }

    /// The enabled tools (what the MCP server exposes).
    pub fn registry(&self) -> &ToolRegistry {
        &self.inner.registry
    }

    /// The review queue: escalations, reviewers, messages, shared context.
    pub fn escalations(&self) -> &Arc<ReviewQueue> {
        &self.inner.queue
    }

    /// An awaitable handle on escalation `id`.
    pub fn escalation(&self, id: i64) -> EscalationHandle {
        EscalationHandle::new(self.inner.queue.clone(), id)
    }

    /// Runs counted so far.
    pub fn runs(&self) -> RunCounts {
        let r = &self.inner.runs;
        RunCounts {
            in_flight: r.in_flight.load(Ordering::Relaxed),
            finished: r.finished.load(Ordering::Relaxed),
            cancelled: r.cancelled.load(Ordering::Relaxed),
        }
    }

    /// Size and provenance of the collection.
    pub fn status(&self) -> Result<crate::kb::Status> {
        self.inner.kb.status()
    }

    /// Up to `n` example questions for an asker with nothing asked yet,
    /// from the knowledge base's own section headings
    /// ([`crate::selfcal::examples`]; at most
    /// [`MAX_EXAMPLES`](crate::selfcal::examples::MAX_EXAMPLES)).
    pub fn example_questions_blocking(&self, n: usize, scope: &ReadScope) -> Result<Vec<String>> {
        crate::selfcal::examples::example_questions(self.inner.kb.store(), n, scope)
    }

    /// Makes every accepted change to the store durable.
    pub fn flush(&self) -> Result<()> {
        Ok(self.inner.kb.store().flush()?)
    }

    /// Ingests files and folders, one ingest at a time (see [`crate::ingest`]).
    pub fn ingest_blocking(
        &self,
        paths: &[PathBuf],
        options: &IngestOptions,
        on_event: &mut dyn FnMut(crate::ingest::IngestEvent<'_>),
    ) -> Result<IngestReport> {
        let report = {
            let _writer = self.writer();
            self.inner.kb.ingest(paths, options, on_event)?
        };
        self.refit_in_background();
        Ok(report)
    }

    /// Searches the collection (see [`KnowledgeBase::search`]).
    pub fn search_blocking(
        &self,
        query: &str,
        limit: Option<usize>,
        filter: Option<&PayloadFilter>,
        scope: &ReadScope,
    ) -> Result<Vec<Passage>> {
        // The query and the limit are checked by the search itself.
        let filter = PayloadFilter {
            readers: scope.tokens(),
            ..filter.cloned().unwrap_or_default()
        };
        let filter = (!filter.is_empty()).then_some(filter);
        let passages = self.inner.kb.search(query, limit, filter.as_ref())?;
        self.inner.audit.record(
            &Record::new(scope.label(), self.config().kb_name(), Action::Search)
                .documents(passages.iter().map(|p| p.source.as_str())),
        );
        Ok(passages)
    }

    /// Takes out of `escalations` what `scope` may not read (see
    /// [`crate::review::withhold`]).
    pub fn withhold_for(&self, escalations: &mut [Escalation], scope: &ReadScope) -> Result<()> {
        if *scope == ReadScope::All {
            return Ok(());
        }
        let manifest = Manifest::load_for(self.inner.kb.config())?;
        crate::review::withhold::for_scope(escalations, scope, manifest.as_ref());
        Ok(())
    }

    /// Takes out of a run's report what `scope` may not read; returns how
    /// much was withheld.
    pub fn withhold_run_for(
        &self,
        run: &mut crate::exec::RunReport,
        scope: &ReadScope,
    ) -> Result<usize> {
        if *scope == ReadScope::All {
            return Ok(0);
        }
        let manifest = Manifest::load_for(self.inner.kb.config())?;
        let may_read = crate::review::withhold::readable(scope, manifest.as_ref());
        Ok(crate::review::withhold::from_report(run, &may_read))
    }

    /// Records a registry tool's call in the audit log when it searched
    /// the knowledge base (`rag_search`, called over HTTP or MCP).
    pub fn audit_tool_call(&self, who: &str, tool: &str, result: &crate::tools::ToolResult) {
        if tool == RagSearch::NAME {
            self.inner.audit.record(
                &Record::new(who, self.config().kb_name(), Action::Search)
                    .documents(result.sources.iter().map(String::as_str)),
            );
        }
    }

    /// The audit log (`audit.log`: who asked, searched and reviewed what).
    pub fn audit(&self) -> &AuditLog {
        &self.inner.audit
    }

    /// Starts a conversation (the operator's or a service's).
    pub fn create_session(&self) -> Result<Session> {
        self.create_session_as(&ReadScope::All)
    }

    /// Session `id` with its turns.
    pub fn session(&self, id: &str) -> Result<Session> {
        self.session_as(id, &ReadScope::All)
    }

    /// Ends session `id`.
    pub fn delete_session(&self, id: &str) -> Result<()> {
        self.delete_session_as(id, &ReadScope::All)
    }

    /// Starts a conversation belonging to the principal of `scope`: no
    /// other principal can read, continue or end it.
    pub fn create_session_as(&self, scope: &ReadScope) -> Result<Session> {
        Ok(self.inner.sessions.create_for(scope.principal())?)
    }

    /// Session `id` with its turns, when it is `scope`'s to read (another
    /// principal's is [`SessionError::NotFound`], as one that never was).
    ///
    /// [`SessionError::NotFound`]: crate::session::SessionError::NotFound
    pub fn session_as(&self, id: &str, scope: &ReadScope) -> Result<Session> {
        self.inner.sessions.check_owner(id, scope.principal())?;
        Ok(self.inner.sessions.get(id)?)
    }

    /// Ends session `id`, when it is `scope`'s.
    pub fn delete_session_as(&self, id: &str, scope: &ReadScope) -> Result<()> {
        self.inner.sessions.check_owner(id, scope.principal())?;
        Ok(self.inner.sessions.delete(id)?)
    }

    /// Promotes reviewed answer `id` to knowledge (see [`crate::review::promote`]).
    pub fn promote_blocking(&self, id: i64, who: &str) -> Result<PathBuf> {
        let _writer = self.writer();
        crate::review::promote::promote(&self.inner.kb, &self.inner.queue, id, who)
    }

    /// Removes promoted answer `id` from the knowledge base.
    pub fn retract_blocking(&self, id: i64, who: &str) -> Result<()> {
        let _writer = self.writer();
        crate::review::promote::retract(&self.inner.kb, &self.inner.queue, id, who)
    }

    /// Searches again for escalation `id` with a reviewer's hint and gives
    /// them the new draft (see [`crate::review::replan`]).
    pub fn redraft_blocking(&self, id: i64, reviewer: &str, hint: &str) -> Result<Escalation> {
        crate::review::replan::redraft_with(
            &self.inner.registry,
            self.config(),
            self.inner.kb.scorer(),
            &self.inner.queue,
            id,
            reviewer,
            hint,
        )
    }

    /// This process's writer lock (every server's is taken by each
    /// ingest: `KnowledgeBase::ingest`).
    fn writer(&self) -> std::sync::MutexGuard<'_, ()> {
        // A panic in another writer leaves nothing half-done that the
        // lock protects (the manifest is written atomically): go on.
        self.inner
            .writer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync + Clone + 'static>() {}

    #[test]
    fn the_handle_can_be_shared_across_tasks() {
        assert_send_sync::<Grace>();
    }

    #[test]
    fn run_events_serialise_with_their_name() {
        let e = RunEvent::Recovering { confidence: 0.5 };
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(v["event"], e.name());
        let e = RunEvent::Failed { error: "x".into() };
        assert_eq!(serde_json::to_value(&e).unwrap()["event"], e.name());
    }
}
