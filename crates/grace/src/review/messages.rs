//! Reviewers, messages between GRACE and reviewers, and shared context.
//!
//! - A reviewer is registered once (`id`, `name`, `description`).
//! - A message is direct (to one reviewer) or broadcast (to every
//!   reviewer); each reader moves it `pending → read → archived`, never back.
//! - A context value (`key`, JSON value, owner) is `public` or
//!   `restricted` to `allowed` readers; the owner always reads it, and
//!   anyone else gets the same not-found answer as for a missing key.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::db::{
    allowed_list, from_json, insert_message, now_ms, reviewer_exists, to_json, to_time,
};
use super::queue::ReviewQueue;
use super::{Result, ReviewError, non_empty, plain_id};
use crate::state::{Conn, params};

/// The longest reviewer id, in characters.
pub const MAX_REVIEWER_ID_CHARS: usize = 64;
/// The longest reviewer display name, in characters.
pub const MAX_REVIEWER_NAME_CHARS: usize = 200;
/// The longest description of what a reviewer covers, in characters.
pub const MAX_REVIEWER_DESCRIPTION_CHARS: usize = 2000;

/// A registered human reviewer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Reviewer {
    /// Unique id, without spaces; names the reviewer in claims and answers.
    pub id: String,
    /// Display name.
    pub name: String,
    /// What the reviewer covers; may be empty.
    pub description: String,
}

/// A reader's status of a message.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum MessageStatus {
    /// Not read yet.
    Pending,
    /// Read.
    Read,
    /// Archived.
    Archived,
}

impl MessageStatus {
    fn as_str(self) -> &'static str {
        match self {
            MessageStatus::Pending => "pending",
            MessageStatus::Read => "read",
            MessageStatus::Archived => "archived",
        }
    }

    fn parse(s: &str) -> Self {
        match s {
            "read" => MessageStatus::Read,
            "archived" => MessageStatus::Archived,
            _ => MessageStatus::Pending,
        }
    }
}

/// A message as one reader sees it.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Message {
    /// Id in the review database.
    pub id: i64,
    /// Who sent it (`grace` for escalation notices).
    pub sender: String,
    /// `None`: a broadcast to every reviewer.
    pub recipient: Option<String>,
    /// Subject line (may be empty).
    pub subject: String,
    /// The message text.
    pub body: String,
    /// The escalation it announces, if any.
    pub escalation_id: Option<i64>,
    /// When it was sent.
    pub created_at: DateTime<Utc>,
    /// This reader's status.
    pub status: MessageStatus,
}

/// Who may read a context value besides its owner.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(tag = "access", content = "allowed", rename_all = "snake_case")]
#[schema(as = ContextAccess)]
pub enum Access {
    /// Every reader may read it.
    Public,
    /// Only these readers (and the owner) may read it.
    Restricted(Vec<String>),
}

/// A shared context value.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct ContextValue {
    /// The key, unique in the review database.
    pub key: String,
    /// The JSON value.
    pub value: Value,
    /// Who set it; only the owner may change it.
    pub owner: String,
    /// Who besides the owner may read it.
    #[serde(flatten)]
    pub access: Access,
    /// When it was last set.
    pub updated_at: DateTime<Utc>,
}

impl ReviewQueue {
    /// Registers a reviewer, or updates the name and description of one.
    pub fn register_reviewer(&self, reviewer: &Reviewer) -> Result<()> {
        self.put_reviewer(reviewer, true)
    }

    /// Registers a new reviewer; an id already registered is
    /// [`ReviewError::AlreadyRegistered`] and nothing is changed.
    pub fn register_new_reviewer(&self, reviewer: &Reviewer) -> Result<()> {
        self.put_reviewer(reviewer, false)
    }

    fn put_reviewer(&self, reviewer: &Reviewer, overwrite: bool) -> Result<()> {
        non_empty("the reviewer id", &reviewer.id)?;
        non_empty("the reviewer name", &reviewer.name)?;
        if !crate::text::is_plain_id(&reviewer.id) {
            return Err(ReviewError::Invalid(format!(
                "the reviewer id {:?} must not contain spaces or control characters",
                reviewer.id
            )));
        }
        for (field, value, max) in [
            ("id", &reviewer.id, MAX_REVIEWER_ID_CHARS),
            ("name", &reviewer.name, MAX_REVIEWER_NAME_CHARS),
            (
                "description",
                &reviewer.description,
                MAX_REVIEWER_DESCRIPTION_CHARS,
            ),
        ] {
            if value.chars().count() > max {
                return Err(ReviewError::Invalid(format!(
                    "the reviewer {field} is longer than {max} characters"
                )));
            }
        }
        self.write(|tx| {
            if !overwrite && reviewer_exists(tx, &reviewer.id)? {
                return Err(ReviewError::AlreadyRegistered(reviewer.id.clone()));
            }
            tx.execute(
                "INSERT INTO reviewers (id, name, description, created_at) VALUES (?1, ?2, ?3, ?4) \
                 ON CONFLICT(id) DO UPDATE SET name = excluded.name, description = excluded.description",
                params![reviewer.id, reviewer.name.trim(), reviewer.description.trim(), now_ms()],
            )?;
            Ok(())
        })
    }

    /// Every registered reviewer, by id.
    pub fn reviewers(&self) -> Result<Vec<Reviewer>> {
        self.write(|tx| {
            tx.query(
                "SELECT id, name, description FROM reviewers ORDER BY id",
                params![],
            )?
            .iter()
            .map(|r| {
                Ok(Reviewer {
                    id: r.get(0)?,
                    name: r.get(1)?,
                    description: r.get(2)?,
                })
            })
            .collect()
        })
    }

    /// Sends a message to one reviewer (`Some`) or to all (`None`).
    pub fn send_message(
        &self,
        sender: &str,
        recipient: Option<&str>,
        subject: &str,
        body: &str,
    ) -> Result<i64> {
        non_empty("the sender", sender)?;
        non_empty("the message", body)?;
        self.write(|tx| {
            if let Some(r) = recipient {
                non_empty("the recipient", r)?;
                if !reviewer_exists(tx, r)? {
                    return Err(ReviewError::NotFound {
                        what: "reviewer",
                        id: format!("{r:?}"),
                    });
                }
            }
            insert_message(tx, sender, recipient, subject, body, None)
        })
    }

    /// The messages a reviewer can read (direct and broadcast), newest
    /// first; `status` filters by this reviewer's status of them.
    pub fn messages(&self, reviewer: &str, status: Option<MessageStatus>) -> Result<Vec<Message>> {
        non_empty("the reviewer id", reviewer)?;
        let all = self.write(|tx| {
            tx.query(
                "SELECT m.id, m.sender, m.recipient, m.subject, m.body, m.escalation_id, m.created_at, \
                 COALESCE(s.status, 'pending') FROM messages m \
                 LEFT JOIN message_status s ON s.message_id = m.id AND s.reviewer_id = ?1 \
                 WHERE m.recipient IS NULL OR m.recipient = ?1 ORDER BY m.id DESC",
                params![reviewer],
            )?
            .iter()
            .map(|r| {
                Ok(Message {
                    id: r.get(0)?,
                    sender: r.get(1)?,
                    recipient: r.get(2)?,
                    subject: r.get(3)?,
                    body: r.get(4)?,
                    escalation_id: r.get(5)?,
                    created_at: to_time(r.get(6)?),
                    status: MessageStatus::parse(&r.get::<String>(7)?),
                })
            })
            .collect::<Result<Vec<_>>>()
        })?;
        Ok(all
            .into_iter()
            .filter(|m| status.is_none_or(|s| m.status == s))
            .collect())
    }

    /// Marks a message read for this reviewer (reading it again is a no-op).
    pub fn mark_as_read(&self, message_id: i64, reviewer: &str) -> Result<MessageStatus> {
        self.move_message(message_id, reviewer, MessageStatus::Read)
    }

    /// Archives a message for this reviewer.
    pub fn archive_message(&self, message_id: i64, reviewer: &str) -> Result<MessageStatus> {
        self.move_message(message_id, reviewer, MessageStatus::Archived)
    }

    fn move_message(
        &self,
        message_id: i64,
        reviewer: &str,
        to: MessageStatus,
    ) -> Result<MessageStatus> {
        non_empty("the reviewer id", reviewer)?;
        self.write(|tx| {
            let current: Option<String> = tx
                .query_opt(
                    "SELECT COALESCE(s.status, 'pending') FROM messages m \
                     LEFT JOIN message_status s ON s.message_id = m.id AND s.reviewer_id = ?2 \
                     WHERE m.id = ?1 AND (m.recipient IS NULL OR m.recipient = ?2)",
                    params![message_id, reviewer],
                )?
                .map(|r| r.get(0))
                .transpose()?;
            let current = MessageStatus::parse(&current.ok_or_else(|| ReviewError::NotFound {
                what: "message",
                id: message_id.to_string(),
            })?);
            if to < current {
                return Err(ReviewError::WrongState(format!(
                    "message {message_id} is {} and cannot go back to {}",
                    current.as_str(),
                    to.as_str()
                )));
            }
            tx.execute(
                "INSERT INTO message_status (message_id, reviewer_id, status, updated_at) VALUES (?1, ?2, ?3, ?4) \
                 ON CONFLICT(message_id, reviewer_id) DO UPDATE SET status = excluded.status, updated_at = excluded.updated_at",
                params![message_id, reviewer, to.as_str(), now_ms()],
            )?;
            Ok(to)
        })
    }

    /// Sets a shared context value. Only its owner may change an existing
    /// key; to anyone else a restricted key they cannot read does not exist.
    pub fn set_context(
        &self,
        key: &str,
        value: &Value,
        owner: &str,
        access: &Access,
    ) -> Result<()> {
        non_empty("the context key", key)?;
        non_empty("the owner", owner)?;
        if let Access::Restricted(list) = access {
            for a in list {
                plain_id("an allowed reader", a)?;
            }
        }
        let allowed = match access {
            Access::Public => None,
            Access::Restricted(list) => Some(to_json(list)),
        };
        self.write(|tx| {
            if let Some(existing) = self.context_row(tx, key)?
                && existing.owner != owner
            {
                return Err(if readable(&existing, owner) {
                    ReviewError::Invalid(format!(
                        "context key {key:?} belongs to {}; only its owner can change it",
                        existing.owner
                    ))
                } else {
                    not_found_key(key)
                });
            }
            tx.execute(
                "INSERT INTO context (key, value, owner, allowed, updated_at) VALUES (?1, ?2, ?3, ?4, ?5) \
                 ON CONFLICT(key) DO UPDATE SET value = excluded.value, allowed = excluded.allowed, \
                 updated_at = excluded.updated_at",
                params![key, to_json(value), owner, allowed, now_ms()],
            )?;
            Ok(())
        })
    }

    /// Reads a shared context value as `reader`.
    pub fn get_context(&self, key: &str, reader: &str) -> Result<ContextValue> {
        non_empty("the context key", key)?;
        self.write(|tx| {
            match self.context_row(tx, key)? {
                Some(v) if readable(&v, reader) => Ok(v),
                // The same answer as a missing key: no hint that it exists.
                _ => Err(not_found_key(key)),
            }
        })
    }

    fn context_row(&self, tx: &Conn<'_>, key: &str) -> Result<Option<ContextValue>> {
        let row = tx
            .query_opt(
                "SELECT value, owner, allowed, updated_at FROM context WHERE key = ?1",
                params![key],
            )?
            .map(|r| -> Result<_> {
                Ok((
                    r.get::<String>(0)?,
                    r.get::<String>(1)?,
                    r.get::<Option<String>>(2)?,
                    r.get::<i64>(3)?,
                ))
            })
            .transpose()?;
        row.map(|(value, owner, allowed, at)| {
            Ok(ContextValue {
                key: key.to_string(),
                value: from_json(self.store.place(), &format!("context {key:?}"), &value)?,
                owner,
                access: match allowed_list(self.store.place(), allowed)? {
                    None => Access::Public,
                    Some(list) => Access::Restricted(list),
                },
                updated_at: to_time(at),
            })
        })
        .transpose()
    }
}

fn readable(v: &ContextValue, reader: &str) -> bool {
    v.owner == reader
        || match &v.access {
            Access::Public => true,
            Access::Restricted(list) => list.iter().any(|a| a == reader),
        }
}

fn not_found_key(key: &str) -> ReviewError {
    ReviewError::NotFound {
        what: "context key",
        id: format!("{key:?}"),
    }
}
