//! The escalation queue: escalations, their transitions, the audit log,
//! expiry, and waiting for an answer.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};
use serde::{Deserialize, Serialize};

use super::db::{self, allowed_list, db_error, from_json, now_ms, to_json, to_time};
use super::{Result, ReviewError, non_empty, plain_id};
use crate::confidence::level;
use crate::config::{Config, ReviewConfig, Thresholds};
use crate::exec::{Decision, HumanReply, RunReport, review_options};
use crate::tools::{Citation, Urgency, UserRequest};

/// Where an escalation stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Waiting for a reviewer.
    Pending,
    /// A reviewer has taken it; others cannot answer it.
    Claimed,
    /// A reviewer answered; the asker has the answer.
    Answered,
    /// A reviewer declined to answer (with a reason).
    Rejected,
    /// Nobody answered in time (see [`Outcome`] for what the asker got).
    Expired,
    /// The asker withdrew the question.
    Cancelled,
}

impl Status {
    /// Every status, open ones first.
    pub const ALL: [Status; 6] = [
        Status::Pending,
        Status::Claimed,
        Status::Answered,
        Status::Rejected,
        Status::Expired,
        Status::Cancelled,
    ];

    /// The name stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Claimed => "claimed",
            Status::Answered => "answered",
            Status::Rejected => "rejected",
            Status::Expired => "expired",
            Status::Cancelled => "cancelled",
        }
    }

    /// Whether a reviewer can still act on it.
    pub fn is_open(self) -> bool {
        matches!(self, Status::Pending | Status::Claimed)
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Status {
    type Err = ReviewError;
    fn from_str(s: &str) -> Result<Self> {
        Ok(match s {
            "pending" => Status::Pending,
            "claimed" => Status::Claimed,
            "answered" => Status::Answered,
            "rejected" => Status::Rejected,
            "expired" => Status::Expired,
            "cancelled" => Status::Cancelled,
            other => {
                return Err(ReviewError::Invalid(format!(
                    "unknown status {other:?}: use pending, claimed, answered, rejected, expired or cancelled"
                )));
            }
        })
    }
}

/// What the asker got when the escalation was settled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// A reviewer's answer.
    Answered,
    /// A reviewer said it cannot or should not be answered.
    Rejected,
    /// Nobody answered in time and `review.auto_proceed_on_timeout` gave
    /// the asker GRACE's own low-confidence draft, marked as not reviewed.
    ProceededUnreviewed,
    /// Withdrawn by the asker, or expired with no answer to proceed with.
    Cancelled,
}

/// How an escalation was settled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Resolution {
    /// What the asker got.
    pub outcome: Outcome,
    /// `reviewer:<id>`, `timeout`, or the asker.
    pub decided_by: String,
    /// When it was settled.
    pub at: DateTime<Utc>,
    /// The rejection reason, or why the run was cancelled.
    pub note: Option<String>,
    /// The completed run (answered, or proceeded unreviewed).
    pub report: Option<RunReport>,
    /// The knowledge-base source the answer was promoted to, if it was.
    pub promoted: Option<String>,
}

/// One escalated question.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Escalation {
    /// Id in the queue (the SQLite row id).
    pub id: i64,
    /// The question as asked.
    pub question: String,
    /// Why GRACE did not answer alone (its confidence and weakest factors).
    pub reason: String,
    /// The structured question for the reviewer (`ask_user`).
    pub request: UserRequest,
    /// The run so far: plan, steps with their factors, sources, the draft.
    pub run: RunReport,
    /// The collection it was asked against (`qdrant.collection`).
    pub collection: String,
    /// Who asked (shown to reviewers).
    pub asker: String,
    /// Reviewers allowed to see it; `None`: every reviewer.
    pub allowed: Option<Vec<String>>,
    /// Where it stands.
    pub status: Status,
    /// The reviewer who claimed it; `None` while pending or when settled
    /// without a claim.
    pub claimed_by: Option<String>,
    /// When it was queued.
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
    /// When it expires if still open (`review.escalation_ttl_seconds`
    /// after it was asked).
    pub expires_at: DateTime<Utc>,
    /// Until when its asker waits by default (`review.asker_wait_seconds`
    /// after it was asked); after that the asker has moved on (with
    /// GRACE's draft, under `review.auto_proceed_on_timeout`) while the
    /// escalation stays open for reviewers until `expires_at`.
    pub asker_waits_until: DateTime<Utc>,
    /// How it was settled; `None` while open.
    pub resolution: Option<Resolution>,
}

/// One recorded transition or action.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct AuditEntry {
    /// When it happened.
    pub at: DateTime<Utc>,
    /// Who did it: the asker, a reviewer id, or `timeout`.
    pub actor: String,
    /// What was done (`escalated`, `claimed`, `released`, `answered`,
    /// `rejected`, `cancelled`, `expired`, `replanned`, `promoted`, `retracted`).
    pub action: String,
    /// The status before (`None` when the escalation was created).
    pub from: Option<Status>,
    /// The status after.
    pub to: Option<Status>,
    /// Details (the option or answer given, a reason, a hint, a promoted
    /// source); may be empty.
    pub detail: String,
}

/// What to put in the queue.
#[derive(Debug, Clone)]
pub struct NewEscalation<'a> {
    /// An escalated run (its `escalation` holds the request).
    pub report: &'a RunReport,
    /// The collection the question was asked against.
    pub collection: &'a str,
    /// Who asked (shown to reviewers).
    pub asker: &'a str,
    /// Restrict to these reviewers; `None`: any reviewer.
    pub allowed: Option<Vec<String>>,
    /// Overrides `review.escalation_ttl_seconds`.
    pub timeout: Option<Duration>,
}

/// A reviewer's reply.
#[derive(Debug, Clone, PartialEq)]
pub struct ReviewAnswer {
    /// A chosen option (1-based) or the reviewer's own words.
    pub reply: HumanReply,
    /// Corrected sources to cite instead of the draft's.
    pub sources: Vec<Citation>,
    /// The reviewer's confidence; `review.reviewer_confidence` if `None`.
    pub confidence: Option<f64>,
}

/// Which escalations [`ReviewQueue::list_page`] returns.
#[derive(Debug, Clone, Default)]
pub struct ListFilter {
    /// Only this status.
    pub status: Option<Status>,
    /// Only pending and claimed ones.
    pub open_only: bool,
    /// At most this many; `None`: all.
    pub limit: Option<usize>,
    /// Only ids below this one (the next page after a page ending there).
    pub before: Option<i64>,
}

/// Who is looking: decides which escalations are visible.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Viewer<'a> {
    /// A registered reviewer: public escalations and those naming them.
    Reviewer(&'a str),
    /// Someone not identified as a reviewer: public escalations only.
    Anyone,
    /// The administrator (`server.admin_api_key`, or the loopback server
    /// without keys): sees every escalation, acts as no reviewer.
    Admin,
    /// The asker, who holds the escalation's id: sees it whatever its access.
    Asker,
}

/// The durable escalation queue (and, in `review::messages`, reviewers,
/// messages and shared context). Cheap to share: one connection behind a
/// mutex; other processes use their own.
pub struct ReviewQueue {
    pub(super) path: PathBuf,
    conn: Mutex<Connection>,
    /// Derives the askers' handles (see `review/handle.rs`).
    asker_key: super::handle::AskerKey,
    config: ReviewConfig,
    thresholds: Thresholds,
    /// Bumped after every committed write: askers waiting in this process
    /// wake on it instead of polling the database.
    changes: tokio::sync::watch::Sender<u64>,
}

const COLUMNS: &str = "id, question, reason, request, run, collection, asker, allowed, status, \
     claimed_by, created_at, updated_at, expires_at, resolution";

impl ReviewQueue {
    /// Opens the queue in the configured data folder (`review.sqlite3`).
    pub fn open(config: &Config) -> Result<Self> {
        Self::open_at(&config.review_db_path(), config)
    }

    /// Opens the queue in a given database file.
    pub fn open_at(path: &Path, config: &Config) -> Result<Self> {
        let conn = db::open(path)?;
        Ok(Self {
            path: path.to_path_buf(),
            conn: Mutex::new(conn),
            asker_key: super::handle::AskerKey::load_or_create(path)?,
            config: config.review.clone(),
            thresholds: config.confidence.thresholds.clone(),
            changes: tokio::sync::watch::Sender::new(0),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
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
    pub(super) fn write<T>(&self, f: impl FnOnce(&Transaction<'_>) -> Result<T>) -> Result<T> {
        let mut conn = self.lock();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(db_error(&self.path))?;
        self.expire_due(&tx)?;
        let out = f(&tx)?;
        tx.commit().map_err(db_error(&self.path))?;
        self.changes.send_modify(|n| *n = n.wrapping_add(1));
        Ok(out)
    }

    /// Settles escalations past their time, taking the write lock only when
    /// an index lookup finds one due (every write settles them first).
    fn settle_due(&self) -> Result<()> {
        let due = self.read(|conn| {
            conn.query_row(
                "SELECT 1 FROM escalations WHERE status IN ('pending', 'claimed') AND expires_at <= ?1 LIMIT 1",
                [now_ms()],
                |_| Ok(()),
            )
            .optional()
            .map_err(db_error(&self.path))
        })?;
        if due.is_some() {
            self.write(|_| Ok(()))?;
        }
        Ok(())
    }

    /// Runs `f` on the connection without a write transaction: for lookups
    /// that must not wait on writers (each request's token check).
    pub(super) fn read<T>(&self, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        f(&self.lock())
    }

    fn lock(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding the lock leaves SQLite consistent (the
        // transaction rolls back on drop), so a poisoned lock is usable.
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
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
        let id = self.write(|tx| {
            let now = now_ms();
            let expires = now.saturating_add(i64::try_from(timeout.as_millis()).unwrap_or(i64::MAX));
            tx.execute(
                "INSERT INTO escalations (question, reason, request, run, collection, asker, allowed, \
                 status, created_at, updated_at, expires_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'pending', ?8, ?8, ?9)",
                params![
                    new.report.question,
                    request.reason,
                    to_json(request),
                    to_json(new.report),
                    new.collection,
                    new.asker,
                    new.allowed.as_ref().map(to_json),
                    now,
                    expires
                ],
            )
            .map_err(db_error(&self.path))?;
            let id = tx.last_insert_rowid();
            self.audit(tx, id, new.asker, "escalated", None, Some(Status::Pending), &request.reason)?;
            let body = format!("{}\n\nWhy: {}", new.report.question, request.reason);
            let subject = format!("Escalation #{id} needs a reviewer");
            match &new.allowed {
                None => {
                    super::db::insert_message(tx, &self.path, "grace", None, &subject, &body, Some(id))?;
                }
                Some(list) => {
                    for r in list {
                        super::db::insert_message(tx, &self.path, "grace", Some(r), &subject, &body, Some(id))?;
                    }
                }
            }
            Ok(id)
        })?;
        tracing::info!(id, "escalation queued for review");
        self.get(id, Viewer::Asker)
    }

    /// Escalations the viewer may see, newest first, optionally of one status.
    pub fn list(&self, viewer: Viewer<'_>, status: Option<Status>) -> Result<Vec<Escalation>> {
        self.list_page(
            viewer,
            &ListFilter {
                status,
                ..ListFilter::default()
            },
        )
    }

    /// One page of the escalations the viewer may see, newest first. The
    /// filter, the visibility check and the page are SQL: only the rows
    /// returned are read and decoded, however many are stored.
    pub fn list_page(&self, viewer: Viewer<'_>, filter: &ListFilter) -> Result<Vec<Escalation>> {
        let (sees_all, reviewer) = match viewer {
            Viewer::Admin | Viewer::Asker => (true, None),
            Viewer::Reviewer(r) => (false, Some(r)),
            Viewer::Anyone => (false, None),
        };
        let limit = filter
            .limit
            .map_or(-1, |l| i64::try_from(l).unwrap_or(i64::MAX));
        self.settle_due()?;
        let rows = self.read(|conn| {
            let mut stmt = conn
                .prepare_cached(&format!(
                    "SELECT {COLUMNS} FROM escalations \
                     WHERE (?1 IS NULL OR status = ?1) \
                       AND (?2 = 0 OR status IN ('pending', 'claimed')) \
                       AND (?3 = 1 OR allowed IS NULL \
                            OR EXISTS (SELECT 1 FROM json_each(escalations.allowed) WHERE value = ?4)) \
                       AND (?5 IS NULL OR id < ?5) \
                     ORDER BY id DESC LIMIT ?6"
                ))
                .map_err(db_error(&self.path))?;
            stmt.query_map(
                params![
                    filter.status.map(Status::as_str),
                    filter.open_only,
                    sees_all,
                    reviewer,
                    filter.before,
                    limit
                ],
                raw_row,
            )
            .map_err(db_error(&self.path))?
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(db_error(&self.path))
        })?;
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            let e = self.decode(row)?;
            if visible(&e, viewer) {
                out.push(e);
            }
        }
        Ok(out)
    }

    /// How many escalations have each status (every status, zeros
    /// included), once those past their time are settled.
    pub fn counts(&self) -> Result<Vec<(Status, u64)>> {
        self.settle_due()?;
        let found: Vec<(String, i64)> = self.read(|conn| {
            let mut stmt = conn
                .prepare_cached("SELECT status, COUNT(*) FROM escalations GROUP BY status")
                .map_err(db_error(&self.path))?;
            stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .map_err(db_error(&self.path))?
                .collect::<std::result::Result<Vec<_>, _>>()
                .map_err(db_error(&self.path))
        })?;
        Ok(Status::ALL
            .iter()
            .map(|&status| {
                let n = found
                    .iter()
                    .find(|(name, _)| name == status.as_str())
                    .map_or(0, |(_, n)| u64::try_from(*n).unwrap_or(0));
                (status, n)
            })
            .collect())
    }

    /// One escalation; a restricted one the viewer may not see is
    /// [`ReviewError::NotFound`], exactly like a missing one.
    pub fn get(&self, id: i64, viewer: Viewer<'_>) -> Result<Escalation> {
        self.write(|tx| self.load(tx, id, viewer))
    }

    /// A reviewer takes an escalation. Exactly one of several reviewers
    /// claiming at once wins; claiming one's own claim again is a no-op.
    pub fn claim(&self, id: i64, reviewer: &str) -> Result<Escalation> {
        self.write(|tx| {
            self.require_reviewer(tx, reviewer)?;
            let e = self.load(tx, id, Viewer::Reviewer(reviewer))?;
            self.take(tx, &e, reviewer)?;
            self.load(tx, id, Viewer::Reviewer(reviewer))
        })
    }

    /// A reviewer gives up a claim; the escalation is pending again.
    pub fn release(&self, id: i64, reviewer: &str) -> Result<Escalation> {
        self.write(|tx| {
            let e = self.load(tx, id, Viewer::Reviewer(reviewer))?;
            if e.status != Status::Claimed || e.claimed_by.as_deref() != Some(reviewer) {
                return Err(conflict(
                    id,
                    format!("is {} and not claimed by {reviewer}", e.status),
                ));
            }
            self.set_status(tx, &e, Status::Pending, None, reviewer, "released", "")?;
            self.load(tx, id, Viewer::Reviewer(reviewer))
        })
    }

    /// A reviewer answers: the stored run is completed with the reply and
    /// the asker's answer records `decided_by: reviewer:<id>` and the
    /// review's confidence. Choosing "the knowledge base does not answer
    /// this" rejects the escalation.
    pub fn answer(&self, id: i64, reviewer: &str, answer: &ReviewAnswer) -> Result<Resolution> {
        if let Some(c) = answer.confidence
            && !(0.0..=1.0).contains(&c)
        {
            return Err(ReviewError::Invalid(format!(
                "confidence {c} is out of range 0..=1"
            )));
        }
        let blank = match &answer.reply {
            HumanReply::Skip => true,
            HumanReply::Text(t) => crate::text::is_blank(t),
            HumanReply::Option(_) => false,
        };
        if blank {
            return Err(ReviewError::Invalid("the answer is empty".into()));
        }
        self.write(|tx| {
            self.require_reviewer(tx, reviewer)?;
            let e = self.load(tx, id, Viewer::Reviewer(reviewer))?;
            self.take(tx, &e, reviewer)?;
            let who = format!("reviewer:{reviewer}");
            let mut report = e.run.clone();
            // An option this escalation does not offer: its state, not the
            // request's shape, says no.
            report
                .apply_reply(&answer.reply, &who)
                .map_err(|message| conflict(id, message))?;
            if let (Some(a), false) = (report.answer.as_mut(), answer.sources.is_empty()) {
                a.citations = answer.sources.clone();
            }
            let declined = report.decision == Decision::Decline;
            let confidence = answer.confidence.unwrap_or(self.config.reviewer_confidence);
            report.confidence = confidence;
            report.level = level(confidence, &self.thresholds);
            report.escalation = None;
            let (status, outcome, action) = if declined {
                (Status::Rejected, Outcome::Rejected, "rejected")
            } else {
                (Status::Answered, Outcome::Answered, "answered")
            };
            let detail = match &answer.reply {
                HumanReply::Option(n) => format!("option {n}"),
                HumanReply::Text(t) => format!("text: {}", t.trim()),
                HumanReply::Skip => String::new(),
            };
            let resolution = Resolution {
                outcome,
                decided_by: who,
                at: Utc::now(),
                note: declined.then(|| "the knowledge base does not answer this".to_string()),
                report: Some(report),
                promoted: None,
            };
            let claimed = self.load(tx, id, Viewer::Reviewer(reviewer))?;
            self.set_status(
                tx,
                &claimed,
                status,
                Some(&resolution),
                reviewer,
                action,
                &detail,
            )?;
            Ok(resolution)
        })
    }

    /// A reviewer declines to answer, saying why; the asker gets the reason.
    pub fn reject(&self, id: i64, reviewer: &str, why: &str) -> Result<Resolution> {
        non_empty("the reason (--why)", why)?;
        self.write(|tx| {
            self.require_reviewer(tx, reviewer)?;
            let e = self.load(tx, id, Viewer::Reviewer(reviewer))?;
            self.take(tx, &e, reviewer)?;
            let resolution = Resolution {
                outcome: Outcome::Rejected,
                decided_by: format!("reviewer:{reviewer}"),
                at: Utc::now(),
                note: Some(why.trim().to_string()),
                report: None,
                promoted: None,
            };
            let claimed = self.load(tx, id, Viewer::Reviewer(reviewer))?;
            self.set_status(
                tx,
                &claimed,
                Status::Rejected,
                Some(&resolution),
                reviewer,
                "rejected",
                why.trim(),
            )?;
            Ok(resolution)
        })
    }

    /// The asker withdraws an open escalation.
    pub fn cancel(&self, id: i64, who: &str) -> Result<Resolution> {
        non_empty("who cancels", who)?;
        self.write(|tx| {
            let e = self.load(tx, id, Viewer::Asker)?;
            if !e.status.is_open() {
                return Err(conflict(id, format!("is already {}", e.status)));
            }
            let resolution = Resolution {
                outcome: Outcome::Cancelled,
                decided_by: who.to_string(),
                at: Utc::now(),
                note: Some("withdrawn by the asker".into()),
                report: None,
                promoted: None,
            };
            self.set_status(
                tx,
                &e,
                Status::Cancelled,
                Some(&resolution),
                who,
                "cancelled",
                "",
            )?;
            Ok(resolution)
        })
    }

    /// Replaces the draft of a claimed escalation with a new run (GRACE
    /// searched again with the reviewer's hint); it stays with the reviewer,
    /// who confirms or answers it.
    pub fn redraft(
        &self,
        id: i64,
        reviewer: &str,
        run: &RunReport,
        hint: &str,
    ) -> Result<Escalation> {
        self.write(|tx| {
            self.require_reviewer(tx, reviewer)?;
            let e = self.load(tx, id, Viewer::Reviewer(reviewer))?;
            self.take(tx, &e, reviewer)?;
            let mut run = run.clone();
            let request = UserRequest {
                question: e.question.clone(),
                reason: format!(
                    "searched again with {reviewer}'s hint {hint:?}: confidence {:.2}",
                    run.confidence
                ),
                options: review_options(run.answer.as_ref()),
                urgency: Urgency::Blocking,
                awaiting_response: true,
            };
            run.decision = Decision::Escalate;
            run.escalation = Some(request.clone());
            tx.execute(
                "UPDATE escalations SET run = ?2, request = ?3, reason = ?4, updated_at = ?5 WHERE id = ?1",
                params![id, to_json(&run), to_json(&request), request.reason, now_ms()],
            )
            .map_err(db_error(&self.path))?;
            self.audit(tx, id, reviewer, "replanned", Some(Status::Claimed), Some(Status::Claimed), hint)?;
            self.load(tx, id, Viewer::Reviewer(reviewer))
        })
    }

    /// Records that a settled answer was promoted to (or, with `None`,
    /// retracted from) the knowledge base as `source`.
    pub fn set_promoted(&self, id: i64, who: &str, source: Option<&str>) -> Result<Escalation> {
        self.write(|tx| {
            let e = self.load(tx, id, Viewer::Asker)?;
            let Some(mut resolution) = e.resolution.clone() else {
                return Err(conflict(
                    id,
                    format!(
                        "is {}: only an answered escalation can be promoted",
                        e.status
                    ),
                ));
            };
            if e.status != Status::Answered {
                return Err(conflict(
                    id,
                    format!(
                        "is {}: only an answered escalation can be promoted",
                        e.status
                    ),
                ));
            }
            resolution.promoted = source.map(str::to_string);
            tx.execute(
                "UPDATE escalations SET resolution = ?2, updated_at = ?3 WHERE id = ?1",
                params![id, to_json(&resolution), now_ms()],
            )
            .map_err(db_error(&self.path))?;
            let (action, detail) = match source {
                Some(s) => ("promoted", s.to_string()),
                None => (
                    "retracted",
                    e.resolution.and_then(|r| r.promoted).unwrap_or_default(),
                ),
            };
            self.audit(tx, id, who, action, Some(e.status), Some(e.status), &detail)?;
            self.load(tx, id, Viewer::Asker)
        })
    }

    /// Every recorded transition of an escalation, oldest first.
    pub fn log(&self, id: i64, viewer: Viewer<'_>) -> Result<Vec<AuditEntry>> {
        self.write(|tx| {
            self.load(tx, id, viewer)?;
            let mut stmt = tx
                .prepare(
                    "SELECT at, actor, action, from_status, to_status, detail FROM audit \
                     WHERE escalation_id = ?1 ORDER BY id",
                )
                .map_err(db_error(&self.path))?;
            let rows = stmt
                .query_map([id], |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, String>(2)?,
                        r.get::<_, Option<String>>(3)?,
                        r.get::<_, Option<String>>(4)?,
                        r.get::<_, String>(5)?,
                    ))
                })
                .map_err(db_error(&self.path))?
                .collect::<std::result::Result<Vec<_>, _>>()
                .map_err(db_error(&self.path))?;
            rows.into_iter()
                .map(|(at, actor, action, from, to, detail)| {
                    Ok(AuditEntry {
                        at: to_time(at),
                        actor,
                        action,
                        from: from.map(|s| s.parse()).transpose()?,
                        to: to.map(|s| s.parse()).transpose()?,
                        detail,
                    })
                })
                .collect()
        })
    }

    /// Blocks until the escalation is settled (answered, rejected, expired
    /// or cancelled) or `timeout` passes. Polls the database, so the answer
    /// may come from another process.
    pub fn wait_blocking(&self, id: i64, timeout: Duration) -> Result<Escalation> {
        let started = Instant::now();
        loop {
            // Another process answers: this one has to look (a read; the
            // write lock only when the escalation is due to expire).
            let e = self.peek(id)?;
            if !e.status.is_open() {
                return Ok(e);
            }
            if started.elapsed() >= timeout {
                return Err(ReviewError::WaitTimedOut {
                    id,
                    status: e.status,
                    seconds: timeout.as_secs_f64(),
                });
            }
            std::thread::sleep(POLL.min(timeout.saturating_sub(started.elapsed())));
        }
    }

    /// Escalation `id` as its asker sees it, read without the write lock;
    /// one that is due to expire is settled first (which needs it).
    fn peek(&self, id: i64) -> Result<Escalation> {
        let e = self.read(|conn| self.load(conn, id, Viewer::Asker))?;
        if e.status.is_open() && e.expires_at <= Utc::now() {
            return self.get(id, Viewer::Asker);
        }
        Ok(e)
    }

    /// Settles every open escalation past its time: with
    /// `auto_proceed_on_timeout` the asker gets the draft marked as not
    /// reviewed (when there is a draft), otherwise the run is cancelled.
    fn expire_due(&self, tx: &Transaction<'_>) -> Result<()> {
        let now = now_ms();
        let due: Vec<i64> = {
            let mut stmt = tx
                .prepare("SELECT id FROM escalations WHERE status IN ('pending', 'claimed') AND expires_at <= ?1")
                .map_err(db_error(&self.path))?;
            stmt.query_map([now], |r| r.get(0))
                .map_err(db_error(&self.path))?
                .collect::<std::result::Result<Vec<_>, _>>()
                .map_err(db_error(&self.path))?
        };
        for id in due {
            let e = self.load(tx, id, Viewer::Asker)?;
            let draft = e.run.answer.as_ref().filter(|a| !a.abstained);
            let resolution = match draft {
                Some(_) if self.config.auto_proceed_on_timeout => {
                    let mut report = e.run.clone();
                    report.decision = Decision::Caveat;
                    report.decided_by = Some("timeout".into());
                    report.escalation = None;
                    Resolution {
                        outcome: Outcome::ProceededUnreviewed,
                        decided_by: "timeout".into(),
                        at: Utc::now(),
                        note: Some(format!(
                            "not reviewed: no reviewer answered within {:.0} s; this is GRACE's own low-confidence answer",
                            (e.expires_at - e.created_at).num_milliseconds() as f64 / 1000.0
                        )),
                        report: Some(report),
                        promoted: None,
                    }
                }
                _ => Resolution {
                    outcome: Outcome::Cancelled,
                    decided_by: "timeout".into(),
                    at: Utc::now(),
                    note: Some(if self.config.auto_proceed_on_timeout {
                        "no reviewer answered in time and there is no draft answer to proceed with"
                            .into()
                    } else {
                        "no reviewer answered in time (review.auto_proceed_on_timeout is off)"
                            .into()
                    }),
                    report: None,
                    promoted: None,
                },
            };
            let detail = resolution.note.clone().unwrap_or_default();
            self.set_status(
                tx,
                &e,
                Status::Expired,
                Some(&resolution),
                "timeout",
                "expired",
                &detail,
            )?;
        }
        Ok(())
    }

    /// Moves a visible, open escalation to `claimed` by `reviewer`, or
    /// refuses (claimed by another, already settled).
    fn take(&self, tx: &Transaction<'_>, e: &Escalation, reviewer: &str) -> Result<()> {
        match (e.status, e.claimed_by.as_deref()) {
            (Status::Pending, _) => {
                // The status check in the WHERE clause makes the claim
                // atomic even against a writer that raced past our read.
                let changed = tx
                    .execute(
                        "UPDATE escalations SET status = 'claimed', claimed_by = ?2, updated_at = ?3 \
                         WHERE id = ?1 AND status = 'pending'",
                        params![e.id, reviewer, now_ms()],
                    )
                    .map_err(db_error(&self.path))?;
                if changed != 1 {
                    return Err(conflict(e.id, "was claimed by another reviewer".into()));
                }
                self.audit(
                    tx,
                    e.id,
                    reviewer,
                    "claimed",
                    Some(Status::Pending),
                    Some(Status::Claimed),
                    "",
                )
            }
            (Status::Claimed, Some(holder)) if holder == reviewer => Ok(()),
            (Status::Claimed, holder) => Err(conflict(
                e.id,
                format!("is claimed by {}", holder.unwrap_or("another reviewer")),
            )),
            (status, _) => Err(conflict(
                e.id,
                format!("is {status} and can no longer be reviewed"),
            )),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn set_status(
        &self,
        tx: &Transaction<'_>,
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
        )
        .map_err(db_error(&self.path))?;
        self.audit(tx, e.id, actor, action, Some(e.status), Some(to), detail)
    }

    #[allow(clippy::too_many_arguments)]
    fn audit(
        &self,
        tx: &Transaction<'_>,
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
        )
        .map_err(db_error(&self.path))?;
        Ok(())
    }

    fn require_reviewer(&self, tx: &Transaction<'_>, reviewer: &str) -> Result<()> {
        non_empty("the reviewer id", reviewer)?;
        if !db::reviewer_exists(tx, &self.path, reviewer)? {
            return Err(ReviewError::NotFound {
                what: "reviewer",
                id: format!("{reviewer:?} (register with `grace review register`)"),
            });
        }
        Ok(())
    }

    fn load(&self, conn: &Connection, id: i64, viewer: Viewer<'_>) -> Result<Escalation> {
        let row = conn
            .query_row(
                &format!("SELECT {COLUMNS} FROM escalations WHERE id = ?1"),
                [id],
                raw_row,
            )
            .optional()
            .map_err(db_error(&self.path))?;
        let not_found = || ReviewError::NotFound {
            what: "escalation",
            id: id.to_string(),
        };
        let e = self.decode(row.ok_or_else(not_found)?)?;
        if visible(&e, viewer) {
            Ok(e)
        } else {
            Err(not_found())
        }
    }

    fn decode(&self, r: RawRow) -> Result<Escalation> {
        let p = &self.path;
        let what = |field: &str| format!("escalation {} {field}", r.id);
        Ok(Escalation {
            id: r.id,
            question: r.question,
            reason: r.reason,
            request: from_json(p, &what("request"), &r.request)?,
            run: from_json(p, &what("run"), &r.run)?,
            collection: r.collection,
            asker: r.asker,
            allowed: allowed_list(p, r.allowed)?,
            status: r.status.parse()?,
            claimed_by: r.claimed_by,
            created_at: to_time(r.created_at),
            updated_at: to_time(r.updated_at),
            expires_at: to_time(r.expires_at),
            asker_waits_until: to_time(r.created_at)
                + chrono::Duration::milliseconds(
                    (self.config.asker_wait_seconds * 1000.0).min(i64::MAX as f64) as i64,
                ),
            resolution: r
                .resolution
                .map(|t| from_json(p, &what("resolution"), &t))
                .transpose()?,
        })
    }
}

/// How often a waiting asker looks at the queue.
const POLL: Duration = Duration::from_millis(200);

/// How often an asker waiting in the server looks for an answer another
/// process wrote (answers written by the server itself wake it at once).
const OTHER_PROCESS_POLL: Duration = Duration::from_secs(1);

struct RawRow {
    id: i64,
    question: String,
    reason: String,
    request: String,
    run: String,
    collection: String,
    asker: String,
    allowed: Option<String>,
    status: String,
    claimed_by: Option<String>,
    created_at: i64,
    updated_at: i64,
    expires_at: i64,
    resolution: Option<String>,
}

fn raw_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<RawRow> {
    Ok(RawRow {
        id: r.get(0)?,
        question: r.get(1)?,
        reason: r.get(2)?,
        request: r.get(3)?,
        run: r.get(4)?,
        collection: r.get(5)?,
        asker: r.get(6)?,
        allowed: r.get(7)?,
        status: r.get(8)?,
        claimed_by: r.get(9)?,
        created_at: r.get(10)?,
        updated_at: r.get(11)?,
        expires_at: r.get(12)?,
        resolution: r.get(13)?,
    })
}

fn visible(e: &Escalation, viewer: Viewer<'_>) -> bool {
    match (viewer, &e.allowed) {
        (Viewer::Asker | Viewer::Admin, _) | (_, None) => true,
        (Viewer::Reviewer(r), Some(list)) => list.iter().any(|a| a == r),
        (Viewer::Anyone, Some(_)) => false,
    }
}

fn conflict(id: i64, message: String) -> ReviewError {
    ReviewError::Conflict { id, message }
}

/// An asker's handle on an escalation: await its settlement from async
/// code (the HTTP server, a service) or block on it.
#[derive(Clone)]
pub struct EscalationHandle {
    queue: Arc<ReviewQueue>,
    id: i64,
}

impl EscalationHandle {
    /// A handle on escalation `id` in `queue`.
    pub fn new(queue: Arc<ReviewQueue>, id: i64) -> Self {
        Self { queue, id }
    }

    /// The escalation's id.
    pub fn id(&self) -> i64 {
        self.id
    }

    /// The escalation as it stands now.
    pub fn current(&self) -> Result<Escalation> {
        self.queue.get(self.id, Viewer::Asker)
    }

    /// Waits until the escalation is settled or `timeout` passes, without
    /// blocking the async runtime's threads.
    pub async fn settled(&self, timeout: Duration) -> Result<Escalation> {
        let deadline = Instant::now() + timeout;
        let mut changes = self.queue.changes.subscribe();
        loop {
            changes.borrow_and_update();
            let queue = self.queue.clone();
            let id = self.id;
            let e = tokio::task::spawn_blocking(move || queue.peek(id))
                .await
                .map_err(|e| ReviewError::Invalid(format!("the wait was interrupted: {e}")))??;
            if !e.status.is_open() {
                return Ok(e);
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(ReviewError::WaitTimedOut {
                    id: self.id,
                    status: e.status,
                    seconds: timeout.as_secs_f64(),
                });
            }
            // Woken by a write in this process; otherwise look again when
            // the escalation expires, or after OTHER_PROCESS_POLL for an
            // answer given by another process (a CLI reviewer).
            let until_expiry = (e.expires_at - Utc::now())
                .to_std()
                .unwrap_or(Duration::ZERO)
                + Duration::from_millis(5);
            let nap = OTHER_PROCESS_POLL.min(deadline - now).min(until_expiry);
            let _ = tokio::time::timeout(nap, changes.changed()).await;
        }
    }

    /// Withdraws the question.
    pub fn cancel(&self, who: &str) -> Result<Resolution> {
        self.queue.cancel(self.id, who)
    }
}
