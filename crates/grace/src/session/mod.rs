//! Conversations: sessions that keep their turns, so that a follow-up
//! ("and on staging?") can be read against what came before.
//!
//! A [`SessionStore`] is one SQLite file, `sessions.sqlite3`, in the data
//! folder beside the review queue (WAL, `synchronous=FULL`: a committed
//! turn survives a crash), or its tables in PostgreSQL with
//! `storage.state: postgres`, so that any server continues any session. Everything about it is bounded by
//! `sessions.*`: a session lives `ttl_seconds` after its last turn, keeps
//! at most `max_turns` turns and `max_bytes` bytes of them (the oldest go
//! first), and at most `max_sessions` sessions are open at once. Expired
//! sessions are removed by every write, so no background job is needed.
//!
//! Session ids are `ses_` and 32 random hex digits: knowing one is what
//! lets a caller continue a conversation, so they are not guessable.

mod runs;

pub use self::runs::{RUN_ID_PATTERN, RUN_PREFIX};

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::config::{Config, SessionsConfig};
use crate::exec::{Decision, RunReport};
use crate::state::{Conn, Schema, StateError, Store, params};
use crate::state::{now_ms, to_time};

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

/// The session store's schema, at version 4.
const SCHEMA: Schema = Schema {
    name: "sessions",
    what: "session database",
    ddl: DDL,
    version: 4,
    // `runs` became `parked_runs`: on PostgreSQL the feedback store's
    // `runs` shares the schema.
    migrations: &[(
        4,
        "CREATE TABLE IF NOT EXISTS runs (id TEXT PRIMARY KEY, created_at INTEGER NOT NULL, \
         expires_at INTEGER NOT NULL, state TEXT NOT NULL); \
         ALTER TABLE runs RENAME TO parked_runs; DROP INDEX IF EXISTS runs_expiry;",
    )],
    durable: true,
};
const DDL: &str = "
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
-- Runs waiting for the asker's reply (version 2; `runs` until version 4):
-- the agent's state.
CREATE TABLE IF NOT EXISTS parked_runs (
    id         TEXT PRIMARY KEY,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    state      TEXT NOT NULL               -- JSON
);
CREATE INDEX IF NOT EXISTS parked_runs_expiry ON parked_runs(expires_at);
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
    /// The database failed (or PostgreSQL could not be reached).
    #[error(transparent)]
    State(#[from] StateError),
    /// The database holds something this GRACE cannot read.
    #[error("{place}: {message}")]
    Corrupt {
        /// The database's file or schema.
        place: String,
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
    store: Store,
    limits: SessionsConfig,
}

impl SessionStore {
    /// Opens (creating if needed) the sessions of `config`'s knowledge
    /// base: `sessions.sqlite3` in its data folder, or PostgreSQL's tables
    /// with `storage.state: postgres`.
    pub fn open(config: &Config) -> Result<Self> {
        let store = Store::open(config, SCHEMA, &config.kb_dir().join(SESSIONS_FILE))?;
        Ok(Self {
            store,
            limits: config.sessions.clone(),
        })
    }

    /// The database's file or schema, for messages.
    pub fn place(&self) -> &str {
        self.store.place()
    }

    /// A damaged row, named.
    fn corrupt(&self, message: String) -> SessionError {
        SessionError::Corrupt {
            place: self.place().to_string(),
            message,
        }
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
        self.write(|c| {
            let open: i64 = c
                .query_one("SELECT COUNT(*) FROM sessions", params![])?
                .get(0)?;
            if usize::try_from(open).unwrap_or(usize::MAX) >= self.limits.max_sessions {
                return Err(SessionError::TooMany {
                    max: self.limits.max_sessions,
                });
            }
            c.execute(
                "INSERT INTO sessions (id, created_at, updated_at, expires_at) VALUES (?1, ?2, ?2, ?3)",
                params![id, now, expires],
            )?;
            if let Some(owner) = owner {
                c.execute(
                    "INSERT INTO session_owners (session_id, owner) VALUES (?1, ?2)",
                    params![id, owner],
                )?;
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
        let (created, expires, texts) = self.store.read(|c| {
            let Some(row) = c.query_opt(
                "SELECT created_at, expires_at FROM sessions WHERE id = ?1 AND expires_at > ?2",
                params![id, now_ms()],
            )?
            else {
                return Err(not_found());
            };
            let texts = c
                .query(
                    "SELECT turn FROM turns WHERE session_id = ?1 ORDER BY n",
                    params![id],
                )?
                .iter()
                .map(|r| r.get::<String>(0))
                .collect::<std::result::Result<Vec<_>, _>>()?;
            Ok((row.get::<i64>(0)?, row.get::<i64>(1)?, texts))
        })?;
        let turns = texts
            .iter()
            .map(|t| {
                serde_json::from_str(t)
                    .map_err(|e| self.corrupt(format!("a turn of session {id}: {e}")))
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
        let text = serde_json::to_string(turn)
            .map_err(|e| self.corrupt(format!("cannot store a turn: {e}")))?;
        let now = now_ms();
        self.write(|c| {
            let live = c.execute(
                "UPDATE sessions SET updated_at = ?2, expires_at = ?3 WHERE id = ?1",
                params![id, now, now.saturating_add(millis(self.limits.ttl_seconds))],
            )?;
            if live == 0 {
                return Err(SessionError::NotFound { id: shown(id) });
            }
            c.execute(
                "INSERT INTO turns (session_id, n, bytes, turn)
                 VALUES (?1, (SELECT COALESCE(MAX(n), 0) + 1 FROM turns WHERE session_id = ?1), ?2, ?3)",
                params![id, text.len() as i64, text],
            )?;
            // Keep the newest turns within both limits.
            let rows = c.query(
                "SELECT n, bytes FROM turns WHERE session_id = ?1 ORDER BY n DESC",
                params![id],
            )?;
            let (mut kept, mut bytes) = (0usize, 0usize);
            let mut oldest_kept = None;
            for row in rows {
                let (n, size) = (row.get::<i64>(0)?, row.get::<i64>(1)?);
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
                c.execute(
                    "DELETE FROM turns WHERE session_id = ?1 AND n < ?2",
                    params![id, n],
                )?;
            }
            Ok(())
        })
    }

    /// Refuses, as [`SessionError::NotFound`], principal `owner` on a
    /// session that is not its own (so another's session is as absent as
    /// one that never was); `None` (the operator, a service) may open any.
    pub fn check_owner(&self, id: &str, owner: Option<&str>) -> Result<()> {
        let Some(owner) = owner else { return Ok(()) };
        let found: Option<String> = self.store.read(|c| {
            c.query_opt(
                "SELECT owner FROM session_owners WHERE session_id = ?1",
                params![id],
            )?
            .map(|r| r.get(0))
            .transpose()
        })?;
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
        self.write(
            |c| match c.execute("DELETE FROM sessions WHERE id = ?1", params![id])? {
                0 => Err(SessionError::NotFound { id: shown(id) }),
                _ => Ok(()),
            },
        )
    }

    /// The last [`HISTORY_TURNS`] turns of session `id`.
    pub fn history(&self, id: &str) -> Result<Vec<Turn>> {
        let mut turns = self.get(id)?.turns;
        let start = turns.len().saturating_sub(HISTORY_TURNS);
        Ok(turns.split_off(start))
    }

    /// One write transaction that first removes expired sessions and runs.
    fn write<T>(&self, f: impl FnOnce(&Conn<'_>) -> Result<T>) -> Result<T> {
        self.store.write(|c| {
            let now = now_ms();
            c.execute("DELETE FROM sessions WHERE expires_at <= ?1", params![now])?;
            c.execute(
                "DELETE FROM parked_runs WHERE expires_at <= ?1",
                params![now],
            )?;
            f(c)
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

#[cfg(test)]
mod tests;
