//! Configuration errors. Every variant names the key (`section.key`) or the
//! environment variable at fault, and the file and line where known.

use std::path::{Path, PathBuf};

/// Result of configuration operations.
pub type Result<T> = std::result::Result<T, ConfigError>;

/// What went wrong while loading or validating the configuration.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The config file could not be read.
    #[error("cannot read config file {path}: {source}")]
    Read {
        /// The file that could not be read.
        path: PathBuf,
        /// The I/O error that stopped the read.
        #[source]
        source: std::io::Error,
    },
    /// YAML syntax error, unknown key or wrong type, as serde_yaml reports it
    /// (it names the key path and the line).
    #[error("{}{message}", file_prefix(.file.as_deref(), *.line))]
    Parse {
        /// The config file, when the text came from one.
        file: Option<PathBuf>,
        /// 1-based line of the error, when serde_yaml reports one.
        line: Option<usize>,
        /// serde_yaml's message (it names the key path).
        message: String,
    },
    /// An environment override could not be applied.
    #[error("environment variable {var}: {message}")]
    Env {
        /// The environment variable (`GRACE_<SECTION>__<KEY>`).
        var: String,
        /// Why its value could not be applied.
        message: String,
    },
    /// A value is out of its allowed range.
    #[error("{}invalid value for `{key}`: {message}", file_prefix(.file.as_deref(), *.line))]
    Invalid {
        /// The dotted key at fault (`section.key`).
        key: String,
        /// What is wrong with its value.
        message: String,
        /// The config file that sets the key, when it does.
        file: Option<PathBuf>,
        /// 1-based line of the key in that file, when the file sets it.
        line: Option<usize>,
    },
}

fn file_prefix(file: Option<&Path>, line: Option<usize>) -> String {
    match (file, line) {
        (Some(f), Some(l)) => format!("{}:{l}: ", f.display()),
        (Some(f), None) => format!("{}: ", f.display()),
        (None, _) => String::new(),
    }
}

/// Keys an earlier GRACE read, and what replaced them: a bare key (any
/// section) or `section.key`.
const RENAMED: &[(&str, &str)] = &[
    (
        "default_timeout",
        "review.escalation_ttl_seconds is how long an escalation stays in the queue, \
         review.asker_wait_seconds how long an asker waits for it",
    ),
    (
        "reviewer_api_key",
        "reviewers have their own tokens (grace review register); server.admin_api_key administers them",
    ),
    (
        "rrf_k",
        "the fusion is no longer reciprocal rank fusion: search.lexical_weight and \
         search.identifier_weight are the lexical ranking's bonus in cosine units",
    ),
    (
        "planner",
        "in the llm section it was a switch; the planner section's strategy (default, plan, agent) replaces it",
    ),
    // The `qdrant` section held the collection, the search tuning and the
    // server connection; it keeps only the connection.
    ("qdrant.collection", "it is collection.name"),
    ("qdrant.shard_number", "it is collection.shard_number"),
    (
        "qdrant.replication_factor",
        "it is collection.replication_factor",
    ),
    (
        "qdrant.write_consistency_factor",
        "it is collection.write_consistency_factor",
    ),
    ("qdrant.search_limit", "it is search.limit"),
    ("qdrant.score_threshold", "it is search.score_threshold"),
    ("qdrant.hybrid", "it is search.hybrid"),
    ("qdrant.lexical_weight", "it is search.lexical_weight"),
    ("qdrant.identifier_weight", "it is search.identifier_weight"),
    ("qdrant.candidates", "it is search.candidates"),
];

/// What replaced `key` of the section `section` (a dotted path, such as
/// `qdrant` or `kbs.hr.qdrant`; empty when unknown), when an earlier GRACE
/// read it: the old key as written, and the hint.
fn renamed(section: &str, key: &str) -> Option<(&'static str, &'static str)> {
    RENAMED
        .iter()
        .copied()
        .find(|(old, _)| match old.rsplit_once('.') {
            Some((old_section, old_key)) => {
                old_key == key
                    && (section.is_empty()
                        || section == old_section
                        || section.ends_with(&format!(".{old_section}")))
            }
            None => *old == key,
        })
}

/// "OLD was replaced: HINT" for `key` of section `section` when an earlier
/// GRACE read it ([`renamed`]): the words every message about an old key
/// shares.
pub(crate) fn replaced(section: &str, key: &str) -> Option<String> {
    renamed(section, key).map(|(old, hint)| format!("{old} was replaced: {hint}"))
}

/// The section path and key of serde_yaml's "unknown field" message:
/// `qdrant: unknown field `search_limit`, …` gives (`qdrant`,
/// `search_limit`); a message from a value rather than text has no path
/// (empty).
pub(crate) fn unknown_field(message: &str) -> Option<(&str, &str)> {
    let (before, after) = message.split_once("unknown field `")?;
    let key = after.split('`').next()?;
    Some((before.trim_end().trim_end_matches(':'), key))
}

impl ConfigError {
    pub(crate) fn from_yaml(e: serde_yaml::Error) -> Self {
        let mut message = e.to_string();
        // A key that was renamed: say what replaced it.
        if let Some(replaced) =
            unknown_field(&message).and_then(|(section, key)| replaced(section, key))
        {
            message.push_str(&format!(" ({replaced})"));
        }
        ConfigError::Parse {
            file: None,
            line: e.location().map(|l| l.line()),
            message,
        }
    }

    /// Attaches the file a parse error came from.
    pub(crate) fn in_file(self, path: &Path) -> Self {
        match self {
            ConfigError::Parse { line, message, .. } => ConfigError::Parse {
                file: Some(path.to_path_buf()),
                line,
                message,
            },
            other => other,
        }
    }

    /// For a validation error, says where the bad value came from: the
    /// environment variable that set the key (`from_env`: variable and
    /// dotted key), else the line of the key in the config file (`file`:
    /// its path and text) when the file sets it.
    pub(crate) fn locate(self, file: Option<(&Path, &str)>, from_env: &[(String, String)]) -> Self {
        let ConfigError::Invalid { key, message, .. } = self else {
            return self;
        };
        if let Some((var, _)) = from_env.iter().find(|(_, set)| *set == key) {
            return ConfigError::Env {
                var: var.clone(),
                message: format!("invalid value for `{key}`: {message}"),
            };
        }
        let line = file.and_then(|(_, text)| find_key_line(text, &key));
        ConfigError::Invalid {
            file: line.and(file).map(|(path, _)| path.to_path_buf()),
            line,
            key,
            message,
        }
    }
}

/// 1-based line of a dotted key (`section.key`, `section.sub.key`) in a
/// block-style YAML document, if the document sets it.
fn find_key_line(text: &str, dotted: &str) -> Option<usize> {
    let want: Vec<&str> = dotted.split('.').collect();
    let mut path: Vec<(usize, &str)> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with('-') {
            continue;
        }
        let Some((key, _)) = trimmed.split_once(':') else {
            continue;
        };
        let indent = line.len() - trimmed.len();
        while path.last().is_some_and(|(ind, _)| *ind >= indent) {
            path.pop();
        }
        path.push((indent, key.trim()));
        if path.len() == want.len() && path.iter().zip(&want).all(|((_, k), w)| k == w) {
            return Some(i + 1);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::find_key_line;

    #[test]
    fn finds_the_line_of_a_nested_key() {
        let text = "storage:\n  data_dir: x\n# c\nsearch:\n  hybrid: true\n  limit: 0\n";
        assert_eq!(find_key_line(text, "search.limit"), Some(6));
        assert_eq!(find_key_line(text, "storage.limit"), None);
        assert_eq!(find_key_line(text, "search.data_dir"), None);
        let nested = "confidence:\n  weights:\n    bias: 1\n  thresholds:\n    silent: 2\n";
        assert_eq!(
            find_key_line(nested, "confidence.thresholds.silent"),
            Some(5)
        );
        assert_eq!(find_key_line(nested, "confidence.weights.bias"), Some(3));
        assert_eq!(find_key_line(nested, "confidence.thresholds"), Some(4));
    }
}
