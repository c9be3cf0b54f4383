//! Usage statistics and reflection for every tool, kept in
//! `<data_dir>/tool_stats.sqlite3` (or PostgreSQL's tables, which every
//! server shares) so they survive restarts.
//!
//! Each call is recorded: totals per tool (calls, successes, failures by
//! kind, last use), and the last `tools.reflection.history` calls with
//! their latency and error, from which p50/p95 and failure patterns are
//! read. A tool failing `tools.reflection.failures` times in a row with the
//! same kind of error is marked [`Health::Unreliable`] (the catalogue the
//! agent and planner read says so); after `tools.reflection.disable_after`
//! failures in a row it is [`Health::Disabled`] until `grace tools enable`.
//! A success clears an unreliable mark.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

use super::ToolErrorKind;
use crate::config::{Config, ReflectionConfig};
use crate::state::{Conn, Schema, StateError, Store, params};

/// The statistics' schema, at version 1. Not `durable`: a call's figures
/// are not worth a disk flush on the question's path (they survive a
/// crash of the process, not of the machine).
const SCHEMA: Schema = Schema {
    name: "tool_stats",
    what: "tool statistics",
    ddl: DDL,
    version: 1,
    migrations: &[],
    durable: false,
};
const DDL: &str = "
CREATE TABLE IF NOT EXISTS tool_state (
    tool TEXT PRIMARY KEY,
    calls INTEGER NOT NULL DEFAULT 0,
    successes INTEGER NOT NULL DEFAULT 0,
    last_used INTEGER,
    streak_kind TEXT,
    streak INTEGER NOT NULL DEFAULT 0,
    health TEXT NOT NULL DEFAULT 'ok',
    health_reason TEXT
);
CREATE TABLE IF NOT EXISTS tool_failures (
    tool TEXT NOT NULL,
    kind TEXT NOT NULL,
    count INTEGER NOT NULL,
    PRIMARY KEY (tool, kind)
);
CREATE TABLE IF NOT EXISTS tool_calls (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    tool TEXT NOT NULL,
    at INTEGER NOT NULL,
    ok INTEGER NOT NULL,
    kind TEXT,
    latency_ms REAL NOT NULL,
    error TEXT
);
CREATE INDEX IF NOT EXISTS tool_calls_by_tool ON tool_calls(tool, id);
";

/// Characters of an error message kept per call.
const MAX_ERROR_CHARS: usize = 300;

/// Why the statistics database failed (or is from a newer GRACE, or
/// PostgreSQL could not be reached).
pub type StatsError = StateError;

/// Whether a tool may be offered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case", tag = "health", content = "reason")]
pub enum Health {
    /// Working, as far as GRACE knows.
    Ok,
    /// Failed `tools.reflection.failures` times in a row the same way;
    /// still offered, marked so.
    Unreliable(String),
    /// Failed `tools.reflection.disable_after` times in a row; not offered
    /// until `grace tools enable`.
    Disabled(String),
}

/// One call's outcome, as recorded.
#[derive(Debug, Clone)]
pub struct CallOutcome<'a> {
    /// `None` on success, else how it failed.
    pub failure: Option<ToolErrorKind>,
    /// The error message on failure.
    pub error: Option<&'a str>,
    /// Wall time, retries included.
    pub latency: Duration,
}

/// A tool's statistics.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct ToolUsage {
    /// Calls recorded.
    pub calls: u64,
    /// Calls that succeeded.
    pub successes: u64,
    /// Failed calls by kind (`timeout`, `transient`, ...).
    pub failures: BTreeMap<String, u64>,
    /// Median latency of the kept calls, milliseconds.
    pub p50_ms: Option<f64>,
    /// 95th-percentile latency of the kept calls, milliseconds.
    pub p95_ms: Option<f64>,
    /// When it was last called (RFC 3339).
    pub last_used: Option<String>,
    /// Failures in a row now.
    pub failures_in_a_row: u64,
    /// Whether it may be offered.
    #[serde(flatten)]
    pub health: Health,
}

/// A recurring failure: calls of one tool failing the same way.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FailurePattern {
    /// The tool.
    pub tool: String,
    /// The error kind.
    pub kind: String,
    /// The message with numbers blanked, so that like failures group.
    pub pattern: String,
    /// Kept calls that failed this way.
    pub count: u64,
}

/// `grace tools reflect`: what needs attention.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Reflection {
    /// Tools marked unreliable or disabled, with why.
    pub unreliable: Vec<(String, Health)>,
    /// Tools whose p95 latency is above `tools.reflection.slow_seconds`,
    /// with it (milliseconds).
    pub slow: Vec<(String, f64)>,
    /// Registered tools never called.
    pub never_used: Vec<String>,
    /// Recurring failures among the kept calls, most frequent first.
    pub patterns: Vec<FailurePattern>,
}

/// The statistics store.
#[derive(Debug)]
pub struct ToolStats {
    store: Store,
    reflection: ReflectionConfig,
}

fn kind_name(kind: ToolErrorKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("{kind:?}"))
}

fn health_of(name: &str, reason: Option<String>) -> Health {
    let reason = reason.unwrap_or_default();
    match name {
        "unreliable" => Health::Unreliable(reason),
        "disabled" => Health::Disabled(reason),
        _ => Health::Ok,
    }
}

fn health_name(h: &Health) -> (&'static str, Option<&str>) {
    match h {
        Health::Ok => ("ok", None),
        Health::Unreliable(r) => ("unreliable", Some(r)),
        Health::Disabled(r) => ("disabled", Some(r)),
    }
}

/// A message with digits blanked and cut, so that like failures group.
fn pattern_of(message: &str) -> String {
    let blanked: String = message
        .chars()
        .map(|c| if c.is_ascii_digit() { '#' } else { c })
        .collect();
    crate::text::truncate_chars(&blanked, 120).to_string()
}

/// The `q`-quantile (0..=1) of sorted values, nearest rank.
fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    Some(sorted[rank - 1])
}

impl ToolStats {
    /// Opens (creating) the statistics of `config`'s knowledge base
    /// (`Config::tool_stats_path`, or PostgreSQL).
    pub fn open(config: &Config) -> Result<Self, StatsError> {
        Ok(Self {
            store: Store::open(config, SCHEMA, &config.tool_stats_path())?,
            reflection: config.tools.reflection.clone(),
        })
    }

    /// The tool's health, read from the database on every call, so that
    /// `grace tools enable` in another process counts at once. A database
    /// that cannot be read leaves the tool offered (and says so in the log).
    pub fn health(&self, tool: &str) -> Health {
        let read = self.store.read(|c| {
            c.query_opt(
                "SELECT health, health_reason FROM tool_state WHERE tool = ?1",
                params![tool],
            )?
            .map(|r| Ok::<_, StateError>(health_of(&r.get::<String>(0)?, r.get(1)?)))
            .transpose()
        });
        match read {
            Ok(h) => h.unwrap_or(Health::Ok),
            Err(e) => {
                tracing::warn!(tool, error = %e, "cannot read the tool's health");
                Health::Ok
            }
        }
    }

    /// Records one call and returns the tool's health after it (a change
    /// to unreliable or disabled is logged as a warning).
    pub fn record(&self, tool: &str, outcome: &CallOutcome<'_>) -> Result<Health, StatsError> {
        let now = crate::state::now_ms();
        let kind = outcome.failure.map(kind_name);
        let error = outcome
            .error
            .map(|e| crate::text::truncate_chars(e, MAX_ERROR_CHARS).to_string());
        let latency_ms = outcome.latency.as_secs_f64() * 1000.0;
        let reflection = self.reflection.clone();
        let health = self.store.write(|c| {
            seen(c, tool)?;
            let row = c.query_one(
                "SELECT streak_kind, streak, health, health_reason FROM tool_state WHERE tool = ?1",
                params![tool],
            )?;
            let (streak_kind, streak, health, reason): (Option<String>, i64, String, Option<String>) =
                (row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?);
            let streak = u64::try_from(streak).unwrap_or(0);
            let before = health_of(&health, reason);
            let mut health = before.clone();
            let (streak_kind, streak) = match &kind {
                None => (None, 0),
                Some(k) if streak_kind.as_deref() == Some(k.as_str()) => (Some(k.clone()), streak + 1),
                Some(k) => (Some(k.clone()), 1),
            };
            match &kind {
                None => {
                    if matches!(health, Health::Unreliable(_)) {
                        health = Health::Ok;
                    }
                }
                Some(k) => {
                    let why = format!("{streak} {k} failures in a row");
                    if reflection.disable_after > 0 && streak >= u64::from(reflection.disable_after) {
                        health = Health::Disabled(why);
                    } else if streak >= u64::from(reflection.failures)
                        && !matches!(health, Health::Disabled(_))
                    {
                        health = Health::Unreliable(why);
                    }
                    c.execute(
                        "INSERT INTO tool_failures (tool, kind, count) VALUES (?1, ?2, 1) \
                         ON CONFLICT(tool, kind) DO UPDATE SET count = tool_failures.count + 1",
                        params![tool, k],
                    )?;
                }
            }
            let (h, r) = health_name(&health);
            c.execute(
                "UPDATE tool_state SET calls = calls + 1, successes = successes + ?2, last_used = ?3, \
                 streak_kind = ?4, streak = ?5, health = ?6, health_reason = ?7 WHERE tool = ?1",
                params![
                    tool,
                    i64::from(kind.is_none()),
                    now,
                    streak_kind,
                    i64::try_from(streak).unwrap_or(i64::MAX),
                    h,
                    r
                ],
            )?;
            c.execute(
                "INSERT INTO tool_calls (tool, at, ok, kind, latency_ms, error) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![tool, now, kind.is_none(), kind, latency_ms, error],
            )?;
            // Keep the last `history` calls of the tool.
            c.execute(
                "DELETE FROM tool_calls WHERE tool = ?1 AND id <= \
                 (SELECT id FROM tool_calls WHERE tool = ?1 ORDER BY id DESC LIMIT 1 OFFSET ?2)",
                params![tool, reflection.history as i64],
            )?;
            Ok::<_, StateError>((before, health))
        })?;
        let (before, health) = health;
        if before != health && health != Health::Ok {
            tracing::warn!(tool, health = ?health, "tool health changed");
        }
        Ok(health)
    }

    /// Clears a tool's unreliable or disabled mark (`grace tools enable`).
    pub fn enable(&self, tool: &str) -> Result<(), StatsError> {
        self.store.write(|c| {
            c.execute(
                "UPDATE tool_state SET health = 'ok', health_reason = NULL, streak = 0, \
                 streak_kind = NULL WHERE tool = ?1",
                params![tool],
            )
        })?;
        Ok(())
    }

    /// A tool's statistics (zeros when it was never called).
    pub fn usage(&self, tool: &str) -> Result<ToolUsage, StatsError> {
        self.store.read(|c| {
            let state = c.query_opt(
                "SELECT calls, successes, last_used, streak, health, health_reason \
                 FROM tool_state WHERE tool = ?1",
                params![tool],
            )?;
            let (calls, successes, last_used, streak, health, reason) = match state {
                Some(r) => (
                    count(r.get(0)?),
                    count(r.get(1)?),
                    r.get::<Option<i64>>(2)?,
                    count(r.get(3)?),
                    r.get::<String>(4)?,
                    r.get::<Option<String>>(5)?,
                ),
                None => (0, 0, None, 0, "ok".into(), None),
            };
            let failures = c
                .query(
                    "SELECT kind, count FROM tool_failures WHERE tool = ?1",
                    params![tool],
                )?
                .iter()
                .map(|r| Ok((r.get::<String>(0)?, count(r.get(1)?))))
                .collect::<Result<BTreeMap<_, _>, StateError>>()?;
            let mut latencies = c
                .query(
                    "SELECT latency_ms FROM tool_calls WHERE tool = ?1",
                    params![tool],
                )?
                .iter()
                .map(|r| r.get::<f64>(0))
                .collect::<Result<Vec<_>, _>>()?;
            latencies.sort_by(f64::total_cmp);
            Ok(ToolUsage {
                calls,
                successes,
                failures,
                p50_ms: quantile(&latencies, 0.5),
                p95_ms: quantile(&latencies, 0.95),
                last_used: last_used.map(|ms| crate::state::to_time(ms).to_rfc3339()),
                failures_in_a_row: streak,
                health: health_of(&health, reason),
            })
        })
    }

    /// Every tool with statistics, by name.
    pub fn all(&self) -> Result<Vec<(String, ToolUsage)>, StatsError> {
        let mut names: Vec<String> = self.store.read(|c| {
            c.query("SELECT tool FROM tool_state", params![])?
                .iter()
                .map(|r| r.get(0))
                .collect::<Result<Vec<_>, _>>()
        })?;
        // By name, bytewise on both databases.
        names.sort();
        names
            .into_iter()
            .map(|n| self.usage(&n).map(|u| (n, u)))
            .collect()
    }

    /// Notes that `tool` is registered, so that a tool never called is
    /// known to `grace tools reflect` in any process.
    pub fn seen(&self, tool: &str) -> Result<(), StatsError> {
        self.store.write(|c| seen(c, tool))
    }

    /// What needs attention among the tools ever registered or called.
    pub fn reflect(&self) -> Result<Reflection, StatsError> {
        let mut report = Reflection {
            unreliable: Vec::new(),
            slow: Vec::new(),
            never_used: Vec::new(),
            patterns: Vec::new(),
        };
        for (tool, usage) in self.all()? {
            if usage.health != Health::Ok {
                report.unreliable.push((tool.clone(), usage.health.clone()));
            }
            if let Some(p95) = usage.p95_ms
                && p95 > self.reflection.slow_seconds * 1000.0
            {
                report.slow.push((tool.clone(), p95));
            }
            if usage.calls == 0 {
                report.never_used.push(tool);
            }
        }
        let failures: Vec<(String, String, String)> = self.store.read(|c| {
            c.query(
                "SELECT tool, kind, COALESCE(error, '') FROM tool_calls WHERE ok = 0 ORDER BY id",
                params![],
            )?
            .iter()
            .map(|r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .collect::<Result<Vec<_>, StateError>>()
        })?;
        let mut grouped: BTreeMap<(String, String, String), u64> = BTreeMap::new();
        for (tool, kind, error) in failures {
            *grouped.entry((tool, kind, pattern_of(&error))).or_default() += 1;
        }
        report.patterns = grouped
            .into_iter()
            .map(|((tool, kind, pattern), count)| FailurePattern {
                tool,
                kind,
                pattern,
                count,
            })
            .collect();
        report.patterns.sort_by_key(|p| std::cmp::Reverse(p.count));
        Ok(report)
    }
}

/// A tool's row, created when missing.
fn seen(c: &Conn<'_>, tool: &str) -> Result<(), StateError> {
    c.execute(
        "INSERT INTO tool_state (tool) VALUES (?1) ON CONFLICT (tool) DO NOTHING",
        params![tool],
    )?;
    Ok(())
}

/// A stored count (never negative) as a number of calls.
fn count(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

#[cfg(test)]
mod tests;
