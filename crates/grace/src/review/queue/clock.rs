//! Clock jumps. An escalation's time to live is a duration, but expiry
//! compares `expires_at`, a wall-clock time, with the wall clock. When
//! that clock jumps (set by hand, an NTP step, a virtual machine resumed),
//! open escalations would expire at once (forward) or linger (backward).
//!
//! So every write first compares how far the wall clock moved since the
//! last write with how far the machine's boot clock moved
//! (`CLOCK_BOOTTIME`, which no setting of the time moves, and which counts
//! a suspend). A difference beyond [`JUMP_MS`] is a jump: open
//! escalations' `expires_at` move by it, and each keeps the time it had
//! left. The last look is a row of the database (with the boot it was
//! made in), read and written in the write's transaction, so every
//! process on the machine sees one jump once. Reads that settle expiry
//! look for a jump too, and take the write path when there was one.
//!
//! Only with SQLite, one machine. Servers sharing PostgreSQL run on several
//! machines with boot clocks of their own: they need synchronised clocks
//! (NTP), and a jump on one of them is not made up for. Without a boot
//! clock and a boot id (not Linux), the wall clock alone decides.

use super::ReviewQueue;
use crate::review::Result;
use crate::review::db::now_ms;
use crate::state::{Conn, params};

/// A wall clock moving this much more or less than the boot clock between
/// two writes has jumped (NTP slews far slower than this).
const JUMP_MS: i64 = 2_000;

/// The machine's boot id and milliseconds since it booted; `None` where
/// there are none (not Linux).
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
    let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_BOOTTIME).ok()?;
    Some((boot, t.tv_sec() * 1000 + t.tv_nsec() / 1_000_000))
}

/// The clocks now, and the wall clock's jump since the last look.
struct Look {
    /// Milliseconds; `None` when there is no comparable last look or the
    /// clocks agree within [`JUMP_MS`].
    jump: Option<i64>,
    boot: &'static str,
    wall: i64,
    boot_ms: i64,
}

/// The clocks now against the last look recorded in `conn`; `None`
/// without a boot clock.
fn measure(conn: &Conn<'_>) -> Result<Option<Look>> {
    let Some((boot, boot_ms)) = boot_clock() else {
        return Ok(None);
    };
    let wall = now_ms();
    let last = conn.query_opt(
        "SELECT boot, wall_ms, boot_ms FROM clock WHERE id = 1",
        params![],
    )?;
    let jump = match last {
        Some(row) => {
            let (last_boot, last_wall, last_boot_ms): (String, i64, i64) =
                (row.get(0)?, row.get(1)?, row.get(2)?);
            // Rebooted since: nothing to measure against.
            (last_boot == boot)
                .then(|| (wall - last_wall) - (boot_ms - last_boot_ms))
                .filter(|j| j.abs() > JUMP_MS)
        }
        None => None,
    };
    Ok(Some(Look {
        jump,
        boot,
        wall,
        boot_ms,
    }))
}

impl ReviewQueue {
    /// Whether the wall clock jumped since the last write (a read: the
    /// write that follows makes up for it).
    pub(super) fn clock_jumped(&self, conn: &Conn<'_>) -> Result<bool> {
        if self.sqlite_path().is_none() {
            return Ok(false);
        }
        Ok(measure(conn)?.is_some_and(|look| look.jump.is_some()))
    }

    /// Moves open escalations' expiry by the wall clock's jump since the
    /// last write, if it jumped, and records the clocks now; the jump in
    /// milliseconds.
    pub(super) fn follow_clock_jumps(&self, tx: &Conn<'_>) -> Result<Option<i64>> {
        if self.sqlite_path().is_none() {
            return Ok(None);
        }
        let Some(Look {
            jump,
            boot,
            wall,
            boot_ms,
        }) = measure(tx)?
        else {
            return Ok(None);
        };
        tx.execute(
            "INSERT INTO clock (id, boot, wall_ms, boot_ms) VALUES (1, ?1, ?2, ?3) \
             ON CONFLICT(id) DO UPDATE SET boot = excluded.boot, wall_ms = excluded.wall_ms, \
             boot_ms = excluded.boot_ms",
            params![boot, wall, boot_ms],
        )?;
        let Some(jump) = jump else {
            return Ok(None);
        };
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
