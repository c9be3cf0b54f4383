//! How sources are shown to remote callers (HTTP, MCP): not as the
//! server's absolute paths (`/srv/grace/data/uploads/grace/x.md`), which
//! tell a client how the server's disks are laid out, but relative to a
//! folder a client knows by name:
//!
//! | stored under | shown as |
//! | --- | --- |
//! | `server.display_root` (when set) | the path relative to it |
//! | an `ingest.allowed_roots` folder | `<folder name>/<path inside it>` |
//! | `Config::uploads_dir` (`<data_dir>/uploads/<collection>/` for `default`) | `uploads/<file>` |
//! | `<data_dir>/reviewed/<collection>/` | `reviewed/<file>` |
//! | anything else absolute | its file name |
//!
//! The store keeps the full paths; [`SourceDisplay::resolve`] maps a shown
//! path back (a `/v1/search` `source` filter). The CLI, run by the
//! machine's own user, shows full paths.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::config::Config;

/// The folders remote callers see sources relative to, longest first.
#[derive(Debug, Clone, Default)]
pub struct SourceDisplay {
    /// (folder as stored, with a trailing `/`; its label, with a trailing
    /// `/` or empty for the display root).
    prefixes: Vec<(String, String)>,
}

/// Keys whose string value is a whole path; an absolute one under no known
/// folder is shown by its file name.
const PATH_KEYS: &[&str] = &["source", "sources", "path", "file"];

impl SourceDisplay {
    /// The display folders of `config`.
    pub fn new(config: &Config) -> Self {
        let mut prefixes = Vec::new();
        let mut add = |folder: &Path, label: String| {
            // Sources are stored as the walk found them: absolute, and
            // canonical when the folder exists.
            for form in [
                Some(folder.to_path_buf()),
                std::fs::canonicalize(folder).ok(),
            ]
            .into_iter()
            .flatten()
            {
                if form.is_absolute() {
                    let mut key = form.to_string_lossy().into_owned();
                    if !key.ends_with('/') {
                        key.push('/');
                    }
                    if !prefixes.iter().any(|(k, _)| *k == key) {
                        prefixes.push((key, label.clone()));
                    }
                }
            }
        };
        add(&absolute(&config.uploads_dir()), "uploads/".into());
        add(&absolute(&config.reviewed_dir()), "reviewed/".into());
        for root in &config.ingest.allowed_roots {
            let name = root
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "root".into());
            add(&absolute(root), format!("{name}/"));
        }
        if !config.server.display_root.as_os_str().is_empty() {
            add(&absolute(&config.server.display_root), String::new());
        }
        // The longest folder wins (an upload folder inside a root).
        prefixes.sort_by_key(|p| std::cmp::Reverse(p.0.len()));
        Self { prefixes }
    }

    /// `source` as a remote caller sees it.
    pub fn show(&self, source: &str) -> String {
        for (prefix, label) in &self.prefixes {
            if let Some(rest) = source.strip_prefix(prefix.as_str()) {
                return format!("{label}{rest}");
            }
        }
        if source.starts_with('/') {
            return Path::new(source)
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        }
        source.to_string()
    }

    /// A shown path back to the stored one (absolute paths pass as they
    /// are); the first folder whose label it starts with.
    pub fn resolve(&self, shown: &str) -> String {
        if shown.starts_with('/') {
            return shown.to_string();
        }
        for (prefix, label) in self.prefixes.iter().rev() {
            if !label.is_empty()
                && let Some(rest) = shown.strip_prefix(label.as_str())
            {
                return format!("{prefix}{rest}");
            }
        }
        if let Some((prefix, _)) = self.prefixes.iter().find(|(_, l)| l.is_empty()) {
            return format!("{prefix}{shown}");
        }
        shown.to_string()
    }

    /// Rewrites every server path in a JSON value for a remote caller:
    /// known folders inside any string (a reason, a draft that names its
    /// source), and whole-path values of `source`, `sources`, `path` and
    /// `file` keys.
    /// Walks without recursion (the value may be deep).
    pub fn rewrite(&self, value: &mut Value) {
        let mut stack: Vec<(&mut Value, bool)> = vec![(value, false)];
        while let Some((v, is_path)) = stack.pop() {
            match v {
                Value::String(s) => {
                    if is_path {
                        *s = self.show(s);
                    } else if s.contains('/') {
                        *s = self.replace_within(s);
                    }
                }
                Value::Array(items) => stack.extend(items.iter_mut().map(|i| (i, is_path))),
                Value::Object(map) => stack.extend(
                    map.iter_mut()
                        .map(|(k, v)| (v, PATH_KEYS.contains(&k.as_str()))),
                ),
                _ => {}
            }
        }
    }

    fn replace_within(&self, text: &str) -> String {
        let mut out = text.to_string();
        for (prefix, label) in &self.prefixes {
            if out.contains(prefix.as_str()) {
                out = out.replace(prefix.as_str(), label);
            }
        }
        out
    }
}

fn absolute(path: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|d| d.join(path))
            .unwrap_or_else(|_| path.to_path_buf())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn display() -> SourceDisplay {
        let mut c = Config::default();
        c.storage.data_dir = "/srv/grace/data".into();
        c.ingest.allowed_roots = vec!["/srv/kb/handbook".into()];
        SourceDisplay::new(&c)
    }

    #[test]
    fn server_paths_become_folder_relative_and_map_back() {
        let d = display();
        for (stored, shown) in [
            (
                "/srv/grace/data/uploads/grace/parking.md",
                "uploads/parking.md",
            ),
            (
                "/srv/grace/data/reviewed/grace/escalation-3.md",
                "reviewed/escalation-3.md",
            ),
            (
                "/srv/kb/handbook/ops/rollback.md",
                "handbook/ops/rollback.md",
            ),
            ("/home/op/private/notes.md", "notes.md"),
            ("examples/kb/guide.md", "examples/kb/guide.md"),
        ] {
            assert_eq!(d.show(stored), shown);
        }
        assert_eq!(
            d.resolve("handbook/ops/rollback.md"),
            "/srv/kb/handbook/ops/rollback.md"
        );
        assert_eq!(
            d.resolve("uploads/parking.md"),
            "/srv/grace/data/uploads/grace/parking.md"
        );
    }

    #[test]
    fn rewriting_reaches_every_string_and_leaves_no_server_path() {
        let d = display();
        let mut v = json!({
            "passages": [{"source": "/srv/kb/handbook/a.md", "text": "see /srv/kb/handbook/b.md"}],
            "answer": {"citations": [{"source": "/opt/secret/c.md"}]},
            "skipped": [{"path": "/srv/grace/data/uploads/grace/x.md", "reason": "empty"}],
        });
        d.rewrite(&mut v);
        let text = v.to_string();
        assert!(!text.contains("/srv/") && !text.contains("/opt/"), "{text}");
        assert_eq!(v["passages"][0]["source"], "handbook/a.md");
        assert_eq!(v["passages"][0]["text"], "see handbook/b.md");
        assert_eq!(v["answer"]["citations"][0]["source"], "c.md");
        assert_eq!(v["skipped"][0]["path"], "uploads/x.md");
    }
}
