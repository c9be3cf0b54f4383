//! `grace eval --plot FILE`: the coverage/risk curves of the confidence
//! models as a PNG, so a user sees where to set the thresholds.
//!
//! Text needs a TrueType font; plotters is built without system font
//! lookup (no fontconfig), so the first of [`FONT_PATHS`] that exists is
//! loaded (Debian's `fonts-dejavu-core`, which `scripts/setup` installs).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use plotters::prelude::*;
use plotters::style::{FontStyle, register_font};

use super::ModelFare;

/// Fonts tried, in order.
pub const FONT_PATHS: [&str; 3] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
];

/// Why the plot could not be drawn.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// No font to write the labels with.
    #[error(
        "no TrueType font found for the plot's labels (looked for {}): install Debian's fonts-dejavu-core (`scripts/setup` does)",
        FONT_PATHS.join(", ")
    )]
    NoFont,
    /// Drawing or writing the file failed.
    #[error("cannot draw the plot {path}: {message}")]
    Draw {
        /// The PNG file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
}

/// Registers the first font found as plotters' `sans-serif`, once per
/// process (plotters keeps a `'static` reference to the bytes).
fn register_sans() -> Result<(), PlotError> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED.get_or_init(|| {
        FONT_PATHS.iter().any(|p| {
            std::fs::read(p).is_ok_and(|bytes| {
                let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
                register_font("sans-serif", FontStyle::Normal, bytes).is_ok()
            })
        })
    });
    if ok { Ok(()) } else { Err(PlotError::NoFont) }
}

/// Draws, side by side, the coverage (share of questions answered)
/// against the risk (share of those answered that are wrong) of each
/// model, one point per threshold, and each model's reliability diagram
/// (mean score against share right per tenth of the score, the diagonal
/// for perfect calibration, each point's count beside it), to a PNG at
/// `path`; `title` heads it.
pub fn coverage_risk_png(path: &Path, title: &str, models: &[ModelFare]) -> Result<(), PlotError> {
    register_sans()?;
    let draw = |message: String| PlotError::Draw {
        path: path.to_path_buf(),
        message,
    };
    let root = BitMapBackend::new(path, (1500, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| draw(e.to_string()))?;
    let root = root
        .titled(title, ("sans-serif", 22))
        .map_err(|e| draw(e.to_string()))?;
    let (left, right) = root.split_horizontally(900);
    coverage_risk_panel(&left, models).map_err(draw)?;
    reliability_panel(&right, models).map_err(draw)?;
    root.present().map_err(|e| draw(e.to_string()))?;
    Ok(())
}

type Area<'a> = DrawingArea<BitMapBackend<'a>, plotters::coord::Shift>;
const COLOURS: [RGBColor; 6] = [BLUE, RED, GREEN, MAGENTA, CYAN, BLACK];

/// The reliability diagrams of `models` on `area`.
fn reliability_panel(area: &Area<'_>, models: &[ModelFare]) -> Result<(), String> {
    let mut chart = ChartBuilder::on(area)
        .caption(
            "reliability: predicted against observed",
            ("sans-serif", 17),
        )
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(56)
        .build_cartesian_2d(0.0f64..1.0f64, 0.0f64..1.0f64)
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .x_desc("confidence given (mean per tenth)")
        .y_desc("share right")
        .label_style(("sans-serif", 15))
        .draw()
        .map_err(|e| e.to_string())?;
    chart
        .draw_series(LineSeries::new(
            vec![(0.0, 0.0), (1.0, 1.0)],
            BLACK.mix(0.3),
        ))
        .map_err(|e| e.to_string())?;
    for (i, model) in models.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let points: Vec<(f64, f64)> = model
            .reliability
            .iter()
            .map(|b| (b.predicted, b.observed))
            .collect();
        chart
            .draw_series(LineSeries::new(points, colour.stroke_width(2)))
            .map_err(|e| e.to_string())?;
        chart
            .draw_series(model.reliability.iter().map(|b| {
                EmptyElement::at((b.predicted, b.observed))
                    + Circle::new((0, 0), 3, colour.filled())
                    + Text::new(
                        format!("{}", b.count),
                        (5, -14),
                        ("sans-serif", 12).into_font(),
                    )
            }))
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// The coverage/risk curves of `models` on `area`.
fn coverage_risk_panel(root: &Area<'_>, models: &[ModelFare]) -> Result<(), String> {
    let max_risk = models
        .iter()
        .flat_map(|m| m.coverage_risk.iter().map(|p| p.risk))
        .fold(0.0f64, f64::max)
        .max(0.05);
    let mut chart = ChartBuilder::on(root)
        .caption("coverage against risk", ("sans-serif", 17))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(64)
        .build_cartesian_2d(0.0f64..1.0f64, 0.0f64..(max_risk * 1.1).min(1.0))
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .x_desc("coverage: share of questions answered (score >= threshold)")
        .y_desc("risk: share of answered that are wrong")
        .label_style(("sans-serif", 15))
        .draw()
        .map_err(|e| e.to_string())?;
    for (i, model) in models.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let points: Vec<(f64, f64)> = model
            .coverage_risk
            .iter()
            .filter(|p| p.coverage > 0.0)
            .map(|p| (p.coverage, p.risk))
            .collect();
        let label = format!(
            "{} (ECE {})",
            model.model,
            model
                .fare
                .ece
                .map_or_else(|| "-".to_string(), |e| format!("{e:.3}"))
        );
        chart
            .draw_series(LineSeries::new(points.clone(), colour.stroke_width(2)))
            .map_err(|e| e.to_string())?
            .label(label)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2))
            });
        chart
            .draw_series(
                points
                    .into_iter()
                    .map(|p| Circle::new(p, 3, colour.filled())),
            )
            .map_err(|e| e.to_string())?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .label_font(("sans-serif", 15))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(|e| e.to_string())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coverage_risk;
    use grace::confidence::fit::Fare;

    #[test]
    fn writes_a_png() {
        if !FONT_PATHS.iter().any(|p| Path::new(p).is_file()) {
            // scripts/setup installs the font; say so rather than pass silently.
            panic!("no font installed: run scripts/setup");
        }
        let pairs = [
            (0.9, true),
            (0.8, true),
            (0.6, false),
            (0.3, false),
            (0.2, true),
        ];
        let model = ModelFare {
            model: "hand_set".into(),
            note: String::new(),
            fare: Fare::of(&pairs),
            ece_floor: None,
            coverage_risk: coverage_risk(&pairs),
            reliability: grace::confidence::metrics::reliability(&pairs, 10),
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("curve.png");
        coverage_risk_png(&path, "test", &[model]).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
        assert!(bytes.len() > 5_000, "{} bytes", bytes.len());
    }
}
