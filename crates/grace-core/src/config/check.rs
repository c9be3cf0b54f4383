//! The building blocks of the checks: the error that names a key, and a
//! range check.

use super::{ConfigError, Result};

pub(super) fn invalid(key: &str, message: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        key: key.to_string(),
        message: message.into(),
        file: None,
        line: None,
    }
}

/// A number from the configuration must be in `range` (a float that is
/// not finite never is): "`value` is out of range `range``note`", the
/// range as written in Rust when it is closed (`0.0..=1.0`, `1..=100`),
/// else as an interval (`(0.0, 3600.0]` for `(Excluded(0.0),
/// Included(3600.0))`). `note` says what the range means, e.g.
/// `" (0 = all cores)"`, or is empty. Every range check of a section uses
/// it.
pub(super) fn in_range<T, R>(key: &str, value: T, range: R, note: &str) -> Result<()>
where
    T: PartialOrd + std::fmt::Display + std::fmt::Debug,
    R: std::ops::RangeBounds<T>,
{
    use std::ops::Bound::{Excluded, Included, Unbounded};
    if range.contains(&value) {
        return Ok(());
    }
    let shown = match (range.start_bound(), range.end_bound()) {
        (Included(a), Included(b)) => format!("{a:?}..={b:?}"),
        (start, end) => {
            let start = match start {
                Included(a) => format!("[{a:?}"),
                Excluded(a) => format!("({a:?}"),
                Unbounded => "(-∞".to_string(),
            };
            let end = match end {
                Included(b) => format!("{b:?}]"),
                Excluded(b) => format!("{b:?})"),
                Unbounded => "∞)".to_string(),
            };
            format!("{start}, {end}")
        }
    };
    Err(invalid(
        key,
        format!("{value} is out of range {shown}{note}"),
    ))
}

/// Above 0 and at most `max`: `(0.0, max]`.
pub(super) fn above_zero(max: f64) -> (std::ops::Bound<f64>, std::ops::Bound<f64>) {
    use std::ops::Bound::{Excluded, Included};
    (Excluded(0.0), Included(max))
}

/// Above 0, and finite: `(0.0, inf)`.
pub(super) const ABOVE_ZERO: (std::ops::Bound<f64>, std::ops::Bound<f64>) = (
    std::ops::Bound::Excluded(0.0),
    std::ops::Bound::Excluded(f64::INFINITY),
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_out_of_range_names_the_key_the_value_and_the_range_as_written() {
        assert!(in_range("a.b", 5_usize, 1..=5, "").is_ok());
        let e = in_range("a.b", 0_usize, 1..=5, " (passages)").unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid value for `a.b`: 0 is out of range 1..=5 (passages)"
        );
        let e = in_range("a.c", 2.0_f64, 0.0..=1.0, "").unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid value for `a.c`: 2 is out of range 0.0..=1.0"
        );
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert!(in_range("a.c", bad, 0.0..=1.0, "").is_err(), "{bad}");
        }
        use std::ops::Bound::{Excluded, Included, Unbounded};
        let above_zero = (Excluded(0.0), Included(3600.0));
        assert!(in_range("a.d", 3600.0, above_zero, "").is_ok());
        let e = in_range("a.d", 0.0, above_zero, " seconds").unwrap_err();
        assert!(
            e.to_string()
                .ends_with("0 is out of range (0.0, 3600.0] seconds"),
            "{e}"
        );
        let e = in_range("a.e", f64::NAN, (Excluded(0.0), Unbounded), "").unwrap_err();
        assert!(
            e.to_string().ends_with("NaN is out of range (0.0, ∞)"),
            "{e}"
        );
    }
}
