//! The `review`, `sessions`, `server` and `mcp` sections: what GRACE
//! serves, to whom, and for how long it keeps what they leave.

use std::path::PathBuf;

use super::Result;
use super::check::{ABOVE_ZERO, above_zero, in_range, invalid};
use serde::{Deserialize, Serialize};

/// Human review of escalated questions (see `grace::review`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReviewConfig {
    /// Seconds an escalation stays in the queue for a reviewer before it
    /// expires (a queue that people work through: hours, not minutes).
    pub escalation_ttl_seconds: f64,
    /// Seconds an asker waits for a reviewer by default (`grace ask
    /// --wait`, `grace answer --wait`): the interactive wait, separate
    /// from the escalation's life in the queue.
    pub asker_wait_seconds: f64,
    /// When the asker's wait ends, or the escalation expires, unanswered:
    /// `true` gives the asker the best low-confidence answer, marked as
    /// not reviewed; `false` gives no answer.
    pub auto_proceed_on_timeout: bool,
    /// Confidence recorded for a reviewer's answer when the reviewer gives
    /// none.
    pub reviewer_confidence: f64,
    /// Feedback whose first word is one of these asks GRACE to search again
    /// with the rest of the feedback as a hint, instead of answering.
    pub replan_words: Vec<String>,
    /// An escalation whose question is at least this alike (on GRACE's
    /// similarity scale: the embedding model card's map of a cosine) to an
    /// open one's, in the same knowledge base for the same reviewers,
    /// naming the same identifiers and names, joins it: one answer goes to
    /// every asker. 1 joins only the same question.
    pub group_similarity: f64,
}

impl Default for ReviewConfig {
    fn default() -> Self {
        Self {
            escalation_ttl_seconds: 86_400.0,
            asker_wait_seconds: 300.0,
            auto_proceed_on_timeout: false,
            reviewer_confidence: 1.0,
            replan_words: ["modify", "redo", "replan", "retry"]
                .map(String::from)
                .to_vec(),
            group_similarity: 0.8,
        }
    }
}

/// Who may call GRACE besides its keys (`auth`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct AuthConfig {
    /// OIDC / JWT bearer tokens (`auth.jwt`).
    pub jwt: JwtConfig,
}

/// OIDC / JWT bearer tokens: an identity provider's signed token names the
/// principal and its groups (`auth.jwt`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct JwtConfig {
    /// The issuer tokens must name (`iss`); empty: JWTs are not accepted.
    pub issuer: String,
    /// The audience tokens must name (`aud`): this service.
    pub audience: String,
    /// The issuer's keys as a JWKS file (read again on an unknown `kid`).
    pub jwks_file: PathBuf,
    /// The issuer's keys at this https URL instead (read again on an
    /// unknown `kid`, at most once a minute).
    pub jwks_url: String,
    /// The claim naming the principal.
    pub name_claim: String,
    /// The claim listing its groups.
    pub groups_claim: String,
    /// Seconds of clock difference allowed on `exp` and `nbf`.
    pub leeway_seconds: u64,
}

impl Default for JwtConfig {
    fn default() -> Self {
        Self {
            issuer: String::new(),
            audience: String::new(),
            jwks_file: PathBuf::new(),
            jwks_url: String::new(),
            name_claim: "sub".into(),
            groups_claim: "groups".into(),
            leeway_seconds: 30,
        }
    }
}

/// The audit log (`audit.log` in the data folder): who asked, searched,
/// viewed or acted on what, never any text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AuditConfig {
    /// Write the audit log.
    pub enabled: bool,
    /// Bytes `audit.log` may reach before it is rotated to `audit.log.1`.
    pub max_bytes: u64,
    /// Rotated files kept (`audit.log.1` … `audit.log.N`); the oldest
    /// beyond is deleted.
    pub keep_files: usize,
}

impl Default for AuditConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            max_bytes: 10_000_000,
            keep_files: 5,
        }
    }
}

/// Conversations (`grace chat`, `session_id` over HTTP and MCP), stored in
/// `sessions.sqlite3` in the data folder.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SessionsConfig {
    /// Seconds a session lives after its last turn.
    pub ttl_seconds: f64,
    /// Turns a session keeps; older ones are dropped.
    pub max_turns: usize,
    /// Bytes of turns (questions, answers, sources) a session keeps; the
    /// oldest turns are dropped past it.
    pub max_bytes: usize,
    /// Sessions open at once; creating one more is refused.
    pub max_sessions: usize,
}

impl Default for SessionsConfig {
    fn default() -> Self {
        Self {
            ttl_seconds: 86_400.0,
            max_turns: 50,
            max_bytes: 262_144,
            max_sessions: 10_000,
        }
    }
}

/// `grace serve`: the HTTP API (see `grace_serve`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerConfig {
    /// Address to listen on when `--bind` is not given.
    pub bind: String,
    /// The service's bearer token: opens every route (`/v1/…`, `/metrics`) but
    /// the review ones (`/v1/review/…`: a reviewer's own token or
    /// `server.admin_api_key`) and the run-time tools (`/v1/tools/runtime`: the
    /// administrator only). Open without any token: `/health`, `/openapi.json`,
    /// the asker's page `/` and the reviewer's page `/review` with the files
    /// they load (`/assets/ask.js`, `ask.css`, `review.js`, `review.css`,
    /// `markdown.js`, `factors.js`), which hold no data. Empty: no
    /// authentication, and the server refuses to bind beyond loopback. Best set
    /// through `GRACE_SERVER__API_KEY` rather than in a file.
    pub api_key: String,
    /// The administrator's token: registers reviewers and rotates their
    /// tokens over HTTP, reads every escalation, and opens the service
    /// endpoints too. Empty: only the CLI administers reviewers. Reviewers
    /// use their own tokens (`grace review register`), never this one.
    pub admin_api_key: String,
    /// Largest request body in bytes (uploads included); larger gets 413.
    pub max_body_bytes: usize,
    /// Seconds a request may take (`?wait=` on an escalation excepted);
    /// longer gets 504 and its run is cancelled.
    pub request_timeout: f64,
    /// Asks, searches and ingests served at once; more get 429.
    pub max_concurrency: usize,
    /// Seconds a shutdown (Ctrl-C, SIGTERM) waits for the requests in
    /// flight; those still running then are cancelled, and the store is
    /// flushed.
    pub shutdown_grace_seconds: f64,
    /// Sources under this folder are shown to HTTP and MCP clients
    /// relative to it; empty: relative to `ingest.allowed_roots`, the
    /// uploads and reviewed folders, else by file name (see
    /// [`crate::display`]).
    pub display_root: PathBuf,
    /// Folders (or files) `grace serve` keeps the knowledge base in step
    /// with: ingested at start, then re-ingested (changed files written
    /// again, deleted ones pruned) a moment after they change.
    pub watch: Vec<PathBuf>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            bind: "127.0.0.1:8080".to_string(),
            api_key: String::new(),
            admin_api_key: String::new(),
            max_body_bytes: 10 * 1024 * 1024,
            request_timeout: 60.0,
            max_concurrency: 16,
            shutdown_grace_seconds: 30.0,
            display_root: PathBuf::new(),
            watch: Vec::new(),
        }
    }
}

/// `grace mcp`: the MCP tool server (see `grace_mcp`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpConfig {
    /// Tools offered to MCP clients; a registry tool (`rag_search`,
    /// `reasoning`, `ask_user`) also needs to be in `tools.enabled` and
    /// `mcp` in its `callers`. Other registry tools (`mcp.<server>.<tool>`,
    /// `web_*`, `rt.<name>`) are offered by their `callers` alone.
    pub tools: Vec<String>,
    /// Seconds an `ask` or `ingest` call may take (registry tools keep
    /// their own `tools.<name>.timeout_seconds`).
    pub timeout_seconds: f64,
    /// The principal `grace mcp` acts as (`GRACE_PRINCIPAL` overrides):
    /// what it may read, no ingest, no escalations. Empty: the local
    /// operator.
    pub principal: String,
}

impl Default for McpConfig {
    fn default() -> Self {
        Self {
            // Not `list_escalations` nor `answer_escalation`: they take any
            // reviewer's name, so an MCP client that has them can act as any
            // reviewer. Offer them only to a client trusted with that.
            tools: ["ask", super::RAG_SEARCH, "ingest", "feedback"]
                .map(String::from)
                .to_vec(),
            timeout_seconds: 120.0,
            principal: String::new(),
        }
    }
}

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
    in_range(
        "server.watch",
        s.watch.len(),
        0..=MAX_WATCHED,
        " paths (watch their common folder)",
    )?;
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
