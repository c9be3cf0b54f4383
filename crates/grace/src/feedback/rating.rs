//! What an asker says of an answer (a [`Rating`]), and who said it (an
//! [`Asker`]). A reviewer's verdict on a draft is the review queue's
//! (`review::Verdict`).

use serde::{Deserialize, Serialize};

use super::{FeedbackError, Result};

/// Longest text an asker may give with the reason `other` (characters).
pub const MAX_RATING_TEXT_CHARS: usize = 500;
/// Longest asker name accepted (characters).
pub const MAX_ASKER_CHARS: usize = 200;

/// Up or down.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Vote {
    /// The answer helped.
    Up,
    /// It did not.
    Down,
}

impl Vote {
    /// As stored and shown (`up`, `down`).
    pub fn as_str(self) -> &'static str {
        match self {
            Vote::Up => "up",
            Vote::Down => "down",
        }
    }

    pub(super) fn parse(text: &str) -> Option<Self> {
        match text {
            "up" => Some(Vote::Up),
            "down" => Some(Vote::Down),
            _ => None,
        }
    }
}

/// Why an answer was rated down.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// The answer is wrong.
    Wrong,
    /// Right, but it leaves out what the asker needed.
    Incomplete,
    /// It answers another question.
    NotWhatIAsked,
    /// It was right once.
    Outdated,
    /// Something else, said in the rating's `text`.
    Other,
}

impl Reason {
    /// Every reason, as the CLI and the page offer them.
    pub const ALL: [Reason; 5] = [
        Reason::Wrong,
        Reason::Incomplete,
        Reason::NotWhatIAsked,
        Reason::Outdated,
        Reason::Other,
    ];

    /// As stored and shown (`not_what_i_asked`).
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Wrong => "wrong",
            Reason::Incomplete => "incomplete",
            Reason::NotWhatIAsked => "not_what_i_asked",
            Reason::Outdated => "outdated",
            Reason::Other => "other",
        }
    }

    /// The reason spelled `text` (as [`as_str`](Self::as_str) writes it).
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.as_str() == text)
    }
}

/// An asker's rating of one answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Rating {
    /// Up or down.
    pub vote: Vote,
    /// Why (a down vote's reason; optional).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<Reason>,
    /// The asker's words, with the reason `other` (at most 500 characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

impl Rating {
    /// Whether it puts the answer to a person: a "wrong" rating, with
    /// `feedback.escalate_on_wrong` on.
    pub fn asks_for_a_person(&self, config: &crate::config::FeedbackConfig) -> bool {
        config.escalate_on_wrong && self.vote == Vote::Down && self.reason == Some(Reason::Wrong)
    }

    /// Checks the rating: a reason only with a down vote, a text only with
    /// the reason `other` and at most [`MAX_RATING_TEXT_CHARS`].
    pub fn check(&self) -> Result<()> {
        let invalid = |m: String| Err(FeedbackError::Invalid(m));
        if self.vote == Vote::Up && self.reason.is_some() {
            return invalid("a reason goes with a down vote only".into());
        }
        if let Some(text) = &self.text {
            if self.reason != Some(Reason::Other) {
                return invalid("a text goes with the reason `other` only".into());
            }
            let chars = text.chars().count();
            if chars > MAX_RATING_TEXT_CHARS {
                return Err(FeedbackError::TooLong {
                    chars,
                    max: MAX_RATING_TEXT_CHARS,
                });
            }
            if crate::text::is_blank(text) {
                return invalid("the text is blank (leave it out instead)".into());
            }
        }
        Ok(())
    }

    /// The rating as stored: (vote, reason, text).
    pub(super) fn columns(&self) -> (&'static str, Option<&'static str>, Option<&str>) {
        (
            self.vote.as_str(),
            self.reason.map(Reason::as_str),
            self.text.as_deref(),
        )
    }

    /// A rating read back from its columns.
    pub(super) fn from_columns(
        vote: &str,
        reason: Option<&str>,
        text: Option<String>,
    ) -> Option<Self> {
        Some(Self {
            vote: Vote::parse(vote)?,
            reason: match reason {
                Some(r) => Some(Reason::parse(r)?),
                None => None,
            },
            text,
        })
    }
}

/// Who asked, and so who may rate: the authenticated principal's name, or
/// the conversation when the asker is anonymous. A run belongs to the
/// asker who asked it; another asker's rating of it is refused as if the
/// run did not exist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Asker(String);

impl Asker {
    /// The asker of a conversation: its session id.
    pub fn session(id: &str) -> Self {
        Self(format!("session:{id}"))
    }

    /// A named asker (`grace ask --asker`, `asker` over HTTP): not blank,
    /// at most [`MAX_ASKER_CHARS`].
    pub fn named(name: &str) -> Result<Self> {
        if crate::text::is_blank(name) || name.chars().count() > MAX_ASKER_CHARS {
            return Err(FeedbackError::Invalid(format!(
                "the asker {:?} must be 1 to {MAX_ASKER_CHARS} characters, not blank",
                crate::text::shown_id(name)
            )));
        }
        Ok(Self(format!("asker:{name}")))
    }

    /// The asker of an ask: its session when it names one, else its name.
    pub fn of(session_id: Option<&str>, name: &str) -> Result<Self> {
        match session_id {
            Some(id) => Ok(Self::session(id)),
            None => Self::named(name),
        }
    }

    /// As stored.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// As shown to a reviewer: the name, or "the asker of conversation …".
    pub fn shown(&self) -> String {
        match self.0.split_once(':') {
            Some(("asker", name)) => name.to_string(),
            Some(("session", id)) => format!("the asker of conversation {id}"),
            _ => self.0.clone(),
        }
    }
}
