//! Human review: what GRACE would not answer alone becomes a durable
//! request that reviewers see, claim and answer, and the answer flows back
//! to the asker.
//!
//! - [`ReviewQueue`] keeps escalations in SQLite (WAL) under the data
//!   folder: the question, why it was escalated, the `ask_user` request and
//!   the whole run (plan, steps, sources, draft answer) so that a reviewer's
//!   reply completes it. Status: `pending → claimed → answered | rejected |
//!   expired | cancelled`; every transition is audited.
//! - [`messages`]: registered reviewers, direct and broadcast messages, and
//!   shared context values with access control.
//! - [`promote`]: a reviewed answer, on request, becomes a Markdown document
//!   in the knowledge base (and can be retracted).
//! - [`tokens`]: each reviewer's bearer token (only its hash is kept).
//! - [`replan`]: feedback like "redo: look under X" searches again with the
//!   hint instead of becoming the answer.
//!
//! Several processes may use the same database at once (a CLI reviewer,
//! `grace serve`, an asker waiting; with `storage.state: postgres`,
//! several servers): writes take the store's writer lock
//! ([`crate::state::Store::write`]), so two reviewers claiming one
//! escalation cannot both win.

mod db;
mod handle;
pub mod messages;
pub mod promote;
mod queue;
pub mod replan;
#[cfg(test)]
mod tests;
pub mod tokens;
mod verdict;
pub mod withhold;

pub use self::handle::ASKER_KEY_EXTENSION;
pub use self::messages::{
    Access, ContextValue, MAX_REVIEWER_DESCRIPTION_CHARS, MAX_REVIEWER_ID_CHARS,
    MAX_REVIEWER_NAME_CHARS, Message, MessageStatus, Reviewer,
};
pub use self::queue::{
    AlsoAsked, AuditEntry, Escalation, EscalationHandle, ListFilter, NewEscalation, Outcome,
    Resolution, ReviewAnswer, ReviewQueue, Status, Viewer,
};
pub use self::verdict::Verdict;

use std::path::PathBuf;

/// Result of review operations.
pub type Result<T> = std::result::Result<T, ReviewError>;

/// What can go wrong in the review layer.
#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    /// No such thing, or one the caller may not see (a restricted
    /// escalation or context value answers exactly like a missing one).
    #[error("{what} {id} not found")]
    NotFound {
        /// What was looked for (`escalation`, `reviewer`, `message`, `context key`).
        what: &'static str,
        /// Its id or key.
        id: String,
    },
    /// The request does not fit the current state (answering an expired
    /// escalation, claiming one another reviewer holds).
    #[error("escalation {id}: {message}")]
    Conflict {
        /// The escalation's id.
        id: i64,
        /// Why the request does not fit its state.
        message: String,
    },
    /// Registering a reviewer id that is taken (over HTTP, registration
    /// never overwrites; rotate the token instead).
    #[error(
        "reviewer {0:?} is already registered; issue a new token with `grace review rotate {0}` or POST /v1/review/reviewers/{0}/token"
    )]
    AlreadyRegistered(String),
    /// Something other than an escalation is in a state that does not
    /// allow the request (an archived message marked read again).
    #[error("{0}")]
    WrongState(String),
    /// A value the caller can fix (an empty id, name or content).
    #[error("{0}")]
    Invalid(String),
    /// The asker waited longer than allowed.
    #[error("escalation {id} is still {status} after waiting {seconds:.0} s")]
    WaitTimedOut {
        /// The escalation's id.
        id: i64,
        /// Its status when the wait ended.
        status: Status,
        /// Seconds waited.
        seconds: f64,
    },
    /// The review database failed (SQLite's file or PostgreSQL), or its
    /// schema is newer than this GRACE.
    #[error(transparent)]
    State(#[from] crate::state::StateError),
    /// Stored review data cannot be read: a record that does not parse.
    #[error("review data in {place} is damaged: {message}")]
    Corrupt {
        /// The database (its file, or PostgreSQL's schema).
        place: String,
        /// What is damaged.
        message: String,
    },
    /// A file or folder operation failed (the database's folder, a promoted
    /// answer's file).
    #[error("cannot {action} {path}: {source}")]
    Io {
        /// What was being done (`create the folder`, `remove`, …).
        action: &'static str,
        /// The file or folder it was done to.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

/// Checks that a caller-supplied id has no white space or control
/// characters (and is not empty).
pub(crate) fn plain_id(field: &str, value: &str) -> Result<()> {
    if !crate::text::is_plain_id(value) {
        return Err(ReviewError::Invalid(format!(
            "{field} {value:?} must be non-empty, without spaces or control characters"
        )));
    }
    Ok(())
}

/// Checks that a caller-supplied value is not blank.
pub(crate) fn non_empty(field: &str, value: &str) -> Result<()> {
    if crate::text::is_blank(value) {
        return Err(ReviewError::Invalid(format!("{field} must not be empty")));
    }
    Ok(())
}
