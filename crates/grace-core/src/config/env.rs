//! `GRACE_<SECTION>__<KEY>` environment overrides.
//!
//! `GRACE_SEARCH__LIMIT=10` sets `search.limit`; deeper keys
//! take more `__` (`GRACE_LLM__GEMINI__MODEL`). The value is
//! read as a YAML scalar (`10`, `true`, `[a, b]`), except for keys whose
//! value is a string, which take the text as it is. Variables named
//! `GRACE_…` without a `__` are not overrides and are left alone (for
//! example `GRACE_CONFIG`); an override naming an unknown section or key is
//! an error, not a silent no-op.

use serde_yaml::Value;

use super::{Config, ConfigError, Result};

const PREFIX: &str = "GRACE_";

/// An environment variable that set a key: `(GRACE_STORAGE__HNSW_M, storage.hnsw_m)`.
pub(crate) type Override = (String, String);

/// Applies every override in `vars` to `config`; returns the variables
/// applied with the dotted key each set, so a value found invalid later
/// is blamed on its variable rather than on the config file.
pub(crate) fn apply_overrides(
    config: &mut Config,
    vars: &[(String, String)],
) -> Result<Vec<Override>> {
    // (variable, key path, value): `GRACE_LLM__GEMINI__MODEL` → [llm, gemini, model].
    let mut overrides: Vec<(&str, Vec<String>, &str)> = vars
        .iter()
        .filter_map(|(name, value)| {
            let rest = name.strip_prefix(PREFIX)?;
            rest.contains("__").then(|| {
                let path = rest.split("__").map(|s| s.to_ascii_lowercase()).collect();
                (name.as_str(), path, value.as_str())
            })
        })
        .collect();
    if overrides.is_empty() {
        return Ok(Vec::new());
    }
    // Deterministic order, so a failing override is reported the same way every run.
    overrides.sort();

    let mut tree = serde_yaml::to_value(&*config).map_err(|e| ConfigError::Env {
        var: "GRACE_*".into(),
        message: e.to_string(),
    })?;
    for (var, path, raw) in &overrides {
        let err = |message: String| ConfigError::Env {
            var: (*var).to_string(),
            message,
        };
        let dotted = path.join(".");
        let mut slot = &mut tree;
        for (depth, segment) in path.iter().enumerate() {
            let parent = path[..depth].join(".");
            let Value::Mapping(map) = slot else {
                return Err(err(format!("`{parent}` is a value, not a section")));
            };
            let known = known_keys(&Value::Mapping(map.clone()));
            let Some(next) = map.get_mut(segment.as_str()) else {
                return Err(err(if depth == 0 {
                    format!("unknown config section `{segment}` (known: {known})")
                } else {
                    let mut m =
                        format!("unknown key `{parent}.{segment}` (known in `{parent}`: {known})");
                    if let Some(replaced) = super::error::replaced(&parent, segment) {
                        m.push_str(&format!("; {replaced}"));
                    }
                    m
                }));
            };
            slot = next;
        }
        if path.len() < 2 {
            return Err(err(format!("`{dotted}` is a section; name a key in it")));
        }
        *slot = match slot {
            Value::String(_) => Value::String((*raw).to_string()),
            Value::Mapping(_) => {
                return Err(err(format!(
                    "`{dotted}` is a section; name a key in it (GRACE_{}__<KEY>)",
                    path.iter()
                        .map(|s| s.to_ascii_uppercase())
                        .collect::<Vec<_>>()
                        .join("__")
                )));
            }
            _ => serde_yaml::from_str(raw)
                .map_err(|e| err(format!("`{raw}` is not a valid value for `{dotted}`: {e}")))?,
        };
        // Check this override alone so the message names its variable.
        let _: Config = serde_yaml::from_value(tree.clone())
            .map_err(|e| err(format!("`{raw}` is not a valid value for `{dotted}`: {e}")))?;
    }
    *config = serde_yaml::from_value(tree).map_err(|e| ConfigError::Env {
        var: "GRACE_*".into(),
        message: e.to_string(),
    })?;
    Ok(overrides
        .into_iter()
        .map(|(var, path, _)| (var.to_string(), path.join(".")))
        .collect())
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
