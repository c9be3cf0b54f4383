//! Checks of the `tools` section: the enabled names, every tool's timeout
//! and retries, other MCP servers, the web tools, runtime tools and the
//! reflection thresholds.

use crate::config::Result;
use crate::config::check::{above_zero, in_range, invalid};

/// The names in `tools.enabled` are checked by whoever builds the registry
/// (`ToolRegistry::from_config`) against the tools it has: config is data
/// and knows no layer above it.
pub(crate) fn validate_tools(t: &crate::config::ToolsConfig) -> Result<()> {
    for (i, name) in t.enabled.iter().enumerate() {
        if t.enabled[..i].contains(name) {
            return Err(invalid(
                "tools.enabled",
                format!("`{name}` is listed twice"),
            ));
        }
    }
    let mut policies = vec![
        (crate::config::RAG_SEARCH.to_string(), t.rag_search.policy()),
        (crate::config::REASONING.to_string(), t.reasoning.policy()),
        (crate::config::ASK_USER.to_string(), t.ask_user.policy()),
        ("web.fetch".to_string(), t.web.fetch.policy()),
        ("web.search".to_string(), t.web.search.policy()),
        ("runtime".to_string(), t.runtime.policy()),
    ];
    for (i, s) in t.mcp_servers.iter().enumerate() {
        validate_mcp_server(i, s, &t.mcp_servers[..i])?;
        policies.push((format!("mcp_servers[{i}]"), s.policy()));
        for (name, o) in &s.tools {
            let p = crate::config::ToolPolicy {
                timeout_seconds: o.timeout_seconds.unwrap_or(s.timeout_seconds),
                retry_count: o.retry_count.unwrap_or(s.retry_count),
                retry_delay_seconds: o.retry_delay_seconds.unwrap_or(s.retry_delay_seconds),
            };
            policies.push((format!("mcp_servers[{i}].tools.{name}"), p));
        }
    }
    validate_web(&t.web)?;
    validate_runtime(&t.runtime)?;
    validate_reflection(&t.reflection)?;
    for (tool, p) in policies {
        in_range(
            &format!("tools.{tool}.timeout_seconds"),
            p.timeout_seconds,
            above_zero(86_400.0),
            " seconds",
        )?;
        in_range(
            &format!("tools.{tool}.retry_count"),
            p.retry_count,
            0..=10,
            "",
        )?;
        in_range(
            &format!("tools.{tool}.retry_delay_seconds"),
            p.retry_delay_seconds,
            0.0..=600.0,
            "",
        )?;
    }
    in_range(
        "tools.rag_search.limit",
        t.rag_search.limit,
        1..=crate::config::MAX_RAG_SEARCH_LIMIT,
        "",
    )?;
    Ok(())
}

fn validate_mcp_server(
    i: usize,
    s: &crate::config::McpServerConfig,
    before: &[crate::config::McpServerConfig],
) -> Result<()> {
    let key = |k: &str| format!("tools.mcp_servers[{i}].{k}");
    let name_ok = !s.name.is_empty()
        && s.name.len() <= 32
        && s.name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && s.name.starts_with(|c: char| c.is_ascii_lowercase());
    if !name_ok {
        return Err(invalid(
            &key("name"),
            format!(
                "`{}` must be 1-32 lowercase letters, digits or `_`, starting with a letter \
                 (tools are named mcp.<name>.<tool>)",
                s.name
            ),
        ));
    }
    if before.iter().any(|b| b.name == s.name) {
        return Err(invalid(
            &key("name"),
            format!("`{}` is used by another server", s.name),
        ));
    }
    match (&s.command, &s.url) {
        (Some(c), None) if !c.trim().is_empty() => {}
        (None, Some(u)) if u.starts_with("http://") || u.starts_with("https://") => {}
        (None, Some(u)) => {
            return Err(invalid(
                &key("url"),
                format!("`{u}` must be an http:// or https:// URL"),
            ));
        }
        _ => {
            return Err(invalid(
                &key("command"),
                "give exactly one of `command` (a program on stdio) and `url` (streamable HTTP)",
            ));
        }
    }
    for (k, v) in [
        ("connect_timeout_seconds", s.connect_timeout_seconds),
        ("reconnect_max_seconds", s.reconnect_max_seconds),
    ] {
        in_range(&key(k), v, above_zero(3_600.0), " seconds")?;
    }
    in_range(
        &key("max_result_bytes"),
        s.max_result_bytes,
        1_024..=16 << 20,
        "",
    )?;
    for (k, patterns) in [("include", &s.include), ("exclude", &s.exclude)] {
        for p in patterns {
            if let Err(e) = globset::Glob::new(p) {
                return Err(invalid(
                    &key(k),
                    format!("`{p}` is not a glob pattern: {e}"),
                ));
            }
        }
    }
    Ok(())
}

fn validate_web(w: &crate::config::WebConfig) -> Result<()> {
    let f = &w.fetch;
    in_range(
        "tools.web.fetch.max_bytes",
        f.max_bytes,
        1_024..=64 << 20,
        "",
    )?;
    in_range("tools.web.fetch.max_redirects", f.max_redirects, 0..=20, "")?;
    in_range("tools.web.fetch.passages", f.passages, 1..=50, "")?;
    if f.content_types.is_empty() {
        return Err(invalid(
            "tools.web.fetch.content_types",
            "must list at least one type (e.g. text/html)",
        ));
    }
    if f.user_agent.trim().is_empty() || f.user_agent.len() > 200 {
        return Err(invalid(
            "tools.web.fetch.user_agent",
            "must be 1-200 characters",
        ));
    }
    let s = &w.search;
    if s.enabled && !(s.endpoint.starts_with("http://") || s.endpoint.starts_with("https://")) {
        return Err(invalid(
            "tools.web.search.endpoint",
            format!(
                "`{}` must be an http(s) URL when web_search is enabled \
                 (e.g. a SearXNG instance's http://localhost:8888/search)",
                s.endpoint
            ),
        ));
    }
    if s.shape != "searxng" {
        return Err(invalid(
            "tools.web.search.shape",
            format!("`{}` is not a known shape (known: searxng)", s.shape),
        ));
    }
    in_range("tools.web.search.max_results", s.max_results, 1..=50, "")?;
    for h in &w.allow_hosts {
        if h.trim().is_empty() || h.contains('/') {
            return Err(invalid(
                "tools.web.allow_hosts",
                format!("`{h}` must be a host or host:port, without a scheme or path"),
            ));
        }
    }
    Ok(())
}

fn validate_runtime(r: &crate::config::RuntimeToolsConfig) -> Result<()> {
    in_range(
        "tools.runtime.max_code_bytes",
        r.max_code_bytes,
        64..=1 << 20,
        "",
    )?;
    in_range(
        "tools.runtime.memory_bytes",
        r.memory_bytes,
        1 << 20..=1 << 30,
        "",
    )?;
    in_range(
        "tools.runtime.stack_bytes",
        r.stack_bytes,
        64 << 10..=8 << 20,
        "",
    )?;
    in_range(
        "tools.runtime.max_output_bytes",
        r.max_output_bytes,
        64..=16 << 20,
        "",
    )?;
    in_range("tools.runtime.max_tools", r.max_tools, 1..=10_000, "")?;
    Ok(())
}

fn validate_reflection(r: &crate::config::ReflectionConfig) -> Result<()> {
    in_range("tools.reflection.failures", r.failures, 1..=1000, "")?;
    if r.disable_after != 0 && r.disable_after < r.failures {
        return Err(invalid(
            "tools.reflection.disable_after",
            format!(
                "{} must be 0 (never) or at least tools.reflection.failures ({})",
                r.disable_after, r.failures
            ),
        ));
    }
    in_range(
        "tools.reflection.slow_seconds",
        r.slow_seconds,
        crate::config::check::ABOVE_ZERO,
        " seconds",
    )?;
    in_range("tools.reflection.history", r.history, 10..=100_000, "")?;
    Ok(())
}
