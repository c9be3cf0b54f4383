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

/// A size or count from config must be in `range`.
pub(super) fn in_range(
    key: &str,
    value: usize,
    range: std::ops::RangeInclusive<usize>,
) -> Result<()> {
    if range.contains(&value) {
        Ok(())
    } else {
        Err(invalid(
            key,
            format!(
                "{value} is out of range {}..={}",
                range.start(),
                range.end()
            ),
        ))
    }
}
