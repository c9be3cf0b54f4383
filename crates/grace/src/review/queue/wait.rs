//! An asker waiting for the answer: blocking, or awaiting an
//! [`EscalationHandle`] from async code.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;

use super::ReviewQueue;
use super::types::{Escalation, Resolution, Viewer};
use crate::review::{Result, ReviewError};

impl ReviewQueue {
    /// Blocks until the escalation is settled (answered, rejected, expired
    /// or cancelled) or `timeout` passes. Polls the database, so the answer
    /// may come from another process.
    pub fn wait_blocking(&self, id: i64, timeout: Duration) -> Result<Escalation> {
        let started = Instant::now();
        loop {
            // Another process answers: this one has to look (a read; the
            // write lock only when the escalation is due to expire).
            let e = self.peek(id)?;
            if !e.status.is_open() {
                return Ok(e);
            }
            if started.elapsed() >= timeout {
                return Err(ReviewError::WaitTimedOut {
                    id,
                    status: e.status,
                    seconds: timeout.as_secs_f64(),
                });
            }
            std::thread::sleep(POLL.min(timeout.saturating_sub(started.elapsed())));
        }
    }

    /// Escalation `id` as its asker sees it, read without the write lock;
    /// one that is due to expire, or any after a clock jump, is settled
    /// first (which needs it).
    fn peek(&self, id: i64) -> Result<Escalation> {
        let (e, jumped) = self.read(|conn| {
            Ok((
                self.load(conn, id, Viewer::Asker)?,
                self.clock_jumped(conn)?,
            ))
        })?;
        if e.status.is_open() && (e.expires_at <= Utc::now() || jumped) {
            return self.get(id, Viewer::Asker);
        }
        Ok(e)
    }
}

/// How often a waiting asker looks at the queue.
const POLL: Duration = Duration::from_millis(200);

/// How often an asker waiting in the server looks for an answer another
/// process wrote (answers written by the server itself wake it at once).
const OTHER_PROCESS_POLL: Duration = Duration::from_secs(1);

/// An asker's handle on an escalation: await its settlement from async
/// code (the HTTP server, a service) or block on it.
#[derive(Clone)]
pub struct EscalationHandle {
    queue: Arc<ReviewQueue>,
    id: i64,
}

impl EscalationHandle {
    /// A handle on escalation `id` in `queue`.
    pub fn new(queue: Arc<ReviewQueue>, id: i64) -> Self {
        Self { queue, id }
    }

    /// The escalation's id.
    pub fn id(&self) -> i64 {
        self.id
    }

    /// The escalation as it stands now.
    pub fn current(&self) -> Result<Escalation> {
        self.queue.get(self.id, Viewer::Asker)
    }

    /// Waits until the escalation is settled or `timeout` passes, without
    /// blocking the async runtime's threads.
    pub async fn settled(&self, timeout: Duration) -> Result<Escalation> {
        let deadline = Instant::now() + timeout;
        let mut changes = self.queue.changes.subscribe();
        self.queue.listen_for_other_servers();
        loop {
            changes.borrow_and_update();
            let queue = self.queue.clone();
            let id = self.id;
            let e = tokio::task::spawn_blocking(move || queue.peek(id))
                .await
                .map_err(|e| ReviewError::Invalid(format!("the wait was interrupted: {e}")))??;
            if !e.status.is_open() {
                return Ok(e);
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(ReviewError::WaitTimedOut {
                    id: self.id,
                    status: e.status,
                    seconds: timeout.as_secs_f64(),
                });
            }
            // Woken by a write in this process; otherwise look again when
            // the escalation expires, or after OTHER_PROCESS_POLL for an
            // answer given by another process (a CLI reviewer).
            let until_expiry = (e.expires_at - Utc::now())
                .to_std()
                .unwrap_or(Duration::ZERO)
                + Duration::from_millis(5);
            let nap = OTHER_PROCESS_POLL.min(deadline - now).min(until_expiry);
            let _ = tokio::time::timeout(nap, changes.changed()).await;
        }
    }

    /// Withdraws the question.
    pub fn cancel(&self, who: &str) -> Result<Resolution> {
        self.queue.cancel(self.id, who)
    }
}
