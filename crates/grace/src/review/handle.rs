//! The asker's handle on an escalation: a capability, not an id. An id is
//! a counter (any client could read escalation 7); the handle is
//! `sha256(key ‖ "escalation:" ‖ id)`, 128 bits in hex, where `key` is 32
//! random bytes kept beside the review database (`review.asker-key`, mode
//! 0600), or, on PostgreSQL, in its table `review_secrets` (every server
//! derives the same handles). Nothing per escalation is stored; a handle
//! is checked by computing it again.

use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// The extension of the asker key's file beside the review database
/// (`review.asker-key`).
pub const ASKER_KEY_EXTENSION: &str = "asker-key";

use super::{Result, ReviewError};
use crate::state::{Store, params};

/// The secret the handles are derived from.
pub(crate) struct AskerKey([u8; 32]);

/// Its row in `review_secrets`.
const SECRET_NAME: &str = "asker_key";

impl AskerKey {
    /// The review store's key: in a file beside a SQLite database, in
    /// the store's own table otherwise; made the first time.
    pub(crate) fn load_or_create(store: &Store) -> Result<Self> {
        match store.sqlite_path() {
            Some(db) => Self::in_file(db),
            None => Self::in_table(store),
        }
    }

    /// The key in `review_secrets`; the first server to store one wins.
    fn in_table(store: &Store) -> Result<Self> {
        let fresh = random_bytes()?;
        let stored: Vec<u8> = store.write(|tx| {
            tx.execute(
                "INSERT INTO review_secrets (name, value) VALUES (?1, ?2) ON CONFLICT (name) DO NOTHING",
                params![SECRET_NAME, fresh],
            )?;
            let row = tx.query_one("SELECT value FROM review_secrets WHERE name = ?1", params![SECRET_NAME])?;
            Ok::<_, ReviewError>(row.get(0)?)
        })?;
        <[u8; 32]>::try_from(stored.as_slice())
            .map(Self)
            .map_err(|_| ReviewError::Corrupt {
                place: store.place().to_string(),
                message: "the asker key in review_secrets is not 32 bytes; delete its row to make a new one (handles given out so far stop working)".into(),
            })
    }

    /// Reads the key beside `db` (`<db>.asker-key`), or makes one from the
    /// system's random source the first time.
    fn in_file(db: &Path) -> Result<Self> {
        let path = db.with_extension(ASKER_KEY_EXTENSION);
        match read_key(&path) {
            Ok(Some(key)) => return Ok(Self(key)),
            Ok(None) => {}
            Err(e) => return Err(e),
        }
        let key = random_bytes()?;
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        match options.open(&path) {
            Ok(mut file) => {
                file.write_all(&key)
                    .and_then(|()| file.sync_all())
                    .map_err(io("write", path.clone()))?;
                Ok(Self(key))
            }
            // Another process made it first: use theirs.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                read_key(&path)?.map(Self).ok_or_else(|| corrupt(&path))
            }
            Err(e) => Err(io("create", path)(e)),
        }
    }

    /// The handle of escalation `id`.
    pub(crate) fn handle(&self, id: i64) -> String {
        let mut h = Sha256::new();
        h.update(self.0);
        h.update(format!("escalation:{id}").as_bytes());
        crate::durable::hex(&h.finalize()[..16])
    }

    /// Whether `handle` is escalation `id`'s (compared in constant time).
    pub(crate) fn verify(&self, id: i64, handle: &str) -> bool {
        crate::durable::constant_time_eq(self.handle(id).as_bytes(), handle.as_bytes())
    }
}

/// 32 bytes from the system's random source.
pub(crate) fn random_bytes() -> Result<[u8; 32]> {
    crate::durable::random_bytes()
        .map_err(io("read the random source", PathBuf::from("/dev/urandom")))
}

fn read_key(path: &Path) -> Result<Option<[u8; 32]>> {
    match std::fs::read(path) {
        Ok(bytes) => <[u8; 32]>::try_from(bytes.as_slice())
            .map(Some)
            .map_err(|_| corrupt(path)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io("read", path.to_path_buf())(e)),
    }
}

fn corrupt(path: &Path) -> ReviewError {
    ReviewError::Corrupt {
        place: path.display().to_string(),
        message: "the asker key is not 32 bytes; remove it to make a new one (handles given out so far stop working)".into(),
    }
}

fn io(action: &'static str, path: PathBuf) -> impl FnOnce(std::io::Error) -> ReviewError {
    move |source| ReviewError::Io {
        action,
        path,
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::AskerKey;

    #[test]
    fn handles_are_stable_per_key_and_differ_per_id_and_key() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("review.sqlite3");
        let a = AskerKey::in_file(&db).unwrap();
        let again = AskerKey::in_file(&db).unwrap();
        assert_eq!(a.handle(7), again.handle(7));
        assert_eq!(a.handle(7).len(), 32);
        assert_ne!(a.handle(7), a.handle(8));
        assert!(a.verify(7, &a.handle(7)));
        assert!(!a.verify(8, &a.handle(7)));
        assert!(!a.verify(7, ""));
        let other = AskerKey::in_file(&dir.path().join("other.sqlite3")).unwrap();
        assert_ne!(a.handle(7), other.handle(7));
        // A damaged key is an error, not a fresh key.
        std::fs::write(db.with_extension("asker-key"), b"short").unwrap();
        assert!(AskerKey::in_file(&db).is_err());
    }
}
