//! `grace eval DIR --conversations FILE`: follow-up resolution measured.
//!
//! FILE holds one conversation per line:
//! `{"id", "turns": [{"question", "answerable", "gold_sources": [file names]}, …]}`,
//! over the corpus of the set in DIR. The corpus is ingested into a
//! temporary store; each conversation is asked in order in one session
//! (as `grace chat` or `session_id` would), and every turn after the first
//! is asked a second time alone, without the session. The report compares
//! the two on the follow-ups: recall@k of a gold source in the first
//! search, how often answerable ones are answered, and how often
//! unanswerable ones are answered anyway (the worst outcome).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use serde::{Deserialize, Serialize};

use super::{EvalError, TempDir, read};
use grace::embed::Embedder;
use grace::exec::{Decision, RunReport};
use grace::ingest::IngestOptions;
use grace::tools::RagSearch;
use grace::tools::ToolOutput;
use grace::{
    Result,
    config::Config,
    service::{AskOptions, Grace},
};

/// Turns a conversation may have.
const MAX_TURNS: usize = 100;

/// One turn of a conversation in the set.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ConversationTurn {
    /// The question as the asker types it (a follow-up may lean on earlier turns).
    pub question: String,
    /// Whether the corpus answers it.
    pub answerable: bool,
    /// Corpus file names that answer it.
    #[serde(default)]
    pub gold_sources: Vec<String>,
}

/// One line of the conversations file.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Conversation {
    /// Identifier, unique in the file.
    pub id: String,
    /// The turns, in order.
    pub turns: Vec<ConversationTurn>,
}

/// Reads a conversations file; a bad line is an error naming file and line.
pub fn load_conversations(path: &Path) -> std::result::Result<Vec<Conversation>, EvalError> {
    let bytes = read(path)?;
    let text = std::str::from_utf8(&bytes).map_err(|e| EvalError::Io {
        action: "read",
        path: path.to_path_buf(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, e),
    })?;
    let bad = |line: usize, message: String| EvalError::BadQuestion {
        path: path.to_path_buf(),
        line,
        message,
    };
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let c: Conversation = serde_json::from_str(line).map_err(|e| bad(i + 1, e.to_string()))?;
        if c.turns.is_empty() || c.turns.len() > MAX_TURNS {
            return Err(bad(
                i + 1,
                format!("`turns` must have 1 to {MAX_TURNS} turns"),
            ));
        }
        if let Some(n) = c
            .turns
            .iter()
            .position(|t| grace::text::is_blank(&t.question))
        {
            return Err(bad(
                i + 1,
                format!("turn {} has an empty `question`", n + 1),
            ));
        }
        out.push(c);
    }
    Ok(out)
}

/// What one turn did, with and without its conversation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TurnOutcome {
    /// The conversation's id.
    pub conversation: String,
    /// 1-based turn number.
    pub turn: usize,
    /// The question as typed.
    pub question: String,
    /// The question as run in the session, when it was rewritten.
    pub standalone: Option<String>,
    /// Whether the corpus answers it.
    pub answerable: bool,
    /// A gold source in the first search's top k, in the session.
    pub gold_at_k: bool,
    /// The same, asked alone (`None` for first turns, not asked twice).
    pub gold_at_k_alone: Option<bool>,
    /// The session run's decision.
    pub decision: Decision,
    /// The decision asked alone.
    pub decision_alone: Option<Decision>,
}

/// What `grace eval --conversations` reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConversationReport {
    /// The evaluation set's folder (its corpus).
    pub set: PathBuf,
    /// The conversations file.
    pub conversations_file: PathBuf,
    /// Conversations asked.
    pub conversations: usize,
    /// Turns asked (first turns included).
    pub turns: usize,
    /// Turns after the first.
    pub follow_ups: usize,
    /// Of those, answerable ones.
    pub follow_ups_answerable: usize,
    /// Of those, unanswerable ones.
    pub follow_ups_unanswerable: usize,
    /// Passages per search (the k of recall@k).
    pub k: usize,
    /// Follow-ups the session rewrote before retrieval.
    pub rewritten: usize,
    /// Answerable follow-ups with a gold source in the top k, in the session.
    pub recall_at_k_with_history: Option<f64>,
    /// The same follow-ups asked alone.
    pub recall_at_k_alone: Option<f64>,
    /// Answerable follow-ups answered (decision answer or caveat), in the session.
    pub answered_with_history: Option<f64>,
    /// The same, asked alone.
    pub answered_alone: Option<f64>,
    /// Unanswerable follow-ups answered anyway, in the session (the worst
    /// outcome).
    pub unanswerable_answered_with_history: Option<f64>,
    /// The same, asked alone.
    pub unanswerable_answered_alone: Option<f64>,
    /// First turns with a gold source in the top k (answerable ones).
    pub first_turn_recall_at_k: Option<f64>,
    /// Every turn's outcome.
    pub outcomes: Vec<TurnOutcome>,
}

/// Asks every conversation of `file` over the corpus of the set in `dir`
/// (see the [module documentation](self)).
pub fn run(
    config: &Config,
    embedder: Arc<dyn Embedder>,
    dir: &Path,
    file: &Path,
    k: usize,
) -> Result<ConversationReport> {
    if !file.is_file() {
        return Err(EvalError::Missing {
            path: file.to_path_buf(),
        }
        .into());
    }
    let conversations = load_conversations(file)?;
    let (_temp, grace) = open_corpus(config, embedder, dir)?;

    let options = AskOptions {
        limit: Some(k),
        queue: false,
        ..AskOptions::default()
    };
    let ask = |question: &str, session: Option<&str>| -> Result<RunReport> {
        let options = AskOptions {
            session_id: session.map(str::to_string),
            ..options.clone()
        };
        let cancel = Arc::new(AtomicBool::new(false));
        Ok(grace
            .ask_blocking(question, &options, cancel, &mut |_| {})?
            .report)
    };
    let mut outcomes = Vec::new();
    for c in &conversations {
        let session = grace.create_session()?;
        for (n, turn) in c.turns.iter().enumerate() {
            let in_session = ask(&turn.question, Some(&session.id))?;
            let alone = match n {
                0 => None,
                _ => Some(ask(&turn.question, None)?),
            };
            outcomes.push(TurnOutcome {
                conversation: c.id.clone(),
                turn: n + 1,
                question: turn.question.clone(),
                standalone: in_session.rewrite.as_ref().map(|r| r.question.clone()),
                answerable: turn.answerable,
                gold_at_k: gold_in_first_search(&in_session, &turn.gold_sources),
                gold_at_k_alone: alone
                    .as_ref()
                    .map(|r| gold_in_first_search(r, &turn.gold_sources)),
                decision: in_session.decision,
                decision_alone: alone.as_ref().map(|r| r.decision),
            });
        }
        grace.delete_session(&session.id)?;
    }
    Ok(summarise(dir, file, conversations.len(), k, outcomes))
}

/// A service over the corpus of the set in `dir` ingested into a
/// temporary store (removed when the returned folder is dropped).
pub(super) fn open_corpus(
    config: &Config,
    embedder: Arc<dyn Embedder>,
    dir: &Path,
) -> Result<(TempDir, Grace)> {
    let corpus = dir.join("corpus");
    if !corpus.is_dir() {
        return Err(EvalError::NotASet {
            path: dir.to_path_buf(),
            what: "corpus/",
        }
        .into());
    }
    let temp = TempDir::new()?;
    let mut config = config.clone();
    config.storage.data_dir = temp.0.clone();
    config.storage.backend = grace::config::Backend::Edge;
    let grace = Grace::builder(config).embedder(embedder).build()?;
    grace.ingest_blocking(
        &[corpus.to_path_buf()],
        &IngestOptions::default(),
        &mut |_| {},
    )?;
    Ok((temp, grace))
}

fn summarise(
    dir: &Path,
    file: &Path,
    conversations: usize,
    k: usize,
    outcomes: Vec<TurnOutcome>,
) -> ConversationReport {
    let follow: Vec<&TurnOutcome> = outcomes.iter().filter(|o| o.turn > 1).collect();
    let answerable: Vec<&TurnOutcome> = follow.iter().copied().filter(|o| o.answerable).collect();
    let unanswerable: Vec<&TurnOutcome> =
        follow.iter().copied().filter(|o| !o.answerable).collect();
    let firsts: Vec<&TurnOutcome> = outcomes
        .iter()
        .filter(|o| o.turn == 1 && o.answerable)
        .collect();
    let answered = |d: Decision| matches!(d, Decision::Answer | Decision::Caveat);
    let share = |rows: &[&TurnOutcome], hit: &dyn Fn(&TurnOutcome) -> bool| {
        (!rows.is_empty())
            .then(|| rows.iter().filter(|o| hit(o)).count() as f64 / rows.len() as f64)
    };
    ConversationReport {
        set: dir.to_path_buf(),
        conversations_file: file.to_path_buf(),
        conversations,
        turns: outcomes.len(),
        follow_ups: follow.len(),
        follow_ups_answerable: answerable.len(),
        follow_ups_unanswerable: unanswerable.len(),
        k,
        rewritten: follow.iter().filter(|o| o.standalone.is_some()).count(),
        recall_at_k_with_history: share(&answerable, &|o| o.gold_at_k),
        recall_at_k_alone: share(&answerable, &|o| o.gold_at_k_alone == Some(true)),
        answered_with_history: share(&answerable, &|o| answered(o.decision)),
        answered_alone: share(&answerable, &|o| o.decision_alone.is_some_and(answered)),
        unanswerable_answered_with_history: share(&unanswerable, &|o| answered(o.decision)),
        unanswerable_answered_alone: share(&unanswerable, &|o| {
            o.decision_alone.is_some_and(answered)
        }),
        first_turn_recall_at_k: share(&firsts, &|o| o.gold_at_k),
        outcomes,
    }
}

/// Whether the run's first search found a gold source (by file name).
fn gold_in_first_search(run: &RunReport, gold: &[String]) -> bool {
    let search = run.steps.iter().find(|s| s.action == RagSearch::NAME);
    let Some(ToolOutput::Passages(passages)) = search.map(|s| &s.result.output) else {
        return false;
    };
    passages.iter().any(|p| {
        Path::new(&p.source)
            .file_name()
            .is_some_and(|n| gold.iter().any(|g| n.to_string_lossy() == g.as_str()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.jsonl");
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    #[test]
    fn bad_lines_are_named_by_file_and_line() {
        let good =
            r#"{"id":"a","turns":[{"question":"q?","answerable":true,"gold_sources":["x.md"]}]}"#;
        for (bad, wanted) in [
            (r#"{"id":"b","turns":[]}"#, "1 to 100 turns"),
            (
                r#"{"id":"b","turns":[{"question":" ","answerable":false}]}"#,
                "turn 1",
            ),
            (
                r#"{"id":"b","turns":[{"question":"q","answerable":1}]}"#,
                "invalid type",
            ),
            (
                r#"{"id":"b","turns":[{"question":"q","answerable":true,"extra":1}]}"#,
                "unknown field",
            ),
            ("not json", "expected"),
        ] {
            let (_d, path) = write(&format!("{good}\n\n{bad}\n"));
            let e = load_conversations(&path).unwrap_err().to_string();
            assert!(e.contains("c.jsonl:3:") && e.contains(wanted), "{e}");
        }
        let (_d, path) = write(&format!("{good}\n"));
        assert_eq!(load_conversations(&path).unwrap().len(), 1);
    }

    #[test]
    fn follow_ups_are_scored_with_and_without_history() {
        let o = |turn, answerable, gold, alone, d: Decision, da: Option<Decision>| TurnOutcome {
            conversation: "c".into(),
            turn,
            question: "q".into(),
            standalone: (turn > 1).then(|| "q (x)".into()),
            answerable,
            gold_at_k: gold,
            gold_at_k_alone: alone,
            decision: d,
            decision_alone: da,
        };
        let r = summarise(
            Path::new("d"),
            Path::new("f"),
            1,
            5,
            vec![
                o(1, true, true, None, Decision::Answer, None),
                o(
                    2,
                    true,
                    true,
                    Some(false),
                    Decision::Answer,
                    Some(Decision::Decline),
                ),
                o(
                    3,
                    true,
                    false,
                    Some(false),
                    Decision::Escalate,
                    Some(Decision::Escalate),
                ),
                o(
                    4,
                    false,
                    false,
                    Some(false),
                    Decision::Caveat,
                    Some(Decision::Decline),
                ),
            ],
        );
        assert_eq!(
            (
                r.follow_ups,
                r.follow_ups_answerable,
                r.follow_ups_unanswerable
            ),
            (3, 2, 1)
        );
        assert_eq!(r.recall_at_k_with_history, Some(0.5));
        assert_eq!(r.recall_at_k_alone, Some(0.0));
        assert_eq!(r.answered_with_history, Some(0.5));
        assert_eq!(r.unanswerable_answered_with_history, Some(1.0));
        assert_eq!(r.unanswerable_answered_alone, Some(0.0));
        assert_eq!(r.first_turn_recall_at_k, Some(1.0));
        assert_eq!(r.rewritten, 3);
    }
}
