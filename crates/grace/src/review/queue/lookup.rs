//! Reading escalations back: lists and pages, counts by status, one
//! escalation, its audit log; and who may see which.

use super::ReviewQueue;
use super::types::{AuditEntry, Escalation, ListFilter, Status, Viewer};
use crate::review::db::{allowed_list, from_json, to_time};
use crate::review::{Result, ReviewError};
use crate::state::{Conn, Row, params};

const COLUMNS: &str = "id, question, reason, request, run, collection, asker, allowed, status, \
     claimed_by, created_at, updated_at, expires_at, resolution";

/// Answered escalations whose wait makes the typical one.
pub const TYPICAL_WAIT_SAMPLE: i64 = 200;

/// True for an open escalation that joined another still open: it is
/// shown, counted and answered through that one (its `also_asked`).
const JOINED_OPEN: &str = "(escalations.status IN ('pending', 'claimed') AND EXISTS ( \
     SELECT 1 FROM escalation_groups g JOIN escalations l ON l.id = g.lead_id \
     WHERE g.escalation_id = escalations.id AND l.status IN ('pending', 'claimed')))";

impl ReviewQueue {
    /// Escalations the viewer may see, newest first, optionally of one status.
    pub fn list(&self, viewer: Viewer<'_>, status: Option<Status>) -> Result<Vec<Escalation>> {
        self.list_page(
            viewer,
            &ListFilter {
                status,
                ..ListFilter::default()
            },
        )
    }

    /// One page of the escalations the viewer may see, newest first. The
    /// filter, the visibility check and the page are SQL: only the rows
    /// returned are read and decoded, however many are stored. An open
    /// escalation that joined another open one is not listed: it is among
    /// that one's `also_asked`.
    pub fn list_page(&self, viewer: Viewer<'_>, filter: &ListFilter) -> Result<Vec<Escalation>> {
        let (sees_all, reviewer) = match viewer {
            Viewer::Admin | Viewer::Asker => (true, None),
            Viewer::Reviewer(r) => (false, Some(r)),
            Viewer::Anyone => (false, None),
        };
        // No limit: as many as there can be (PostgreSQL refuses -1).
        let limit = filter
            .limit
            .map_or(i64::MAX, |l| i64::try_from(l).unwrap_or(i64::MAX));
        self.settle_due()?;
        let rows = self.read(|conn| {
            let restricted = conn.dialect().json_list_has("escalations.allowed", "?4");
            conn.query(
                &format!(
                    "SELECT {COLUMNS} FROM escalations \
                     WHERE (CAST(?1 AS TEXT) IS NULL OR status = ?1) \
                       AND (?2 = 0 OR status IN ('pending', 'claimed')) \
                       AND (?3 = 1 OR allowed IS NULL OR {restricted}) \
                       AND (CAST(?5 AS BIGINT) IS NULL OR id < ?5) \
                       AND NOT {JOINED_OPEN} \
                     ORDER BY id DESC LIMIT ?6"
                ),
                params![
                    filter.status.map(Status::as_str),
                    filter.open_only,
                    sees_all,
                    reviewer,
                    filter.before,
                    limit
                ],
            )?
            .iter()
            .map(raw_row)
            .collect::<Result<Vec<_>>>()
        })?;
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            let e = self.decode(row)?;
            if visible(&e, viewer) {
                out.push(e);
            }
        }
        self.read(|conn| self.with_groups(conn, out))
    }

    /// How many escalations have each status (every status, zeros
    /// included), once those past their time are settled; an open one
    /// that joined another open one counts with it, as listed.
    pub fn counts(&self) -> Result<Vec<(Status, u64)>> {
        self.settle_due()?;
        let found: Vec<(String, i64)> = self.read(|conn| {
            conn.query(
                &format!(
                    "SELECT status, COUNT(*) FROM escalations WHERE NOT {JOINED_OPEN} GROUP BY status"
                ),
                params![],
            )?
            .iter()
            .map(|r| Ok((r.get(0)?, r.get(1)?)))
            .collect()
        })?;
        Ok(Status::ALL
            .iter()
            .map(|&status| {
                let n = found
                    .iter()
                    .find(|(name, _)| name == status.as_str())
                    .map_or(0, |(_, n)| u64::try_from(*n).unwrap_or(0));
                (status, n)
            })
            .collect())
    }

    /// How long a person usually takes to answer here: the median time
    /// from asking to answer of the last 200 (`TYPICAL_WAIT_SAMPLE`)
    /// escalations a reviewer answered (not those answered with one they
    /// joined); `None` before the first.
    pub fn typical_wait(&self) -> Result<Option<std::time::Duration>> {
        let mut waits: Vec<i64> = self.read(|conn| {
            conn.query(
                "SELECT a.at - e.created_at FROM audit a JOIN escalations e ON e.id = a.escalation_id \
                 WHERE a.action = 'answered' AND a.detail NOT LIKE 'with #%' \
                 ORDER BY a.id DESC LIMIT ?1",
                params![TYPICAL_WAIT_SAMPLE],
            )?
            .iter()
            .map(|r| Ok(r.get(0)?))
            .collect::<Result<_>>()
        })?;
        if waits.is_empty() {
            return Ok(None);
        }
        waits.sort_unstable();
        let median = waits[waits.len() / 2].max(0);
        Ok(Some(std::time::Duration::from_millis(
            u64::try_from(median).unwrap_or(0),
        )))
    }

    /// One escalation; a restricted one the viewer may not see is
    /// [`ReviewError::NotFound`], exactly like a missing one.
    pub fn get(&self, id: i64, viewer: Viewer<'_>) -> Result<Escalation> {
        let e = self.write(|tx| self.load(tx, id, viewer))?;
        let who = match viewer {
            Viewer::Reviewer(r) => Some(format!("reviewer:{r}")),
            Viewer::Admin => Some("-".to_string()),
            Viewer::Anyone | Viewer::Asker => None,
        };
        if let Some(who) = who {
            self.log_view(&who, &e);
        }
        Ok(e)
    }

    /// Every recorded transition of an escalation, oldest first.
    pub fn log(&self, id: i64, viewer: Viewer<'_>) -> Result<Vec<AuditEntry>> {
        self.write(|tx| {
            self.load(tx, id, viewer)?;
            let rows = tx
                .query(
                    "SELECT at, actor, action, from_status, to_status, detail FROM audit \
                     WHERE escalation_id = ?1 ORDER BY id",
                    params![id],
                )?
                .iter()
                .map(|r| {
                    Ok((
                        r.get::<i64>(0)?,
                        r.get::<String>(1)?,
                        r.get::<String>(2)?,
                        r.get::<Option<String>>(3)?,
                        r.get::<Option<String>>(4)?,
                        r.get::<String>(5)?,
                    ))
                })
                .collect::<Result<Vec<_>>>()?;
            rows.into_iter()
                .map(|(at, actor, action, from, to, detail)| {
                    Ok(AuditEntry {
                        at: to_time(at),
                        actor,
                        action,
                        from: from.map(|s| s.parse()).transpose()?,
                        to: to.map(|s| s.parse()).transpose()?,
                        detail,
                    })
                })
                .collect()
        })
    }

    pub(super) fn load(&self, conn: &Conn<'_>, id: i64, viewer: Viewer<'_>) -> Result<Escalation> {
        let row = conn
            .query_opt(
                &format!("SELECT {COLUMNS} FROM escalations WHERE id = ?1"),
                params![id],
            )?
            .as_ref()
            .map(raw_row)
            .transpose()?;
        let not_found = || ReviewError::NotFound {
            what: "escalation",
            id: id.to_string(),
        };
        let e = self.decode(row.ok_or_else(not_found)?)?;
        if visible(&e, viewer) {
            self.with_group(conn, e)
        } else {
            Err(not_found())
        }
    }

    fn decode(&self, r: RawRow) -> Result<Escalation> {
        let p = self.store.place();
        let what = |field: &str| format!("escalation {} {field}", r.id);
        Ok(Escalation {
            id: r.id,
            question: r.question,
            reason: r.reason,
            request: from_json(p, &what("request"), &r.request)?,
            run: from_json(p, &what("run"), &r.run)?,
            collection: r.collection,
            asker: r.asker,
            allowed: allowed_list(p, r.allowed)?,
            status: r.status.parse()?,
            claimed_by: r.claimed_by,
            created_at: to_time(r.created_at),
            updated_at: to_time(r.updated_at),
            expires_at: to_time(r.expires_at),
            asker_waits_until: to_time(r.created_at)
                + chrono::Duration::milliseconds(
                    (self.config.asker_wait_seconds * 1000.0).min(i64::MAX as f64) as i64,
                ),
            resolution: r
                .resolution
                .map(|t| from_json(p, &what("resolution"), &t))
                .transpose()?,
            joined_to: None,
            withheld: 0,
            also_asked: Vec::new(),
        })
    }
}

struct RawRow {
    id: i64,
    question: String,
    reason: String,
    request: String,
    run: String,
    collection: String,
    asker: String,
    allowed: Option<String>,
    status: String,
    claimed_by: Option<String>,
    created_at: i64,
    updated_at: i64,
    expires_at: i64,
    resolution: Option<String>,
}

fn raw_row(r: &Row) -> Result<RawRow> {
    Ok(RawRow {
        id: r.get(0)?,
        question: r.get(1)?,
        reason: r.get(2)?,
        request: r.get(3)?,
        run: r.get(4)?,
        collection: r.get(5)?,
        asker: r.get(6)?,
        allowed: r.get(7)?,
        status: r.get(8)?,
        claimed_by: r.get(9)?,
        created_at: r.get(10)?,
        updated_at: r.get(11)?,
        expires_at: r.get(12)?,
        resolution: r.get(13)?,
    })
}

fn visible(e: &Escalation, viewer: Viewer<'_>) -> bool {
    match (viewer, &e.allowed) {
        (Viewer::Asker | Viewer::Admin, _) | (_, None) => true,
        (Viewer::Reviewer(r), Some(list)) => list.iter().any(|a| a == r),
        (Viewer::Anyone, Some(_)) => false,
    }
}
