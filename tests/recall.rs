//! Retrieval quality on the evaluation sets in eval/: the gold source of an
//! answerable question must be among the top 5 passages. debian-faq asks
//! with the FAQ's own headings, debian-faq-paraphrased asks the same
//! questions in users' own words over the same corpus. The test prints
//! dense-only and hybrid figures side by side for both and checks that
//! hybrid (the default) is not worse than dense on either: with the former
//! reciprocal rank fusion it was 9 points worse at recall@1 on users' words
//! (0.547 vs 0.640), which is what the fusion by cosine plus a bounded
//! lexical bonus fixed.

use crate::support::common;

use std::collections::HashSet;
use std::path::Path;

use grace::ingest::IngestOptions;
use grace::search::{SearchRequest, search};
use serde::Deserialize;

#[derive(Deserialize)]
struct Question {
    question: String,
    answerable: bool,
    gold_sources: Vec<String>,
}

fn file_name(source: &str) -> String {
    Path::new(source)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn answerable(set: &Path) -> Vec<Question> {
    let path = set.join("questions.jsonl");
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|q: &Question| q.answerable)
        .collect()
}

#[test]
fn debian_faq_recall_at_5_in_headings_and_in_users_words() {
    let sets = common::eval_sets();
    let set = sets.join("debian-faq");
    let data = tempfile::tempdir().unwrap();
    let kb = common::open(common::config(data.path()));
    let report = kb
        .ingest(
            &[set.join("corpus")],
            &IngestOptions::default(),
            &mut |_| {},
        )
        .unwrap();
    assert!(report.skipped.is_empty(), "{:?}", report.skipped);
    // The paraphrased set's corpus is a copy of debian-faq's.
    for (name, min_r5) in [("debian-faq", 0.85), ("debian-faq-paraphrased", 0.80)] {
        let questions = answerable(&sets.join(name));
        assert!(questions.len() >= 50);
        let mut results = Vec::new();
        for hybrid in [false, true] {
            let mut qcfg = kb.config().search.clone();
            qcfg.hybrid = hybrid;
            let (mut at1, mut at5) = (0usize, 0usize);
            for q in &questions {
                let gold: HashSet<&str> = q.gold_sources.iter().map(String::as_str).collect();
                let req = SearchRequest {
                    query: &q.question,
                    limit: 5,
                    filter: None,
                };
                let passages =
                    search(kb.store(), kb.embedder(), kb.lexical(), &qcfg, &req).unwrap();
                let names: Vec<String> = passages.iter().map(|p| file_name(&p.source)).collect();
                if names.first().is_some_and(|n| gold.contains(n.as_str())) {
                    at1 += 1;
                }
                if names.iter().any(|n| gold.contains(n.as_str())) {
                    at5 += 1;
                }
            }
            let n = questions.len() as f64;
            let (r1, r5) = (at1 as f64 / n, at5 as f64 / n);
            println!(
                "{name} ({} answerable, {} chunks) {}: recall@1 {r1:.3}, recall@5 {r5:.3}",
                questions.len(),
                report.points_total,
                if hybrid { "hybrid" } else { "dense" }
            );
            results.push((r1, r5));
        }
        let (dense_r1, dense_r5) = results[0];
        let (hybrid_r1, hybrid_r5) = results[1];
        let default_r5 = if kb.config().search.hybrid {
            hybrid_r5
        } else {
            dense_r5
        };
        assert!(
            default_r5 >= min_r5,
            "{name}: recall@5 with the default config is {default_r5:.3} < {min_r5}"
        );
        // Hybrid is on by default because it does not hurt recall on either
        // set (one question of slack, so a float-level tie flip cannot fail CI).
        let slack = 1.0 / questions.len() as f64 + 1e-9;
        assert!(
            hybrid_r5 + slack >= dense_r5 && hybrid_r1 + slack >= dense_r1,
            "{name}: hybrid {hybrid_r1:.3}/{hybrid_r5:.3} is below dense {dense_r1:.3}/{dense_r5:.3}"
        );
    }
}
