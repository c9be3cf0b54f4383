//! Free space on the embedded store's disk (`storage.min_free_mb`).
//!
//! qdrant-edge keeps its log, vectors and payloads in memory-mapped files
//! that grow as points are written. A write through a mapping to a disk
//! with no free block cannot fail like a `write` call: the kernel kills
//! the process (SIGBUS). So the store checks the free space before each
//! write, against a bound on what the write can take, and refuses with an
//! error that writes nothing. Something else filling the disk between the
//! check and the write can still beat it; the margin is there for that.

use std::path::Path;

use super::super::{ChunkPoint, Result, StoreError};

const MIB: u64 = 1 << 20;

/// Bytes a delete or a payload change may take: a log entry, and the
/// pages it dirties.
pub(super) const UPDATE_BYTES: u64 = MIB;

/// Bytes `points` may take on disk at most: each twice (the log, then its
/// segment), its vectors and payload, with room for the indexes.
pub(super) fn points_bytes(points: &[ChunkPoint]) -> u64 {
    points
        .iter()
        .map(|p| {
            let payload = p.payload.text.len() + p.payload.source.len() + p.payload.section.len();
            let vectors = p.dense.len() * 4 + p.lexical.indices.len() * 8;
            2 * (payload + vectors + 1024) as u64
        })
        .sum()
}

/// Bytes a point may take in an indexed segment at most (vectors, their
/// int8 copy, graph links, lexical index, payload), as a bound.
const INDEXED_POINT_BYTES: u64 = 16 * 1024;

/// Bytes an index build of the collection at `dir` may write before it
/// removes what it replaces: a copy of the collection, but never more than
/// one segment (`storage.segment_points` points), which is what one build
/// makes.
pub(super) fn build_bytes(dir: &Path, segment_points: usize) -> u64 {
    used_bytes(dir).min((segment_points as u64).saturating_mul(INDEXED_POINT_BYTES))
}

/// On tmpfs (memory as a disk), the bytes opening the collection at `dir`
/// may take: there a memory-mapped file takes a page for every page
/// touched, even to read it, so the engine loading its files can fill the
/// holes of its sparse files. `None` elsewhere: a read allocates nothing.
pub(super) fn tmpfs_open_bytes(dir: &Path) -> Option<u64> {
    let fs = nix::sys::statfs::statfs(dir).ok()?;
    (fs.filesystem_type() == nix::sys::statfs::TMPFS_MAGIC).then(|| files_bytes(dir).holes)
}

/// Bytes the files under `dir` take on disk.
fn used_bytes(dir: &Path) -> u64 {
    files_bytes(dir).used
}

/// What the files under a folder take.
struct FilesBytes {
    /// On disk.
    used: u64,
    /// Their lengths beyond that (holes of sparse files).
    holes: u64,
}

/// The files under `dir`: a walk with a stack, of GRACE's own folder.
fn files_bytes(dir: &Path) -> FilesBytes {
    use std::os::unix::fs::MetadataExt;
    let (mut used, mut holes) = (0, 0);
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(meta) = entry.metadata() else { continue };
            if meta.is_dir() {
                stack.push(entry.path());
            } else {
                let on_disk = meta.blocks() * 512;
                used += on_disk;
                holes += meta.len().saturating_sub(on_disk);
            }
        }
    }
    FilesBytes { used, holes }
}

/// `Ok` when the disk holding `dir` has `needed()` bytes free beyond
/// `min_free_mb` MiB. With 0, no check, and `needed` is not worked out
/// (it may walk the collection's folder).
pub(super) fn ensure(dir: &Path, min_free_mb: u64, needed: impl FnOnce() -> u64) -> Result<()> {
    if min_free_mb == 0 {
        return Ok(());
    }
    let needed = needed();
    let free = fs4::available_space(dir).map_err(|source| StoreError::Io {
        action: "measure the free space of",
        path: dir.to_path_buf(),
        source,
    })?;
    let want = min_free_mb.saturating_mul(MIB).saturating_add(needed);
    if free < want {
        return Err(StoreError::DiskFull {
            path: dir.to_path_buf(),
            free_mib: free / MIB,
            needed_mib: want.div_ceil(MIB),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_disk_with_less_than_the_margin_free_refuses_and_says_so() {
        let d = tempfile::tempdir().unwrap();
        ensure(d.path(), 0, || unreachable!("not worked out when off")).unwrap();
        ensure(d.path(), 1, || 0).unwrap();
        let err = ensure(d.path(), u64::MAX / MIB, || 0).unwrap_err();
        assert!(matches!(err, StoreError::DiskFull { .. }), "{err}");
        let text = err.to_string();
        assert!(
            text.contains("storage.min_free_mb") && text.contains("nothing was written"),
            "{text}"
        );
    }

    #[test]
    fn used_bytes_counts_the_blocks_under_a_folder() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("a/b")).unwrap();
        std::fs::write(d.path().join("a/b/f"), vec![1u8; 100_000]).unwrap();
        let used = used_bytes(d.path());
        assert!((100_000..200_000).contains(&used), "{used}");
    }
}
