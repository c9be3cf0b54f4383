//! Evaluation over a question set: a folder with `corpus/` (documents) and
//! `questions.jsonl` (format of `../shared/eval/*/`).
//!
//! [`run`] ingests the corpus into a temporary store, asks every question
//! non-interactively (as `grace ask --json` would) and reports retrieval
//! recall on the answerable ones; how often GRACE answers, and how often
//! what it answers is right (answerable and citing a gold source) or is an
//! answer to an unanswerable question — the worst outcome; how well the
//! run's confidence separates answerable from unanswerable questions
//! (AUROC, overall and in-domain; unanswerable questions that pass the
//! threshold keeping 80% / 90% of answerable ones), next to the top-1
//! cosine baseline; and whether the confidence means what it says (ECE,
//! Brier against "answerable and gold cited").

pub mod metrics;

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::confidence::Factor;
use crate::embed::Embedder;
use crate::exec::{Decision, Executor};
use crate::ingest::IngestOptions;
use crate::tools::{ToolOutput, ToolRegistry};
use crate::{Config, KnowledgeBase, OpenMode, Result};

/// One line of `questions.jsonl`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct Question {
    /// Identifier of the question, unique in the set.
    pub id: String,
    /// The question as asked.
    pub question: String,
    /// Whether the corpus answers it.
    pub answerable: bool,
    /// File names (in `corpus/`) that answer the question.
    #[serde(default)]
    pub gold_sources: Vec<String>,
    /// The reference answer, if the set gives one (not used by the evaluation).
    #[serde(default)]
    pub gold_answer: Option<String>,
    /// `in-corpus`, `held-out-section` or `out-of-domain`.
    #[serde(default)]
    pub kind: String,
    /// Where the question comes from (e.g. a section of the source document);
    /// not used by the evaluation.
    #[serde(default)]
    pub origin: Option<String>,
}

impl Question {
    /// Unanswerable but about the corpus's subject.
    pub fn in_domain(&self) -> bool {
        self.kind != "out-of-domain"
    }
}

/// What went wrong reading an evaluation set.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// The folder lacks `corpus/` or `questions.jsonl`.
    #[error("{path}: not an evaluation set folder ({what} is missing)")]
    NotASet {
        /// The folder given as the set.
        path: PathBuf,
        /// What is missing (`corpus/` or `questions.jsonl`).
        what: &'static str,
    },
    /// A line of `questions.jsonl` is not a valid question.
    #[error("{path}:{line}: {message}")]
    BadQuestion {
        /// The questions file.
        path: PathBuf,
        /// 1-based line of the bad question.
        line: usize,
        /// What is wrong with it.
        message: String,
    },
    /// Reading the set or creating the temporary store folder failed.
    #[error("cannot {action} {path}: {source}")]
    Io {
        /// What was being done (`read`, `create`).
        action: &'static str,
        /// The file or folder it was done to.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

/// Reads `questions.jsonl`; a malformed line is an error naming file and line.
pub fn load_questions(path: &Path) -> std::result::Result<Vec<Question>, EvalError> {
    let text = std::fs::read_to_string(path).map_err(|source| EvalError::Io {
        action: "read",
        path: path.to_path_buf(),
        source,
    })?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let q: Question = serde_json::from_str(line).map_err(|e| EvalError::BadQuestion {
            path: path.to_path_buf(),
            line: i + 1,
            message: e.to_string(),
        })?;
        if q.question.trim().is_empty() {
            return Err(EvalError::BadQuestion {
                path: path.to_path_buf(),
                line: i + 1,
                message: "empty `question`".into(),
            });
        }
        out.push(q);
    }
    Ok(out)
}

/// How well one score separates answerable from unanswerable questions.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Separation {
    /// AUROC over all questions (answerable ones positive); `None` without
    /// both answerable and unanswerable questions.
    pub auroc: Option<f64>,
    /// Answerable vs in-domain unanswerable only.
    pub auroc_in_domain: Option<f64>,
    /// Share of unanswerable questions scoring at or above the threshold
    /// that keeps 80% (90%) of answerable ones.
    pub unanswerable_passing_at_80: Option<f64>,
    /// Share of unanswerable questions scoring at or above the threshold that
    /// keeps 90% of answerable ones.
    pub unanswerable_passing_at_90: Option<f64>,
    /// The same at 90%, counting in-domain unanswerable questions only.
    pub in_domain_passing_at_90: Option<f64>,
}

fn separation(rows: &[(f64, &Question)]) -> Separation {
    let all: Vec<(f64, bool)> = rows.iter().map(|(s, q)| (*s, q.answerable)).collect();
    let in_domain: Vec<(f64, bool)> = rows
        .iter()
        .filter(|(_, q)| q.answerable || q.in_domain())
        .map(|(s, q)| (*s, q.answerable))
        .collect();
    Separation {
        auroc: metrics::auroc(&all),
        auroc_in_domain: metrics::auroc(&in_domain),
        unanswerable_passing_at_80: metrics::negatives_passing_at_recall(&all, 0.8).map(|r| r.1),
        unanswerable_passing_at_90: metrics::negatives_passing_at_recall(&all, 0.9).map(|r| r.1),
        in_domain_passing_at_90: metrics::negatives_passing_at_recall(&in_domain, 0.9).map(|r| r.1),
    }
}

/// What `grace eval` reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvalReport {
    /// The evaluation set's folder.
    pub set: PathBuf,
    /// Questions in the set.
    pub questions: usize,
    /// Answerable questions.
    pub answerable: usize,
    /// Unanswerable questions about the corpus's subject (held-out sections).
    pub unanswerable_in_domain: usize,
    /// Unanswerable out-of-domain questions.
    pub unanswerable_out_of_domain: usize,
    /// Chunks ingested from the corpus.
    pub chunks: usize,
    /// Share of answerable questions with a gold source first / in the top `k`.
    pub recall_at_1: f64,
    /// Share of answerable questions with a gold source in the top `k`.
    pub recall_at_k: f64,
    /// Passages retrieved per search (the `k` of `recall_at_k`).
    pub k: usize,
    /// Share of questions answered (decision `answer` or `caveat`).
    pub answered: f64,
    /// Share of answered questions that are answerable and cite a gold source.
    pub answered_right: f64,
    /// Share of unanswerable questions answered anyway (the worst outcome).
    pub unanswerable_answered: f64,
    /// Of those, how many were in-domain (a held-out section) and how many
    /// out-of-domain.
    pub unanswerable_answered_in_domain: usize,
    /// Unanswerable out-of-domain questions answered anyway.
    pub unanswerable_answered_out_of_domain: usize,
    /// Baseline: the top-1 passage's cosine similarity.
    pub top1_cosine: Separation,
    /// The run's confidence (the configured model on the answer's factors).
    pub answer_confidence: Separation,
    /// Calibration of the run's confidence against "answerable and a gold
    /// source cited".
    pub ece: Option<f64>,
    /// Brier score of the run's confidence against the same outcome (0 is
    /// perfect); `None` without questions.
    pub brier: Option<f64>,
    /// Whole `ask` per question, milliseconds.
    pub latency_p50_ms: Option<f64>,
    /// 95th percentile of a whole `ask`, milliseconds.
    pub latency_p95_ms: Option<f64>,
}

/// Runs the evaluation of the set in `dir` with `config` (its data folder is
/// replaced by a temporary one, removed afterwards) and the given embedder.
pub fn run(
    config: &Config,
    embedder: std::sync::Arc<dyn Embedder>,
    dir: &Path,
    k: usize,
) -> Result<EvalReport> {
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
    let questions = load_questions(&questions_path)?;

    let temp = TempDir::new()?;
    let mut config = config.clone();
    config.storage.data_dir = temp.0.clone();
    // Always the embedded store: the evaluation corpus must never be
    // written into a configured Qdrant server's collection.
    config.storage.backend = crate::config::Backend::Edge;
    let kb = KnowledgeBase::with_embedder(config, embedder, OpenMode::Create)?;
    let ingest = kb.ingest(&[corpus], &IngestOptions::default(), &mut |_| {})?;

    let kb = std::sync::Arc::new(kb);
    let registry = ToolRegistry::from_config(kb.config(), kb.clone())?;
    let executor = Executor::new(&registry, kb.config(), k);
    let mut cosine_rows = Vec::new();
    let mut confidence_rows = Vec::new();
    let mut calibration = Vec::new();
    let mut latencies = Vec::new();
    let (mut at1, mut atk) = (0usize, 0usize);
    let (mut answered, mut answered_right, mut unanswerable_answered) = (0usize, 0usize, 0usize);
    let (mut wrong_in_domain, mut wrong_out_of_domain) = (0usize, 0usize);
    for q in &questions {
        let started = Instant::now();
        let run = executor.ask(&q.question, &mut |_| {})?;
        latencies.push(started.elapsed().as_secs_f64() * 1000.0);

        let is_gold = |source: &str| {
            let name = Path::new(source)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned());
            name.is_some_and(|n| q.gold_sources.contains(&n))
        };
        // Retrieval: the first search of the run (the plan's, before any recovery).
        let search = run.steps.iter().find(|s| s.action == "rag_search");
        let passages = match search.map(|s| &s.result.output) {
            Some(ToolOutput::Passages(p)) => p.as_slice(),
            _ => &[],
        };
        if q.answerable {
            at1 += usize::from(passages.first().is_some_and(|p| is_gold(&p.source)));
            atk += usize::from(passages.iter().any(|p| is_gold(&p.source)));
        }
        let top1 = search
            .and_then(|s| s.result.factors.get(Factor::MaxScore))
            .unwrap_or(-1.0);
        let gold_cited = run.answer.as_ref().is_some_and(|a| {
            !a.abstained
                && a.citations
                    .iter()
                    .any(|c| c.source.as_deref().is_some_and(is_gold))
        });
        let right = q.answerable && gold_cited;
        if matches!(run.decision, Decision::Answer | Decision::Caveat) {
            answered += 1;
            answered_right += usize::from(right);
            unanswerable_answered += usize::from(!q.answerable);
            if !q.answerable {
                if q.in_domain() {
                    wrong_in_domain += 1;
                } else {
                    wrong_out_of_domain += 1;
                }
            }
        }
        cosine_rows.push((top1, q));
        confidence_rows.push((run.confidence, q));
        calibration.push((run.confidence, right));
    }
    let answerable = questions.iter().filter(|q| q.answerable).count();
    let share = |n: usize| {
        if answerable == 0 {
            0.0
        } else {
            n as f64 / answerable as f64
        }
    };
    Ok(EvalReport {
        set: dir.to_path_buf(),
        questions: questions.len(),
        answerable,
        unanswerable_in_domain: questions
            .iter()
            .filter(|q| !q.answerable && q.in_domain())
            .count(),
        unanswerable_out_of_domain: questions
            .iter()
            .filter(|q| !q.answerable && !q.in_domain())
            .count(),
        chunks: ingest.points_total,
        recall_at_1: share(at1),
        recall_at_k: share(atk),
        k,
        answered: answered as f64 / questions.len().max(1) as f64,
        answered_right: if answered == 0 {
            0.0
        } else {
            answered_right as f64 / answered as f64
        },
        unanswerable_answered_in_domain: wrong_in_domain,
        unanswerable_answered_out_of_domain: wrong_out_of_domain,
        unanswerable_answered: {
            let n = questions.iter().filter(|q| !q.answerable).count();
            if n == 0 {
                0.0
            } else {
                unanswerable_answered as f64 / n as f64
            }
        },
        top1_cosine: separation(&cosine_rows),
        answer_confidence: separation(&confidence_rows),
        ece: metrics::ece(&calibration, 10),
        brier: metrics::brier(&calibration),
        latency_p50_ms: metrics::quantile(&latencies, 0.5),
        latency_p95_ms: metrics::quantile(&latencies, 0.95),
    })
}

/// A temporary folder removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> std::result::Result<Self, EvalError> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or_default();
        let path = std::env::temp_dir().join(format!("grace-eval-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&path).map_err(|source| EvalError::Io {
            action: "create",
            path: path.clone(),
            source,
        })?;
        Ok(Self(path))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_question_names_file_and_line() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("questions.jsonl");
        std::fs::write(
            &p,
            "{\"id\":\"a\",\"question\":\"q?\",\"answerable\":true}\n\n{\"id\":\"b\",\"answerable\":true}\n",
        )
        .unwrap();
        let err = load_questions(&p).unwrap_err().to_string();
        assert!(
            err.contains("questions.jsonl:3:") && err.contains("question"),
            "{err}"
        );
    }

    #[test]
    fn loads_the_shared_format() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("questions.jsonl");
        std::fs::write(
            &p,
            r#"{"id": "x-1", "question": "What?", "answerable": false, "gold_sources": [], "gold_answer": null, "kind": "out-of-domain", "origin": "t"}"#,
        )
        .unwrap();
        let q = load_questions(&p).unwrap();
        assert_eq!(q.len(), 1);
        assert!(!q[0].in_domain());
    }
}
