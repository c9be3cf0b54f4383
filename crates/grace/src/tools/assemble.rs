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
/// crate's features), naming the key and the feature. `tools.runtime`, on
/// by default, asks for `js-tools` only where it asks for more than the
/// default: the agent or MCP clients creating tools. Tools already stored
/// (the `grace` command keeps a store in every knowledge base it asks) are
/// not offered by such a build, and it says so once at start.
fn check_features(config: &Config) -> crate::error::Result<()> {
    let web = &config.tools.web;
    let runtime = &config.tools.runtime;
    // What the configuration asks for, and whether this build has it.
    let features = [
        (
            web.fetch.enabled || web.search.enabled,
            "tools.web",
            "web-tools",
            cfg!(feature = "web-tools"),
        ),
        (
            runtime.enabled && runtime.allow_agent_create,
            "tools.runtime.allow_agent_create",
            "js-tools",
            cfg!(feature = "js-tools"),
        ),
        (
            runtime.enabled && runtime.allow_mcp_create,
            "tools.runtime.allow_mcp_create",
            "js-tools",
            cfg!(feature = "js-tools"),
        ),
        (
            config.tools.mcp_servers.iter().any(|s| s.enabled),
            "tools.mcp_servers",
            "mcp-client",
            cfg!(feature = "mcp-client"),
        ),
    ];
    if let Some((_, key, feature, _)) = features
        .into_iter()
        .find(|(asked, .., built)| *asked && !built)
    {
        return Err(crate::error::Error::FeatureOff { key, feature });
    }
    #[cfg(not(feature = "js-tools"))]
    if runtime.enabled
        && (config.storage.state == crate::config::StateBackend::Postgres
            || config.runtime_tools_path().exists())
    {
        tracing::warn!(
            "tools.runtime.enabled: run-time tools this knowledge base may keep are not offered: \
             this build of GRACE has no `js-tools` feature"
        );
    }
    Ok(())
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

    /// Run-time tools are on by default: a build without JavaScript opens
    /// a knowledge base whether or not tools are stored there (it does not
    /// offer them), and refuses only a setting that asks for more: the
    /// agent or MCP clients creating tools.
    #[test]
    fn run_time_tools_asked_of_a_build_without_them_are_refused_only_when_asked_for() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = Config::default();
        config.storage.data_dir = dir.path().to_path_buf();
        assert!(config.tools.runtime.enabled, "on by default");
        std::fs::write(config.runtime_tools_path(), b"").unwrap();
        assert!(
            check_features(&config).is_ok(),
            "a store alone asks for nothing"
        );
        for (key, set) in [
            ("tools.runtime.allow_agent_create", (true, false)),
            ("tools.runtime.allow_mcp_create", (false, true)),
        ] {
            let mut asking = config.clone();
            (
                asking.tools.runtime.allow_agent_create,
                asking.tools.runtime.allow_mcp_create,
            ) = set;
            let result = check_features(&asking);
            if cfg!(feature = "js-tools") {
                assert!(result.is_ok(), "{result:?}");
            } else {
                assert!(
                    matches!(result, Err(crate::error::Error::FeatureOff { key: k, feature: "js-tools" }) if k == key),
                    "{key}"
                );
            }
            asking.tools.runtime.enabled = false;
            assert!(check_features(&asking).is_ok(), "off, nothing is asked");
        }
    }
}
