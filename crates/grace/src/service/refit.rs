//! Self-calibration while serving: a refit after an ingest, and the
//! scorer runs are scored with once it is written.

use std::sync::atomic::{AtomicBool, Ordering};

use super::Grace;
use crate::confidence::Scorer;

impl Grace {
    /// What runs are scored with: the knowledge base's scorer, with the
    /// weights of a fit made since it was opened.
    pub(super) fn scorer(&self) -> Scorer {
        self.read_shared_fits();
        let read = |slot: &std::sync::RwLock<Option<crate::config::Weights>>| {
            *slot
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        };
        // A fit on feedback kept while serving, else a self-calibration
        // made while serving, else the weights the configuration loaded.
        let opened = self.inner.kb.scorer();
        match read(&self.inner.learned).or_else(|| read(&self.inner.refit)) {
            Some(weights) => opened.with_weights(weights),
            None => opened.clone(),
        }
    }

    /// With `storage.state: postgres`, when another server kept a fit
    /// since the last run: reads the fits again, so that its runs and this
    /// server's are scored alike.
    fn read_shared_fits(&self) {
        let Some((_, changed)) = &self.inner.shared_fits else {
            return;
        };
        if !changed.swap(false, Ordering::AcqRel) {
            return;
        }
        use crate::confidence::calibration::{Source, configured};
        let slot = match configured(self.config()) {
            Ok(Some((Source::Feedback, c))) => Some((&self.inner.learned, c.weights)),
            Ok(Some((Source::SelfFit, c))) => Some((&self.inner.refit, c.weights)),
            Ok(_) => None,
            Err(e) => {
                tracing::warn!(error = ?e, "cannot read the fits another server kept; the next run tries again");
                changed.store(true, Ordering::Release);
                None
            }
        };
        if let Some((slot, weights)) = slot {
            *slot
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(weights);
        }
    }

    /// After an ingest: with `confidence.self_calibration.mode: auto`, fits
    /// the knowledge base again on a thread of its own when enough of it
    /// changed ([`crate::selfcal::after_ingest`]), and scores with the new
    /// fit once it is written. One at a time; questions are answered
    /// meanwhile with the weights they had.
    pub(super) fn refit_in_background(&self) {
        match crate::selfcal::due(&self.inner.kb) {
            Ok(true) => {}
            Ok(false) => return,
            Err(e) => {
                tracing::warn!(error = %e, "cannot tell whether the knowledge base needs self-calibrating");
                return;
            }
        }
        self.in_background(|g| &g.inner.refitting, "self-calibration", |this| {
            match crate::selfcal::after_ingest(&this.inner.kb, &mut |_| {}) {
                Ok(Some(crate::selfcal::Outcome::Fitted { path, .. }))
                    if this.feedback_fit_in_use() => tracing::info!(
                    file = %path.display(),
                    "self-calibrated after the ingest; the fit on feedback stays in use"
                ),
                Ok(Some(crate::selfcal::Outcome::Fitted {
                    calibration, path, ..
                })) => {
                    tracing::info!(
                        questions = calibration.fitted_on.questions,
                        ece = ?calibration.cross_validated.ece,
                        auroc = ?calibration.cross_validated.auroc,
                        file = %path.display(),
                        "self-calibrated after the ingest; scoring with the new fit"
                    );
                    *this
                        .inner
                        .refit
                        .write()
                        .unwrap_or_else(std::sync::PoisonError::into_inner) =
                        Some(calibration.weights);
                }
                Ok(Some(crate::selfcal::Outcome::TooSmall { usable, min })) => tracing::info!(
                    "too small to self-calibrate ({usable} sections, fewer than {min}); the configured weights stay"
                ),
                Ok(None) => {}
                Err(e) => tracing::warn!(error = %e, "self-calibration after the ingest failed; the weights stay as they were"),
            }
        });
    }

    /// Whether a fit on people's feedback scores runs: one kept while
    /// serving, or the one read at start. It outranks a self-calibration
    /// while serving as it does at start
    /// ([`crate::confidence::calibration::configured`]).
    fn feedback_fit_in_use(&self) -> bool {
        let learned = self
            .inner
            .learned
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .is_some();
        learned
            || matches!(
                crate::confidence::calibration::configured(self.config()),
                Ok(Some((crate::confidence::calibration::Source::Feedback, _)))
            )
    }

    /// Runs `work` on a thread named `name` unless the one whose flag
    /// `busy` picks is running (one refit of a kind at a time); the flag is
    /// cleared when it ends, and when the thread cannot start (logged).
    pub(super) fn in_background(
        &self,
        busy: fn(&Grace) -> &AtomicBool,
        name: &str,
        work: impl FnOnce(&Grace) + Send + 'static,
    ) {
        if busy(self).swap(true, Ordering::AcqRel) {
            return;
        }
        let this = self.clone();
        let spawned = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                work(&this);
                busy(&this).store(false, Ordering::Release);
            });
        if let Err(e) = spawned {
            tracing::warn!(error = %e, thread = name, "cannot start the thread");
            busy(self).store(false, Ordering::Release);
        }
    }
}
