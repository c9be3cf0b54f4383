//! Fits GRACE's shipped confidence weights on the self-calibration
//! questions of several knowledge bases (`grace calibrate --self
//! --questions-out FILE`, one file each; `scripts/fit-defaults` runs it):
//! the configured weights recalibrated as self-calibration recalibrates
//! them (`fit::recalibrate`, Platt scaling with the cross-validation of
//! `grace calibrate`), on every knowledge base's questions pooled, with
//! each knowledge base also left out in turn (what a knowledge base the
//! weights never saw can expect).
//!
//!     cargo run --example fit_defaults -- A.jsonl B.jsonl ...
//!
//! Prints the weights as YAML for `grace_config.yml`, then the figures.

use std::collections::BTreeMap;

use grace::confidence::fit::{self, Fare, Model, Sample, features};
use grace::confidence::{Factor, Factors};
use grace::config::Weights;

#[derive(serde::Deserialize)]
struct Line {
    right: bool,
    factors: Factors,
}

fn load(path: &str) -> Result<Vec<Sample>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            let line: Line =
                serde_json::from_str(l).map_err(|e| format!("{path}:{}: {e}", i + 1))?;
            Ok(Sample {
                x: features(&line.factors),
                y: line.right,
            })
        })
        .collect()
}

fn pairs(model: &Model, samples: &[Sample]) -> Vec<(f64, bool)> {
    samples.iter().map(|s| (model.predict(&s.x), s.y)).collect()
}

fn num(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.3}"))
}

fn main() -> Result<(), String> {
    let files: Vec<String> = std::env::args().skip(1).collect();
    if files.is_empty() {
        return Err("usage: fit_defaults A.jsonl B.jsonl ...".into());
    }
    let mut sets: BTreeMap<String, Vec<Sample>> = BTreeMap::new();
    for f in &files {
        sets.insert(f.clone(), load(f)?);
    }
    let all: Vec<Sample> = sets.values().flatten().cloned().collect();
    // The weights configured now (grace_config.yml mirrors these).
    let shipped = Weights::default();
    let (weights, cv) = fit::recalibrate(&all, &shipped, 5);

    println!("  weights:");
    println!("    bias: {:.2}", weights.bias);
    for factor in Factor::ALL {
        let name = serde_json::to_value(factor)
            .ok()
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_default();
        println!("    {name}: {:.2}", factor.weight(&weights));
    }
    let oof: Vec<(f64, bool)> = cv
        .out_of_fold
        .iter()
        .zip(&all)
        .map(|(p, s)| (*p, s.y))
        .collect();
    let fare = Fare::of(&oof);
    eprintln!(
        "pooled: {} questions, {} right; L2 {}; out of fold ECE {}, AUROC {}",
        all.len(),
        fare.right,
        cv.l2,
        num(fare.ece),
        num(fare.auroc)
    );
    eprintln!("each knowledge base left out (fitted on the others, scored on it):");
    eprintln!(
        "  {:<40} {:>5} {:>6} {:>6} {:>6} {:>8}",
        "set", "n", "right", "ECE", "AUROC", "before ECE"
    );
    for (name, held) in &sets {
        let others: Vec<Sample> = sets
            .iter()
            .filter(|(n, _)| *n != name)
            .flat_map(|(_, s)| s.iter().cloned())
            .collect();
        let model = Model::from_weights(&fit::recalibrate(&others, &shipped, 5).0);
        let left_out = Fare::of(&pairs(&model, held));
        let before = Fare::of(&pairs(&Model::from_weights(&shipped), held));
        eprintln!(
            "  {:<40} {:>5} {:>6} {:>6} {:>6} {:>8}",
            std::path::Path::new(name)
                .file_name()
                .map_or(name.clone(), |n| n.to_string_lossy().into_owned()),
            held.len(),
            left_out.right,
            num(left_out.ece),
            num(left_out.auroc),
            num(before.ece)
        );
    }
    Ok(())
}
