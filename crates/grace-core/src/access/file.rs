//! Where a document's readers are written: `access:` in Markdown front
//! matter, and `.grace-access.yml` files, which label a whole tree once.
//!
//! ```yaml
//! # examples/kb/finance/.grace-access.yml
//! read: [group:finance, user:ann]
//! ```
//!
//! The nearest file wins: a document is labelled by the one in its own
//! folder, else in the closest folder above it. A file that cannot be read
//! or parsed is an error naming the file and line, and the documents under
//! it are not ingested (never as public).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::Readers;

/// The file that labels a folder and everything under it.
pub const ACCESS_FILE: &str = ".grace-access.yml";
/// Largest `.grace-access.yml` read.
const MAX_ACCESS_FILE_BYTES: u64 = 64 * 1024;
/// Most folders looked at above a document (the deepest paths a file
/// system allows are far shorter).
const MAX_PARENTS: usize = 512;

/// Why the readers of a document could not be worked out.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}{}: {message}", path.display(), line.map(|l| format!(" line {l}")).unwrap_or_default())]
pub struct AccessError {
    /// The file at fault.
    pub path: PathBuf,
    /// Its line, from 1, when known.
    pub line: Option<usize>,
    /// What is wrong, and what to do.
    pub message: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AccessFile {
    read: Vec<String>,
}

/// Reads one `.grace-access.yml`.
pub fn read_access_file(path: &Path) -> Result<Readers, AccessError> {
    let fail = |line: Option<usize>, message: String| AccessError {
        path: path.to_path_buf(),
        line,
        message,
    };
    let bytes = crate::durable::read_capped(path, MAX_ACCESS_FILE_BYTES)
        .map_err(|e| fail(None, e.to_string()))?;
    let text = String::from_utf8(bytes).map_err(|_| fail(None, "not UTF-8 text".into()))?;
    let parsed: AccessFile = serde_yaml::from_str(&text).map_err(|e| {
        fail(
            e.location().map(|l| l.line()),
            format!("{e}; write `read: [group:NAME, user:NAME]` (or `read: [public]`)"),
        )
    })?;
    Readers::parse(&parsed.read).map_err(|m| fail(line_of(&text, "read"), m))
}

/// The first line (from 1) that starts with `key:`.
fn line_of(text: &str, key: &str) -> Option<usize> {
    text.lines()
        .position(|l| l.trim_start().starts_with(&format!("{key}:")))
        .map(|i| i + 1)
}

/// The readers `access:` in a Markdown document's front matter gives;
/// `None` when it has no front matter or no `access` key there.
pub fn front_matter_access(path: &Path, text: &str) -> Result<Option<Readers>, AccessError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return Ok(None);
    };
    // The block ends at a line of `---` or `...`.
    let mut end = None;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        let bare = line.trim_end();
        if bare == "---" || bare == "..." {
            end = Some(offset);
            break;
        }
        offset += line.len();
    }
    let Some(end) = end else { return Ok(None) };
    let block = &rest[..end];
    let fail = |line: Option<usize>, message: String| AccessError {
        path: path.to_path_buf(),
        // The block starts on the document's second line.
        line: line.map(|l| l + 1),
        message,
    };
    // Front matter GRACE cannot read is another program's business, unless
    // it may name readers: then it is this document's error.
    let value: serde_yaml::Value = match serde_yaml::from_str(block) {
        Ok(v) => v,
        Err(_) if !block.contains("access") => return Ok(None),
        Err(e) => {
            return Err(fail(
                e.location().map(|l| l.line()),
                format!("front matter: {e}"),
            ));
        }
    };
    let line = line_of(block, "access");
    let list: Vec<String> = match value.get("access") {
        None | Some(serde_yaml::Value::Null) => return Ok(None),
        Some(serde_yaml::Value::String(s)) => vec![s.clone()],
        Some(serde_yaml::Value::Sequence(items)) => items
            .iter()
            .map(|v| v.as_str().map(str::to_string))
            .collect::<Option<_>>()
            .ok_or_else(|| fail(line, "`access` lists readers as strings".into()))?,
        Some(_) => {
            return Err(fail(
                line,
                "`access` is a reader or a list of readers (`[group:NAME, user:NAME]`)".into(),
            ));
        }
    };
    Readers::parse(&list).map(Some).map_err(|m| fail(line, m))
}

/// The nearest `.grace-access.yml` at or above folders, remembered per
/// folder for one ingest run (a tree of ten thousand files reads each
/// access file once).
#[derive(Debug, Default)]
pub struct AccessFiles {
    seen: HashMap<PathBuf, Option<Result<Readers, AccessError>>>,
}

impl AccessFiles {
    /// The readers the nearest `.grace-access.yml` at or above `folder`
    /// gives; `None` when there is none.
    pub fn nearest(&mut self, folder: &Path) -> Option<Result<Readers, AccessError>> {
        let mut walked = Vec::new();
        let mut here = Some(folder);
        let mut found = None;
        while let Some(dir) = here {
            if walked.len() >= MAX_PARENTS {
                break;
            }
            if let Some(known) = self.seen.get(dir) {
                found = known.clone();
                break;
            }
            walked.push(dir.to_path_buf());
            let candidate = dir.join(ACCESS_FILE);
            // A link is not followed (the label of a tree is a file in it),
            // and is an error: its documents are not taken for unlabelled.
            match std::fs::symlink_metadata(&candidate) {
                Ok(m) if m.is_file() => {
                    found = Some(read_access_file(&candidate));
                    break;
                }
                Ok(_) => {
                    found = Some(Err(AccessError {
                        path: candidate,
                        line: None,
                        message:
                            "not a regular file (a link or a folder): make it a file of its own"
                                .into(),
                    }));
                    break;
                }
                Err(_) => {}
            }
            here = dir.parent();
        }
        for dir in walked {
            self.seen.insert(dir, found.clone());
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn the_nearest_file_labels_a_tree() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        write(root, "hr/.grace-access.yml", "read: [group:hr]\n");
        write(
            root,
            "hr/pay/.grace-access.yml",
            "read: [user:ann, group:payroll]\n",
        );
        std::fs::create_dir_all(root.join("hr/pay/deep/er")).unwrap();
        std::fs::create_dir_all(root.join("open")).unwrap();
        let mut files = AccessFiles::default();
        let hr = files.nearest(&root.join("hr")).unwrap().unwrap();
        assert_eq!(hr.as_slice(), ["group:hr"]);
        let deep = files
            .nearest(&root.join("hr/pay/deep/er"))
            .unwrap()
            .unwrap();
        assert_eq!(deep.as_slice(), ["group:payroll", "user:ann"]);
        assert!(files.nearest(&root.join("open")).is_none());
    }

    #[test]
    fn a_linked_access_file_is_an_error_not_no_label() {
        let tmp = tempfile::tempdir().unwrap();
        let real = write(tmp.path(), "elsewhere.yml", "read: [public]\n");
        std::fs::create_dir_all(tmp.path().join("hr")).unwrap();
        std::os::unix::fs::symlink(&real, tmp.path().join("hr").join(ACCESS_FILE)).unwrap();
        let found = AccessFiles::default().nearest(&tmp.path().join("hr"));
        assert!(
            found
                .unwrap()
                .unwrap_err()
                .message
                .contains("not a regular file")
        );
    }

    #[test]
    fn a_malformed_file_names_its_path_and_line() {
        let tmp = tempfile::tempdir().unwrap();
        for (text, line) in [
            ("# who\nread: group:hr, [\n", Some(2)),
            ("read: [group:hr]\nwrite: [x]\n", Some(2)),
            ("# who\n\nread: [everyone]\n", Some(3)),
            ("read: []\n", Some(1)),
        ] {
            let path = write(tmp.path(), ACCESS_FILE, text);
            let e = read_access_file(&path).unwrap_err();
            assert_eq!(e.line, line, "{text:?}: {e}");
            assert!(e.to_string().contains(".grace-access.yml line"), "{e}");
        }
        // Hostile sizes and bytes are refused before parsing.
        let path = write(tmp.path(), ACCESS_FILE, &"#".repeat(70_000));
        assert!(
            read_access_file(&path)
                .unwrap_err()
                .message
                .contains("too large")
        );
        std::fs::write(&path, [0xff, 0xfe, b'\n']).unwrap();
        assert!(read_access_file(&path).is_err());
    }

    #[test]
    fn front_matter_gives_readers_with_the_documents_line() {
        let p = Path::new("/kb/a.md");
        let doc = "---\ntitle: Pay\naccess: [group:hr, user:bo]\n---\n# Pay\n";
        let r = front_matter_access(p, doc).unwrap().unwrap();
        assert_eq!(r.as_slice(), ["group:hr", "user:bo"]);
        assert_eq!(
            front_matter_access(p, "---\naccess: public\n---\n")
                .unwrap()
                .unwrap(),
            Readers::public()
        );
        assert!(
            front_matter_access(p, "# no front matter\naccess: x\n")
                .unwrap()
                .is_none()
        );
        assert!(
            front_matter_access(p, "---\ntitle: t\n---\n")
                .unwrap()
                .is_none()
        );
        let e = front_matter_access(p, "---\ntitle: t\naccess: [nobody]\n---\n").unwrap_err();
        assert_eq!(e.line, Some(3), "{e}");
        let e = front_matter_access(p, "---\naccess: {a: 1}\n---\n").unwrap_err();
        assert_eq!(e.line, Some(2), "{e}");
        // The key however YAML spells it; broken YAML naming it is an error.
        for spelled in [
            "\"access\": [user:bo]",
            "access : [user:bo]",
            "'access': user:bo",
        ] {
            let doc = format!("---\n{spelled}\n---\n");
            let r = front_matter_access(p, &doc).unwrap().unwrap();
            assert_eq!(r.as_slice(), ["user:bo"], "{spelled}");
        }
        assert!(front_matter_access(p, "---\naccess: [user:bo\n---\n").is_err());
        assert!(
            front_matter_access(p, "---\ntitle: [a\n---\n")
                .unwrap()
                .is_none()
        );
    }
}
