//! A reviewer's verdict on GRACE's draft of an escalated answer: right,
//! partly right or wrong. It labels the run for calibration. The reviewer
//! gives it; when they do not, it follows from what they answered.

use serde::{Deserialize, Serialize};

use crate::exec::{CONFIRM_OPTION_PREFIX, HumanReply, NOT_ANSWERED_OPTION};

/// Share of the draft's words a reviewer's own answer must keep for the
/// draft to count as partly right when the reviewer gave no verdict.
const PARTLY_KEPT: f64 = 0.5;

/// What a reviewer says of GRACE's draft.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The draft was right as it stood.
    Right,
    /// Partly right: the reviewer mended it.
    PartlyRight,
    /// Wrong (or there was no draft worth keeping).
    Wrong,
}

impl Verdict {
    /// Every verdict.
    pub const ALL: [Verdict; 3] = [Verdict::Right, Verdict::PartlyRight, Verdict::Wrong];

    /// As stored and shown (`partly_right`).
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Right => "right",
            Verdict::PartlyRight => "partly_right",
            Verdict::Wrong => "wrong",
        }
    }

    /// The verdict spelled `text` (as [`as_str`](Self::as_str) writes it).
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.as_str() == text)
    }

    /// The verdict a reviewer's answer implies when they gave none: the
    /// draft confirmed (the confirm option, or the draft's text unchanged)
    /// is right; "the knowledge base does not answer this" is wrong; an
    /// answer in their own words that keeps at least half of the draft's
    /// words is partly right, else wrong.
    pub fn implied(draft: Option<&str>, options: &[String], reply: &HumanReply) -> Self {
        match reply {
            HumanReply::Option(n) => match n.checked_sub(1).and_then(|i| options.get(i)) {
                Some(o) if o.starts_with(CONFIRM_OPTION_PREFIX) => Verdict::Right,
                Some(o) if o == NOT_ANSWERED_OPTION => Verdict::Wrong,
                _ => Verdict::Wrong,
            },
            HumanReply::Text(text) => match draft {
                Some(draft) if words(text) == words(draft) => Verdict::Right,
                Some(draft) if kept(draft, text) >= PARTLY_KEPT => Verdict::PartlyRight,
                _ => Verdict::Wrong,
            },
            HumanReply::Skip => Verdict::Wrong,
        }
    }
}

/// A text's words, without its citation markers.
fn words(text: &str) -> Vec<String> {
    crate::text::word_tokens(&crate::confidence::strip_markers(text))
}

/// The share of `draft`'s distinct words that `answer` keeps.
fn kept(draft: &str, answer: &str) -> f64 {
    let draft: std::collections::BTreeSet<String> = words(draft).into_iter().collect();
    if draft.is_empty() {
        return 0.0;
    }
    let answer: std::collections::BTreeSet<String> = words(answer).into_iter().collect();
    draft.intersection(&answer).count() as f64 / draft.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> Vec<String> {
        vec![
            format!("{CONFIRM_OPTION_PREFIX}Backups are kept 30 days. [1]"),
            NOT_ANSWERED_OPTION.to_string(),
        ]
    }

    #[test]
    fn what_the_reviewer_answered_implies_the_verdict() {
        let draft = Some("Backups are kept 30 days. [1]");
        let text = |t: &str| HumanReply::Text(t.into());
        let implied = |reply| Verdict::implied(draft, &options(), &reply);
        assert_eq!(implied(HumanReply::Option(1)), Verdict::Right);
        assert_eq!(implied(HumanReply::Option(2)), Verdict::Wrong);
        assert_eq!(implied(text("Backups are kept 30 days.")), Verdict::Right);
        assert_eq!(
            implied(text(
                "Backups are kept 30 days, then moved to cold storage for a year."
            )),
            Verdict::PartlyRight
        );
        assert_eq!(implied(text("Ask the platform team.")), Verdict::Wrong);
        assert_eq!(
            Verdict::implied(None, &options(), &text("Thirty days.")),
            Verdict::Wrong
        );
    }

    #[test]
    fn verdicts_round_trip_through_their_names() {
        for v in Verdict::ALL {
            assert_eq!(Verdict::parse(v.as_str()), Some(v));
        }
        assert_eq!(Verdict::parse("maybe"), None);
    }
}
