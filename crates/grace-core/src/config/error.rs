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

/// Keys an earlier GRACE read, and what replaced them.
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
        "the fusion is no longer reciprocal rank fusion: qdrant.lexical_weight and \
         qdrant.identifier_weight are the lexical ranking's bonus in cosine units",
    ),
    (
        "planner",
        "in the llm section it was a switch; the planner section's strategy (default, plan, agent) replaces it",
    ),
];

/// What replaced `key`, when an earlier GRACE read it.
pub(crate) fn renamed(key: &str) -> Option<&'static str> {
    RENAMED
        .iter()
        .find(|(old, _)| *old == key)
        .map(|(_, hint)| *hint)
}

impl ConfigError {
    pub(crate) fn from_yaml(e: serde_yaml::Error) -> Self {
        let mut message = e.to_string();
        // Keys that were renamed: say what replaced them.
        for (old, hint) in RENAMED {
            if message.contains(&format!("unknown field `{old}`")) {
                message.push_str(&format!(" ({old} was replaced: {hint})"));
            }
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
        let text = "storage:\n  data_dir: x\n# c\nqdrant:\n  collection: a\n  search_limit: 0\n";
        assert_eq!(find_key_line(text, "qdrant.search_limit"), Some(6));
        assert_eq!(find_key_line(text, "storage.search_limit"), None);
        assert_eq!(find_key_line(text, "qdrant.data_dir"), None);
        let nested = "confidence:\n  weights:\n    bias: 1\n  thresholds:\n    silent: 2\n";
        assert_eq!(
            find_key_line(nested, "confidence.thresholds.silent"),
            Some(5)
        );
        assert_eq!(find_key_line(nested, "confidence.weights.bias"), Some(3));
        assert_eq!(find_key_line(nested, "confidence.thresholds"), Some(4));
    }
}
