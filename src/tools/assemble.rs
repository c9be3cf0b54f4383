//! Building the registry from the configuration: the built-in tools, then
//! the web tools, stored run-time tools and other MCP servers' tools. It
//! stands above the registry and every tool family it assembles, so none of
//! them depends on the others.

use std::sync::Arc;

use super::Reasoning;
use super::ToolRegistry;
use super::stats::ToolStats;
use crate::config::Config;
use crate::kb::KnowledgeBase;
use crate::llm;

impl ToolRegistry {
    /// The tools config names: the built-in tools in `tools.enabled` (the
    /// generator only when `reasoning` is enabled), then the enabled web
    /// tools, run-time tools and other MCP servers' tools, with usage
    /// statistics in `<data_dir>/tool_stats.sqlite3`. A generator that is
    /// not set up (Gemini without `GEMINI_API_KEY`) fails here, before any
    /// question is asked.
    pub fn from_config(config: &Config, kb: Arc<KnowledgeBase>) -> crate::error::Result<Self> {
        let generator = if config.tools.enabled.iter().any(|n| n == Reasoning::NAME) {
            Some(llm::from_config(&config.llm, kb.embedder_handle())?)
        } else {
            None
        };
        Self::from_config_with(config, kb, generator)
    }

    /// [`from_config`](Self::from_config) with a given generator for
    /// `reasoning` (required when it is enabled).
    pub fn from_config_with(
        config: &Config,
        kb: Arc<KnowledgeBase>,
        generator: Option<Arc<dyn llm::LlmClient>>,
    ) -> crate::error::Result<Self> {
        let stats = ToolStats::open(config)?;
        let registry = Self::builtins(config, kb.clone(), generator)?.with_stats(Arc::new(stats));
        extend(&registry, config, &kb)?;
        Ok(registry)
    }
}

/// Registers the tools beyond the built-in ones that config enables: the
/// web tools, stored run-time tools, and other MCP servers' tools.
fn extend(
    registry: &ToolRegistry,
    config: &Config,
    kb: &Arc<KnowledgeBase>,
) -> crate::error::Result<()> {
    // The web tools first: run-time tools are granted `web_fetch` if it is there.
    super::web::register(registry, config, kb)?;
    super::runtime::extend(registry, config, kb)?;
    super::mcp_client::register(registry, config, kb);
    Ok(())
}
