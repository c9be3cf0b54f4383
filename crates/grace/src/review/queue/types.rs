//! The escalation and the values around it: its status, how it was
//! settled, its audit entries, and what callers hand the queue.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::exec::{HumanReply, RunReport};
use crate::review::{Result, ReviewError};
use crate::tools::{Citation, UserRequest};

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
    /// What the reviewer said of GRACE's draft (given, or implied by
    /// their answer); `None` when no reviewer answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<crate::review::Verdict>,
    /// The question the reviewer answered, when this escalation joined
    /// another asked in other words: the asker sees what the answer is to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub for_question: Option<String>,
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
    /// The collection it was asked against (`collection.name`).
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
    /// The open escalation this one joined (a near repeat of its
    /// question): that one's answer is this one's. `None` when it stands
    /// alone or leads.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub joined_to: Option<i64>,
    /// The escalations that joined this one, still waiting on its answer:
    /// every other asker, in their own words.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub also_asked: Vec<AlsoAsked>,
    /// Passages, drafts and step inputs taken out because they come from
    /// documents the reader of this view may not read (see
    /// [`crate::review::withhold`]); 0: nothing was.
    #[serde(skip_serializing_if = "is_zero")]
    pub withheld: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// An asker whose escalation joined another's (see [`Escalation::also_asked`]).
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct AlsoAsked {
    /// Its own id (an asker's handle names it).
    pub id: i64,
    /// The question in that asker's words.
    pub question: String,
    /// Who asked it.
    pub asker: String,
    /// When.
    pub created_at: DateTime<Utc>,
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
    /// The embedding of the question as run (its rewrite, for a
    /// follow-up): with it, a near repeat of an open escalation joins it
    /// (`review.group_similarity`); without it, it stands alone.
    pub vector: Option<&'a [f32]>,
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
    /// What the reviewer says of GRACE's draft; `None`: implied by the
    /// reply ([`Verdict::implied`](crate::review::Verdict::implied)).
    pub verdict: Option<crate::review::Verdict>,
}

/// Which escalations [`ReviewQueue::list_page`](super::ReviewQueue::list_page) returns.
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
