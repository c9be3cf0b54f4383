//! Research tool: chooses the lexical gate of GRACE's fusion
//! (`search.rare_term_share`, `search.rare_terms`, with
//! `search.lexical_weight` and `search.identifier_weight`) by
//! cross-validation across corpora, holding out one corpus at a time, on
//! the rankings `ranking_probe` wrote. Each ordering is GRACE's own
//! ([`grace::store::fusion::fuse_gated`] and [`grace::store::fusion::pin`],
//! what a search runs); this only counts.
//!
//! ```sh
//! cargo run --release --example fusion_cv -- NAME=PROBE_DIR [NAME=PROBE_DIR ...]
//! ```
//!
//! A corpus is a manual: for sets built by `scripts/users_words.py` the
//! prefix of the gold file's name (`bash-reference--…`), otherwise the
//! set's NAME (sets of one corpus with two question sets, `debian-faq` and
//! its paraphrases, name it `debian-faq` and `debian-faq/paraphrased`:
//! the part before `/` is the corpus). For each corpus it prints recall@1
//! and recall@5 of the dense ranking alone, of the fusion shipped before
//! the gate, and of the gated fusion with the parameters chosen on every
//! *other* corpus; then the parameters chosen on all of them.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use grace::lexical::{identifier_term, identifiers_found};
use grace::store::fusion::{Evidence, Gate, fuse_gated, pin};
use serde_json::Value;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// Candidates each ranking gives a search (`search.candidates`).
const DEPTH: usize = 40;
/// Passages from the top of the lexical ranking checked for identifiers.
const PIN_POOL: usize = 10;
/// Corpora with fewer answerable questions are too small for the
/// worst-case term of the choice (their figures move by 4 points a question).
const MIN_FOR_WORST: usize = 30;

struct Chunk {
    file: String,
    text: String,
    terms: HashSet<u32>,
}

struct Query {
    question: String,
    corpus: String,
    gold: HashSet<String>,
    dense: Vec<(u64, f32)>,
    lexical: Vec<(u64, f32)>,
    terms: Vec<u32>,
    identifiers: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Params {
    weight: f32,
    identifier_weight: f32,
    gate: Gate,
    pin: bool,
}

fn load(name: &str, dir: &Path) -> Result<(HashMap<u64, Chunk>, Vec<Query>)> {
    let mut chunks = HashMap::new();
    for line in std::fs::read_to_string(dir.join("chunks.jsonl"))?.lines() {
        let v: Value = serde_json::from_str(line)?;
        let id: u64 = v["id"].as_str().ok_or("chunk id")?.parse()?;
        let terms = v["terms"]
            .as_array()
            .ok_or("chunk terms")?
            .iter()
            .filter_map(|t| t.as_u64().map(|t| t as u32))
            .collect();
        chunks.insert(
            id,
            Chunk {
                file: v["file"].as_str().unwrap_or_default().to_string(),
                text: format!(
                    "{}\n{}",
                    v["section"].as_str().unwrap_or_default(),
                    v["text"].as_str().unwrap_or_default()
                ),
                terms,
            },
        );
    }
    let set_corpus = name.split('/').next().unwrap_or(name).to_string();
    let mut queries = Vec::new();
    for line in std::fs::read_to_string(dir.join("rankings.jsonl"))?.lines() {
        let v: Value = serde_json::from_str(line)?;
        if !v["answerable"].as_bool().unwrap_or(false) {
            continue;
        }
        let gold: HashSet<String> = v["gold"]
            .as_array()
            .ok_or("gold")?
            .iter()
            .filter_map(|g| g.as_str().map(str::to_string))
            .collect();
        let corpus = match gold.iter().next().and_then(|g| g.split_once("--")) {
            Some((manual, _)) => manual.to_string(),
            None => set_corpus.clone(),
        };
        let ranking = |key: &str| -> Result<Vec<(u64, f32)>> {
            v[key]
                .as_array()
                .ok_or("ranking")?
                .iter()
                .take(DEPTH)
                .map(|pair| {
                    let id: u64 = pair[0].as_str().ok_or("id")?.parse()?;
                    let score = pair[1].as_f64().ok_or("score")? as f32;
                    Ok((id, score))
                })
                .collect()
        };
        queries.push(Query {
            question: v["question"].as_str().unwrap_or_default().to_string(),
            corpus,
            gold,
            dense: ranking("dense")?,
            lexical: ranking("lexical")?,
            terms: v["terms"]
                .as_array()
                .ok_or("terms")?
                .iter()
                .filter_map(|t| t.as_u64().map(|t| t as u32))
                .collect(),
            identifiers: v["identifiers"]
                .as_array()
                .ok_or("identifiers")?
                .iter()
                .filter_map(|t| t.as_str().map(str::to_string))
                .collect(),
        });
    }
    Ok((chunks, queries))
}

/// GRACE's order for one question under `p` (ids).
fn order(q: &Query, chunks: &HashMap<u64, Chunk>, p: &Params) -> Vec<u64> {
    let weight = if q.identifiers.is_empty() {
        p.weight
    } else {
        p.identifier_weight
    };
    let identifiers: HashSet<u32> = q.identifiers.iter().map(|i| identifier_term(i)).collect();
    let passages: HashMap<u64, HashSet<u32>> = q
        .dense
        .iter()
        .chain(&q.lexical)
        .filter_map(|(id, _)| chunks.get(id).map(|c| (*id, c.terms.clone())))
        .collect();
    let evidence = Evidence {
        question: &q.terms,
        identifiers: &identifiers,
        passages: &passages,
    };
    let mut fused = fuse_gated(&q.dense, &q.lexical, weight, &evidence, &p.gate);
    if p.pin && !q.identifiers.is_empty() {
        let pinned: HashMap<u64, usize> = q
            .lexical
            .iter()
            .take(PIN_POOL)
            .filter_map(|(id, _)| {
                let found = identifiers_found(&q.identifiers, &chunks.get(id)?.text);
                (found > 0).then_some((*id, found))
            })
            .collect();
        pin(&mut fused, &pinned);
    }
    fused.into_iter().map(|f| f.id).collect()
}

/// Recall@1 and @5 per corpus.
type Recall = BTreeMap<String, (f64, f64, usize)>;

fn recall(sets: &[(HashMap<u64, Chunk>, Vec<Query>)], p: &Params) -> Recall {
    let mut counts: BTreeMap<String, (usize, usize, usize)> = BTreeMap::new();
    for (chunks, queries) in sets {
        for q in queries {
            let ids = order(q, chunks, p);
            let gold = |id: &u64| chunks.get(id).is_some_and(|c| q.gold.contains(&c.file));
            let e = counts.entry(q.corpus.clone()).or_default();
            e.0 += usize::from(ids.first().is_some_and(gold));
            e.1 += usize::from(ids.iter().take(5).any(gold));
            e.2 += 1;
        }
    }
    counts
        .into_iter()
        .map(|(c, (a1, a5, n))| (c, (a1 as f64 / n as f64, a5 as f64 / n as f64, n)))
        .collect()
}

/// How good `p` is on `corpora` against dense alone: the worst corpus's
/// smaller gain (over corpora large enough), then the mean gain.
fn objective(r: &Recall, dense: &Recall, corpora: &[&String]) -> (f64, f64) {
    let mut worst = f64::INFINITY;
    let mut total = 0.0;
    for c in corpora {
        let (a1, a5, n) = r[*c];
        let (d1, d5, _) = dense[*c];
        let gain = (a1 - d1).min(a5 - d5);
        if n >= MIN_FOR_WORST {
            worst = worst.min(gain);
        }
        total += (a1 - d1) + (a5 - d5);
    }
    // Ties within half a question's worth are ties.
    (
        (worst * 200.0).round() / 200.0,
        total / corpora.len().max(1) as f64,
    )
}

fn main() -> Result<()> {
    let mut sets = Vec::new();
    let mut show_grid = false;
    for arg in std::env::args().skip(1) {
        if arg == "--grid" {
            show_grid = true;
            continue;
        }
        if arg == "--losses" {
            continue;
        }
        let (name, dir) = arg
            .split_once('=')
            .ok_or("usage: fusion_cv NAME=PROBE_DIR ...")?;
        sets.push(load(name, &PathBuf::from(dir))?);
        eprintln!(
            "fusion_cv: {name}: {} answerable",
            sets.last().map_or(0, |s| s.1.len())
        );
    }
    let dense = Params {
        weight: 0.0,
        identifier_weight: 0.0,
        gate: Gate::OPEN,
        pin: false,
    };
    let shipped = Params {
        weight: 0.15,
        identifier_weight: 0.3,
        gate: Gate::OPEN,
        pin: true,
    };
    let mut grid = Vec::new();
    for weight in [0.1, 0.15, 0.2, 0.3, 0.5] {
        for identifier_weight in [0.3, 0.5] {
            for rare_share in [0.0, 0.025, 0.05, 0.1, 0.2, 0.3, 1.0] {
                for min_terms in [1, 2] {
                    grid.push(Params {
                        weight,
                        identifier_weight,
                        gate: Gate {
                            rare_share,
                            min_terms,
                        },
                        pin: true,
                    });
                }
            }
        }
    }
    let dense_recall = recall(&sets, &dense);
    let shipped_recall = recall(&sets, &shipped);
    let results: Vec<(Params, Recall)> = grid.iter().map(|p| (*p, recall(&sets, p))).collect();
    let corpora: Vec<&String> = dense_recall.keys().collect();
    if show_grid {
        // Every parameter set's gain over dense alone per corpus (r@1, r@5).
        print!("| weight | rare share | terms |");
        for c in &corpora {
            print!(" {c} |");
        }
        println!(" worst | mean |");
        for (p, r) in std::iter::once(&(shipped, shipped_recall.clone())).chain(&results) {
            print!(
                "| {} / {} | {} | {} |",
                p.weight, p.identifier_weight, p.gate.rare_share, p.gate.min_terms
            );
            for c in &corpora {
                let (a1, a5, _) = r[*c];
                let (d1, d5, _) = dense_recall[*c];
                print!(" {:+.2} {:+.2} |", a1 - d1, a5 - d5);
            }
            let (worst, mean) = objective(r, &dense_recall, &corpora);
            println!(" {worst:+.3} | {mean:+.3} |");
        }
    }
    let best = |among: &[&String]| -> &(Params, Recall) {
        results
            .iter()
            .max_by(|a, b| {
                let (x, y) = (
                    objective(&a.1, &dense_recall, among),
                    objective(&b.1, &dense_recall, among),
                );
                x.0.total_cmp(&y.0).then(x.1.total_cmp(&y.1))
            })
            .expect("a grid")
    };
    println!(
        "| corpus | answerable | dense r@1 / r@5 | fusion before r@1 / r@5 | gated, chosen without it: r@1 / r@5 | its parameters |"
    );
    println!("|---|---|---|---|---|---|");
    for held in &corpora {
        let others: Vec<&String> = corpora.iter().copied().filter(|c| c != held).collect();
        let (p, r) = best(&others);
        let (d1, d5, n) = dense_recall[*held];
        let (s1, s5, _) = shipped_recall[*held];
        let (g1, g5, _) = r[*held];
        println!(
            "| {held} | {n} | {d1:.3} / {d5:.3} | {s1:.3} / {s5:.3} | {g1:.3} / {g5:.3} | weight {} / {}, rare share {}, terms {} |",
            p.weight, p.identifier_weight, p.gate.rare_share, p.gate.min_terms
        );
    }
    let (p, r) = best(&corpora);
    if std::env::args().any(|a| a == "--losses") {
        // Questions dense alone had right first and the chosen fusion not.
        for (chunks, queries) in &sets {
            for q in queries {
                let gold = |id: &u64| chunks.get(id).is_some_and(|c| q.gold.contains(&c.file));
                let d = order(q, chunks, &dense);
                let g = order(q, chunks, p);
                if d.first().is_some_and(gold) && !g.first().is_some_and(gold) {
                    let file = |id: Option<&u64>| {
                        id.and_then(|i| chunks.get(i))
                            .map_or("-".into(), |c| c.file.clone())
                    };
                    eprintln!(
                        "loss [{}] {:?}: {} -> {}",
                        q.corpus,
                        q.question,
                        file(d.first()),
                        file(g.first())
                    );
                }
            }
        }
    }
    let (worst, mean) = objective(r, &dense_recall, &corpora);
    println!(
        "\nchosen on every corpus: weight {} / {}, rare share {}, terms {} (worst corpus gain {worst:+.3}, mean r@1+r@5 gain {mean:+.3})",
        p.weight, p.identifier_weight, p.gate.rare_share, p.gate.min_terms
    );
    let (worst, mean) = objective(&shipped_recall, &dense_recall, &corpora);
    println!("fusion before: worst corpus gain {worst:+.3}, mean r@1+r@5 gain {mean:+.3}");
    Ok(())
}
