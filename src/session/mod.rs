//! Conversations: sessions that keep their turns, so that a follow-up
//! ("and on staging?") can be read against what came before.
//!
//! A [`SessionStore`] is one SQLite file, `sessions.sqlite3`, in the data
//! folder beside the review queue (WAL, `synchronous=FULL`: a committed
//! turn survives a crash). Everything about it is bounded by
//! `sessions.*`: a session lives `ttl_seconds` after its last turn, keeps
//! at most `max_turns` turns and `max_bytes` bytes of them (the oldest go
//! first), and at most `max_sessions` sessions are open at once. Expired
//! sessions are removed by every write, so no background job is needed.
//!
//! Session ids are `ses_` and 32 random hex digits: knowing one is what
//! lets a caller continue a conversation, so they are not guessable.

mod runs;

pub use self::runs::{RUN_ID_PATTERN, RUN_PREFIX};

use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::{DateTime, Utc};
use rusqlite::{OptionalExtension, params};
use serde::{Deserialize, Serialize};

use crate::config::SessionsConfig;
use crate::exec::{Decision, RunReport};
use crate::sqlite::{Db, DbOpenError, now_ms, to_time};

/// The file name of the session database in the data folder.
pub const SESSIONS_FILE: &str = "sessions.sqlite3";
/// Prefix of session ids.
pub const SESSION_PREFIX: &str = "ses_";
/// The pattern of a session id, as the OpenAPI document publishes it.
pub const SESSION_ID_PATTERN: &str = r"^ses_[0-9a-f]{32}$";
/// Characters of a question or answer a turn keeps.
const MAX_TURN_TEXT_CHARS: usize = 8_000;
/// Sources a turn keeps.
const MAX_TURN_SOURCES: usize = 20;
/// Turns of history follow-up resolution reads.
pub const HISTORY_TURNS: usize = 4;

const SCHEMA_VERSION: i64 = 3;
const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS sessions (
    id         TEXT PRIMARY KEY,
    created_at INTEGER NOT NULL,           -- Unix milliseconds
    updated_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS sessions_expiry ON sessions(expires_at);
CREATE TABLE IF NOT EXISTS turns (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    n          INTEGER NOT NULL,           -- 1-based, never reused
    bytes      INTEGER NOT NULL,           -- size of `turn`
    turn       TEXT NOT NULL,              -- JSON Turn
    PRIMARY KEY (session_id, n)
);
-- Runs waiting for the asker's reply (version 2): the agent's state.
CREATE TABLE IF NOT EXISTS runs (
    id         TEXT PRIMARY KEY,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    state      TEXT NOT NULL               -- JSON
);
CREATE INDEX IF NOT EXISTS runs_expiry ON runs(expires_at);
-- Whose a session is (version 3): a principal's name. A session without a
-- row is the local operator's or a service's, which may open any session.
CREATE TABLE IF NOT EXISTS session_owners (
    session_id TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    owner      TEXT NOT NULL
);
";
/// Result of session operations.
pub type Result<T> = std::result::Result<T, SessionError>;

/// What went wrong with a session.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// No such session, or it expired.
    #[error("session `{id}` does not exist or has expired (start a new one)")]
    NotFound {
        /// The id asked for.
        id: String,
    },
    /// No run waits under this id, or its time for a reply ran out.
    #[error(
        "run {id} is not waiting for a reply (it never did, was already continued, or expired after agent.reply_timeout_seconds)"
    )]
    RunNotFound {
        /// The id asked for.
        id: String,
    },
    /// A waiting run's state is over the size a run may keep.
    #[error("the run's state is {bytes} bytes, over the {max} a waiting run may keep")]
    RunTooLarge {
        /// Its size.
        bytes: usize,
        /// The limit.
        max: usize,
    },
    /// `sessions.max_sessions` are open.
    #[error("{max} sessions are open (sessions.max_sessions); end one or wait for one to expire")]
    TooMany {
        /// The limit.
        max: usize,
    },
    /// The database failed.
    #[error("session database {path}: {source}")]
    Db {
        /// The database file.
        path: PathBuf,
        /// SQLite's error.
        #[source]
        source: rusqlite::Error,
    },
    /// The database holds something this GRACE cannot read.
    #[error("session database {path}: {message}")]
    Corrupt {
        /// The database file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// Creating the folder or reading the random source failed.
    #[error("cannot {action}: {source}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

/// One question and what GRACE did with it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Turn {
    /// The question as the asker typed it.
    pub question: String,
    /// The question as run, when follow-up resolution rewrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub standalone: Option<String>,
    /// The answer given (a draft when escalated); `None` when declined.
    pub answer: Option<String>,
    /// The sources the answer cites.
    #[serde(default)]
    pub sources: Vec<String>,
    /// What the run did.
    pub decision: Decision,
    /// The run's confidence.
    pub confidence: f64,
}

impl Turn {
    /// The turn a finished run leaves in its session.
    pub fn from_report(report: &RunReport) -> Self {
        let answer = report.answer.as_ref().filter(|a| !a.abstained);
        let mut sources = report.cited_sources();
        sources.truncate(MAX_TURN_SOURCES);
        // Bounded whatever the ask was: a turn is kept even alone over
        // `sessions.max_bytes`, so its texts are cut here.
        let cut = |t: &str| crate::text::truncate_chars(t, MAX_TURN_TEXT_CHARS).to_string();
        Self {
            question: cut(&report.question),
            standalone: report.rewrite.as_ref().map(|r| cut(&r.question)),
            answer: answer.map(|a| cut(&a.text)),
            sources,
            decision: report.decision,
            confidence: report.confidence,
        }
    }

    /// The question as run.
    pub fn standalone(&self) -> &str {
        self.standalone.as_deref().unwrap_or(&self.question)
    }

    /// This turn as follow-up resolution reads it.
    pub fn prior(&self) -> crate::followup::PriorTurn<'_> {
        crate::followup::PriorTurn {
            question: &self.question,
            standalone: self.standalone(),
            answer: self.answer.as_deref(),
        }
    }
}

/// A session and its turns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Session {
    /// The session's id.
    pub id: String,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When it expires unless another turn comes.
    pub expires_at: DateTime<Utc>,
    /// The turns kept, oldest first.
    pub turns: Vec<Turn>,
}

/// The durable store of sessions.
#[derive(Debug)]
pub struct SessionStore {
    db: Db,
    /// The database file (for errors).
    path: PathBuf,
    limits: SessionsConfig,
}

impl SessionStore {
    /// Opens (creating if needed) `sessions.sqlite3` in `data_dir`.
    pub fn open(data_dir: &Path, limits: &SessionsConfig) -> Result<Self> {
        let path = data_dir.join(SESSIONS_FILE);
        let db =
            Db::open_in(data_dir, SESSIONS_FILE, SCHEMA, SCHEMA_VERSION).map_err(|e| match e {
                DbOpenError::Folder(source) => SessionError::Io {
                    action: "create the data folder",
                    source,
                },
                DbOpenError::Open(e) => e.into_error(
                    &path,
                    |path, source| SessionError::Db { path, source },
                    |path, message| SessionError::Corrupt { path, message },
                ),
            })?;
        Ok(Self {
            db,
            path,
            limits: limits.clone(),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Starts a new session (the operator's or a service's).
    pub fn create(&self) -> Result<Session> {
        self.create_for(None)
    }

    /// Starts a new session belonging to principal `owner` (`None`: the
    /// operator's or a service's).
    pub fn create_for(&self, owner: Option<&str>) -> Result<Session> {
        let id = new_id(SESSION_PREFIX)?;
        let now = now_ms();
        let expires = now.saturating_add(millis(self.limits.ttl_seconds));
        self.write(|tx, err| {
            let open: i64 = tx
                .query_row("SELECT COUNT(*) FROM sessions", [], |r| r.get(0))
                .map_err(err)?;
            if usize::try_from(open).unwrap_or(usize::MAX) >= self.limits.max_sessions {
                return Err(SessionError::TooMany {
                    max: self.limits.max_sessions,
                });
            }
            tx.execute(
                "INSERT INTO sessions (id, created_at, updated_at, expires_at) VALUES (?1, ?2, ?2, ?3)",
                params![id, now, expires],
            )
            .map_err(err)?;
            if let Some(owner) = owner {
                tx.execute(
                    "INSERT INTO session_owners (session_id, owner) VALUES (?1, ?2)",
                    params![id, owner],
                )
                .map_err(err)?;
            }
            Ok(())
        })?;
        Ok(Session {
            id,
            created_at: to_time(now),
            expires_at: to_time(expires),
            turns: Vec::new(),
        })
    }

    /// The session `id` with its turns; [`SessionError::NotFound`] when it
    /// does not exist or has expired.
    pub fn get(&self, id: &str) -> Result<Session> {
        let not_found = || SessionError::NotFound { id: shown(id) };
        if !plausible_id(id, SESSION_PREFIX) {
            return Err(not_found());
        }
        let conn = self.db.lock();
        let err = db_error(&self.path);
        let row: Option<(i64, i64)> = conn
            .query_row(
                "SELECT created_at, expires_at FROM sessions WHERE id = ?1 AND expires_at > ?2",
                params![id, now_ms()],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(&err)?;
        let (created, expires) = row.ok_or_else(not_found)?;
        let mut stmt = conn
            .prepare("SELECT turn FROM turns WHERE session_id = ?1 ORDER BY n")
            .map_err(&err)?;
        let texts = stmt
            .query_map([id], |r| r.get::<_, String>(0))
            .map_err(&err)?
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(&err)?;
        let turns = texts
            .iter()
            .map(|t| {
                serde_json::from_str(t).map_err(|e| SessionError::Corrupt {
                    path: self.path.clone(),
                    message: format!("a turn of session {id}: {e}"),
                })
            })
            .collect::<Result<Vec<Turn>>>()?;
        Ok(Session {
            id: id.to_string(),
            created_at: to_time(created),
            expires_at: to_time(expires),
            turns,
        })
    }

    /// Adds `turn` to session `id`, drops the oldest turns past the
    /// limits, and extends its life by `sessions.ttl_seconds`.
    pub fn append(&self, id: &str, turn: &Turn) -> Result<()> {
        if !plausible_id(id, SESSION_PREFIX) {
            return Err(SessionError::NotFound { id: shown(id) });
        }
        let text = serde_json::to_string(turn).map_err(|e| SessionError::Corrupt {
            path: self.path.clone(),
            message: format!("cannot store a turn: {e}"),
        })?;
        let now = now_ms();
        self.write(|tx, err| {
            let live = tx
                .execute(
                    "UPDATE sessions SET updated_at = ?2, expires_at = ?3 WHERE id = ?1",
                    params![id, now, now.saturating_add(millis(self.limits.ttl_seconds))],
                )
                .map_err(err)?;
            if live == 0 {
                return Err(SessionError::NotFound { id: shown(id) });
            }
            tx.execute(
                "INSERT INTO turns (session_id, n, bytes, turn)
                 VALUES (?1, (SELECT COALESCE(MAX(n), 0) + 1 FROM turns WHERE session_id = ?1), ?2, ?3)",
                params![id, text.len() as i64, text],
            )
            .map_err(err)?;
            // Keep the newest turns within both limits.
            let mut stmt = tx
                .prepare("SELECT n, bytes FROM turns WHERE session_id = ?1 ORDER BY n DESC")
                .map_err(err)?;
            let rows = stmt
                .query_map([id], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)))
                .map_err(err)?
                .collect::<std::result::Result<Vec<_>, _>>()
                .map_err(err)?;
            let (mut kept, mut bytes) = (0usize, 0usize);
            let mut oldest_kept = None;
            for (n, size) in rows {
                let size = usize::try_from(size).unwrap_or(usize::MAX);
                // The newest turn is always kept, whatever its size.
                if kept > 0
                    && (kept >= self.limits.max_turns
                        || bytes.saturating_add(size) > self.limits.max_bytes)
                {
                    break;
                }
                kept += 1;
                bytes = bytes.saturating_add(size);
                oldest_kept = Some(n);
            }
            if let Some(n) = oldest_kept {
                tx.execute(
                    "DELETE FROM turns WHERE session_id = ?1 AND n < ?2",
                    params![id, n],
                )
                .map_err(err)?;
            }
            Ok(())
        })
    }

    /// Refuses, as [`SessionError::NotFound`], principal `owner` on a
    /// session that is not its own (so another's session is as absent as
    /// one that never was); `None` (the operator, a service) may open any.
    pub fn check_owner(&self, id: &str, owner: Option<&str>) -> Result<()> {
        let Some(owner) = owner else { return Ok(()) };
        let found: Option<String> = self
            .db
            .lock()
            .query_row(
                "SELECT owner FROM session_owners WHERE session_id = ?1",
                [id],
                |r| r.get(0),
            )
            .optional()
            .map_err(db_error(&self.path))?;
        match found.as_deref() == Some(owner) {
            true => Ok(()),
            false => Err(SessionError::NotFound { id: shown(id) }),
        }
    }

    /// Ends session `id` (its turns are deleted).
    pub fn delete(&self, id: &str) -> Result<()> {
        if !plausible_id(id, SESSION_PREFIX) {
            return Err(SessionError::NotFound { id: shown(id) });
        }
        self.write(|tx, err| {
            match tx
                .execute("DELETE FROM sessions WHERE id = ?1", [id])
                .map_err(err)?
            {
                0 => Err(SessionError::NotFound { id: shown(id) }),
                _ => Ok(()),
            }
        })
    }

    /// The last [`HISTORY_TURNS`] turns of session `id`.
    pub fn history(&self, id: &str) -> Result<Vec<Turn>> {
        let mut turns = self.get(id)?.turns;
        let start = turns.len().saturating_sub(HISTORY_TURNS);
        Ok(turns.split_off(start))
    }

    /// One `BEGIN IMMEDIATE` transaction that first removes expired
    /// sessions.
    fn write<T>(
        &self,
        f: impl FnOnce(
            &rusqlite::Transaction<'_>,
            &dyn Fn(rusqlite::Error) -> SessionError,
        ) -> Result<T>,
    ) -> Result<T> {
        let err = db_error(&self.path);
        self.db.write(&err, |tx| {
            let now = now_ms();
            tx.execute("DELETE FROM sessions WHERE expires_at <= ?1", [now])
                .map_err(&err)?;
            tx.execute("DELETE FROM runs WHERE expires_at <= ?1", [now])
                .map_err(&err)?;
            f(tx, &err)
        })
    }
}

/// `prefix` and 32 random hex digits: an id nobody can guess.
fn new_id(prefix: &str) -> Result<String> {
    crate::durable::random_id(prefix).map_err(|source| SessionError::Io {
        action: "read the random source",
        source,
    })
}

/// Seconds (a validated, finite duration) as the database's milliseconds.
fn millis(seconds: f64) -> i64 {
    Duration::from_secs_f64(seconds)
        .as_millis()
        .try_into()
        .unwrap_or(i64::MAX)
}

/// An id (of a session or a run, by `prefix`) this store could have issued (checked before any query).
fn plausible_id(id: &str, prefix: &str) -> bool {
    crate::durable::is_random_id(id, prefix)
}

/// An id as it may appear in an error message: bounded and printable.
fn shown(id: &str) -> String {
    crate::text::shown_id(id)
}

fn db_error(path: &Path) -> impl Fn(rusqlite::Error) -> SessionError + '_ {
    move |source| SessionError::Db {
        path: path.to_path_buf(),
        source,
    }
}

#[cfg(test)]
mod tests;
