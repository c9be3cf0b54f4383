//! The PostgreSQL backend: a pool of connections (`deadpool-postgres`
//! over `tokio-postgres`) per store, every table in the schema
//! `storage.postgres.schema` (each connection's `search_path`).
//!
//! The stores are synchronous, the driver is async: as the Qdrant store
//! does, the pool owns a small tokio runtime, runs every call as a task on
//! it and waits for the answer on a channel, so it works from plain
//! threads, from `spawn_blocking` and from inside another runtime.
//!
//! A write transaction first takes a transaction-scoped advisory lock
//! named after the schema and store: one writer per store at a time
//! across every server, the guarantee SQLite's `BEGIN IMMEDIATE` gives one
//! machine, so a store's read-then-write transactions stay correct as
//! written. It ends with `NOTIFY` on the store's channel (delivered at
//! commit), which every other server's listener turns into a wake-up.

use std::cell::Cell;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::Duration;

use bytes::BytesMut;
use deadpool_postgres::{Manager, ManagerConfig, Object, PoolError, RecyclingMethod};
use sha2::{Digest, Sha256};
use tokio::runtime::Runtime;
use tokio_postgres::types::{IsNull, ToSql, Type, to_sql_checked};
use tokio_postgres::{AsyncMessage, NoTls};

use super::sql::{ddl_to_postgres, to_postgres};
use super::{Result, Row, Schema, StateError, ToValue, Value};
use crate::config::PostgresConfig;

/// How long the listener waits before connecting again after losing its
/// connection.
const LISTEN_RETRY: Duration = Duration::from_secs(1);

/// The table holding each store's schema version.
const VERSIONS_DDL: &str = "CREATE TABLE IF NOT EXISTS grace_schema_versions (store TEXT PRIMARY KEY, version BIGINT NOT NULL)";

/// One store's connections.
pub(crate) struct Pool {
    runtime: Option<Runtime>,
    pool: deadpool_postgres::Pool,
    /// For the listener's own connection.
    config: tokio_postgres::Config,
    place: Arc<str>,
    /// The store's advisory lock for writers.
    lock_key: i64,
    /// The store's `NOTIFY` channel.
    channel: String,
    listening: AtomicBool,
}

impl Pool {
    /// Connects, and brings the store's tables to `schema`'s version
    /// under a lock (a newer version is refused).
    pub(crate) fn open(settings: &PostgresConfig, schema: Schema) -> Result<Self> {
        let mut config: tokio_postgres::Config = settings.url.parse().map_err(|e| {
            StateError::Config(format!("storage.postgres.url: cannot be read ({e})"))
        })?;
        let where_ = server_name(&config);
        if !settings.password_env.is_empty()
            && let Some(password) =
                std::env::var_os(&settings.password_env).filter(|p| !p.is_empty())
        {
            config.password(password.to_string_lossy().as_bytes());
        }
        let timeout = Duration::from_secs_f64(settings.connect_timeout_seconds);
        config
            .connect_timeout(timeout)
            .application_name("grace")
            .options(format!("-c search_path={}", settings.schema));
        let place: Arc<str> = Arc::from(format!(
            "{} in PostgreSQL {where_} (schema {})",
            schema.what, settings.schema
        ));
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("grace-postgres")
            .enable_all()
            .build()
            .map_err(|e| {
                StateError::Config(format!("{place}: cannot start the client's runtime: {e}"))
            })?;
        let manager = Manager::from_config(
            config.clone(),
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = deadpool_postgres::Pool::builder(manager)
            .max_size(settings.pool_size)
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .wait_timeout(Some(timeout))
            .create_timeout(Some(timeout))
            .recycle_timeout(Some(timeout))
            .build()
            .map_err(|e| StateError::Config(format!("{place}: {e}")))?;
        let key = format!("{}.{}", settings.schema, schema.name);
        let digest = Sha256::digest(key.as_bytes());
        let mut first = [0u8; 8];
        first.copy_from_slice(&digest[..8]);
        let pool = Self {
            runtime: Some(runtime),
            pool,
            config,
            place,
            lock_key: i64::from_be_bytes(first),
            channel: format!("grace_{}", crate::durable::hex(&digest[..12])),
            listening: AtomicBool::new(false),
        };
        pool.migrate(settings, schema)?;
        Ok(pool)
    }

    /// The store and server, for messages.
    pub(crate) fn place(&self) -> &str {
        &self.place
    }

    /// Runs `fut` on the pool's runtime and waits for it.
    fn run<T: Send + 'static>(&self, fut: impl Future<Output = T> + Send + 'static) -> Result<T> {
        let Some(runtime) = &self.runtime else {
            return Err(self.unavailable("the client's runtime has stopped".into()));
        };
        let (tx, rx) = mpsc::sync_channel(1);
        runtime.spawn(async move {
            let _ = tx.send(fut.await);
        });
        rx.recv()
            .map_err(|_| self.unavailable("the client's runtime stopped mid-call".into()))
    }

    fn unavailable(&self, message: String) -> StateError {
        StateError::Postgres {
            place: self.place.to_string(),
            message,
            unavailable: true,
        }
    }

    fn error(&self, e: &tokio_postgres::Error) -> StateError {
        StateError::Postgres {
            place: self.place.to_string(),
            message: describe(e),
            unavailable: e.is_closed() || e.as_db_error().is_none(),
        }
    }

    fn pool_error(&self, e: &PoolError) -> StateError {
        match e {
            PoolError::Backend(e) if e.as_db_error().is_some() => {
                let mut message = describe(e);
                if e.code().is_some_and(|c| c.code().starts_with("28")) {
                    message.push_str(
                        "; check the user in storage.postgres.url and the password in the variable storage.postgres.password_env names",
                    );
                }
                StateError::Postgres {
                    place: self.place.to_string(),
                    message,
                    unavailable: false,
                }
            }
            PoolError::Backend(e) => self.unavailable(format!(
                "cannot connect: {}; is PostgreSQL running there? (storage.postgres.url)",
                describe(e)
            )),
            PoolError::Timeout(_) => self.unavailable("no connection in time (is the server up? storage.postgres.connect_timeout_seconds)".into()),
            other => self.unavailable(other.to_string()),
        }
    }

    /// A connection from the pool.
    pub(crate) fn session(&self) -> Result<Session<'_>> {
        let pool = self.pool.clone();
        let client = self
            .run(async move { pool.get().await })?
            .map_err(|e| self.pool_error(&e))?;
        Ok(Session {
            pool: self,
            client: Arc::new(client),
            in_write: Cell::new(false),
        })
    }

    fn migrate(&self, settings: &PostgresConfig, schema: Schema) -> Result<()> {
        let session = self.session()?;
        let ddl = ddl_to_postgres(schema.ddl);
        let name = settings.schema.clone();
        let client = session.client();
        let store = schema.name;
        let supported = schema.version;
        // Rolled back by the session's drop unless it ends.
        session.in_write.set(true);
        let found = self
            .run(async move {
                client.batch_execute("BEGIN").await?;
                // One migration at a time across every server and store.
                client
                    .execute("SELECT pg_advisory_xact_lock(7145238861)", &[])
                    .await?;
                client
                    .batch_execute(&format!(
                        "CREATE SCHEMA IF NOT EXISTS {name}; {VERSIONS_DDL}"
                    ))
                    .await?;
                let found: Option<i64> = client
                    .query_opt(
                        "SELECT version FROM grace_schema_versions WHERE store = $1",
                        &[&store],
                    )
                    .await?
                    .map(|r| r.get(0));
                if found.unwrap_or(0) < supported {
                    client.batch_execute(&ddl).await?;
                    client
                        .execute(
                            "INSERT INTO grace_schema_versions (store, version) VALUES ($1, $2) \
                             ON CONFLICT (store) DO UPDATE SET version = excluded.version",
                            &[&store, &supported],
                        )
                        .await?;
                }
                if found.unwrap_or(0) > supported {
                    client.batch_execute("ROLLBACK").await?;
                } else {
                    client.batch_execute("COMMIT").await?;
                }
                Ok::<_, tokio_postgres::Error>(found)
            })?
            .map_err(|e| self.error(&e))?;
        session.in_write.set(false);
        match found {
            Some(found) if found > supported => Err(StateError::TooNew {
                place: self.place.to_string(),
                found,
                supported,
            }),
            _ => Ok(()),
        }
    }

    /// Starts the listener (once): `wake` runs after every `NOTIFY` on the
    /// store's channel, and after each (re)connection, since what was
    /// sent while it was away is lost.
    pub(crate) fn listen(&self, wake: Arc<dyn Fn() + Send + Sync>) {
        if self.listening.swap(true, Ordering::SeqCst) {
            return;
        }
        let Some(runtime) = &self.runtime else { return };
        let config = self.config.clone();
        let channel = self.channel.clone();
        let place = Arc::clone(&self.place);
        runtime.spawn(async move {
            loop {
                match config.connect(NoTls).await {
                    Ok((client, mut connection)) => {
                        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<()>();
                        let driver = tokio::spawn(async move {
                            while let Some(message) =
                                std::future::poll_fn(|cx| connection.poll_message(cx)).await
                            {
                                match message {
                                    Ok(AsyncMessage::Notification(_)) => {
                                        if tx.send(()).is_err() {
                                            break;
                                        }
                                    }
                                    Ok(_) => {}
                                    Err(_) => break,
                                }
                            }
                        });
                        if client.batch_execute(&format!("LISTEN {channel}")).await.is_ok() {
                            wake();
                            while rx.recv().await.is_some() {
                                wake();
                            }
                        }
                        driver.abort();
                        tracing::warn!(store = %place, "lost the connection listening for other servers' writes; connecting again");
                    }
                    Err(e) => {
                        tracing::warn!(store = %place, error = %describe(&e), "cannot listen for other servers' writes; trying again");
                    }
                }
                tokio::time::sleep(LISTEN_RETRY).await;
            }
        });
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// One pooled connection, for a read or one write transaction.
pub struct Session<'a> {
    pool: &'a Pool,
    client: Arc<Object>,
    in_write: Cell<bool>,
}

impl Session<'_> {
    fn client(&self) -> Arc<Object> {
        Arc::clone(&self.client)
    }

    pub(crate) fn place(&self) -> Arc<str> {
        Arc::clone(&self.pool.place)
    }

    /// `BEGIN`, then the store's writer lock.
    pub(crate) fn begin_write(&self) -> Result<()> {
        let client = self.client();
        let key = self.pool.lock_key;
        self.in_write.set(true);
        self.pool
            .run(async move {
                client.batch_execute("BEGIN").await?;
                client
                    .execute("SELECT pg_advisory_xact_lock($1)", &[&key])
                    .await
            })?
            .map_err(|e| self.pool.error(&e))?;
        Ok(())
    }

    /// `NOTIFY` the other servers, then `COMMIT`.
    pub(crate) fn commit_write(&self) -> Result<()> {
        let client = self.client();
        let notify = format!("NOTIFY {}; COMMIT", self.pool.channel);
        let out = self
            .pool
            .run(async move { client.batch_execute(&notify).await })?
            .map_err(|e| self.pool.error(&e));
        self.in_write.set(false);
        out
    }

    /// Rolls the write back (its failure is the connection's, and a
    /// broken connection is not returned to the pool).
    pub(crate) fn rollback(&self) {
        let client = self.client();
        if let Ok(Err(e)) = self
            .pool
            .run(async move { client.batch_execute("ROLLBACK").await })
        {
            tracing::warn!(store = %self.pool.place, error = %describe(&e), "rollback failed");
        }
        self.in_write.set(false);
    }

    pub(crate) fn execute(&self, sql: &str, params: &[&dyn ToValue]) -> Result<u64> {
        match self.statement(sql, params, false)? {
            Ran::Changed(n) => Ok(n),
            Ran::Rows(_) => Ok(0),
        }
    }

    pub(crate) fn query(&self, sql: &str, params: &[&dyn ToValue]) -> Result<Vec<Row>> {
        let Ran::Rows(rows) = self.statement(sql, params, true)? else {
            return Ok(Vec::new());
        };
        rows.iter()
            .map(|row| {
                let values = (0..row.len())
                    .map(|i| column(row, i))
                    .collect::<std::result::Result<Vec<_>, String>>()
                    .map_err(|message| StateError::Postgres {
                        place: self.pool.place.to_string(),
                        message,
                        unavailable: false,
                    })?;
                Ok(Row {
                    values,
                    place: Arc::clone(&self.pool.place),
                })
            })
            .collect()
    }

    /// Runs one statement (prepared once per connection), for its rows
    /// or the count of rows it changed.
    fn statement(&self, sql: &str, params: &[&dyn ToValue], rows: bool) -> Result<Ran> {
        let sql = to_postgres(sql);
        let values: Vec<Value> = params.iter().map(|p| p.to_value()).collect();
        let client = self.client();
        self.pool
            .run(async move {
                let statement = client.prepare_cached(&sql).await?;
                let refs: Vec<&(dyn ToSql + Sync)> =
                    values.iter().map(|v| v as &(dyn ToSql + Sync)).collect();
                Ok::<_, tokio_postgres::Error>(if rows {
                    Ran::Rows(client.query(&statement, &refs).await?)
                } else {
                    Ran::Changed(client.execute(&statement, &refs).await?)
                })
            })?
            .map_err(|e| self.pool.error(&e))
    }
}

/// What a statement gave back.
enum Ran {
    Changed(u64),
    Rows(Vec<tokio_postgres::Row>),
}

impl Drop for Session<'_> {
    fn drop(&mut self) {
        if self.in_write.get() {
            // A write that neither committed nor rolled back (a panic):
            // roll back before the connection goes back to the pool.
            self.rollback();
        }
    }
}

/// Column `i` of a PostgreSQL row as a [`Value`].
fn column(row: &tokio_postgres::Row, i: usize) -> std::result::Result<Value, String> {
    let ty = row.columns()[i].type_().clone();
    let e = |e: tokio_postgres::Error| format!("column {i}: {e}");
    Ok(match ty {
        Type::INT8 => row
            .try_get::<_, Option<i64>>(i)
            .map_err(e)?
            .map_or(Value::Null, Value::Integer),
        Type::INT4 => row
            .try_get::<_, Option<i32>>(i)
            .map_err(e)?
            .map_or(Value::Null, |v| Value::Integer(i64::from(v))),
        Type::INT2 => row
            .try_get::<_, Option<i16>>(i)
            .map_err(e)?
            .map_or(Value::Null, |v| Value::Integer(i64::from(v))),
        Type::BOOL => row
            .try_get::<_, Option<bool>>(i)
            .map_err(e)?
            .map_or(Value::Null, |v| Value::Integer(i64::from(v))),
        Type::FLOAT8 => row
            .try_get::<_, Option<f64>>(i)
            .map_err(e)?
            .map_or(Value::Null, Value::Real),
        Type::FLOAT4 => row
            .try_get::<_, Option<f32>>(i)
            .map_err(e)?
            .map_or(Value::Null, |v| Value::Real(f64::from(v))),
        Type::BYTEA => row
            .try_get::<_, Option<Vec<u8>>>(i)
            .map_err(e)?
            .map_or(Value::Null, Value::Blob),
        Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN => row
            .try_get::<_, Option<String>>(i)
            .map_err(e)?
            .map_or(Value::Null, Value::Text),
        other => {
            return Err(format!(
                "column {i} is of type {other}, which GRACE does not read (cast it to BIGINT, DOUBLE PRECISION or TEXT)"
            ));
        }
    })
}

impl ToSql for Value {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> std::result::Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match (self, ty) {
            (Value::Null, _) => Ok(IsNull::Yes),
            (Value::Integer(i), &Type::INT8) => i.to_sql(ty, out),
            (Value::Integer(i), &Type::INT4) => i32::try_from(*i)?.to_sql(ty, out),
            (Value::Integer(i), &Type::INT2) => i16::try_from(*i)?.to_sql(ty, out),
            (Value::Integer(i), &Type::BOOL) => (*i != 0).to_sql(ty, out),
            #[allow(clippy::cast_precision_loss)]
            (Value::Integer(i), &Type::FLOAT8) => (*i as f64).to_sql(ty, out),
            (Value::Integer(i), &Type::TEXT | &Type::VARCHAR) => i.to_string().to_sql(ty, out),
            (Value::Real(f), &Type::FLOAT8) => f.to_sql(ty, out),
            #[allow(clippy::cast_possible_truncation)]
            (Value::Real(f), &Type::FLOAT4) => (*f as f32).to_sql(ty, out),
            (Value::Text(s), _) if <&str as ToSql>::accepts(ty) => s.as_str().to_sql(ty, out),
            (Value::Blob(b), &Type::BYTEA) => b.as_slice().to_sql(ty, out),
            (v, ty) => Err(format!("cannot pass {v:?} as PostgreSQL type {ty}").into()),
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

/// The server's host, port and database, for messages (never the user or
/// a password).
fn server_name(config: &tokio_postgres::Config) -> String {
    let host = config
        .get_hosts()
        .first()
        .map(|h| match h {
            tokio_postgres::config::Host::Tcp(name) => name.clone(),
            tokio_postgres::config::Host::Unix(path) => path.display().to_string(),
        })
        .unwrap_or_else(|| "localhost".into());
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let db = config.get_dbname().unwrap_or("postgres");
    format!("{host}:{port}/{db}")
}

/// A driver error with what the server said, and its causes.
fn describe(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        let mut s = format!("{}: {}", db.severity(), db.message());
        if let Some(detail) = db.detail() {
            s.push_str(&format!(" ({detail})"));
        }
        return s;
    }
    let mut s = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        s.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    s
}
