//! The embedding model prepared once for fast, small sessions.
//!
//! The int8 model stores its weights quantised, with an operator that turns
//! them back into floats. ONNX Runtime folds those operators away when it
//! loads the model, so every session held its own float copy of the
//! weights (about 90 MB for MiniLM, 165 MB a session with everything it
//! keeps, and a 260 MB peak while loading). Prepared once, with ONNX
//! Runtime's basic graph optimisations (constant folding) saved, the model
//! becomes a small graph and a file of float weights beside it, which the
//! embedder reads once and gives to all its sessions, so that they share
//! one copy and its packed form (`weights.rs`, [`super::session`]). The vectors are
//! bit for bit those of the original model (checked by
//! `tests/embedder.rs`).
//!
//! The prepared model lives in GRACE's cache folder
//! ([`crate::config::cache_home`]), under `models/<key>`, the key a digest
//! of the model file's and the runtime library's path, size and time, so a
//! changed model or runtime is prepared again. It is written to a
//! temporary folder first and renamed into place, so a crash leaves no
//! half-written model, and its files' checksums are checked before each
//! use (a damaged folder is prepared again). Where no cache folder can be
//! written, the model is loaded as it is (more memory per session, the
//! same vectors).

use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use ort::environment::Environment;
use ort::session::Session;
use ort::session::builder::{GraphOptimizationLevel, SessionBuilder};
use sha2::{Digest, Sha256};

use super::files::MODEL_FILE;

/// The file of the prepared graph: a model folder's ONNX file.
const GRAPH_FILE: &str = MODEL_FILE;
/// The file of its weights beside it.
const WEIGHTS_FILE: &str = "model.data";
/// What the folder was made from, and its files' checksums.
const MANIFEST_FILE: &str = "MANIFEST";
/// The files of a prepared folder: the graph, its weights, the manifest.
pub const PREPARED_FILES: [&str; 3] = [GRAPH_FILE, WEIGHTS_FILE, MANIFEST_FILE];
/// Changes when the way of preparing changes, so that older folders are
/// not used.
const RECIPE: &str = "grace-prepared-1: basic optimisations, weights of 1 KiB or more outside";

/// The prepared model of `model` (run by the runtime at `runtime`) in the
/// cache folder `cache`: found, or made now. `Err` says why it could not
/// be made; the caller then loads `model` itself.
pub(super) fn prepared(
    environment: &Environment,
    model: &Path,
    runtime: &Path,
    cache: &Path,
) -> Result<PathBuf, String> {
    // One at a time in a process: two embedders of one model (two
    // knowledge bases, tests side by side) must not write, check or
    // replace the same folder at once. Across processes, each writes its
    // own temporary folder and the rename decides.
    static PREPARING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = PREPARING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let folder = cache.join("models").join(key(model, runtime)?);
    let graph = folder.join(GRAPH_FILE);
    if folder.is_dir() {
        match check(&folder) {
            Ok(()) => return Ok(graph),
            Err(why) => {
                tracing::warn!(folder = %folder.display(), "the prepared embedding model is damaged and is prepared again: {why}");
                std::fs::remove_dir_all(&folder)
                    .map_err(|e| format!("cannot remove {}: {e}", folder.display()))?;
            }
        }
    }
    let parent = cache.join("models");
    std::fs::create_dir_all(&parent)
        .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    let name = folder
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = parent.join(format!(".{name}.{}.tmp", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let made = std::fs::create_dir(&tmp)
        .map_err(|e| format!("cannot create {}: {e}", tmp.display()))
        .and_then(|()| write(environment, model, &tmp.join(GRAPH_FILE)))
        .and_then(|()| manifest(&tmp, model, runtime))
        .and_then(|text| {
            std::fs::write(tmp.join(MANIFEST_FILE), text)
                .map_err(|e| format!("cannot write in {}: {e}", tmp.display()))
        })
        .and_then(|()| {
            // Another process prepared it at the same time: use theirs.
            std::fs::rename(&tmp, &folder).or_else(|e| match graph.is_file() {
                true => Ok(()),
                false => Err(format!("cannot rename into {}: {e}", folder.display())),
            })
        });
    // Nothing temporary is left, whatever failed (after a rename, `tmp`
    // no longer exists).
    let _ = std::fs::remove_dir_all(&tmp);
    made?;
    tracing::info!(model = %model.display(), prepared = %folder.display(), "embedding model prepared");
    Ok(graph)
}

/// Loads `model` with the basic optimisations and saves what they made to
/// `graph`, its weights beside it.
fn write(environment: &Environment, model: &Path, graph: &Path) -> Result<(), String> {
    let started = std::time::Instant::now();
    let fail = |e: String| format!("cannot prepare {}: {e}", model.display());
    let step = |e: ort::Error<SessionBuilder>| fail(e.to_string());
    Session::builder(environment)
        .map_err(|e| fail(e.to_string()))?
        .with_optimization_level(GraphOptimizationLevel::Level1)
        .map_err(step)?
        .with_intra_threads(1)
        .map_err(step)?
        .with_optimized_model_path(graph)
        .map_err(step)?
        .with_config_entry(
            "session.optimized_model_external_initializers_file_name",
            WEIGHTS_FILE,
        )
        .map_err(step)?
        .with_config_entry(
            "session.optimized_model_external_initializers_min_size_in_bytes",
            "1024",
        )
        .map_err(step)?
        .commit_from_file(model)
        .map_err(|e| fail(e.to_string()))?;
    tracing::debug!(model = %model.display(), elapsed = ?started.elapsed(), "prepared");
    Ok(())
}

/// The folder name of `model` run by `runtime`: a digest of the recipe and
/// of both files' path, size and modification time.
fn key(model: &Path, runtime: &Path) -> Result<String, String> {
    let mut digest = Sha256::new();
    digest.update(RECIPE.as_bytes());
    for file in [model, runtime] {
        let path = std::fs::canonicalize(file)
            .map_err(|e| format!("cannot resolve {}: {e}", file.display()))?;
        let meta =
            std::fs::metadata(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let modified = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        digest.update(format!("\n{}\n{}\n{modified}", path.display(), meta.len()).as_bytes());
    }
    let full = crate::durable::hex(&digest.finalize());
    Ok(full.chars().take(24).collect())
}

/// What a prepared folder was made from (for a person looking at it) and
/// the checksums of its two files (for [`check`]).
fn manifest(folder: &Path, model: &Path, runtime: &Path) -> Result<String, String> {
    Ok(format!(
        "recipe: {RECIPE}\nmodel: {}\nruntime: {}\n{GRAPH_FILE}: {}\n{WEIGHTS_FILE}: {}\n",
        model.display(),
        runtime.display(),
        checksum(&folder.join(GRAPH_FILE))?,
        checksum(&folder.join(WEIGHTS_FILE))?,
    ))
}

/// Whether the prepared folder `folder` holds what its manifest says: a
/// damaged file (a disk fault, a copy cut short) must not give other
/// vectors. CRC-32 of both files: about 12 ms for MiniLM's 90 MB, where
/// SHA-256 took 170.
fn check(folder: &Path) -> Result<(), String> {
    let manifest_path = folder.join(MANIFEST_FILE);
    let manifest = crate::durable::read_capped(&manifest_path, 64 * 1024)
        .map_err(|e| format!("{}: {e}", manifest_path.display()))?;
    let manifest = String::from_utf8_lossy(&manifest);
    for file in [GRAPH_FILE, WEIGHTS_FILE] {
        let want = manifest
            .lines()
            .find_map(|l| l.strip_prefix(file).and_then(|r| r.strip_prefix(": ")))
            .ok_or_else(|| format!("{} names no checksum of {file}", manifest_path.display()))?;
        let got = checksum(&folder.join(file))?;
        if got != want {
            return Err(format!(
                "{file} has checksum {got}, the manifest says {want}"
            ));
        }
    }
    Ok(())
}

/// `<size> bytes, crc32 <hex>` of the file at `path`, read a block at a time.
fn checksum(path: &Path) -> Result<String, String> {
    use std::io::Read;
    let fail = |e: std::io::Error| format!("{}: {e}", path.display());
    let mut file = std::fs::File::open(path).map_err(fail)?;
    let mut hasher = crc32fast::Hasher::new();
    let mut block = vec![0u8; 256 * 1024];
    let mut size = 0u64;
    loop {
        let n = file.read(&mut block).map_err(fail)?;
        if n == 0 {
            break;
        }
        hasher.update(&block[..n]);
        size += n as u64;
    }
    Ok(format!("{size} bytes, crc32 {:08x}", hasher.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_changes_with_the_model_file_and_not_otherwise() {
        let dir = tempfile::tempdir().unwrap();
        let (model, runtime) = (dir.path().join("m.onnx"), dir.path().join("rt.so"));
        std::fs::write(&model, b"one").unwrap();
        std::fs::write(&runtime, b"lib").unwrap();
        let first = key(&model, &runtime).unwrap();
        assert_eq!(first, key(&model, &runtime).unwrap());
        assert_eq!(first.len(), 24);
        std::fs::write(&model, b"other").unwrap();
        assert_ne!(first, key(&model, &runtime).unwrap(), "a changed size");
        let missing = key(&dir.path().join("none.onnx"), &runtime).unwrap_err();
        assert!(missing.contains("none.onnx"), "{missing}");
    }
}
