//! Principals and their API keys: who may call GRACE, and as whom.
//!
//! A principal is a name and its groups ([`Principal`]). `grace auth
//! add-key NAME --groups a,b` issues a key (`gk_` and 64 hex digits, 256
//! random bits) and prints it once; `principals.sqlite3` in the data folder
//! (or its tables in PostgreSQL, `storage.state: postgres`, shared by every
//! server) keeps only its SHA-256 (a plain hash is enough: the key has 256 bits of
//! entropy, so there is nothing to guess, and looking a hash up leaks
//! nothing about a key by timing). A principal may hold several keys (a
//! new one before the old is retired); `grace auth revoke NAME` ends every
//! key of the principal at once, and a revoked key never works again.

pub mod jwt;

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::access::{Principal, ReadScope, check_groups, valid_name};
use crate::config::{Config, StateBackend};
use crate::durable::hex;
use crate::state::{Schema, StateError, Store, params};
use crate::state::{now_ms, to_time};

/// The principals' file in the data folder.
pub const PRINCIPALS_FILE: &str = "principals.sqlite3";
/// What every key starts with (so that a leaked one is recognisable in
/// logs and secret scanners).
pub const KEY_PREFIX: &str = "gk_";
/// Longest bearer token looked at; anything longer is no key of ours (and
/// a 10 MB `Authorization` header is refused before it is hashed).
pub const MAX_KEY_CHARS: usize = 128;

/// The principals' schema, at version 1.
const SCHEMA: Schema = Schema {
    name: "principals",
    what: "principals database",
    ddl: DDL,
    version: 1,
    migrations: &[],
    durable: true,
};
const DDL: &str = "
CREATE TABLE IF NOT EXISTS principals (
    name TEXT PRIMARY KEY,
    groups TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS keys (
    key_hash TEXT PRIMARY KEY,
    principal TEXT NOT NULL REFERENCES principals(name),
    created_at INTEGER NOT NULL,
    revoked_at INTEGER
);
CREATE INDEX IF NOT EXISTS keys_by_principal ON keys(principal);
";

/// Result of the principal store.
pub type Result<T> = std::result::Result<T, AuthError>;

/// What went wrong with principals or keys.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// A name or group is not valid.
    #[error("{0}")]
    Invalid(String),
    /// No principal of that name.
    #[error(
        "no principal `{name}` (`grace auth list` shows them; `grace auth add-key {name}` creates one)"
    )]
    NotFound {
        /// The name asked for.
        name: String,
    },
    /// The database failed, is from a newer GRACE, or PostgreSQL could
    /// not be reached.
    #[error(transparent)]
    State(#[from] StateError),
    /// The data folder or the random source failed.
    #[error("cannot {action}: {source}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

/// A key as issued: the only time it is shown.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IssuedKey {
    /// The principal.
    pub name: String,
    /// The key (`gk_…`).
    pub key: String,
    /// The principal's groups.
    pub groups: Vec<String>,
}

/// A principal as `grace auth list` shows it (never a key).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PrincipalInfo {
    /// Its name.
    pub name: String,
    /// Its groups.
    pub groups: Vec<String>,
    /// Keys that still work.
    pub active_keys: usize,
    /// When it was created (RFC 3339).
    pub created_at: String,
}

/// The principals and their keys (`principals.sqlite3`, or PostgreSQL).
#[derive(Debug)]
pub struct Principals {
    store: Store,
}

fn hash(key: &str) -> String {
    hex(&Sha256::digest(key.as_bytes()))
}

impl Principals {
    /// Opens (creating if needed) the store every knowledge base of
    /// `config` shares: `principals.sqlite3` in `storage.data_dir`, or
    /// PostgreSQL's tables in the server's schema.
    pub fn open(config: &Config) -> Result<Self> {
        let file = config.storage.data_dir.join(PRINCIPALS_FILE);
        Ok(Self {
            store: Store::open_shared(config, SCHEMA, &file)?,
        })
    }

    /// The store when one was created; `None` when no key was ever issued
    /// on this machine (a reader creates no file; PostgreSQL's tables are
    /// always opened, since another server may have issued keys).
    pub fn open_existing(config: &Config) -> Result<Option<Self>> {
        let file = config.storage.data_dir.join(PRINCIPALS_FILE);
        match config.storage.state == StateBackend::Sqlite && !file.exists() {
            true => Ok(None),
            false => Self::open(config).map(Some),
        }
    }

    /// Issues a new key for `name`, creating the principal if it does not
    /// exist; its groups become `groups` (an existing principal's other
    /// keys keep working, with the new groups).
    pub fn add_key(&self, name: &str, groups: &[String]) -> Result<IssuedKey> {
        if !valid_name(name) {
            return Err(AuthError::Invalid(format!(
                "`{name}` is not a principal name: 1 to {} letters, digits, `.`, `_`, `@` or `-`",
                crate::access::MAX_NAME_CHARS
            )));
        }
        check_groups(groups).map_err(AuthError::Invalid)?;
        let principal = Principal::new(name, groups);
        let key = format!(
            "{KEY_PREFIX}{}",
            hex(
                &crate::durable::random_bytes().map_err(|source| AuthError::Io {
                    action: "read random bytes for a key",
                    source,
                })?
            )
        );
        let groups_json = serde_json::to_string(&principal.groups).unwrap_or_default();
        self.store.write(|c| {
            c.execute(
                "INSERT INTO principals (name, groups, created_at) VALUES (?1, ?2, ?3) \
                 ON CONFLICT(name) DO UPDATE SET groups = excluded.groups",
                params![name, groups_json, now_ms()],
            )?;
            c.execute(
                "INSERT INTO keys (key_hash, principal, created_at) VALUES (?1, ?2, ?3)",
                params![hash(&key), name, now_ms()],
            )?;
            Ok::<_, AuthError>(())
        })?;
        tracing::info!(principal = name, "API key issued");
        Ok(IssuedKey {
            name: principal.name,
            key,
            groups: principal.groups,
        })
    }

    /// Revokes every key of `name`; returns how many still worked.
    pub fn revoke(&self, name: &str) -> Result<usize> {
        let revoked = self.store.write(|c| {
            let exists = c
                .query_opt("SELECT 1 FROM principals WHERE name = ?1", params![name])?
                .is_some();
            if !exists {
                return Err(AuthError::NotFound {
                    name: name.to_string(),
                });
            }
            Ok(c.execute(
                "UPDATE keys SET revoked_at = ?2 WHERE principal = ?1 AND revoked_at IS NULL",
                params![name, now_ms()],
            )?)
        })?;
        let revoked = usize::try_from(revoked).unwrap_or(usize::MAX);
        tracing::info!(principal = name, revoked, "API keys revoked");
        Ok(revoked)
    }

    /// The principal a bearer token is a working key of; `None` for
    /// anything else (not a key, unknown, revoked, too long).
    pub fn principal_for_key(&self, token: &str) -> Result<Option<Principal>> {
        if !token.starts_with(KEY_PREFIX) || token.len() > MAX_KEY_CHARS {
            return Ok(None);
        }
        let found = self.store.read(|c| {
            c.query_opt(
                "SELECT p.name, p.groups FROM keys k JOIN principals p ON p.name = k.principal \
                 WHERE k.key_hash = ?1 AND k.revoked_at IS NULL",
                params![hash(token)],
            )?
            .map(|r| Ok::<_, StateError>((r.get::<String>(0)?, r.get::<String>(1)?)))
            .transpose()
        })?;
        Ok(found.map(|(name, groups)| Principal::new(&name, &parse_groups(&groups))))
    }

    /// The principal named `name`, if there is one.
    pub fn get(&self, name: &str) -> Result<Option<Principal>> {
        let found: Option<String> = self.store.read(|c| {
            c.query_opt(
                "SELECT groups FROM principals WHERE name = ?1",
                params![name],
            )?
            .map(|r| r.get(0))
            .transpose()
        })?;
        Ok(found.map(|groups| Principal::new(name, &parse_groups(&groups))))
    }

    /// Every principal, by name.
    pub fn list(&self) -> Result<Vec<PrincipalInfo>> {
        let rows = self.store.read(|c| {
            c.query(
                "SELECT p.name, p.groups, p.created_at, \
                 (SELECT COUNT(*) FROM keys k WHERE k.principal = p.name AND k.revoked_at IS NULL) \
                 FROM principals p ORDER BY p.name",
                params![],
            )
        })?;
        let mut list = rows
            .iter()
            .map(|r| {
                Ok(PrincipalInfo {
                    name: r.get(0)?,
                    groups: parse_groups(&r.get::<String>(1)?),
                    created_at: to_time(r.get(2)?).to_rfc3339(),
                    active_keys: r.get::<i64>(3)?.max(0) as usize,
                })
            })
            .collect::<std::result::Result<Vec<_>, StateError>>()?;
        // By name, bytewise on both databases (PostgreSQL's collation may not be).
        list.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(list)
    }

    /// The groups of `named` no principal with a key is in: what only they
    /// may read, nobody may read yet (a JWT may still name them).
    pub fn unknown_groups(&self, named: &[String]) -> Result<Vec<String>> {
        let known = self.known_groups()?;
        Ok(named
            .iter()
            .filter(|g| !known.contains(g))
            .cloned()
            .collect())
    }

    /// Every group some principal is in.
    pub fn known_groups(&self) -> Result<Vec<String>> {
        let mut groups: Vec<String> = self.list()?.into_iter().flat_map(|p| p.groups).collect();
        groups.sort();
        groups.dedup();
        Ok(groups)
    }
}

/// What principal `name` (in `config`'s store) may read; a name no
/// principal has is [`AuthError::NotFound`], never everything.
pub fn scope_of(config: &Config, name: &str) -> Result<ReadScope> {
    let not_found = || AuthError::NotFound {
        name: name.to_string(),
    };
    let store = Principals::open_existing(config)?.ok_or_else(not_found)?;
    let principal = store.get(name)?.ok_or_else(not_found)?;
    Ok(ReadScope::Principal(principal))
}

/// What reviewer `id` may read: the documents of the principal of the same
/// name, when there is one (`grace auth add-key ID --groups …`); else
/// everything, as for reviewers before principals existed.
pub fn reviewer_scope(principals: &Principals, id: &str) -> Result<ReadScope> {
    Ok(match principals.get(id)? {
        Some(p) => ReadScope::Principal(p),
        None => ReadScope::All,
    })
}

/// Groups as stored (a JSON list); anything else is no group.
fn parse_groups(stored: &str) -> Vec<String> {
    serde_json::from_str(stored).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(dir: &std::path::Path) -> Config {
        let mut config = Config::default();
        config.storage.data_dir = dir.to_path_buf();
        config
    }

    #[test]
    fn a_key_names_its_principal_until_revoked() {
        let dir = tempfile::tempdir().unwrap();
        let store = Principals::open(&config(dir.path())).unwrap();
        let issued = store
            .add_key("ann", &["hr".into(), "finance".into()])
            .unwrap();
        assert!(issued.key.starts_with(KEY_PREFIX) && issued.key.len() == 67);
        assert_eq!(issued.groups, ["finance", "hr"]);
        let ann = store.principal_for_key(&issued.key).unwrap().unwrap();
        assert_eq!(ann.name, "ann");
        // Only the hash is stored.
        let bytes = std::fs::read(dir.path().join(PRINCIPALS_FILE)).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains(&issued.key[3..]));
        // A second key works beside the first; revoking ends both, for good.
        let second = store.add_key("ann", &["hr".into()]).unwrap();
        assert_eq!(
            store
                .principal_for_key(&issued.key)
                .unwrap()
                .unwrap()
                .groups,
            ["hr"]
        );
        assert_eq!(store.revoke("ann").unwrap(), 2);
        assert!(store.principal_for_key(&issued.key).unwrap().is_none());
        assert!(store.principal_for_key(&second.key).unwrap().is_none());
        let third = store.add_key("ann", &[]).unwrap();
        assert!(store.principal_for_key(&issued.key).unwrap().is_none());
        assert!(store.principal_for_key(&third.key).unwrap().is_some());
        assert_eq!(store.list().unwrap()[0].active_keys, 1);
    }

    #[test]
    fn hostile_names_and_tokens_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = Principals::open(&config(dir.path())).unwrap();
        for bad in ["", "-x", "a b", "a/b", "ann'; DROP TABLE keys; --"] {
            assert!(store.add_key(bad, &[]).is_err(), "{bad:?}");
        }
        assert!(store.add_key("ann", &["a b".into()]).is_err());
        let huge = format!("{KEY_PREFIX}{}", "0".repeat(10 << 20));
        assert!(store.principal_for_key(&huge).unwrap().is_none());
        assert!(store.principal_for_key("").unwrap().is_none());
        assert!(matches!(
            store.revoke("nobody"),
            Err(AuthError::NotFound { .. })
        ));
    }
}
