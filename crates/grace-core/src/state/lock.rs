//! Locks every server of a knowledge base shares: a PostgreSQL advisory
//! lock held on a connection of its own, released when the holder drops it
//! or dies (its connection closes). With SQLite there is one server per
//! data folder, so a lock is always taken at once.
//!
//! - [`WRITER`]: one ingest, promotion or retraction at a time across the
//!   servers (each also holds its own process's lock).
//! - [`LEADER`]: the server that follows `server.watch`; the others try
//!   again every [`CAMPAIGN_EVERY`] and one takes over within about that
//!   when the leader dies.

use std::time::Duration;

use super::{Result, postgres};
use crate::config::{Config, StateBackend};

/// The lock of the servers' writers.
pub const WRITER: &str = "writer";
/// The lock of the leader, which follows `server.watch`.
pub const LEADER: &str = "leader";
/// How often a server waiting for a lock tries it again.
pub const CAMPAIGN_EVERY: Duration = Duration::from_secs(1);
/// How often a writer waiting for [`WRITER`] tries it again.
const WRITER_RETRY: Duration = Duration::from_millis(200);

/// A lock this server holds until it is dropped.
pub struct ClusterLock {
    held: Option<postgres::HeldLock>,
}

impl std::fmt::Debug for ClusterLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterLock")
            .field("place", &self.held.as_ref().map(|h| h.place()))
            .finish()
    }
}

impl ClusterLock {
    /// Takes the lock `name` of `config`'s knowledge base if it is free;
    /// `None` when another server holds it.
    pub fn try_take(config: &Config, name: &str) -> Result<Option<Self>> {
        match config.storage.state {
            StateBackend::Sqlite => Ok(Some(Self { held: None })),
            StateBackend::Postgres => Ok(postgres::HeldLock::try_take(
                &config.storage.postgres,
                name,
            )?
            .map(|held| Self { held: Some(held) })),
        }
    }

    /// Takes the writers' lock, waiting while another server holds it.
    pub fn writer(config: &Config) -> Result<Self> {
        loop {
            if let Some(lock) = Self::try_take(config, WRITER)? {
                return Ok(lock);
            }
            std::thread::sleep(WRITER_RETRY);
        }
    }

    /// Whether the lock is still this server's (its connection answers:
    /// when PostgreSQL restarts, every lock is released).
    pub fn held(&self) -> bool {
        self.held.as_ref().is_none_or(postgres::HeldLock::held)
    }

    /// Fails, as PostgreSQL unavailable, when the lock is no longer held:
    /// what it guarded must stop.
    pub fn check(&self) -> Result<()> {
        match (&self.held, self.held()) {
            (Some(held), false) => Err(super::StateError::Postgres {
                place: held.place().to_string(),
                message:
                    "the lock was lost (PostgreSQL restarted or the connection broke); stopping"
                        .into(),
                unavailable: true,
                sqlstate: String::new(),
            }),
            _ => Ok(()),
        }
    }
}
