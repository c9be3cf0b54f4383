//! Feedback through the facade: each finished run recorded so that its
//! asker can rate it, and the rating.

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, PoisonError};

use super::Grace;
use super::ask::AskOptions;
use crate::config::Config;
use crate::error::Result;
use crate::exec::RunReport;
use crate::feedback::{
    Asker, FeedbackStore, RatedEscalation, Rating, StoredRating, document_boosts,
};
use crate::gaps::{self, GapReport};

impl Grace {
    /// The recorded runs, ratings and verdicts.
    pub fn feedback(&self) -> &FeedbackStore {
        &self.inner.feedback
    }

    /// `asker`'s rating of answer `answer_id` (the `answer_id` of an
    /// [`AskOutcome`](super::AskOutcome)); a second rating replaces the
    /// first. A "wrong" rating puts the question to a person
    /// (`feedback.escalate_on_wrong`): the escalation is in the answer.
    /// Refused: an answer that does not exist or is another asker's (not
    /// found), one that was escalated or declined, a malformed rating,
    /// more than `feedback.max_ratings_per_hour`.
    pub fn rate_blocking(
        &self,
        answer_id: &str,
        asker: &Asker,
        rating: &Rating,
    ) -> Result<StoredRating> {
        let mut stored = self.inner.feedback.rate(answer_id, asker, rating)?;
        // First, so that a recheck's draft is scored with this rating too.
        self.refresh_document_history();
        if rating.asks_for_a_person(&self.config().feedback)
            && self.inner.feedback.review_of(answer_id)?.is_none()
        {
            // The rating is stored: a recheck that fails is logged, not
            // the rating's failure.
            stored.escalation = self.recheck(answer_id, asker).unwrap_or_else(|e| {
                tracing::warn!(error = %e, answer_id, "a wrong rating could not be put to a person");
                None
            });
        }
        self.learn_if_due();
        Ok(stored)
    }

    /// Reads the documents' ratings into their rating history (the
    /// `document_history` factor of the answers citing them) and, with
    /// `feedback.document_boost` above 0, the knowledge base's boosts: at
    /// start and after each rating. A store that cannot be read leaves
    /// both as they were, with a warning.
    pub(super) fn refresh_document_history(&self) {
        // One refresh at a time: two ratings' refreshes must not publish
        // the older read last.
        let _one = self
            .inner
            .history_refresh
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let config = &self.config().feedback;
        match self.inner.feedback.document_history() {
            Ok(history) => {
                if config.document_boost > 0.0 {
                    self.inner
                        .kb
                        .set_document_boosts(document_boosts(&history, config));
                }
                *self
                    .inner
                    .document_history
                    .write()
                    .unwrap_or_else(PoisonError::into_inner) = Arc::new(history);
            }
            Err(e) => tracing::warn!(
                error = %e,
                "the documents' ratings could not be read; their history and boosts stay as they were"
            ),
        }
    }

    /// Each document's rating history as the answers are scored with now.
    pub fn document_history(&self) -> Arc<HashMap<String, f32>> {
        self.inner
            .document_history
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Puts the question of run `answer_id`, whose answer `asker` rated
    /// wrong, to a person: asked again and escalated whatever GRACE
    /// decides (its answer the reviewer's draft), and linked to the run so
    /// that the reviewer's verdict labels it. `None` when no escalation
    /// could be queued (`ask_user` disabled).
    fn recheck(&self, answer_id: &str, asker: &Asker) -> Result<Option<RatedEscalation>> {
        let Some(run) = self.inner.feedback.run(answer_id)? else {
            return Ok(None);
        };
        let question = run.standalone.unwrap_or(run.question);
        let options = AskOptions {
            asker: asker.shown(),
            ..AskOptions::default()
        };
        let outcome = self.run(
            &options,
            Some("the asker rated the answer wrong"),
            Arc::new(AtomicBool::new(false)),
            &mut |_| {},
            &mut |executor, on| executor.ask_turn(&question, None, &[], on),
        )?;
        let Some(review_id) = outcome.review_id else {
            return Ok(None);
        };
        if !self.inner.feedback.link_review(answer_id, review_id)? {
            // Another "wrong" rating of the run got there first: its
            // escalation stands, this one is withdrawn.
            self.inner.queue.cancel(review_id, &asker.shown())?;
            return Ok(None);
        }
        Ok(Some(RatedEscalation {
            review_id,
            review_handle: self.inner.queue.asker_handle(review_id),
        }))
    }

    /// [`rate_blocking`](Self::rate_blocking) on tokio's blocking pool.
    pub async fn rate(
        &self,
        answer_id: String,
        asker: Asker,
        rating: Rating,
    ) -> Result<StoredRating> {
        let this = self.clone();
        super::nonblocking::blocking(move || this.rate_blocking(&answer_id, &asker, &rating)).await
    }

    /// The gap report over the last `days` ([`gaps::read`]).
    pub fn gaps_blocking(&self, days: Option<u32>, limit: usize) -> Result<GapReport> {
        gaps::read(Some(&self.inner.feedback), self.config(), days, limit)
    }

    /// [`gaps_blocking`](Self::gaps_blocking) on tokio's blocking pool.
    pub async fn gaps(&self, days: Option<u32>, limit: usize) -> Result<GapReport> {
        let this = self.clone();
        super::nonblocking::blocking(move || this.gaps_blocking(days, limit)).await
    }

    /// Records a finished run for rating and for the gap report
    /// ([`FeedbackStore::record_run`]); its id. A run that cannot be
    /// recorded is still answered: the failure is logged.
    pub(super) fn record(
        &self,
        report: &RunReport,
        config: &Config,
        scorer: &crate::confidence::Scorer,
        options: &AskOptions,
        review_id: Option<i64>,
    ) -> Option<String> {
        let recorded = Asker::of(options.session_id.as_deref(), &options.asker).and_then(|asker| {
            self.inner.feedback.record_run(
                report,
                config,
                scorer,
                &asker,
                review_id,
                self.inner.kb.embedder(),
            )
        });
        recorded.unwrap_or_else(|e| {
            tracing::warn!(error = %e, "the run could not be recorded for feedback; it cannot be rated");
            None
        })
    }
}
