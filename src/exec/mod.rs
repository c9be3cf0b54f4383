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

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::agent::{
    Agent, AgentCall, AgentEvent, AgentOutcome, AgentState, AgentStop, AgentTrace, Clarifier,
};
use crate::confidence::{Contribution, Factors, Level, aggregate, failed_score, level, score_with};
use crate::config::AgentConfig;
use crate::config::{ConfidenceConfig, MAX_RAG_SEARCH_LIMIT};
use crate::followup::Rewrite;
use crate::plan::{Plan, PlanError, PlanOrigin, Planner, Step, default_plan, hint_plan, step_ref};
use crate::tools::{Answer, ToolOutput, ToolRegistry, ToolResult, UserRequest};

/// One executed step (defined with the tools it records, which the agent
/// loop records too).
pub use crate::tools::StepRecord;

/// The option that confirms the drafted answer starts with this.
pub const CONFIRM_OPTION_PREFIX: &str = "Confirm this answer: ";
/// The option saying the knowledge base does not answer the question.
pub const NOT_ANSWERED_OPTION: &str = "The knowledge base does not answer this";

/// A human's reply to an escalation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HumanReply {
    /// The 1-based number of one of the offered options.
    Option(usize),
    /// An answer in the human's own words.
    Text(String),
    /// No reply: the run stays escalated.
    Skip,
}

/// What the run does with its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Confident: the answer stands.
    Answer,
    /// Fairly confident: the answer, with a caveat.
    Caveat,
    /// Not confident: a human must answer or confirm (see `escalation`).
    Escalate,
    /// Nothing to answer with, or nobody to ask.
    Decline,
    /// The agent asked the asker a question the run cannot go on without
    /// (`clarification`); the reply continues it.
    NeedsInput,
}

impl Decision {
    /// The decision as the API spells it (`needs_input`).
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Answer => "answer",
            Decision::Caveat => "caveat",
            Decision::Escalate => "escalate",
            Decision::Decline => "decline",
            Decision::NeedsInput => "needs_input",
        }
    }
}

impl RunReport {
    /// The factors the run's last answer was scored on (`None` when no
    /// answer step finished): what calibration fits.
    pub fn answer_factors(&self) -> Option<&Factors> {
        self.steps
            .iter()
            .rev()
            .find(|s| s.result.success && matches!(s.result.output, ToolOutput::Answer(_)))
            .map(|s| &s.factors)
    }
}

/// The outcome of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RunReport {
    /// The question as asked.
    pub question: String,
    /// The question as run, when it was a follow-up rewritten to stand
    /// alone (see [`crate::followup`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rewrite: Option<Rewrite>,
    /// The answer (also when escalated: the draft a human may confirm).
    pub answer: Option<Answer>,
    /// The run's confidence in [0, 1]: its answer steps' scores aggregated
    /// (0 when a step failed or the plan did not finish).
    pub confidence: f64,
    /// The level of `confidence` under `confidence.thresholds`.
    pub level: Level,
    /// What the run does with its answer.
    pub decision: Decision,
    /// The question put to a human, when escalated.
    pub escalation: Option<UserRequest>,
    /// How the plan was made (default, the language model's, or the
    /// default after the model's failed).
    pub plan: PlanOrigin,
    /// Whether the recovery run was used.
    pub recovered: bool,
    /// Who made the final decision when a human did (`user`, a reviewer id).
    pub decided_by: Option<String>,
    /// The executed steps, in order (the recovery run's, when it was used).
    pub steps: Vec<StepRecord>,
    /// The agent loop's turns and why it stopped (`planner.strategy: agent`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<AgentTrace>,
    /// The question the agent put to the asker, when the run needs input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clarification: Option<UserRequest>,
    /// What a `needs_input` run goes on from (kept by the service, never
    /// sent).
    #[serde(skip)]
    pub parked: Option<Box<AgentState>>,
}

impl RunReport {
    /// Applies a human's reply to an escalated run: confirming the draft
    /// answers with it, "not answered" declines, free text becomes the
    /// answer (with no citation: the human is the source). Returns an error
    /// message for a reply that does not fit (no escalation, bad number).
    pub fn apply_reply(
        &mut self,
        reply: &HumanReply,
        who: &str,
    ) -> std::result::Result<(), String> {
        let Some(request) = &self.escalation else {
            return Err("this run was not escalated".into());
        };
        match reply {
            HumanReply::Skip => return Ok(()),
            HumanReply::Option(n) => {
                let option = n
                    .checked_sub(1)
                    .and_then(|i| request.options.get(i))
                    .ok_or_else(|| {
                        format!("choose a number from 1 to {}", request.options.len())
                    })?;
                if option.starts_with(CONFIRM_OPTION_PREFIX) {
                    self.decision = Decision::Answer;
                } else if option == NOT_ANSWERED_OPTION {
                    self.decision = Decision::Decline;
                } else {
                    return Err(format!("option {n} is not one GRACE can act on"));
                }
            }
            HumanReply::Text(text) => {
                let text = text.trim();
                if crate::text::is_blank(text) {
                    return Err("the answer is empty".into());
                }
                self.answer = Some(Answer {
                    text: text.to_string(),
                    citations: Vec::new(),
                    abstained: false,
                    self_confidence: None,
                    usage: Default::default(),
                    generator: format!("human:{who}"),
                });
                self.decision = Decision::Answer;
            }
        }
        self.decided_by = Some(who.to_string());
        Ok(())
    }
}

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
    /// Weights, thresholds and aggregation that score the steps
    /// (`confidence`).
    pub confidence: &'a ConfidenceConfig,
    /// Passages retrieved per question.
    pub limit: usize,
    /// Makes each question's plan (the default plan without a language model).
    pub planner: Planner,
    /// Set from anywhere to stop the run: the step in progress is abandoned
    /// within milliseconds and the run ends with [`PlanError::Cancelled`].
    pub cancel: Arc<AtomicBool>,
    /// The agent loop's model and budgets, with `planner.strategy: agent`
    /// and a generator that calls tools; `None`: plans.
    pub agent: Option<(Arc<dyn crate::llm::LlmClient>, AgentConfig)>,
    /// Who answers the agent's questions to the asker now (a terminal).
    pub clarifier: Option<Clarifier<'a>>,
}

struct Attempt {
    steps: Vec<StepRecord>,
    confidence: f64,
    level: Level,
}

impl<'a> Executor<'a> {
    /// An executor for `config`: its confidence settings, and a planner
    /// that asks the generator for plans when `planner.strategy` is `plan`
    /// and the generator is a language model.
    pub fn new(
        registry: &'a ToolRegistry,
        config: &'a crate::config::Config,
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
            limit,
            planner: Planner::new(llm),
            cancel: Arc::new(AtomicBool::new(false)),
            agent,
            clarifier: None,
        }
    }

    /// This executor, putting the agent's questions to the asker through
    /// `clarifier` (the CLI's terminal prompt).
    pub fn with_clarifier(mut self, clarifier: Clarifier<'a>) -> Self {
        self.clarifier = Some(clarifier);
        self
    }

    /// This executor, stopped when `cancel` is set (a service sets it when
    /// its client goes away or the request times out).
    pub fn with_cancel(mut self, cancel: Arc<AtomicBool>) -> Self {
        self.cancel = cancel;
        self
    }

    fn cancelled(&self) -> std::result::Result<(), PlanError> {
        match self.cancel.load(Ordering::Relaxed) {
            true => Err(PlanError::Cancelled),
            false => Ok(()),
        }
    }

    /// Answers `question` (non-interactively: an escalation is returned, not
    /// put to anyone).
    pub fn ask(
        &self,
        question: &str,
        on_event: &mut dyn FnMut(Event<'_>),
    ) -> Result<RunReport, PlanError> {
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
    ) -> Result<RunReport, PlanError> {
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
    ) -> Result<RunReport, PlanError> {
        let Some((llm, budget)) = &self.agent else {
            return Err(PlanError::NotAnAgent);
        };
        let question = state.question.clone();
        let outcome = self
            .agent(llm, budget)
            .resume(state, reply, &mut |e| forward(e, on_event));
        self.agent_report(&question, outcome, on_event)
    }

    fn agent<'b>(
        &'b self,
        llm: &Arc<dyn crate::llm::LlmClient>,
        budget: &'b AgentConfig,
    ) -> Agent<'b> {
        Agent {
            registry: self.registry,
            llm: llm.clone(),
            budget,
            confidence: self.confidence,
            limit: self.limit,
            cancel: &self.cancel,
            clarifier: self.clarifier,
        }
    }

    /// The report of an agent run: its answer scored and decided on as a
    /// plan's is; a budget, safety or failure stop escalated with what was
    /// found; a blocking question to the asker as `needs_input`.
    fn agent_report(
        &self,
        question: &str,
        outcome: AgentOutcome,
        on_event: &mut dyn FnMut(Event<'_>),
    ) -> Result<RunReport, PlanError> {
        let AgentOutcome {
            mut state,
            answer,
            trace,
        } = outcome;
        if trace.stop == AgentStop::Cancelled {
            return Err(PlanError::Cancelled);
        }
        let mut steps = std::mem::take(&mut state.steps);
        let thresholds = &self.confidence.thresholds;
        let mut report = RunReport {
            question: question.to_string(),
            rewrite: None,
            answer: None,
            confidence: 0.0,
            level: level(0.0, thresholds),
            decision: Decision::Escalate,
            escalation: None,
            plan: PlanOrigin::Agent {
                generator: trace.model.clone(),
            },
            recovered: false,
            decided_by: None,
            steps: Vec::new(),
            agent: None,
            clarification: None,
            parked: None,
        };
        let searches = steps.iter().filter(|s| s.action == "rag_search").count();
        let best = steps
            .iter()
            .filter(|s| s.action == "rag_search" && s.result.success)
            .map(|s| s.confidence.score)
            .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))));
        let found = format!(
            "{searches} search(es), best search confidence {}",
            best.map_or("-".into(), |b| format!("{b:.2}"))
        );
        let reason = match &trace.stop {
            AgentStop::NeedsInput => {
                report.decision = Decision::NeedsInput;
                report.clarification = state.clarification.clone();
                // The parked state keeps its steps: the resumed run goes on
                // from them (numbering, the evidence fallback, the report).
                state.steps = steps.clone();
                report.steps = steps;
                report.agent = Some(trace);
                report.parked = Some(Box::new(state));
                on_event(Event::Answered { report: &report });
                return Ok(report);
            }
            AgentStop::Final => match answer {
                Some(scored) => {
                    report.confidence = scored.score.score;
                    report.level = level(scored.score.score, thresholds);
                    let abstained = scored.answer.abstained;
                    let sources = scored
                        .answer
                        .citations
                        .iter()
                        .filter_map(|c| c.source.clone())
                        .collect();
                    let result = ToolResult::ok(
                        ToolOutput::Answer(scored.answer.clone()),
                        sources,
                        scored.factors.clone(),
                    );
                    steps.push(answer_step(question, result, scored.factors, scored.score));
                    report.answer = Some(scored.answer);
                    report.decision = decide(report.level, abstained, false);
                    format!(
                        "confidence {:.2} is below {:.2} (notify); the agent answered after {found}",
                        report.confidence, thresholds.notify
                    )
                }
                None => format!("the agent's answer could not be scored; {found}"),
            },
            stop => {
                let why = match stop {
                    AgentStop::MaxSteps => format!(
                        "the agent's budget ran out (agent.max_steps: {} turns)",
                        self.agent.as_ref().map_or(0, |(_, b)| b.max_steps)
                    ),
                    AgentStop::MaxTokens => format!(
                        "the agent's budget ran out (agent.max_tokens: {} tokens used)",
                        trace.usage.input_tokens + trace.usage.output_tokens
                    ),
                    AgentStop::MaxSeconds => format!(
                        "the agent's budget ran out (agent.max_seconds: {:.0} s)",
                        trace.seconds
                    ),
                    AgentStop::Length => "the model's reply was cut off by its token limit twice \
                        (raise llm.<provider>.max_output_tokens)"
                        .to_string(),
                    AgentStop::Safety => "the model stopped its reply for safety".to_string(),
                    AgentStop::ModelFailed(e) => format!("the model failed: {e}"),
                    _ => "the agent stopped".to_string(),
                };
                if !stop.is_budget() {
                    // Not the knowledge base's fault: a failed step, so a
                    // human is asked rather than the question declined.
                    let error = crate::tools::ToolError::new(
                        "agent",
                        crate::tools::ToolErrorKind::Failed,
                        why.clone(),
                    );
                    let result = ToolResult::failed(&error, Vec::new());
                    steps.push(answer_step(
                        question,
                        result,
                        Factors::default(),
                        failed_score(),
                    ));
                }
                format!("{why}; it found {found}")
            }
        };
        if report.decision == Decision::Escalate {
            match self.escalation(question, reason, report.answer.as_ref()) {
                Some(request) => {
                    on_event(Event::Escalated { request: &request });
                    report.escalation = Some(request);
                }
                None => report.decision = Decision::Decline,
            }
        }
        report.steps = steps;
        report.agent = Some(trace);
        on_event(Event::Answered { report: &report });
        Ok(report)
    }

    /// Answers `question` again with a reviewer's hint: a second search for
    /// the hint, and both searches' passages reach the answer. No recovery
    /// run (it would drop the hint).
    pub fn ask_with_hint(
        &self,
        question: &str,
        hint: &str,
        on_event: &mut dyn FnMut(Event<'_>),
    ) -> Result<RunReport, PlanError> {
        let plan = hint_plan(question, hint, self.limit);
        let origin = PlanOrigin::Hint {
            hint: hint.to_string(),
        };
        self.execute(question, plan, origin, Recovery::None, on_event)
    }

    /// Runs `plan`, then, as `recovery` says, one wider search when its
    /// confidence is below `notify`, keeping the better run.
    fn execute(
        &self,
        question: &str,
        plan: Plan,
        origin: PlanOrigin,
        recovery: Recovery<'_>,
        on_event: &mut dyn FnMut(Event<'_>),
    ) -> Result<RunReport, PlanError> {
        // A plan may name what the planner and agent are offered.
        let offered: Vec<String> = self
            .registry
            .catalogue(crate::config::Caller::Agent)
            .into_iter()
            .map(|t| t.name)
            .collect();
        let enabled: Vec<&str> = offered.iter().map(String::as_str).collect();
        plan.validate(&enabled)?;
        let mut best = self.run(&plan, on_event);
        self.cancelled()?;
        let mut recovered = false;
        if let (Recovery::Wider { focus }, true) = (recovery, best.level < Level::Notify) {
            on_event(Event::Recovering {
                confidence: best.confidence,
            });
            // Twice the passages, at least 10, never past what a search may return.
            let mut wider = default_plan(
                question,
                self.limit.saturating_mul(2).clamp(10, MAX_RAG_SEARCH_LIMIT),
            );
            if let Some(focus) = focus {
                wider = with_focus(wider, focus);
            }
            wider.validate(&enabled)?;
            let second = self.run(&wider, on_event);
            self.cancelled()?;
            if second.confidence > best.confidence {
                best = second;
                recovered = true;
            }
        }

        let answer = best
            .steps
            .iter()
            .rev()
            .find_map(|s| match &s.result.output {
                ToolOutput::Answer(a) => Some(a.clone()),
                _ => None,
            });
        let abstained = answer.as_ref().is_none_or(|a| a.abstained);
        let failed = best.steps.iter().any(|s| !s.result.success);
        let mut decision = decide(best.level, abstained, failed);
        let mut escalation = None;
        if decision == Decision::Escalate {
            match self.escalate(question, &best, answer.as_ref()) {
                Some(request) => {
                    on_event(Event::Escalated { request: &request });
                    escalation = Some(request);
                }
                None => decision = Decision::Decline,
            }
        }
        let report = RunReport {
            question: question.to_string(),
            rewrite: None,
            answer,
            confidence: best.confidence,
            level: best.level,
            decision,
            escalation,
            plan: origin,
            recovered,
            decided_by: None,
            steps: best.steps,
            agent: None,
            clarification: None,
            parked: None,
        };
        on_event(Event::Answered { report: &report });
        Ok(report)
    }

    fn run(&self, plan: &Plan, on_event: &mut dyn FnMut(Event<'_>)) -> Attempt {
        let mut steps: Vec<StepRecord> = Vec::new();
        for step in &plan.steps {
            if self.cancel.load(Ordering::Relaxed) {
                break;
            }
            on_event(Event::StepStarted { step });
            let input = resolve(&step.input, &steps);
            // A plan's timeout (a model may write 1e20) is clamped by the
            // registry to the tool's own; here it only must not overflow.
            let timeout = step.timeout.map(|t| {
                std::time::Duration::try_from_secs_f64(t).unwrap_or(std::time::Duration::MAX)
            });
            let mut result = self
                .registry
                .call_until(&step.action, &input, timeout, &self.cancel);
            if let (false, Some(fallback)) = (result.success, &step.fallback) {
                tracing::info!(step = %step.id, %fallback, error = ?result.error, "step failed; trying its fallback");
                let first_error = result.error.clone();
                // The fallback is another tool: its own policy applies.
                result = self
                    .registry
                    .call_until(fallback, &input, None, &self.cancel);
                result.suggestions.push(format!(
                    "`{}` failed ({}); this is the result of its fallback `{fallback}`",
                    step.action,
                    first_error.as_deref().unwrap_or("unknown error")
                ));
            }
            // An answer is scored together with what it was drawn from.
            let mut factors = Factors::default();
            for dep in &step.depends_on {
                if let Some(d) = steps.iter().find(|s| &s.id == dep) {
                    factors.merge(&d.result.factors);
                }
            }
            factors.merge(&result.factors);
            let confidence = if result.success {
                score_with(&factors, self.confidence)
            } else {
                failed_score()
            };
            steps.push(StepRecord {
                id: step.id.clone(),
                action: step.action.clone(),
                input,
                result,
                factors,
                confidence,
            });
            if let Some(record) = steps.last() {
                on_event(Event::StepFinished { record });
            }
            if steps.last().is_some_and(|s| !s.result.success) {
                break;
            }
        }
        // The run's confidence is that of its answers: an answer step is
        // scored with the evidence of the steps it used, so counting those
        // steps again would only dilute it.
        let scores: Vec<f64> = steps
            .iter()
            .filter(|s| matches!(s.result.output, ToolOutput::Answer(_)))
            .map(|s| s.confidence.score)
            .collect();
        let complete = steps.len() == plan.steps.len()
            && steps.iter().all(|s| s.result.success)
            && !scores.is_empty();
        let confidence = if complete {
            aggregate(&scores, self.confidence.aggregation)
        } else {
            0.0
        };
        Attempt {
            steps,
            confidence,
            level: level(confidence, &self.confidence.thresholds),
        }
    }

    /// Builds the question for a human through `ask_user`, if enabled.
    fn escalate(
        &self,
        question: &str,
        attempt: &Attempt,
        answer: Option<&Answer>,
    ) -> Option<UserRequest> {
        self.escalation(
            question,
            reason(attempt, &self.confidence.thresholds),
            answer,
        )
    }

    /// Puts a finished run to a person because the asker asked for one
    /// (`AskOptions::escalate`), whatever it decided: its answer becomes the
    /// reviewer's draft. `None` when `ask_user` is disabled.
    pub fn escalation_for_asker(&self, report: &RunReport) -> Option<UserRequest> {
        let reason = format!(
            "the asker asked for a person (GRACE decided {} at confidence {:.2})",
            report.decision.as_str(),
            report.confidence
        );
        self.escalation(&report.question, reason, report.answer.as_ref())
    }

    /// The question for a reviewer, with `reason`, through `ask_user`.
    fn escalation(
        &self,
        question: &str,
        reason: String,
        answer: Option<&Answer>,
    ) -> Option<UserRequest> {
        self.registry.get("ask_user")?;
        let options = review_options(answer);
        let input = json!({
            "question": question,
            "reason": reason,
            "options": options,
            "urgency": "blocking",
        });
        match self.registry.call("ask_user", &input).output {
            ToolOutput::UserRequest(r) => Some(r),
            _ => None,
        }
    }
}

/// Whether a weak run gets a second, wider search.
#[derive(Debug, Clone, Copy)]
enum Recovery<'a> {
    /// No (a reviewer's hint: a wider search would drop it).
    None,
    /// Twice the passages; `focus` is the follow-up as typed when the
    /// question is its rewrite (the wider search carries it too).
    Wider { focus: Option<&'a str> },
}

/// `plan` with `focus` (a follow-up as typed) on each of its searches, so
/// that they report how much of the follow-up's own words they found.
fn with_focus(mut plan: Plan, focus: &str) -> Plan {
    for step in plan.steps.iter_mut().filter(|s| s.action == "rag_search") {
        if let Value::Object(input) = &mut step.input {
            input.insert("focus".into(), json!(focus));
        }
    }
    plan
}

/// The options offered to a human: confirm the draft (when there is one),
/// or say the knowledge base does not answer the question.
pub fn review_options(draft: Option<&Answer>) -> Vec<String> {
    let mut options = Vec::new();
    if let Some(a) = draft.filter(|a| !a.abstained) {
        options.push(format!("{CONFIRM_OPTION_PREFIX}{}", a.text));
    }
    options.push(NOT_ANSWERED_OPTION.to_string());
    options
}

/// The agent's answer (or its failure to give one) as the run's last step.
fn answer_step(
    question: &str,
    result: ToolResult,
    factors: Factors,
    confidence: crate::confidence::Score,
) -> StepRecord {
    StepRecord {
        id: "answer".into(),
        action: "agent".into(),
        input: json!({"question": question}),
        result,
        factors,
        confidence,
    }
}

/// What a run does with an answer at `level`: answer, with a caveat,
/// escalate, or decline when the generator found nothing to answer with.
/// A failed step (a generator that is down) says nothing about the
/// knowledge base: a human may still answer, so that escalates.
fn decide(level: Level, abstained: bool, failed: bool) -> Decision {
    match level {
        Level::Silent => Decision::Answer,
        Level::Notify => Decision::Caveat,
        Level::Escalate if abstained && !failed => Decision::Decline,
        Level::Confirm | Level::Escalate => Decision::Escalate,
    }
}

/// An agent event as a run event.
fn forward(e: AgentEvent<'_>, on_event: &mut dyn FnMut(Event<'_>)) {
    on_event(match e {
        AgentEvent::Think { text } => Event::Think { text },
        AgentEvent::ToolCall { call } => Event::ToolCall { call },
        AgentEvent::Observation { call } => Event::Observation { call },
        AgentEvent::Answer { text } => Event::AgentAnswer { text },
    })
}

/// Why a run is escalated: its confidence against the threshold and the
/// factors that pulled the last step down most.
fn reason(attempt: &Attempt, thresholds: &crate::config::Thresholds) -> String {
    let mut text = format!(
        "confidence {:.2} is below {:.2} (notify)",
        attempt.confidence, thresholds.notify
    );
    if let Some(last) = attempt.steps.last() {
        if !last.result.success {
            text.push_str(&format!(
                "; step `{}` failed: {}",
                last.id,
                last.result.error.as_deref().unwrap_or("unknown error")
            ));
        }
        // What each factor cost: a positive weight's unused room
        // (weight * (1 - feature)), a negative weight's penalty.
        let shortfall = |c: &Contribution| {
            if c.weight > 0.0 {
                c.weight * (1.0 - c.feature.min(1.0))
            } else {
                -c.term
            }
        };
        let mut weakest: Vec<&Contribution> = last
            .confidence
            .contributions
            .iter()
            .filter(|c| shortfall(c) > 0.0)
            .collect();
        weakest.sort_by(|a, b| shortfall(b).total_cmp(&shortfall(a)));
        let parts: Vec<String> = weakest
            .iter()
            .take(3)
            .map(|c| format!("{:?} {:.2} (weight {:.2})", c.factor, c.value, c.weight))
            .collect();
        if !parts.is_empty() {
            text.push_str(&format!("; weakest factors: {}", parts.join(", ")));
        }
    }
    text
}

/// Replaces every `{"$from": id}` in `input` by the output of step `id`.
fn resolve(input: &Value, done: &[StepRecord]) -> Value {
    if let Some(id) = step_ref(input) {
        return done
            .iter()
            .find(|s| s.id == id)
            .map(|s| output_value(&s.result.output))
            .unwrap_or(Value::Null);
    }
    match input {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), resolve(v, done)))
                .collect(),
        ),
        // A list of references concatenates their outputs (the passages of
        // several searches become one list of sources, each once).
        Value::Array(items) => {
            let mut out: Vec<Value> = Vec::new();
            for item in items {
                match (step_ref(item), resolve(item, done)) {
                    (Some(_), Value::Array(parts)) => {
                        for p in parts {
                            if !out.contains(&p) {
                                out.push(p);
                            }
                        }
                    }
                    (_, v) => out.push(v),
                }
            }
            Value::Array(out)
        }
        other => other.clone(),
    }
}

/// A step's output as the next step's input: passages as `reasoning`
/// sources, anything else as its JSON.
fn output_value(output: &ToolOutput) -> Value {
    match output {
        ToolOutput::Passages(passages) => Value::Array(
            passages
                .iter()
                .map(|p| {
                    let mut v = json!({"text": p.text, "source": p.source, "section": p.section});
                    if let Some(page) = p.page {
                        v["page"] = json!(page);
                    }
                    v
                })
                .collect(),
        ),
        ToolOutput::Answer(a) => json!({"text": a.text, "abstained": a.abstained}),
        other => serde_json::to_value(other).unwrap_or(Value::Null),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::Urgency;

    #[test]
    fn a_decision_reads_as_the_api_spells_it() {
        for d in [
            Decision::Answer,
            Decision::Caveat,
            Decision::Escalate,
            Decision::Decline,
            Decision::NeedsInput,
        ] {
            assert_eq!(serde_json::to_value(d).unwrap(), d.as_str());
        }
    }

    fn escalated() -> RunReport {
        RunReport {
            question: "q?".into(),
            rewrite: None,
            answer: Some(Answer {
                text: "draft [1]".into(),
                citations: Vec::new(),
                abstained: false,
                self_confidence: None,
                usage: Default::default(),
                generator: "extractive".into(),
            }),
            confidence: 0.5,
            level: Level::Confirm,
            decision: Decision::Escalate,
            plan: PlanOrigin::Default,
            escalation: Some(UserRequest {
                question: "q?".into(),
                reason: "r".into(),
                options: vec![
                    format!("{CONFIRM_OPTION_PREFIX}draft [1]"),
                    NOT_ANSWERED_OPTION.into(),
                ],
                urgency: Urgency::Blocking,
                awaiting_response: true,
            }),
            recovered: false,
            decided_by: None,
            steps: Vec::new(),
            agent: None,
            clarification: None,
            parked: None,
        }
    }

    #[test]
    fn human_replies_decide_an_escalated_run() {
        let mut r = escalated();
        r.apply_reply(&HumanReply::Option(1), "user").unwrap();
        assert_eq!(
            (r.decision, r.decided_by.as_deref()),
            (Decision::Answer, Some("user"))
        );
        assert_eq!(r.answer.as_ref().unwrap().text, "draft [1]");

        let mut r = escalated();
        r.apply_reply(&HumanReply::Option(2), "user").unwrap();
        assert_eq!(r.decision, Decision::Decline);

        let mut r = escalated();
        r.apply_reply(&HumanReply::Text("  Use orbit rollback.  ".into()), "alice")
            .unwrap();
        let a = r.answer.as_ref().unwrap();
        assert_eq!(
            (a.text.as_str(), a.generator.as_str()),
            ("Use orbit rollback.", "human:alice")
        );
        assert_eq!(r.decision, Decision::Answer);

        let mut r = escalated();
        r.apply_reply(&HumanReply::Skip, "user").unwrap();
        assert_eq!(
            (r.decision, r.decided_by.clone()),
            (Decision::Escalate, None)
        );
        assert!(r.apply_reply(&HumanReply::Option(3), "user").is_err());
        assert!(
            r.apply_reply(&HumanReply::Text(" ".into()), "user")
                .is_err()
        );
        r.escalation = None;
        assert!(r.apply_reply(&HumanReply::Option(1), "user").is_err());
    }
}
