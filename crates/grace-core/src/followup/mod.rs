//! Follow-up questions made standalone before retrieval.
//!
//! In a conversation, "and on sparc?" or "how do I remove them?" mean
//! nothing to a search engine on their own. [`resolve`] turns such a turn
//! into a question that stands alone:
//! - with a language model, the model rewrites it from the conversation
//!   ([`rewrite_with_model`]);
//! - offline (or when the model fails), a rule: a short turn with a
//!   pronoun that points back, a leading "and"/"what about", or hardly any
//!   words of its own inherits the key terms and identifiers of the last
//!   question that stood alone ([`rewrite_by_rule`]); a question that
//!   names its own subject is left alone, pronoun or not ([`is_follow_up`]).
//!
//! A turn that already stands alone is left as it is. The rewrite is what
//! retrieval and the answer see; the run reports it (`--trace`).

mod model;
mod rule;

pub use self::model::rewrite_with_model;
pub use self::rule::{focus, is_follow_up, is_key_term, own_terms, rewrite_by_rule};

use serde::{Deserialize, Serialize};

use crate::llm::LlmClient;

/// One earlier turn, as follow-up resolution reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct PriorTurn<'a> {
    /// The question as the asker typed it.
    pub question: &'a str,
    /// The question as it was run (its own rewrite, when it had one).
    pub standalone: &'a str,
    /// The answer given, if any.
    pub answer: Option<&'a str>,
}

/// Who rewrote a follow-up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RewriteBy {
    /// The language model.
    Model,
    /// The offline rule (inherited key terms).
    Rule,
}

/// A follow-up made standalone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Rewrite {
    /// The question as run.
    pub question: String,
    /// Who rewrote it.
    pub by: RewriteBy,
}

/// Resolves `question` against the conversation so far (oldest first):
/// `None` when it stands alone (or there is no history). A model is tried
/// first when given; any failure falls back to the rule.
pub fn resolve(
    question: &str,
    history: &[PriorTurn<'_>],
    model: Option<&dyn LlmClient>,
) -> Option<Rewrite> {
    let previous = history.last()?;
    if let Some(llm) = model {
        match rewrite_with_model(llm, question, history) {
            Ok(Some(q)) => {
                return Some(Rewrite {
                    question: q,
                    by: RewriteBy::Model,
                });
            }
            Ok(None) => return None,
            Err(e) => {
                tracing::warn!(error = %e, "follow-up rewrite by the model failed; using the rule")
            }
        }
    }
    // The subject of the conversation is in the last question that stood
    // alone: a chain of follow-ups ("why are their names so long?", "and
    // how do I hold one?") inherits its terms, not an earlier follow-up's
    // own words, which would pull retrieval and the answer back to it.
    let anchor = history
        .iter()
        .rev()
        .find(|t| t.standalone == t.question)
        .unwrap_or(previous);
    rewrite_by_rule(question, anchor.standalone).map(|q| Rewrite {
        question: q,
        by: RewriteBy::Rule,
    })
}

#[cfg(test)]
mod tests;
