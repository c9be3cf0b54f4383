//! What a run does with its answer: answer, caveat, escalate or decline,
//! and the question put to a human (with why) when it escalates.

use serde_json::json;

use super::report::{CONFIRM_OPTION_PREFIX, Decision, NOT_ANSWERED_OPTION, RunReport};
use super::{Attempt, Executor};
use crate::confidence::{Contribution, Level, explain, shortfall};
use crate::tools::AskUser;
use crate::tools::{Answer, ToolOutput, UserRequest};

impl Executor<'_> {
    /// Builds the question for a human through `ask_user`, if enabled.
    pub(super) fn escalate(
        &self,
        question: &str,
        attempt: &Attempt,
        answer: Option<&Answer>,
    ) -> Option<UserRequest> {
        self.escalation(
            question,
            reason(attempt, &self.confidence.thresholds),
            answer,
        )
    }

    /// Puts a finished run to a person because of something its asker did,
    /// `what` ("the asker asked for a person", "the asker rated the answer
    /// wrong"), whatever it decided: its answer becomes the reviewer's
    /// draft. `None` when `ask_user` is disabled.
    pub fn escalation_for_asker(&self, report: &RunReport, what: &str) -> Option<UserRequest> {
        let reason = format!(
            "{what} (GRACE decided {} at confidence {:.2})",
            report.decision.as_str(),
            report.confidence
        );
        self.escalation(&report.question, reason, report.answer.as_ref())
    }

    /// The question for a reviewer, with `reason`, through `ask_user`.
    pub(super) fn escalation(
        &self,
        question: &str,
        reason: String,
        answer: Option<&Answer>,
    ) -> Option<UserRequest> {
        self.registry.get(AskUser::NAME)?;
        let options = review_options(answer);
        let input = json!({
            "question": question,
            "reason": reason,
            "options": options,
            "urgency": "blocking",
        });
        match self
            .registry
            .call(AskUser::NAME, &input, &self.scope)
            .output
        {
            ToolOutput::UserRequest(r) => Some(r),
            _ => None,
        }
    }
}

/// The options offered to a human: confirm the draft (when there is one),
/// or say the knowledge base does not answer the question.
pub fn review_options(draft: Option<&Answer>) -> Vec<String> {
    let mut options = Vec::new();
    if let Some(a) = draft.filter(|a| !a.abstained) {
        options.push(format!("{CONFIRM_OPTION_PREFIX}{}", a.text));
    }
    options.push(NOT_ANSWERED_OPTION.to_string());
    options
}

/// What a run does with an answer at `level`: answer, with a caveat,
/// escalate, or decline when the generator found nothing to answer with.
/// A failed step (a generator that is down) says nothing about the
/// knowledge base: a human may still answer, so that escalates.
pub(super) fn decide(level: Level, abstained: bool, failed: bool) -> Decision {
    match level {
        Level::Silent => Decision::Answer,
        Level::Notify => Decision::Caveat,
        Level::Escalate if abstained && !failed => Decision::Decline,
        Level::Confirm | Level::Escalate => Decision::Escalate,
    }
}

/// Why a run is escalated, for the reviewer: its confidence against the
/// threshold, where every answer starts, and, in plain words, the three
/// factors that held it back most (the room a factor left below its best,
/// or what it took away), each in its words for falling short.
fn reason(attempt: &Attempt, thresholds: &crate::config::Thresholds) -> String {
    let texts = crate::lang::Lang::En.texts();
    let mut text = format!(
        "confidence {:.2} is below {:.2} (notify)",
        attempt.confidence, thresholds.notify
    );
    if let Some(last) = attempt.steps.last() {
        if !last.result.success {
            text.push_str(&format!(
                "; step `{}` failed: {}",
                last.id,
                last.result.error.as_deref().unwrap_or("unknown error")
            ));
        }
        let score = &last.confidence;
        if let Some(e) = explain(score) {
            text.push_str(&format!("; every answer starts at {:+.2}", e.baseline));
        }
        let mut held: Vec<&Contribution> = score
            .contributions
            .iter()
            .filter(|c| shortfall(c) > 0.0)
            .collect();
        held.sort_by(|a, b| shortfall(b).total_cmp(&shortfall(a)));
        let parts: Vec<String> = held
            .iter()
            .take(3)
            .map(|c| {
                // What held it back: the factor's words for falling short.
                let words = texts.factor(&c.factor.name(), false);
                if c.term < 0.0 {
                    format!("{words} ({:+.2})", c.term)
                } else {
                    format!(
                        "{words} ({:+.2} of {:+.2} possible)",
                        c.term,
                        c.term + shortfall(c)
                    )
                }
            })
            .collect();
        if !parts.is_empty() {
            text.push_str(&format!("; held back most: {}", parts.join("; ")));
        }
    }
    text
}
