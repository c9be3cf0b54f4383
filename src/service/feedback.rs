//! Feedback through the facade: each finished run recorded so that its
//! asker can rate it, and the rating.

use super::Grace;
use super::ask::AskOptions;
use crate::config::Config;
use crate::error::Result;
use crate::exec::RunReport;
use crate::feedback::{Asker, FeedbackStore, Rating, RecordedRun, StoredRating};

impl Grace {
    /// The recorded runs, ratings and verdicts.
    pub fn feedback(&self) -> &FeedbackStore {
        &self.inner.feedback
    }

    /// `asker`'s rating of answer `answer_id` (the `answer_id` of an
    /// [`AskOutcome`](super::AskOutcome)); a second rating replaces the
    /// first. Refused: an answer that does not exist or is another asker's
    /// (not found), one that was escalated or declined, a malformed
    /// rating, more than `feedback.max_ratings_per_hour`.
    pub fn rate_blocking(
        &self,
        answer_id: &str,
        asker: &Asker,
        rating: &Rating,
    ) -> Result<StoredRating> {
        Ok(self.inner.feedback.rate(answer_id, asker, rating)?)
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

    /// Records a finished run for rating; its id. A run that cannot be
    /// recorded is still answered: the failure is logged.
    pub(super) fn record(
        &self,
        report: &RunReport,
        config: &Config,
        options: &AskOptions,
        review_id: Option<i64>,
    ) -> Option<String> {
        let recorded = Asker::of(options.session_id.as_deref(), &options.asker).and_then(|asker| {
            self.inner
                .feedback
                .record(&RecordedRun::of(report, config), &asker, review_id)
        });
        recorded.unwrap_or_else(|e| {
            tracing::warn!(error = %e, "the run could not be recorded for feedback; it cannot be rated");
            None
        })
    }
}
