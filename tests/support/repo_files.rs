//! The repository's files as text, for the tests that hold documents to
//! the code (`tests/book.rs`, `tests/reference.rs`).

use std::path::{Path, PathBuf};

/// Every readable text file under `dirs` of the repository `root`, with
/// its path; the tree is walked without recursion.
pub fn read_tree(root: &Path, dirs: &[&str]) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut stack: Vec<PathBuf> = dirs.iter().map(|d| root.join(d)).collect();
    while let Some(path) = stack.pop() {
        if path.is_dir() {
            stack.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
        } else if let Ok(text) = std::fs::read_to_string(&path) {
            out.push((path, text));
        }
    }
    out
}
