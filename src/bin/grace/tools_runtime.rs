//! `grace tools create|delete|history|run`: run-time tools (`rt.<name>`)
//! for an admin at the command line (audited as `cli`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::Subcommand;
use grace::tools::runtime::sandbox::Host;
use grace::tools::runtime::{self, Actor, Example, RuntimeError, RuntimeTools, ToolSpec};
use grace::tools::{Tool, ToolRegistry};
use grace::{Config, KnowledgeBase, OpenMode};
use serde_json::Value;

use crate::output;

/// Bytes of a file read for a tool's definition at most.
const MAX_FILE_BYTES: u64 = 4 << 20;

#[derive(Debug, Subcommand)]
pub enum RuntimeCommand {
    /// Create a tool, or a new version of one: checked, verified on its
    /// examples, stored; registered (as rt.NAME) when verified
    Create {
        /// A JSON file with name, description, input_schema, code, examples
        #[arg(long, value_name = "FILE", conflicts_with_all = ["name", "description", "schema", "code", "examples"])]
        spec: Option<PathBuf>,
        /// The tool's name (lowercase letters, digits, `_`)
        #[arg(long, required_unless_present = "spec")]
        name: Option<String>,
        /// What it does
        #[arg(long, required_unless_present = "spec")]
        description: Option<String>,
        /// Its input's JSON schema: a file, or the JSON itself
        #[arg(long, value_name = "FILE|JSON")]
        schema: Option<String>,
        /// A JavaScript file defining `function run(input)`
        #[arg(long, value_name = "FILE", required_unless_present = "spec")]
        code: Option<PathBuf>,
        /// Examples `[{"input": …, "expect": …}]`: a file, or the JSON itself
        #[arg(long, value_name = "FILE|JSON", required_unless_present = "spec")]
        examples: Option<String>,
    },
    /// Delete a tool (its versions and audit log are kept)
    Delete {
        /// The tool (NAME or rt.NAME)
        name: String,
    },
    /// A tool's versions and audit log
    History {
        /// The tool (NAME or rt.NAME)
        name: String,
    },
    /// Run a stored tool's latest version (also a failed one) on an input
    Run {
        /// The tool (NAME or rt.NAME)
        name: String,
        /// The input, a JSON object
        #[arg(long, default_value = "{}")]
        input: String,
    },
}

/// Runs a `grace tools` run-time subcommand; the exit code.
pub fn run(cmd: &RuntimeCommand, config: &Config, json: bool) -> grace::Result<u8> {
    match cmd {
        RuntimeCommand::Create {
            spec,
            name,
            description,
            schema,
            code,
            examples,
        } => {
            let spec = match spec {
                Some(path) => parse::<ToolSpec>(&read(path)?, "--spec")?,
                None => ToolSpec {
                    name: name.clone().unwrap_or_default(),
                    description: description.clone().unwrap_or_default(),
                    input_schema: match schema {
                        Some(s) => parse(&file_or_text(s)?, "--schema")?,
                        None => serde_json::json!({"type": "object"}),
                    },
                    code: match code {
                        Some(p) => read(p)?,
                        None => String::new(),
                    },
                    examples: match examples {
                        Some(s) => parse::<Vec<Example>>(&file_or_text(s)?, "--examples")?,
                        None => Vec::new(),
                    },
                },
            };
            let tools = open(config, &spec.code)?;
            let stored = tools.create(spec, Actor::Cli).map_err(to_error)?;
            output::runtime_tool_created(&stored, json);
            Ok(if stored.status == "verified" { 0 } else { 1 })
        }
        RuntimeCommand::Delete { name } => {
            let tools = open(config, "")?;
            let version = tools.delete(None, name, Actor::Cli).map_err(to_error)?;
            let bare = name.strip_prefix(runtime::PREFIX).unwrap_or(name);
            output::json_or(
                json,
                &serde_json::json!({"deleted": format!("rt.{bare}"), "version": version}),
                || println!("deleted rt.{bare} (version {version}; history kept)"),
            );
            Ok(0)
        }
        RuntimeCommand::History { name } => {
            let tools = open(config, "")?;
            let history = tools.history(name).map_err(to_error)?;
            output::runtime_tool_history(&history, json);
            Ok(0)
        }
        RuntimeCommand::Run { name, input } => {
            let input: Value = parse(input, "--input")?;
            let bare = name.strip_prefix(runtime::PREFIX).unwrap_or(name);
            let probe = RuntimeTools::open(config, Host::default()).map_err(to_error)?;
            let stored = probe
                .store()
                .get(bare)
                .map_err(|e| to_error(RuntimeError::Store(e)))?
                .ok_or_else(|| to_error(RuntimeError::NotFound(bare.to_string())))?;
            let tools = open(config, &stored.code)?;
            let tool: Arc<dyn Tool> = Arc::new(tools.tool(&stored));
            let mut registry =
                ToolRegistry::with_tools(vec![(tool.clone(), config.tools.runtime.policy())]);
            // Counted like any other call (a failure to open is only logged).
            match grace::tools::stats::ToolStats::open(config) {
                Ok(stats) => registry = registry.with_stats(Arc::new(stats)),
                Err(e) => tracing::warn!(error = %e, "no tool statistics"),
            }
            let result = registry.call(tool.name(), &input, &grace::access::ReadScope::All);
            output::tool_result(&result, json);
            Ok(if result.success { 0 } else { 1 })
        }
    }
}

/// The run-time tools, with `grace.search` over the knowledge base when
/// the code uses it (and a collection exists). `fetch` is not granted at
/// the command line (it is in `grace serve` and `grace mcp`).
fn open(config: &Config, code: &str) -> grace::Result<RuntimeTools> {
    let host = if code.contains("grace.search") {
        match KnowledgeBase::open(config.clone(), OpenMode::Existing) {
            Ok(kb) => Host {
                search: Some(runtime::search_in(Arc::new(kb))),
                fetch: None,
                scope: grace::access::ReadScope::All,
            },
            Err(e) => {
                tracing::warn!(error = %e, "no knowledge base: grace.search is not available");
                Host::default()
            }
        }
    } else {
        Host::default()
    };
    RuntimeTools::open(config, host).map_err(to_error)
}

fn to_error(e: RuntimeError) -> grace::Error {
    match e {
        RuntimeError::Store(_) | RuntimeError::Registry(_) => {
            grace::Error::Tool(e.into_tool_error())
        }
        RuntimeError::Disabled | RuntimeError::Refused(_) | RuntimeError::NotFound(_) => {
            grace::Error::InvalidInput(e.to_string())
        }
    }
}

fn read(path: &Path) -> grace::Result<String> {
    let bad = |m: String| grace::Error::InvalidInput(format!("{}: {m}", path.display()));
    let meta = std::fs::metadata(path).map_err(|e| bad(e.to_string()))?;
    if meta.len() > MAX_FILE_BYTES {
        return Err(bad(format!("over {MAX_FILE_BYTES} bytes")));
    }
    std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))
}

/// A file's text when `arg` names an existing file, else `arg` itself.
fn file_or_text(arg: &str) -> grace::Result<String> {
    let path = Path::new(arg);
    if !arg.trim_start().starts_with(['{', '[']) && path.is_file() {
        read(path)
    } else {
        Ok(arg.to_string())
    }
}

fn parse<T: serde::de::DeserializeOwned>(text: &str, what: &str) -> grace::Result<T> {
    serde_json::from_str(text).map_err(|e| grace::Error::InvalidInput(format!("{what}: {e}")))
}
