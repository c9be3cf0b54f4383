//! Checks of what GRACE serves and for how long: `review`, `agent`,
//! `sessions`, `server` and `mcp`.

use super::Result;
use super::check::{ABOVE_ZERO, above_zero, in_range, invalid};
use super::{MAX_BOOST_HALF_LIFE_DAYS, MAX_DOCUMENT_BOOST, MAX_GAP_DAYS};

pub(super) fn validate_review(r: &super::ReviewConfig) -> Result<()> {
    for (key, value) in [
        ("review.escalation_ttl_seconds", r.escalation_ttl_seconds),
        ("review.asker_wait_seconds", r.asker_wait_seconds),
    ] {
        in_range(key, value, above_zero(31_536_000.0), " seconds (a year)")?;
    }
    in_range(
        "review.reviewer_confidence",
        r.reviewer_confidence,
        0.0..=1.0,
        "",
    )?;
    in_range(
        "review.group_similarity",
        r.group_similarity,
        above_zero(1.0),
        " (a cosine)",
    )?;
    if let Some(w) = r
        .replan_words
        .iter()
        .find(|w| w.trim().is_empty() || w.contains(char::is_whitespace))
    {
        return Err(invalid(
            "review.replan_words",
            format!("{w:?} must be one word"),
        ));
    }
    Ok(())
}

pub(super) fn validate_agent(a: &super::AgentConfig) -> Result<()> {
    in_range("agent.max_steps", a.max_steps, 1..=64, "")?;
    in_range("agent.max_tokens", a.max_tokens, 1..=10000000, "")?;
    for (key, value, max) in [
        ("agent.max_seconds", a.max_seconds, 3_600.0),
        (
            "agent.reply_timeout_seconds",
            a.reply_timeout_seconds,
            604_800.0,
        ),
    ] {
        in_range(key, value, above_zero(max), " seconds")?;
    }
    Ok(())
}

pub(super) fn validate_sessions(s: &super::SessionsConfig) -> Result<()> {
    in_range(
        "sessions.ttl_seconds",
        s.ttl_seconds,
        ABOVE_ZERO,
        " seconds",
    )?;
    for (key, value, max) in [
        ("sessions.max_turns", s.max_turns, 10_000),
        ("sessions.max_bytes", s.max_bytes, 64 << 20),
        ("sessions.max_sessions", s.max_sessions, 10_000_000),
    ] {
        in_range(key, value, 1..=max, "")?;
    }
    Ok(())
}

pub(super) fn validate_feedback(f: &super::FeedbackConfig) -> Result<()> {
    for (key, value, max) in [
        (
            "feedback.max_ratings_per_hour",
            f.max_ratings_per_hour,
            1_000_000,
        ),
        ("feedback.max_runs", f.max_runs, 100_000_000),
        (
            "feedback.gap_days",
            f.gap_days as usize,
            MAX_GAP_DAYS as usize,
        ),
        (
            "feedback.document_boost_half_life_days",
            f.document_boost_half_life_days as usize,
            MAX_BOOST_HALF_LIFE_DAYS as usize,
        ),
    ] {
        in_range(key, value, 1..=max, "")?;
    }
    use std::ops::Bound::Excluded;
    in_range(
        "feedback.gap_similarity",
        f.gap_similarity,
        (Excluded(0.0), Excluded(1.0)),
        " (a cosine)",
    )?;
    in_range(
        "feedback.document_boost",
        f.document_boost,
        0.0..=MAX_DOCUMENT_BOOST,
        " (0 switches it off)",
    )?;
    Ok(())
}

pub(super) fn validate_server(s: &super::ServerConfig) -> Result<()> {
    if s.bind.parse::<std::net::SocketAddr>().is_err() {
        return Err(invalid(
            "server.bind",
            format!(
                "{:?} is not an address and port such as 127.0.0.1:8080",
                s.bind
            ),
        ));
    }
    for (key, value) in [
        ("server.api_key", &s.api_key),
        ("server.admin_api_key", &s.admin_api_key),
    ] {
        if !value.is_empty() && (value.len() < 16 || value.contains(char::is_whitespace)) {
            return Err(invalid(
                key,
                "must be empty or at least 16 characters without spaces".to_string(),
            ));
        }
    }
    if !s.admin_api_key.is_empty() && s.api_key.is_empty() {
        return Err(invalid(
            "server.admin_api_key",
            "is set but server.api_key is not: without server.api_key every endpoint is open, admin token or not; set server.api_key too".to_string(),
        ));
    }
    if !s.admin_api_key.is_empty() && s.admin_api_key == s.api_key {
        return Err(invalid(
            "server.admin_api_key",
            "equals server.api_key: every service client would be the administrator; give it its own value".to_string(),
        ));
    }
    in_range(
        "server.max_body_bytes",
        s.max_body_bytes,
        1024..,
        " (the least useful size is 1024)",
    )?;
    in_range(
        "server.shutdown_grace_seconds",
        s.shutdown_grace_seconds,
        0.0..=3600.0,
        " seconds",
    )?;
    in_range(
        "server.request_timeout",
        s.request_timeout,
        ABOVE_ZERO,
        " seconds",
    )?;
    in_range("server.max_concurrency", s.max_concurrency, 1..=1024, "")?;
    if s.watch.len() > MAX_WATCHED {
        return Err(invalid(
            "server.watch",
            format!(
                "{} paths; at most {MAX_WATCHED} (watch their common folder)",
                s.watch.len()
            ),
        ));
    }
    for (n, path) in s.watch.iter().enumerate() {
        if !path.exists() {
            return Err(invalid(
                &format!("server.watch[{n}]"),
                format!("{} does not exist", path.display()),
            ));
        }
    }
    Ok(())
}

/// Most paths `server.watch` may name.
pub const MAX_WATCHED: usize = 100;

/// The names in `mcp.tools` are checked by `McpServer::new` against the
/// tools it offers.
/// Smallest and largest `audit.max_bytes`.
const AUDIT_BYTES: std::ops::RangeInclusive<u64> = 4_096..=1 << 30;
/// Most rotated audit files kept.
const MAX_AUDIT_FILES: usize = 100;

/// Most seconds of `auth.jwt.leeway_seconds`.
const MAX_LEEWAY_SECONDS: u64 = 300;

pub(super) fn validate_jwt(j: &super::JwtConfig) -> Result<()> {
    in_range(
        "auth.jwt.leeway_seconds",
        j.leeway_seconds,
        0..=MAX_LEEWAY_SECONDS,
        "",
    )?;
    if j.issuer.is_empty() {
        return Ok(());
    }
    if j.audience.trim().is_empty() {
        return Err(invalid(
            "auth.jwt.audience",
            "is needed with auth.jwt.issuer: the audience tokens must name (this service)",
        ));
    }
    match (j.jwks_file.as_os_str().is_empty(), j.jwks_url.is_empty()) {
        (true, true) | (false, false) => {
            return Err(invalid(
                "auth.jwt.jwks_file",
                "with auth.jwt.issuer, set exactly one of auth.jwt.jwks_file and auth.jwt.jwks_url",
            ));
        }
        (true, false) => {
            let loopback = ["http://127.0.0.1", "http://localhost", "http://[::1]"]
                .iter()
                .any(|p| j.jwks_url.starts_with(p));
            if !j.jwks_url.starts_with("https://") && !loopback {
                return Err(invalid(
                    "auth.jwt.jwks_url",
                    "must be an https:// URL (http:// only on the loopback)",
                ));
            }
        }
        (false, true) => {}
    }
    for (key, claim) in [
        ("auth.jwt.name_claim", &j.name_claim),
        ("auth.jwt.groups_claim", &j.groups_claim),
    ] {
        if claim.trim().is_empty() {
            return Err(invalid(key, "names no claim"));
        }
    }
    Ok(())
}

pub(super) fn validate_audit(a: &super::AuditConfig) -> Result<()> {
    in_range("audit.max_bytes", a.max_bytes, AUDIT_BYTES, "")?;
    in_range("audit.keep_files", a.keep_files, 0..=MAX_AUDIT_FILES, "")?;
    Ok(())
}

pub(super) fn validate_mcp(m: &super::McpConfig) -> Result<()> {
    in_range(
        "mcp.timeout_seconds",
        m.timeout_seconds,
        ABOVE_ZERO,
        " seconds",
    )?;
    if !m.principal.is_empty() && !super::access::valid_name(&m.principal) {
        return Err(invalid(
            "mcp.principal",
            format!(
                "`{}` is not a principal name: 1 to {} letters, digits, `.`, `_`, `@` or `-`",
                m.principal,
                super::access::MAX_NAME_CHARS
            ),
        ));
    }
    Ok(())
}
