//! `GRACE_<SECTION>__<KEY>` environment overrides.
//!
//! `GRACE_QDRANT__SEARCH_LIMIT=10` sets `qdrant.search_limit`. The value is
//! read as a YAML scalar (`10`, `true`, `[a, b]`), except for keys whose
//! value is a string, which take the text as it is. Variables named
//! `GRACE_…` without a `__` are not overrides and are left alone (for
//! example `GRACE_CONFIG`); an override naming an unknown section or key is
//! an error, not a silent no-op.

use serde_yaml::Value;

use super::{Config, ConfigError, Result};

const PREFIX: &str = "GRACE_";

/// Applies every override in `vars` to `config`.
pub(crate) fn apply_overrides(config: &mut Config, vars: &[(String, String)]) -> Result<()> {
    let mut overrides: Vec<(&str, String, String, &str)> = vars
        .iter()
        .filter_map(|(name, value)| {
            let rest = name.strip_prefix(PREFIX)?;
            let (section, key) = rest.split_once("__")?;
            Some((
                name.as_str(),
                section.to_ascii_lowercase(),
                key.to_ascii_lowercase(),
                value.as_str(),
            ))
        })
        .collect();
    if overrides.is_empty() {
        return Ok(());
    }
    // Deterministic order, so a failing override is reported the same way every run.
    overrides.sort();

    let mut tree = serde_yaml::to_value(&*config).map_err(|e| ConfigError::Env {
        var: "GRACE_*".into(),
        message: e.to_string(),
    })?;
    for (var, section, key, raw) in &overrides {
        let err = |message: String| ConfigError::Env {
            var: (*var).to_string(),
            message,
        };
        let Some(Value::Mapping(sec)) = tree.get_mut(section.as_str()) else {
            return Err(err(format!(
                "unknown config section `{section}` (known: {})",
                known_keys(&serde_yaml::to_value(&*config).unwrap_or(Value::Null))
            )));
        };
        let known = known_keys(&Value::Mapping(sec.clone()));
        let Some(slot) = sec.get_mut(key.as_str()) else {
            return Err(err(format!(
                "unknown key `{section}.{key}` (known in `{section}`: {known})"
            )));
        };
        *slot = match slot {
            Value::String(_) => Value::String((*raw).to_string()),
            _ => serde_yaml::from_str(raw).map_err(|e| {
                err(format!(
                    "`{raw}` is not a valid value for `{section}.{key}`: {e}"
                ))
            })?,
        };
        // Check this override alone so the message names its variable.
        let _: Config = serde_yaml::from_value(tree.clone()).map_err(|e| {
            err(format!(
                "`{raw}` is not a valid value for `{section}.{key}`: {e}"
            ))
        })?;
    }
    *config = serde_yaml::from_value(tree).map_err(|e| ConfigError::Env {
        var: "GRACE_*".into(),
        message: e.to_string(),
    })?;
    Ok(())
}

fn known_keys(v: &Value) -> String {
    match v {
        Value::Mapping(m) => m
            .keys()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(", "),
        _ => String::new(),
    }
}
