//! Plans: the steps a run takes, validated before anything runs.
//!
//! A step's input is JSON; a value `{"$from": "<step id>"}` is replaced by
//! that earlier step's output when the step runs (passages become
//! `reasoning` sources; a list of references is concatenated). The
//! [`Planner`] asks a language model for a plan when one is configured and
//! falls back to [`default_plan`] (`rag_search → reasoning`) on any
//! failure: no answer, malformed JSON, or a plan that does not validate.

mod planner;
mod validate;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

pub use self::planner::{Planner, plan_schema};
pub use self::validate::{collect_refs, step_ref};
use crate::config::{RAG_SEARCH, REASONING};
use crate::llm::Usage;

/// One step of a plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// Unique id in the plan, referenced by `depends_on` and `$from`.
    pub id: String,
    /// The tool to call.
    pub action: String,
    /// The tool's input (JSON); a `{"$from": "<step id>"}` value is replaced by
    /// that earlier step's output when the step runs.
    pub input: Value,
    /// Steps whose outputs this one uses; they must come earlier.
    #[serde(default)]
    pub depends_on: Vec<String>,
    /// A tool to call with the same input when this step fails (under that
    /// tool's own timeout and retries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
    /// Seconds this step may take, instead of the tool's `timeout_seconds`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<f64>,
}

/// The steps of a run, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// The steps, run in this order.
    pub steps: Vec<Step>,
}

/// Why a plan cannot run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlanError {
    /// The plan has no steps.
    #[error("the plan has no steps")]
    Empty,
    /// A `reasoning` step's `sources` is not made only of `{"$from": step}`
    /// references to retrieval steps, or it has a `context`: a plan may not
    /// hand the answerer evidence of its own making.
    #[error(
        "step `{step}`: reasoning's `{field}` must come from search steps ({{\"$from\": id}}), not text the plan wrote"
    )]
    UngroundedEvidence {
        /// The step's id.
        step: String,
        /// `sources` or `context`.
        field: &'static str,
    },
    /// A step's action is not an enabled tool.
    #[error("step `{step}`: unknown or disabled action `{action}` (enabled: {enabled})")]
    UnknownAction {
        /// The step's id.
        step: String,
        /// The action it names.
        action: String,
        /// The enabled tools, comma-separated.
        enabled: String,
    },
    /// Two steps share this id.
    #[error("step id `{0}` is used twice")]
    DuplicateId(String),
    /// A step depends on (or references with `$from`) a step that is not
    /// earlier in the plan.
    #[error("step `{step}` depends on `{on}`, which is not an earlier step")]
    BadDependency {
        /// The step's id.
        step: String,
        /// The id it depends on.
        on: String,
    },
    /// The last step other than `ask_user` is not `reasoning`; holds its action.
    #[error("the last answer-producing step must be `reasoning` (it is `{0}`)")]
    NoAnswerStep(String),
    /// A step's fallback is not an enabled tool.
    #[error("step `{step}`: unknown or disabled fallback `{fallback}`")]
    UnknownFallback {
        /// The step's id.
        step: String,
        /// The fallback it names.
        fallback: String,
    },
    /// A step's timeout is not a positive, finite number of seconds.
    #[error("step `{step}`: timeout {timeout} is not a positive number of seconds")]
    BadTimeout {
        /// The step's id.
        step: String,
        /// The timeout given.
        timeout: f64,
    },
    /// The plan has more than [`MAX_STEPS`] steps; holds its length.
    #[error("the plan has {0} steps; at most {MAX_STEPS} are allowed")]
    TooLong(usize),
}

/// Steps a plan may have at most.
pub const MAX_STEPS: usize = 8;

/// The plan for a question: search, then answer from what was found.
pub fn default_plan(question: &str, limit: usize) -> Plan {
    Plan {
        steps: vec![
            Step {
                id: "search".into(),
                action: RAG_SEARCH.into(),
                input: json!({"query": question, "limit": limit}),
                depends_on: Vec::new(),
                fallback: None,
                timeout: None,
            },
            Step {
                id: "answer".into(),
                action: REASONING.into(),
                input: json!({"query": question, "sources": {"$from": "search"}}),
                depends_on: vec!["search".into()],
                fallback: None,
                timeout: None,
            },
        ],
    }
}

/// The plan for a question a reviewer sent back with a hint: the question's
/// search, a search for the hint, and an answer drawn from both.
pub fn hint_plan(question: &str, hint: &str, limit: usize) -> Plan {
    let mut plan = default_plan(question, limit);
    plan.steps.insert(
        1,
        Step {
            id: "hint".into(),
            action: RAG_SEARCH.into(),
            input: json!({"query": hint, "limit": limit}),
            depends_on: Vec::new(),
            fallback: None,
            timeout: None,
        },
    );
    if let Some(answer) = plan.steps.last_mut() {
        answer.input = json!({
            "query": question,
            "sources": [{"$from": "search"}, {"$from": "hint"}],
        });
        answer.depends_on = vec!["search".into(), "hint".into()];
    }
    plan
}

/// How a run's plan was made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(tag = "by", rename_all = "snake_case")]
pub enum PlanOrigin {
    /// The default plan; no planner is configured.
    Default,
    /// The language model's plan, validated.
    Llm {
        /// The language model that made the plan
        /// ([`LlmClient::name`](crate::llm::LlmClient::name)).
        generator: String,
        /// Tokens the planning request used.
        usage: Usage,
    },
    /// The default plan, because the language model's could not be used.
    Fallback {
        /// The language model whose plan could not be used.
        generator: String,
        /// Why it could not be used (the generator failed, the JSON is malformed,
        /// or the plan does not validate).
        reason: String,
    },
    /// A reviewer's hint added a search (see [`hint_plan`]).
    Hint {
        /// The reviewer's hint, searched for beside the question.
        hint: String,
    },
    /// No plan: the agent loop chose each step after reading the last
    /// (`planner.strategy: agent`; its turns are in the report's `agent`).
    Agent {
        /// The model that ran the loop.
        generator: String,
    },
}

/// A plan and how it was made.
#[derive(Debug, Clone, PartialEq)]
pub struct Planned {
    /// The plan to run.
    pub plan: Plan,
    /// How it was made.
    pub origin: PlanOrigin,
}

#[cfg(test)]
mod tests;
