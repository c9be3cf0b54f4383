//! The executor: runs a plan's steps through the tool registry, scores each
//! step, and decides what to do with the answer.
//!
//! An answer step is scored on its own factors together with those of the
//! steps it depends on (an answer is only as good as what it was drawn
//! from). When the run's confidence is below `notify`, the executor tries
//! one recovery — the same question with twice the passages — and keeps
//! the better run. Then the level decides: `silent` → answer, `notify` →
//! answer with a caveat, `confirm` or `escalate` → a question for a human
//! (`ask_user`), or a decline when the generator found nothing to answer
//! with or no human can be asked.

mod agent_run;
mod decision;
mod error;
mod report;
mod steps;

pub use self::decision::review_options;
pub use self::error::{ExecError, Result};
pub use self::report::{
    CONFIRM_OPTION_PREFIX, Decision, EarlierTurn, HumanReply, NOT_ANSWERED_OPTION, RunReport,
};

use crate::access::ReadScope;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use self::agent_run::forward;
use self::steps::{Recovery, with_focus};
use crate::agent::{AgentCall, AgentState, Clarifier};
use crate::confidence::{Level, Scorer};
use crate::config::{AgentConfig, ConfidenceConfig};
use crate::followup::Rewrite;
use crate::plan::{PlanOrigin, Planner, Step, hint_plan};
use crate::tools::{ToolRegistry, UserRequest};

/// One executed step (defined with the tools it records, which the agent
/// loop records too).
pub use crate::tools::StepRecord;

/// What a run reports as it goes.
#[derive(Debug)]
pub enum Event<'a> {
    /// A step is about to run.
    StepStarted {
        /// The step as planned (`$from` references not yet resolved).
        step: &'a Step,
    },
    /// A step finished (successfully or not) and was scored.
    StepFinished {
        /// Its record.
        record: &'a StepRecord,
    },
    /// The run's confidence is below `notify`: the wider-search recovery run
    /// starts.
    Recovering {
        /// The first run's confidence.
        confidence: f64,
    },
    /// The run is escalated: `ask_user` built a question for a human.
    Escalated {
        /// The question for the human.
        request: &'a UserRequest,
    },
    /// The agent's thought before acting.
    Think {
        /// The thought.
        text: &'a str,
    },
    /// The agent calls a tool.
    ToolCall {
        /// The call.
        call: &'a crate::llm::ToolCall,
    },
    /// A tool call's result, as the agent observed it.
    Observation {
        /// What came of the call.
        call: &'a AgentCall,
    },
    /// The agent's final answer, before it is scored.
    AgentAnswer {
        /// The answer text.
        text: &'a str,
    },
    /// The run is over, whatever its decision.
    Answered {
        /// The final report.
        report: &'a RunReport,
    },
}

/// Runs questions through the registry.
pub struct Executor<'a> {
    /// The tools the steps run through.
    pub registry: &'a ToolRegistry,
    /// Thresholds and aggregation of the steps' scores (`confidence`).
    pub confidence: &'a ConfidenceConfig,
    /// What scores each step (the knowledge base's, or a service's with a
    /// fit made while serving).
    pub scorer: &'a Scorer,
    /// Passages retrieved per question.
    pub limit: usize,
    /// Makes each question's plan (the default plan without a language model).
    pub planner: Planner,
    /// Set from anywhere to stop the run: the step in progress is abandoned
    /// within milliseconds and the run ends with [`ExecError::Cancelled`].
    pub cancel: Arc<AtomicBool>,
    /// The agent loop's model and budgets, with `planner.strategy: agent`
    /// and a generator that calls tools; `None`: plans.
    pub agent: Option<(Arc<dyn crate::llm::LlmClient>, AgentConfig)>,
    /// Who answers the agent's questions to the asker now (a terminal).
    pub clarifier: Option<Clarifier<'a>>,
    /// Each document's rating history (by path): an answer is scored with
    /// that of the documents it cites (`document_history`). Empty without
    /// ratings.
    pub document_history: Arc<HashMap<String, f32>>,
    /// What the asker may read: every search of the run finds nothing
    /// else ([`ReadScope::All`] by default: the local operator).
    pub scope: ReadScope,
}

struct Attempt {
    steps: Vec<StepRecord>,
    confidence: f64,
    level: Level,
}

impl<'a> Executor<'a> {
    /// An executor for `config`: its confidence settings, steps scored by
    /// `scorer` (usually [`KnowledgeBase::scorer`](crate::KnowledgeBase::scorer)),
    /// and a planner that asks the generator for plans when
    /// `planner.strategy` is `plan` and the generator is a language model.
    pub fn new(
        registry: &'a ToolRegistry,
        config: &'a crate::config::Config,
        scorer: &'a Scorer,
        limit: usize,
    ) -> Self {
        let llm = (config.planner.strategy == crate::config::Strategy::Plan)
            .then(|| registry.generator())
            .flatten();
        let agent = (config.planner.strategy == crate::config::Strategy::Agent)
            .then(|| registry.generator())
            .flatten();
        let agent = match agent {
            Some(llm) if llm.supports_tools() => Some((llm, config.agent.clone())),
            Some(llm) => {
                tracing::warn!(
                    generator = llm.name(),
                    "planner.strategy agent needs a language model that calls tools; running the default plan"
                );
                None
            }
            None => None,
        };
        Self {
            registry,
            confidence: &config.confidence,
            scorer,
            limit,
            planner: Planner::new(llm),
            cancel: Arc::new(AtomicBool::new(false)),
            scope: ReadScope::All,
            agent,
            clarifier: None,
            document_history: Arc::default(),
        }
    }

    /// This executor, scoring answers with the documents' rating history
    /// (`document_history`).
    pub fn with_document_history(mut self, history: Arc<HashMap<String, f32>>) -> Self {
        self.document_history = history;
        self
    }

    /// `factors` with the rating history of the documents in `cited`, when
    /// one has a history.
    fn with_history(&self, factors: &mut crate::confidence::Factors, cited: &[String]) {
        if let Some(h) = crate::confidence::document_history_factor(cited, &self.document_history) {
            factors.set(crate::confidence::Factor::DocumentHistory, h);
        }
    }

    /// This executor, putting the agent's questions to the asker through
    /// `clarifier` (the CLI's terminal prompt).
    pub fn with_clarifier(mut self, clarifier: Clarifier<'a>) -> Self {
        self.clarifier = Some(clarifier);
        self
    }

    /// This executor, searching only what `scope` may read.
    pub fn with_scope(mut self, scope: ReadScope) -> Self {
        self.scope = scope;
        self
    }

    /// This executor, stopped when `cancel` is set (a service sets it when
    /// its client goes away or the request times out).
    pub fn with_cancel(mut self, cancel: Arc<AtomicBool>) -> Self {
        self.cancel = cancel;
        self
    }

    fn cancelled(&self) -> Result<()> {
        match self.cancel.load(Ordering::Relaxed) {
            true => Err(ExecError::Cancelled),
            false => Ok(()),
        }
    }

    /// Answers `question` (non-interactively: an escalation is returned, not
    /// put to anyone).
    pub fn ask(&self, question: &str, on_event: &mut dyn FnMut(Event<'_>)) -> Result<RunReport> {
        self.ask_turn(question, None, &[], on_event)
    }

    /// Answers a turn of a conversation: `rewrite`, when given, is the
    /// standalone question retrieval and the answer work from; the report
    /// keeps `question` as asked and says how it was rewritten.
    /// `history` is the conversation so far (question, answer), which the
    /// agent reads.
    pub fn ask_turn(
        &self,
        question: &str,
        rewrite: Option<Rewrite>,
        history: &[(String, Option<String>)],
        on_event: &mut dyn FnMut(Event<'_>),
    ) -> Result<RunReport> {
        let run_as = rewrite.as_ref().map_or(question, |r| r.question.as_str());
        let asked = rewrite.is_some().then_some(question);
        let mut report = if let Some((llm, budget)) = &self.agent {
            let agent = self.agent(llm, budget);
            let outcome = agent.run(run_as, asked, history, &mut |e| forward(e, on_event));
            self.agent_report(run_as, outcome, on_event)?
        } else {
            // What the follow-up adds of its own must be found by the
            // searches (the agent works this out itself).
            let own = asked.and_then(crate::followup::focus);
            let focus = own.as_deref();
            let planned = self
                .planner
                .plan(run_as, self.limit, &self.registry.plannable());
            let plan = match focus {
                Some(f) => with_focus(planned.plan, f),
                None => planned.plan,
            };
            self.execute(
                run_as,
                plan,
                planned.origin,
                Recovery::Wider { focus },
                on_event,
            )?
        };
        report.question = question.to_string();
        report.rewrite = rewrite;
        Ok(report)
    }

    /// Goes on with a run that ended as `needs_input` ([`RunReport::parked`]),
    /// with the asker's reply (`None`: none came; the agent proceeds on its
    /// best assumption). The report's `question` is the question as run;
    /// the caller restores the question as asked.
    pub fn resume(
        &self,
        state: AgentState,
        reply: Option<&str>,
        on_event: &mut dyn FnMut(Event<'_>),
    ) -> Result<RunReport> {
        let Some((llm, budget)) = &self.agent else {
            return Err(ExecError::NotAnAgent);
        };
        let question = state.question.clone();
        let outcome = self
            .agent(llm, budget)
            .resume(state, reply, &mut |e| forward(e, on_event));
        self.agent_report(&question, outcome, on_event)
    }

    /// Answers `question` again with a reviewer's hint: a second search for
    /// the hint, and both searches' passages reach the answer. No recovery
    /// run (it would drop the hint).
    pub fn ask_with_hint(
        &self,
        question: &str,
        hint: &str,
        on_event: &mut dyn FnMut(Event<'_>),
    ) -> Result<RunReport> {
        let plan = hint_plan(question, hint, self.limit);
        let origin = PlanOrigin::Hint {
            hint: hint.to_string(),
        };
        self.execute(question, plan, origin, Recovery::None, on_event)
    }
}

#[cfg(test)]
mod tests;
