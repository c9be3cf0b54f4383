//! What an ask takes and gives: its options and their checks, and its
//! outcome with the run's status in one word.

use crate::access::ReadScope;
use serde::{Deserialize, Serialize};

use crate::config::MAX_RAG_SEARCH_LIMIT;
use crate::error::{Error, Result};
use crate::exec::{Decision, RunReport};

// What the docs link to.
#[cfg(doc)]
use super::Grace;

/// How to answer one question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AskOptions {
    /// Passages retrieved; `tools.rag_search.limit` when `None`.
    pub limit: Option<usize>,
    /// Put an escalated question in the review queue (default true).
    pub queue: bool,
    /// Only these reviewers may see the escalation; empty: any reviewer.
    pub reviewers: Vec<String>,
    /// Who asks, shown to reviewers.
    pub asker: String,
    /// The conversation this question continues ([`Grace::create_session`]):
    /// a follow-up is read against its earlier turns, and the turn is
    /// added to it.
    pub session_id: Option<String>,
    /// Put the question to a person whatever GRACE decides (the asker
    /// asked for one, e.g. after a decline): the run is escalated with its
    /// answer as the reviewer's draft. A run that needs the asker's input
    /// asks for it first.
    pub escalate: bool,
    /// What the asker may read: its searches, answer, factors and
    /// escalation see nothing else. [`ReadScope::All`] by default (the
    /// local operator, a service with the service key).
    pub scope: ReadScope,
}

impl Default for AskOptions {
    fn default() -> Self {
        Self {
            limit: None,
            queue: true,
            reviewers: Vec::new(),
            asker: "service".to_string(),
            session_id: None,
            escalate: false,
            scope: ReadScope::All,
        }
    }
}

/// The outcome of a question: the run's report and, when it was escalated
/// and queued, the escalation's id (`grace answer ID`, [`Grace::escalation`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct AskOutcome {
    /// How the run ended, in one word.
    #[serde(default)]
    pub status: RunStatus,
    /// The run's report (flattened into this object in JSON).
    #[serde(flatten)]
    pub report: RunReport,
    /// The escalation's id in the review queue when the run was escalated and
    /// queued; `None` otherwise.
    pub review_id: Option<i64>,
    /// The asker's handle on that escalation: needed to read it back over
    /// HTTP (`GET /v1/escalations/{id}?handle=`); the id alone is not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_handle: Option<String>,
    /// The session the turn was added to, when the ask named one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// When the run needs input (`decision: needs_input`): the id that
    /// continues it with the asker's reply (`POST /v1/runs/{id}/reply`,
    /// [`Grace::reply`]), within `agent.reply_timeout_seconds`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// The id the asker rates this answer by (`POST /v1/answers/{id}/feedback`,
    /// `grace feedback ID up|down`, MCP `feedback`); `None` when the run
    /// needs input or `feedback.enabled` is false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(pattern = r"^ans_[0-9a-f]{32}$")]
    pub answer_id: Option<String>,
    /// When a person was asked (`review_id`): what the asker has while
    /// they wait. Never GRACE's draft as an answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub while_waiting: Option<WhileWaiting>,
}

/// Passages an asker may read while a person checks.
pub const MAX_POSSIBLY_RELEVANT: usize = 3;

/// What an asker whose question went to a person has meanwhile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct WhileWaiting {
    /// The passages GRACE found (at most [`MAX_POSSIBLY_RELEVANT`]),
    /// possibly relevant, not an answer.
    pub possibly_relevant: Vec<crate::search::Passage>,
    /// How long a person usually takes to answer here (seconds; the median
    /// of the last answered escalations), `None` before the first.
    pub typical_review_seconds: Option<f64>,
}

impl WhileWaiting {
    /// What the asker of the escalated run `report` has while a person
    /// checks, with the queue's typical wait as read
    /// ([`ReviewQueue::typical_wait`](crate::review::ReviewQueue::typical_wait)),
    /// best effort: the escalation is queued already, and its id must
    /// reach the asker whatever that read did.
    pub fn of(
        report: &RunReport,
        typical_wait: crate::review::Result<Option<std::time::Duration>>,
    ) -> Self {
        Self {
            possibly_relevant: report.passages_found(MAX_POSSIBLY_RELEVANT),
            typical_review_seconds: typical_wait
                .map_err(|e| tracing::warn!(error = %e, "no typical review time"))
                .ok()
                .flatten()
                .map(|d| d.as_secs_f64()),
        }
    }
}

/// How a run ended, in one word (`status` in an outcome's JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Answered (decision `answer` or `caveat`).
    #[default]
    Answered,
    /// Put to a reviewer (decision `escalate`).
    Escalated,
    /// Not answered (decision `decline`).
    Declined,
    /// Waiting for the asker's reply to the run's `clarification`
    /// (`run_id` continues it).
    NeedsInput,
}

impl RunStatus {
    /// The status of a run that decided `decision`.
    pub fn of(decision: Decision) -> Self {
        match decision {
            Decision::Answer | Decision::Caveat => RunStatus::Answered,
            Decision::Escalate => RunStatus::Escalated,
            Decision::Decline => RunStatus::Declined,
            Decision::NeedsInput => RunStatus::NeedsInput,
        }
    }
}

/// Longest reply to a question the agent put to the asker (characters).
pub const MAX_REPLY_CHARS: usize = 4_000;

/// Checks a reply to the agent's question (at most [`MAX_REPLY_CHARS`]),
/// before the run continues: by
/// [`reply_blocking_as`](super::Grace::reply_blocking_as), and by
/// [`reply_stream`](super::Grace::reply_stream) before its stream starts.
pub fn check_reply(reply: Option<&str>) -> Result<()> {
    match reply {
        Some(r) if r.chars().count() > MAX_REPLY_CHARS => Err(Error::InvalidInput(format!(
            "the reply is longer than {MAX_REPLY_CHARS} characters"
        ))),
        _ => Ok(()),
    }
}

/// Checks an ask before it runs: the question ([`check_question`]), the
/// asker's name (1 to [`MAX_ASKER_CHARS`](crate::feedback::MAX_ASKER_CHARS)
/// characters, not blank), a limit in range, reviewer ids without spaces
/// or control characters (checked now, not only if the run escalates). By
/// [`ask_blocking`](super::Grace::ask_blocking), and by
/// [`ask_stream`](super::Grace::ask_stream) before its stream starts: a
/// bad ask is an error either way, never a stream that fails.
pub fn check_ask(question: &str, options: &AskOptions) -> Result<()> {
    check_question(question)?;
    crate::feedback::Asker::named(&options.asker)?;
    if let Some(limit) = options.limit {
        check_ask_limit(limit)?;
    }
    if let Some(bad) = options
        .reviewers
        .iter()
        .find(|r| !crate::text::is_plain_id(r))
    {
        return Err(Error::InvalidInput(format!(
            "the reviewer id {bad:?} must be non-empty, without spaces or control characters"
        )));
    }
    Ok(())
}

/// Longest question GRACE reads (characters): a question, not a pasted
/// log (the search reads a few hundred words of it at most).
pub const MAX_QUESTION_CHARS: usize = 4_000;

/// Checks a question before anything runs it, with a message that says
/// what to do: not blank, at most [`MAX_QUESTION_CHARS`], with at least
/// one word ([`crate::text::has_word`]: a question of only signs or a
/// number asks nothing; a reply to GRACE's own question continues its run
/// instead, [`Grace::reply_blocking`](super::Grace::reply_blocking)). The
/// API publishes the same rules (`maxLength`, [`crate::text::WORD`]), so
/// that what a client's schema check accepts, this accepts.
pub fn check_question(question: &str) -> Result<()> {
    let question = question.trim();
    if crate::text::is_blank(question) {
        return Err(Error::InvalidInput("the question is empty".into()));
    }
    let chars = question.chars().count();
    if chars > MAX_QUESTION_CHARS {
        return Err(Error::InvalidInput(format!(
            "the question is {chars} characters long; GRACE reads questions of at most \
             {MAX_QUESTION_CHARS}: ask about the part that matters (an error message, a code, \
             a name) in your own words"
        )));
    }
    if !crate::text::has_word(question) {
        return Err(Error::InvalidInput(format!(
            "{:?} has no words: a number or a sign answers a question GRACE asks, and GRACE \
             asked none; ask your question in words",
            crate::text::truncate_chars(question, 40)
        )));
    }
    Ok(())
}

/// Checks the passages an ask retrieves (`limit`, the CLI's `-k`): 1 to
/// [`MAX_RAG_SEARCH_LIMIT`], what one search may return.
pub fn check_ask_limit(limit: usize) -> Result<()> {
    if (1..=MAX_RAG_SEARCH_LIMIT).contains(&limit) {
        Ok(())
    } else {
        Err(Error::InvalidInput(format!(
            "the passages to retrieve (`limit`, -k) must be 1..={MAX_RAG_SEARCH_LIMIT}, got {limit}"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(question: &str) -> String {
        match check_question(question) {
            Err(Error::InvalidInput(why)) => why,
            other => panic!("{question:?} was not refused: {other:?}"),
        }
    }

    #[test]
    fn a_reply_is_at_most_its_bound() {
        assert!(check_reply(None).is_ok());
        assert!(check_reply(Some(&"é".repeat(MAX_REPLY_CHARS))).is_ok());
        let long = "é".repeat(MAX_REPLY_CHARS + 1);
        match check_reply(Some(&long)) {
            Err(Error::InvalidInput(why)) => assert!(why.contains("longer than"), "{why}"),
            other => panic!("a reply over the bound was not refused: {other:?}"),
        }
    }

    #[test]
    fn a_question_needs_words() {
        assert!(refused("  \n ").contains("empty"));
        for signs in ["?", "?!…", "---", "1", "42.", "¿?", "　？"] {
            assert!(refused(signs).contains("has no words"), "{signs:?}");
        }
        for fine in [
            "How do I rotate keys?",
            "ORB-2001?",
            "デプロイの方法は？",
            "yes or no?",
        ] {
            assert!(check_question(fine).is_ok(), "{fine:?}");
        }
    }

    #[test]
    fn a_pasted_log_is_refused_with_its_length_and_what_to_do() {
        let line = "2026-11-29T06:00:00Z ERROR orbit-deploy: connection refused (ORB-2001)\n";
        let log: String = line.repeat(5_000 / line.len() + 1);
        let log = crate::text::truncate_chars(&log, 5_000);
        let why = refused(log);
        assert!(why.contains("5000 characters"), "{why}");
        assert!(why.contains(&MAX_QUESTION_CHARS.to_string()), "{why}");
        assert!(why.contains("error message"), "{why}");
        let longest = "a".repeat(MAX_QUESTION_CHARS);
        assert!(check_question(&longest).is_ok());
        assert!(check_question(&format!("{longest}a")).is_err());
    }
}
