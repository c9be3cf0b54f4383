//! `grace tools …`: the registered tools with their schema, policy, origin
//! and statistics; usage statistics alone; the reflection report; and
//! re-enabling a tool reflection disabled.

use clap::Subcommand;
use grace::tools::stats::ToolStats;
use grace::{Config, Grace};

use crate::output;

#[derive(Debug, Subcommand)]
pub enum ToolsCommand {
    /// The registered tools: schema, policy, origin, who may see them,
    /// statistics and health (connects to configured MCP servers)
    List,
    /// Usage statistics of every tool ever called: calls, successes,
    /// failures by kind, p50/p95 latency, last use
    Stats,
    /// What needs attention: unreliable or disabled tools, slow tools,
    /// tools registered but never used, recurring failures (reads the
    /// statistics only, so it also runs beside `grace serve`)
    Reflect,
    /// Clear a tool's unreliable or disabled mark
    Enable {
        /// The tool's name, as `grace tools list` shows it
        name: String,
    },
    #[command(flatten)]
    Runtime(crate::tools_runtime::RuntimeCommand),
}

/// Runs a `grace tools` command; the exit code.
pub fn run(config: Config, command: &ToolsCommand, json: bool) -> grace::Result<u8> {
    match command {
        ToolsCommand::List => {
            let grace = Grace::open(config)?;
            output::tool_list(&grace.registry().describe(), json);
        }
        ToolsCommand::Stats => {
            let stats = open_stats(&config)?;
            output::tool_usage(&stats.all()?, json);
        }
        ToolsCommand::Reflect => {
            output::reflection(&open_stats(&config)?.reflect()?, json);
        }
        ToolsCommand::Runtime(command) => return crate::tools_runtime::run(command, &config, json),
        ToolsCommand::Enable { name } => {
            open_stats(&config)?.enable(name)?;
            if json {
                output::print_json_line(&serde_json::json!({"enabled": name}));
            } else {
                println!("{name}: marks cleared; it is offered again");
            }
        }
    }
    Ok(0)
}

pub fn open_stats(config: &Config) -> grace::Result<ToolStats> {
    Ok(ToolStats::open(config)?)
}
