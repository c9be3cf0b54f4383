//! Where GRACE keeps its state besides the vectors: a SQLite file per
//! store in the data folder (`storage.state: sqlite`, the embedded
//! default), or one PostgreSQL database several servers share
//! (`storage.state: postgres`).
//!
//! A store (the review queue, …) is written once, against [`Conn`]: SQL
//! with SQLite's `?N` placeholders and types, which `sql` rewrites for
//! PostgreSQL, and [`Dialect`] for the fragments that differ. Both
//! backends give the same guarantees the stores were written for:
//!
//! - [`Store::write`] runs a closure in one transaction, and one writer
//!   per store at a time (SQLite: `BEGIN IMMEDIATE`; PostgreSQL: a
//!   transaction-scoped advisory lock per store, so a read-then-write in
//!   one transaction is never raced by another server);
//! - the schema is versioned, brought up to date at open under a lock,
//!   and a newer one is refused;
//! - [`Store::watch`] wakes when another writer committed (PostgreSQL:
//!   `LISTEN/NOTIFY`; SQLite: only this process's writes, others poll).

mod documents;
mod lock;
mod postgres;
mod sql;
mod sqlite;
mod value;

use std::path::Path;
use std::sync::Arc;

pub use self::documents::{Document, DocumentError, Documents, Scope, shares_collection};
pub use self::lock::{CAMPAIGN_EVERY, ClusterLock, LEADER, WRITER};
pub use self::sql::Dialect;
pub use self::value::{FromValue, Row, ToValue, Value};
use crate::config::{Config, StateBackend};
pub use crate::state_params as params;
pub use sqlite::{FileCheck, check_file as check_sqlite_file};
pub use sqlite::{now_ms, to_time};

/// What went wrong with a store's database.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// SQLite failed.
    #[error("{place}: {source}")]
    Sqlite {
        /// The store and its file.
        place: String,
        /// SQLite's error.
        #[source]
        source: rusqlite::Error,
    },
    /// PostgreSQL failed or could not be reached.
    #[error("{place}: {message}")]
    Postgres {
        /// The store, its schema and the server.
        place: String,
        /// What failed, with the server's own words.
        message: String,
        /// The server could not be reached or the pool had no connection
        /// in time: a retry later may work (HTTP 503).
        unavailable: bool,
        /// The server's SQLSTATE, when it answered with an error (else
        /// empty).
        sqlstate: String,
    },
    /// A column was not of the kind asked for.
    #[error("{place}: column {column}: {message}")]
    Type {
        /// The store.
        place: String,
        /// The column (from 0).
        column: usize,
        /// What was expected and found.
        message: String,
    },
    /// The database's schema is newer than this GRACE's.
    #[error(
        "{place}: schema version {found} is newer than this GRACE understands ({supported}); upgrade grace"
    )]
    TooNew {
        /// The store.
        place: String,
        /// The database's version.
        found: i64,
        /// This GRACE's version.
        supported: i64,
    },
    /// The configuration cannot be used (a password variable unset, …).
    #[error("{0}")]
    Config(String),
    /// A query expected a row and found none.
    #[error("{place}: no row")]
    NoRow {
        /// The store.
        place: String,
    },
}

impl StateError {
    /// Whether the database's disk is full (SQLite's `SQLITE_FULL`,
    /// PostgreSQL's `53100 disk_full`): nothing was written.
    pub fn is_disk_full(&self) -> bool {
        match self {
            StateError::Sqlite {
                source: rusqlite::Error::SqliteFailure(e, _),
                ..
            } => e.code == rusqlite::ErrorCode::DiskFull,
            StateError::Postgres { sqlstate, .. } => sqlstate == postgres::DISK_FULL,
            _ => false,
        }
    }

    /// Whether a retry later may work (PostgreSQL unreachable).
    pub fn is_unavailable(&self) -> bool {
        matches!(
            self,
            StateError::Postgres {
                unavailable: true,
                ..
            }
        )
    }
}

/// The result of a state operation.
pub type Result<T> = std::result::Result<T, StateError>;

/// One store's database: its SQLite file, or its tables in PostgreSQL.
pub struct Store {
    backend: Backend,
    place: Arc<str>,
}

enum Backend {
    Sqlite(sqlite::Db),
    /// The process's pool for the store (shared by every `Store` opened on
    /// the same settings), and this store's id for its listener.
    Postgres(Arc<postgres::Pool>, u64),
}

impl Drop for Store {
    fn drop(&mut self) {
        if let Backend::Postgres(pool, id) = &self.backend {
            pool.unlisten(*id);
        }
    }
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("place", &self.place).finish()
    }
}

/// What a store is: its name (a file `<name>.sqlite3`, PostgreSQL's
/// version row), its schema in SQLite's SQL, and that schema's version.
///
/// On PostgreSQL the stores of a knowledge base share one schema, so no
/// two stores may name a table or an index alike.
#[derive(Debug, Clone, Copy)]
pub struct Schema {
    /// The store's name (`review`).
    pub name: &'static str,
    /// What it is, in errors (`review database`).
    pub what: &'static str,
    /// `CREATE … IF NOT EXISTS` statements: running them on an older
    /// database brings it up to date.
    pub ddl: &'static str,
    /// The schema's version.
    pub version: i64,
    /// Statements that bring an existing database up to a version `ddl`
    /// alone cannot (a renamed table), each run once on a database older
    /// than its version, in order, before `ddl`.
    pub migrations: &'static [(i64, &'static str)],
    /// Whether a committed write must survive a power cut (SQLite
    /// `synchronous=FULL`, PostgreSQL waits for its WAL on disk); false for
    /// figures not worth a flush on a question's path, which then survive
    /// a crash of the process only.
    pub durable: bool,
}

impl Schema {
    /// What brings a database at version `found` (0: new) to this
    /// schema's version: the migrations it has not had, then `ddl`.
    pub(crate) fn upgrade(&self, found: i64) -> String {
        let mut sql = String::new();
        if found > 0 {
            for (_, step) in self.migrations.iter().filter(|(to, _)| *to > found) {
                sql.push_str(step);
                sql.push('\n');
            }
        }
        sql.push_str(self.ddl);
        sql
    }
}

impl Store {
    /// Opens `schema`'s store where `config` keeps state: the SQLite file
    /// `sqlite_file`, or PostgreSQL's `storage.postgres`.
    pub fn open(config: &Config, schema: Schema, sqlite_file: &Path) -> Result<Self> {
        Self::open_with(config, &config.storage.postgres, schema, sqlite_file)
    }

    /// Opens `schema`'s store of what every knowledge base shares (the
    /// principals, …): the SQLite file `sqlite_file`, or PostgreSQL's
    /// tables in the server's schema (`Config::shared_postgres`).
    pub fn open_shared(config: &Config, schema: Schema, sqlite_file: &Path) -> Result<Self> {
        Self::open_with(config, &config.shared_postgres(), schema, sqlite_file)
    }

    fn open_with(
        config: &Config,
        postgres: &crate::config::PostgresConfig,
        schema: Schema,
        sqlite_file: &Path,
    ) -> Result<Self> {
        match config.storage.state {
            StateBackend::Sqlite => Self::open_sqlite(schema, sqlite_file),
            StateBackend::Postgres => {
                static IDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
                let pool = postgres::Pool::shared(postgres, schema)?;
                let id = IDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                Ok(Self {
                    place: Arc::from(pool.place()),
                    backend: Backend::Postgres(pool, id),
                })
            }
        }
    }

    /// Opens `schema`'s store in the SQLite file `path`.
    pub fn open_sqlite(schema: Schema, path: &Path) -> Result<Self> {
        let place = format!("{} {}", schema.what, path.display());
        let folder = path.parent().unwrap_or(Path::new("."));
        let file = path
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        let db = sqlite::Db::open_in(folder, &file, &schema).map_err(|e| match e {
            sqlite::DbOpenError::Folder(e) => {
                StateError::Config(format!("{place}: cannot create its folder: {e}"))
            }
            sqlite::DbOpenError::Open(sqlite::OpenError::Db(source)) => StateError::Sqlite {
                place: place.clone(),
                source,
            },
            sqlite::DbOpenError::Open(sqlite::OpenError::TooNew { found, supported }) => {
                StateError::TooNew {
                    place: place.clone(),
                    found,
                    supported,
                }
            }
        })?;
        Ok(Self {
            backend: Backend::Sqlite(db),
            place: Arc::from(place),
        })
    }

    /// The store's file or PostgreSQL schema, for messages.
    pub fn place(&self) -> &str {
        &self.place
    }

    /// The SQLite file, when the store is one.
    pub fn sqlite_path(&self) -> Option<&Path> {
        match &self.backend {
            Backend::Sqlite(db) => Some(db.path()),
            Backend::Postgres(..) => None,
        }
    }

    /// Which SQL the store speaks.
    pub fn dialect(&self) -> Dialect {
        match &self.backend {
            Backend::Sqlite(_) => Dialect::Sqlite,
            Backend::Postgres(..) => Dialect::Postgres,
        }
    }

    /// Runs `f` on a connection, outside a write transaction (each
    /// statement sees what was committed when it ran).
    pub fn read<T, E: From<StateError>>(
        &self,
        f: impl FnOnce(&Conn<'_>) -> std::result::Result<T, E>,
    ) -> std::result::Result<T, E> {
        match &self.backend {
            Backend::Sqlite(db) => {
                let conn = db.lock();
                f(&Conn::Sqlite {
                    conn: &conn,
                    place: &self.place,
                })
            }
            Backend::Postgres(pool, _) => {
                let session = pool.session()?;
                f(&Conn::Postgres(&session))
            }
        }
    }

    /// Runs `f` in one write transaction, one writer per store at a time,
    /// and commits it when `f` returns `Ok` (rolls back otherwise).
    pub fn write<T, E: From<StateError>>(
        &self,
        f: impl FnOnce(&Conn<'_>) -> std::result::Result<T, E>,
    ) -> std::result::Result<T, E> {
        match &self.backend {
            Backend::Sqlite(db) => {
                let place = &self.place;
                let sqlite = sqlite_error(place);
                let mut conn = db.lock();
                let tx = conn
                    .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
                    .map_err(sqlite)?;
                let out = f(&Conn::Sqlite { conn: &tx, place })?;
                tx.commit().map_err(sqlite)?;
                Ok(out)
            }
            Backend::Postgres(pool, _) => {
                let session = pool.session()?;
                session.begin_write()?;
                match f(&Conn::Postgres(&session)) {
                    Ok(out) => {
                        session.commit_write()?;
                        Ok(out)
                    }
                    Err(e) => {
                        session.rollback();
                        Err(e)
                    }
                }
            }
        }
    }

    /// Calls `wake` whenever another server commits a change to this
    /// store (PostgreSQL's `NOTIFY`); with SQLite, never (one server: its
    /// own writes are known to it). The first call starts the listener
    /// (one more connection, shared by the stores on the same pool); later
    /// calls of this store do nothing, and its drop ends them.
    pub fn watch(&self, wake: impl Fn() + Send + Sync + 'static) {
        if let Backend::Postgres(pool, id) = &self.backend {
            pool.listen(*id, Arc::new(wake));
        }
    }
}

/// Deletes what `config`'s knowledge base keeps in PostgreSQL (its schema
/// and every table in it), when its state is there; nothing otherwise.
pub fn drop_postgres_schema(config: &Config) -> Result<()> {
    match config.storage.state {
        StateBackend::Sqlite => Ok(()),
        StateBackend::Postgres => postgres::drop_schema(&config.storage.postgres),
    }
}

/// A connection inside [`Store::read`] or [`Store::write`].
pub enum Conn<'a> {
    /// A SQLite connection (or its transaction).
    Sqlite {
        /// The connection.
        conn: &'a rusqlite::Connection,
        /// The store, for errors.
        place: &'a Arc<str>,
    },
    /// A PostgreSQL connection from the pool.
    Postgres(&'a postgres::Session<'a>),
}

impl Conn<'_> {
    /// Which SQL this connection speaks.
    pub fn dialect(&self) -> Dialect {
        match self {
            Conn::Sqlite { .. } => Dialect::Sqlite,
            Conn::Postgres(_) => Dialect::Postgres,
        }
    }

    fn place(&self) -> Arc<str> {
        match self {
            Conn::Sqlite { place, .. } => Arc::clone(place),
            Conn::Postgres(s) => s.place(),
        }
    }

    /// Runs a statement; the rows it changed.
    pub fn execute(&self, sql: &str, params: &[&dyn ToValue]) -> Result<u64> {
        match self {
            Conn::Sqlite { conn, place } => {
                let values = sqlite_params(params);
                conn.prepare_cached(sql)
                    .and_then(|mut s| s.execute(rusqlite::params_from_iter(values.iter())))
                    .map(|n| n as u64)
                    .map_err(sqlite_error(place))
            }
            Conn::Postgres(s) => s.execute(sql, params),
        }
    }

    /// Runs a query; every row.
    pub fn query(&self, sql: &str, params: &[&dyn ToValue]) -> Result<Vec<Row>> {
        match self {
            Conn::Sqlite { conn, place } => {
                let values = sqlite_params(params);
                let err = sqlite_error(place);
                let mut stmt = conn.prepare_cached(sql).map_err(err)?;
                let columns = stmt.column_count();
                let mut rows = stmt
                    .query(rusqlite::params_from_iter(values.iter()))
                    .map_err(err)?;
                let mut out = Vec::new();
                while let Some(row) = rows.next().map_err(err)? {
                    let mut values = Vec::with_capacity(columns);
                    for i in 0..columns {
                        values.push(from_sqlite(row.get_ref(i).map_err(err)?));
                    }
                    out.push(Row {
                        values,
                        place: Arc::clone(place),
                    });
                }
                Ok(out)
            }
            Conn::Postgres(s) => s.query(sql, params),
        }
    }

    /// The first row of a query, if any.
    pub fn query_opt(&self, sql: &str, params: &[&dyn ToValue]) -> Result<Option<Row>> {
        Ok(self.query(sql, params)?.into_iter().next())
    }

    /// The first row of a query; none is an error.
    pub fn query_one(&self, sql: &str, params: &[&dyn ToValue]) -> Result<Row> {
        self.query_opt(sql, params)?
            .ok_or_else(|| StateError::NoRow {
                place: self.place().to_string(),
            })
    }

    /// Runs an `INSERT … RETURNING id`; the new row's id.
    pub fn insert(&self, sql: &str, params: &[&dyn ToValue]) -> Result<i64> {
        self.query_one(sql, params)?.get(0)
    }
}

/// SQLite's error as the store's, naming it.
fn sqlite_error(place: &Arc<str>) -> impl Fn(rusqlite::Error) -> StateError + Copy + '_ {
    move |source| StateError::Sqlite {
        place: place.to_string(),
        source,
    }
}

fn sqlite_params(params: &[&dyn ToValue]) -> Vec<rusqlite::types::Value> {
    params
        .iter()
        .map(|p| match p.to_value() {
            Value::Null => rusqlite::types::Value::Null,
            Value::Integer(i) => rusqlite::types::Value::Integer(i),
            Value::Real(f) => rusqlite::types::Value::Real(f),
            Value::Text(s) => rusqlite::types::Value::Text(s),
            Value::Blob(b) => rusqlite::types::Value::Blob(b),
        })
        .collect()
}

fn from_sqlite(v: rusqlite::types::ValueRef<'_>) -> Value {
    use rusqlite::types::ValueRef;
    match v {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::Integer(i),
        ValueRef::Real(f) => Value::Real(f),
        ValueRef::Text(t) => Value::Text(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => Value::Blob(b.to_vec()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCHEMA: Schema = Schema {
        name: "test",
        what: "test database",
        ddl: "CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL, score REAL, data BLOB);",
        version: 1,
        migrations: &[],
        durable: true,
    };

    #[test]
    fn a_sqlite_store_writes_reads_and_rolls_back() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_sqlite(SCHEMA, &dir.path().join("t.sqlite3")).unwrap();
        let id = store
            .write(|c| {
                c.insert(
                    "INSERT INTO t (name, score, data) VALUES (?1, ?2, ?3) RETURNING id",
                    params!["a", 0.5, vec![1u8, 2]],
                )
            })
            .unwrap();
        assert_eq!(id, 1);
        // A failed write leaves nothing.
        let failed: Result<()> = store.write(|c| {
            c.execute("INSERT INTO t (name) VALUES (?1)", params!["b"])?;
            Err(StateError::Config("stop".into()))
        });
        assert!(failed.is_err());
        let rows = store
            .read(|c| c.query("SELECT id, name, score, data FROM t ORDER BY id", params![]))
            .unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].get::<String>(1).unwrap(), "a");
        assert_eq!(rows[0].get::<f64>(2).unwrap(), 0.5);
        assert_eq!(rows[0].get::<Vec<u8>>(3).unwrap(), vec![1, 2]);
        let e = rows[0].get::<i64>(1).unwrap_err().to_string();
        assert!(e.contains("t.sqlite3") && e.contains("column 1"), "{e}");
    }

    #[test]
    fn a_sqlite_store_newer_than_grace_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.sqlite3");
        drop(
            Store::open_sqlite(
                Schema {
                    version: 5,
                    ..SCHEMA
                },
                &path,
            )
            .unwrap(),
        );
        let e = Store::open_sqlite(SCHEMA, &path).unwrap_err();
        assert!(
            matches!(
                e,
                StateError::TooNew {
                    found: 5,
                    supported: 1,
                    ..
                }
            ),
            "{e}"
        );
    }
}
