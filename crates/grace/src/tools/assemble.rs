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
#[cfg_attr(
    not(all(feature = "web-tools", feature = "js-tools", feature = "mcp-client")),
    allow(unused_variables)
)]
fn extend(
    registry: &ToolRegistry,
    config: &Config,
    kb: &Arc<KnowledgeBase>,
) -> crate::error::Result<()> {
    check_features(config)?;
    // The web tools first: run-time tools are granted `web_fetch` if it is there.
    #[cfg(feature = "web-tools")]
    super::web::register(registry, config, kb)?;
    #[cfg(feature = "js-tools")]
    super::runtime::extend(registry, config, kb)?;
    #[cfg(feature = "mcp-client")]
    super::mcp_client::register(registry, config, kb);
    Ok(())
}

/// Refuses a setting whose tools this build was compiled without (the
/// crate's features), naming the key and the feature. `tools.runtime`,
/// on by default, asks for `js-tools` only when there may be stored tools
/// to offer (their SQLite file exists, or the state is in PostgreSQL): a
/// library build without JavaScript opens the default configuration.
fn check_features(config: &Config) -> crate::error::Result<()> {
    let web = &config.tools.web;
    let runtime_tools = config.tools.runtime.enabled
        && (config.storage.state == crate::config::StateBackend::Postgres
            || config.runtime_tools_path().exists());
    let wanted = [
        (
            web.fetch.enabled || web.search.enabled,
            "tools.web",
            "web-tools",
        ),
        (runtime_tools, "tools.runtime.enabled", "js-tools"),
        (
            config.tools.mcp_servers.iter().any(|s| s.enabled),
            "tools.mcp_servers",
            "mcp-client",
        ),
    ];
    let built = [
        cfg!(feature = "web-tools"),
        cfg!(feature = "js-tools"),
        cfg!(feature = "mcp-client"),
    ];
    match wanted
        .iter()
        .zip(built)
        .find(|((on, ..), built)| *on && !built)
    {
        Some(((_, key, feature), _)) => Err(crate::error::Error::FeatureOff { key, feature }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A library user who enables web tools in a build without them hears
    /// which key and which feature, instead of a registry silently without
    /// the tools (with every feature, the same configuration is taken).
    #[test]
    fn a_web_tool_the_build_lacks_is_refused_naming_the_key_and_the_feature() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = Config::default();
        config.storage.data_dir = dir.path().to_path_buf();
        assert!(
            check_features(&config).is_ok(),
            "the default configuration opens in any build"
        );
        config.tools.web.fetch.enabled = true;
        let result = check_features(&config);
        if cfg!(feature = "web-tools") {
            assert!(result.is_ok(), "{result:?}");
        } else {
            let e = result.unwrap_err();
            assert!(matches!(
                e,
                crate::error::Error::FeatureOff {
                    key: "tools.web",
                    feature: "web-tools"
                }
            ));
            assert!(e.to_string().contains("features = [\"web-tools\"]"), "{e}");
            assert_eq!(e.exit_code(), crate::error::EXIT_BAD_INPUT);
        }
    }

    /// Run-time tools are on by default; a build without JavaScript opens
    /// a knowledge base with none stored, and refuses one that has some
    /// rather than dropping them unseen.
    #[test]
    fn stored_run_time_tools_the_build_cannot_run_are_refused_and_none_stored_is_fine() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = Config::default();
        config.storage.data_dir = dir.path().to_path_buf();
        assert!(config.tools.runtime.enabled, "on by default");
        assert!(check_features(&config).is_ok());
        std::fs::write(config.runtime_tools_path(), b"").unwrap();
        let result = check_features(&config);
        if cfg!(feature = "js-tools") {
            assert!(result.is_ok(), "{result:?}");
        } else {
            assert!(matches!(
                result,
                Err(crate::error::Error::FeatureOff {
                    key: "tools.runtime.enabled",
                    feature: "js-tools"
                })
            ));
        }
        config.tools.runtime.enabled = false;
        assert!(check_features(&config).is_ok());
    }
}
