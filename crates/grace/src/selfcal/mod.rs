//! Self-calibration: confidence weights fitted on the knowledge base
//! itself, without a labelled question set (`grace calibrate --self`).
//!
//! GRACE builds its own questions ([`plan`]): from a deterministic sample
//! of the collection's sections, one question each ([`questions`]), asked
//! with the section present (*right* when the answer cites it); the first
//! of them asked again with the section and its near-duplicates withheld
//! from every search by a filter (an in-domain question the collection
//! cannot answer: a neighbour that sounds like the answer); and general
//! questions from GRACE's own list (out-of-domain). The answers' factors
//! and outcomes recalibrate the configured logistic model (Platt scaling,
//! [`fit::recalibrate`]) with the cross-validation of `grace calibrate`;
//! the result, in the same weights, is written to the
//! data folder ([`Config::self_calibration_path`]) and used for that
//! collection from then on ([`crate::confidence::calibration::load`]).
//!
//! It never reads an evaluation set: questions come from the store's own
//! chunks and from the list compiled into the binary.

pub mod examples;
pub mod model_questions;
pub mod questions;
pub mod sections;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;
use sha2::{Digest, Sha256};

use self::questions::Origin;
use self::sections::{Section, read_sections, sample};
use crate::confidence::calibration::{Calibration, FittedOn, SelfFit, Source, VERSION};
use crate::confidence::fit::{self, Fare, Sample, features};
use crate::confidence::{Factors, score};
use crate::config::{ConfidenceModel, SelfCalibrationMode};
use crate::exec::{Executor, RunReport};
use crate::llm::LlmClient;
use crate::rng::Rng;
use crate::store::{QueryVector, StoreQuery};
use crate::tools::Reasoning;
use crate::tools::{RagSearch, ToolRegistry, Withheld};
use crate::{config::Config, error::Result, kb::KnowledgeBase};

/// GRACE's general questions, one per line (`#` comments): the
/// out-of-domain negatives.
const OUT_OF_DOMAIN: &str = include_str!("../../../../config/self-calibration/out-of-domain.txt");

/// Cross-validation folds, as `grace calibrate`.
pub const FOLDS: usize = 5;
/// Nearest chunks looked at for near-duplicates of each withheld chunk.
const NEAR_DUPLICATE_DEPTH: usize = 10;

/// The general questions of `OUT_OF_DOMAIN`.
pub fn out_of_domain_questions() -> Vec<&'static str> {
    OUT_OF_DOMAIN
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect()
}

/// What a self-calibration question is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Kind {
    /// Asked with its section present: right when the answer cites it.
    Answerable,
    /// Asked with its section (and near-duplicates) withheld.
    InDomain,
    /// A general question.
    OutOfDomain,
}

/// One question to ask.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Item {
    /// The question.
    pub question: String,
    /// What it is.
    #[serde(flatten)]
    pub kind: Kind,
    /// The section it was built from (`source`, heading path) and the
    /// near-duplicates that count as it; empty for out-of-domain ones.
    pub gold: Vec<(String, String)>,
    /// Points withheld from every search while it is asked.
    #[serde(skip)]
    pub withheld: Vec<u64>,
    /// How an answerable question was made.
    #[serde(skip)]
    pub origin: Option<Origin>,
}

/// The questions of a self-calibration and what they were built from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plan {
    /// Sections in the collection.
    pub sections: usize,
    /// Sections a question could be asked about (long enough, not "See
    /// also" or "Index").
    pub usable: usize,
    /// The questions, answerable first, then in-domain, then out-of-domain.
    pub items: Vec<Item>,
}

/// What a self-calibration did.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// Fitted and written to `path`.
    Fitted {
        /// The fit.
        calibration: Box<Calibration>,
        /// Where it was written.
        path: PathBuf,
        /// Every question asked, with its outcome and factors.
        asked: Vec<Asked>,
    },
    /// The knowledge base has too few sections: the configured weights stay.
    TooSmall {
        /// Sections a question could be asked about.
        usable: usize,
        /// `confidence.self_calibration.min_sections`.
        min: usize,
    },
}

/// Progress of the questions being asked.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    /// Questions asked so far.
    pub done: usize,
    /// Questions in all.
    pub total: usize,
}

/// The questions a self-calibration of `kb` asks
/// (`confidence.self_calibration`), built by fixed patterns: deterministic
/// for a seed and a collection. The flag is false (and no question
/// planned) when fewer than `min_sections` sections are usable.
pub fn plan(kb: &KnowledgeBase) -> Result<(Plan, bool)> {
    plan_with(kb, None)
}

/// [`plan`], with each answerable question written by `writer` when it is
/// given and its reply is a usable question
/// ([`model_questions::write`]); the pattern-built one otherwise. The
/// sections sampled, and the fallbacks, are those of [`plan`].
pub fn plan_with(kb: &KnowledgeBase, writer: Option<&dyn LlmClient>) -> Result<(Plan, bool)> {
    let sc = &kb.config().confidence.self_calibration;
    let all = read_sections(kb.store())?;
    let usable: Vec<Section> = all
        .iter()
        .filter(|s| {
            s.words >= sections::MIN_WORDS
                && !questions::is_generic(questions::last_heading(&s.section))
        })
        .cloned()
        .collect();
    let mut plan = Plan {
        sections: all.len(),
        usable: usable.len(),
        items: Vec::new(),
    };
    if usable.len() < sc.min_sections {
        return Ok((plan, false));
    }
    let mut rng = Rng::new(sc.seed);
    let picked = sample(&usable, sc.questions, &mut rng);
    let mut answerable = Vec::new();
    for &i in &picked {
        let s = &usable[i];
        let heading = questions::last_heading(&s.section);
        // A question heading is the question; otherwise the heading's
        // pattern or the text's words, half and half.
        let built = match questions::from_heading(&s.section) {
            Some((q, Origin::HeadingQuestion)) => Some((q, Origin::HeadingQuestion)),
            from_heading => {
                let text = questions::from_text(&s.text, heading, &mut rng);
                if rng.below(2) == 0 {
                    from_heading.or(text)
                } else {
                    text.or(from_heading)
                }
            }
        };
        // The pattern question is built even when the model writes one:
        // it draws from `rng`, so the sections after it, and every
        // fallback, are those of `plan`.
        let written = match writer {
            Some(llm) => model_questions::write(llm, &s.section, &s.text)?,
            None => None,
        };
        match (written, built) {
            (Some(question), _) => answerable.push((question, Origin::Model, s)),
            (None, Some((question, origin))) => answerable.push((question, origin, s)),
            (None, None) => {}
        }
    }
    let share = sc.answerable_share;
    let negatives = (answerable.len() as f64 * (1.0 - share) / share).round() as usize;
    let in_domain = (negatives / 2).min(answerable.len());
    let mut general = out_of_domain_questions();
    rng.shuffle(&mut general);
    general.truncate(negatives - in_domain);

    let mut withheld_of = Vec::with_capacity(answerable.len());
    for (_, _, s) in &answerable {
        withheld_of.push(near_duplicates(kb, s)?);
    }
    for ((question, origin, _), (_, gold)) in answerable.iter().zip(&withheld_of) {
        plan.items.push(Item {
            question: question.clone(),
            kind: Kind::Answerable,
            gold: gold.clone(),
            withheld: Vec::new(),
            origin: Some(*origin),
        });
    }
    for ((question, _, _), (ids, gold)) in answerable.iter().zip(&withheld_of).take(in_domain) {
        plan.items.push(Item {
            question: question.clone(),
            kind: Kind::InDomain,
            gold: gold.clone(),
            withheld: ids.clone(),
            origin: None,
        });
    }
    for question in general {
        plan.items.push(Item {
            question: question.to_string(),
            kind: Kind::OutOfDomain,
            gold: Vec::new(),
            withheld: Vec::new(),
            origin: None,
        });
    }
    Ok((plan, true))
}

/// A section's withheld points, and the sections (`source`, heading path)
/// they belong to.
type Withholding = (Vec<u64>, Vec<(String, String)>);

/// The points to withhold for `section` (its own and every chunk at least
/// `near_duplicate` similar to one of them), and the sections those belong
/// to (the section first).
fn near_duplicates(kb: &KnowledgeBase, section: &Section) -> Result<Withholding> {
    let threshold = kb.config().confidence.self_calibration.near_duplicate as f32;
    let similarity = kb.embedder().similarity_scale().passage;
    let mut ids: BTreeSet<u64> = section.ids.iter().copied().collect();
    let mut gold = vec![(section.source.clone(), section.section.clone())];
    for point in kb.store().retrieve(&section.ids)? {
        let hits = kb.store().search(&StoreQuery {
            with_payload: true,
            ..StoreQuery::ranking(QueryVector::Dense(&point.dense), NEAR_DUPLICATE_DEPTH)
        })?;
        for hit in hits
            .into_iter()
            .filter(|h| similarity.apply(h.score) >= threshold)
        {
            if ids.insert(hit.id)
                && let Some(p) = hit.payload
                && !gold.iter().any(|(s, h)| *s == p.source && *h == p.section)
            {
                gold.push((p.source, p.section));
            }
        }
    }
    Ok((ids.into_iter().collect(), gold))
}

/// Whether the run answered citing one of `gold`'s sections.
fn cites(run: &RunReport, gold: &[(String, String)]) -> bool {
    run.answer.as_ref().is_some_and(|a| {
        !a.abstained
            && a.citations.iter().any(|c| {
                gold.iter().any(|(source, section)| {
                    c.source.as_deref() == Some(source.as_str())
                        && c.section.as_deref().is_none_or(|h| h == section)
                })
            })
    })
}

/// One asked question: its factors and whether the answer was right.
#[derive(Debug, Clone, Serialize)]
pub struct Asked {
    /// The question.
    pub question: String,
    /// What it was.
    #[serde(flatten)]
    pub kind: Kind,
    /// Whether the answer was right (answerable, citing its section).
    pub right: bool,
    /// The final answer's factors (empty when no answer step finished).
    pub factors: Factors,
    /// Its score under the configured weights.
    pub configured: f64,
    /// The question's features (of the factors).
    #[serde(skip)]
    pub sample: Sample,
}

/// Asks the plan's questions over `kb` with the configured weights (never
/// an earlier fit, so that the same seed gives the same file), reporting
/// progress after each.
pub fn ask(
    kb: &Arc<KnowledgeBase>,
    plan: &Plan,
    on_progress: &mut dyn FnMut(Progress),
) -> Result<Vec<Asked>> {
    let mut config: Config = kb.config().clone();
    config.confidence.calibration = None;
    config.confidence.model = ConfidenceModel::Logistic;
    let scorer = crate::confidence::Scorer::configured(&config.confidence);
    let generator = if config.tools.enabled.iter().any(|n| n == Reasoning::NAME) {
        Some(crate::llm::from_config(&config.llm, kb.embedder_handle())?)
    } else {
        None
    };
    // The built-in tools only: no web tools, other servers or statistics.
    let registry = ToolRegistry::builtins(&config, kb.clone(), generator)?;
    let withheld = Withheld::default();
    let limit = config.tools.rag_search.limit;
    if config.tools.enabled.iter().any(|n| n == RagSearch::NAME) {
        registry.replace(
            Arc::new(RagSearch::withholding(kb.clone(), limit, withheld.clone())),
            config.tools.rag_search.policy(),
            config.tools.rag_search.callers,
        )?;
    }
    let executor = Executor::new(&registry, &config, &scorer, limit);
    let total = plan.items.len();
    let mut out: Vec<Option<Asked>> = vec![None; total];
    for (done, index) in asking_order(plan).into_iter().enumerate() {
        let item = &plan.items[index];
        withheld.set(item.withheld.clone());
        let run = executor.ask(&item.question, &mut |_| {})?;
        let right = item.kind == Kind::Answerable && cites(&run, &item.gold);
        let factors = run.answer_factors().cloned().unwrap_or_default();
        let configured = if factors.0.is_empty() {
            0.0
        } else {
            score(&factors, &config.confidence.weights).score
        };
        out[index] = Some(Asked {
            question: item.question.clone(),
            kind: item.kind.clone(),
            right,
            sample: Sample {
                x: features(&factors),
                y: right,
            },
            factors,
            configured,
        });
        on_progress(Progress {
            done: done + 1,
            total,
        });
    }
    withheld.set(Vec::new());
    Ok(out.into_iter().flatten().collect())
}

/// The order the plan's items are asked in: each withheld question right
/// after its answerable twin, so that the sentences of the passages they
/// share are still in the embedder's cache (the vectors, and so the
/// answers, are the same in any order; only the time differs), then the
/// general questions.
fn asking_order(plan: &Plan) -> Vec<usize> {
    let of = |kind: Kind| -> Vec<usize> {
        (0..plan.items.len())
            .filter(|&i| plan.items[i].kind == kind)
            .collect()
    };
    let answerable = of(Kind::Answerable);
    let mut twins = of(Kind::InDomain).into_iter();
    let mut order = Vec::with_capacity(plan.items.len());
    for a in answerable {
        order.push(a);
        // The withheld questions are the first answerable ones again, in order.
        if let Some(w) = twins.next() {
            order.push(w);
        }
    }
    order.extend(twins);
    order.extend(of(Kind::OutOfDomain));
    order
}

/// Self-calibrates `kb`: plans, asks, fits and writes the file
/// (`Config::self_calibration_path`), or says the knowledge base is too
/// small. Runs whatever `confidence.self_calibration.mode` says: the
/// mode only decides whether the fit is used and refitted on its own.
pub fn self_calibrate(
    kb: &Arc<KnowledgeBase>,
    on_progress: &mut dyn FnMut(Progress),
) -> Result<Outcome> {
    let started = Instant::now();
    let sc = kb.config().confidence.self_calibration.clone();
    let writer = if sc.model_questions {
        Some(crate::llm::from_config(
            &kb.config().llm,
            kb.embedder_handle(),
        )?)
    } else {
        None
    };
    let (plan, enough) = plan_with(kb, writer.as_deref())?;
    if !enough {
        return Ok(Outcome::TooSmall {
            usable: plan.usable,
            min: sc.min_sections,
        });
    }
    let asked = ask(kb, &plan, on_progress)?;
    let samples: Vec<Sample> = asked.iter().map(|a| a.sample.clone()).collect();
    // Recalibrated, not refitted: a full fit to questions built from the
    // sections' own words learns their quirks (every word of such a
    // question is in its section) and ranked the answers to people's
    // questions worse (the book, "Self-calibration").
    let (weights, cv) = fit::recalibrate(&samples, &kb.config().confidence.weights, FOLDS);
    let pairs = |scores: &mut dyn Iterator<Item = f64>| -> Vec<(f64, bool)> {
        scores.zip(&samples).map(|(p, s)| (p, s.y)).collect()
    };
    let count = |kind: Kind| plan.items.iter().filter(|i| i.kind == kind).count();
    let origin = |o: Origin| plan.items.iter().filter(|i| i.origin == Some(o)).count();
    let mut digest = Sha256::new();
    for item in &plan.items {
        digest.update(item.question.as_bytes());
        digest.update([0]);
    }
    let config = kb.config();
    let calibration = Calibration {
        version: VERSION,
        created: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        fitted_on: FittedOn {
            set: PathBuf::from("self-calibration"),
            questions: plan.items.len(),
            questions_sha256: crate::durable::hex(&digest.finalize()),
            collection: config.collection.name.clone(),
            embedding_model: kb.embedder().model_id().to_string(),
            generator: config.llm.provider.as_str().to_string(),
            sources: kb.source_hashes()?,
        },
        weights,
        l2: cv.l2,
        folds: cv.k,
        fold_figures: cv.folds,
        cross_validated: Fare::of(&pairs(&mut cv.out_of_fold.iter().copied())),
        hand_set: Fare::of(&pairs(&mut asked.iter().map(|a| a.configured))),
        self_calibration: Some(SelfFit {
            sections: plan.sections,
            answerable: count(Kind::Answerable),
            from_heading_question: origin(Origin::HeadingQuestion),
            from_heading: origin(Origin::Heading),
            from_text: origin(Origin::Text),
            from_model: origin(Origin::Model),
            in_domain: count(Kind::InDomain),
            out_of_domain: count(Kind::OutOfDomain),
            seed: sc.seed,
            seconds: started.elapsed().as_secs_f64(),
        }),
    };
    let path = calibration.store(config, Source::SelfFit)?;
    Ok(Outcome::Fitted {
        calibration: Box::new(calibration),
        path,
        asked,
    })
}

/// How far the knowledge base is from its self-calibration: the share of
/// documents added, changed or removed since (1 without a fit, with a
/// broken one, or with one made for another embedding model or generator).
pub fn staleness(kb: &KnowledgeBase) -> Result<f64> {
    let Ok(Some(calibration)) = Calibration::stored(kb.config(), Source::SelfFit) else {
        return Ok(1.0);
    };
    let on = &calibration.fitted_on;
    if on.embedding_model != kb.embedder().model_id()
        || on.generator != kb.config().llm.provider.as_str()
    {
        return Ok(1.0);
    }
    let sources: BTreeSet<String> = kb.source_hashes()?.into_iter().collect();
    Ok(calibration.changed_share(&sources))
}

/// After an ingest, with `confidence.self_calibration.mode: auto` and no
/// labelled calibration configured: fits again when more than
/// `refit_share` of the documents changed since the last fit. `None` when
/// no fit was due.
pub fn after_ingest(
    kb: &Arc<KnowledgeBase>,
    on_progress: &mut dyn FnMut(Progress),
) -> Result<Option<Outcome>> {
    if !changed_enough(kb)? {
        return Ok(None);
    }
    self_calibrate(kb, on_progress).map(Some)
}

/// `auto`, no labelled calibration, and more than `refit_share` of the
/// documents changed since the fit.
fn changed_enough(kb: &KnowledgeBase) -> Result<bool> {
    let config = kb.config();
    let sc = &config.confidence.self_calibration;
    if sc.mode == SelfCalibrationMode::Off || config.confidence.calibration.is_some() {
        return Ok(false);
    }
    Ok(staleness(kb)? > sc.refit_share)
}

/// Whether [`after_ingest`] would fit, cheaply: it changed enough, and it
/// has at least `min_sections` chunks (a section has one or more). A
/// service checks this before starting a fit on a thread of its own.
pub fn due(kb: &KnowledgeBase) -> Result<bool> {
    let min = kb.config().confidence.self_calibration.min_sections;
    Ok(changed_enough(kb)? && kb.store().count(None)? >= min)
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    fn item(question: &str, kind: Kind) -> Item {
        Item {
            question: question.into(),
            kind,
            gold: Vec::new(),
            withheld: Vec::new(),
            origin: None,
        }
    }

    #[test]
    fn each_withheld_question_is_asked_right_after_its_twin_and_every_item_once() {
        let items = vec![
            item("a", Kind::Answerable),
            item("b", Kind::Answerable),
            item("c", Kind::Answerable),
            item("a", Kind::InDomain),
            item("b", Kind::InDomain),
            item("x", Kind::OutOfDomain),
            item("y", Kind::OutOfDomain),
        ];
        let plan = Plan {
            sections: 3,
            usable: 3,
            items,
        };
        let order = asking_order(&plan);
        assert_eq!(order, vec![0, 3, 1, 4, 2, 5, 6]);
        for pair in order.windows(2) {
            if plan.items[pair[1]].kind == Kind::InDomain {
                assert_eq!(plan.items[pair[0]].question, plan.items[pair[1]].question);
                assert_eq!(plan.items[pair[0]].kind, Kind::Answerable);
            }
        }
    }

    #[test]
    fn the_general_questions_are_many_varied_and_bounded() {
        let list = out_of_domain_questions();
        assert!(list.len() >= 300, "{}", list.len());
        let distinct: HashSet<String> = list.iter().map(|q| q.to_lowercase()).collect();
        assert_eq!(distinct.len(), list.len(), "no question twice");
        assert!(list.iter().all(|q| q.chars().count() <= 200));
        let other_scripts = list.iter().filter(|q| !q.is_ascii()).count();
        assert!(
            other_scripts >= 20,
            "some in other languages: {other_scripts}"
        );
    }
}
