//! The tools as `grace tools …` shows them: the registry with schema,
//! policy and origin, usage figures, the reflection report, and run-time
//! tools' creation, history and runs.

use grace::tools::runtime::{History as ToolHistory, StoredTool};
use grace::tools::stats::{Health, Reflection, ToolUsage};
use grace::tools::{ToolInfo, ToolOutput, ToolResult};
use serde::Serialize;

use super::{json_or, print_json_line};

fn health(h: &Health) -> String {
    match h {
        Health::Ok => "ok".into(),
        Health::Unreliable(why) => format!("UNRELIABLE ({why})"),
        Health::Disabled(why) => format!("DISABLED ({why})"),
    }
}

/// One line of figures: `12 calls, 11 ok, 1 timeout, p50 12 ms, p95 40 ms, last 2026-…`.
pub fn figures(u: &ToolUsage) -> String {
    let mut parts = vec![
        super::counted(usize::try_from(u.calls).unwrap_or(usize::MAX), "call"),
        format!("{} ok", u.successes),
    ];
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

pub fn tool_list(tools: &[ToolInfo], json: bool) {
    if json {
        print_json_line(&serde_json::json!({ "tools": tools }));
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

pub fn tool_usage(all: &[(String, ToolUsage)], json: bool) {
    if json {
        print_json_line(&serde_json::json!({ "tools": usage_lines(all) }));
        return;
    }
    if all.is_empty() {
        println!("no tool has been called yet");
    }
    for (name, u) in all {
        println!("{name}  [{}]  {}", health(&u.health), figures(u));
    }
}

pub fn reflection(r: &Reflection, json: bool) {
    if json {
        print_json_line(r);
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

/// A run-time tool just created: its version, status and each example's
/// verification.
pub fn runtime_tool_created(stored: &StoredTool, json: bool) {
    json_or(json, &stored, || {
        println!(
            "rt.{} version {}: {} (quality {:.2}){}",
            stored.name,
            stored.version,
            stored.status,
            stored.quality,
            if stored.status == "verified" {
                ""
            } else {
                "; not offered to callers until a version passes its examples"
            }
        );
        for (i, o) in stored.verification.iter().enumerate() {
            let how = match (&o.error, &o.output) {
                (Some(e), _) => format!("error: {e}"),
                (None, Some(v)) => format!("gave {v}"),
                (None, None) => String::new(),
            };
            let mark = if o.passed { "pass" } else { "FAIL" };
            println!("  example {}: {mark} {how}", i + 1);
        }
    });
}

/// A run-time tool's versions and audit trail.
pub fn runtime_tool_history(history: &ToolHistory, json: bool) {
    json_or(json, &history, || {
        let state = if history.deleted { " (deleted)" } else { "" };
        println!("rt.{}{state}", history.name);
        for v in &history.versions {
            println!(
                "  v{} {} quality {:.2} by {} at {}",
                v.version,
                v.status,
                v.quality,
                v.actor,
                v.created_at.format("%Y-%m-%d %H:%M:%S UTC")
            );
        }
        for a in &history.audit {
            let version = a.version.map(|v| format!(" v{v}")).unwrap_or_default();
            println!(
                "  {} {} {}{version} by {}: {}",
                a.at.format("%Y-%m-%d %H:%M:%S UTC"),
                a.action,
                a.name,
                a.actor,
                a.detail
            );
        }
    });
}

/// One tool call's result: its data, or its error on stderr.
pub fn tool_result(result: &ToolResult, json: bool) {
    json_or(json, &result, || match (&result.output, &result.error) {
        (ToolOutput::Data(v), _) => println!(
            "{}",
            serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string())
        ),
        (_, Some(e)) => eprintln!("error: {e}"),
        _ => {}
    });
}
