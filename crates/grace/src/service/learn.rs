//! Learning from feedback while serving (`confidence.feedback_calibration:
//! auto`): a refit on a thread of its own once enough new labels came, and
//! what the current fit and its history are.

use super::Grace;
use crate::error::Result;
use crate::learn::auto::{FeedbackCalibration, FitHistory, due, enabled, refit};

impl Grace {
    /// The fit on feedback and its history.
    pub fn feedback_calibration(&self) -> Result<FeedbackCalibration> {
        FeedbackCalibration::of(self.config(), &self.inner.feedback, &self.inner.queue)
    }

    /// Refits on feedback on a thread of its own when one is due (see
    /// [`crate::learn::auto`]), and scores with the fit once it is kept.
    /// One at a time; questions are answered meanwhile with the weights
    /// they had. Failures are logged: feedback never stops an answer. The
    /// service calls it after each rating, each reviewer's answer and at
    /// start.
    pub fn learn_if_due(&self) {
        // Off (or a labelled calibration wins): no history to read.
        if !enabled(self.config()) {
            return;
        }
        let is_due = FitHistory::load(self.config())
            .and_then(|history| due(self.config(), &self.inner.feedback, &history));
        match is_due {
            Ok(true) => {}
            Ok(false) => return,
            Err(e) => {
                tracing::warn!(error = %e, "cannot tell whether a refit on feedback is due");
                return;
            }
        }
        self.in_background(|g| &g.inner.learning, "feedback-refit", |this| {
            // The weights in use when it starts are the fit's prior.
            let prior = *this.scorer().weights();
            let model = this.inner.kb.embedder().model_id().to_string();
            match refit(this.config(), &prior, &this.inner.feedback, &this.inner.queue, &model) {
                Ok((record, Some(calibration))) => {
                    tracing::info!(labels = record.labels, why = %record.why, "refitted on feedback; scoring with the new fit");
                    *this
                        .inner
                        .learned
                        .write()
                        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(calibration.weights);
                }
                Ok((record, None)) => tracing::info!(labels = record.labels, why = %record.why, "refitted on feedback; the weights in use stay"),
                Err(e) => tracing::warn!(error = %e, "the refit on feedback failed; the weights stay as they were"),
            }
        });
    }
}
