//! The review database: its schema, opening it (a SQLite file, or
//! PostgreSQL's tables: `crate::state`), JSON columns, and timestamps.

use std::path::Path;

use super::{Result, ReviewError};
use crate::state::{Conn, Schema, Store, params};

/// The review store's schema, at version 4.
const SCHEMA: Schema = Schema {
    name: "review",
    what: "review database",
    ddl: DDL,
    version: 4,
    migrations: &[],
    durable: true,
};

const DDL: &str = "
CREATE TABLE IF NOT EXISTS escalations (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    question     TEXT NOT NULL,
    reason       TEXT NOT NULL,
    request      TEXT NOT NULL,           -- the ask_user request (JSON)
    run          TEXT NOT NULL,           -- the escalated run (JSON RunReport)
    collection   TEXT NOT NULL,
    asker        TEXT NOT NULL,
    allowed      TEXT,                    -- JSON list of reviewer ids; NULL = public
    status       TEXT NOT NULL,
    claimed_by   TEXT,
    created_at   INTEGER NOT NULL,        -- Unix milliseconds
    updated_at   INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL,
    resolution   TEXT                     -- JSON Resolution once settled
);
CREATE INDEX IF NOT EXISTS escalations_status ON escalations(status, expires_at);
-- The clocks at the last write, to see the wall clock jump (queue/clock.rs).
CREATE TABLE IF NOT EXISTS clock (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    boot     TEXT NOT NULL,           -- the machine's boot id
    wall_ms  INTEGER NOT NULL,        -- Unix milliseconds
    boot_ms  INTEGER NOT NULL         -- milliseconds since boot
);
CREATE TABLE IF NOT EXISTS audit (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    escalation_id INTEGER NOT NULL REFERENCES escalations(id),
    at            INTEGER NOT NULL,
    actor         TEXT NOT NULL,
    action        TEXT NOT NULL,
    from_status   TEXT,
    to_status     TEXT,
    detail        TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS audit_escalation ON audit(escalation_id, id);
CREATE TABLE IF NOT EXISTS reviewers (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    description TEXT NOT NULL,
    created_at  INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS messages (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    sender        TEXT NOT NULL,
    recipient     TEXT,                   -- NULL = broadcast to every reviewer
    subject       TEXT NOT NULL,
    body          TEXT NOT NULL,
    escalation_id INTEGER,
    created_at    INTEGER NOT NULL
);
-- A reader's status of a message; no row = pending.
CREATE TABLE IF NOT EXISTS message_status (
    message_id  INTEGER NOT NULL REFERENCES messages(id),
    reviewer_id TEXT NOT NULL,
    status      TEXT NOT NULL,
    updated_at  INTEGER NOT NULL,
    PRIMARY KEY (message_id, reviewer_id)
);
-- One bearer token per reviewer (version 2): only its SHA-256 is kept;
-- the token itself is shown once, when issued.
CREATE TABLE IF NOT EXISTS reviewer_tokens (
    reviewer_id TEXT PRIMARY KEY REFERENCES reviewers(id),
    token_hash  TEXT NOT NULL UNIQUE,
    issued_at   INTEGER NOT NULL
);
-- Near-repeat escalations (version 3): the question's embedding (the
-- unit vector's components times 127 as signed bytes), and which open
-- escalation a later one joined (its lead answers for both).
CREATE TABLE IF NOT EXISTS escalation_vectors (
    escalation_id INTEGER PRIMARY KEY REFERENCES escalations(id),
    vector        BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS escalation_groups (
    escalation_id INTEGER PRIMARY KEY REFERENCES escalations(id),
    lead_id       INTEGER NOT NULL REFERENCES escalations(id)
);
CREATE INDEX IF NOT EXISTS escalation_groups_lead ON escalation_groups(lead_id);
-- The asker key on PostgreSQL (SQLite keeps it in a file beside the
-- database, mode 0600: `review/handle.rs`).
CREATE TABLE IF NOT EXISTS review_secrets (
    name  TEXT PRIMARY KEY,
    value BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS context (
    key        TEXT PRIMARY KEY,
    value      TEXT NOT NULL,             -- JSON
    owner      TEXT NOT NULL,
    allowed    TEXT,                      -- JSON list of reader ids; NULL = public
    updated_at INTEGER NOT NULL
);
";

/// Opens (creating if needed) the review store: the SQLite file `path`,
/// or PostgreSQL's tables when `storage.state` is `postgres`.
pub(crate) fn open(config: &crate::config::Config, path: &Path) -> Result<Store> {
    Ok(Store::open(config, SCHEMA, path)?)
}

/// Now, in the database's unit (Unix milliseconds).
pub(crate) use crate::state::{now_ms, to_time};

/// Parses a JSON column, naming the row when it is damaged.
pub(crate) fn from_json<T: serde::de::DeserializeOwned>(
    place: &str,
    what: &str,
    text: &str,
) -> Result<T> {
    serde_json::from_str(text).map_err(|e| ReviewError::Corrupt {
        place: place.to_string(),
        message: format!("{what}: {e}"),
    })
}

/// Serialises a value for a JSON column.
pub(crate) fn to_json<T: serde::Serialize>(value: &T) -> String {
    // Our own types serialise infallibly (no maps with non-string keys).
    serde_json::to_string(value).unwrap_or_else(|_| "null".into())
}

/// Reads an optional JSON list of ids (NULL = everyone).
pub(crate) fn allowed_list(place: &str, text: Option<String>) -> Result<Option<Vec<String>>> {
    text.map(|t| from_json::<Vec<String>>(place, "allowed list", &t))
        .transpose()
}

/// Whether a reviewer is registered.
pub(crate) fn reviewer_exists(conn: &Conn<'_>, id: &str) -> Result<bool> {
    Ok(conn
        .query_opt("SELECT 1 FROM reviewers WHERE id = ?1", params![id])?
        .is_some())
}

/// Inserts a message (inside the caller's transaction).
pub(crate) fn insert_message(
    tx: &Conn<'_>,
    sender: &str,
    recipient: Option<&str>,
    subject: &str,
    body: &str,
    escalation_id: Option<i64>,
) -> Result<i64> {
    Ok(tx.insert(
        "INSERT INTO messages (sender, recipient, subject, body, escalation_id, created_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6) RETURNING id",
        params![sender, recipient, subject, body, escalation_id, now_ms()],
    )?)
}
