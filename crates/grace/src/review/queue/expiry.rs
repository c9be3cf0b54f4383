//! Escalations past their time: settled by the next write, with the
//! draft marked as not reviewed or the run cancelled.

use chrono::Utc;

use super::ReviewQueue;
use super::types::{Outcome, Resolution, Status, Viewer};
use crate::exec::Decision;
use crate::review::Result;
use crate::review::db::now_ms;
use crate::state::{Conn, params};

impl ReviewQueue {
    /// Settles escalations past their time, taking the write lock only when
    /// an index lookup finds one due, or the clock jumped (every write
    /// settles them first).
    pub(super) fn settle_due(&self) -> Result<()> {
        let due = self.read(|conn| {
            // After a clock jump the write moves expiry first (clock.rs).
            Ok(conn
                .query_opt(
                    "SELECT 1 FROM escalations WHERE status IN ('pending', 'claimed') AND expires_at <= ?1 LIMIT 1",
                    params![now_ms()],
                )?
                .is_some()
                || self.clock_jumped(conn)?)
        })?;
        if due {
            self.write(|_| Ok(()))?;
        }
        Ok(())
    }

    /// Settles every open escalation past its time: with
    /// `auto_proceed_on_timeout` the asker gets the draft marked as not
    /// reviewed (when there is a draft), otherwise the run is cancelled.
    pub(super) fn expire_due(&self, tx: &Conn<'_>) -> Result<()> {
        let now = now_ms();
        let due: Vec<i64> = tx
            .query(
                "SELECT id FROM escalations WHERE status IN ('pending', 'claimed') AND expires_at <= ?1",
                params![now],
            )?
            .iter()
            .map(|r| r.get(0))
            .collect::<std::result::Result<_, _>>()?;
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
                        verdict: None,
                        for_question: None,
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
                    verdict: None,
                    for_question: None,
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
}
