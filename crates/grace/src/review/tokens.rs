//! Reviewer tokens: a bearer token names exactly one reviewer, so that no
//! reviewer can act as another (a header naming the reviewer could be set
//! to anyone).
//!
//! A token is `grv_` and 64 hex digits (32 random bytes). Only its SHA-256
//! is stored (`reviewer_tokens`); the token is shown once, when issued,
//! and issuing a new one replaces the old (rotation). A plain hash is
//! enough: the token has 256 bits of entropy, so there is nothing to
//! guess, and looking up a hash leaks nothing about a token by timing.

use sha2::{Digest, Sha256};

use super::db::{now_ms, reviewer_exists};
use super::queue::ReviewQueue;
use super::{Result, ReviewError};
use crate::durable::hex;
use crate::state::params;

/// What every reviewer token starts with (so that a leaked one is
/// recognisable in logs and secret scanners).
pub const TOKEN_PREFIX: &str = "grv_";

/// Longest token looked up; anything longer is not one of ours.
const MAX_TOKEN_CHARS: usize = 128;

fn hash(token: &str) -> String {
    hex(&Sha256::digest(token.as_bytes()))
}

impl ReviewQueue {
    /// Issues a new token for registered reviewer `id`, replacing any
    /// earlier one (which stops working at once). The token is returned
    /// here and nowhere else: GRACE keeps only its hash.
    pub fn issue_token(&self, id: &str) -> Result<String> {
        let token = format!("{TOKEN_PREFIX}{}", hex(&super::handle::random_bytes()?));
        let hashed = hash(&token);
        self.write(|tx| {
            if !reviewer_exists(tx, id)? {
                return Err(ReviewError::NotFound {
                    what: "reviewer",
                    id: format!("{id:?} (register with `grace review register`)"),
                });
            }
            tx.execute(
                "INSERT INTO reviewer_tokens (reviewer_id, token_hash, issued_at) VALUES (?1, ?2, ?3) \
                 ON CONFLICT(reviewer_id) DO UPDATE SET token_hash = excluded.token_hash, \
                 issued_at = excluded.issued_at",
                params![id, hashed, now_ms()],
            )?;
            Ok(())
        })?;
        tracing::info!(reviewer = id, "reviewer token issued");
        Ok(token)
    }

    /// The reviewer a token belongs to; `None` for anything else.
    pub fn reviewer_for_token(&self, token: &str) -> Result<Option<String>> {
        if !token.starts_with(TOKEN_PREFIX) || token.len() > MAX_TOKEN_CHARS {
            return Ok(None);
        }
        let hashed = hash(token);
        self.read(|conn| {
            Ok(conn
                .query_opt(
                    "SELECT reviewer_id FROM reviewer_tokens WHERE token_hash = ?1",
                    params![hashed],
                )?
                .map(|r| r.get(0))
                .transpose()?)
        })
    }

    /// Whether reviewer `id` has a token.
    pub fn has_token(&self, id: &str) -> Result<bool> {
        self.read(|conn| {
            Ok(conn
                .query_opt(
                    "SELECT 1 FROM reviewer_tokens WHERE reviewer_id = ?1",
                    params![id],
                )?
                .is_some())
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Config;
    use crate::review::{ReviewQueue, Reviewer};

    fn queue(dir: &std::path::Path) -> ReviewQueue {
        let q = ReviewQueue::open_at(&dir.join("review.sqlite3"), &Config::default()).unwrap();
        for id in ["alice", "bob"] {
            q.register_reviewer(&Reviewer {
                id: id.into(),
                name: id.into(),
                description: String::new(),
            })
            .unwrap();
        }
        q
    }

    #[test]
    fn a_token_names_one_reviewer_and_rotation_voids_the_old_one() {
        let dir = tempfile::tempdir().unwrap();
        let q = queue(dir.path());
        assert!(!q.has_token("alice").unwrap());
        let alice = q.issue_token("alice").unwrap();
        let bob = q.issue_token("bob").unwrap();
        assert!(alice.starts_with("grv_") && alice.len() == 68, "{alice}");
        assert_ne!(alice, bob);
        assert_eq!(
            q.reviewer_for_token(&alice).unwrap().as_deref(),
            Some("alice")
        );
        assert_eq!(q.reviewer_for_token(&bob).unwrap().as_deref(), Some("bob"));
        // Only the hash is stored.
        let stored = std::fs::read(dir.path().join("review.sqlite3")).unwrap();
        let text = String::from_utf8_lossy(&stored);
        assert!(!text.contains(&alice[4..]), "the token itself is on disk");
        // Rotation: the old token stops working, the new one works.
        let again = q.issue_token("alice").unwrap();
        assert_eq!(q.reviewer_for_token(&alice).unwrap(), None);
        assert_eq!(
            q.reviewer_for_token(&again).unwrap().as_deref(),
            Some("alice")
        );
        // Nothing else is a token.
        for wrong in ["", "alice", "grv_", &"grv_0".repeat(100), &again[..67]] {
            assert_eq!(q.reviewer_for_token(wrong).unwrap(), None, "{wrong}");
        }
        // An unregistered reviewer gets no token.
        let err = q.issue_token("mallory").unwrap_err().to_string();
        assert!(err.contains("not found"), "{err}");
    }
}
