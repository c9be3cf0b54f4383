//! Seed 002's tools for `grace mcp`, offered only when
//! `tools.runtime.allow_mcp_create` (an MCP client is then an admin of
//! run-time tools; audited as `mcp`): `create_tool`, `list_dynamic_tools`,
//! `run_dynamic_tool`, `delete_dynamic_tool`.

use crate::access::ReadScope;
use serde_json::{Value, json};

use super::{Actor, PREFIX, RuntimeTools, ToolSpec, spec_schema};
use crate::config::{Caller, Config};
use crate::tools::ToolRegistry;

/// The tools' names.
pub const NAMES: &[&str] = &[
    "create_tool",
    "list_dynamic_tools",
    "run_dynamic_tool",
    "delete_dynamic_tool",
];

/// Whether `grace mcp` offers them.
pub fn offered(config: &crate::config::Config) -> bool {
    config.tools.runtime.enabled && config.tools.runtime.allow_mcp_create
}

/// `(name, description, input schema, read-only)` of each.
pub fn tools() -> Vec<(&'static str, &'static str, Value, bool)> {
    let name = json!({"type": "string", "minLength": 1, "description": "the tool's name (NAME or rt.NAME)"});
    vec![
        (
            "create_tool",
            "Create a JavaScript tool (function run(input) returning JSON) or a new version of one: \
             checked, run on its examples, stored; offered as rt.<name> when every example passes.",
            spec_schema(),
            false,
        ),
        (
            "list_dynamic_tools",
            "The run-time tools: name, version, status (verified or failed), quality, description, input schema.",
            json!({"type": "object", "properties": {
                "name": {"type": "string", "description": "only names containing this"}},
                "additionalProperties": false}),
            true,
        ),
        (
            "run_dynamic_tool",
            "Run a run-time tool on `parameters` (its input object) in the sandbox.",
            json!({"type": "object", "properties": {
                "tool_name": name, "parameters": {"type": "object"}},
                "required": ["tool_name"], "additionalProperties": false}),
            false,
        ),
        (
            "delete_dynamic_tool",
            "Delete a run-time tool (its history is kept); `confirm: true` is required.",
            json!({"type": "object", "properties": {
                "tool_name": name, "confirm": {"type": "boolean"}},
                "required": ["tool_name", "confirm"], "additionalProperties": false}),
            false,
        ),
    ]
}

/// Runs one of the tools on the served GRACE's knowledge base and
/// registry (blocking: verification runs scripts).
pub fn call(
    config: &Config,
    kb: &std::sync::Arc<crate::kb::KnowledgeBase>,
    registry: &ToolRegistry,
    name: &str,
    args: &Value,
    scope: &ReadScope,
) -> Result<Value, String> {
    let host = RuntimeTools::host_for(config, kb, registry);
    let tools = RuntimeTools::open(config, host).map_err(|e| e.to_string())?;
    let tool_name = |args: &Value| -> String {
        let n = args["tool_name"].as_str().unwrap_or_default().trim();
        n.strip_prefix(PREFIX).unwrap_or(n).to_string()
    };
    match name {
        "create_tool" => {
            let spec: ToolSpec =
                serde_json::from_value(args.clone()).map_err(|e| format!("create_tool: {e}"))?;
            let created = tools
                .create_in(&registry.registrar(), spec, Actor::Mcp)
                .map_err(|e| e.to_string())?;
            serde_json::to_value(created).map_err(|e| e.to_string())
        }
        "list_dynamic_tools" => {
            let filter = args["name"].as_str().unwrap_or_default();
            let listed: Vec<Value> = tools
                .list()
                .map_err(|e| e.to_string())?
                .into_iter()
                .filter(|t| t.name.contains(filter))
                .map(|t| {
                    json!({"name": format!("{PREFIX}{}", t.name), "version": t.version,
                           "status": t.status, "quality": t.quality, "description": t.description,
                           "input_schema": t.input_schema, "created_at": t.created_at, "actor": t.actor})
                })
                .collect();
            Ok(json!({"tools": listed}))
        }
        "run_dynamic_tool" => {
            let registered = format!("{PREFIX}{}", tool_name(args));
            if !registry.visible_to(&registered, Caller::Mcp) {
                return Err(format!(
                    "`{}` is not an offered run-time tool (list_dynamic_tools shows them; a failed one is not offered)",
                    crate::text::ellipsized(&registered, 60)
                ));
            }
            let input = match &args["parameters"] {
                Value::Null => json!({}),
                v => v.clone(),
            };
            let result = registry.call(&registered, &input, scope);
            if result.success {
                serde_json::to_value(&result).map_err(|e| e.to_string())
            } else {
                Err(result.error.unwrap_or_else(|| "failed".to_string()))
            }
        }
        "delete_dynamic_tool" => {
            if args["confirm"] != json!(true) {
                return Err("give `confirm: true` to delete".to_string());
            }
            let bare = tool_name(args);
            let version = tools
                .delete(Some(&registry.registrar()), &bare, Actor::Mcp)
                .map_err(|e| e.to_string())?;
            Ok(json!({"deleted": format!("{PREFIX}{bare}"), "version": version}))
        }
        other => Err(format!("not a run-time tools' tool: {other}")),
    }
}
