//! The tools a run may call and the call policy: a timeout per call,
//! retries with exponential backoff for transient failures and timeouts
//! only, who may see each tool, and usage statistics for each call.
//!
//! The registry is built from config (the built-in tools in
//! `tools.enabled`, then the web tools, run-time tools and other MCP
//! servers' tools), and tools may be added and removed while it serves
//! (a run-time tool created, a reconnected server's tools).

mod call;

use std::sync::{Arc, RwLock};

use serde::Serialize;
use serde_json::Value;

use super::stats::{Health, ToolStats, ToolUsage};
use super::{AskUser, Origin, RagSearch, Reasoning, Tool, ToolError, ToolErrorKind};
use crate::config::{Caller, Callers, Config, ToolPolicy};
use crate::llm::ToolSpec;
use crate::{kb::KnowledgeBase, llm};

/// What a tool name looks like, for published schemas (a superset of
/// [`valid_tool_name`]: a name that is not registered is not found).
pub const TOOL_NAME_PATTERN: &str = r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$";

/// Characters of a tool name at most.
const MAX_NAME_CHARS: usize = 64;

/// Whether `name` may name a tool: 1-64 characters, dot-separated parts of
/// ASCII letters, digits, `_` and `-`, the first starting with a letter
/// (`rag_search`, `mcp.tickets.find-issue`, `rt.word_count`). Models'
/// function-calling APIs accept these names as they are.
pub fn valid_tool_name(name: &str) -> bool {
    name.len() <= MAX_NAME_CHARS
        && name.starts_with(|c: char| c.is_ascii_alphabetic())
        && name.split('.').all(|part| {
            !part.is_empty()
                && part
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        })
}

/// One registered tool with its policy and who may see it.
#[derive(Clone)]
struct Entry {
    tool: Arc<dyn Tool>,
    policy: ToolPolicy,
    callers: Callers,
}

/// Everything about a registered tool (`grace tools list`, `GET /v1/tools`).
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct ToolInfo {
    /// The tool's name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// JSON schema of its input.
    pub input_schema: Value,
    /// Where it comes from.
    pub origin: Origin,
    /// Seconds one call may take.
    pub timeout_seconds: f64,
    /// Retries after a timeout or a transient failure.
    pub retry_count: u32,
    /// Who may see it.
    pub callers: Vec<Caller>,
    /// Its usage (zeros without a statistics store).
    pub stats: Option<ToolUsage>,
    /// Whether it is offered.
    #[serde(flatten)]
    pub health: Health,
}

/// Adds and removes tools of a [`ToolRegistry`] from elsewhere (a
/// background reconnection, a tool call that creates a tool); does
/// nothing once the registry is gone.
#[derive(Clone)]
pub struct Registrar {
    tools: std::sync::Weak<RwLock<Vec<Entry>>>,
    stats: Option<Arc<ToolStats>>,
}

impl std::fmt::Debug for Registrar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registrar")
            .field("live", &self.is_live())
            .finish()
    }
}

impl Registrar {
    /// Whether the registry is still there.
    pub fn is_live(&self) -> bool {
        self.tools.strong_count() > 0
    }

    fn add(
        &self,
        tool: Arc<dyn Tool>,
        policy: ToolPolicy,
        callers: Callers,
        replace: bool,
    ) -> Result<(), ToolError> {
        let name = tool.name().to_string();
        if !valid_tool_name(&name) {
            return Err(ToolError::new(
                crate::text::truncate_chars(&name, 80),
                ToolErrorKind::InvalidInput,
                "not a valid tool name (1-64 letters, digits, `_`, `-`, dot-separated)",
            ));
        }
        let Some(tools) = self.tools.upgrade() else {
            return Err(ToolError::new(
                &name,
                ToolErrorKind::Failed,
                "the registry is gone (GRACE is shutting down)",
            ));
        };
        let mut tools = tools.write().unwrap_or_else(|p| p.into_inner());
        match tools.iter().position(|e| e.tool.name() == name) {
            Some(i) if replace => {
                tools.remove(i);
            }
            Some(_) => {
                return Err(ToolError::new(
                    &name,
                    ToolErrorKind::InvalidInput,
                    "a tool of that name is already registered",
                ));
            }
            None => {}
        }
        tools.push(Entry {
            tool,
            policy,
            callers,
        });
        drop(tools);
        if let Some(stats) = &self.stats {
            note_seen(stats, &name);
        }
        Ok(())
    }

    /// Adds a tool; a name that is not [valid](valid_tool_name) or already
    /// registered is refused.
    pub fn register(
        &self,
        tool: Arc<dyn Tool>,
        policy: ToolPolicy,
        callers: Callers,
    ) -> Result<(), ToolError> {
        self.add(tool, policy, callers, false)
    }

    /// Adds a tool, or replaces the one of the same name.
    pub fn replace(
        &self,
        tool: Arc<dyn Tool>,
        policy: ToolPolicy,
        callers: Callers,
    ) -> Result<(), ToolError> {
        self.add(tool, policy, callers, true)
    }

    /// Removes the tool called `name`; whether there was one.
    pub fn unregister(&self, name: &str) -> bool {
        let Some(tools) = self.tools.upgrade() else {
            return false;
        };
        let mut tools = tools.write().unwrap_or_else(|p| p.into_inner());
        let before = tools.len();
        tools.retain(|e| e.tool.name() != name);
        tools.len() != before
    }
}

/// The registered tools, each with its call policy.
pub struct ToolRegistry {
    tools: Arc<RwLock<Vec<Entry>>>,
    /// The generator `reasoning` answers with (the planner uses it too).
    generator: Option<Arc<dyn llm::LlmClient>>,
    /// Usage statistics and health, when kept.
    stats: Option<Arc<ToolStats>>,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRegistry")
            .field("tools", &self.names())
            .finish()
    }
}

impl ToolRegistry {
    /// The built-in tools named in `tools.enabled`, and no others.
    pub fn builtins(
        config: &Config,
        kb: Arc<KnowledgeBase>,
        generator: Option<Arc<dyn llm::LlmClient>>,
    ) -> Result<Self, ToolError> {
        let tc = &config.tools;
        let mut tools = Vec::new();
        for name in &tc.enabled {
            let entry = match name.as_str() {
                RagSearch::NAME => Entry {
                    tool: Arc::new(RagSearch::new(kb.clone(), tc.rag_search.limit)),
                    policy: tc.rag_search.policy(),
                    callers: tc.rag_search.callers,
                },
                Reasoning::NAME => {
                    let generator = generator.clone().ok_or_else(|| {
                        ToolError::new(
                            Reasoning::NAME,
                            ToolErrorKind::Failed,
                            "enabled without a generator",
                        )
                    })?;
                    Entry {
                        tool: Arc::new(Reasoning::new(generator)?),
                        policy: tc.reasoning.policy(),
                        callers: tc.reasoning.callers,
                    }
                }
                AskUser::NAME => Entry {
                    tool: Arc::new(AskUser),
                    policy: tc.ask_user.policy(),
                    callers: tc.ask_user.callers,
                },
                other => {
                    return Err(ToolError::new(
                        other,
                        ToolErrorKind::Unknown,
                        format!(
                            "unknown tool in tools.enabled (known: {})",
                            super::TOOL_NAMES.join(", ")
                        ),
                    ));
                }
            };
            tools.push(entry);
        }
        // Kept only when `reasoning` uses it (the planner asks the same model).
        let generator =
            generator.filter(|_| tools.iter().any(|e| e.tool.name() == Reasoning::NAME));
        Ok(Self {
            tools: Arc::new(RwLock::new(tools)),
            generator,
            stats: None,
        })
    }

    /// A registry of the given tools, seen by every caller (for tests and
    /// embedding applications).
    pub fn with_tools(tools: Vec<(Arc<dyn Tool>, ToolPolicy)>) -> Self {
        Self {
            tools: Arc::new(RwLock::new(
                tools
                    .into_iter()
                    .map(|(tool, policy)| Entry {
                        tool,
                        policy,
                        callers: Callers::ALL,
                    })
                    .collect(),
            )),
            generator: None,
            stats: None,
        }
    }

    /// Keeps usage statistics (and health marks) in `stats`, which learns
    /// of every tool registered from now on.
    pub fn with_stats(mut self, stats: Arc<ToolStats>) -> Self {
        for name in self.names() {
            note_seen(&stats, &name);
        }
        self.stats = Some(stats);
        self
    }

    /// The statistics store, when kept.
    pub fn stats(&self) -> Option<&Arc<ToolStats>> {
        self.stats.as_ref()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Vec<Entry>> {
        self.tools.read().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds a tool; a name that is not [valid](valid_tool_name) or already
    /// registered is refused.
    pub fn register(
        &self,
        tool: Arc<dyn Tool>,
        policy: ToolPolicy,
        callers: Callers,
    ) -> Result<(), ToolError> {
        self.registrar().register(tool, policy, callers)
    }

    /// Adds a tool, or replaces the one of the same name (a run-time
    /// tool's new version) in one step: no call sees it missing.
    pub fn replace(
        &self,
        tool: Arc<dyn Tool>,
        policy: ToolPolicy,
        callers: Callers,
    ) -> Result<(), ToolError> {
        self.registrar().replace(tool, policy, callers)
    }

    /// Removes the tool called `name`; whether there was one.
    pub fn unregister(&self, name: &str) -> bool {
        self.registrar().unregister(name)
    }

    /// A handle that adds and removes tools later (a server that comes
    /// back, a tool the agent creates during a call) without keeping the
    /// registry alive.
    pub fn registrar(&self) -> Registrar {
        Registrar {
            tools: Arc::downgrade(&self.tools),
            stats: self.stats.clone(),
        }
    }

    /// The generator `reasoning` answers with, when it is enabled.
    pub fn generator(&self) -> Option<Arc<dyn llm::LlmClient>> {
        self.generator.clone()
    }

    fn health(&self, name: &str) -> Health {
        self.stats.as_ref().map_or(Health::Ok, |s| s.health(name))
    }

    /// What `caller` is offered: the tools its policy lets it see, not
    /// disabled; an unreliable tool's description starts with the mark.
    pub fn catalogue(&self, caller: Caller) -> Vec<ToolSpec> {
        self.read()
            .iter()
            .filter(|e| e.callers.allows(caller))
            .filter_map(|e| {
                let name = e.tool.name().to_string();
                let description = match self.health(&name) {
                    Health::Ok => e.tool.description().to_string(),
                    Health::Unreliable(why) => {
                        format!("[unreliable: {why}] {}", e.tool.description())
                    }
                    Health::Disabled(_) => return None,
                };
                Some(ToolSpec {
                    name,
                    description,
                    parameters: e.tool.input_schema(),
                })
            })
            .collect()
    }

    /// What a planner may use: the agent's catalogue but `ask_user`
    /// (whether to ask a human is the executor's decision, not the plan's).
    pub fn plannable(&self) -> Vec<ToolSpec> {
        self.catalogue(Caller::Agent)
            .into_iter()
            .filter(|t| t.name != AskUser::NAME)
            .collect()
    }

    /// Every registered tool with its policy, origin, statistics and health.
    pub fn describe(&self) -> Vec<ToolInfo> {
        self.read()
            .iter()
            .map(|e| {
                let name = e.tool.name().to_string();
                let stats = self.stats.as_ref().and_then(|s| match s.usage(&name) {
                    Ok(u) => Some(u),
                    Err(err) => {
                        tracing::warn!(tool = %name, error = %err, "cannot read tool statistics");
                        None
                    }
                });
                ToolInfo {
                    description: e.tool.description().to_string(),
                    input_schema: e.tool.input_schema(),
                    origin: e.tool.origin(),
                    timeout_seconds: e.policy.timeout_seconds,
                    retry_count: e.policy.retry_count,
                    callers: e.callers.list(),
                    stats,
                    health: self.health(&name),
                    name,
                }
            })
            .collect()
    }

    /// Names of the registered tools, in registration order.
    pub fn names(&self) -> Vec<String> {
        self.read()
            .iter()
            .map(|e| e.tool.name().to_string())
            .collect()
    }

    /// The tool called `name`, if registered.
    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.read()
            .iter()
            .find(|e| e.tool.name() == name)
            .map(|e| e.tool.clone())
    }

    /// Whether `caller` may call the tool `name` (registered, its policy
    /// lets the caller see it, not disabled).
    pub fn visible_to(&self, name: &str, caller: Caller) -> bool {
        self.read()
            .iter()
            .any(|e| e.tool.name() == name && e.callers.allows(caller))
            && !matches!(self.health(name), Health::Disabled(_))
    }
}

fn note_seen(stats: &ToolStats, name: &str) {
    if let Err(e) = stats.seen(name) {
        tracing::warn!(tool = name, error = %e, "cannot record the tool in the statistics");
    }
}

#[cfg(test)]
mod tests;
