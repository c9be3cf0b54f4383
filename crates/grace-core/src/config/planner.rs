//! The `planner` and `agent` sections: how a question is worked through,
//! and the agent loop's budgets.

use super::Result;
use super::check::{above_zero, in_range};
use serde::{Deserialize, Serialize};

/// How a question is worked through (`planner`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct PlannerConfig {
    /// `default`, `plan` or `agent`.
    pub strategy: Strategy,
}

/// The planner strategies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// Always the default plan: search, then answer.
    Default,
    /// With a language model, the model writes the plan up front (JSON);
    /// any failure falls back to the default plan. Without one, the default.
    #[default]
    Plan,
    /// With a language model that calls tools: think, act, observe until a
    /// final answer or a budget (`agent.*`) runs out. Without one, the
    /// default plan.
    Agent,
}

/// The agent loop's budgets (`agent`), and how long a question back to
/// the asker waits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AgentConfig {
    /// Model turns at most (each may call tools).
    pub max_steps: usize,
    /// Model tokens at most, input and output, over the whole run.
    pub max_tokens: u64,
    /// Seconds at most for the whole run (waiting on the asker excluded).
    pub max_seconds: f64,
    /// Seconds a run that asked the asker a question (`needs_input`)
    /// waits for the reply before it expires.
    pub reply_timeout_seconds: f64,
}

impl Default for AgentConfig {
    fn default() -> Self {
        Self {
            max_steps: 8,
            max_tokens: 32_000,
            max_seconds: 90.0,
            reply_timeout_seconds: 300.0,
        }
    }
}

pub(super) fn validate_agent(a: &super::AgentConfig) -> Result<()> {
    in_range("agent.max_steps", a.max_steps, 1..=64, "")?;
    in_range("agent.max_tokens", a.max_tokens, 1..=10000000, "")?;
    for (key, value, max) in [
        ("agent.max_seconds", a.max_seconds, 3_600.0),
        (
            "agent.reply_timeout_seconds",
            a.reply_timeout_seconds,
            604_800.0,
        ),
    ] {
        in_range(key, value, above_zero(max), " seconds")?;
    }
    Ok(())
}
