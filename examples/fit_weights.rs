//! Fits GRACE's default confidence weights (`grace_config.yml`,
//! `confidence.weights`) on its own training questions in users' words:
//! the logistic model `grace calibrate` fits, with its feature transform,
//! its Newton fit and its L2 strength chosen by its stratified 5-fold
//! cross-validation (`grace::confidence::fit`), on `examples/factor_probe.rs`
//! output for the users'-words train split. `scripts/fit-weights` runs it.
//!
//! ```sh
//! cargo run --example fit_weights -- OFF.jsonl [ON.jsonl]
//! ```
//!
//! OFF.jsonl: the probe with the reader off. Its factors fit the bias and
//! the weights in [`FITTED`]. Weights the train split cannot fit stay as set
//! by hand ([`HELD`], with why), and the reader's are 0 here. ON.jsonl
//! (optional): the probe with the reader on; the reader's two weights are
//! then fitted with every other parameter, the bias too, held at its value.
//!
//! Prints the weights as YAML for `grace_config.yml`, each held one marked,
//! after a comment line per fit with its out-of-fold figures.

use std::path::Path;

use grace::confidence::fit::{self, FEATURES, Fare, Held, Model, Sample};
use grace::confidence::{Factor, Factors};
use serde::Deserialize;

/// Fitted on the reader-off run, with the bias.
const FITTED: [Factor; 5] = [
    Factor::MaxScore,
    Factor::Margin,
    Factor::NeighbourScore,
    Factor::QueryCoverage,
    Factor::Abstained,
];

/// Held at values set by hand:
/// - identifier coverage: a third of the split's questions that name an
///   identifier name one the answer page never mentions (the asker's own
///   file or host), so the split would teach that a missing identifier is
///   no evidence, which git-config's questions about a variable the
///   knowledge base lacks contradict;
/// - groundedness: the extractive answerer copies sentences, so its answers
///   are grounded by construction and the weight cannot be told from the
///   bias; 6 keeps a model's ungrounded answer far below a grounded one;
/// - the result count: a wider search after a weak first one returns 10
///   passages, so a fitted weight rewards the recovery for its size;
/// - a follow-up's coverage (no conversations in the split), the
///   generator's self-assessment (no language model offline), the score
///   statistics (left at 0) and the document history (only people's
///   ratings make it; `grace::learn` fits it).
const HELD: [(Factor, f64); 10] = [
    (Factor::ResultCount, 0.5),
    (Factor::Groundedness, 6.0),
    (Factor::MeanScore, 0.0),
    (Factor::ScoreVariance, 0.0),
    (Factor::MinScore, 0.0),
    (Factor::CitationValidity, 1.0),
    (Factor::SelfAssessment, 1.0),
    (Factor::IdentifierCoverage, 8.0),
    (Factor::FollowUpCoverage, 10.0),
    (Factor::DocumentHistory, 0.0),
];

/// Fitted on the reader-on run, everything else held.
const READER: [Factor; 2] = [Factor::Reader, Factor::ReaderMargin];

/// Folds of the cross-validation, as `grace calibrate` uses by default.
const FOLDS: usize = 5;

/// One line of `factor_probe`'s output (the fields read here).
#[derive(Deserialize)]
struct Probed {
    right: bool,
    factors: Factors,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if !(1..=2).contains(&args.len()) {
        return Err("usage: fit_weights OFF.jsonl [ON.jsonl]".into());
    }
    let (off, total) = load(Path::new(&args[0]))?;
    let index = |factor: Factor| Factor::ALL.iter().position(|f| *f == factor);
    // The reader-off fit: the bias and FITTED free; HELD at their values,
    // every other weight (the reader's) at 0.
    let mut held = Held::none();
    held.weights = [true; FEATURES];
    for factor in FITTED {
        held.weights[index(factor).ok_or("unknown factor")?] = false;
    }
    for (factor, value) in HELD {
        held.values.w[index(factor).ok_or("unknown factor")?] = value;
    }
    let cv = fit::cross_validate_holding(&off, FOLDS, &held);
    let model = fit::fit_holding(&off, cv.l2, &held);
    let right = off.iter().filter(|s| s.y).count();
    println!(
        "# fitted on {total} questions ({} with an answer step, {right} right); L2 {:?}; out of fold: {}",
        off.len(),
        cv.l2,
        figures(&cv.out_of_fold, &off)
    );
    let mut model = model;
    if let Some(on) = args.get(1) {
        let (on, _) = load(Path::new(on))?;
        // The reader's weights alone, from the fitted model.
        let mut reader = Held {
            values: model.clone(),
            bias: true,
            weights: [true; FEATURES],
        };
        for factor in READER {
            reader.weights[index(factor).ok_or("unknown factor")?] = false;
        }
        let cv = fit::cross_validate_holding(&on, FOLDS, &reader);
        model = fit::fit_holding(&on, cv.l2, &reader);
        println!(
            "# reader weights fitted with the others held, on the run with the reader on; L2 {:?}; out of fold: {}",
            cv.l2,
            figures(&cv.out_of_fold, &on)
        );
    }
    // Without the reader-on run the reader's weights were not fitted:
    // their lines are left out, so that pasting keeps the ones there.
    let skip: &[Factor] = if args.len() == 2 { &[] } else { &READER };
    print!("{}", yaml(&model, skip));
    Ok(())
}

/// The questions of a probe's output that have an answer step (a run
/// without one is scored 0, with no factors), and how many there were.
fn load(path: &Path) -> Result<(Vec<Sample>, usize), Box<dyn std::error::Error>> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut samples = Vec::new();
    let mut total = 0;
    for (n, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        total += 1;
        let probed: Probed =
            serde_json::from_str(line).map_err(|e| format!("{}:{}: {e}", path.display(), n + 1))?;
        if !probed.factors.0.is_empty() {
            samples.push(Sample {
                x: fit::features(&probed.factors),
                y: probed.right,
            });
        }
    }
    Ok((samples, total))
}

/// AUROC, ECE and log loss of out-of-fold probabilities.
fn figures(out_of_fold: &[f64], samples: &[Sample]) -> String {
    let fare = Fare::of(&fit::scored(out_of_fold, samples));
    let f = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.3}"));
    format!(
        "AUROC {}, ECE {}, log loss {}",
        f(fare.auroc),
        f(fare.ece),
        f(fare.log_loss)
    )
}

/// The `weights:` block of `grace_config.yml` (two decimals, as written
/// there), each held weight marked, without those in `skip`.
fn yaml(model: &Model, skip: &[Factor]) -> String {
    let round = |v: f64| (v * 100.0).round() / 100.0;
    let mut out = format!("  weights:\n    bias: {:?}\n", round(model.bias));
    for (factor, w) in Factor::ALL.iter().zip(model.w) {
        if skip.contains(factor) {
            continue;
        }
        let name = serde_json::to_value(factor).ok();
        let name = name.as_ref().and_then(|v| v.as_str()).unwrap_or("?");
        let mark = if HELD.iter().any(|(f, _)| f == factor) {
            "  # held"
        } else {
            ""
        };
        out.push_str(&format!("    {name}: {:?}{mark}\n", round(w)));
    }
    out
}
