//! The check a tool's definition passes before it is run at all: bounded
//! sizes and counts, a name of the allowed shape, an object input schema,
//! and code free of constructs that only make sense as an escape attempt
//! (`import`, `require(`, `eval`, the `Function` constructor, reaching
//! constructors through `.constructor`, `__proto__`, `process`).
//!
//! This is a courtesy that turns an obvious attempt into a clear refusal;
//! the sandbox is the security boundary (it has no modules, no `eval`, no
//! `Function` constructor and no host objects but the granted ones, whatever
//! the code says). A word in a string literal is refused too: rephrase it.

use serde_json::Value;

use super::{Example, ToolSpec};

/// Characters of a tool's name at most (without `rt.`).
pub const MAX_NAME_CHARS: usize = 48;
/// Characters of a script at most (also published in the OpenAPI
/// document); `tools.runtime.max_code_bytes` bounds its bytes.
pub const MAX_CODE_CHARS: usize = 16_384;
/// Characters of a description at most.
pub const MAX_DESCRIPTION_CHARS: usize = 1_000;
/// Bytes of an input schema (as JSON) at most.
pub const MAX_SCHEMA_BYTES: usize = 8_192;
/// Nesting of an input schema at most.
pub const MAX_SCHEMA_DEPTH: usize = 16;
/// Examples at most (each is a verification run).
pub const MAX_EXAMPLES: usize = 10;
/// Bytes of one example's input or expected output (as JSON) at most.
pub const MAX_EXAMPLE_BYTES: usize = 16_384;

/// Words refused in code (as whole identifiers), and why.
const FORBIDDEN_WORDS: &[(&str, &str)] = &[
    ("import", "modules are not available"),
    ("require", "modules are not available"),
    ("eval", "code generation from strings is not allowed"),
    ("Function", "code generation from strings is not allowed"),
    ("constructor", "reaching constructors is not allowed"),
    ("__proto__", "prototype manipulation is not allowed"),
    ("process", "there is no process object"),
];

/// Whether `name` is a valid run-time tool name: 1-48 lowercase ASCII
/// letters, digits and `_`, starting with a letter.
pub fn valid_name(name: &str) -> bool {
    (1..=MAX_NAME_CHARS).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// Every problem with `spec` (empty: it may be verified), given the
/// largest script allowed.
pub fn check(spec: &ToolSpec, max_code_bytes: usize) -> Vec<String> {
    let mut problems = Vec::new();
    if !valid_name(&spec.name) {
        problems.push(format!(
            "name `{}` must be 1-{MAX_NAME_CHARS} lowercase letters, digits or `_`, starting with a letter",
            crate::text::ellipsized(&spec.name, 60)
        ));
    }
    let description = spec.description.trim();
    if crate::text::is_blank(description) || description.chars().count() > MAX_DESCRIPTION_CHARS {
        problems.push(format!(
            "description must be 1-{MAX_DESCRIPTION_CHARS} characters"
        ));
    }
    problems.extend(check_schema(&spec.input_schema));
    problems.extend(check_examples(&spec.examples));
    if crate::text::is_blank(&spec.code) {
        problems.push("code is empty".to_string());
    } else if spec.code.chars().count() > MAX_CODE_CHARS {
        problems.push(format!("code is over {MAX_CODE_CHARS} characters"));
    } else if spec.code.len() > max_code_bytes {
        problems.push(format!(
            "code is {} bytes, over the {max_code_bytes} allowed (tools.runtime.max_code_bytes)",
            spec.code.len()
        ));
    } else {
        problems.extend(check_code(&spec.code));
    }
    problems
}

fn check_schema(schema: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    let size = serde_json::to_string(schema).map_or(usize::MAX, |s| s.len());
    if size > MAX_SCHEMA_BYTES {
        problems.push(format!(
            "input_schema is {size} bytes, over the {MAX_SCHEMA_BYTES} allowed"
        ));
        return problems;
    }
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        problems.push("input_schema must be an object schema (`\"type\": \"object\"`)".to_string());
    }
    if crate::tools::json_depth(schema) > MAX_SCHEMA_DEPTH {
        problems.push(format!(
            "input_schema nests deeper than {MAX_SCHEMA_DEPTH} levels"
        ));
    }
    problems
}

fn check_examples(examples: &[Example]) -> Vec<String> {
    let mut problems = Vec::new();
    if examples.is_empty() || examples.len() > MAX_EXAMPLES {
        problems.push(format!(
            "give 1-{MAX_EXAMPLES} examples ({{input, expect}}): they are the verification run"
        ));
    }
    for (i, ex) in examples.iter().take(MAX_EXAMPLES).enumerate() {
        for (what, v) in [("input", &ex.input), ("expect", &ex.expect)] {
            let size = serde_json::to_string(v).map_or(usize::MAX, |s| s.len());
            if size > MAX_EXAMPLE_BYTES {
                problems.push(format!(
                    "example {}: {what} is {size} bytes, over the {MAX_EXAMPLE_BYTES} allowed",
                    i + 1
                ));
            }
        }
        if !ex.input.is_object() {
            problems.push(format!("example {}: input must be an object", i + 1));
        }
    }
    problems
}

/// The forbidden constructs found in `code`.
fn check_code(code: &str) -> Vec<String> {
    let mut problems = Vec::new();
    for (word, why) in FORBIDDEN_WORDS {
        if has_word(code, word) {
            problems.push(format!("code uses `{word}`: {why}"));
        }
    }
    problems
}

/// Whether `word` occurs in `code` as a whole identifier.
fn has_word(code: &str, word: &str) -> bool {
    let ident = |c: char| c.is_alphanumeric() || c == '_' || c == '$';
    code.match_indices(word).any(|(at, _)| {
        let before = code[..at].chars().next_back();
        let after = code[at + word.len()..].chars().next();
        !before.is_some_and(ident) && !after.is_some_and(ident)
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn spec(code: &str) -> ToolSpec {
        ToolSpec {
            name: "word_count".to_string(),
            description: "Counts words.".to_string(),
            input_schema: json!({"type": "object"}),
            code: code.to_string(),
            examples: vec![Example {
                input: json!({}),
                expect: json!(0),
            }],
        }
    }

    #[test]
    fn a_plain_script_passes() {
        let p = check(
            &spec("function run(input) { const important = 1; return important; }"),
            1000,
        );
        assert!(p.is_empty(), "{p:?}");
    }

    #[test]
    fn escape_spellings_are_refused() {
        for code in [
            "const fs = require('fs');",
            "import('os')",
            "import * as os from 'os';",
            "eval('1')",
            "Function('return this')()",
            "this.constructor.constructor('return 1')()",
            "({}).__proto__.x = 1",
            "process.exit(1)",
        ] {
            assert!(!check(&spec(code), 1000).is_empty(), "{code}");
        }
    }

    #[test]
    fn names_sizes_and_schemas_are_bounded() {
        let mut s = spec("function run() { return 0; }");
        s.name = "Bad-Name".to_string();
        s.input_schema = json!({"type": "array"});
        s.examples.clear();
        s.description = "x".repeat(MAX_DESCRIPTION_CHARS + 1);
        assert_eq!(check(&s, 1000).len(), 4, "{:?}", check(&s, 1000));
        let big = spec(&"x".repeat(2000));
        assert!(check(&big, 1000)[0].contains("max_code_bytes"));
        let mut nested = json!({"type": "object"});
        for _ in 0..40 {
            nested = json!({"type": "object", "properties": {"a": nested}});
        }
        let mut deep = spec("function run() { return 0; }");
        deep.input_schema = nested;
        assert!(check(&deep, 1000).iter().any(|p| p.contains("deeper")));
    }
}
