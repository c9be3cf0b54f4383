//! Clock jumps. An escalation's time to live is a duration, but expiry
//! compares `expires_at`, a wall-clock time, with the wall clock. When
//! that clock jumps (set by hand, an NTP step, a virtual machine resumed),
//! open escalations would expire at once (forward) or linger (backward).
//!
//! So every write first compares how far the wall clock moved since the
//! last write with how far the machine's boot clock moved (`/proc/uptime`,
//! which no setting of the time moves, and which counts a suspend). A
//! difference beyond [`JUMP_MS`] is a jump: open escalations' `expires_at`
//! move by it, and each keeps the time it had left. The last look is a row
//! of the database (with the boot it was made in), so every process on the
//! machine sees one jump once.
//!
//! Only with SQLite, one machine. Servers sharing PostgreSQL run on several
//! machines with boot clocks of their own: they need synchronised clocks
//! (NTP), and a jump on one of them is not made up for. Without `/proc`
//! (not Linux), the wall clock alone decides.

use super::ReviewQueue;
use crate::review::Result;
use crate::review::db::now_ms;
use crate::state::{Conn, params};

/// A wall clock moving this much more or less than the boot clock between
/// two writes has jumped (NTP slews far slower than this).
const JUMP_MS: i64 = 2_000;

/// The machine's boot id and milliseconds since it booted; `None` without
/// `/proc`.
fn boot_clock() -> Option<(&'static str, i64)> {
    // The boot id cannot change while this process runs: read once.
    static BOOT: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    let boot = BOOT
        .get_or_init(|| {
            std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
                .ok()
                .map(|b| b.trim().to_string())
        })
        .as_deref()?;
    let uptime = std::fs::read_to_string("/proc/uptime").ok()?;
    let secs: f64 = uptime.split_whitespace().next()?.parse().ok()?;
    Some((boot, (secs * 1000.0) as i64))
}

impl ReviewQueue {
    /// Moves open escalations' expiry by the wall clock's jump since the
    /// last write, if it jumped; the jump in milliseconds.
    pub(super) fn follow_clock_jumps(&self, tx: &Conn<'_>) -> Result<Option<i64>> {
        if self.sqlite_path().is_none() {
            return Ok(None);
        }
        let Some((boot, boot_ms)) = boot_clock() else {
            return Ok(None);
        };
        let wall = now_ms();
        let last = tx.query_opt(
            "SELECT boot, wall_ms, boot_ms FROM clock WHERE id = 1",
            params![],
        )?;
        tx.execute(
            "INSERT INTO clock (id, boot, wall_ms, boot_ms) VALUES (1, ?1, ?2, ?3) \
             ON CONFLICT(id) DO UPDATE SET boot = excluded.boot, wall_ms = excluded.wall_ms, \
             boot_ms = excluded.boot_ms",
            params![boot, wall, boot_ms],
        )?;
        let Some(row) = last else {
            return Ok(None);
        };
        let (last_boot, last_wall, last_boot_ms): (String, i64, i64) =
            (row.get(0)?, row.get(1)?, row.get(2)?);
        if last_boot != boot {
            // Rebooted since: nothing to measure against.
            return Ok(None);
        }
        let jump = (wall - last_wall) - (boot_ms - last_boot_ms);
        if jump.abs() <= JUMP_MS {
            return Ok(None);
        }
        let moved = tx.execute(
            "UPDATE escalations SET expires_at = expires_at + ?1 WHERE status IN ('pending', 'claimed')",
            params![jump],
        )?;
        tracing::warn!(
            jump_seconds = jump as f64 / 1000.0,
            escalations = moved,
            "the system clock jumped: open escalations keep the time they had left"
        );
        Ok(Some(jump))
    }
}
