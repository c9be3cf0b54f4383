//! The agent loop (`planner.strategy: agent`): Think → Act → Observe.
//!
//! Where a plan is written once and never sees what its tools returned,
//! the agent reads every result before it decides what to do next:
//!
//! - **Think.** The model gets the question, the conversation so far, the
//!   tool catalogue (`rag_search`, and `ask_user` for a question back to
//!   the asker) and its budget (`agent.*`).
//! - **Act.** Each tool call goes through the [`ToolRegistry`], with the
//!   tool's own timeout and retries, and stops when the run is cancelled.
//! - **Observe.** The result goes back to the model as the tool's
//!   response; for `rag_search`, the numbered passages with the step's
//!   confidence and factors, so the model knows when evidence is weak.
//!
//! It stops on a final answer, or when `agent.max_steps`, `max_tokens` or
//! `max_seconds` runs out ([`AgentStop`]). A reply cut off by the token
//! limit is continued once; cut off again, or a model that fails, the run
//! ends with a failed step and the executor escalates (a human may still
//! answer). A safety stop escalates; so does a budget running out, with
//! what was found. The final answer is scored like the `reasoning` tool's:
//! its groundedness and citations against the passages it cites, with the
//! factors of the search that found them; the model cannot raise its own
//! score (no self-assessment is taken from it).
//!
//! A question back to the asker (`ask_user`) is answered by the
//! [`Clarifier`] when there is one (the terminal); without one, an
//! `optional` question proceeds on the model's best assumption and a
//! `blocking` one ends the run as `needs_input`, with its state
//! ([`AgentState`]) for [`Agent::resume`].

mod act;
mod prompt;
mod score;
mod turns;

use crate::access::ReadScope;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use serde::{Deserialize, Serialize};

use self::act::{reply_observation, reply_summary};
use self::prompt::first_message;
use crate::confidence::{Factors, Score};
use crate::config::{AgentConfig, ConfidenceConfig};
use crate::llm::{LlmClient, Message, StopReason, ToolCall, Usage};
use crate::tools::{Answer, StepRecord, ToolRegistry, UserRequest};

/// What the model answers when the passages do not answer the question.
pub const NOT_FOUND_REPLY: &str = "NOT_IN_SOURCES";

/// Answers a question the agent puts to the asker, when someone is there
/// to answer (the terminal). `None`: no answer (skip).
pub type Clarifier<'a> = &'a dyn Fn(&UserRequest) -> Option<String>;

/// Why the loop ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case", tag = "reason", content = "detail")]
pub enum AgentStop {
    /// The model gave its final answer.
    Final,
    /// `agent.max_steps` model turns were used.
    MaxSteps,
    /// `agent.max_tokens` were used.
    MaxTokens,
    /// `agent.max_seconds` passed.
    MaxSeconds,
    /// The reply was cut off by the token limit twice.
    Length,
    /// The provider stopped the reply for safety.
    Safety,
    /// The model failed (after the one retry of a transient error); the
    /// error.
    ModelFailed(String),
    /// The agent asked the asker a blocking question nobody could answer
    /// now: the run waits for the reply.
    NeedsInput,
    /// The run was cancelled from outside.
    Cancelled,
}

impl AgentStop {
    /// Whether the stop is a budget running out.
    pub fn is_budget(&self) -> bool {
        matches!(
            self,
            AgentStop::MaxSteps | AgentStop::MaxTokens | AgentStop::MaxSeconds
        )
    }
}

/// One tool call and what came of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct AgentCall {
    /// The call as the model made it.
    pub call: ToolCall,
    /// Whether the tool succeeded.
    pub success: bool,
    /// A short account of the result (passage numbers and sources, the
    /// error, the asker's reply).
    pub summary: String,
    /// The step's confidence, for a search.
    pub confidence: Option<f64>,
}

/// One model turn: its thought, its calls, or its answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct AgentTurn {
    /// 1-based turn number.
    pub turn: usize,
    /// What the model said it was thinking (bounded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought: Option<String>,
    /// The tools it called.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<AgentCall>,
    /// Its final text, when it answered (bounded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// Why the model stopped this turn.
    pub stop_reason: StopReason,
    /// Tokens of this turn.
    pub usage: Usage,
}

/// The agent's part of a run report: every turn, why it stopped, the
/// model and what it used.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct AgentTrace {
    /// The model (`gemini:…`, `ollama:…`).
    pub model: String,
    /// The turns, in order.
    pub turns: Vec<AgentTurn>,
    /// Why the loop ended.
    pub stop: AgentStop,
    /// Tokens over the whole run.
    pub usage: Usage,
    /// Seconds the loop ran (waiting on the asker excluded).
    pub seconds: f64,
}

/// A passage the model has seen, numbered for citation across searches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeenPassage {
    /// Its citation number, `[n]`.
    pub number: usize,
    /// The document (canonical path).
    pub source: String,
    /// Its heading path.
    pub section: String,
    /// Its page, for documents with pages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page: Option<u32>,
    /// Its text (as the model read it).
    pub text: String,
    /// The id of the search step that found it.
    pub step: String,
}

/// Everything a run needs to go on: what `needs_input` parks and
/// [`Agent::resume`] takes back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentState {
    /// The question as run (a follow-up's standalone form).
    pub question: String,
    /// The conversation with the model.
    pub messages: Vec<Message>,
    /// Passages seen, numbered.
    pub passages: Vec<SeenPassage>,
    /// The tool calls as executed steps (searches scored).
    pub steps: Vec<StepRecord>,
    /// The turns so far.
    pub turns: Vec<AgentTurn>,
    /// Tokens so far.
    pub usage: Usage,
    /// Milliseconds the loop has run so far.
    pub elapsed_ms: u64,
    /// Whether a reply cut off by the token limit was already continued.
    pub continued: bool,
    /// The `ask_user` call waiting for the asker's reply.
    pub pending: Option<ToolCall>,
    /// The question put to the asker, while pending.
    pub clarification: Option<UserRequest>,
    /// The follow-up as typed, when `question` is its rewrite: its own
    /// words must be found by every search (`follow_up_coverage`).
    #[serde(default)]
    pub focus: Option<String>,
}

/// How the loop ended, for the executor to decide on.
#[derive(Debug, Clone)]
pub struct AgentOutcome {
    /// The state at the end (for `needs_input`: what to resume).
    pub state: AgentState,
    /// The final answer, scored, when the model gave one.
    pub answer: Option<ScoredAnswer>,
    /// The trace for the report.
    pub trace: AgentTrace,
}

/// The final answer with the factors and score it got.
#[derive(Debug, Clone)]
pub struct ScoredAnswer {
    /// The answer as a run reports it.
    pub answer: Answer,
    /// Its factors: the answer's own with those of the search it rests on.
    pub factors: Factors,
    /// Its score.
    pub score: Score,
}

/// What the agent reports as it goes (the executor forwards these as run
/// events).
#[derive(Debug)]
pub enum AgentEvent<'a> {
    /// The model's thought before acting.
    Think {
        /// The thought.
        text: &'a str,
    },
    /// A tool call about to run.
    ToolCall {
        /// The call.
        call: &'a ToolCall,
    },
    /// A tool call's result.
    Observation {
        /// What came of it.
        call: &'a AgentCall,
    },
    /// The model's final answer (before scoring).
    Answer {
        /// The answer text.
        text: &'a str,
    },
}

/// The loop over one question.
pub struct Agent<'a> {
    /// The tools calls go through.
    pub registry: &'a ToolRegistry,
    /// The model that thinks.
    pub llm: Arc<dyn LlmClient>,
    /// The budgets.
    pub budget: &'a AgentConfig,
    /// Thresholds of the scores (`confidence`).
    pub confidence: &'a ConfidenceConfig,
    /// What scores steps and the answer.
    pub scorer: &'a crate::confidence::Scorer,
    /// Passages per search when the model gives no limit.
    pub limit: usize,
    /// Set to stop the run.
    pub cancel: &'a AtomicBool,
    /// What the asker may read (every search of the loop).
    pub scope: &'a ReadScope,
    /// Who answers questions back to the asker now, if anyone.
    pub clarifier: Option<Clarifier<'a>>,
}

impl Agent<'_> {
    /// Starts the loop on `question`; `history` is the conversation so far
    /// (question, answer) and `asked` the question as typed when
    /// `question` is its rewrite.
    pub fn run(
        &self,
        question: &str,
        asked: Option<&str>,
        history: &[(String, Option<String>)],
        on_event: &mut dyn FnMut(AgentEvent<'_>),
    ) -> AgentOutcome {
        let mut state = AgentState {
            question: question.to_string(),
            messages: vec![
                Message::system(self.instructions()),
                Message::user(first_message(question, asked, history)),
            ],
            passages: Vec::new(),
            steps: Vec::new(),
            turns: Vec::new(),
            usage: Usage::default(),
            elapsed_ms: 0,
            continued: false,
            pending: None,
            clarification: None,
            focus: asked
                .filter(|a| *a != question)
                .and_then(crate::followup::focus),
        };
        let stop = self.drive(&mut state, on_event);
        self.finish(state, stop)
    }

    /// Goes on with a run that stopped as `needs_input`, with the asker's
    /// reply (`None`: the asker gave none; the model proceeds on its
    /// best assumption).
    pub fn resume(
        &self,
        mut state: AgentState,
        reply: Option<&str>,
        on_event: &mut dyn FnMut(AgentEvent<'_>),
    ) -> AgentOutcome {
        if let Some(call) = state.pending.take() {
            let observation = reply_observation(reply);
            state
                .messages
                .push(Message::tool_result(&call, &observation));
            if let Some(last) = state.turns.last_mut()
                && let Some(c) = last.calls.iter_mut().find(|c| c.call.id == call.id)
            {
                c.summary = reply_summary(reply);
                c.success = true;
            }
        }
        state.clarification = None;
        let stop = self.drive(&mut state, on_event);
        self.finish(state, stop)
    }
}

#[cfg(test)]
mod tests;
