//! `grace audit`: read the audit log (who asked, searched, viewed or acted
//! on what; never any text).

use chrono::{DateTime, NaiveDate, Utc};
use grace::audit::{Action, AuditLog, Record};
use grace::config::Config;

use crate::output;

/// Runs `grace audit [--since WHEN] [--principal NAME] [--limit N]`.
pub fn run(
    config: &Config,
    since: Option<&str>,
    principal: Option<&str>,
    limit: usize,
    json: bool,
) -> grace::Result<()> {
    let since = since.map(parse_since).transpose()?;
    let log = AuditLog::open(config)?;
    let records = log
        .read(&|r| since.is_none_or(|s| r.at >= s) && principal.is_none_or(|p| r.principal == p))
        .map_err(|e| grace::Error::InvalidInput(format!("cannot read the audit log: {e}")))?;
    // The newest `limit`, oldest first.
    let start = records.len().saturating_sub(limit);
    output::audit_records(&records[start..], json);
    Ok(())
}

/// The audit record of a question the command line answered.
pub fn asked(who: &str, kb: &str, report: &grace::exec::RunReport) -> Record {
    Record::new(who, kb, Action::Ask)
        .decision(report.decision.as_str())
        .documents(report.cited_sources().iter().map(String::as_str))
}

/// The audit record of a search from the command line.
pub fn searched(who: &str, kb: &str, passages: &[grace::Passage]) -> Record {
    Record::new(who, kb, Action::Search).documents(passages.iter().map(|p| p.source.as_str()))
}

/// `2026-11-29` (from its start, UTC) or an RFC 3339 time.
fn parse_since(text: &str) -> grace::Result<DateTime<Utc>> {
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Ok(t.with_timezone(&Utc));
    }
    NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| t.and_utc())
        .ok_or_else(|| {
            grace::Error::InvalidInput(format!(
                "--since {text:?}: give a date (2026-11-29) or a time (2026-11-29T08:00:00Z)"
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::parse_since;

    #[test]
    fn since_takes_a_date_or_a_time_and_nothing_else() {
        assert_eq!(
            parse_since("2026-11-29").unwrap().to_rfc3339(),
            "2026-11-29T00:00:00+00:00"
        );
        assert!(parse_since("2026-11-29T08:00:00+01:00").is_ok());
        for bad in ["yesterday", "", "2026-13-01", "1h"] {
            assert!(parse_since(bad).is_err(), "{bad}");
        }
    }
}
