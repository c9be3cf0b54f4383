//! `grace calibrate`: fits the confidence weights to a question set.
//!
//! The questions are asked with the hand-set weights (as [`super::collect`]
//! does for the evaluation); each final answer's factors and whether it was
//! right (answerable and a gold source cited) become a sample; stratified
//! k-fold cross-validation chooses the L2 strength and reports how the
//! fitted weights fare on questions they were not fitted on; the weights
//! fitted on every question are what the file holds.

use std::path::Path;
use std::sync::Arc;

use super::{Collected, collect};
use grace::confidence::calibration::{Calibration, FittedOn, VERSION};
use grace::confidence::fit::{self, Fare, Sample, features};
use grace::config::ConfidenceModel;
use grace::embed::Embedder;
use grace::{Result, config::Config};

/// Asks the set's questions and fits a calibration with `folds`-fold
/// cross-validation (`k` passages per search, as `grace eval`).
pub fn calibrate(
    config: &Config,
    embedder: Arc<dyn Embedder>,
    dir: &Path,
    k: usize,
    folds: usize,
) -> Result<Calibration> {
    let mut config = config.clone();
    // The runs use the hand-set logistic weights, whatever is configured.
    config.confidence.calibration = None;
    config.confidence.model = ConfidenceModel::Logistic;
    let collected = collect(&config, embedder, dir, k)?;
    Ok(fit_collected(&config, &collected, folds))
}

/// Fits a calibration to collected outcomes (see [`calibrate`]).
pub fn fit_collected(config: &Config, collected: &Collected, folds: usize) -> Calibration {
    let samples: Vec<Sample> = collected
        .outcomes
        .iter()
        .map(|o| Sample {
            x: features(&o.factors),
            y: o.right,
        })
        .collect();
    let cv = fit::cross_validate(&samples, folds);
    let model = fit::fit(&samples, cv.l2);
    Calibration {
        version: VERSION,
        created: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        fitted_on: FittedOn {
            set: collected.set.clone(),
            questions: collected.questions.len(),
            questions_sha256: collected.questions_sha256.clone(),
            collection: config.collection.name.clone(),
            embedding_model: collected.embedding_model.clone(),
            generator: config.llm.provider.as_str().to_string(),
            sources: collected.sources.clone(),
        },
        weights: model.weights(),
        l2: cv.l2,
        folds: cv.k,
        fold_figures: cv.folds,
        cross_validated: Fare::of(&fit::scored(&cv.out_of_fold, &samples)),
        // The configured weights' column of the evaluation, on the same outcomes.
        hand_set: super::models(config, collected, None, false)
            .into_iter()
            .find(|m| m.model == "defaults")
            .map(|m| m.fare)
            .unwrap_or_else(|| Fare::of(&[])),
        self_calibration: None,
    }
}
