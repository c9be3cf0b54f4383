//! `grace tools …`: the registered tools with their schema, policy, origin
//! and statistics; usage statistics alone; the reflection report; and
//! re-enabling a tool reflection disabled.

use clap::Subcommand;
use grace::tools::ToolInfo;
use grace::tools::stats::{Health, Reflection, ToolStats, ToolUsage};
use grace::{Config, Grace};
use serde::Serialize;

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
            list(&grace.registry().describe(), json);
        }
        ToolsCommand::Stats => {
            let stats = open_stats(&config)?;
            usage(&stats.all()?, json);
        }
        ToolsCommand::Reflect => {
            reflect(&open_stats(&config)?.reflect()?, json);
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
    Ok(ToolStats::open(
        &config.tool_stats_path(),
        config.tools.reflection.clone(),
    )?)
}

fn health(h: &Health) -> String {
    match h {
        Health::Ok => "ok".into(),
        Health::Unreliable(why) => format!("UNRELIABLE ({why})"),
        Health::Disabled(why) => format!("DISABLED ({why})"),
    }
}

/// One line of figures: `12 calls, 11 ok, 1 timeout, p50 12 ms, p95 40 ms, last 2026-…`.
pub fn figures(u: &ToolUsage) -> String {
    let mut parts = vec![format!("{} calls", u.calls), format!("{} ok", u.successes)];
    for (kind, n) in &u.failures {
        parts.push(format!("{n} {kind}"));
    }
    if let (Some(p50), Some(p95)) = (u.p50_ms, u.p95_ms) {
        parts.push(format!("p50 {}", ms(p50)));
        parts.push(format!("p95 {}", ms(p95)));
    }
    if let Some(last) = &u.last_used {
        parts.push(format!("last {last}"));
    }
    parts.join(", ")
}

/// Milliseconds, with a decimal below 10.
fn ms(v: f64) -> String {
    if v < 10.0 {
        format!("{v:.1} ms")
    } else {
        format!("{v:.0} ms")
    }
}

/// An input schema in one line: `query: string*, limit: integer` (`*`: required).
fn schema_line(schema: &serde_json::Value) -> String {
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|a| a.iter().filter_map(|v| v.as_str()).collect())
        .unwrap_or_default();
    let Some(props) = schema["properties"].as_object() else {
        return "(any)".into();
    };
    props
        .iter()
        .map(|(k, v)| {
            let ty = v["type"].as_str().unwrap_or("any");
            let star = if required.contains(&k.as_str()) {
                "*"
            } else {
                ""
            };
            format!("{k}: {ty}{star}")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn list(tools: &[ToolInfo], json: bool) {
    if json {
        output::print_json_line(&serde_json::json!({ "tools": tools }));
        return;
    }
    for t in tools {
        let origin = match &t.origin {
            grace::tools::Origin::BuiltIn => "built-in".to_string(),
            grace::tools::Origin::Mcp { server, tool } => format!("MCP server {server} ({tool})"),
            grace::tools::Origin::Web => "web".to_string(),
            grace::tools::Origin::Runtime { version, status } => {
                format!("run-time script v{version}, {status}")
            }
        };
        let callers: Vec<&str> = t.callers.iter().map(|c| c.as_str()).collect();
        println!("{}  [{}]", t.name, health(&t.health));
        println!("  {}", t.description);
        println!("  origin   {origin}");
        println!("  input    {}", schema_line(&t.input_schema));
        println!(
            "  policy   timeout {} s, retries {}; callers {}",
            t.timeout_seconds,
            t.retry_count,
            callers.join(", ")
        );
        if let Some(u) = &t.stats {
            println!("  usage    {}", figures(u));
        }
    }
    if tools.is_empty() {
        println!("no tools are registered (tools.enabled is empty)");
    }
}

/// A tool's usage as JSON: its name and figures in one object.
#[derive(Serialize)]
pub struct UsageLine<'a> {
    name: &'a str,
    #[serde(flatten)]
    usage: &'a ToolUsage,
}

/// Each tool's [`UsageLine`].
pub fn usage_lines(all: &[(String, ToolUsage)]) -> Vec<UsageLine<'_>> {
    all.iter()
        .map(|(name, usage)| UsageLine { name, usage })
        .collect()
}

fn usage(all: &[(String, ToolUsage)], json: bool) {
    if json {
        output::print_json_line(&serde_json::json!({ "tools": usage_lines(all) }));
        return;
    }
    if all.is_empty() {
        println!("no tool has been called yet");
    }
    for (name, u) in all {
        println!("{name}  [{}]  {}", health(&u.health), figures(u));
    }
}

fn reflect(r: &Reflection, json: bool) {
    if json {
        output::print_json_line(r);
        return;
    }
    println!("unreliable or disabled:");
    for (name, h) in &r.unreliable {
        println!("  {name}: {}", health(h));
    }
    if r.unreliable.is_empty() {
        println!("  none");
    }
    println!("slow (p95 above tools.reflection.slow_seconds):");
    for (name, p95) in &r.slow {
        println!("  {name}: p95 {p95:.0} ms");
    }
    if r.slow.is_empty() {
        println!("  none");
    }
    println!("never used:");
    if r.never_used.is_empty() {
        println!("  none");
    } else {
        println!("  {}", r.never_used.join(", "));
    }
    println!("recurring failures (among the calls kept):");
    for p in r.patterns.iter().take(20) {
        println!("  {} × {} {}: {}", p.count, p.tool, p.kind, p.pattern);
    }
    if r.patterns.is_empty() {
        println!("  none");
    }
}
