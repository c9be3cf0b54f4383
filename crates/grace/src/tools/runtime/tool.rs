//! A stored version as a registry tool: its input checked, then run in
//! the sandbox on each call.

use crate::access::ReadScope;
use serde_json::Value;

use super::sandbox::{self, Host, Limits};
use crate::confidence::Factors;
use crate::tools::{Origin, Tool, ToolError, ToolErrorKind, ToolOutput, ToolResult};

/// Bytes of a call's input (as JSON) at most.
const MAX_INPUT_BYTES: usize = 65_536;

/// A stored version as a registry tool.
pub struct RuntimeTool {
    pub(super) name: String,
    pub(super) description: String,
    pub(super) input_schema: Value,
    pub(super) code: String,
    pub(super) version: u32,
    pub(super) status: String,
    pub(super) limits: Limits,
    pub(super) host: Host,
}

impl RuntimeTool {
    /// Checks what a call's input can be checked for without a schema
    /// validator: an object, bounded, with the schema's `required` keys.
    fn check_input(&self, input: &Value) -> Result<(), ToolError> {
        let invalid = |m: String| ToolError::new(&self.name, ToolErrorKind::InvalidInput, m);
        let Some(obj) = input.as_object() else {
            return Err(invalid("the input must be an object".to_string()));
        };
        let size = serde_json::to_string(input).map_or(usize::MAX, |s| s.len());
        if size > MAX_INPUT_BYTES {
            return Err(invalid(format!(
                "the input is {size} bytes, over the {MAX_INPUT_BYTES} allowed"
            )));
        }
        let required = self
            .input_schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str);
        for key in required {
            if !obj.contains_key(key) {
                return Err(invalid(format!("`{key}` is required")));
            }
        }
        Ok(())
    }
}

impl Tool for RuntimeTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> Value {
        self.input_schema.clone()
    }

    fn origin(&self) -> Origin {
        Origin::Runtime {
            version: self.version,
            status: self.status.clone(),
        }
    }

    fn execute(&self, input: &Value, scope: &ReadScope) -> Result<ToolResult, ToolError> {
        self.check_input(input)?;
        let host = sandbox::Host {
            scope: scope.clone(),
            ..self.host.clone()
        };
        let out = sandbox::run(&self.code, input, self.limits, &host)
            .map_err(|e| ToolError::new(&self.name, e.kind, e.message))?;
        Ok(ToolResult::ok(
            ToolOutput::Data(out),
            Vec::new(),
            Factors::default(),
        ))
    }
}
