//! Running an ask, or a reply that continues a run: the executor, then
//! what the outcome calls for (park it, queue its escalation, add the turn
//! to its session).

use crate::access::ReadScope;
use crate::audit::{Action, Record};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use serde::{Deserialize, Serialize};

use super::Grace;
use super::ask::{AskOptions, AskOutcome, RunStatus, WhileWaiting, check_ask, check_reply};
use super::events::RunEvent;
use crate::error::{Error, Result};
use crate::exec::{Decision, EarlierTurn, ExecError, Executor, RunReport};
use crate::followup::Rewrite;
use crate::review::NewEscalation;
use crate::session::Turn;

/// What [`Grace::run`] runs: the executor, and where its events go.
type RunWith<'a> = dyn FnMut(&Executor<'_>, &mut dyn FnMut(crate::exec::Event<'_>)) -> crate::exec::Result<RunReport>
    + 'a;

/// A conversation's last turns: (question, answer).
type History = Vec<(String, Option<String>)>;

/// A run waiting for the asker's reply, as kept in the session database.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct ParkedRun {
    state: crate::agent::AgentState,
    options: AskOptions,
    question: String,
    rewrite: Option<Rewrite>,
}

impl Grace {
    /// Answers `question`; an escalated run is queued for reviewers when
    /// `options.queue` is set. Stops with [`ExecError::Cancelled`] when
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
            Some(id) => {
                self.inner
                    .sessions
                    .check_owner(id, options.scope.principal())?;
                self.follow_up(question, id)?
            }
            None => (None, Vec::new()),
        };
        self.run(options, None, cancel, on_event, &mut |executor, on| {
            let mut report = executor.ask_turn(question, rewrite.clone(), &history, on)?;
            report.conversation = history
                .iter()
                .map(|(question, answer)| EarlierTurn {
                    question: question.clone(),
                    answer: answer.clone(),
                })
                .collect();
            Ok(report)
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
        self.reply_blocking_as(run_id, reply, &ReadScope::All, cancel, on_event)
    }

    /// [`reply_blocking`](Self::reply_blocking) by the caller `scope`
    /// says: a principal continues only its own runs (another's is
    /// [`SessionError::RunNotFound`], and stays for its asker); the run
    /// goes on with its asker's scope.
    ///
    /// [`SessionError::RunNotFound`]: crate::session::SessionError::RunNotFound
    pub fn reply_blocking_as(
        &self,
        run_id: &str,
        reply: Option<&str>,
        scope: &ReadScope,
        cancel: Arc<AtomicBool>,
        on_event: &mut dyn FnMut(RunEvent),
    ) -> Result<AskOutcome> {
        check_reply(reply)?;
        // Only the run's asker continues it (the operator and a service
        // may continue any): another principal's is not found.
        let parked: ParkedRun = self.inner.sessions.take_run(run_id, |p: &ParkedRun| {
            *scope == ReadScope::All || p.options.scope.principal() == scope.principal()
        })?;
        let ParkedRun {
            state,
            options,
            question,
            rewrite,
        } = parked;
        let mut state = Some(state);
        self.run(&options, None, cancel, on_event, &mut |executor, on| {
            let state = state.take().ok_or(ExecError::Cancelled)?;
            let mut report = executor.resume(state, reply, on)?;
            report.question = question.clone();
            report.rewrite = rewrite.clone();
            Ok(report)
        })
    }

    /// Runs `go` with an executor for `options`, then parks a run that
    /// needs input, queues an escalation, and adds the turn to the session.
    /// With `recheck` (why its asker rated an earlier answer wrong), the
    /// run is put to a person whatever it decides, and not recorded again.
    pub(super) fn run(
        &self,
        options: &AskOptions,
        recheck: Option<&str>,
        cancel: Arc<AtomicBool>,
        on_event: &mut dyn FnMut(RunEvent),
        go: &mut RunWith<'_>,
    ) -> Result<AskOutcome> {
        let runs = &self.inner.runs;
        runs.in_flight.fetch_add(1, Ordering::Relaxed);
        let _in_flight = Decrement(&runs.in_flight);
        let config = self.config();
        let scorer = self.scorer();
        let limit = options.limit.unwrap_or(config.tools.rag_search.limit);
        let executor = Executor::new(&self.inner.registry, config, &scorer, limit)
            .with_cancel(cancel)
            .with_scope(options.scope.clone())
            .with_document_history(self.document_history());
        let mut forward = |e: crate::exec::Event<'_>| {
            if let Some(event) = RunEvent::from_exec(&e) {
                on_event(event);
            }
        };
        let mut report = match go(&executor, &mut forward) {
            Ok(report) => report,
            Err(ExecError::Cancelled) => {
                runs.cancelled.fetch_add(1, Ordering::Relaxed);
                return Err(ExecError::Cancelled.into());
            }
            Err(e) => return Err(e.into()),
        };
        let forced = match recheck {
            Some(why) => Some(why),
            None => options.escalate.then_some("the asker asked for a person"),
        };
        if let Some(why) = forced
            && !matches!(report.decision, Decision::Escalate | Decision::NeedsInput)
            && let Some(request) = executor.escalation_for_asker(&report, why)
        {
            on_event(RunEvent::Escalated {
                request: request.clone(),
            });
            report.escalation = Some(request);
            report.decision = Decision::Escalate;
        }
        // Only a reviewer reads the conversation back.
        if report.decision != Decision::Escalate {
            report.conversation.clear();
        }
        crate::telemetry::decision(report.decision.as_str(), report.confidence);
        self.inner.audit.record(
            &Record::new(options.scope.label(), self.config().kb_name(), Action::Ask)
                .decision(report.decision.as_str())
                .documents(report.cited_sources().iter().map(String::as_str)),
        );
        let review_id = if report.decision == Decision::Escalate && options.queue {
            Some(self.queue_escalation(&report, options, config)?)
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
        let answer_id = match (&run_id, recheck) {
            (None, None) => self.record(&report, config, &scorer, options, review_id),
            _ => None,
        };
        runs.finished.fetch_add(1, Ordering::Relaxed);
        let review_handle = review_id.map(|id| self.inner.queue.asker_handle(id));
        // Queued and remembered as written (Markdown); returned as
        // `answer.format` says (a terminal's front door formats its own).
        let report = match config.answer.format {
            Some(format) => report.formatted(format),
            None => report,
        };
        let while_waiting =
            review_id.map(|_| WhileWaiting::of(&report, self.inner.queue.typical_wait()));
        Ok(AskOutcome {
            status: RunStatus::of(report.decision),
            report,
            review_id,
            review_handle,
            session_id: options.session_id.clone(),
            run_id,
            answer_id,
            while_waiting,
        })
    }

    /// Puts escalated run `report`, asked with `queue: false` (the asker
    /// chose first: `grace chat` offers to see the draft, rephrase or ask
    /// a person), in the review queue as `options` say: its id, and what
    /// the asker has while a person checks. `answer_id` (the outcome's)
    /// links the recorded run to the escalation, so that the reviewer's
    /// verdict labels it.
    pub fn queue_escalation_blocking(
        &self,
        report: &RunReport,
        options: &AskOptions,
        answer_id: Option<&str>,
    ) -> Result<(i64, WhileWaiting)> {
        if report.decision != Decision::Escalate {
            return Err(Error::InvalidInput(format!(
                "only an escalated run goes to a person; this one decided {}",
                report.decision.as_str()
            )));
        }
        let id = self.queue_escalation(report, options, self.config())?;
        if let Some(answer_id) = answer_id {
            self.inner.feedback.link_review(answer_id, id)?;
        }
        Ok((
            id,
            WhileWaiting::of(report, self.inner.queue.typical_wait()),
        ))
    }

    /// Queues escalated `report` for the reviewers `options` allow; a near
    /// repeat of an open escalation joins it. Its id.
    fn queue_escalation(
        &self,
        report: &RunReport,
        options: &AskOptions,
        config: &crate::config::Config,
    ) -> Result<i64> {
        // What joins a near repeat to an open escalation; the search
        // embedded the question already, so the cache answers.
        let vector = self
            .inner
            .kb
            .embedder()
            .embed_query(report.question_as_run())
            .map_err(
                |e| tracing::warn!(error = %e, "the escalation is not compared with open ones"),
            )
            .ok();
        let e = self.inner.queue.escalate(NewEscalation {
            vector: vector.as_deref(),
            report,
            collection: &config.collection.name,
            asker: &options.asker,
            allowed: (!options.reviewers.is_empty()).then(|| options.reviewers.clone()),
            timeout: None,
        })?;
        Ok(e.id)
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
}

struct Decrement<'a>(&'a AtomicUsize);

impl Drop for Decrement<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}
