//! The PostgreSQL backend: a pool of connections (`deadpool-postgres`
//! over `tokio-postgres`) per store, every table in the schema
//! `storage.postgres.schema` (each connection's `search_path`).
//!
//! The stores are synchronous, the driver is async: as the Qdrant store
//! does, every call runs as a task on a small tokio runtime (one for the
//! process, shared by every store's pool) and the caller waits for the
//! answer on a channel, so it works from plain threads, from
//! `spawn_blocking` and from inside another runtime.
//!
//! Nothing waits without bound: each connection sets `statement_timeout`,
//! `lock_timeout` (the writers' lock included) and
//! `idle_in_transaction_session_timeout`, TCP keepalives find a vanished
//! server, and a caller stops waiting for an answer after
//! [`CALL_TIMEOUT`]. What times out, and a server that is away, starting
//! or shutting down, is `unavailable` (HTTP 503, retry); anything else is
//! a fault.
//!
//! A write transaction first takes a transaction-scoped advisory lock
//! named after the schema and store: one writer per store at a time
//! across every server, the guarantee SQLite's `BEGIN IMMEDIATE` gives one
//! machine, so a store's read-then-write transactions stay correct as
//! written. It ends with `NOTIFY` on the store's channel (delivered at
//! commit), which every other server's listener turns into a wake-up.

use std::cell::Cell;
use std::future::Future;
use std::sync::{Arc, Mutex, OnceLock, PoisonError, mpsc};
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
/// The longest one statement may run (`statement_timeout`).
const STATEMENT_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest a statement waits for a lock, the store's writer lock
/// included (`lock_timeout`): a server stalled inside a write cannot hold
/// every other server's writers for longer.
const LOCK_TIMEOUT: Duration = Duration::from_secs(10);
/// A transaction left open this long by a stalled or partitioned server is
/// ended by PostgreSQL (`idle_in_transaction_session_timeout`), releasing
/// its lock.
const IDLE_IN_TRANSACTION: Duration = Duration::from_secs(30);
/// How long a caller waits for one call's answer at most.
const CALL_TIMEOUT: Duration = Duration::from_secs(40);
/// TCP keepalive: a server gone without closing its connections is found
/// after about this long idle.
const KEEPALIVE_IDLE: Duration = Duration::from_secs(30);

/// The runtime every pool's calls run on, started at the first pool.
fn runtime() -> std::result::Result<&'static Runtime, String> {
    static RUNTIME: OnceLock<std::result::Result<Runtime, String>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .thread_name("grace-postgres")
                .enable_all()
                .build()
                .map_err(|e| format!("cannot start the PostgreSQL client's runtime: {e}"))
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// The advisory lock migrations (and dropping a schema) take: one at a
/// time across every server and store.
const MIGRATION_LOCK: i64 = 7_145_238_861;

/// The table holding each store's schema version.
const VERSIONS_DDL: &str = "CREATE TABLE IF NOT EXISTS grace_schema_versions (store TEXT PRIMARY KEY, version BIGINT NOT NULL)";

/// One store's connections.
pub(crate) struct Pool {
    runtime: &'static Runtime,
    pool: deadpool_postgres::Pool,
    /// For the listener's own connection.
    config: tokio_postgres::Config,
    place: Arc<str>,
    /// The store's advisory lock for writers.
    lock_key: i64,
    /// The store's `NOTIFY` channel.
    channel: String,
    /// What starts a write: `BEGIN`, and for a store whose writes need
    /// not outlive a crash of the server (`Schema::durable` false), not
    /// waiting for the WAL to be flushed.
    begin: &'static str,
    /// The listener's task, once started (aborted when the pool goes).
    listener: Mutex<Option<tokio::task::AbortHandle>>,
    /// What the listener wakes, by the id of the store that asked.
    wakes: Arc<Mutex<Vec<(u64, Wake)>>>,
}

/// What a store runs when another server committed a change.
pub(crate) type Wake = Arc<dyn Fn() + Send + Sync>;

/// The pools of this process, one per server, schema and store: the
/// stores opened on the same settings share one (a manifest read on every
/// request would otherwise connect and check its schema every time).
fn pools() -> &'static Mutex<std::collections::HashMap<String, std::sync::Weak<Pool>>> {
    static POOLS: OnceLock<Mutex<std::collections::HashMap<String, std::sync::Weak<Pool>>>> =
        OnceLock::new();
    POOLS.get_or_init(Default::default)
}

impl Pool {
    /// The pool of this process for `schema`'s store on `settings`,
    /// opened ([`Pool::open`]) when there is none yet.
    pub(crate) fn shared(settings: &PostgresConfig, schema: Schema) -> Result<Arc<Self>> {
        // The password is part of the key: a changed one opens a new pool.
        let password = std::env::var(&settings.password_env).unwrap_or_default();
        let key = format!(
            "{}\u{0}{password}\u{0}{}\u{0}{}\u{0}{}\u{0}{}",
            settings.url,
            settings.schema,
            schema.name,
            settings.pool_size,
            settings.connect_timeout_seconds
        );
        let mut pools = pools().lock().unwrap_or_else(PoisonError::into_inner);
        pools.retain(|_, pool| pool.strong_count() > 0);
        if let Some(pool) = pools.get(&key).and_then(std::sync::Weak::upgrade) {
            return Ok(pool);
        }
        let pool = Arc::new(Self::open(settings, schema)?);
        pools.insert(key, Arc::downgrade(&pool));
        Ok(pool)
    }

    /// Connects, and brings the store's tables to `schema`'s version
    /// under a lock (a newer version is refused).
    pub(crate) fn open(settings: &PostgresConfig, schema: Schema) -> Result<Self> {
        let config = client_config(settings)?;
        let timeout = Duration::from_secs_f64(settings.connect_timeout_seconds);
        let place: Arc<str> = Arc::from(format!(
            "{} in PostgreSQL {} (schema {})",
            schema.what,
            server_name(&config),
            settings.schema
        ));
        let runtime = runtime().map_err(|e| StateError::Config(format!("{place}: {e}")))?;
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
        let pool = Self {
            runtime,
            pool,
            config,
            place,
            lock_key: lock_key(&key),
            channel: format!("grace_{}", crate::durable::hex(&digest[..12])),
            begin: match schema.durable {
                true => "BEGIN",
                false => "BEGIN; SET LOCAL synchronous_commit TO OFF",
            },
            listener: Mutex::new(None),
            wakes: Arc::default(),
        };
        pool.migrate(settings, schema)?;
        Ok(pool)
    }

    /// The store and server, for messages.
    pub(crate) fn place(&self) -> &str {
        &self.place
    }

    /// Runs `fut` on the runtime and waits for it ([`CALL_TIMEOUT`] at most).
    fn run<T: Send + 'static>(&self, fut: impl Future<Output = T> + Send + 'static) -> Result<T> {
        let (tx, rx) = mpsc::sync_channel(1);
        self.runtime.spawn(async move {
            let _ = tx.send(fut.await);
        });
        rx.recv_timeout(CALL_TIMEOUT).map_err(|e| match e {
            mpsc::RecvTimeoutError::Timeout => {
                self.unavailable(format!("no answer within {} s", CALL_TIMEOUT.as_secs()))
            }
            mpsc::RecvTimeoutError::Disconnected => {
                self.unavailable("the call ended without an answer".into())
            }
        })
    }

    fn unavailable(&self, message: String) -> StateError {
        StateError::Postgres {
            place: self.place.to_string(),
            message,
            unavailable: true,
            sqlstate: String::new(),
        }
    }

    fn error(&self, e: &tokio_postgres::Error) -> StateError {
        StateError::Postgres {
            place: self.place.to_string(),
            message: describe(e),
            unavailable: transient(e),
            sqlstate: e
                .as_db_error()
                .map(|db| db.code().code().to_string())
                .unwrap_or_default(),
        }
    }

    fn pool_error(&self, e: &PoolError) -> StateError {
        match e {
            PoolError::Backend(e) if transient(e) => self.unavailable(format!(
                "cannot connect: {}; is PostgreSQL running there? (storage.postgres.url)",
                describe(e)
            )),
            PoolError::Backend(e) => {
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
                    sqlstate: String::new(),
                }
            }
            PoolError::Timeout(_) => self.unavailable(
                "no connection in time (is the server up? storage.postgres.connect_timeout_seconds)"
                    .into(),
            ),
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
            changed: Cell::new(false),
        })
    }

    fn migrate(&self, settings: &PostgresConfig, schema: Schema) -> Result<()> {
        let session = self.session()?;
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
                    .execute(
                        &format!("SELECT pg_advisory_xact_lock({MIGRATION_LOCK})"),
                        &[],
                    )
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
                    let ddl = ddl_to_postgres(&schema.upgrade(found.unwrap_or(0)));
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

    /// Runs `wake` (for the store `id`) after every `NOTIFY` on the
    /// store's channel, and after each (re)connection, since what was
    /// sent while it was away is lost; the first call starts the listener.
    pub(crate) fn listen(&self, id: u64, wake: Wake) {
        {
            let mut wakes = self.wakes.lock().unwrap_or_else(PoisonError::into_inner);
            if wakes.iter().any(|(w, _)| *w == id) {
                return;
            }
            wakes.push((id, wake));
        }
        let mut listener = self.listener.lock().unwrap_or_else(PoisonError::into_inner);
        if listener.is_some() {
            return;
        }
        let wakes = Arc::clone(&self.wakes);
        let wake = move || {
            let wakes: Vec<Wake> = wakes
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .iter()
                .map(|(_, w)| Arc::clone(w))
                .collect();
            for wake in wakes {
                wake();
            }
        };
        let config = self.config.clone();
        let channel = self.channel.clone();
        let place = Arc::clone(&self.place);
        let task = self.runtime.spawn(async move {
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
        *listener = Some(task.abort_handle());
    }

    /// Stops waking the store `id` (it is closing).
    pub(crate) fn unlisten(&self, id: u64) {
        self.wakes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|(w, _)| *w != id);
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        // The pool's connections close as they are dropped; the listener
        // would run for the process's life.
        if let Some(task) = self
            .listener
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            task.abort();
        }
        self.pool.close();
    }
}

/// One pooled connection, for a read or one write transaction.
pub struct Session<'a> {
    pool: &'a Pool,
    client: Arc<Object>,
    in_write: Cell<bool>,
    /// Whether the write changed a row (only then are the other servers
    /// told).
    changed: Cell<bool>,
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
        let begin = self.pool.begin;
        self.in_write.set(true);
        self.pool
            .run(async move {
                client.batch_execute(begin).await?;
                client
                    .execute("SELECT pg_advisory_xact_lock($1)", &[&key])
                    .await
            })?
            .map_err(|e| self.pool.error(&e))?;
        Ok(())
    }

    /// `NOTIFY` the other servers when a row changed, then `COMMIT`. A
    /// failure leaves the write to be rolled back when the session ends.
    pub(crate) fn commit_write(&self) -> Result<()> {
        let client = self.client();
        let commit = if self.changed.get() {
            format!("NOTIFY {}; COMMIT", self.pool.channel)
        } else {
            "COMMIT".to_string()
        };
        self.pool
            .run(async move { client.batch_execute(&commit).await })?
            .map_err(|e| self.pool.error(&e))?;
        self.in_write.set(false);
        Ok(())
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
                        sqlstate: String::new(),
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
        let writes = !sql
            .trim_start()
            .get(..6)
            .is_some_and(|w| w.eq_ignore_ascii_case("select"));
        let sql = to_postgres(sql);
        let values: Vec<Value> = params.iter().map(|p| p.to_value()).collect();
        let client = self.client();
        let ran = self
            .pool
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
            .map_err(|e| self.pool.error(&e))?;
        let changed = match &ran {
            Ran::Changed(n) => *n > 0,
            Ran::Rows(rows) => !rows.is_empty(),
        };
        if writes && changed {
            self.changed.set(true);
        }
        Ok(ran)
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
            (Value::Text(s), _) if <&str as ToSql>::accepts(ty) => {
                without_nul(s).as_ref().to_sql(ty, out)
            }
            (Value::Blob(b), &Type::BYTEA) => b.as_slice().to_sql(ty, out),
            (v, ty) => Err(format!("cannot pass {v:?} as PostgreSQL type {ty}").into()),
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

/// The driver's configuration from `storage.postgres`: the URL, the
/// password from its variable, the schema as the search path, and the
/// timeouts every connection runs under.
fn client_config(settings: &PostgresConfig) -> Result<tokio_postgres::Config> {
    let mut config: tokio_postgres::Config = settings
        .url
        .parse()
        .map_err(|e| StateError::Config(format!("storage.postgres.url: cannot be read ({e})")))?;
    if !settings.password_env.is_empty()
        && let Some(password) = std::env::var_os(&settings.password_env).filter(|p| !p.is_empty())
    {
        config.password(password.to_string_lossy().as_bytes());
    }
    let ms = |d: Duration| d.as_millis();
    config
        .connect_timeout(Duration::from_secs_f64(settings.connect_timeout_seconds))
        .keepalives(true)
        .keepalives_idle(KEEPALIVE_IDLE)
        .application_name("grace")
        .options(format!(
            "-c search_path={} -c statement_timeout={} -c lock_timeout={} -c idle_in_transaction_session_timeout={}",
            settings.schema,
            ms(STATEMENT_TIMEOUT),
            ms(LOCK_TIMEOUT),
            ms(IDLE_IN_TRANSACTION)
        ));
    Ok(config)
}

/// Drops `storage.postgres.schema` with every table in it (a knowledge
/// base deleted), under the migration lock.
pub(crate) fn drop_schema(settings: &PostgresConfig) -> Result<()> {
    // A store opened after this creates its tables again.
    pools()
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .retain(|key, _| key.split('\u{0}').nth(2) != Some(settings.schema.as_str()));
    let config = client_config(settings)?;
    let place = format!(
        "PostgreSQL {} (schema {})",
        server_name(&config),
        settings.schema
    );
    let failed = |message: String, unavailable: bool| StateError::Postgres {
        place: place.clone(),
        message,
        unavailable,
        sqlstate: String::new(),
    };
    let runtime = runtime().map_err(StateError::Config)?;
    let schema = settings.schema.clone();
    let (tx, rx) = mpsc::sync_channel(1);
    runtime.spawn(async move {
        let out = async {
            let (client, connection) = config.connect(NoTls).await?;
            let driver = tokio::spawn(connection);
            client
                .batch_execute(&format!(
                    "BEGIN; SELECT pg_advisory_xact_lock({MIGRATION_LOCK}); DROP SCHEMA IF EXISTS {schema} CASCADE; COMMIT"
                ))
                .await?;
            drop(client);
            let _ = driver.await;
            Ok::<_, tokio_postgres::Error>(())
        }
        .await;
        let _ = tx.send(out);
    });
    match rx.recv_timeout(CALL_TIMEOUT) {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(failed(describe(&e), transient(&e))),
        Err(_) => Err(failed(
            format!("no answer within {} s", CALL_TIMEOUT.as_secs()),
            true,
        )),
    }
}

/// Whether an error is PostgreSQL being away, starting, stopping or
/// overloaded, or a timeout (retry later: HTTP 503), rather than a fault
/// of the statement or the data (HTTP 500).
/// PostgreSQL's SQLSTATE for a full disk.
pub(super) const DISK_FULL: &str = "53100";

fn transient(e: &tokio_postgres::Error) -> bool {
    if e.is_closed() {
        return true;
    }
    if let Some(db) = e.as_db_error() {
        let code = db.code().code();
        // 08: connection; 53: resources (too many connections), but not
        // 53100, a full disk, which a retry does not mend; 57P: shutting
        // down or starting; 55P03: lock timeout; 57014: statement
        // timeout; 40001/40P01: serialisation, deadlock.
        return code.starts_with("08")
            || (code.starts_with("53") && code != DISK_FULL)
            || code.starts_with("57P")
            || matches!(code, "55P03" | "57014" | "40001" | "40P01");
    }
    // No answer from the server at all: the network or the socket.
    std::error::Error::source(e).is_some_and(|s| s.is::<std::io::Error>())
}

/// `text` as PostgreSQL can keep it. Its text cannot hold U+0000, and
/// its JSON functions refuse the escape `\u0000` (SQLite takes both):
/// each becomes U+FFFD (`\ufffd`) rather than failing the write or every
/// later query that reads the JSON.
fn without_nul(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains('\0') && !text.contains("\\u0000") {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut backslashes = 0usize;
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        rest = &rest[c.len_utf8()..];
        match c {
            '\0' => out.push('\u{FFFD}'),
            // An escape, not an escaped backslash followed by "u0000".
            'u' if backslashes % 2 == 1 && rest.starts_with("0000") => {
                out.push_str("ufffd");
                rest = &rest[4..];
            }
            c => out.push(c),
        }
        backslashes = if c == '\\' { backslashes + 1 } else { 0 };
    }
    std::borrow::Cow::Owned(out)
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

/// A session-level advisory lock held on a connection of its own, for as
/// long as the value lives: released when it is dropped, and by
/// PostgreSQL when the server holding it dies (its connection closes).
pub(crate) struct HeldLock {
    client: Arc<tokio_postgres::Client>,
    driver: tokio::task::AbortHandle,
    place: Arc<str>,
}

impl HeldLock {
    /// Takes the lock named `name` in `settings`' schema if it is free;
    /// `None` when another connection holds it.
    pub(crate) fn try_take(settings: &PostgresConfig, name: &str) -> Result<Option<Self>> {
        let config = client_config(settings)?;
        let place: Arc<str> = Arc::from(format!(
            "the {name} lock in PostgreSQL {} (schema {})",
            server_name(&config),
            settings.schema
        ));
        let key = lock_key(&format!("{}.lock.{name}", settings.schema));
        let runtime = runtime().map_err(StateError::Config)?;
        let failed = |message: String, unavailable: bool| StateError::Postgres {
            place: place.to_string(),
            message,
            unavailable,
            sqlstate: String::new(),
        };
        let (tx, rx) = mpsc::sync_channel(1);
        runtime.spawn(async move {
            let out = async {
                let (client, connection) = config.connect(NoTls).await?;
                let driver = tokio::spawn(connection);
                let taken: bool = client
                    .query_one("SELECT pg_try_advisory_lock($1)", &[&key])
                    .await?
                    .get(0);
                Ok::<_, tokio_postgres::Error>((client, driver, taken))
            }
            .await;
            let _ = tx.send(out);
        });
        match rx.recv_timeout(CALL_TIMEOUT) {
            Ok(Ok((client, driver, true))) => Ok(Some(Self {
                client: Arc::new(client),
                driver: driver.abort_handle(),
                place,
            })),
            // Dropping the client closes the connection.
            Ok(Ok((_, _, false))) => Ok(None),
            Ok(Err(e)) => Err(failed(describe(&e), transient(&e))),
            Err(_) => Err(failed(
                format!("no answer within {} s", CALL_TIMEOUT.as_secs()),
                true,
            )),
        }
    }

    /// Whether the lock is still held: its connection answers.
    pub(crate) fn held(&self) -> bool {
        let Ok(runtime) = runtime() else { return false };
        let client = Arc::clone(&self.client);
        let (tx, rx) = mpsc::sync_channel(1);
        runtime.spawn(async move {
            let _ = tx.send(client.simple_query("SELECT 1").await.is_ok());
        });
        rx.recv_timeout(CALL_TIMEOUT).unwrap_or(false)
    }

    /// The lock and its server, for messages.
    pub(crate) fn place(&self) -> &str {
        &self.place
    }
}

impl Drop for HeldLock {
    fn drop(&mut self) {
        // Closing the connection releases the lock.
        self.driver.abort();
    }
}

/// An advisory lock's key: the first 8 bytes of `name`'s SHA-256.
fn lock_key(name: &str) -> i64 {
    let digest = Sha256::digest(name.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    i64::from_be_bytes(first)
}

#[cfg(test)]
mod tests {
    use super::without_nul;

    #[test]
    fn nul_characters_and_their_json_escapes_become_replacement_characters() {
        assert_eq!(without_nul("plain"), "plain");
        assert_eq!(without_nul("a\0b"), "a\u{FFFD}b");
        assert_eq!(without_nul(r#"{"q":"a\u0000b"}"#), r#"{"q":"a\ufffdb"}"#);
        // An escaped backslash followed by the letters is left alone.
        assert_eq!(without_nul(r#"{"q":"a\\u0000b"}"#), r#"{"q":"a\\u0000b"}"#);
        assert_eq!(without_nul(r#"\\\u0000"#), r#"\\\ufffd"#);
        assert_eq!(without_nul("ü\0ß"), "ü\u{FFFD}ß");
    }
}
