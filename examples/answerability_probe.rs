//! Research tool: how well do candidate answerability signals separate
//! answerable from unanswerable questions, before any of them becomes a
//! confidence factor? For every question of an evaluation set it computes
//! retrieval, sentence and lexical signals, writes one JSON line per
//! question to stdout, and prints each signal's AUROC (overall and
//! in-domain) to stderr.
//!
//! ```sh
//! cargo run --release --example answerability_probe -- eval/debian-faq > probe.jsonl
//! ```
//!
//! What it showed on debian-faq is in the book (Evaluation).

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;

use grace::confidence::term_coverage;
use grace::embed::{Embedder, FastEmbedder, cosine};
use grace::ingest::chunk::sentences;
use grace::{Config, KnowledgeBase, OpenMode};
use grace_eval::load_questions;
use grace_eval::metrics::auroc;
use serde_json::{Map, Value, json};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = PathBuf::from(
        std::env::args()
            .nth(1)
            .ok_or("usage: answerability_probe DIR")?,
    );
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let data = tempfile::tempdir()?;
    let mut config = Config::default();
    config.storage.data_dir = data.path().to_path_buf();
    config.embedding.model_dir = repo.join("models/minilm");
    config.embedding.runtime_path = repo.join("models/libonnxruntime.so");
    let embedder: Arc<dyn Embedder> = Arc::new(FastEmbedder::new(&config.embedding)?);
    let kb = KnowledgeBase::with_embedder(config, embedder.clone(), OpenMode::Create)?;
    kb.ingest(&[dir.join("corpus")], &Default::default(), &mut |_| {})?;
    let questions = load_questions(&dir.join("questions.jsonl"))?;
    let lexical = kb.lexical();

    let mut table: Vec<(Map<String, Value>, bool, bool)> = Vec::new();
    for q in &questions {
        let passages = kb.search(&q.question, Some(40), None)?;
        if passages.is_empty() {
            continue;
        }
        let mut dense: Vec<f64> = passages.iter().map(|p| f64::from(p.score)).collect();
        dense.sort_by(|a, b| b.total_cmp(a));
        let n = dense.len() as f64;
        let mean = dense.iter().sum::<f64>() / n;
        let sd = (dense.iter().map(|s| (s - mean).powi(2)).sum::<f64>() / n).sqrt();
        let top5 = &passages[..passages.len().min(5)];

        // Sentence level: the question's best sentence in the top 5 passages.
        let qv = embedder.embed_query(&q.question)?;
        let sents: Vec<String> = top5
            .iter()
            .flat_map(|p| sentences(&p.text))
            .filter(|s| s.split_whitespace().count() >= 3)
            .collect();
        let sv = if sents.is_empty() {
            Vec::new()
        } else {
            embedder.embed(&sents)?
        };
        let best_sentence = sv
            .iter()
            .map(|v| f64::from(cosine(&qv, v)))
            .fold(f64::MIN, f64::max);

        // Lexical coverage of the question: by the top 5, by the top 1.
        let qterms = lexical.encode_query(&q.question);
        let cover = |texts: &[&str]| {
            let found: HashSet<u32> = texts
                .iter()
                .flat_map(|t| lexical.encode_document(t).indices)
                .collect();
            term_coverage(&qterms, &found)
        };
        let texts5: Vec<&str> = top5.iter().map(|p| p.text.as_str()).collect();

        // Hubness: the top passage's mean cosine to its 10 nearest passages
        // (the neighbour_score factor), and CSLS-style corrections.
        let r_p = kb
            .neighbour_similarity(&passages[0], 10, None)?
            .unwrap_or(0.5);
        let mut best_corrected = f64::MIN;
        for p in top5 {
            if let Some(r) = kb.neighbour_similarity(p, 10, None)? {
                best_corrected = best_corrected.max(f64::from(p.score) - 0.5 * r);
            }
        }

        let signals = json!({
            "top1_cosine": dense[0],
            "margin": dense[0] - dense.get(1).copied().unwrap_or(dense[0]),
            "mean_top5": dense.iter().take(5).sum::<f64>() / dense.len().min(5) as f64,
            "z_top1_in_40": (dense[0] - mean) / sd.max(1e-6),
            "best_sentence_cosine": best_sentence,
            "coverage_top5": cover(&texts5).unwrap_or(0.0),
            "coverage_top1": cover(&texts5[..1]).unwrap_or(0.0),
            "neighbour_score": r_p,
            "top1_minus_half_neighbour": dense[0] - 0.5 * r_p,
            // As the confidence model uses it: a penalty above 0.5 only.
            "top1_minus_half_neighbour_excess": dense[0] - 0.5 * (r_p - 0.5).max(0.0),
            "best_top5_minus_half_neighbour": best_corrected,
        });
        let Value::Object(map) = signals else {
            unreachable!("a JSON object literal")
        };
        let mut line = map.clone();
        line.insert("id".into(), json!(q.id));
        line.insert("answerable".into(), json!(q.answerable));
        line.insert("kind".into(), json!(q.kind));
        println!("{}", Value::Object(line));
        table.push((map, q.answerable, q.in_domain()));
    }

    eprintln!("{:<32} {:>8} {:>10}", "signal", "AUROC", "in-domain");
    if let Some((first, _, _)) = table.first() {
        for key in first.keys() {
            let rows = |in_domain_only: bool| -> Vec<(f64, bool)> {
                table
                    .iter()
                    .filter(|(_, answerable, in_domain)| {
                        !in_domain_only || *answerable || *in_domain
                    })
                    .map(|(m, answerable, _)| (m[key].as_f64().unwrap_or(0.0), *answerable))
                    .collect()
            };
            eprintln!(
                "{key:<32} {:>8.3} {:>10.3}",
                auroc(&rows(false)).unwrap_or(f64::NAN),
                auroc(&rows(true)).unwrap_or(f64::NAN)
            );
        }
    }
    Ok(())
}
