//! Checking a tool call's arguments against the tool's input schema (the
//! subset of JSON Schema GRACE's schemas use), before the call runs.

use serde_json::{Value, json};

/// Checks `args` against the subset of JSON Schema GRACE's schemas use:
/// `required`, `additionalProperties: false`, and each property's `type`,
/// `minLength`, `minimum`, `maximum`, `enum`.
pub fn check_arguments(schema: &Value, args: &Value) -> std::result::Result<(), String> {
    let Some(obj) = args.as_object() else {
        return Err("arguments must be a JSON object".into());
    };
    let props = schema["properties"].as_object();
    for field in schema["required"].as_array().into_iter().flatten() {
        if let Some(f) = field.as_str()
            && obj.get(f).is_none_or(Value::is_null)
        {
            return Err(format!("`{f}` is required"));
        }
    }
    for (key, value) in obj {
        let Some(spec) = props.and_then(|p| p.get(key)) else {
            if schema["additionalProperties"] == json!(false) {
                return Err(format!("unknown argument `{key}`"));
            }
            continue;
        };
        if value.is_null() {
            continue;
        }
        let ok = match spec["type"].as_str() {
            Some("string") => value.is_string(),
            Some("integer") => value.is_i64() || value.is_u64(),
            Some("number") => value.is_number(),
            Some("boolean") => value.is_boolean(),
            Some("array") => value.is_array(),
            Some("object") => value.is_object(),
            _ => true,
        };
        if !ok {
            return Err(format!(
                "`{key}` must be of type {}, got {value}",
                spec["type"].as_str().unwrap_or("?")
            ));
        }
        if let (Some(min), Some(s)) = (spec["minLength"].as_u64(), value.as_str())
            && (s.trim().chars().count() as u64) < min
        {
            return Err(format!("`{key}` must not be empty"));
        }
        if let Some(n) = value.as_f64() {
            if spec["minimum"].as_f64().is_some_and(|m| n < m) {
                return Err(format!("`{key}` must be at least {}", spec["minimum"]));
            }
            if spec["maximum"].as_f64().is_some_and(|m| n > m) {
                return Err(format!("`{key}` must be at most {}", spec["maximum"]));
            }
        }
        if let Some(allowed) = spec["enum"].as_array()
            && !allowed.contains(value)
        {
            return Err(format!(
                "`{key}` must be one of {}",
                Value::Array(allowed.clone())
            ));
        }
    }
    Ok(())
}
