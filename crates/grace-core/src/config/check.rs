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
/// not finite never is): "`value` is out of range `start..=end``note`",
/// the bounds as written in Rust (`0.0..=1.0`, `1..=100`). `note` says what
/// the range means, e.g. `" (0 = all cores)"`, or is empty. Every range
/// check of a section uses it.
pub(super) fn in_range<T>(
    key: &str,
    value: T,
    range: std::ops::RangeInclusive<T>,
    note: &str,
) -> Result<()>
where
    T: PartialOrd + std::fmt::Display + std::fmt::Debug,
{
    if range.contains(&value) {
        Ok(())
    } else {
        Err(invalid(
            key,
            format!(
                "{value} is out of range {:?}..={:?}{note}",
                range.start(),
                range.end()
            ),
        ))
    }
}

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
    }
}
