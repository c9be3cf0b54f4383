//! An agent loop's run (`planner.strategy: agent`): the loop started or
//! resumed, and its outcome scored and decided on as a plan's is.

use std::sync::Arc;

use serde_json::json;

use super::decision::decide;
use super::report::{Decision, RunReport};
use super::{Event, Executor};
use super::{ExecError, Result};
use crate::agent::{Agent, AgentEvent, AgentOutcome, AgentStop};
use crate::confidence::{Factors, failed_score, level};
use crate::config::AgentConfig;
use crate::plan::PlanOrigin;
use crate::tools::RagSearch;
use crate::tools::{StepRecord, ToolOutput, ToolResult};

impl Executor<'_> {
    pub(super) fn agent<'b>(
        &'b self,
        llm: &Arc<dyn crate::llm::LlmClient>,
        budget: &'b AgentConfig,
    ) -> Agent<'b> {
        Agent {
            registry: self.registry,
            llm: llm.clone(),
            budget,
            confidence: self.confidence,
            scorer: self.scorer,
            limit: self.limit,
            cancel: &self.cancel,
            scope: &self.scope,
            clarifier: self.clarifier,
        }
    }

    /// The report of an agent run: its answer scored and decided on as a
    /// plan's is; a budget, safety or failure stop escalated with what was
    /// found; a blocking question to the asker as `needs_input`.
    pub(super) fn agent_report(
        &self,
        question: &str,
        outcome: AgentOutcome,
        on_event: &mut dyn FnMut(Event<'_>),
    ) -> Result<RunReport> {
        let AgentOutcome {
            mut state,
            answer,
            trace,
        } = outcome;
        if trace.stop == AgentStop::Cancelled {
            return Err(ExecError::Cancelled);
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
            conversation: Vec::new(),
            scope: self.scope.clone(),
        };
        let searches = steps.iter().filter(|s| s.action == RagSearch::NAME).count();
        let best = steps
            .iter()
            .filter(|s| s.action == RagSearch::NAME && s.result.success)
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
                Some(mut scored) => {
                    if !scored.answer.abstained {
                        let cited: Vec<String> = scored
                            .answer
                            .citations
                            .iter()
                            .filter_map(|c| c.source.clone())
                            .collect();
                        self.with_history(&mut scored.factors, &cited);
                        scored.score = self.scorer.score(&scored.factors);
                    }
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

/// An agent event as a run event.
pub(super) fn forward(e: AgentEvent<'_>, on_event: &mut dyn FnMut(Event<'_>)) {
    on_event(match e {
        AgentEvent::Think { text } => Event::Think { text },
        AgentEvent::ToolCall { call } => Event::ToolCall { call },
        AgentEvent::Observation { call } => Event::Observation { call },
        AgentEvent::Answer { text } => Event::AgentAnswer { text },
    })
}
