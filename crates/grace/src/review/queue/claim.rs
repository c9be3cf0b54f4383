//! A reviewer taking an escalation and giving it back: one of several
//! reviewers claiming at once wins.

use super::types::{Escalation, Status, Viewer};
use super::{ReviewQueue, conflict};
use crate::review::db::{self, now_ms};
use crate::review::{Result, ReviewError, non_empty};
use crate::state::{Conn, params};

impl ReviewQueue {
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

    /// Moves a visible, open escalation to `claimed` by `reviewer`, or
    /// refuses (claimed by another, already settled).
    pub(super) fn take(&self, tx: &Conn<'_>, e: &Escalation, reviewer: &str) -> Result<()> {
        match (e.status, e.claimed_by.as_deref()) {
            (Status::Pending, _) => {
                // The status check in the WHERE clause makes the claim
                // atomic even against a writer that raced past our read.
                let changed = tx.execute(
                    "UPDATE escalations SET status = 'claimed', claimed_by = ?2, updated_at = ?3 \
                         WHERE id = ?1 AND status = 'pending'",
                    params![e.id, reviewer, now_ms()],
                )?;
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

    pub(super) fn require_reviewer(&self, tx: &Conn<'_>, reviewer: &str) -> Result<()> {
        non_empty("the reviewer id", reviewer)?;
        if !db::reviewer_exists(tx, reviewer)? {
            return Err(ReviewError::NotFound {
                what: "reviewer",
                id: format!("{reviewer:?} (register with `grace review register`)"),
            });
        }
        Ok(())
    }
}
