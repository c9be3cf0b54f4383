//! Run-time tools kept in `<data_dir>/runtime_tools.sqlite3`: every version
//! of every tool (a change is a new version; deleting marks the tool
//! deleted and keeps its versions), and an audit log of every creation,
//! change, deletion and refusal with who did it.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use serde::Serialize;
use serde_json::Value;

use super::{Example, ExampleOutcome, ToolSpec};

const SCHEMA_VERSION: i64 = 1;
const SCHEMA: &str = "
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
    id INTEGER PRIMARY KEY,
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
    /// SQLite failed.
    #[error("run-time tools {path}: {source}")]
    Db {
        /// The database file.
        path: PathBuf,
        /// What SQLite said.
        source: rusqlite::Error,
    },
    /// The file is from a newer GRACE.
    #[error("run-time tools {path}: {message}")]
    TooNew {
        /// The database file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A stored row does not parse (edited by hand?).
    #[error("run-time tools {path}: tool {name} v{version}: {message}")]
    Corrupt {
        /// The database file.
        path: PathBuf,
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

/// The database, one connection shared by the process.
pub struct Store {
    path: PathBuf,
    conn: Mutex<Connection>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish()
    }
}

impl Store {
    /// Opens (creating) the database at `path`.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        if let Some(dir) = path.parent() {
            // A missing folder shows up as SQLite's error below.
            let _ = std::fs::create_dir_all(dir);
        }
        let conn = crate::sqlite::open(path, SCHEMA, SCHEMA_VERSION).map_err(|e| {
            e.into_error(
                path,
                |path, source| StoreError::Db { path, source },
                |path, message| StoreError::TooNew { path, message },
            )
        })?;
        Ok(Self {
            path: path.to_path_buf(),
            conn: Mutex::new(conn),
        })
    }

    fn db(&self, source: rusqlite::Error) -> StoreError {
        StoreError::Db {
            path: self.path.clone(),
            source,
        }
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
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
        let mut conn = self.conn();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.db(e))?;
        let existing: Option<(u32, Option<i64>)> = tx
            .query_row(
                "SELECT version, deleted_at FROM rt_tools WHERE name = ?1",
                [&spec.name],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(|e| self.db(e))?;
        let live = matches!(existing, Some((_, None)));
        if !live {
            let count: i64 = tx
                .query_row(
                    "SELECT COUNT(*) FROM rt_tools WHERE deleted_at IS NULL",
                    [],
                    |r| r.get(0),
                )
                .map_err(|e| self.db(e))?;
            if usize::try_from(count).unwrap_or(usize::MAX) >= max_tools {
                return Err(StoreError::Full { max: max_tools });
            }
        }
        let version = existing.map_or(1, |(v, _)| v + 1);
        let now = crate::sqlite::now_ms();
        tx.execute(
            "INSERT INTO rt_tools (name, version, deleted_at) VALUES (?1, ?2, NULL)
             ON CONFLICT(name) DO UPDATE SET version = ?2, deleted_at = NULL",
            params![spec.name, version],
        )
        .map_err(|e| self.db(e))?;
        tx.execute(
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
        )
        .map_err(|e| self.db(e))?;
        let action = if live { "update" } else { "create" };
        let detail = format!("{status}, quality {quality:.2}");
        audit(&tx, now, actor, action, &spec.name, Some(version), &detail)
            .map_err(|e| self.db(e))?;
        tx.commit().map_err(|e| self.db(e))?;
        drop(conn);
        self.version(&spec.name, version)?
            .ok_or_else(|| self.db(rusqlite::Error::QueryReturnedNoRows))
    }

    /// Records a refused creation (static check, bad input).
    pub fn refuse(&self, name: &str, actor: &str, why: &str) -> Result<(), StoreError> {
        let conn = self.conn();
        let name = crate::text::truncate_chars(name, 80);
        audit(
            &conn,
            crate::sqlite::now_ms(),
            actor,
            "refuse",
            name,
            None,
            why,
        )
        .map_err(|e| self.db(e))
    }

    /// Marks `name` deleted (its versions stay); the version it had, or
    /// `None` when there is no live tool of that name.
    pub fn delete(&self, name: &str, actor: &str) -> Result<Option<u32>, StoreError> {
        let mut conn = self.conn();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.db(e))?;
        let version = live_version(&tx, name).map_err(|e| self.db(e))?;
        let Some(version) = version else {
            return Ok(None);
        };
        let now = crate::sqlite::now_ms();
        tx.execute(
            "UPDATE rt_tools SET deleted_at = ?2 WHERE name = ?1",
            params![name, now],
        )
        .map_err(|e| self.db(e))?;
        audit(&tx, now, actor, "delete", name, Some(version), "deleted").map_err(|e| self.db(e))?;
        tx.commit().map_err(|e| self.db(e))?;
        Ok(Some(version))
    }

    /// The live tools, each at its latest version, by name.
    pub fn live(&self) -> Result<Vec<StoredTool>, StoreError> {
        let names: Vec<(String, u32)> = {
            let conn = self.conn();
            let mut stmt = conn
                .prepare(
                    "SELECT name, version FROM rt_tools WHERE deleted_at IS NULL ORDER BY name",
                )
                .map_err(|e| self.db(e))?;
            stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .map_err(|e| self.db(e))?
                .collect::<Result<_, _>>()
                .map_err(|e| self.db(e))?
        };
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
        let version = live_version(&self.conn(), name).map_err(|e| self.db(e))?;
        match version {
            Some(v) => self.version(name, v),
            None => Ok(None),
        }
    }

    /// One version of a tool.
    fn version(&self, name: &str, version: u32) -> Result<Option<StoredTool>, StoreError> {
        let row = self
            .conn()
            .query_row(
                "SELECT description, input_schema, code, examples, status, quality,
                        verification, created_at, actor
                 FROM rt_versions WHERE name = ?1 AND version = ?2",
                params![name, version],
                |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, String>(2)?,
                        r.get::<_, String>(3)?,
                        r.get::<_, String>(4)?,
                        r.get::<_, f64>(5)?,
                        r.get::<_, String>(6)?,
                        r.get::<_, i64>(7)?,
                        r.get::<_, String>(8)?,
                    ))
                },
            )
            .optional()
            .map_err(|e| self.db(e))?;
        let Some((description, schema, code, examples, status, quality, verification, at, actor)) =
            row
        else {
            return Ok(None);
        };
        let corrupt = |message: String| StoreError::Corrupt {
            path: self.path.clone(),
            name: name.to_string(),
            version,
            message,
        };
        Ok(Some(StoredTool {
            name: name.to_string(),
            version,
            description,
            input_schema: serde_json::from_str(&schema).map_err(|e| corrupt(e.to_string()))?,
            code,
            examples: serde_json::from_str(&examples).map_err(|e| corrupt(e.to_string()))?,
            status,
            quality,
            verification: serde_json::from_str(&verification)
                .map_err(|e| corrupt(e.to_string()))?,
            created_at: crate::sqlite::to_time(at),
            actor,
        }))
    }

    /// `name`'s versions and audit entries (the latest [`MAX_HISTORY`]
    /// of each); `None` when nothing of that name was ever recorded.
    pub fn history(&self, name: &str) -> Result<Option<History>, StoreError> {
        let (deleted, versions, audit) = {
            let conn = self.conn();
            let deleted: Option<Option<i64>> = conn
                .query_row(
                    "SELECT deleted_at FROM rt_tools WHERE name = ?1",
                    [name],
                    |r| r.get(0),
                )
                .optional()
                .map_err(|e| self.db(e))?;
            let mut stmt = conn
                .prepare(
                    "SELECT version FROM rt_versions WHERE name = ?1 ORDER BY version DESC LIMIT ?2",
                )
                .map_err(|e| self.db(e))?;
            let versions: Vec<u32> = stmt
                .query_map(params![name, MAX_HISTORY as i64], |r| r.get(0))
                .map_err(|e| self.db(e))?
                .collect::<Result<_, _>>()
                .map_err(|e| self.db(e))?;
            let mut stmt = conn
                .prepare(
                    "SELECT at, actor, action, name, version, detail FROM rt_audit
                     WHERE name = ?1 ORDER BY id DESC LIMIT ?2",
                )
                .map_err(|e| self.db(e))?;
            let audit: Vec<AuditEntry> = stmt
                .query_map(params![name, MAX_HISTORY as i64], |r| {
                    Ok(AuditEntry {
                        at: crate::sqlite::to_time(r.get(0)?),
                        actor: r.get(1)?,
                        action: r.get(2)?,
                        name: r.get(3)?,
                        version: r.get(4)?,
                        detail: r.get(5)?,
                    })
                })
                .map_err(|e| self.db(e))?
                .collect::<Result<_, _>>()
                .map_err(|e| self.db(e))?;
            (deleted, versions, audit)
        };
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
    conn: &Connection,
    at: i64,
    actor: &str,
    action: &str,
    name: &str,
    version: Option<u32>,
    detail: &str,
) -> rusqlite::Result<()> {
    conn.execute(
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
fn live_version(conn: &Connection, name: &str) -> rusqlite::Result<Option<u32>> {
    conn.query_row(
        "SELECT version FROM rt_tools WHERE name = ?1 AND deleted_at IS NULL",
        [name],
        |r| r.get(0),
    )
    .optional()
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
        let store = Store::open(&dir.path().join("rt.sqlite3")).unwrap();
        store
            .save(&spec("good"), "verified", 1.0, &[], "cli", 10)
            .unwrap();
        store
            .save(&spec("bad"), "verified", 1.0, &[], "cli", 10)
            .unwrap();
        store
            .conn()
            .execute(
                "UPDATE rt_versions SET input_schema = '{' WHERE name = 'bad'",
                [],
            )
            .unwrap();
        let live: Vec<String> = store.live().unwrap().into_iter().map(|t| t.name).collect();
        assert_eq!(live, ["good"]);
        assert!(matches!(store.get("bad"), Err(StoreError::Corrupt { .. })));
    }
}
