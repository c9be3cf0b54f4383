//! `create_tool`, the agent's way to create a run-time tool, and the
//! schema of a tool's definition that every creator is offered.

use crate::access::ReadScope;
use std::sync::Arc;

use serde_json::{Value, json};

use super::{Actor, RuntimeTools, ToolSpec, check};
use crate::confidence::Factors;
use crate::tools::{Registrar, Tool, ToolError, ToolErrorKind, ToolOutput, ToolResult};

/// `create_tool` for the agent (only when
/// `tools.runtime.allow_agent_create`): creations are audited as `agent`,
/// and a verified tool is registered at once (the agent's catalogue is
/// built once a run, so it sees the tool from its next run on).
pub struct CreateTool {
    pub(super) tools: Arc<RuntimeTools>,
    pub(super) registrar: Registrar,
}

impl Tool for CreateTool {
    fn name(&self) -> &str {
        "create_tool"
    }

    fn description(&self) -> &str {
        "Create a JavaScript tool (`function run(input)`) verified on examples; once verified it is offered as rt.<name> from the next question on."
    }

    fn input_schema(&self) -> Value {
        spec_schema()
    }

    fn execute(&self, input: &Value, scope: &ReadScope) -> Result<ToolResult, ToolError> {
        // Its examples run with the whole knowledge base (a tool serves
        // every caller): a run for a principal may not write one.
        if !scope.is_all() {
            return Err(ToolError::new(
                "create_tool",
                ToolErrorKind::InvalidInput,
                "a run for a principal may not create tools: their examples search the whole knowledge base",
            ));
        }
        let spec: ToolSpec = serde_json::from_value(input.clone()).map_err(|e| {
            ToolError::new("create_tool", ToolErrorKind::InvalidInput, e.to_string())
        })?;
        let created = self
            .tools
            .create_in(&self.registrar, spec, Actor::Agent)
            .map_err(|e| ToolError::new("create_tool", ToolErrorKind::Failed, e.to_string()))?;
        let stored = &created.stored;
        Ok(ToolResult::ok(
            ToolOutput::Data(json!({
                "tool": created.tool,
                "version": stored.version,
                "status": stored.status,
                "quality": stored.quality,
                "registered": created.registered,
                "verification": stored.verification,
            })),
            Vec::new(),
            Factors::default(),
        ))
    }
}

/// JSON schema of a [`ToolSpec`] (`create_tool`'s input everywhere).
pub fn spec_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "pattern": "^[a-z][a-z0-9_]{0,47}$",
                     "description": "registered as rt.<name>"},
            "description": {"type": "string", "maxLength": check::MAX_DESCRIPTION_CHARS},
            "input_schema": {"type": "object", "description": "JSON schema of the input (type object)"},
            "code": {"type": "string",
                     "description": "JavaScript defining function run(input) that returns a JSON value; grace.search(query, k) searches the knowledge base"},
            "examples": {"type": "array", "minItems": 1, "maxItems": check::MAX_EXAMPLES,
                         "items": {"type": "object",
                                   "properties": {"input": {"type": "object"}, "expect": {}},
                                   "required": ["input", "expect"]}}
        },
        "required": ["name", "description", "code", "examples"],
        "additionalProperties": false
    })
}
