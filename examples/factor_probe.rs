//! Research tool: every question of an evaluation set asked as `grace eval`
//! asks it, with what the confidence model saw. One JSON line per question
//! on stdout: id, kind, answerable, whether the answer was right (a gold
//! source cited), the run's confidence and decision, the answer's factors,
//! the factors as features (as the model sees them: `Factor::feature`),
//! the answer text, and the first search's passages (id, corpus file,
//! cosine, ranks, reader probability). `scripts/factor_study.py` reads it,
//! beside `ranking_probe`'s output for the same set.
//!
//! ```sh
//! cargo run --example factor_probe -- eval/users-words/dev [--data DIR] [--config FILE] > factors.jsonl
//! ```

use std::path::PathBuf;
use std::sync::Arc;

use grace::embed::{Embedder, FastEmbedder};
use grace::exec::{Decision, Executor};
use grace::tools::ToolRegistry;
use grace::{Config, KnowledgeBase, OpenMode};
use grace_eval::load_questions;
use serde_json::json;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: factor_probe SET [--data DIR] [--config FILE]";
    let set = PathBuf::from(args.next().ok_or(usage)?);
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let (mut data, mut config_file) = (None, repo.join("grace_config.yml"));
    while let Some(flag) = args.next() {
        match flag.as_str() {
            "--data" => data = Some(PathBuf::from(args.next().ok_or(usage)?)),
            "--config" => config_file = PathBuf::from(args.next().ok_or(usage)?),
            _ => return Err(usage.into()),
        }
    }
    let temp = tempfile::tempdir()?;
    let mut config = Config::load(Some(&config_file))?;
    config.storage.data_dir = data.unwrap_or_else(|| temp.path().to_path_buf());
    let embedder: Arc<dyn Embedder> = Arc::new(FastEmbedder::new(&config.embedding)?);
    let kb = KnowledgeBase::with_embedder(config, embedder, OpenMode::Create)?;
    kb.ingest(&[set.join("corpus")], &Default::default(), &mut |_| {})?;
    let kb = Arc::new(kb);
    let registry = ToolRegistry::from_config(kb.config(), kb.clone())?;
    let executor = Executor::new(&registry, kb.config(), kb.scorer(), 5);
    for q in load_questions(&set.join("questions.jsonl"))? {
        let run = executor.ask(&q.question, &mut |_| {})?;
        let passages = grace_eval::search_passages(grace_eval::first_search(&run), usize::MAX);
        let right = q.answerable && grace_eval::gold_cited(&q, &run);
        let row = json!({
            "id": q.id,
            "question": q.question,
            "answerable": q.answerable,
            "in_domain": q.in_domain(),
            "right": right,
            "confidence": run.confidence,
            "answered": matches!(run.decision, Decision::Answer | Decision::Caveat),
            "recovered": run.recovered,
            "factors": run.answer_factors().cloned().unwrap_or_default(),
            // The same as the confidence model sees them (Factor::feature).
            "features": run.answer_factors().map(|f| f.0.iter()
                .map(|(factor, v)| (json!(factor).as_str().unwrap_or("?").to_string(), json!(factor.feature(*v))))
                .collect::<serde_json::Map<_, _>>()).unwrap_or_default(),
            "answer": run.answer.as_ref().map(|a| a.text.clone()),
            "passages": passages.iter().map(|p| json!({
                "id": p.id.to_string(),
                "file": grace_eval::corpus_file(&p.source),
                "score": p.score,
                "dense_rank": p.dense_rank,
                "lexical_rank": p.lexical_rank,
                "lexical_score": p.lexical_score,
                "reader": p.reader_score,
            })).collect::<Vec<_>>(),
        });
        println!("{row}");
    }
    Ok(())
}
