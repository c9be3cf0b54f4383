//! The audit log: who asked, searched, viewed or acted on what, and when.
//!
//! One JSON object a line in `<data_dir>/audit.log`: the time, the
//! principal (its name; `-` for the local operator, a service key or the
//! administrator), the knowledge base, the action, the decision and the
//! ids of the documents involved (their sources as stored). Never a
//! question's or a passage's text: the log says who read which document,
//! not what it says. When the file passes `audit.max_bytes` it becomes
//! `audit.log.1` (the older ones move up to `audit.log.<audit.keep_files>`,
//! the oldest dropped), so the log stays within a bound.
//!
//! With `storage.state: postgres` the log is a table every server appends
//! to (`audit_log`, in the server's schema), bounded the same way: the
//! oldest records go once the table holds more than `audit.max_bytes`
//! times `audit.keep_files + 1` bytes of them.
//!
//! A failure to write the log is logged and never fails the request.

use std::fs::OpenOptions;
use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::config::{AuditConfig, Config, StateBackend};
use crate::state::{Schema, StateError, Store, params};

/// The log's file in the data folder.
pub const AUDIT_FILE: &str = "audit.log";
/// Most documents one record names (a search of 1,000 passages names its
/// first 100 documents).
const MAX_DOCUMENTS: usize = 100;
/// Longest line read back; a longer one is not a record of ours.
const MAX_LINE_BYTES: usize = 64 * 1024;
/// Records written between two trims of the table to its bound.
const TRIM_EVERY: i64 = 64;

/// The log's table in PostgreSQL. Not `durable`: as the file is appended
/// without a flush, a record survives a crash of the server, not a power
/// cut of PostgreSQL's machine.
const SCHEMA: Schema = Schema {
    name: "audit",
    what: "audit log",
    ddl: "
CREATE TABLE IF NOT EXISTS audit_log (
    id    INTEGER PRIMARY KEY AUTOINCREMENT,
    bytes INTEGER NOT NULL,
    line  TEXT NOT NULL                    -- one JSON Record
);
",
    version: 1,
    migrations: &[],
    durable: false,
};

/// What was done.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// A question asked (or a waiting run continued).
    Ask,
    /// A search.
    Search,
    /// An escalation read by a reviewer or the administrator.
    EscalationView,
    /// An escalation claimed, answered, rejected, released or retracted.
    Review,
}

/// One line of the log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// When.
    pub at: DateTime<Utc>,
    /// Who: a principal's name, `reviewer:ID`, or `-` for the local
    /// operator, a service key or the administrator.
    pub principal: String,
    /// The knowledge base.
    pub kb: String,
    /// What.
    pub action: Action,
    /// The decision (ask: answer, caveat, escalate, decline, needs_input;
    /// review: the review action); empty when there is none.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub decision: String,
    /// The escalation, for escalation views and review actions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalation: Option<i64>,
    /// The documents cited or found (their sources as stored), at most 100.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub documents: Vec<String>,
}

impl Record {
    /// A record of `action` by `principal` on knowledge base `kb`, now.
    pub fn new(principal: &str, kb: &str, action: Action) -> Self {
        Self {
            at: Utc::now(),
            principal: principal.to_string(),
            kb: kb.to_string(),
            action,
            decision: String::new(),
            escalation: None,
            documents: Vec::new(),
        }
    }

    /// With the decision.
    pub fn decision(mut self, decision: &str) -> Self {
        self.decision = decision.to_string();
        self
    }

    /// With the escalation.
    pub fn escalation(mut self, id: i64) -> Self {
        self.escalation = Some(id);
        self
    }

    /// With these documents, each once, in order, at most 100.
    pub fn documents<'a>(mut self, sources: impl IntoIterator<Item = &'a str>) -> Self {
        for s in sources {
            if self.documents.len() >= MAX_DOCUMENTS {
                break;
            }
            if !self.documents.iter().any(|d| d == s) {
                self.documents.push(s.to_string());
            }
        }
        self
    }
}

/// The log of one data folder.
#[derive(Debug)]
pub struct AuditLog {
    path: PathBuf,
    /// PostgreSQL's table, which replaces the file when state is there.
    table: Option<Store>,
    config: AuditConfig,
}

/// One writer at a time in this process, whichever handle writes (the
/// service's and the review queue's share the file): a line is written
/// whole and a rotation is never raced.
static WRITER: Mutex<()> = Mutex::new(());

impl AuditLog {
    /// The log in `data_dir` (`audit.log`), created on the first record.
    fn new(data_dir: &Path, config: &AuditConfig) -> Self {
        Self {
            path: data_dir.join(AUDIT_FILE),
            table: None,
            config: config.clone(),
        }
    }

    /// The log `config` keeps: `audit.log` in `storage.data_dir`, or the
    /// table every server shares with `storage.state: postgres`.
    pub fn open(config: &Config) -> Result<Self, StateError> {
        let mut log = Self::new(&config.storage.data_dir, &config.audit);
        if config.storage.state == StateBackend::Postgres && config.audit.enabled {
            log.table = Some(Store::open_shared(config, SCHEMA, &log.path)?);
        }
        Ok(log)
    }

    /// Appends `record` (when `audit.enabled`); a failure is logged, never
    /// returned: the log must not stop a request.
    pub fn record(&self, record: &Record) {
        if !self.config.enabled {
            return;
        }
        let written = match &self.table {
            None => self.append(record),
            Some(table) => self.insert(table, record),
        };
        if let Err(e) = written {
            tracing::warn!(path = %self.place(), error = %e, "cannot write the audit log");
        }
    }

    /// The log's file, or its table, for messages.
    pub fn place(&self) -> String {
        match &self.table {
            None => self.path.display().to_string(),
            Some(table) => table.place().to_string(),
        }
    }

    /// Appends `record` to the table, and now and then trims the oldest
    /// records past the bound.
    fn insert(&self, table: &Store, record: &Record) -> std::io::Result<()> {
        let line = serde_json::to_string(record).map_err(std::io::Error::other)?;
        let budget = self
            .config
            .max_bytes
            .saturating_mul(self.config.keep_files as u64 + 1);
        let budget = i64::try_from(budget).unwrap_or(i64::MAX);
        table
            .write(|c| {
                let id = c.insert(
                    "INSERT INTO audit_log (bytes, line) VALUES (?1, ?2) RETURNING id",
                    params![line.len() as i64, line],
                )?;
                if id % TRIM_EVERY == 0 {
                    // The newest records whose bytes fit the budget stay.
                    c.execute(
                        "DELETE FROM audit_log WHERE id <= (
                             SELECT id FROM (
                                 SELECT id, CAST(SUM(bytes) OVER (ORDER BY id DESC) AS BIGINT) AS total
                                 FROM audit_log) AS newest
                             WHERE total > ?1 ORDER BY id DESC LIMIT 1)",
                        params![budget],
                    )?;
                }
                Ok::<_, StateError>(())
            })
            .map_err(std::io::Error::other)
    }
    fn append(&self, record: &Record) -> std::io::Result<()> {
        let mut line = serde_json::to_string(record).map_err(std::io::Error::other)?;
        line.push('\n');
        let _guard = WRITER.lock().unwrap_or_else(|p| p.into_inner());
        let size = std::fs::metadata(&self.path).map(|m| m.len()).unwrap_or(0);
        if size > 0 && size + line.len() as u64 > self.config.max_bytes {
            self.rotate()?;
        }
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)?;
        file.write_all(line.as_bytes())
    }

    /// `audit.log.N` for N = 1 (newest) …
    fn rotated(&self, n: usize) -> PathBuf {
        let mut name = self.path.as_os_str().to_owned();
        name.push(format!(".{n}"));
        PathBuf::from(name)
    }

    /// `audit.log` → `.1`, `.1` → `.2`, …; the oldest past
    /// `audit.keep_files` is dropped.
    fn rotate(&self) -> std::io::Result<()> {
        let keep = self.config.keep_files;
        if keep == 0 {
            return std::fs::remove_file(&self.path);
        }
        let _ = std::fs::remove_file(self.rotated(keep));
        for n in (1..keep).rev() {
            let from = self.rotated(n);
            if from.exists() {
                std::fs::rename(&from, self.rotated(n + 1))?;
            }
        }
        std::fs::rename(&self.path, self.rotated(1))
    }

    /// The records kept, oldest first, that `keep` accepts. A line that is
    /// not a record (cut by a crash, or too long) is passed over.
    pub fn read(&self, keep: &dyn Fn(&Record) -> bool) -> std::io::Result<Vec<Record>> {
        if let Some(table) = &self.table {
            let lines: Vec<String> = table
                .read(|c| {
                    c.query("SELECT line FROM audit_log ORDER BY id", params![])?
                        .iter()
                        .map(|r| r.get(0))
                        .collect::<Result<_, StateError>>()
                })
                .map_err(std::io::Error::other)?;
            return Ok(lines
                .iter()
                .filter_map(|l| serde_json::from_str::<Record>(l).ok())
                .filter(|r| keep(r))
                .collect());
        }
        let mut files: Vec<PathBuf> = (1..=self.config.keep_files)
            .rev()
            .map(|n| self.rotated(n))
            .collect();
        files.push(self.path.clone());
        let mut out = Vec::new();
        for path in files {
            let file = match std::fs::File::open(&path) {
                Ok(f) => f,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            };
            let mut reader = std::io::BufReader::new(file);
            let mut line = Vec::new();
            loop {
                line.clear();
                let n = (&mut reader)
                    .take(MAX_LINE_BYTES as u64 + 1)
                    .read_until(b'\n', &mut line)?;
                if n == 0 {
                    break;
                }
                if line.len() > MAX_LINE_BYTES {
                    // Skip the rest of an overlong line.
                    let mut rest = Vec::new();
                    reader.read_until(b'\n', &mut rest)?;
                    continue;
                }
                if let Ok(record) = serde_json::from_slice::<Record>(&line)
                    && keep(&record)
                {
                    out.push(record);
                }
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(max_bytes: u64, keep_files: usize) -> AuditConfig {
        AuditConfig {
            enabled: true,
            max_bytes,
            keep_files,
        }
    }

    #[test]
    fn records_are_lines_without_text_and_rotate_by_size() {
        let dir = tempfile::tempdir().unwrap();
        let log = AuditLog::new(dir.path(), &config(600, 2));
        for i in 0..20 {
            log.record(
                &Record::new("ann", "default", Action::Ask)
                    .decision("answer")
                    .documents([format!("/kb/doc-{i}.md").as_str()]),
            );
        }
        let all = log.read(&|_| true).unwrap();
        // Bounded: the live file and two rotated ones, each under 600 bytes.
        assert!(all.len() < 20 && all.len() >= 6, "{}", all.len());
        assert_eq!(all.last().unwrap().documents, ["/kb/doc-19.md"]);
        for n in 1..=2 {
            assert!(std::fs::metadata(log.rotated(n)).unwrap().len() <= 600);
        }
        assert!(!log.rotated(3).exists());
        let mine = log.read(&|r| r.principal == "bo").unwrap();
        assert!(mine.is_empty());
    }

    #[test]
    fn a_cut_or_hostile_line_is_passed_over() {
        let dir = tempfile::tempdir().unwrap();
        let log = AuditLog::new(dir.path(), &config(1 << 20, 1));
        log.record(&Record::new("ann", "default", Action::Search));
        let mut text = std::fs::read_to_string(&log.path).unwrap();
        text.push_str("{\"at\": \"cut\n");
        text.push_str(&"x".repeat(MAX_LINE_BYTES * 2));
        text.push('\n');
        std::fs::write(&log.path, text).unwrap();
        log.record(&Record::new("bo", "default", Action::Search));
        let all = log.read(&|_| true).unwrap();
        assert_eq!(
            all.iter().map(|r| r.principal.as_str()).collect::<Vec<_>>(),
            ["ann", "bo"]
        );
    }

    #[test]
    fn a_record_names_at_most_a_hundred_documents_once_each() {
        let sources: Vec<String> = (0..300).map(|i| format!("/kb/{}.md", i % 150)).collect();
        let r = Record::new("-", "default", Action::Search)
            .documents(sources.iter().map(String::as_str));
        assert_eq!(r.documents.len(), MAX_DOCUMENTS);
    }
}
