//! The calibration file `grace calibrate` writes and `confidence.calibration`
//! points at: fitted weights, what they were fitted on, and how they fared
//! under cross-validation.
//!
//! Fitted weights describe one knowledge base, one embedding model and one
//! generator. [`Calibration::mismatch`] says when they are applied to
//! another, so that GRACE warns instead of silently reporting numbers that
//! no longer mean what they say.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::fit::Fare;
use crate::config::{Config, ConfigError, FeedbackCalibrationMode, SelfCalibrationMode, Weights};
use crate::state::{Document, DocumentError, Documents, Scope};

/// Reads the calibration that applies to the configured collection, whose
/// weights steps are scored with ([`super::Scorer::new`]). The
/// configuration is only read: the knowledge base holds the scorer made
/// from it.
///
/// The file `confidence.calibration` names wins; a missing or broken one
/// is an error naming the key. Else, with `confidence.feedback_calibration:
/// auto`, the fit on people's feedback if one was kept (a broken one logs a
/// warning and is passed over). Else, with `confidence.self_calibration.mode:
/// auto`, the collection's self-calibration if it has one; a broken one
/// logs a warning and the configured weights stay. Else none.
pub fn load(config: &Config) -> Result<Option<Calibration>, ConfigError> {
    let calibration = match configured(config) {
        Ok(c) => c,
        Err(Configured::Labelled(e)) => {
            return Err(ConfigError::Invalid {
                key: "confidence.calibration".into(),
                message: e.to_string(),
                file: None,
                line: None,
            });
        }
        Err(Configured::SelfFit(e)) => {
            tracing::warn!("{e}; scoring with confidence.weights until it is fitted again");
            None
        }
    };
    Ok(calibration.map(|(_, c)| c))
}

/// Which calibration scores runs (see [`load`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The file `confidence.calibration` names.
    Labelled,
    /// The fit on people's feedback (`confidence.feedback_calibration`).
    Feedback,
    /// The collection's self-calibration.
    SelfFit,
}

impl Source {
    /// As `grace status` names it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Labelled => "labelled",
            Self::Feedback => "feedback",
            Self::SelfFit => "self",
        }
    }

    /// The file a calibration from here is read from on this machine.
    pub fn file(self, config: &Config) -> PathBuf {
        match self {
            Self::Labelled => config.confidence.calibration.clone().unwrap_or_default(),
            Self::Feedback => config.feedback_calibration_path(),
            Self::SelfFit => config.self_calibration_path(),
        }
    }

    /// Where a fit GRACE made itself is kept (its file, or PostgreSQL's
    /// row every server reads); `None` for the labelled file, which the
    /// configuration names.
    fn document(self, config: &Config) -> Option<(Scope, Document)> {
        let (scope, name) = match self {
            Self::Labelled => return None,
            Self::Feedback => (Scope::KnowledgeBase, "feedback-calibration".to_string()),
            Self::SelfFit => (
                Scope::Collection,
                format!("self-calibration/{}", config.collection.name),
            ),
        };
        Some((
            scope,
            Document {
                name,
                file: self.file(config),
            },
        ))
    }
}

/// Why no calibration could be read: the labelled file
/// (`confidence.calibration`) or the collection's self-calibration.
#[derive(Debug)]
pub enum Configured {
    /// The file `confidence.calibration` names.
    Labelled(CalibrationError),
    /// The collection's self-calibration file.
    SelfFit(CalibrationError),
}

/// The calibration that applies to the configured collection (see
/// [`load`]) and where it comes from.
pub fn configured(config: &Config) -> Result<Option<(Source, Calibration)>, Configured> {
    if let Some(path) = &config.confidence.calibration {
        return Calibration::load(path)
            .map(|c| Some((Source::Labelled, c)))
            .map_err(Configured::Labelled);
    }
    if config.confidence.feedback_calibration == FeedbackCalibrationMode::Auto {
        match Calibration::stored(config, Source::Feedback) {
            Ok(Some(c)) => return Ok(Some((Source::Feedback, c))),
            Ok(None) => {}
            Err(e) => {
                tracing::warn!("{e}; scoring without the fit on feedback until it is fitted again")
            }
        }
    }
    if config.confidence.self_calibration.mode == SelfCalibrationMode::Off {
        return Ok(None);
    }
    Calibration::stored(config, Source::SelfFit)
        .map(|c| c.map(|c| (Source::SelfFit, c)))
        .map_err(Configured::SelfFit)
}

/// Version of the file format.
pub const VERSION: u32 = 1;

/// Fitted confidence weights and their provenance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// File format version ([`VERSION`]).
    pub version: u32,
    /// When it was fitted (RFC 3339).
    pub created: String,
    /// What it was fitted on.
    pub fitted_on: FittedOn,
    /// The fitted bias and weights; they replace `confidence.weights`.
    pub weights: Weights,
    /// The L2 strength cross-validation chose.
    pub l2: f64,
    /// Number of cross-validation folds.
    pub folds: usize,
    /// Each fold's held-out figures.
    pub fold_figures: Vec<Fare>,
    /// All questions scored out of fold (what to expect on new questions).
    pub cross_validated: Fare,
    /// The configured weights (`confidence.weights`) on the same
    /// questions, for comparison.
    pub hand_set: Fare,
    /// How the questions were made, for a self-calibration (`None`: a
    /// labelled question set, `grace calibrate DIR`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub self_calibration: Option<SelfFit>,
}

/// The questions a self-calibration built from the knowledge base.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct SelfFit {
    /// Sections in the knowledge base (source and heading path).
    pub sections: usize,
    /// Answerable questions asked (one per sampled section).
    pub answerable: usize,
    /// Of them, how many questions were the section's own heading, or
    /// made from the heading, or from the section's first sentences.
    pub from_heading_question: usize,
    /// Made from the heading by a fixed pattern.
    pub from_heading: usize,
    /// Made from the section's first sentences.
    pub from_text: usize,
    /// Written by the language model (`model_questions`; 0 in files
    /// written before it existed).
    #[serde(default)]
    pub from_model: usize,
    /// The same questions asked with their section withheld.
    pub in_domain: usize,
    /// General questions from GRACE's own list.
    pub out_of_domain: usize,
    /// The sampling seed.
    pub seed: u64,
    /// Seconds the questions and the fit took.
    pub seconds: f64,
}

/// What a calibration was fitted on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FittedOn {
    /// The evaluation set's folder.
    pub set: PathBuf,
    /// Questions in it.
    pub questions: usize,
    /// SHA-256 of its `questions.jsonl`: the same set is recognised, and
    /// scored out of fold rather than with weights fitted on it.
    pub questions_sha256: String,
    /// The collection name.
    pub collection: String,
    /// The embedding model's id.
    pub embedding_model: String,
    /// The generator (`llm.provider`).
    pub generator: String,
    /// Content hashes of the corpus's documents, sorted.
    pub sources: Vec<String>,
}

/// What can go wrong with a calibration file.
#[derive(Debug, thiserror::Error)]
pub enum CalibrationError {
    /// The file could not be read or written.
    #[error("cannot {action} calibration file {path}: {source}")]
    Io {
        /// `read` or `write`.
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The file is not a calibration.
    #[error(
        "calibration file {path} is not valid: {message} (write a new one with `grace calibrate`)"
    )]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// PostgreSQL, which keeps the fits every server shares, failed.
    #[error(transparent)]
    State(#[from] crate::state::StateError),
}

impl From<DocumentError> for CalibrationError {
    fn from(e: DocumentError) -> Self {
        match e {
            DocumentError::Io {
                action,
                path,
                source,
            } => CalibrationError::Io {
                action,
                path,
                source,
            },
            DocumentError::State(e) => CalibrationError::State(e),
        }
    }
}

impl Calibration {
    /// Reads and checks a calibration file.
    pub fn load(path: &Path) -> Result<Self, CalibrationError> {
        let text = std::fs::read(path).map_err(|source| CalibrationError::Io {
            action: "read",
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(&text, path)
    }

    /// The fit GRACE keeps for `source` (on feedback, or the collection's
    /// self-calibration): its file, or the row every server reads with
    /// `storage.state: postgres`; `None` when there is none (and for the
    /// labelled file, which [`load`](Self::load) reads).
    pub fn stored(config: &Config, source: Source) -> Result<Option<Self>, CalibrationError> {
        let Some((scope, doc)) = source.document(config) else {
            return Ok(None);
        };
        let docs = Documents::open(config, scope)?;
        match docs.read(&doc)? {
            Some(bytes) => Self::parse(&bytes, Path::new(&docs.place(&doc))).map(Some),
            None => Ok(None),
        }
    }

    /// Keeps this fit as `source`'s ([`stored`](Self::stored) reads it);
    /// where it went, for messages.
    pub fn store(&self, config: &Config, source: Source) -> Result<PathBuf, CalibrationError> {
        let Some((scope, doc)) = source.document(config) else {
            let path = source.file(config);
            self.save(&path)?;
            return Ok(path);
        };
        let docs = Documents::open(config, scope)?;
        let text = serde_json::to_string_pretty(self).map_err(|e| CalibrationError::Invalid {
            path: doc.file.clone(),
            message: e.to_string(),
        })?;
        docs.write(&doc, (text + "\n").as_bytes())?;
        Ok(PathBuf::from(docs.place(&doc)))
    }

    /// The calibration in `bytes`, read from `path` (named in errors).
    fn parse(bytes: &[u8], path: &Path) -> Result<Self, CalibrationError> {
        let invalid = |message: String| CalibrationError::Invalid {
            path: path.to_path_buf(),
            message,
        };
        let calibration: Calibration =
            serde_json::from_slice(bytes).map_err(|e| invalid(e.to_string()))?;
        if calibration.version != VERSION {
            return Err(invalid(format!(
                "version {} (this GRACE reads version {VERSION})",
                calibration.version
            )));
        }
        let w = &calibration.weights;
        let finite =
            super::Factor::ALL.iter().all(|f| f.weight(w).is_finite()) && w.bias.is_finite();
        if !finite {
            return Err(invalid("a weight is not a finite number".into()));
        }
        Ok(calibration)
    }

    /// Writes it as pretty JSON ([`crate::durable::replace_file`]: a
    /// crash leaves the old file or the whole new one).
    pub fn save(&self, path: &Path) -> Result<(), CalibrationError> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|source| CalibrationError::Io {
                action: "create",
                path: parent.to_path_buf(),
                source,
            })?;
        }
        let text = serde_json::to_string_pretty(self).map_err(|e| CalibrationError::Invalid {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        crate::durable::replace_file(
            path,
            &path.with_extension("json.tmp"),
            (text + "\n").as_bytes(),
        )
        .map_err(|e| CalibrationError::Io {
            action: e.action,
            path: e.path,
            source: e.source,
        })
    }

    /// Share of documents added, changed or removed since the fit: of the
    /// documents in either the fit or `sources` (content hashes), those in
    /// only one of them. 0 when both are empty.
    pub fn changed_share(&self, sources: &BTreeSet<String>) -> f64 {
        let fitted: BTreeSet<&String> = self.fitted_on.sources.iter().collect();
        let now: BTreeSet<&String> = sources.iter().collect();
        let union = fitted.union(&now).count();
        if union == 0 {
            return 0.0;
        }
        fitted.symmetric_difference(&now).count() as f64 / union as f64
    }

    /// Why these weights may not fit a knowledge base with this collection,
    /// model, generator and document content hashes; `None` when they do.
    /// Documents may be added or changed: it speaks up when fewer than half
    /// of the knowledge base's documents were among those fitted on.
    pub fn mismatch(
        &self,
        collection: &str,
        embedding_model: &str,
        generator: &str,
        sources: &BTreeSet<String>,
    ) -> Option<String> {
        let on = &self.fitted_on;
        let mut reasons = Vec::new();
        if on.collection != collection {
            reasons.push(format!(
                "collection `{}`, not `{collection}`",
                on.collection
            ));
        }
        if on.embedding_model != embedding_model {
            reasons.push(format!(
                "embedding model `{}`, not `{embedding_model}`",
                on.embedding_model
            ));
        }
        if on.generator != generator {
            reasons.push(format!("generator `{}`, not `{generator}`", on.generator));
        }
        if !sources.is_empty() {
            let fitted: BTreeSet<&String> = on.sources.iter().collect();
            let shared = sources.iter().filter(|s| fitted.contains(s)).count();
            if shared * 2 < sources.len() {
                reasons.push(format!(
                    "{} documents, of which {shared} of this knowledge base's {}",
                    on.sources.len(),
                    sources.len()
                ));
            }
        }
        (!reasons.is_empty()).then(|| {
            if self.self_calibration.is_some() {
                format!(
                    "the knowledge base's self-calibration was fitted on {}: its scores may not mean what they say now; run `grace calibrate --self`",
                    reasons.join(", ")
                )
            } else {
                format!(
                    "the confidence calibration was fitted on {} ({}): its scores may not mean what they say here; run `grace calibrate` on questions about this knowledge base",
                    on.set.display(),
                    reasons.join(", ")
                )
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calibration() -> Calibration {
        let fare = Fare::of(&[(0.9, true), (0.2, false)]);
        Calibration {
            version: VERSION,
            created: "2026-11-23T00:00:00Z".into(),
            fitted_on: FittedOn {
                set: PathBuf::from("eval/faq"),
                questions: 2,
                questions_sha256: "abc".into(),
                collection: "grace".into(),
                embedding_model: "minilm".into(),
                generator: "extractive".into(),
                sources: vec!["h1".into(), "h2".into(), "h3".into()],
            },
            weights: Weights {
                bias: -3.0,
                ..Weights::default()
            },
            l2: 0.1,
            folds: 5,
            fold_figures: vec![fare.clone()],
            cross_validated: fare.clone(),
            hand_set: fare,
            self_calibration: None,
        }
    }

    fn set(items: &[&str]) -> BTreeSet<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn round_trips_through_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/calibration.json");
        calibration().save(&path).unwrap();
        assert_eq!(Calibration::load(&path).unwrap(), calibration());
    }

    #[test]
    fn a_broken_file_names_itself_and_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.json");
        std::fs::write(&path, "{\"version\": 1}").unwrap();
        let err = Calibration::load(&path).unwrap_err().to_string();
        assert!(
            err.contains("c.json") && err.contains("grace calibrate"),
            "{err}"
        );
        let mut future = calibration();
        future.version = 99;
        future.save(&path).unwrap();
        assert!(
            Calibration::load(&path)
                .unwrap_err()
                .to_string()
                .contains("version 99")
        );
    }

    #[test]
    fn changed_share_counts_documents_in_only_one_side() {
        let c = calibration();
        assert_eq!(c.changed_share(&set(&["h1", "h2", "h3"])), 0.0);
        // h3 changed into h4: two of four documents differ.
        assert_eq!(c.changed_share(&set(&["h1", "h2", "h4"])), 0.5);
        assert_eq!(c.changed_share(&set(&[])), 1.0);
    }

    #[test]
    fn speaks_up_when_applied_to_another_knowledge_base() {
        let c = calibration();
        let same = set(&["h1", "h2", "h3"]);
        assert_eq!(c.mismatch("grace", "minilm", "extractive", &same), None);
        // A document added is fine; mostly other documents are not.
        assert_eq!(
            c.mismatch("grace", "minilm", "extractive", &set(&["h1", "h2", "h4"])),
            None
        );
        let other = c
            .mismatch("grace", "minilm", "extractive", &set(&["x", "y", "h1"]))
            .unwrap();
        assert!(
            other.contains("eval/faq") && other.contains("1 of this"),
            "{other}"
        );
        let model = c.mismatch("grace", "bge", "extractive", &same).unwrap();
        assert!(model.contains("embedding model"), "{model}");
        let collection = c.mismatch("docs", "minilm", "gemini", &same).unwrap();
        assert!(collection.contains("collection") && collection.contains("generator"));
    }
}
