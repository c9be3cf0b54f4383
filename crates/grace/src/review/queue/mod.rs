//! The escalation queue: escalations, their transitions, the audit log,
//! expiry, and waiting for an answer.
//!
//! This file holds the queue itself (its connection and write
//! transactions), putting a run in it, and the status change and audit
//! record every transition shares. The rest, one job per file:
//!
//! - `types`: the escalation and the values around it;
//! - `lookup`: reading escalations back (lists, counts, one, the log);
//! - `claim`: a reviewer taking and giving back an escalation;
//! - `answer`: settling it (answer, reject, cancel), a redraft, promotion;
//! - `expiry`: escalations past their time;
//! - `wait`: an asker waiting for the answer.

mod answer;
mod claim;
mod clock;
mod expiry;
mod group;
mod lookup;
mod types;
mod wait;

pub use self::types::{
    AlsoAsked, AuditEntry, Escalation, ListFilter, NewEscalation, Outcome, Resolution,
    ReviewAnswer, Status, Viewer,
};
pub use self::wait::EscalationHandle;

use crate::audit::{Action, AuditLog, Record};
use std::path::Path;
use std::time::Duration;

use super::db::{self, now_ms, to_json};
use super::{Result, ReviewError, non_empty, plain_id};
use crate::config::{Config, ReviewConfig, Thresholds};
use crate::state::{Conn, Store, params};

/// The durable escalation queue (and, in `review::messages`, reviewers,
/// messages and shared context). Cheap to share: one SQLite connection
/// behind a mutex (other processes use their own), or a pool of
/// PostgreSQL connections.
pub struct ReviewQueue {
    pub(super) store: Store,
    /// Derives the askers' handles (see `review/handle.rs`).
    asker_key: super::handle::AskerKey,
    config: ReviewConfig,
    thresholds: Thresholds,
    /// `review.group_similarity` as a cosine of the configured embedding
    /// model (its model card's map undone).
    group_cosine: f32,
    /// Bumped after every committed write: askers waiting in this process
    /// wake on it instead of polling the database.
    changes: tokio::sync::watch::Sender<u64>,
    /// The data folder's audit log: every transition is also a line there.
    log: AuditLog,
    /// The knowledge base whose queue this is (named in the audit log).
    kb: String,
}

impl ReviewQueue {
    /// Opens the queue in the configured data folder (`review.sqlite3`).
    pub fn open(config: &Config) -> Result<Self> {
        Self::open_at(&config.review_db_path(), config)
    }

    /// Opens the queue in a given database file (or, with
    /// `storage.state: postgres`, in PostgreSQL: `path` is not used).
    pub fn open_at(path: &Path, config: &Config) -> Result<Self> {
        let store = db::open(config, path)?;
        let changes = tokio::sync::watch::Sender::new(0u64);
        Ok(Self {
            group_cosine: group_cosine(config),
            asker_key: super::handle::AskerKey::load_or_create(&store)?,
            store,
            config: config.review.clone(),
            thresholds: config.confidence.thresholds.clone(),
            changes,
            log: AuditLog::open(config)?,
            kb: config.kb_name().to_string(),
        })
    }

    /// Records in the audit log that `who` read escalation `e` (and the
    /// documents its draft cites).
    pub(super) fn log_view(&self, who: &str, e: &Escalation) {
        self.log.record(
            &Record::new(who, &self.kb, Action::EscalationView)
                .escalation(e.id)
                .documents(e.run.cited_sources().iter().map(String::as_str)),
        );
    }

    /// From now on, another server's change to the queue wakes this
    /// one's waiting askers (PostgreSQL's `NOTIFY`); started by the first
    /// asker who waits, so a command that never waits opens no listener.
    pub(super) fn listen_for_other_servers(&self) {
        let wake = self.changes.clone();
        self.store
            .watch(move || wake.send_modify(|n| *n = n.wrapping_add(1)));
    }

    /// The database: its file, or PostgreSQL's server and schema.
    pub fn place(&self) -> &str {
        self.store.place()
    }

    /// The SQLite file, when the queue is kept in one.
    pub fn sqlite_path(&self) -> Option<&Path> {
        self.store.sqlite_path()
    }

    /// The asker's handle on escalation `id`: what a remote asker shows to
    /// read it back (`GET /v1/escalations/{id}?handle=`).
    pub fn asker_handle(&self, id: i64) -> String {
        self.asker_key.handle(id)
    }

    /// Checks an asker's handle; a wrong one reads as "no such escalation",
    /// so ids cannot be probed.
    pub fn check_asker_handle(&self, id: i64, handle: &str) -> Result<()> {
        if self.asker_key.verify(id, handle) {
            Ok(())
        } else {
            Err(ReviewError::NotFound {
                what: "escalation",
                id: id.to_string(),
            })
        }
    }

    /// Runs `f` in a write transaction, after settling escalations that
    /// are past their time (so every caller sees expiry when it is due).
    pub(super) fn write<T>(&self, f: impl FnOnce(&Conn<'_>) -> Result<T>) -> Result<T> {
        let out = self.store.write(|tx| {
            self.follow_clock_jumps(tx)?;
            self.expire_due(tx)?;
            f(tx)
        })?;
        self.changes.send_modify(|n| *n = n.wrapping_add(1));
        Ok(out)
    }

    /// Runs `f` on the connection without a write transaction: for lookups
    /// that must not wait on writers (each request's token check).
    pub(super) fn read<T>(&self, f: impl FnOnce(&Conn<'_>) -> Result<T>) -> Result<T> {
        self.store.read(f)
    }

    /// Puts an escalated run in the queue and tells the reviewers (a
    /// broadcast, or a message to each allowed reviewer).
    pub fn escalate(&self, new: NewEscalation<'_>) -> Result<Escalation> {
        let request = new.report.escalation.as_ref().ok_or_else(|| {
            ReviewError::Invalid("only an escalated run can be put to reviewers".into())
        })?;
        non_empty("the asker", new.asker)?;
        if let Some(allowed) = &new.allowed {
            if allowed.is_empty() {
                return Err(ReviewError::Invalid(
                    "a restricted escalation needs at least one reviewer".into(),
                ));
            }
            for r in allowed {
                plain_id("a reviewer id", r)?;
            }
        }
        let timeout = new
            .timeout
            .unwrap_or_else(|| Duration::from_secs_f64(self.config.escalation_ttl_seconds));
        // Stored sorted and once each: the same reviewers, the same text
        // (what a near repeat is compared on).
        let allowed = new.allowed.as_ref().map(|list| {
            let mut list = list.clone();
            list.sort();
            list.dedup();
            to_json(&list)
        });
        // Compared as stored: quantised and read back.
        let vector = new.vector.map(crate::embed::quantise);
        let id = self.write(|tx| {
            let lead = match &vector {
                Some(v) => self.lead_for(
                    tx,
                    new.collection,
                    allowed.as_deref(),
                    new.report.question_as_run(),
                    &crate::embed::dequantise(v),
                    &new.report.scope,
                )?,
                None => None,
            };
            let now = now_ms();
            let expires = now.saturating_add(i64::try_from(timeout.as_millis()).unwrap_or(i64::MAX));
            let id = tx.insert(
                "INSERT INTO escalations (question, reason, request, run, collection, asker, allowed, \
                 status, created_at, updated_at, expires_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'pending', ?8, ?8, ?9) RETURNING id",
                params![
                    new.report.question,
                    request.reason,
                    to_json(request),
                    to_json(new.report),
                    new.collection,
                    new.asker,
                    allowed,
                    now,
                    expires
                ],
            )?;
            self.audit(tx, id, new.asker, "escalated", None, Some(Status::Pending), &request.reason)?;
            if let Some(v) = &vector {
                tx.execute(
                    "INSERT INTO escalation_vectors (escalation_id, vector) VALUES (?1, ?2)",
                    params![id, v],
                )?;
            }
            if let Some(lead) = lead {
                // The reviewers already have the lead: no new message.
                tx.execute(
                    "INSERT INTO escalation_groups (escalation_id, lead_id) VALUES (?1, ?2)",
                    params![id, lead],
                )?;
                let detail = format!("#{lead}");
                self.audit(tx, id, new.asker, "joined", Some(Status::Pending), Some(Status::Pending), &detail)?;
                return Ok(id);
            }
            let body = format!("{}\n\nWhy: {}", new.report.question, request.reason);
            let subject = format!("Escalation #{id} needs a reviewer");
            match &new.allowed {
                None => {
                    super::db::insert_message(tx, "grace", None, &subject, &body, Some(id))?;
                }
                Some(list) => {
                    for r in list {
                        super::db::insert_message(tx, "grace", Some(r), &subject, &body, Some(id))?;
                    }
                }
            }
            Ok(id)
        })?;
        tracing::info!(id, "escalation queued for review");
        self.get(id, Viewer::Asker)
    }

    #[allow(clippy::too_many_arguments)]
    fn set_status(
        &self,
        tx: &Conn<'_>,
        e: &Escalation,
        to: Status,
        resolution: Option<&Resolution>,
        actor: &str,
        action: &str,
        detail: &str,
    ) -> Result<()> {
        let claimed_by = match to {
            Status::Pending => None,
            _ => e.claimed_by.clone(),
        };
        tx.execute(
            "UPDATE escalations SET status = ?2, claimed_by = ?3, resolution = COALESCE(?4, resolution), \
             updated_at = ?5 WHERE id = ?1",
            params![e.id, to.as_str(), claimed_by, resolution.map(to_json), now_ms()],
        )?;
        self.audit(tx, e.id, actor, action, Some(e.status), Some(to), detail)
    }

    #[allow(clippy::too_many_arguments)]
    fn audit(
        &self,
        tx: &Conn<'_>,
        id: i64,
        actor: &str,
        action: &str,
        from: Option<Status>,
        to: Option<Status>,
        detail: &str,
    ) -> Result<()> {
        tx.execute(
            "INSERT INTO audit (escalation_id, at, actor, action, from_status, to_status, detail) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![
                id,
                now_ms(),
                actor,
                action,
                from.map(Status::as_str),
                to.map(Status::as_str),
                detail
            ],
        )?;
        self.log.record(
            &Record::new(actor, &self.kb, Action::Review)
                .decision(action)
                .escalation(id),
        );
        Ok(())
    }
}

/// `review.group_similarity` as a cosine of the configured model: its
/// model card's map for two texts of a kind undone, as the gap report
/// does; MiniLM's own when the card cannot be read (the queue opens
/// without the model, and grouping is a convenience).
fn group_cosine(config: &Config) -> f32 {
    let setting = config.review.group_similarity as f32;
    match crate::embed::ModelCard::of(&config.embedding.model_dir) {
        // At most 1: "1 joins only the same question" on any model's scale.
        Ok(card) => card
            .similarity
            .map_or(setting, |s| s.passage.invert(setting))
            .min(1.0),
        Err(e) => {
            tracing::warn!(error = %e, "review.group_similarity is read as a MiniLM cosine");
            setting
        }
    }
}

fn conflict(id: i64, message: String) -> ReviewError {
    ReviewError::Conflict { id, message }
}
