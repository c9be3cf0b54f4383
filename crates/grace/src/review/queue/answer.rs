//! Settling an escalation (a reviewer's answer or rejection, the asker's
//! cancellation), a redraft with a reviewer's hint, and recording a
//! promotion.

use chrono::Utc;

use super::types::{Escalation, Outcome, Resolution, ReviewAnswer, Status, Viewer};
use super::{ReviewQueue, conflict};
use crate::confidence::level;
use crate::exec::{Decision, HumanReply, RunReport, review_options};
use crate::review::db::{now_ms, to_json};
use crate::review::{Result, ReviewError, non_empty};
use crate::state::params;
use crate::tools::{Urgency, UserRequest};

impl ReviewQueue {
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
            let verdict = answer.verdict.unwrap_or_else(|| {
                let draft = e.run.answer.as_ref().filter(|a| !a.abstained);
                crate::review::Verdict::implied(
                    draft.map(|a| a.text.as_str()),
                    &e.request.options,
                    &answer.reply,
                )
            });
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
                verdict: Some(verdict),
                for_question: None,
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
            self.settle_joined(tx, &claimed, status, &resolution, reviewer, action)?;
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
                verdict: None,
                for_question: None,
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
            self.settle_joined(
                tx,
                &claimed,
                Status::Rejected,
                &resolution,
                reviewer,
                "rejected",
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
                verdict: None,
                for_question: None,
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
            )?;
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
            )?;
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
}
