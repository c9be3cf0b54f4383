//! The events of a run, owned so that they can cross threads and be
//! streamed.

use serde::{Deserialize, Serialize};

use super::ask::AskOutcome;
use crate::exec::Event;
use crate::tools::UserRequest;

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

    pub(super) fn from_exec(event: &Event<'_>) -> Option<Self> {
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
