//! Opening GRACE's SQLite files (the review queue, the sessions, …: the
//! `state` layer's SQLite backend) the one way they are opened: a busy
//! timeout (processes take turns instead of failing), WAL (readers never
//! block the writer), `synchronous=FULL` (a committed row survives a power
//! cut, not only a killed process; `NORMAL` for a store that is not
//! `durable`), foreign keys, and the schema brought to its version. A file
//! from a newer GRACE is refused, never rewritten.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};
use rusqlite::Connection;

use super::Schema;

/// Now, as the databases store time (Unix milliseconds).
pub fn now_ms() -> i64 {
    Utc::now().timestamp_millis()
}

/// A stored timestamp as a date.
pub fn to_time(ms: i64) -> DateTime<Utc> {
    Utc.timestamp_millis_opt(ms)
        .single()
        .unwrap_or(DateTime::<Utc>::UNIX_EPOCH)
}

/// Why a database could not be opened.
#[derive(Debug)]
pub(crate) enum OpenError {
    /// SQLite failed.
    Db(rusqlite::Error),
    /// The file's schema is newer than this GRACE's.
    TooNew {
        /// The file's version.
        found: i64,
        /// This GRACE's version.
        supported: i64,
    },
}

/// What SQLite's own check found in a file ([`check_file`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileCheck {
    /// Sound.
    Sound,
    /// Damaged: not a database, or its integrity check failed (at most
    /// five of SQLite's findings).
    Damaged(String),
    /// Not checked: it could not be opened or read (busy, no permission).
    Unchecked(String),
}

/// SQLite's own check of the file at `path` (`PRAGMA integrity_check`),
/// opened read-only.
pub fn check_file(path: &Path) -> FileCheck {
    use rusqlite::ErrorCode::{DatabaseCorrupt, NotADatabase};
    let check = || -> rusqlite::Result<Vec<String>> {
        let conn = Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
        let mut stmt = conn.prepare("PRAGMA integrity_check(5)")?;
        let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
        rows.collect()
    };
    match check() {
        Ok(rows) if rows == ["ok"] => FileCheck::Sound,
        Ok(rows) => FileCheck::Damaged(rows.join("; ")),
        Err(e @ rusqlite::Error::SqliteFailure(f, _))
            if matches!(f.code, DatabaseCorrupt | NotADatabase) =>
        {
            FileCheck::Damaged(e.to_string())
        }
        Err(e) => FileCheck::Unchecked(e.to_string()),
    }
}

/// Opens (creating if needed) the database at `path` with `schema` at
/// its version (`PRAGMA user_version`; a schema's statements must be
/// `IF NOT EXISTS`, so an older file is brought up to date by running it).
fn open(path: &Path, schema: &Schema) -> Result<Connection, OpenError> {
    let version = schema.version;
    let conn = Connection::open(path).map_err(OpenError::Db)?;
    conn.busy_timeout(Duration::from_secs(10))
        .map_err(OpenError::Db)?;
    let synchronous = if schema.durable { "FULL" } else { "NORMAL" };
    for (pragma, value) in [
        ("journal_mode", "WAL"),
        ("synchronous", synchronous),
        ("foreign_keys", "ON"),
    ] {
        conn.pragma_update(None, pragma, value)
            .map_err(OpenError::Db)?;
    }
    let found: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(OpenError::Db)?;
    if found > version {
        return Err(OpenError::TooNew {
            found,
            supported: version,
        });
    }
    if found < version {
        conn.execute_batch(&format!(
            "BEGIN IMMEDIATE; {} PRAGMA user_version = {version}; COMMIT;",
            schema.upgrade(found)
        ))
        .map_err(OpenError::Db)?;
    }
    Ok(conn)
}

/// One database file opened as [`open`] does, shared by threads: one
/// connection behind a lock, written in `BEGIN IMMEDIATE` transactions.
pub(crate) struct Db {
    path: PathBuf,
    conn: Mutex<Connection>,
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db").field("path", &self.path).finish()
    }
}

impl Db {
    /// Opens `file` in `data_dir`, creating the folder and the file when
    /// needed, with `schema` at its version.
    pub(crate) fn open_in(
        data_dir: &Path,
        file: &str,
        schema: &Schema,
    ) -> Result<Self, DbOpenError> {
        std::fs::create_dir_all(data_dir).map_err(DbOpenError::Folder)?;
        let path = data_dir.join(file);
        let conn = open(&path, schema).map_err(DbOpenError::Open)?;
        Ok(Self {
            path,
            conn: Mutex::new(conn),
        })
    }

    /// The database file.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The connection, for reads.
    pub(crate) fn lock(&self) -> MutexGuard<'_, Connection> {
        // A panic mid-write rolled its transaction back: the connection is
        // fine to use.
        self.conn.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Why [`Db::open_in`] failed.
#[derive(Debug)]
pub(crate) enum DbOpenError {
    /// The data folder could not be created.
    Folder(std::io::Error),
    /// The database could not be opened.
    Open(OpenError),
}
