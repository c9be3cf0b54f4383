//! `grace eval DIR --one-session N`: how often a question that stands on
//! its own is taken for a follow-up.
//!
//! The set's first N questions, each self-contained, are asked one after
//! another in one session, as an asker on the asker page does (every
//! question after the first is asked with the earlier turns as history).
//! A rewrite is a question searched with words it never asked.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use serde::Serialize;

use super::conversations::open_corpus;
use grace::Result;
use grace::config::Config;
use grace::embed::Embedder;
use grace::service::AskOptions;

/// Questions one session may be asked (a set's first ones).
pub const MAX_QUESTIONS: usize = 1_000;

/// A self-contained question that was rewritten as a follow-up.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rewritten {
    /// The question as asked.
    pub question: String,
    /// What it was searched as.
    pub standalone: String,
}

/// What `grace eval --one-session` reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OneSessionReport {
    /// The evaluation set's folder.
    pub set: PathBuf,
    /// Questions asked in the session.
    pub questions: usize,
    /// Questions asked after the first (each could be taken for a follow-up).
    pub asked: usize,
    /// Of those, rewritten.
    pub rewritten: usize,
    /// `rewritten / asked` (`None` when nothing was asked after the first).
    pub share: Option<f64>,
    /// Each rewrite.
    pub rewrites: Vec<Rewritten>,
}

/// Asks the first `n` questions of the set in `dir` in one session over
/// its corpus (see the [module documentation](self)).
pub fn run(
    config: &Config,
    embedder: Arc<dyn Embedder>,
    dir: &Path,
    n: usize,
    k: usize,
) -> Result<OneSessionReport> {
    if !(2..=MAX_QUESTIONS).contains(&n) {
        return Err(grace::Error::InvalidInput(format!(
            "--one-session {n}: ask between 2 and {MAX_QUESTIONS} questions"
        )));
    }
    let questions = super::load_questions(&dir.join("questions.jsonl"))?;
    let (_temp, grace) = open_corpus(config, embedder, dir)?;
    let session = grace.create_session()?;
    let options = AskOptions {
        limit: Some(k),
        queue: false,
        session_id: Some(session.id.clone()),
        ..AskOptions::default()
    };
    let mut rewrites = Vec::new();
    let total = questions.iter().take(n).count();
    let asked = total.saturating_sub(1);
    for q in questions.iter().take(n) {
        let cancel = Arc::new(AtomicBool::new(false));
        let report = grace
            .ask_blocking(&q.question, &options, cancel, &mut |_| {})?
            .report;
        if let Some(r) = report.rewrite {
            rewrites.push(Rewritten {
                question: q.question.clone(),
                standalone: r.question,
            });
        }
    }
    grace.delete_session(&session.id)?;
    Ok(OneSessionReport {
        set: dir.to_path_buf(),
        questions: total,
        asked,
        rewritten: rewrites.len(),
        share: (asked > 0).then(|| rewrites.len() as f64 / asked as f64),
        rewrites,
    })
}
