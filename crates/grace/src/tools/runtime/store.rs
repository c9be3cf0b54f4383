//! Run-time tools kept in `<data_dir>/runtime_tools.sqlite3` (or
//! PostgreSQL's tables, `storage.state: postgres`, shared by every
//! server): every version of every tool (a change is a new version;
//! deleting marks the tool deleted and keeps its versions), and an audit
//! log of every creation, change, deletion and refusal with who did it.

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;

use super::{Example, ExampleOutcome, ToolSpec};
use crate::config::Config;
use crate::state::{Conn, Schema, StateError, params};

/// The run-time tools' schema, at version 1.
const SCHEMA: Schema = Schema {
    name: "runtime_tools",
    what: "run-time tools",
    ddl: DDL,
    version: 1,
    migrations: &[],
    durable: true,
};
const DDL: &str = "
CREATE TABLE IF NOT EXISTS rt_tools (
    name TEXT PRIMARY KEY,
    version INTEGER NOT NULL,
    deleted_at INTEGER
);
CREATE TABLE IF NOT EXISTS rt_versions (
    name TEXT NOT NULL REFERENCES rt_tools(name),
    version INTEGER NOT NULL,
    description TEXT NOT NULL,
    input_schema TEXT NOT NULL,
    code TEXT NOT NULL,
    examples TEXT NOT NULL,
    status TEXT NOT NULL,
    quality REAL NOT NULL,
    verification TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    actor TEXT NOT NULL,
    PRIMARY KEY (name, version)
);
CREATE TABLE IF NOT EXISTS rt_audit (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at INTEGER NOT NULL,
    actor TEXT NOT NULL,
    action TEXT NOT NULL,
    name TEXT NOT NULL,
    version INTEGER,
    detail TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS rt_audit_by_name ON rt_audit(name, id);
";

/// Characters of an audit entry's detail kept.
const MAX_DETAIL_CHARS: usize = 2_000;
/// Audit entries and versions one history shows at most (the latest).
pub const MAX_HISTORY: usize = 200;

/// Why the store failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database failed, is from a newer GRACE, or PostgreSQL could
    /// not be reached.
    #[error(transparent)]
    State(#[from] StateError),
    /// A stored row does not parse (edited by hand?).
    #[error("{place}: tool {name} v{version}: {message}")]
    Corrupt {
        /// The database's file or schema.
        place: String,
        /// The tool.
        name: String,
        /// Its version.
        version: u32,
        /// What is wrong.
        message: String,
    },
    /// `tools.runtime.max_tools` live tools exist already.
    #[error("{max} run-time tools exist already (tools.runtime.max_tools); delete one first")]
    Full {
        /// The limit.
        max: usize,
    },
}

/// One stored version of a tool.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct StoredTool {
    /// The name (without `rt.`).
    pub name: String,
    /// Its version, from 1.
    pub version: u32,
    /// What it does.
    pub description: String,
    /// JSON schema of its input.
    pub input_schema: Value,
    /// The JavaScript.
    pub code: String,
    /// The examples it was verified on.
    pub examples: Vec<Example>,
    /// `verified` or `failed`.
    pub status: String,
    /// Share of examples passed, in [0, 1].
    pub quality: f64,
    /// Each example's outcome.
    pub verification: Vec<ExampleOutcome>,
    /// When it was stored.
    pub created_at: DateTime<Utc>,
    /// Who stored it (`cli`, `http`, `mcp`, `agent`).
    pub actor: String,
}

/// One audit entry.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[schema(as = RuntimeToolAuditEntry)]
pub struct AuditEntry {
    /// When.
    pub at: DateTime<Utc>,
    /// Who (`cli`, `http`, `mcp`, `agent`).
    pub actor: String,
    /// `create`, `update`, `delete` or `refuse`.
    pub action: String,
    /// The tool's name.
    pub name: String,
    /// The version concerned (none for a refusal).
    pub version: Option<u32>,
    /// What happened (status and quality, or why it was refused).
    pub detail: String,
}

/// A tool's versions and audit entries, oldest first.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[schema(as = RuntimeToolHistory)]
pub struct History {
    /// The name.
    pub name: String,
    /// Whether it is deleted.
    pub deleted: bool,
    /// Every version kept.
    pub versions: Vec<StoredTool>,
    /// What was done to it.
    pub audit: Vec<AuditEntry>,
}

/// The database: a SQLite file, or PostgreSQL's tables.
#[derive(Debug)]
pub struct Store {
    store: crate::state::Store,
}

impl Store {
    /// Opens (creating) the store of `config`'s knowledge base
    /// (`Config::runtime_tools_path`, or PostgreSQL).
    pub fn open(config: &Config) -> Result<Self, StoreError> {
        Ok(Self {
            store: crate::state::Store::open(config, SCHEMA, &config.runtime_tools_path())?,
        })
    }

    /// Stores `spec` as the tool's next version (its first, or the next
    /// after a deletion), with its verification, and audits it; at most
    /// `max_tools` live tools.
    pub fn save(
        &self,
        spec: &ToolSpec,
        status: &str,
        quality: f64,
        verification: &[ExampleOutcome],
        actor: &str,
        max_tools: usize,
    ) -> Result<StoredTool, StoreError> {
        let version = self.store.write(|c| {
            let existing: Option<(u32, Option<i64>)> = c
                .query_opt(
                    "SELECT version, deleted_at FROM rt_tools WHERE name = ?1",
                    params![spec.name],
                )?
                .map(|r| Ok::<_, StateError>((r.get::<u32>(0)?, r.get(1)?)))
                .transpose()?;
            let live = matches!(existing, Some((_, None)));
            if !live {
                let count: i64 = c
                    .query_one(
                        "SELECT COUNT(*) FROM rt_tools WHERE deleted_at IS NULL",
                        params![],
                    )?
                    .get(0)?;
                if usize::try_from(count).unwrap_or(usize::MAX) >= max_tools {
                    return Err(StoreError::Full { max: max_tools });
                }
            }
            let version = existing.map_or(1, |(v, _)| v + 1);
            let now = crate::state::now_ms();
            c.execute(
                "INSERT INTO rt_tools (name, version, deleted_at) VALUES (?1, ?2, NULL)
                 ON CONFLICT(name) DO UPDATE SET version = ?2, deleted_at = NULL",
                params![spec.name, version],
            )?;
            c.execute(
                "INSERT INTO rt_versions (name, version, description, input_schema, code, examples,
                                          status, quality, verification, created_at, actor)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                params![
                    spec.name,
                    version,
                    spec.description.trim(),
                    json(&spec.input_schema),
                    spec.code,
                    json(&spec.examples),
                    status,
                    quality,
                    json(verification),
                    now,
                    actor
                ],
            )?;
            let action = if live { "update" } else { "create" };
            let detail = format!("{status}, quality {quality:.2}");
            audit(c, now, actor, action, &spec.name, Some(version), &detail)?;
            Ok(version)
        })?;
        self.version(&spec.name, version)?.ok_or_else(|| {
            StoreError::State(StateError::NoRow {
                place: self.store.place().to_string(),
            })
        })
    }

    /// Records a refused creation (static check, bad input).
    pub fn refuse(&self, name: &str, actor: &str, why: &str) -> Result<(), StoreError> {
        let name = crate::text::truncate_chars(name, 80);
        self.store
            .write(|c| audit(c, crate::state::now_ms(), actor, "refuse", name, None, why))?;
        Ok(())
    }

    /// Marks `name` deleted (its versions stay); the version it had, or
    /// `None` when there is no live tool of that name.
    pub fn delete(&self, name: &str, actor: &str) -> Result<Option<u32>, StoreError> {
        Ok(self.store.write(|c| {
            let Some(version) = live_version(c, name)? else {
                return Ok::<_, StateError>(None);
            };
            let now = crate::state::now_ms();
            c.execute(
                "UPDATE rt_tools SET deleted_at = ?2 WHERE name = ?1",
                params![name, now],
            )?;
            audit(c, now, actor, "delete", name, Some(version), "deleted")?;
            Ok(Some(version))
        })?)
    }

    /// The live tools, each at its latest version, by name.
    pub fn live(&self) -> Result<Vec<StoredTool>, StoreError> {
        let mut names: Vec<(String, u32)> = self.store.read(|c| {
            c.query(
                "SELECT name, version FROM rt_tools WHERE deleted_at IS NULL",
                params![],
            )?
            .iter()
            .map(|r| Ok((r.get(0)?, r.get(1)?)))
            .collect::<Result<_, StateError>>()
        })?;
        // By name, bytewise on both databases.
        names.sort();
        let mut tools = Vec::with_capacity(names.len());
        for (name, version) in names {
            // A row edited into nonsense costs its tool, not GRACE's start.
            match self.version(&name, version) {
                Ok(Some(t)) => tools.push(t),
                Ok(None) => {}
                Err(e @ StoreError::Corrupt { .. }) => {
                    tracing::warn!(error = %e, "run-time tool skipped");
                }
                Err(e) => return Err(e),
            }
        }
        Ok(tools)
    }

    /// The live tool `name` at its latest version.
    pub fn get(&self, name: &str) -> Result<Option<StoredTool>, StoreError> {
        match self.store.read(|c| live_version(c, name))? {
            Some(v) => self.version(name, v),
            None => Ok(None),
        }
    }

    /// One version of a tool.
    fn version(&self, name: &str, version: u32) -> Result<Option<StoredTool>, StoreError> {
        let row = self.store.read(|c| {
            c.query_opt(
                "SELECT description, input_schema, code, examples, status, quality,
                        verification, created_at, actor
                 FROM rt_versions WHERE name = ?1 AND version = ?2",
                params![name, version],
            )
        })?;
        let Some(r) = row else {
            return Ok(None);
        };
        let corrupt = |message: String| StoreError::Corrupt {
            place: self.store.place().to_string(),
            name: name.to_string(),
            version,
            message,
        };
        let (schema, examples, verification): (String, String, String) =
            (r.get(1)?, r.get(3)?, r.get(6)?);
        Ok(Some(StoredTool {
            name: name.to_string(),
            version,
            description: r.get(0)?,
            input_schema: serde_json::from_str(&schema).map_err(|e| corrupt(e.to_string()))?,
            code: r.get(2)?,
            examples: serde_json::from_str(&examples).map_err(|e| corrupt(e.to_string()))?,
            status: r.get(4)?,
            quality: r.get(5)?,
            verification: serde_json::from_str(&verification)
                .map_err(|e| corrupt(e.to_string()))?,
            created_at: crate::state::to_time(r.get(7)?),
            actor: r.get(8)?,
        }))
    }

    /// `name`'s versions and audit entries (the latest [`MAX_HISTORY`]
    /// of each); `None` when nothing of that name was ever recorded.
    pub fn history(&self, name: &str) -> Result<Option<History>, StoreError> {
        let (deleted, versions, audit) = self.store.read(|c| {
            let deleted: Option<Option<i64>> = c
                .query_opt(
                    "SELECT deleted_at FROM rt_tools WHERE name = ?1",
                    params![name],
                )?
                .map(|r| r.get(0))
                .transpose()?;
            let versions: Vec<u32> = c
                .query(
                    "SELECT version FROM rt_versions WHERE name = ?1 ORDER BY version DESC LIMIT ?2",
                    params![name, MAX_HISTORY as i64],
                )?
                .iter()
                .map(|r| r.get(0))
                .collect::<Result<_, _>>()?;
            let audit: Vec<AuditEntry> = c
                .query(
                    "SELECT at, actor, action, name, version, detail FROM rt_audit
                     WHERE name = ?1 ORDER BY id DESC LIMIT ?2",
                    params![name, MAX_HISTORY as i64],
                )?
                .iter()
                .map(|r| {
                    Ok(AuditEntry {
                        at: crate::state::to_time(r.get(0)?),
                        actor: r.get(1)?,
                        action: r.get(2)?,
                        name: r.get(3)?,
                        version: r.get(4)?,
                        detail: r.get(5)?,
                    })
                })
                .collect::<Result<_, StateError>>()?;
            Ok::<_, StateError>((deleted, versions, audit))
        })?;
        if deleted.is_none() && audit.is_empty() {
            return Ok(None);
        }
        let mut stored = Vec::with_capacity(versions.len());
        for v in versions.into_iter().rev() {
            if let Some(t) = self.version(name, v)? {
                stored.push(t);
            }
        }
        Ok(Some(History {
            name: name.to_string(),
            deleted: !matches!(deleted, Some(None)),
            versions: stored,
            audit: audit.into_iter().rev().collect(),
        }))
    }
}

fn audit(
    c: &Conn<'_>,
    at: i64,
    actor: &str,
    action: &str,
    name: &str,
    version: Option<u32>,
    detail: &str,
) -> Result<(), StateError> {
    c.execute(
        "INSERT INTO rt_audit (at, actor, action, name, version, detail)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![
            at,
            actor,
            action,
            name,
            version,
            crate::text::ellipsized(detail, MAX_DETAIL_CHARS)
        ],
    )?;
    Ok(())
}

/// A stored value as JSON (plain data: serialising cannot fail).
fn json<T: Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "null".to_string())
}

/// The latest version of the live (not deleted) tool `name`.
fn live_version(c: &Conn<'_>, name: &str) -> Result<Option<u32>, StateError> {
    c.query_opt(
        "SELECT version FROM rt_tools WHERE name = ?1 AND deleted_at IS NULL",
        params![name],
    )?
    .map(|r| r.get(0))
    .transpose()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn spec(name: &str) -> ToolSpec {
        ToolSpec {
            name: name.to_string(),
            description: "d".to_string(),
            input_schema: json!({"type": "object"}),
            code: "function run() { return 1; }".to_string(),
            examples: vec![Example {
                input: json!({}),
                expect: json!(1),
            }],
        }
    }

    #[test]
    fn a_corrupt_row_costs_its_tool_not_the_list() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = Config::default();
        config.storage.data_dir = dir.path().to_path_buf();
        let store = Store::open(&config).unwrap();
        store
            .save(&spec("good"), "verified", 1.0, &[], "cli", 10)
            .unwrap();
        store
            .save(&spec("bad"), "verified", 1.0, &[], "cli", 10)
            .unwrap();
        store
            .store
            .write(|c| {
                c.execute(
                    "UPDATE rt_versions SET input_schema = '{' WHERE name = 'bad'",
                    params![],
                )
            })
            .unwrap();
        let live: Vec<String> = store.live().unwrap().into_iter().map(|t| t.name).collect();
        assert_eq!(live, ["good"]);
        assert!(matches!(store.get("bad"), Err(StoreError::Corrupt { .. })));
    }
}
