//! Tools created at run time (`rt.<name>`): a name, a description, an
//! input schema and JavaScript defining `function run(input)`, run in a
//! QuickJS [`sandbox`] per call.
//!
//! Creating one ([`RuntimeTools::create`]) checks it ([`check`]), runs it
//! on its examples (status `verified` when every example gives its
//! `expect`, `failed` otherwise; quality = share of examples passed),
//! stores it as a new version ([`store`]) and audits who did it. A
//! `verified` tool is registered (replacing its previous version); a
//! `failed` one is stored, listed and audited, but not registered, so no
//! caller is offered a tool that does not do what its examples say.
//! Deleting unregisters it and keeps its history.
//!
//! Admins create through `grace tools create`, `POST /v1/tools/runtime`
//! and, when `tools.runtime.allow_mcp_create`, `grace mcp`; the agent only
//! when `tools.runtime.allow_agent_create` ([`CreateTool`]).

pub mod check;
mod create_tool;
pub mod mcp;
pub mod sandbox;
pub mod store;
mod tool;

use crate::access::ReadScope;
use crate::store::PayloadFilter;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

pub use self::create_tool::{CreateTool, spec_schema};
use self::sandbox::{Host, Limits};
pub use self::store::{AuditEntry, History, Store, StoreError, StoredTool};
pub use self::tool::RuntimeTool;
use super::{Registrar, Tool, ToolError, ToolErrorKind, ToolOutput, ToolRegistry};
use crate::config::{Callers, Config, RuntimeToolsConfig, ToolPolicy};

/// Prefix of run-time tools' registered names.
pub const PREFIX: &str = "rt.";

/// What an admin (or the agent) gives to create or change a tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolSpec {
    /// `word_count` (registered as `rt.word_count`; a leading `rt.` is
    /// accepted and dropped).
    #[schema(pattern = r"^(rt\.)?[a-z][a-z0-9_]{0,47}$")]
    pub name: String,
    /// What it does, for the callers that choose it.
    #[schema(min_length = 1, pattern = r"[^\s\x00-\x1f\x7f-\x9f]")]
    pub description: String,
    /// JSON schema of its input (an object schema: `"type": "object"`).
    #[serde(default = "any_object")]
    #[schema(schema_with = object_schema_schema)]
    pub input_schema: Value,
    /// JavaScript defining `function run(input)` (may be `async`) that
    /// returns a JSON-serialisable value: at most 16,384 characters and
    /// `tools.runtime.max_code_bytes` bytes (65,536 by default, which any
    /// 16,384 characters fit in).
    #[schema(min_length = 1, pattern = r"[^\s\x00-\x1f\x7f-\x9f]")]
    pub code: String,
    /// Inputs with the output each must give: the verification run.
    #[schema(min_items = 1, max_items = 10)]
    pub examples: Vec<Example>,
}

/// What a run-time tool's name looks like in published schemas (what
/// [`check::valid_name`] accepts, with or without `rt.`).
pub const NAME_PATTERN: &str = r"^(rt\.)?[a-z][a-z0-9_]{0,47}$";

/// The published schema of `input_schema`: an object whose `type` is
/// `object`.
fn object_schema_schema() -> utoipa::openapi::schema::Object {
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    ObjectBuilder::new()
        .schema_type(Type::Object)
        .property(
            "type",
            ObjectBuilder::new()
                .schema_type(Type::String)
                .enum_values(Some(["object"])),
        )
        .required("type")
        .build()
}

fn any_object() -> Value {
    json!({"type": "object"})
}

/// One example: an input and the output it must give.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Example {
    /// The input (an object).
    #[schema(value_type = Object)]
    pub input: Value,
    /// The output `run` must return (compared as JSON).
    pub expect: Value,
}

/// How one example went in the verification run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ExampleOutcome {
    /// Whether the output was the expected one.
    pub passed: bool,
    /// What `run` returned (absent on an error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    /// The error, when it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Who created, changed or deleted a tool (the audit log's actor).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Actor {
    /// An admin at the command line.
    Cli,
    /// An admin over HTTP (the admin key).
    Http,
    /// A client of `grace mcp` (`tools.runtime.allow_mcp_create`).
    Mcp,
    /// The agent (`tools.runtime.allow_agent_create`).
    Agent,
}

impl Actor {
    /// The audit log's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Actor::Cli => "cli",
            Actor::Http => "http",
            Actor::Mcp => "mcp",
            Actor::Agent => "agent",
        }
    }
}

/// Why a creation, deletion or look-up failed.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// Run-time tools are off (`tools.runtime.enabled: false`).
    #[error("run-time tools are disabled (tools.runtime.enabled)")]
    Disabled,
    /// The definition failed the check; nothing was stored.
    #[error("refused: {}", .0.join("; "))]
    Refused(Vec<String>),
    /// No live tool of that name.
    #[error("no run-time tool `{0}`")]
    NotFound(String),
    /// The store failed (or is full).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The registry refused the tool.
    #[error(transparent)]
    Registry(#[from] ToolError),
}

impl RuntimeError {
    /// As a tool error of the run-time tools (`rt`), for GRACE's own error.
    pub fn into_tool_error(self) -> ToolError {
        let kind = match self {
            RuntimeError::Refused(_) => ToolErrorKind::InvalidInput,
            RuntimeError::NotFound(_) | RuntimeError::Disabled => ToolErrorKind::Unknown,
            RuntimeError::Store(_) | RuntimeError::Registry(_) => ToolErrorKind::Failed,
        };
        ToolError::new("rt", kind, self.to_string())
    }
}

/// What a creation did.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Created {
    /// The registered name (`rt.<name>`).
    pub tool: String,
    /// The stored version.
    #[serde(flatten)]
    pub stored: StoredTool,
    /// Whether it is registered now (`verified` only).
    pub registered: bool,
}

/// Run-time tools: their store, the sandbox's limits and host functions.
pub struct RuntimeTools {
    config: RuntimeToolsConfig,
    store: Store,
    host: Host,
}

impl std::fmt::Debug for RuntimeTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RuntimeTools")
            .field("store", &self.store)
            .finish()
    }
}

impl RuntimeTools {
    /// Opens the store in `<data_dir>/runtime_tools.sqlite3`, with the
    /// host functions `host` grants.
    pub fn open(config: &Config, host: Host) -> Result<Self, RuntimeError> {
        Ok(Self {
            config: config.tools.runtime.clone(),
            store: Store::open(config)?,
            host,
        })
    }

    /// The host functions of the configured GRACE: `grace.search` over
    /// `kb`, and `fetch` through `web_fetch` when `tools.web.fetch.enabled`
    /// and it is registered in `registry`.
    pub fn host_for(
        config: &Config,
        kb: &Arc<crate::kb::KnowledgeBase>,
        registry: &ToolRegistry,
    ) -> Host {
        let fetch = if config.tools.web.fetch.enabled {
            registry.get("web_fetch").map(fetch_through)
        } else {
            None
        };
        Host {
            search: Some(search_in(kb.clone())),
            fetch,
            scope: ReadScope::All,
        }
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    fn limits(&self) -> Limits {
        Limits {
            memory_bytes: self.config.memory_bytes,
            stack_bytes: self.config.stack_bytes,
            max_output_bytes: self.config.max_output_bytes,
            time: Duration::from_secs_f64(self.config.timeout_seconds),
        }
    }

    /// The registry entry of a stored version.
    pub fn tool(&self, stored: &StoredTool) -> RuntimeTool {
        RuntimeTool {
            name: format!("{PREFIX}{}", stored.name),
            description: stored.description.clone(),
            input_schema: stored.input_schema.clone(),
            code: stored.code.clone(),
            version: stored.version,
            status: stored.status.clone(),
            limits: self.limits(),
            host: self.host.clone(),
        }
    }

    /// Registers every live `verified` tool (start-up).
    pub fn register_all(&self, registry: &ToolRegistry) -> Result<usize, RuntimeError> {
        let mut n = 0;
        for stored in self.store.live()? {
            if stored.status == "verified" {
                registry.replace(
                    Arc::new(self.tool(&stored)),
                    self.config.policy(),
                    self.config.callers,
                )?;
                n += 1;
            }
        }
        Ok(n)
    }

    /// Checks, verifies and stores `spec` as a new tool or a new version,
    /// audited as `actor`. Registers nothing (see [`create_in`](Self::create_in)).
    pub fn create(&self, mut spec: ToolSpec, actor: Actor) -> Result<StoredTool, RuntimeError> {
        if !self.config.enabled {
            return Err(RuntimeError::Disabled);
        }
        if let Some(bare) = spec.name.strip_prefix(PREFIX) {
            spec.name = bare.to_string();
        }
        let problems = check::check(&spec, self.config.max_code_bytes);
        if !problems.is_empty() {
            self.store
                .refuse(&spec.name, actor.as_str(), &problems.join("; "))?;
            return Err(RuntimeError::Refused(problems));
        }
        let outcomes: Vec<ExampleOutcome> = spec
            .examples
            .iter()
            .map(
                |ex| match sandbox::run(&spec.code, &ex.input, self.limits(), &self.host) {
                    Ok(out) => ExampleOutcome {
                        passed: out == ex.expect,
                        output: Some(out),
                        error: None,
                    },
                    Err(e) => ExampleOutcome {
                        passed: false,
                        output: None,
                        error: Some(e.message),
                    },
                },
            )
            .collect();
        let passed = outcomes.iter().filter(|o| o.passed).count();
        let quality = passed as f64 / outcomes.len().max(1) as f64;
        let status = if passed == outcomes.len() {
            "verified"
        } else {
            "failed"
        };
        let stored = self.store.save(
            &spec,
            status,
            quality,
            &outcomes,
            actor.as_str(),
            self.config.max_tools,
        )?;
        tracing::info!(tool = %stored.name, version = stored.version, status, actor = actor.as_str(), "run-time tool stored");
        Ok(stored)
    }

    /// [`create`](Self::create), then registers it in `registry` when
    /// `verified` (replacing its previous version), or unregisters the
    /// previous version when the new one `failed`.
    pub fn create_in(
        &self,
        registry: &Registrar,
        spec: ToolSpec,
        actor: Actor,
    ) -> Result<Created, RuntimeError> {
        let stored = self.create(spec, actor)?;
        let tool = format!("{PREFIX}{}", stored.name);
        let registered = stored.status == "verified";
        if registered {
            registry.replace(
                Arc::new(self.tool(&stored)),
                self.config.policy(),
                self.config.callers,
            )?;
        } else {
            registry.unregister(&tool);
        }
        Ok(Created {
            tool,
            stored,
            registered,
        })
    }

    /// Deletes `name` (with or without `rt.`): marked deleted in the store
    /// (history kept), audited, and unregistered from `registry` when given.
    pub fn delete(
        &self,
        registry: Option<&Registrar>,
        name: &str,
        actor: Actor,
    ) -> Result<u32, RuntimeError> {
        let bare = name.strip_prefix(PREFIX).unwrap_or(name);
        let version = self
            .store
            .delete(bare, actor.as_str())?
            .ok_or_else(|| RuntimeError::NotFound(crate::text::ellipsized(bare, 60)))?;
        if let Some(r) = registry {
            r.unregister(&format!("{PREFIX}{bare}"));
        }
        Ok(version)
    }

    /// `name`'s versions and audit entries.
    pub fn history(&self, name: &str) -> Result<History, RuntimeError> {
        let bare = name.strip_prefix(PREFIX).unwrap_or(name);
        self.store
            .history(bare)?
            .ok_or_else(|| RuntimeError::NotFound(crate::text::ellipsized(bare, 60)))
    }

    /// The live tools, latest versions.
    pub fn list(&self) -> Result<Vec<StoredTool>, RuntimeError> {
        Ok(self.store.live()?)
    }
}

/// `grace.search` over a knowledge base.
pub fn search_in(kb: Arc<crate::kb::KnowledgeBase>) -> sandbox::SearchFn {
    Arc::new(move |query: &str, k: usize, scope: &ReadScope| {
        let filter = PayloadFilter::readable_by(scope.tokens());
        let passages = kb
            .search(query, Some(k), filter.as_ref())
            .map_err(|e| format!("search failed: {e}"))?;
        Ok(Value::Array(
            passages
                .into_iter()
                .map(|p| {
                    json!({"source": p.source, "section": p.section, "text": p.text, "score": p.score})
                })
                .collect(),
        ))
    })
}

/// `fetch(url)` through the registered `web_fetch` tool (its limits and
/// address rules apply): its passages as `[{source, section, text,
/// score}]`, or its data as given.
pub fn fetch_through(web_fetch: Arc<dyn Tool>) -> sandbox::FetchFn {
    Arc::new(move |url: &str| {
        let result = web_fetch
            .execute(&json!({"url": url}), &ReadScope::All)
            .map_err(|e| e.to_string())?;
        if !result.success {
            return Err(result.error.unwrap_or_else(|| "fetch failed".to_string()));
        }
        Ok(match result.output {
            ToolOutput::Passages(ps) => Value::Array(
                ps.into_iter()
                    .map(|p| {
                        json!({"source": p.source, "section": p.section, "text": p.text, "score": p.score})
                    })
                    .collect(),
            ),
            ToolOutput::Data(v) => v,
            _ => Value::Null,
        })
    })
}

/// Registers the stored tools and, when allowed, the agent's
/// `create_tool` (called from `tools::assemble::extend` when
/// `tools.runtime.enabled`).
pub fn extend(
    registry: &ToolRegistry,
    config: &Config,
    kb: &Arc<crate::kb::KnowledgeBase>,
) -> crate::error::Result<()> {
    if !config.tools.runtime.enabled {
        return Ok(());
    }
    let host = RuntimeTools::host_for(config, kb, registry);
    let tools = RuntimeTools::open(config, host).map_err(RuntimeError::into_tool_error)?;
    let n = tools
        .register_all(registry)
        .map_err(RuntimeError::into_tool_error)?;
    tracing::debug!(registered = n, "run-time tools");
    if config.tools.runtime.allow_agent_create {
        let rt = &config.tools.runtime;
        // One verification run per example, each within the budget.
        let policy = ToolPolicy {
            timeout_seconds: rt.timeout_seconds * (check::MAX_EXAMPLES as f64 + 1.0),
            retry_count: 0,
            retry_delay_seconds: 0.0,
        };
        registry.register(
            Arc::new(CreateTool {
                tools: Arc::new(tools),
                registrar: registry.registrar(),
            }),
            policy,
            Callers::AGENT,
        )?;
    }
    Ok(())
}
