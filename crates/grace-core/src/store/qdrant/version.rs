//! Which Qdrant server versions GRACE accepts, and the check of a
//! server's version against them.

use crate::store::{Result, StoreError};

/// The `qdrant-client` version GRACE is built with.
pub const CLIENT_VERSION: &str = "1.20.0";

/// Server versions (`major.minor`) GRACE's tests run against: the store
/// suite, the end-to-end evaluation and the cluster-survival test run on
/// Qdrant 1.16.3 on the project's machines (`../shared/qdrant`). A clone
/// elsewhere may run them on the release `scripts/setup --qdrant`
/// downloads, or on any server `GRACE_QDRANT_BIN` names: accepted, and
/// untested until it is listed here.
pub const TESTED_VERSIONS: &[(u64, u64)] = &[(1, 16)];

/// The oldest server GRACE accepts: the oldest tested one. Everything
/// GRACE uses (named dense and sparse vectors, the IDF modifier, the query
/// API, keyword payload indexes) is older than it.
const OLDEST: (u64, u64) = TESTED_VERSIONS[0];

/// The newest server GRACE accepts: one minor version past the client's
/// (Qdrant's own rule).
fn newest() -> (u64, u64) {
    parse_version(CLIENT_VERSION).map_or(OLDEST, |(major, minor)| (major, minor + 1))
}

/// The versions GRACE accepts, for messages: `1.16 to 1.21 (tested: 1.16)`.
pub fn supported() -> String {
    let tested: Vec<String> = TESTED_VERSIONS
        .iter()
        .map(|(major, minor)| format!("{major}.{minor}"))
        .collect();
    let (newest_major, newest_minor) = newest();
    format!(
        "{}.{} to {newest_major}.{newest_minor} (tested: {})",
        OLDEST.0,
        OLDEST.1,
        tested.join(", ")
    )
}

/// `major.minor` of a `major.minor.patch[-suffix]` version.
pub(super) fn parse_version(v: &str) -> Option<(u64, u64)> {
    let mut parts = v.trim_start_matches('v').splitn(3, '.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    let patch = parts.next()?;
    patch
        .starts_with(|c: char| c.is_ascii_digit())
        .then_some((major, minor))
}

/// Checks a server's version: from the oldest tested one (`OLDEST`) to
/// one minor version past the client's (Qdrant's own rule: minor versions
/// at most one apart). `Ok(true)` for a tested version, `Ok(false)` for an
/// accepted but untested one (worth a warning), an error otherwise.
pub fn check_version(url: &str, server: &str) -> Result<bool> {
    let incompatible = || StoreError::Incompatible {
        url: url.to_string(),
        server: server.to_string(),
        supported: supported(),
    };
    let Some(version) = parse_version(server) else {
        return Err(incompatible());
    };
    if version < OLDEST || version > newest() {
        return Err(incompatible());
    }
    Ok(TESTED_VERSIONS.contains(&version))
}
