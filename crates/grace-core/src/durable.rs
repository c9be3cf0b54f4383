//! Small file-system and secret helpers the layers share: replacing a file
//! so that a crash never leaves half of it, comparing secrets in constant
//! time, and writing bytes as hex.

use std::io::Write;
use std::path::{Path, PathBuf};

/// A step of [`replace_file`] that failed: what was done, to which file.
#[derive(Debug)]
pub struct FileError {
    /// `create`, `write`, `sync`, `rename into place`.
    pub action: &'static str,
    /// The file or folder it was done to.
    pub path: PathBuf,
    /// The I/O error.
    pub source: std::io::Error,
}

/// Writes `bytes` to `path` through `tmp` (beside it): written, synced,
/// renamed into place, and the folder synced, so a crash leaves either the
/// old file or the whole new one, and a file reported written stays
/// written. `tmp` must be on the same file system (the same folder).
pub fn replace_file(path: &Path, tmp: &Path, bytes: &[u8]) -> Result<(), FileError> {
    replace_with(path, tmp, bytes, &std::fs::OpenOptions::new())
}

/// [`replace_file`] for a file only its owner may read (mode 0600 on
/// Unix, from its creation on).
pub fn replace_private_file(path: &Path, tmp: &Path, bytes: &[u8]) -> Result<(), FileError> {
    let mut options = std::fs::OpenOptions::new();
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    // A temporary file left by a crash keeps its mode: start afresh.
    let _ = std::fs::remove_file(tmp);
    replace_with(path, tmp, bytes, &options)
}

fn replace_with(
    path: &Path,
    tmp: &Path,
    bytes: &[u8],
    options: &std::fs::OpenOptions,
) -> Result<(), FileError> {
    let fail = |action: &'static str, p: &Path| {
        let path = p.to_path_buf();
        move |source| FileError {
            action,
            path,
            source,
        }
    };
    let mut file = options
        .clone()
        .write(true)
        .create(true)
        .truncate(true)
        .open(tmp)
        .map_err(fail("create", tmp))?;
    file.write_all(bytes).map_err(fail("write", tmp))?;
    file.sync_all().map_err(fail("sync", tmp))?;
    drop(file);
    std::fs::rename(tmp, path).map_err(fail("rename into place", path))?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(fail("sync", dir))?;
    }
    Ok(())
}

/// Whether two secrets are equal, without stopping at the first difference
/// (the length still shows; a secret's length is not the secret).
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(diff) == 0
}

/// 32 bytes from the system's random source (tokens, handles, session ids).
pub fn random_bytes() -> std::io::Result<[u8; 32]> {
    use std::io::Read;
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes))?;
    Ok(bytes)
}

/// `prefix` and 32 random hex digits: an id nobody can guess (sessions,
/// runs, recorded answers).
pub fn random_id(prefix: &str) -> std::io::Result<String> {
    Ok(format!("{prefix}{}", hex(&random_bytes()?[..16])))
}

/// Whether `id` is one [`random_id`] could have made with `prefix`
/// (checked before any query).
pub fn is_random_id(id: &str, prefix: &str) -> bool {
    id.strip_prefix(prefix).is_some_and(|hex| {
        hex.len() == 32 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    })
}

/// Why [`read_capped`] read nothing.
#[derive(Debug, thiserror::Error)]
pub enum CappedReadError {
    /// The file is (or grew) larger than allowed.
    #[error("too large: {len} bytes, over {max}")]
    TooLarge {
        /// Its size (or the bytes read before giving up).
        len: u64,
        /// The most allowed.
        max: u64,
    },
    /// It could not be opened or read.
    #[error("unreadable: {0}")]
    Io(#[from] std::io::Error),
}

/// Reads at most `max` bytes of `path`: a file over it (or one that grows
/// past it while it is read) is refused, without reading more than `max`
/// + 1 bytes, whatever its size said a moment before.
pub fn read_capped(path: &Path, max: u64) -> Result<Vec<u8>, CappedReadError> {
    use std::io::Read;
    let file = std::fs::File::open(path)?;
    let len = file.metadata()?.len();
    if len > max {
        return Err(CappedReadError::TooLarge { len, max });
    }
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    file.take(max.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(CappedReadError::TooLarge {
            len: bytes.len() as u64,
            max,
        });
    }
    Ok(bytes)
}

/// Bytes as lower-case hex (digests, tokens, handles).
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::{constant_time_eq, hex, replace_file};

    #[test]
    fn hex_is_two_lower_case_digits_per_byte() {
        assert_eq!(hex(&[0, 15, 16, 255]), "000f10ff");
        assert_eq!(hex(&[]), "");
    }

    #[test]
    fn a_file_is_replaced_whole_and_no_temporary_file_stays() {
        let dir = tempfile::tempdir().unwrap();
        let (path, tmp) = (dir.path().join("a.md"), dir.path().join(".a.md.tmp"));
        std::fs::write(&path, "old").unwrap();
        replace_file(&path, &tmp, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        assert!(!tmp.exists());
        let err = replace_file(
            &dir.path().join("no/such/b.md"),
            &dir.path().join("no/such/t"),
            b"x",
        )
        .unwrap_err();
        assert_eq!(err.action, "create");
    }

    #[test]
    fn secrets_compare_by_value() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
    }
}
