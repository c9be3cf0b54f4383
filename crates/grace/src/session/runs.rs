//! Runs waiting for the asker's reply: the agent's state kept under a
//! run id until the reply comes (taken back once) or its time runs out.

use serde::Serialize;

use super::{Result, SessionError, SessionStore, millis, new_id, plausible_id, shown};
use crate::state::now_ms;
use crate::state::params;

/// Prefix of the ids of runs waiting for the asker.
pub const RUN_PREFIX: &str = "run_";
/// The pattern of a waiting run's id, as the OpenAPI document publishes it.
pub const RUN_ID_PATTERN: &str = r"^run_[0-9a-f]{32}$";
/// Largest state a waiting run may keep (bytes of JSON).
const MAX_RUN_BYTES: usize = 8 << 20;

impl SessionStore {
    /// Keeps `state` for `ttl_seconds` under a new run id, for
    /// [`take_run`](Self::take_run). Runs count against
    /// `sessions.max_sessions` with the sessions.
    pub fn park_run<T: Serialize>(&self, state: &T, ttl_seconds: f64) -> Result<String> {
        let text = serde_json::to_string(state)
            .map_err(|e| self.corrupt(format!("cannot store a run: {e}")))?;
        if text.len() > MAX_RUN_BYTES {
            return Err(SessionError::RunTooLarge {
                bytes: text.len(),
                max: MAX_RUN_BYTES,
            });
        }
        let id = new_id(RUN_PREFIX)?;
        let now = now_ms();
        let ttl = millis(ttl_seconds);
        self.write(|c| {
            let open: i64 = c
                .query_one(
                    "SELECT (SELECT COUNT(*) FROM sessions) + (SELECT COUNT(*) FROM parked_runs)",
                    params![],
                )?
                .get(0)?;
            if usize::try_from(open).unwrap_or(usize::MAX) >= self.limits.max_sessions {
                return Err(SessionError::TooMany {
                    max: self.limits.max_sessions,
                });
            }
            c.execute(
                "INSERT INTO parked_runs (id, created_at, expires_at, state) VALUES (?1, ?2, ?3, ?4)",
                params![id, now, now.saturating_add(ttl), text],
            )?;
            Ok(())
        })?;
        Ok(id)
    }

    /// Takes back the state kept under run `id` (once: it is removed)
    /// when `may_take` allows it (the caller is the run's asker);
    /// [`SessionError::RunNotFound`] when there is none, it expired, or
    /// `may_take` refuses (the run then stays for its asker).
    pub fn take_run<T: serde::de::DeserializeOwned>(
        &self,
        id: &str,
        may_take: impl FnOnce(&T) -> bool,
    ) -> Result<T> {
        let not_found = || SessionError::RunNotFound { id: shown(id) };
        if !plausible_id(id, RUN_PREFIX) {
            return Err(not_found());
        }
        self.write(|c| {
            let row = c
                .query_opt("SELECT state FROM parked_runs WHERE id = ?1", params![id])?
                .ok_or_else(not_found)?;
            let text: String = row.get(0)?;
            let state: T =
                serde_json::from_str(&text).map_err(|e| self.corrupt(format!("run {id}: {e}")))?;
            if !may_take(&state) {
                return Err(not_found());
            }
            c.execute("DELETE FROM parked_runs WHERE id = ?1", params![id])?;
            Ok(state)
        })
    }
}
