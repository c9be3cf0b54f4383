//! Tools: the [`Tool`] trait, what a call returns ([`ToolResult`]), and the
//! [`ToolRegistry`]: the built-in tools named in `tools.enabled`, tools
//! taken from other MCP servers (`mcp.<server>.<tool>`), the web tools
//! (`web_fetch`, `web_search`) and tools created at run time (`rt.<name>`),
//! each called under its own timeout and retries, seen only by the callers
//! its policy names, and counted in [`stats`] (usage and reflection).
//!
//! Tools are synchronous; the registry runs each call on its own thread so
//! that a timeout can be enforced whatever the tool does (a timed-out call's
//! thread is left to finish and its result discarded).

mod arguments;
mod ask_user;
mod assemble;
#[cfg(feature = "mcp-client")]
pub mod mcp_client;
pub mod outside;
mod rag_search;
mod reasoning;
mod registry;
#[cfg(feature = "js-tools")]
pub mod runtime;
pub mod stats;
#[cfg(feature = "web-tools")]
pub mod web;

pub use crate::access::ReadScope;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use self::arguments::check_arguments;
pub use self::ask_user::{AskUser, Urgency, UserRequest};
pub use self::rag_search::{RagSearch, Withheld};
pub use self::reasoning::{Answer, Citation, Reasoning, SYSTEM_INSTRUCTION, answer_language};
pub use self::registry::{Registrar, TOOL_NAME_PATTERN, ToolInfo, ToolRegistry, valid_tool_name};

use crate::confidence::Factors;
use crate::search::Passage;

/// Names of the built-in tools; `tools.enabled` may list these only.
pub const TOOL_NAMES: &[&str] = &[RagSearch::NAME, Reasoning::NAME, AskUser::NAME];

/// A capability a plan step can call.
pub trait Tool: Send + Sync {
    /// The name plans and callers use (see [`valid_tool_name`]).
    fn name(&self) -> &str;
    /// One sentence on what the tool does (for planners and MCP clients).
    fn description(&self) -> &str;
    /// JSON schema of the input.
    fn input_schema(&self) -> Value;
    /// Where the tool comes from.
    fn origin(&self) -> Origin {
        Origin::BuiltIn
    }
    /// Whether the tool ranks what it finds against its input's `question`
    /// (`web_fetch`, another GRACE's search through MCP): the agent then
    /// always puts the asker's question there, so that the confidence of an
    /// answer from those passages rests on the question asked, not on one
    /// a model wrote.
    fn ranks_by_question(&self) -> bool {
        false
    }
    /// Runs the tool for a caller who may read what `scope` opens: a tool
    /// that reads the knowledge base finds nothing else. `Ok` carries what
    /// it produced (which may still be a `success: false` result); `Err` is
    /// a failure the registry may retry (see [`ToolErrorKind`]).
    fn execute(&self, input: &Value, scope: &ReadScope) -> Result<ToolResult, ToolError>;
}

/// What a tool call produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(tag = "type", content = "data", rename_all = "snake_case")]
pub enum ToolOutput {
    /// Ranked passages (`rag_search`).
    Passages(Vec<Passage>),
    /// An answer with citations (`reasoning`).
    Answer(Answer),
    /// A question for a human (`ask_user`).
    UserRequest(UserRequest),
    /// Data from a tool outside GRACE's own (another MCP server, a script):
    /// quoted material for the caller, never instructions.
    Data(Value),
    /// Nothing (a failed call).
    None,
}

/// The result of one tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ToolResult {
    /// Whether the call produced its output; on `false`, `output` is
    /// [`ToolOutput::None`] and `error` says why.
    pub success: bool,
    /// What the call produced.
    pub output: ToolOutput,
    /// Canonical paths of the documents the output rests on.
    pub sources: Vec<String>,
    /// Evidence for the confidence model.
    pub factors: Factors,
    /// The failure's message; `None` on success.
    pub error: Option<String>,
    /// How it failed; `None` on success.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<ToolErrorKind>,
    /// What the caller could do instead (after a failure or a weak result).
    pub suggestions: Vec<String>,
    /// Wall time of the call, retries included.
    #[serde(with = "duration_secs")]
    #[schema(value_type = f64)]
    pub duration: Duration,
    /// Attempts made (1 without retries).
    pub attempts: u32,
}

impl ToolResult {
    /// A successful result; the registry fills in duration and attempts.
    pub fn ok(output: ToolOutput, sources: Vec<String>, factors: Factors) -> Self {
        Self {
            success: true,
            output,
            sources,
            factors,
            error: None,
            error_kind: None,
            suggestions: Vec::new(),
            duration: Duration::ZERO,
            attempts: 1,
        }
    }

    /// A failed result carrying the error and suggestions.
    pub fn failed(error: &ToolError, suggestions: Vec<String>) -> Self {
        Self {
            success: false,
            output: ToolOutput::None,
            sources: Vec::new(),
            factors: Factors::default(),
            error: Some(error.to_string()),
            error_kind: Some(error.kind),
            suggestions,
            duration: Duration::ZERO,
            attempts: 1,
        }
    }
}

/// Where a tool comes from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Origin {
    /// One of GRACE's own tools.
    BuiltIn,
    /// A tool of another MCP server (`tools.mcp_servers`).
    Mcp {
        /// The server's name in config.
        server: String,
        /// The tool's name on that server.
        tool: String,
    },
    /// A web tool (`tools.web`).
    Web,
    /// A script created at run time.
    Runtime {
        /// The stored version that is registered.
        version: u32,
        /// `verified` or `failed` (its verification run).
        status: String,
    },
}

/// How a call failed, which decides whether it is retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ToolErrorKind {
    /// The input does not match the schema: never retried.
    InvalidInput,
    /// Might work on another try (a busy store, a network hiccup): retried.
    Transient,
    /// The call ran out of time: retried.
    Timeout,
    /// Will fail again: not retried.
    Failed,
    /// The tool is not enabled, does not exist or is disabled.
    Unknown,
    /// The caller gave up (the run was cancelled): not the tool's failure.
    Cancelled,
}

/// A failed tool call.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{tool}: {message}")]
pub struct ToolError {
    /// The tool that failed.
    pub tool: String,
    /// How it failed, which decides whether it is retried.
    pub kind: ToolErrorKind,
    /// What went wrong.
    pub message: String,
}

impl ToolError {
    /// An error of `kind` from `tool`.
    pub fn new(tool: &str, kind: ToolErrorKind, message: impl Into<String>) -> Self {
        Self {
            tool: tool.to_string(),
            kind,
            message: message.into(),
        }
    }

    /// Whether another attempt may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(self.kind, ToolErrorKind::Transient | ToolErrorKind::Timeout)
    }
}

/// How deep a JSON value nests (a scalar: 1), counted without recursion,
/// so that a hostile document cannot exhaust the stack.
#[cfg(any(feature = "js-tools", feature = "mcp-client"))]
pub(crate) fn json_depth(value: &Value) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(value, 1usize)];
    while let Some((v, d)) = stack.pop() {
        deepest = deepest.max(d);
        match v {
            Value::Array(items) => stack.extend(items.iter().map(|i| (i, d + 1))),
            Value::Object(map) => stack.extend(map.values().map(|i| (i, d + 1))),
            _ => {}
        }
    }
    deepest
}

/// Reads a required, non-empty string field (trimmed), or says what is wrong.
pub(crate) fn required_str<'a>(
    tool: &str,
    input: &'a Value,
    field: &str,
) -> Result<&'a str, ToolError> {
    str_field(tool, input, field)?
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| {
            ToolError::new(
                tool,
                ToolErrorKind::InvalidInput,
                format!("`{field}` is required and must not be empty"),
            )
        })
}

/// Reads an input's field as a string, or says what is wrong.
pub(crate) fn str_field<'a>(
    tool: &str,
    input: &'a Value,
    field: &str,
) -> Result<Option<&'a str>, ToolError> {
    match input.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(ToolError::new(
            tool,
            ToolErrorKind::InvalidInput,
            format!("`{field}` must be a string, got {other}"),
        )),
    }
}

mod duration_secs {
    pub fn serialize<S: serde::Serializer>(
        d: &std::time::Duration,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(
        d: D,
    ) -> Result<std::time::Duration, D::Error> {
        let secs = <f64 as serde::Deserialize>::deserialize(d)?;
        std::time::Duration::try_from_secs_f64(secs).map_err(serde::de::Error::custom)
    }
}

/// One executed step: a tool call (a plan's step or the agent's call),
/// its result, and how it was scored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct StepRecord {
    /// The step's id in the plan.
    pub id: String,
    /// The tool the plan named for the step (also when its fallback produced
    /// the result).
    pub action: String,
    /// The input as run (references resolved).
    pub input: Value,
    /// The tool's result (the fallback's, when the step's tool failed and the
    /// step has one).
    pub result: ToolResult,
    /// The factors the step was scored on: its own, together with those of
    /// the steps it depends on (an answer with its retrieval's).
    #[serde(default)]
    pub factors: Factors,
    /// The step's confidence and why.
    pub confidence: crate::confidence::Score,
}

#[cfg(test)]
mod tests {
    /// The configuration, a layer below, holds tool names as data; the
    /// default enables every built-in tool.
    #[test]
    fn the_default_configuration_enables_every_built_in_tool() {
        assert_eq!(
            crate::config::Config::default().tools.enabled,
            super::TOOL_NAMES.to_vec()
        );
    }
}
