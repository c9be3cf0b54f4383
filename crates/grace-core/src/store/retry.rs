//! Trying a store write again when it failed for a moment.
//!
//! A Qdrant server that restarts, or a cluster that has just lost a node,
//! answers some writes late or not at all (seen with Qdrant 1.16.3: the
//! first `wait = true` write after a node was killed timed out at 30 s,
//! although it was applied). GRACE's writes are idempotent (deterministic
//! point ids; delete by source), so sending one again never duplicates
//! anything: [`with_retries`] does so for errors that
//! [`StoreError::is_transient`] calls passing, waiting longer each time.

use std::time::Duration;

use super::{Result, StoreError};

/// The longest wait between two tries.
const MAX_WAIT: Duration = Duration::from_secs(30);

/// How often and how patiently to try again.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// Tries after the first one.
    pub retries: u32,
    /// Wait before the first retry; each next one doubles, up to 30 s.
    pub first_wait: Duration,
}

impl RetryPolicy {
    /// A policy from `ingest.store_retries` and `ingest.store_retry_seconds`.
    pub fn new(retries: u32, first_wait_seconds: f64) -> Self {
        Self {
            retries,
            first_wait: Duration::try_from_secs_f64(first_wait_seconds)
                .unwrap_or(Duration::ZERO)
                .min(MAX_WAIT),
        }
    }

    fn wait(&self, retry: u32) -> Duration {
        let factor = 2u32.saturating_pow(retry.saturating_sub(1));
        self.first_wait.saturating_mul(factor).min(MAX_WAIT)
    }
}

/// One retry about to happen.
#[derive(Debug)]
pub struct Retry<'a> {
    /// Which retry this is, from 1.
    pub attempt: u32,
    /// Retries allowed in all.
    pub of: u32,
    /// How long it waits first.
    pub wait: Duration,
    /// The error that made it necessary.
    pub error: &'a StoreError,
}

/// Runs `write`, and runs it again after a transient failure, up to
/// `policy.retries` times; `on_retry` hears of each retry before its wait.
/// A non-transient error, or the last transient one, is returned as is.
pub fn with_retries<T>(
    policy: RetryPolicy,
    on_retry: &mut dyn FnMut(&Retry<'_>),
    mut write: impl FnMut() -> Result<T>,
) -> Result<T> {
    let mut attempt = 0;
    loop {
        match write() {
            Err(error) if error.is_transient() && attempt < policy.retries => {
                attempt += 1;
                crate::telemetry::store_retry();
                let wait = policy.wait(attempt);
                tracing::warn!(%error, attempt, of = policy.retries, wait_secs = wait.as_secs_f64(), "store write failed for now; trying again");
                on_retry(&Retry {
                    attempt,
                    of: policy.retries,
                    wait,
                    error: &error,
                });
                std::thread::sleep(wait);
            }
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn down() -> StoreError {
        StoreError::Unavailable {
            url: "http://127.0.0.1:1".into(),
            message: "refused".into(),
        }
    }

    #[test]
    fn transient_failures_are_retried_until_success() {
        let mut calls = 0;
        let mut heard = Vec::new();
        let got = with_retries(
            RetryPolicy::new(3, 0.0),
            &mut |r| heard.push((r.attempt, r.of)),
            || {
                calls += 1;
                if calls < 3 { Err(down()) } else { Ok(calls) }
            },
        );
        assert_eq!(got.unwrap(), 3);
        assert_eq!(heard, vec![(1, 3), (2, 3)]);
    }

    #[test]
    fn the_last_transient_error_is_returned_and_others_are_not_retried() {
        let mut calls = 0;
        let got: Result<()> = with_retries(RetryPolicy::new(2, 0.0), &mut |_| {}, || {
            calls += 1;
            Err(down())
        });
        assert!(matches!(got, Err(StoreError::Unavailable { .. })));
        assert_eq!(calls, 3);

        let mut calls = 0;
        let got: Result<()> = with_retries(RetryPolicy::new(5, 0.0), &mut |_| {}, || {
            calls += 1;
            Err(StoreError::BadPayload {
                id: "1".into(),
                message: "x".into(),
            })
        });
        assert!(matches!(got, Err(StoreError::BadPayload { .. })));
        assert_eq!(calls, 1, "a lasting error is not tried again");
    }

    #[test]
    fn waits_double_up_to_thirty_seconds() {
        let p = RetryPolicy::new(10, 1.0);
        let waits: Vec<u64> = (1..=7).map(|r| p.wait(r).as_secs()).collect();
        assert_eq!(waits, vec![1, 2, 4, 8, 16, 30, 30]);
        assert_eq!(RetryPolicy::new(1, f64::NAN).first_wait, Duration::ZERO);
    }
}
