//! Feedback that asks for a different approach ("redo: look under change
//! freeze", as the original replanned on words like "modify" and "redo"):
//! instead of recording it as the answer, GRACE searches again with the
//! rest of the feedback as a hint and puts the new draft to the same
//! reviewer. The CLI and the HTTP API both come here.

use std::sync::Arc;

use super::ReviewError;
use super::queue::{Escalation, ReviewQueue, Viewer};
use crate::exec::Executor;
use crate::tools::ToolRegistry;
use crate::{
    config::Config,
    kb::{KnowledgeBase, OpenMode},
};

/// The hint in feedback whose first word is one of `words`
/// (`review.replan_words`): "redo: look under rollback" → "look under
/// rollback". `None` for an ordinary answer, or a replan word alone.
pub fn hint(text: &str, words: &[String]) -> Option<String> {
    let text = text.trim();
    let first = text.split_whitespace().next()?;
    let word = first.trim_end_matches([':', ',', '.', '!', '-']);
    if !words.iter().any(|w| w.eq_ignore_ascii_case(word)) {
        return None;
    }
    let rest = text[first.len()..].trim_start_matches([':', ',', '.', '!', '-', ' ']);
    Some(rest.trim().to_string()).filter(|h| !h.is_empty())
}

/// Escalation `id` as `reviewer` sees it, when it can still be reviewed
/// (checked before the knowledge base is opened, and again by the redraft).
fn open_for(queue: &ReviewQueue, id: i64, reviewer: &str) -> crate::error::Result<Escalation> {
    let e = queue.get(id, Viewer::Reviewer(reviewer))?;
    if !e.status.is_open() {
        return Err(ReviewError::Conflict {
            id,
            message: format!("is {} and can no longer be reviewed", e.status),
        }
        .into());
    }
    Ok(e)
}

/// Runs escalation `id`'s question again with `hint` as a second search
/// (opening the knowledge base for it) and gives the new draft to
/// `reviewer`, who keeps the claim.
pub fn redraft(
    config: &Config,
    queue: &ReviewQueue,
    id: i64,
    reviewer: &str,
    hint: &str,
) -> crate::error::Result<Escalation> {
    open_for(queue, id, reviewer)?;
    let kb = Arc::new(KnowledgeBase::open(config.clone(), OpenMode::Existing)?);
    let registry = ToolRegistry::from_config(kb.config(), kb.clone())?;
    redraft_with(&registry, config, kb.scorer(), queue, id, reviewer, hint)
}

/// [`redraft`] with tools already open (a server holding the knowledge base).
pub fn redraft_with(
    registry: &ToolRegistry,
    config: &Config,
    scorer: &crate::confidence::Scorer,
    queue: &ReviewQueue,
    id: i64,
    reviewer: &str,
    hint: &str,
) -> crate::error::Result<Escalation> {
    let e = open_for(queue, id, reviewer)?;
    // The asker's scope: a redraft finds no more than they may read.
    let executor = Executor::new(registry, config, scorer, config.tools.rag_search.limit)
        .with_scope(e.run.scope.clone());
    let run = executor.ask_with_hint(&e.question, hint, &mut |_| {})?;
    Ok(queue.redraft(id, reviewer, &run, hint)?)
}

#[cfg(test)]
mod tests {
    use super::hint;

    #[test]
    fn only_feedback_starting_with_a_replan_word_is_a_hint() {
        let words = ["redo".to_string(), "modify".to_string()];
        assert_eq!(
            hint("Redo: look under change freeze", &words).as_deref(),
            Some("look under change freeze")
        );
        assert_eq!(
            hint("modify - rollback docs", &words).as_deref(),
            Some("rollback docs")
        );
        assert_eq!(hint("redo", &words), None);
        assert_eq!(hint("Please redo nothing; the answer is 42.", &words), None);
        assert_eq!(hint("Redoing is not needed.", &words), None);
    }
}
