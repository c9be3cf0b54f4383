//! Fitting the confidence weights to outcomes: L2-regularised logistic
//! regression (Newton's method) on the features of [`super::score`], with
//! stratified k-fold cross-validation to choose the regularisation and to
//! say how well the fitted weights do on questions they were not fitted on.
//!
//! The model is exactly the one GRACE scores with, `sigmoid(bias + Σ wᵢ·xᵢ)`
//! with `xᵢ = Factor::feature(value)` (0 for a factor a step did not
//! report), so fitted weights drop into `confidence.weights` unchanged.

use serde::{Deserialize, Serialize};

use super::metrics;
use super::{Factor, Factors, sigmoid};
use crate::config::Weights;

/// Number of features (one per [`Factor`]).
pub const FEATURES: usize = Factor::ALL.len();

/// Regularisation strengths tried by cross-validation (λ of `λ/2·‖w‖²`;
/// the bias is not penalised).
pub const L2_GRID: [f64; 7] = [0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0];

/// One outcome to fit: the features of a final answer and whether it was
/// right.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// [`features`] of the answer's factors.
    pub x: [f64; FEATURES],
    /// Whether the answer was right.
    pub y: bool,
}

/// Each score paired with its sample's outcome, as [`Fare::of`] reads them.
pub fn scored(scores: &[f64], samples: &[Sample]) -> Vec<(f64, bool)> {
    scores.iter().zip(samples).map(|(p, s)| (*p, s.y)).collect()
}

/// The feature vector of `factors`, in [`Factor::ALL`] order.
pub fn features(factors: &Factors) -> [f64; FEATURES] {
    let mut x = [0.0; FEATURES];
    for (i, factor) in Factor::ALL.iter().enumerate() {
        if let Some(value) = factors.get(*factor) {
            x[i] = factor.feature(value);
        }
    }
    x
}

/// A fitted model: bias and one weight per feature.
#[derive(Debug, Clone, PartialEq)]
pub struct Model {
    /// The bias.
    pub bias: f64,
    /// Weights in [`Factor::ALL`] order.
    pub w: [f64; FEATURES],
}

impl Model {
    /// The probability the model gives `x`.
    pub fn predict(&self, x: &[f64; FEATURES]) -> f64 {
        sigmoid(self.bias + self.w.iter().zip(x).map(|(w, x)| w * x).sum::<f64>())
    }

    /// The bias, then the weights.
    fn parameters(&self) -> [f64; PARAMETERS] {
        let mut theta = [0.0; PARAMETERS];
        theta[0] = self.bias;
        theta[1..].copy_from_slice(&self.w);
        theta
    }

    /// From the bias, then the weights.
    fn from_parameters(theta: [f64; PARAMETERS]) -> Self {
        let mut w = [0.0; FEATURES];
        w.copy_from_slice(&theta[1..]);
        Self { bias: theta[0], w }
    }

    /// As `confidence.weights`.
    pub fn weights(&self) -> Weights {
        let mut weights = Weights {
            bias: self.bias,
            ..Weights::default()
        };
        for (factor, w) in Factor::ALL.iter().zip(self.w) {
            *factor.weight_mut(&mut weights) = w;
        }
        weights
    }

    /// From `confidence.weights`.
    pub fn from_weights(weights: &Weights) -> Self {
        let mut w = [0.0; FEATURES];
        for (i, factor) in Factor::ALL.iter().enumerate() {
            w[i] = factor.weight(weights);
        }
        Self {
            bias: weights.bias,
            w,
        }
    }
}

/// Fits the model to `samples` with L2 strength `l2` (Newton's method with
/// step halving; converges in a handful of iterations at these sizes).
pub fn fit(samples: &[Sample], l2: f64) -> Model {
    fit_holding(samples, l2, &Held::none())
}

/// Parameters kept at given values while the others are fitted: their
/// features then add a fixed offset to each sample's logit. How GRACE's
/// default weights are fitted where its training questions cannot speak
/// for a factor (`examples/fit_weights.rs`).
#[derive(Debug, Clone, PartialEq)]
pub struct Held {
    /// The held values (the others are ignored).
    pub values: Model,
    /// Whether the bias is held.
    pub bias: bool,
    /// Whether each weight, in [`Factor::ALL`] order, is held.
    pub weights: [bool; FEATURES],
}

impl Held {
    /// Nothing held: every parameter is fitted.
    pub fn none() -> Self {
        Self {
            values: Model {
                bias: 0.0,
                w: [0.0; FEATURES],
            },
            bias: false,
            weights: [false; FEATURES],
        }
    }

    /// Whether parameter `j` (the bias first) is held.
    fn holds(&self, j: usize) -> bool {
        if j == 0 {
            self.bias
        } else {
            self.weights[j - 1]
        }
    }
}

/// [`fit`] with the parameters `held` names kept at its values.
pub fn fit_holding(samples: &[Sample], l2: f64, held: &Held) -> Model {
    // Start the bias at the base rate: fewer iterations, same optimum.
    let positives = samples.iter().filter(|s| s.y).count() as f64;
    let n = samples.len() as f64;
    let mut start = Model {
        bias: 0.0,
        w: [0.0; FEATURES],
    };
    if n > 0.0 {
        let rate = ((positives + 0.5) / (n + 1.0)).clamp(1e-3, 1.0 - 1e-3);
        start.bias = (rate / (1.0 - rate)).ln();
    }
    let values = held.values.parameters();
    let mut theta = start.parameters();
    let mut free = [true; PARAMETERS];
    for j in 0..PARAMETERS {
        if held.holds(j) {
            theta[j] = values[j];
            free[j] = false;
        }
    }
    let start = Model::from_parameters(theta);
    // The weights toward 0, the bias free.
    let mut strength = [l2; PARAMETERS];
    strength[0] = 0.0;
    newton(samples, None, [0.0; PARAMETERS], strength, start, free)
}

/// Parameters of a model: the bias first, then one weight per feature.
pub const PARAMETERS: usize = FEATURES + 1;

/// Fits the model to `samples`, each counted `weights[i]` times, pulled
/// toward `prior` with strength `l2[j]` on parameter `j` (`Σ l2ⱼ/2·(θⱼ −
/// θ_priorⱼ)²`, the bias first): with no samples it is the prior, and it
/// moves away as weight accumulates. How feedback refits the weights
/// people's labels speak for, starting from the fit they have.
pub fn fit_toward(
    samples: &[Sample],
    weights: &[f64],
    prior: &Model,
    l2: &[f64; PARAMETERS],
) -> Model {
    newton(
        samples,
        Some(weights),
        prior.parameters(),
        *l2,
        prior.clone(),
        [true; PARAMETERS],
    )
}

/// Newton's method with step halving on the weighted log loss plus the
/// penalty `Σ strengthⱼ/2·(θⱼ − centerⱼ)²`, from `start`; a parameter not
/// `free` stays at its start.
fn newton(
    samples: &[Sample],
    sample_weights: Option<&[f64]>,
    center: [f64; PARAMETERS],
    strength: [f64; PARAMETERS],
    start: Model,
    free: [bool; PARAMETERS],
) -> Model {
    const P: usize = PARAMETERS;
    let weight = |i: usize| {
        sample_weights
            .and_then(|w| w.get(i))
            .copied()
            .unwrap_or(1.0)
    };
    let mut theta = start.parameters();
    let row = |s: &Sample| {
        let mut r = [1.0; P];
        r[1..].copy_from_slice(&s.x);
        r
    };
    let loss = |t: &[f64; P]| {
        let data: f64 = samples
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let z: f64 = row(s).iter().zip(t).map(|(a, b)| a * b).sum();
                weight(i) * log_loss_term(z, s.y)
            })
            .sum();
        data + 0.5
            * (0..P)
                .map(|i| strength[i] * (t[i] - center[i]).powi(2))
                .sum::<f64>()
    };
    let mut current = loss(&theta);
    for _ in 0..100 {
        let mut gradient = [0.0; P];
        let mut hessian = [[0.0; P]; P];
        for (n, s) in samples.iter().enumerate() {
            let r = row(s);
            let z: f64 = r.iter().zip(&theta).map(|(a, b)| a * b).sum();
            let p = sigmoid(z);
            let residual = weight(n) * (p - if s.y { 1.0 } else { 0.0 });
            let curvature = weight(n) * (p * (1.0 - p)).max(1e-12);
            for i in 0..P {
                gradient[i] += residual * r[i];
                for j in 0..P {
                    hessian[i][j] += curvature * r[i] * r[j];
                }
            }
        }
        for i in 0..P {
            gradient[i] += strength[i] * (theta[i] - center[i]);
            hessian[i][i] += strength[i];
        }
        hessian[0][0] += 1e-9;
        // A held parameter: no step (its row and column out of the system).
        for i in (0..P).filter(|&i| !free[i]) {
            gradient[i] = 0.0;
            hessian[i] = [0.0; P];
            for row in hessian.iter_mut() {
                row[i] = 0.0;
            }
            hessian[i][i] = 1.0;
        }
        let Some(step) = solve(hessian, gradient) else {
            break;
        };
        let mut scale = 1.0;
        let mut improved = false;
        for _ in 0..30 {
            let mut next = theta;
            for i in 0..P {
                next[i] -= scale * step[i];
            }
            let l = loss(&next);
            if l <= current {
                let gain = current - l;
                theta = next;
                current = l;
                improved = gain > 1e-10 * (1.0 + current.abs());
                break;
            }
            scale /= 2.0;
        }
        if !improved {
            break;
        }
    }
    Model::from_parameters(theta)
}

/// Recalibrates `base` to `samples` (Platt scaling): `σ(a·z + b)` with `z`
/// the logit `base` gives, `a` and `b` fitted; returned as weights (each
/// scaled by `a`, the bias `a·bias + b`), with the cross-validated figures
/// of the two parameters. A monotone map of the base score: it moves the
/// scale to where this knowledge base's answers are right, and cannot
/// reorder answers, so it cannot lower the AUROC the base model has.
pub fn recalibrate(samples: &[Sample], base: &Weights, folds: usize) -> (Weights, CrossValidation) {
    let model = Model::from_weights(base);
    let logit = |s: &Sample| model.bias + model.w.iter().zip(&s.x).map(|(w, x)| w * x).sum::<f64>();
    // One feature, the base logit, in the first slot.
    let one: Vec<Sample> = samples
        .iter()
        .map(|s| {
            let mut x = [0.0; FEATURES];
            x[0] = logit(s);
            Sample { x, y: s.y }
        })
        .collect();
    let cv = cross_validate(&one, folds);
    let scale = fit(&one, cv.l2);
    let (a, b) = (scale.w[0], scale.bias);
    let mut weights = *base;
    weights.bias = a * base.bias + b;
    for factor in Factor::ALL {
        *factor.weight_mut(&mut weights) = a * factor.weight(base);
    }
    (weights, cv)
}

/// `-log p(y | z)` for logit `z`, stable for large |z|.
fn log_loss_term(z: f64, y: bool) -> f64 {
    // log(1 + e^z) - y·z
    let softplus = if z > 0.0 {
        z + (-z).exp().ln_1p()
    } else {
        z.exp().ln_1p()
    };
    softplus - if y { z } else { 0.0 }
}

/// Solves `a · x = b` by Gaussian elimination with partial pivoting;
/// `None` when `a` is singular.
fn solve<const P: usize>(mut a: [[f64; P]; P], mut b: [f64; P]) -> Option<[f64; P]> {
    for col in 0..P {
        let pivot = (col..P).max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))?;
        if a[pivot][col].abs() < 1e-14 {
            return None;
        }
        a.swap(col, pivot);
        b.swap(col, pivot);
        let pivot_row = a[col];
        for row in col + 1..P {
            let f = a[row][col] / pivot_row[col];
            if f != 0.0 {
                for (x, p) in a[row][col..].iter_mut().zip(&pivot_row[col..]) {
                    *x -= f * p;
                }
                b[row] -= f * b[col];
            }
        }
    }
    let mut x = [0.0; P];
    for row in (0..P).rev() {
        let s: f64 = (row + 1..P).map(|k| a[row][k] * x[k]).sum();
        x[row] = (b[row] - s) / a[row][row];
    }
    Some(x)
}

/// Stratified fold of each sample: positives dealt round the folds in
/// order, then negatives, so each fold holds about the same share of each
/// class. Deterministic (the samples' order decides).
pub fn folds(samples: &[Sample], k: usize) -> Vec<usize> {
    let k = k.max(1);
    let mut fold = vec![0; samples.len()];
    let mut next = 0;
    for label in [true, false] {
        for (i, s) in samples.iter().enumerate() {
            if s.y == label {
                fold[i] = next % k;
                next += 1;
            }
        }
    }
    fold
}

/// How one set of scores fares against outcomes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Fare {
    /// Samples scored.
    pub n: usize,
    /// Of them right.
    pub right: usize,
    /// Expected calibration error (10 bins).
    pub ece: Option<f64>,
    /// Brier score.
    pub brier: Option<f64>,
    /// Area under the ROC curve (right vs wrong).
    pub auroc: Option<f64>,
    /// Mean log loss.
    pub log_loss: Option<f64>,
}

impl Fare {
    /// The figures of `(score, right)` pairs.
    pub fn of(pairs: &[(f64, bool)]) -> Self {
        let log_loss = (!pairs.is_empty()).then(|| {
            pairs
                .iter()
                .map(|(p, y)| {
                    let p = p.clamp(1e-12, 1.0 - 1e-12);
                    -if *y { p.ln() } else { (1.0 - p).ln() }
                })
                .sum::<f64>()
                / pairs.len() as f64
        });
        Self {
            n: pairs.len(),
            right: pairs.iter().filter(|p| p.1).count(),
            ece: metrics::ece(pairs, metrics::ECE_BINS),
            brier: metrics::brier(pairs),
            auroc: metrics::auroc(pairs),
            log_loss,
        }
    }
}

/// What cross-validation found.
#[derive(Debug, Clone, PartialEq)]
pub struct CrossValidation {
    /// Number of folds.
    pub k: usize,
    /// The chosen L2 strength (lowest mean held-out log loss on [`L2_GRID`]).
    pub l2: f64,
    /// Each fold's held-out figures with the chosen strength.
    pub folds: Vec<Fare>,
    /// Out-of-fold probability of every sample, in order.
    pub out_of_fold: Vec<f64>,
}

/// Out-of-fold predictions of a model fitted with `l2` on the other folds.
pub fn out_of_fold(samples: &[Sample], fold: &[usize], k: usize, l2: f64) -> Vec<f64> {
    out_of_fold_holding(samples, fold, k, l2, &Held::none())
}

/// [`out_of_fold`] with the parameters `held` names kept at its values.
pub fn out_of_fold_holding(
    samples: &[Sample],
    fold: &[usize],
    k: usize,
    l2: f64,
    held: &Held,
) -> Vec<f64> {
    let mut predictions = vec![0.5; samples.len()];
    for f in 0..k {
        let train: Vec<Sample> = samples
            .iter()
            .zip(fold)
            .filter(|(_, g)| **g != f)
            .map(|(s, _)| s.clone())
            .collect();
        let model = fit_holding(&train, l2, held);
        for (i, s) in samples.iter().enumerate() {
            if fold[i] == f {
                predictions[i] = model.predict(&s.x);
            }
        }
    }
    predictions
}

/// Chooses the L2 strength by `k`-fold cross-validation and reports the
/// held-out figures of each fold.
pub fn cross_validate(samples: &[Sample], k: usize) -> CrossValidation {
    cross_validate_holding(samples, k, &Held::none())
}

/// [`cross_validate`] with the parameters `held` names kept at its values.
pub fn cross_validate_holding(samples: &[Sample], k: usize, held: &Held) -> CrossValidation {
    let k = k.clamp(2, samples.len().max(2));
    let fold = folds(samples, k);
    let mut best: Option<(f64, f64, Vec<f64>)> = None;
    for l2 in L2_GRID {
        let predictions = out_of_fold_holding(samples, &fold, k, l2, held);
        let pairs: Vec<(f64, bool)> = predictions
            .iter()
            .zip(samples)
            .map(|(p, s)| (*p, s.y))
            .collect();
        let loss = Fare::of(&pairs).log_loss.unwrap_or(f64::INFINITY);
        if best.as_ref().is_none_or(|b| loss < b.0) {
            best = Some((loss, l2, predictions));
        }
    }
    let (_, l2, out_of_fold) = best.unwrap_or((0.0, L2_GRID[0], vec![0.5; samples.len()]));
    let folds = (0..k)
        .map(|f| {
            let pairs: Vec<(f64, bool)> = out_of_fold
                .iter()
                .zip(samples)
                .zip(&fold)
                .filter(|(_, g)| **g == f)
                .map(|((p, s), _)| (*p, s.y))
                .collect();
            Fare::of(&pairs)
        })
        .collect();
    CrossValidation {
        k,
        l2,
        folds,
        out_of_fold,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(x0: f64, y: bool) -> Sample {
        let mut x = [0.0; FEATURES];
        x[1] = x0; // max_score
        Sample { x, y }
    }

    /// Samples drawn from a known logistic model: y ~ Bernoulli(sigmoid(-4 + 8·x)).
    fn from_known_model(n: usize) -> Vec<Sample> {
        // A fixed low-discrepancy sequence instead of a random generator.
        let mut out = Vec::new();
        for i in 0..n {
            let x = (i as f64 + 0.5) / n as f64;
            let u = ((i as f64 * 0.618_033_988_75) % 1.0 + 0.5) % 1.0;
            out.push(sample(x, u < sigmoid(-4.0 + 8.0 * x)));
        }
        out
    }

    #[test]
    fn recovers_a_known_model() {
        let model = fit(&from_known_model(4000), 0.01);
        assert!((model.bias + 4.0).abs() < 0.5, "{model:?}");
        assert!((model.w[1] - 8.0).abs() < 1.0, "{model:?}");
        assert!(
            model.w.iter().enumerate().all(|(i, w)| i == 1 || *w == 0.0),
            "features that never vary stay at 0: {model:?}"
        );
    }

    /// A held weight stays exactly where it was put and the rest fit
    /// around it: holding the true slope recovers the true bias; holding a
    /// wrong one moves the bias to make up for it; holding the bias too
    /// leaves only the free weights to fit.
    #[test]
    fn held_parameters_stay_and_the_free_ones_fit_around_them() {
        let samples = from_known_model(4000);
        let mut held = Held::none();
        held.weights[1] = true;
        held.values.w[1] = 8.0;
        let model = fit_holding(&samples, 0.01, &held);
        assert_eq!(model.w[1], 8.0);
        assert!((model.bias + 4.0).abs() < 0.3, "{model:?}");
        held.values.w[1] = 4.0;
        let wrong = fit_holding(&samples, 0.01, &held);
        assert_eq!(wrong.w[1], 4.0);
        assert!(
            wrong.bias > model.bias + 1.0,
            "the bias makes up for a smaller slope: {wrong:?}"
        );
        let mut both = Held::none();
        both.bias = true;
        both.values.bias = -4.0;
        let slope = fit_holding(&samples, 0.01, &both);
        assert_eq!(slope.bias, -4.0);
        assert!((slope.w[1] - 8.0).abs() < 1.0, "{slope:?}");
        // Nothing held is the plain fit, to the bit.
        assert_eq!(
            fit_holding(&samples, 0.1, &Held::none()),
            fit(&samples, 0.1)
        );
        let cv = cross_validate_holding(&samples, 5, &held);
        assert_eq!(cv.out_of_fold.len(), samples.len());
    }

    #[test]
    fn separable_data_stays_finite_with_l2() {
        let samples: Vec<Sample> = (0..20).map(|i| sample(i as f64 / 20.0, i >= 10)).collect();
        let model = fit(&samples, 0.1);
        assert!(model.bias.is_finite() && model.w[1].is_finite());
        assert!(model.predict(&samples[19].x) > 0.9);
        assert!(model.predict(&samples[0].x) < 0.1);
    }

    #[test]
    fn folds_are_stratified() {
        let samples: Vec<Sample> = (0..50).map(|i| sample(0.0, i % 5 == 0)).collect();
        let fold = folds(&samples, 5);
        for f in 0..5 {
            let members: Vec<&Sample> = samples
                .iter()
                .zip(&fold)
                .filter(|(_, g)| **g == f)
                .map(|(s, _)| s)
                .collect();
            assert_eq!(members.len(), 10);
            assert_eq!(members.iter().filter(|s| s.y).count(), 2);
        }
    }

    #[test]
    fn cross_validation_scores_every_sample_out_of_fold_and_calibrates() {
        let samples = from_known_model(600);
        let cv = cross_validate(&samples, 5);
        assert_eq!(cv.folds.len(), 5);
        assert_eq!(cv.out_of_fold.len(), samples.len());
        assert_eq!(cv.folds.iter().map(|f| f.n).sum::<usize>(), 600);
        let pairs: Vec<(f64, bool)> = cv
            .out_of_fold
            .iter()
            .zip(&samples)
            .map(|(p, s)| (*p, s.y))
            .collect();
        let fare = Fare::of(&pairs);
        assert!(fare.ece.unwrap() < 0.08, "{fare:?}");
        // A badly calibrated scorer (right order, wrong scale) does worse.
        let overconfident: Vec<(f64, bool)> = samples
            .iter()
            .map(|s| (sigmoid(-40.0 + 80.0 * s.x[1]), s.y))
            .collect();
        assert!(Fare::of(&overconfident).ece.unwrap() > fare.ece.unwrap());
    }

    #[test]
    fn recalibration_rescales_without_reordering() {
        // Outcomes follow sigmoid(-4 + 8x); the base model says 20x - 10,
        // right order, wrong scale.
        let samples = from_known_model(2000);
        let mut base = Weights {
            bias: -10.0,
            ..Weights::default()
        };
        for factor in Factor::ALL {
            *factor.weight_mut(&mut base) = 0.0;
        }
        base.max_score = 20.0;
        let (weights, cv) = recalibrate(&samples, &base, 5);
        assert!((weights.max_score - 8.0).abs() < 1.5, "{weights:?}");
        assert!((weights.bias + 4.0).abs() < 1.0, "{weights:?}");
        assert_eq!(cv.out_of_fold.len(), samples.len());
        let before = Model::from_weights(&base);
        let after = Model::from_weights(&weights);
        let order = |m: &Model| {
            let mut i: Vec<usize> = (0..samples.len()).collect();
            i.sort_by(|a, b| {
                m.predict(&samples[*a].x)
                    .total_cmp(&m.predict(&samples[*b].x))
            });
            i
        };
        assert_eq!(order(&before), order(&after));
    }

    #[test]
    fn a_fit_toward_a_prior_starts_there_and_leaves_it_as_labels_accumulate() {
        let prior = Model {
            bias: 2.0,
            w: [0.0; FEATURES],
        };
        // No samples: the prior itself.
        let none = fit_toward(&[], &[], &prior, &[10.0; PARAMETERS]);
        assert!((none.bias - 2.0).abs() < 1e-6, "{none:?}");
        // Data that say the bias is about -1 (a quarter right): a few
        // samples move it a little, many move it most of the way.
        let data = |n: usize| -> Vec<Sample> {
            (0..n)
                .map(|i| Sample {
                    x: [0.0; FEATURES],
                    y: i % 4 == 0,
                })
                .collect()
        };
        let bias_after = |n: usize| {
            let samples = data(n);
            fit_toward(&samples, &vec![1.0; n], &prior, &[10.0; PARAMETERS]).bias
        };
        let (few, many) = (bias_after(8), bias_after(8_000));
        assert!(few < 2.0 && few > 0.0, "{few}");
        assert!((many - (1.0f64 / 3.0).ln()).abs() < 0.1, "{many}");
        // A sample's weight counts as that many copies of it.
        let samples = data(8);
        let weighted = fit_toward(&samples, &[3.0; 8], &prior, &[10.0; PARAMETERS]).bias;
        let copies: Vec<Sample> = (0..3).flat_map(|_| samples.clone()).collect();
        let copied = fit_toward(&copies, &[1.0; 24], &prior, &[10.0; PARAMETERS]).bias;
        assert!((weighted - copied).abs() < 1e-6, "{weighted} {copied}");
    }

    #[test]
    fn weights_round_trip() {
        let weights = Weights::default();
        assert_eq!(Model::from_weights(&weights).weights(), weights);
    }
}
