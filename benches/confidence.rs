//! The confidence computation: scoring an answer's factors with the
//! logistic model and with the original GRACE formula, and fitting a
//! calibration to 130 outcomes (the size of the debian-faq set).

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use grace::confidence::fit::{self, FEATURES, Sample};
use grace::confidence::{Factor, Factors, score, v1};
use grace::config::{V1Weights, Weights};

fn answer_factors() -> Factors {
    let mut f = Factors::default();
    for (factor, value) in [
        (Factor::ResultCount, 5.0),
        (Factor::MaxScore, 0.62),
        (Factor::MeanScore, 0.41),
        (Factor::ScoreVariance, 0.01),
        (Factor::MinScore, 0.30),
        (Factor::Margin, 0.08),
        (Factor::NeighbourScore, 0.52),
        (Factor::QueryCoverage, 0.8),
        (Factor::Groundedness, 1.0),
        (Factor::CitationValidity, 1.0),
        (Factor::Abstained, 0.0),
    ] {
        f.set(factor, value);
    }
    f
}

fn bench(c: &mut Criterion) {
    let factors = answer_factors();
    let weights = Weights::default();
    let v1_weights = V1Weights::default();
    c.bench_function("confidence: logistic score of an answer", |b| {
        b.iter(|| score(black_box(&factors), &weights).score)
    });
    c.bench_function("confidence: grace_v1 score of an answer", |b| {
        b.iter(|| v1::score(black_box(&factors), &v1_weights).score)
    });
    // 130 deterministic samples whose outcome follows the max score.
    let samples: Vec<Sample> = (0..130)
        .map(|i| {
            let mut x = [0.0; FEATURES];
            x[1] = (i as f64 * 0.618_033_988_75) % 1.0;
            x[8] = f64::from(i % 3 != 0);
            Sample {
                x,
                y: x[1] + 0.3 * x[8] > 0.6,
            }
        })
        .collect();
    c.bench_function("confidence: fit 130 outcomes (L2 0.1)", |b| {
        b.iter(|| fit::fit(black_box(&samples), 0.1).bias)
    });
    c.bench_function(
        "confidence: 5-fold cross-validation over the L2 grid",
        |b| b.iter(|| fit::cross_validate(black_box(&samples), 5).l2),
    );
}

// Criterion's HTML plots need a system font that plotters (built with
// ab_glyph for `grace eval --plot`) does not look up: figures only.
criterion_group! {
    name = benches;
    config = Criterion::default().without_plots();
    targets = bench
}
criterion_main!(benches);
