//! Finding the files to ingest: files and folders named on the command line
//! (and glob patterns the shell did not expand), filtered by the
//! `ingest.include` / `ingest.exclude` globs, symbolic links followed with
//! loops detected, each file once.
//!
//! For a remote caller the walk is confined to [`Roots`]
//! (`ingest.allowed_roots`): a path named outside them is refused, and a
//! symbolic link inside that leads out of them is passed over, not followed.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use globset::{Glob, GlobSet, GlobSetBuilder};
use walkdir::WalkDir;

use super::{IngestError, Result};

/// A file to ingest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// Canonical absolute path: the document's identity (`source`).
    pub path: PathBuf,
    /// Named on the command line (loaded whatever its extension).
    pub explicit: bool,
}

/// A path passed over, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Passed {
    /// The path (as given, or as the walk reached it).
    pub path: PathBuf,
    /// Why it was passed over (unreadable, symbolic link loop, …).
    pub reason: String,
}

/// What a walk found.
#[derive(Debug, Default)]
pub struct Walk {
    /// The files to ingest, each once, in walk order.
    pub files: Vec<Candidate>,
    /// Paths passed over during the walk, and why.
    pub problems: Vec<Passed>,
    /// Canonical folders that were walked (the scope of `--prune`).
    pub roots: Vec<PathBuf>,
    /// Files the walk may take; past it, it stops.
    max_files: usize,
}

/// Compiled include/exclude patterns.
#[derive(Debug, Clone)]
pub struct Filters {
    include: GlobSet,
    exclude: GlobSet,
}

impl Filters {
    /// Compiles the patterns (already validated with the config).
    pub fn new(include: &[String], exclude: &[String]) -> Result<Self> {
        Ok(Self {
            include: build(include)?,
            exclude: build(exclude)?,
        })
    }

    fn excluded(&self, rel: &Path) -> bool {
        self.exclude.is_match(rel)
    }

    fn included(&self, rel: &Path) -> bool {
        self.include.is_match(rel) && !self.excluded(rel)
    }

    /// A folder is skipped when everything below it is excluded.
    fn excluded_dir(&self, rel: &Path) -> bool {
        !rel.as_os_str().is_empty() && self.exclude.is_match(rel.join("x"))
    }
}

fn build(patterns: &[String]) -> Result<GlobSet> {
    let mut b = GlobSetBuilder::new();
    for p in patterns {
        let glob = Glob::new(p).map_err(|e| IngestError::BadGlob {
            pattern: p.clone(),
            message: e.to_string(),
        })?;
        b.add(glob);
    }
    b.build().map_err(|e| IngestError::BadGlob {
        pattern: patterns.join(", "),
        message: e.to_string(),
    })
}

/// The folders a walk may read: canonical paths; `None` reads anywhere
/// (the CLI, run by the machine's own user).
pub type Roots<'a> = Option<&'a [PathBuf]>;

/// Why a link the walk reached is passed over.
const LEAVES_ROOTS: &str = "a symbolic link that leads outside ingest.allowed_roots";

/// Whether `canonical` (a canonical path) is inside one of `roots`.
fn inside(roots: Roots<'_>, canonical: &Path) -> bool {
    roots.is_none_or(|roots| roots.iter().any(|r| canonical.starts_with(r)))
}

/// Walks `paths`, at most `max_files` files. A path that does not exist is
/// an error unless it is a glob pattern, which is expanded below its literal
/// prefix. With `roots`, a path (or a glob's literal prefix) that is not
/// inside them, or does not exist, is refused alike: the error does not
/// tell which, so it cannot probe for files outside.
pub fn walk(
    paths: &[PathBuf],
    filters: &Filters,
    roots: Roots<'_>,
    max_files: usize,
) -> Result<Walk> {
    let mut out = Walk {
        max_files,
        ..Walk::default()
    };
    let mut seen = HashSet::new();
    for arg in paths {
        if roots.is_some() {
            let literal = if is_glob(arg) {
                literal_prefix(arg)
            } else {
                arg.clone()
            };
            let allowed = std::fs::canonicalize(&literal).is_ok_and(|c| inside(roots, &c));
            if !allowed {
                return Err(IngestError::NotAllowed { path: arg.clone() });
            }
        }
        if arg.exists() || arg.is_symlink() {
            walk_path(arg, filters, roots, &mut out, &mut seen);
        } else if is_glob(arg) {
            expand_glob(arg, filters, roots, &mut out, &mut seen)?;
        } else {
            return Err(IngestError::PathNotFound { path: arg.clone() });
        }
        if out.full() {
            return Err(IngestError::TooManyFiles { limit: max_files });
        }
    }
    Ok(out)
}

/// The components of a glob before the first one with a wildcard (`.` when
/// it starts with one).
fn literal_prefix(arg: &Path) -> PathBuf {
    let mut base = PathBuf::new();
    for c in arg.components() {
        if is_glob(Path::new(c.as_os_str())) {
            break;
        }
        base.push(c);
    }
    if base.as_os_str().is_empty() {
        base = PathBuf::from(".");
    }
    base
}

/// A file the walk reached, by its canonical path, unless that lies outside
/// `roots` (reached through a symbolic link): then it is passed over.
fn take(
    path: &Path,
    explicit: bool,
    roots: Roots<'_>,
    out: &mut Walk,
    seen: &mut HashSet<PathBuf>,
) {
    let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    if !inside(roots, &canonical) {
        out.problems.push(Passed {
            path: path.to_path_buf(),
            reason: LEAVES_ROOTS.into(),
        });
        return;
    }
    // Through a symlink the same file can appear twice: keep it once.
    if seen.insert(canonical.clone()) {
        out.files.push(Candidate {
            path: canonical,
            explicit,
        });
    }
}

impl Walk {
    /// More files than `max_files` were found: the walk stops.
    fn full(&self) -> bool {
        self.files.len() > self.max_files
    }
}

/// A folder the walk reached through a symbolic link that leads outside
/// `roots`: passed over (its files are not read, nor its tree walked).
fn leaves_roots(entry: &walkdir::DirEntry, roots: Roots<'_>, out: &mut Walk) -> bool {
    if roots.is_none() || !entry.path_is_symlink() {
        return false;
    }
    let outside = std::fs::canonicalize(entry.path()).map_or(true, |c| !inside(roots, &c));
    if outside {
        out.problems.push(Passed {
            path: entry.path().to_path_buf(),
            reason: LEAVES_ROOTS.into(),
        });
    }
    outside
}

fn is_glob(p: &Path) -> bool {
    p.to_string_lossy().contains(['*', '?', '['])
}

fn walk_path(
    arg: &Path,
    filters: &Filters,
    roots: Roots<'_>,
    out: &mut Walk,
    seen: &mut HashSet<PathBuf>,
) {
    let canonical = match std::fs::canonicalize(arg) {
        Ok(c) => c,
        Err(e) => {
            out.problems.push(Passed {
                path: arg.to_path_buf(),
                reason: unreadable_reason(&e),
            });
            return;
        }
    };
    if canonical.is_file() {
        take(&canonical, true, roots, out, seen);
        return;
    }
    out.roots.push(canonical.clone());
    let mut entries = WalkDir::new(&canonical)
        .follow_links(true)
        .sort_by_file_name()
        .into_iter();
    while let Some(entry) = entries.next() {
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                let path = e
                    .path()
                    .map(Path::to_path_buf)
                    .unwrap_or_else(|| canonical.clone());
                let reason = if e.loop_ancestor().is_some() {
                    "symbolic link loop".to_string()
                } else {
                    e.io_error()
                        .map(unreadable_reason)
                        .unwrap_or_else(|| e.to_string())
                };
                out.problems.push(Passed { path, reason });
                continue;
            }
        };
        let rel = entry
            .path()
            .strip_prefix(&canonical)
            .unwrap_or(entry.path());
        if entry.file_type().is_dir() {
            if filters.excluded_dir(rel) || leaves_roots(&entry, roots, out) {
                entries.skip_current_dir();
            }
            continue;
        }
        if !entry.file_type().is_file() || !filters.included(rel) {
            continue;
        }
        take(entry.path(), false, roots, out, seen);
        if out.full() {
            return;
        }
    }
}

fn expand_glob(
    arg: &Path,
    filters: &Filters,
    roots: Roots<'_>,
    out: &mut Walk,
    seen: &mut HashSet<PathBuf>,
) -> Result<()> {
    let base = literal_prefix(arg);
    let pattern = Glob::new(&arg.to_string_lossy())
        .map_err(|e| IngestError::BadGlob {
            pattern: arg.to_string_lossy().into_owned(),
            message: e.to_string(),
        })?
        .compile_matcher();
    let before = out.files.len();
    let mut entries = WalkDir::new(&base)
        .follow_links(true)
        .sort_by_file_name()
        .into_iter();
    while let Some(entry) = entries.next() {
        let Ok(entry) = entry else { continue };
        let rel_to_base = entry.path().strip_prefix(&base).unwrap_or(entry.path());
        if entry.file_type().is_dir() {
            if filters.excluded_dir(rel_to_base) || leaves_roots(&entry, roots, out) {
                entries.skip_current_dir();
            }
            continue;
        }
        let as_given = if arg.starts_with(".") || arg.is_absolute() || base != Path::new(".") {
            entry.path().to_path_buf()
        } else {
            rel_to_base.to_path_buf()
        };
        if entry.file_type().is_file()
            && pattern.is_match(&as_given)
            && !filters.excluded(rel_to_base)
        {
            take(entry.path(), true, roots, out, seen);
            if out.full() {
                return Ok(());
            }
        }
    }
    if out.files.len() == before {
        return Err(IngestError::PathNotFound {
            path: arg.to_path_buf(),
        });
    }
    if let Ok(b) = std::fs::canonicalize(&base) {
        out.roots.push(b);
    }
    Ok(())
}

fn unreadable_reason(e: &std::io::Error) -> String {
    // ELOOP: a link that points (through others) back to itself.
    if e.raw_os_error() == Some(40) {
        "symbolic link loop".to_string()
    } else {
        format!("unreadable: {e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn filters() -> Filters {
        let c = crate::config::IngestConfig::default();
        Filters::new(&c.include, &c.exclude).unwrap()
    }

    fn names(w: &Walk) -> Vec<String> {
        w.files
            .iter()
            .map(|c| c.path.file_name().unwrap().to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn walks_folders_with_include_and_exclude() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        fs::create_dir_all(root.join("docs/sub")).unwrap();
        fs::create_dir_all(root.join(".git")).unwrap();
        fs::create_dir_all(root.join("node_modules/pkg")).unwrap();
        fs::write(root.join("docs/a.md"), "a").unwrap();
        fs::write(root.join("docs/sub/b.rst"), "b").unwrap();
        fs::write(root.join("docs/c.png"), "c").unwrap();
        fs::write(root.join(".git/d.md"), "d").unwrap();
        fs::write(root.join("node_modules/pkg/e.md"), "e").unwrap();
        fs::write(root.join("f.txt"), "f").unwrap();
        let w = walk(&[root.to_path_buf()], &filters(), None, usize::MAX).unwrap();
        assert_eq!(names(&w), vec!["a.md", "b.rst", "f.txt"]);
        assert!(w.problems.is_empty());
        assert_eq!(w.roots, vec![fs::canonicalize(root).unwrap()]);
    }

    #[test]
    fn explicit_files_are_always_taken_and_deduplicated() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("notes.log");
        fs::write(&f, "x").unwrap();
        let w = walk(&[f.clone(), f.clone()], &filters(), None, usize::MAX).unwrap();
        assert_eq!(w.files.len(), 1);
        assert!(w.files[0].explicit);
    }

    #[test]
    fn missing_path_is_an_error() {
        let d = tempfile::tempdir().unwrap();
        let err = walk(&[d.path().join("nope")], &filters(), None, usize::MAX).unwrap_err();
        assert!(matches!(err, IngestError::PathNotFound { .. }));
    }

    #[test]
    fn glob_arguments_are_expanded() {
        let d = tempfile::tempdir().unwrap();
        fs::create_dir_all(d.path().join("x/y")).unwrap();
        fs::write(d.path().join("x/y/a.md"), "a").unwrap();
        fs::write(d.path().join("x/b.md"), "b").unwrap();
        fs::write(d.path().join("x/c.txt"), "c").unwrap();
        let pattern = d.path().join("x/**/*.md");
        let w = walk(std::slice::from_ref(&pattern), &filters(), None, usize::MAX).unwrap();
        let mut n = names(&w);
        n.sort();
        assert_eq!(n, vec!["a.md", "b.md"]);
        let none = d.path().join("x/**/*.html");
        assert!(walk(&[none], &filters(), None, usize::MAX).is_err());
    }

    #[cfg(unix)]
    #[test]
    fn symlink_loops_are_reported_not_followed_forever() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        fs::create_dir_all(root.join("a")).unwrap();
        fs::write(root.join("a/doc.md"), "x").unwrap();
        std::os::unix::fs::symlink(root.join("a"), root.join("a/again")).unwrap();
        std::os::unix::fs::symlink(root.join("self.md"), root.join("self.md")).unwrap_or(());
        let w = walk(&[root.to_path_buf()], &filters(), None, usize::MAX).unwrap();
        assert_eq!(names(&w), vec!["doc.md"]);
        assert!(
            w.problems.iter().any(|p| p.reason == "symbolic link loop"),
            "{:?}",
            w.problems
        );
    }
}
