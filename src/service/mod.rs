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

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

use crate::config::MAX_RAG_SEARCH_LIMIT;
use crate::embed::{Embedder, FastEmbedder};
use crate::exec::{Decision, Event, Executor, RunReport};
use crate::followup::Rewrite;
use crate::ingest::{IngestError, IngestOptions, IngestReport};
use crate::llm::LlmClient;
use crate::plan::PlanError;
use crate::review::{Escalation, EscalationHandle, NewEscalation, ReviewQueue};
use crate::session::{Session, SessionStore, Turn};
use crate::store::PayloadFilter;
use crate::tools::{ToolRegistry, UserRequest};
use crate::{
    config::Config,
    error::{Error, Result},
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
    /// One writer at a time: ingests, promotions and retractions all
    /// rewrite the manifest.
    writer: Mutex<()>,
    runs: RunCounters,
    /// Weights of a self-calibration fitted while serving (after an
    /// ingest): they score every run from then on.
    refit: std::sync::RwLock<Option<crate::config::Weights>>,
    /// A self-calibration is running in the background.
    refitting: AtomicBool,
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

/// How to answer one question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AskOptions {
    /// Passages retrieved; `tools.rag_search.limit` when `None`.
    pub limit: Option<usize>,
    /// Put an escalated question in the review queue (default true).
    pub queue: bool,
    /// Only these reviewers may see the escalation; empty: any reviewer.
    pub reviewers: Vec<String>,
    /// Who asks, shown to reviewers.
    pub asker: String,
    /// The conversation this question continues ([`Grace::create_session`]):
    /// a follow-up is read against its earlier turns, and the turn is
    /// added to it.
    pub session_id: Option<String>,
    /// Put the question to a person whatever GRACE decides (the asker
    /// asked for one, e.g. after a decline): the run is escalated with its
    /// answer as the reviewer's draft. A run that needs the asker's input
    /// asks for it first.
    pub escalate: bool,
}

impl Default for AskOptions {
    fn default() -> Self {
        Self {
            limit: None,
            queue: true,
            reviewers: Vec::new(),
            asker: "service".to_string(),
            session_id: None,
            escalate: false,
        }
    }
}

/// The outcome of a question: the run's report and, when it was escalated
/// and queued, the escalation's id (`grace answer ID`, [`Grace::escalation`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct AskOutcome {
    /// How the run ended, in one word.
    #[serde(default)]
    pub status: RunStatus,
    /// The run's report (flattened into this object in JSON).
    #[serde(flatten)]
    pub report: RunReport,
    /// The escalation's id in the review queue when the run was escalated and
    /// queued; `None` otherwise.
    pub review_id: Option<i64>,
    /// The asker's handle on that escalation: needed to read it back over
    /// HTTP (`GET /v1/escalations/{id}?handle=`); the id alone is not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_handle: Option<String>,
    /// The session the turn was added to, when the ask named one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// When the run needs input (`decision: needs_input`): the id that
    /// continues it with the asker's reply (`POST /v1/runs/{id}/reply`,
    /// [`Grace::reply`]), within `agent.reply_timeout_seconds`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
}

/// What [`Grace::run`] runs: the executor, and where its events go.
type RunWith<'a> = dyn FnMut(
        &Executor<'_>,
        &mut dyn FnMut(crate::exec::Event<'_>),
    ) -> std::result::Result<RunReport, PlanError>
    + 'a;

/// A conversation's last turns: (question, answer).
type History = Vec<(String, Option<String>)>;

/// How a run ended, in one word (`status` in an outcome's JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Answered (decision `answer` or `caveat`).
    #[default]
    Answered,
    /// Put to a reviewer (decision `escalate`).
    Escalated,
    /// Not answered (decision `decline`).
    Declined,
    /// Waiting for the asker's reply to the run's `clarification`
    /// (`run_id` continues it).
    NeedsInput,
}

impl RunStatus {
    /// The status of a run that decided `decision`.
    pub fn of(decision: Decision) -> Self {
        match decision {
            Decision::Answer | Decision::Caveat => RunStatus::Answered,
            Decision::Escalate => RunStatus::Escalated,
            Decision::Decline => RunStatus::Declined,
            Decision::NeedsInput => RunStatus::NeedsInput,
        }
    }
}

/// Longest reply to a question the agent put to the asker (characters).
pub const MAX_REPLY_CHARS: usize = 4_000;

/// A run waiting for the asker's reply, as kept in the session database.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct ParkedRun {
    state: crate::agent::AgentState,
    options: AskOptions,
    question: String,
    rewrite: Option<Rewrite>,
}

/// Checks an ask before it runs: a question that is not blank, a limit in
/// range, reviewer ids without spaces or control characters (checked now,
/// not only if the run escalates). The HTTP API calls it before it
/// chooses between JSON and an event stream, so a bad ask is a 400 either
/// way.
pub fn check_ask(question: &str, options: &AskOptions) -> Result<()> {
    if crate::text::is_blank(question) {
        return Err(Error::InvalidInput("the question is empty".into()));
    }
    if let Some(limit) = options.limit {
        check_ask_limit(limit)?;
    }
    if let Some(bad) = options
        .reviewers
        .iter()
        .find(|r| !crate::text::is_plain_id(r))
    {
        return Err(Error::InvalidInput(format!(
            "the reviewer id {bad:?} must be non-empty, without spaces or control characters"
        )));
    }
    Ok(())
}

/// Checks the passages an ask retrieves (`limit`, the CLI's `-k`): 1 to
/// [`MAX_RAG_SEARCH_LIMIT`], what one search may return.
pub fn check_ask_limit(limit: usize) -> Result<()> {
    if (1..=MAX_RAG_SEARCH_LIMIT).contains(&limit) {
        Ok(())
    } else {
        Err(Error::InvalidInput(format!(
            "the passages to retrieve (`limit`, -k) must be 1..={MAX_RAG_SEARCH_LIMIT}, got {limit}"
        )))
    }
}

/// What a run reports while it goes, owned so it can cross threads (the
/// HTTP API streams these as server-sent events named by `event`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum RunEvent {
    /// A plan step began.
    StepStarted {
        /// The step's id in the plan.
        id: String,
        /// The tool it calls.
        action: String,
    },
    /// A plan step ended, with its confidence.
    StepFinished {
        /// The step's id in the plan.
        id: String,
        /// The tool it called.
        action: String,
        /// Whether the call succeeded.
        success: bool,
        /// The step's confidence score in [0, 1].
        confidence: f64,
        /// Wall time of the tool call in seconds, retries included.
        seconds: f64,
        /// The failure's message; `None` on success.
        error: Option<String>,
    },
    /// The run was weak; a wider search follows.
    Recovering {
        /// The first run's confidence.
        confidence: f64,
    },
    /// The agent's thought before acting.
    Think {
        /// The thought.
        text: String,
    },
    /// The agent calls a tool.
    ToolCall {
        /// The call's id.
        id: String,
        /// The tool.
        name: String,
        /// Its arguments.
        arguments: serde_json::Value,
    },
    /// What the agent observed of a tool call.
    Observation {
        /// The call's id.
        id: String,
        /// The tool.
        name: String,
        /// Whether it succeeded.
        success: bool,
        /// A short account of the result.
        summary: String,
        /// The search's confidence, for a search.
        confidence: Option<f64>,
    },
    /// The agent's final answer, before it is scored.
    Answer {
        /// The answer text.
        text: String,
    },
    /// The run needs a human: the question put to them.
    Escalated {
        /// The question for the human.
        request: UserRequest,
    },
    /// The end: the outcome.
    Done {
        /// The run's outcome (with its review id when queued).
        outcome: Box<AskOutcome>,
    },
    /// The end: the run failed.
    Failed {
        /// The error's message.
        error: String,
    },
}

impl RunEvent {
    /// The event's name (`step_started`, …, `done`, `failed`).
    pub fn name(&self) -> &'static str {
        match self {
            RunEvent::StepStarted { .. } => "step_started",
            RunEvent::StepFinished { .. } => "step_finished",
            RunEvent::Recovering { .. } => "recovering",
            RunEvent::Think { .. } => "think",
            RunEvent::ToolCall { .. } => "tool_call",
            RunEvent::Observation { .. } => "observation",
            RunEvent::Answer { .. } => "answer",
            RunEvent::Escalated { .. } => "escalated",
            RunEvent::Done { .. } => "done",
            RunEvent::Failed { .. } => "failed",
        }
    }

    fn from_exec(event: &Event<'_>) -> Option<Self> {
        Some(match event {
            Event::StepStarted { step } => RunEvent::StepStarted {
                id: step.id.clone(),
                action: step.action.clone(),
            },
            Event::StepFinished { record } => RunEvent::StepFinished {
                id: record.id.clone(),
                action: record.action.clone(),
                success: record.result.success,
                confidence: record.confidence.score,
                seconds: record.result.duration.as_secs_f64(),
                error: record.result.error.clone(),
            },
            Event::Recovering { confidence } => RunEvent::Recovering {
                confidence: *confidence,
            },
            Event::Escalated { request } => RunEvent::Escalated {
                request: (*request).clone(),
            },
            Event::Think { text } => RunEvent::Think {
                text: (*text).to_string(),
            },
            Event::ToolCall { call } => RunEvent::ToolCall {
                id: call.id.clone(),
                name: call.name.clone(),
                arguments: call.arguments.clone(),
            },
            Event::Observation { call } => RunEvent::Observation {
                id: call.call.id.clone(),
                name: call.call.name.clone(),
                success: call.success,
                summary: call.summary.clone(),
                confidence: call.confidence,
            },
            Event::AgentAnswer { text } => RunEvent::Answer {
                text: (*text).to_string(),
            },
            // The outcome (with its review id) is sent as `Done` at the end.
            Event::Answered { .. } => return None,
        })
    }
}

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
pub(crate) struct CancelOnDrop(pub(crate) Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
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
        let queue = Arc::new(ReviewQueue::open(config)?);
        let sessions = SessionStore::open(&config.storage.data_dir, &config.sessions)?;
        let registry = match self.generator {
            Some(g) => ToolRegistry::from_config_with(kb.config(), kb.clone(), Some(g))?,
            None => ToolRegistry::from_config(kb.config(), kb.clone())?,
        };
        Ok(Grace {
            inner: Arc::new(Inner {
                kb,
                registry,
                queue,
                sessions,
                writer: Mutex::new(()),
                runs: RunCounters::default(),
                refit: std::sync::RwLock::new(None),
                refitting: AtomicBool::new(false),
            }),
        })
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

    /// The configuration runs are scored with: the knowledge base's, with
    /// the weights of a self-calibration fitted since it was opened.
    fn scoring_config(&self) -> std::borrow::Cow<'_, Config> {
        let refit = *self
            .inner
            .refit
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match refit {
            Some(weights) => {
                let mut config = self.config().clone();
                config.confidence.fitted_weights = Some(weights);
                std::borrow::Cow::Owned(config)
            }
            None => std::borrow::Cow::Borrowed(self.config()),
        }
    }

    /// After an ingest: with `confidence.self_calibration.mode: auto`, fits
    /// the knowledge base again on a thread of its own when enough of it
    /// changed ([`crate::selfcal::after_ingest`]), and scores with the new
    /// fit once it is written. One at a time; questions are answered
    /// meanwhile with the weights they had.
    fn refit_in_background(&self) {
        match crate::selfcal::due(&self.inner.kb) {
            Ok(true) => {}
            Ok(false) => return,
            Err(e) => {
                tracing::warn!(error = %e, "cannot tell whether the knowledge base needs self-calibrating");
                return;
            }
        }
        if self.inner.refitting.swap(true, Ordering::AcqRel) {
            return;
        }
        let this = self.clone();
        let spawned = std::thread::Builder::new()
            .name("self-calibration".into())
            .spawn(move || {
                match crate::selfcal::after_ingest(&this.inner.kb, &mut |_| {}) {
                    Ok(Some(crate::selfcal::Outcome::Fitted {
                        calibration, path, ..
                    })) => {
                        tracing::info!(
                            questions = calibration.fitted_on.questions,
                            ece = ?calibration.cross_validated.ece,
                            auroc = ?calibration.cross_validated.auroc,
                            file = %path.display(),
                            "self-calibrated after the ingest; scoring with the new fit"
                        );
                        *this
                            .inner
                            .refit
                            .write()
                            .unwrap_or_else(std::sync::PoisonError::into_inner) =
                            Some(calibration.weights);
                    }
                    Ok(Some(crate::selfcal::Outcome::TooSmall { usable, min })) => tracing::info!(
                        "too small to self-calibrate ({usable} sections, fewer than {min}); the configured weights stay"
                    ),
                    Ok(None) => {}
                    Err(e) => tracing::warn!(error = %e, "self-calibration after the ingest failed; the weights stay as they were"),
                }
                this.inner.refitting.store(false, Ordering::Release);
            });
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "cannot start the self-calibration thread");
            self.inner.refitting.store(false, Ordering::Release);
        }
    }

    /// Searches the collection (see [`KnowledgeBase::search`]).
    pub fn search_blocking(
        &self,
        query: &str,
        limit: Option<usize>,
        filter: Option<&PayloadFilter>,
    ) -> Result<Vec<Passage>> {
        if crate::text::is_blank(query) {
            return Err(Error::InvalidInput("the query is empty".into()));
        }
        if limit == Some(0) {
            return Err(Error::InvalidInput("the limit must be at least 1".into()));
        }
        self.inner.kb.search(query, limit, filter)
    }

    /// Answers `question`; an escalated run is queued for reviewers when
    /// `options.queue` is set. Stops with [`PlanError::Cancelled`] when
    /// `cancel` is set.
    pub fn ask_blocking(
        &self,
        question: &str,
        options: &AskOptions,
        cancel: Arc<AtomicBool>,
        on_event: &mut dyn FnMut(RunEvent),
    ) -> Result<AskOutcome> {
        check_ask(question, options)?;
        let (rewrite, history) = match &options.session_id {
            Some(id) => self.follow_up(question, id)?,
            None => (None, Vec::new()),
        };
        self.run(options, cancel, on_event, &mut |executor, on| {
            executor.ask_turn(question, rewrite.clone(), &history, on)
        })
    }

    /// Continues run `run_id`, which ended as `needs_input`, with the
    /// asker's `reply` (`None` or blank: the agent proceeds on its best
    /// assumption). A run not continued within
    /// `agent.reply_timeout_seconds` is gone ([`SessionError::RunNotFound`]).
    ///
    /// [`SessionError::RunNotFound`]: crate::session::SessionError::RunNotFound
    pub fn reply_blocking(
        &self,
        run_id: &str,
        reply: Option<&str>,
        cancel: Arc<AtomicBool>,
        on_event: &mut dyn FnMut(RunEvent),
    ) -> Result<AskOutcome> {
        if let Some(r) = reply
            && r.chars().count() > MAX_REPLY_CHARS
        {
            return Err(Error::InvalidInput(format!(
                "the reply is longer than {MAX_REPLY_CHARS} characters"
            )));
        }
        let parked: ParkedRun = self.inner.sessions.take_run(run_id)?;
        let ParkedRun {
            state,
            options,
            question,
            rewrite,
        } = parked;
        let mut state = Some(state);
        self.run(&options, cancel, on_event, &mut |executor, on| {
            let state = state.take().ok_or(PlanError::Cancelled)?;
            let mut report = executor.resume(state, reply, on)?;
            report.question = question.clone();
            report.rewrite = rewrite.clone();
            Ok(report)
        })
    }

    /// Runs `go` with an executor for `options`, then parks a run that
    /// needs input, queues an escalation, and adds the turn to the session.
    fn run(
        &self,
        options: &AskOptions,
        cancel: Arc<AtomicBool>,
        on_event: &mut dyn FnMut(RunEvent),
        go: &mut RunWith<'_>,
    ) -> Result<AskOutcome> {
        let runs = &self.inner.runs;
        runs.in_flight.fetch_add(1, Ordering::Relaxed);
        let _in_flight = Decrement(&runs.in_flight);
        let config = self.scoring_config();
        let limit = options.limit.unwrap_or(config.tools.rag_search.limit);
        let executor = Executor::new(&self.inner.registry, &config, limit).with_cancel(cancel);
        let mut forward = |e: crate::exec::Event<'_>| {
            if let Some(event) = RunEvent::from_exec(&e) {
                on_event(event);
            }
        };
        let mut report = match go(&executor, &mut forward) {
            Ok(report) => report,
            Err(PlanError::Cancelled) => {
                runs.cancelled.fetch_add(1, Ordering::Relaxed);
                return Err(PlanError::Cancelled.into());
            }
            Err(e) => return Err(e.into()),
        };
        if options.escalate
            && !matches!(report.decision, Decision::Escalate | Decision::NeedsInput)
            && let Some(request) = executor.escalation_for_asker(&report)
        {
            on_event(RunEvent::Escalated {
                request: request.clone(),
            });
            report.escalation = Some(request);
            report.decision = Decision::Escalate;
        }
        crate::telemetry::decision(report.decision.as_str(), report.confidence);
        let review_id = if report.decision == Decision::Escalate && options.queue {
            let e = self.inner.queue.escalate(NewEscalation {
                report: &report,
                collection: &config.qdrant.collection,
                asker: &options.asker,
                allowed: (!options.reviewers.is_empty()).then(|| options.reviewers.clone()),
                timeout: None,
            })?;
            Some(e.id)
        } else {
            None
        };
        let run_id = match report.parked.take() {
            Some(state) => Some(self.inner.sessions.park_run(
                &ParkedRun {
                    state: *state,
                    options: options.clone(),
                    question: report.question.clone(),
                    rewrite: report.rewrite.clone(),
                },
                config.agent.reply_timeout_seconds,
            )?),
            None => None,
        };
        // A turn waiting for the asker is added once it is answered.
        if let (Some(id), None) = (&options.session_id, &run_id) {
            self.inner
                .sessions
                .append(id, &Turn::from_report(&report))?;
        }
        runs.finished.fetch_add(1, Ordering::Relaxed);
        let review_handle = review_id.map(|id| self.inner.queue.asker_handle(id));
        Ok(AskOutcome {
            status: RunStatus::of(report.decision),
            report,
            review_id,
            review_handle,
            session_id: options.session_id.clone(),
            run_id,
        })
    }

    /// `question` made standalone from session `id`'s last turns (by the
    /// language model when there is one, else by the rule; `None` when it
    /// stands alone), and those turns as (question, answer) for the agent.
    /// A missing or expired session is an error.
    fn follow_up(&self, question: &str, id: &str) -> Result<(Option<Rewrite>, History)> {
        let turns = self.inner.sessions.history(id)?;
        let prior: Vec<_> = turns.iter().map(Turn::prior).collect();
        let model = self.inner.registry.generator().filter(|g| g.can_plan());
        let rewrite = crate::followup::resolve(question, &prior, model.as_deref());
        let history = turns.into_iter().map(|t| (t.question, t.answer)).collect();
        Ok((rewrite, history))
    }

    /// Starts a conversation.
    pub fn create_session(&self) -> Result<Session> {
        Ok(self.inner.sessions.create()?)
    }

    /// Session `id` with its turns.
    pub fn session(&self, id: &str) -> Result<Session> {
        Ok(self.inner.sessions.get(id)?)
    }

    /// Ends session `id`.
    pub fn delete_session(&self, id: &str) -> Result<()> {
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
            &self.inner.queue,
            id,
            reviewer,
            hint,
        )
    }

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
        })
    }

    /// [`search_blocking`](Self::search_blocking) on tokio's blocking pool.
    pub async fn search(
        &self,
        query: impl Into<String>,
        limit: Option<usize>,
        filter: Option<PayloadFilter>,
    ) -> Result<Vec<Passage>> {
        let (this, query) = (self.clone(), query.into());
        blocking(move || this.search_blocking(&query, limit, filter.as_ref())).await
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
    /// cancels the run. Must be called within a tokio runtime.
    pub fn ask_stream(&self, question: impl Into<String>, options: AskOptions) -> RunStream {
        let question = question.into();
        self.stream(move |this, cancel, send| this.ask_blocking(&question, &options, cancel, send))
    }

    /// [`reply_blocking`](Self::reply_blocking) on tokio's blocking pool;
    /// dropping the future cancels the run.
    pub async fn reply(
        &self,
        run_id: impl Into<String>,
        reply: Option<String>,
    ) -> Result<AskOutcome> {
        let cancel = Arc::new(AtomicBool::new(false));
        let _guard = CancelOnDrop(cancel.clone());
        let (this, run_id) = (self.clone(), run_id.into());
        blocking(move || this.reply_blocking(&run_id, reply.as_deref(), cancel, &mut |_| {})).await
    }

    /// [`reply_blocking`](Self::reply_blocking) as a stream of run events
    /// (see [`ask_stream`](Self::ask_stream)).
    pub fn reply_stream(&self, run_id: impl Into<String>, reply: Option<String>) -> RunStream {
        let run_id = run_id.into();
        self.stream(move |this, cancel, send| {
            this.reply_blocking(&run_id, reply.as_deref(), cancel, send)
        })
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

    fn writer(&self) -> std::sync::MutexGuard<'_, ()> {
        // A panic in another writer leaves nothing half-done that the
        // lock protects (the manifest is written atomically): go on.
        self.inner
            .writer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

struct Decrement<'a>(&'a AtomicUsize);

impl Drop for Decrement<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Runs `f` on tokio's blocking pool.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Error::Server(format!("a worker task failed: {e}")))?
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
