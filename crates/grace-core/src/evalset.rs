//! The question-set format (`questions.jsonl` beside `corpus/`, as in
//! `eval/*/`): one [`Question`] a line, whether a source is one
//! of its gold ones, and [`EvalError`], what can go wrong reading a set.
//! Nothing here runs GRACE.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

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
    /// The reference answer, if the set gives one (the answer-text F1 is
    /// measured against it).
    #[serde(default)]
    pub gold_answer: Option<String>,
    /// `in-corpus`, `held-out-section` or `out-of-domain`.
    #[serde(default)]
    pub kind: String,
    /// Where the question comes from (e.g. a section of the source document);
    /// not used by the evaluation.
    #[serde(default)]
    pub origin: Option<String>,
    /// How the question is put (`situation`, `casual`, `command`, `error`
    /// in GRACE's sets in users' own words), when the set says: the
    /// answer-text figures are also reported per style.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub style: Option<String>,
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
    /// A file the evaluation was pointed at does not exist.
    #[error("{path}: no such file")]
    Missing {
        /// The file.
        path: PathBuf,
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

/// The file name a passage's source names: what a question's gold sources
/// list.
pub fn corpus_file(source: &str) -> String {
    Path::new(source)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Whether `source` is one of the question's gold sources.
pub fn is_gold(q: &Question, source: &str) -> bool {
    let name = corpus_file(source);
    !name.is_empty() && q.gold_sources.contains(&name)
}

/// Reads `questions.jsonl`; a malformed line is an error naming file and line.
pub fn load_questions(path: &Path) -> std::result::Result<Vec<Question>, EvalError> {
    parse_questions(path, &read(path)?)
}

/// The file at `path`, read whole; an error names it.
pub fn read(path: &Path) -> std::result::Result<Vec<u8>, EvalError> {
    std::fs::read(path).map_err(|source| EvalError::Io {
        action: "read",
        path: path.to_path_buf(),
        source,
    })
}

/// Parses the bytes of `questions.jsonl` read from `path` (named in errors).
pub fn parse_questions(path: &Path, bytes: &[u8]) -> std::result::Result<Vec<Question>, EvalError> {
    // The error reading it as text would have given.
    let text = std::str::from_utf8(bytes).map_err(|e| EvalError::Io {
        action: "read",
        path: path.to_path_buf(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, e),
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
