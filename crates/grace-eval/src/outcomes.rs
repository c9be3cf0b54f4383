//! Asking every question of a set: its corpus ingested into a temporary
//! store, one [`Outcome`] per question, and whether a run found and cited
//! a gold source.

use std::path::{Path, PathBuf};
use std::time::Instant;

use sha2::{Digest, Sha256};

use super::answer_text::{AnswerText, measure};
use super::set::{EvalError, Question, is_gold, parse_questions, read};
use super::temp::{TempCollection, TempDir};
use grace::Result;
use grace::confidence::calibration::Calibration;
use grace::confidence::{Factor, Factors};
use grace::config::Config;
use grace::embed::Embedder;
use grace::exec::{Decision, Executor, RunReport, StepRecord};
use grace::ingest::IngestOptions;
use grace::search::Passage;
use grace::tools::RagSearch;
use grace::tools::{ToolOutput, ToolRegistry};
use grace::{KnowledgeBase, OpenMode};

/// One question's outcome: what the evaluation scores and calibration fits.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The question's index in the set.
    pub index: usize,
    /// Whether GRACE answered (decision `answer` or `caveat`).
    pub answered: bool,
    /// What the run decided.
    pub decision: Decision,
    /// What the answer (or the escalation's draft) is made of, for an
    /// answerable question the run did not abstain on.
    pub answer_text: Option<AnswerText>,
    /// Answerable, and the answer cites a gold source.
    pub right: bool,
    /// The run's confidence.
    pub confidence: f64,
    /// The factors the final answer was scored on (empty when no answer step
    /// finished).
    pub factors: Factors,
    /// The top-1 passage's cosine similarity (-1 without passages).
    pub top1: f64,
    /// The reader's best probability over the first search's passages,
    /// when it read them (as a signal, a question without one counts 0).
    pub reader_top: Option<f64>,
    /// A gold source ranked first / in the top `k` of the first search.
    pub gold_at_1: bool,
    /// A gold source in the top `k` of the first search.
    pub gold_at_k: bool,
    /// The same for the dense ranking alone (no lexical side, no pinning),
    /// the baseline GRACE's ranking is measured against.
    pub dense_gold_at_1: bool,
    /// A gold source in the dense ranking's top `k`.
    pub dense_gold_at_k: bool,
    /// The whole `ask`, milliseconds.
    pub latency_ms: f64,
}

/// Every question of a set asked, with what it ran on.
#[derive(Debug, Clone)]
pub struct Collected {
    /// The set's folder.
    pub set: PathBuf,
    /// The questions, in file order.
    pub questions: Vec<Question>,
    /// One outcome per question, in the same order.
    pub outcomes: Vec<Outcome>,
    /// SHA-256 of `questions.jsonl` (hex).
    pub questions_sha256: String,
    /// Chunks ingested from the corpus.
    pub chunks: usize,
    /// The vector store the corpus was ingested into.
    pub backend: &'static str,
    /// Content hashes of the corpus's documents, sorted.
    pub sources: Vec<String>,
    /// The embedding model's id.
    pub embedding_model: String,
    /// The self-calibration the questions were asked with
    /// (`grace eval --self-calibrate`).
    pub self_fit: Option<Calibration>,
    /// The document boost's effect on the ranking, when asked for
    /// (`grace eval --feedback N --document-boost B`).
    pub document_boost: Option<super::boost_probe::BoostProbe>,
    /// The documents each question's answer (or draft) cites, in order.
    pub cited: Vec<Vec<String>>,
    /// Each question's unit embedding, in order, when ratings are
    /// simulated (`grace eval --feedback N`; empty otherwise).
    pub vectors: Vec<Vec<f32>>,
}

/// Ingests the corpus of the set in `dir` into a temporary store (removed
/// afterwards; always the embedded store, never a configured server) and
/// asks every question as `grace ask --json` would.
pub fn collect(
    config: &Config,
    embedder: std::sync::Arc<dyn Embedder>,
    dir: &Path,
    k: usize,
) -> Result<Collected> {
    collect_with(config, embedder, dir, k, false, None)
}

/// [`collect`], with `self_calibrate`: after the ingest, the collection is
/// self-calibrated ([`grace::selfcal`], which never reads the questions)
/// and the questions are asked with the fitted weights.
pub fn collect_with(
    config: &Config,
    embedder: std::sync::Arc<dyn Embedder>,
    dir: &Path,
    k: usize,
    self_calibrate: bool,
    feedback: Option<&super::FeedbackSim>,
) -> Result<Collected> {
    let corpus = dir.join("corpus");
    let questions_path = dir.join("questions.jsonl");
    if !corpus.is_dir() {
        return Err(EvalError::NotASet {
            path: dir.to_path_buf(),
            what: "corpus/",
        }
        .into());
    }
    if !questions_path.is_file() {
        return Err(EvalError::NotASet {
            path: dir.to_path_buf(),
            what: "questions.jsonl",
        }
        .into());
    }
    // Read once: parsed for the questions, hashed to recognise the set.
    let bytes = read(&questions_path)?;
    let questions = parse_questions(&questions_path, &bytes)?;
    let questions_sha256 = grace::durable::hex(&Sha256::digest(&bytes));

    let temp = TempDir::new()?;
    let mut config = config.clone();
    config.storage.data_dir = temp.0.clone();
    // The evaluation corpus must never be written into the configured
    // collection: on a Qdrant server it gets a collection of its own,
    // deleted afterwards; in the embedded store it lives in `temp`.
    let _server_collection = TempCollection::on_server(&mut config);
    let backend = config.storage.backend.as_str();
    let embedding_model = embedder.model_id().to_string();
    let kb = KnowledgeBase::with_embedder(config, embedder, OpenMode::Create)?;
    let ingest = kb.ingest(&[corpus], &IngestOptions::default(), &mut |_| {})?;
    let sources = kb.source_hashes()?;

    let kb = std::sync::Arc::new(kb);
    let mut scorer = kb.scorer().clone();
    let mut self_fit = None;
    if self_calibrate {
        match grace::selfcal::self_calibrate(&kb, &mut |_| {})? {
            grace::selfcal::Outcome::Fitted { calibration, .. } => {
                scorer = scorer.with_weights(calibration.weights);
                self_fit = Some(*calibration);
            }
            grace::selfcal::Outcome::TooSmall { usable, min } => tracing::warn!(
                "the corpus is too small to self-calibrate ({usable} sections, fewer than {min}): asked with the configured weights"
            ),
        }
    }
    let registry = ToolRegistry::from_config(kb.config(), kb.clone())?;
    let executor = Executor::new(&registry, kb.config(), &scorer, k);
    let mut outcomes = Vec::with_capacity(questions.len());
    // The documents each answer cites, for the document boost's probe.
    let mut cited = Vec::with_capacity(questions.len());
    for (index, q) in questions.iter().enumerate() {
        let started = Instant::now();
        let run = executor.ask(&q.question, &mut |_| {})?;
        cited.push(run.cited_sources());
        let latency_ms = started.elapsed().as_secs_f64() * 1000.0;

        let is_gold = |source: &str| is_gold(q, source);
        let search = first_search(&run);
        let passages = search_passages(search, k);
        let dense = if q.answerable {
            dense_alone(&kb, &q.question, k)?
        } else {
            Vec::new()
        };
        outcomes.push(Outcome {
            index,
            answered: matches!(run.decision, Decision::Answer | Decision::Caveat),
            decision: run.decision,
            answer_text: run
                .answer
                .as_ref()
                .filter(|_| q.answerable)
                .and_then(|a| measure(q, a)),
            right: q.answerable && gold_cited(q, &run),
            confidence: run.confidence,
            factors: run.answer_factors().cloned().unwrap_or_default(),
            top1: search
                .and_then(|s| s.result.factors.get(Factor::MaxScore))
                .unwrap_or(-1.0),
            reader_top: search.and_then(|s| s.result.factors.get(Factor::Reader)),
            gold_at_1: passages.first().is_some_and(|p| is_gold(&p.source)),
            gold_at_k: passages.iter().any(|p| is_gold(&p.source)),
            dense_gold_at_1: dense.first().is_some_and(|p| is_gold(&p.source)),
            dense_gold_at_k: dense.iter().any(|p| is_gold(&p.source)),
            latency_ms,
        });
    }
    let (document_boost, vectors) = match feedback {
        Some(sim) => {
            let answered_right: Vec<(bool, bool)> =
                outcomes.iter().map(|o| (o.answered, o.right)).collect();
            // As the feedback store keeps them: query embeddings (cached
            // from the runs), unit length.
            let mut vectors = Vec::with_capacity(questions.len());
            for q in &questions {
                let mut v = kb.embedder().embed_query(&q.question)?;
                grace::embed::normalise(&mut v);
                vectors.push(v);
            }
            let probe =
                super::boost_probe::probe(&kb, &questions, &answered_right, &cited, sim, k)?;
            (probe, vectors)
        }
        None => (None, Vec::new()),
    };
    Ok(Collected {
        document_boost,
        cited,
        vectors,
        set: dir.to_path_buf(),
        questions,
        outcomes,
        questions_sha256,
        chunks: ingest.points_total,
        backend,
        sources,
        embedding_model,
        self_fit,
    })
}

/// The dense ranking's first `k` passages for `question` alone: no lexical
/// ranking, no identifier pinning (the question's vector is cached from its
/// run, so this costs one store search).
fn dense_alone(kb: &KnowledgeBase, question: &str, k: usize) -> Result<Vec<Passage>> {
    let dense = grace::config::SearchConfig {
        hybrid: false,
        pin_identifiers: false,
        ..kb.config().search.clone()
    };
    let request = grace::search::SearchRequest {
        query: question,
        limit: k,
        filter: None,
    };
    Ok(grace::search::search(
        kb.store(),
        kb.embedder(),
        kb.lexical(),
        &dense,
        &request,
    )?)
}

/// Whether the run answered (did not abstain) citing a gold source.
pub fn gold_cited(q: &Question, run: &RunReport) -> bool {
    run.answer.as_ref().is_some_and(|a| {
        !a.abstained
            && a.citations
                .iter()
                .any(|c| c.source.as_deref().is_some_and(|s| is_gold(q, s)))
    })
}

/// The run's retrieval: its plan's first search (before any recovery).
pub fn first_search(run: &RunReport) -> Option<&StepRecord> {
    run.steps.iter().find(|s| s.action == RagSearch::NAME)
}

/// The first `k` passages of a search step (a recovery's wider search
/// returns more than the `k` recall counts).
pub fn search_passages(search: Option<&StepRecord>, k: usize) -> &[Passage] {
    match search.map(|s| &s.result.output) {
        Some(ToolOutput::Passages(p)) => &p[..p.len().min(k)],
        _ => &[],
    }
}
