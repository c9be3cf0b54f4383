//! The `qdrant` section: the Qdrant server the collection lives on when
//! `storage.backend` is `qdrant`.

use super::Result;
use super::check::{above_zero, in_range, invalid};
use serde::{Deserialize, Serialize};

/// The connection to a Qdrant server or cluster.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct QdrantConfig {
    /// gRPC URL of the Qdrant server (`storage.backend: qdrant`): `http://`
    /// or `https://` (TLS), port 6334 by default (6333 is its REST port).
    pub url: String,
    /// API key sent to the Qdrant server; empty: none. Best set through
    /// `GRACE_QDRANT__API_KEY` rather than in a file.
    pub api_key: String,
    /// Seconds one request to the Qdrant server may take (also the
    /// connection timeout).
    pub timeout_seconds: f64,
}

impl Default for QdrantConfig {
    fn default() -> Self {
        Self {
            url: "http://localhost:6334".to_string(),
            api_key: String::new(),
            timeout_seconds: 10.0,
        }
    }
}

/// The `qdrant` section: checked whatever the backend, so a mistake shows
/// before the day the backend is switched.
pub(super) fn validate_qdrant(q: &QdrantConfig) -> Result<()> {
    let rest = q
        .url
        .strip_prefix("http://")
        .or_else(|| q.url.strip_prefix("https://"));
    let host = rest.map(|r| r.split(['/', '?', '#']).next().unwrap_or(""));
    match host {
        Some(h) if !h.is_empty() && !h.starts_with(':') && !h.contains(char::is_whitespace) => {}
        _ => {
            return Err(invalid(
                "qdrant.url",
                format!(
                    "{:?} is not an http(s) URL with a host, such as http://localhost:6334 (the gRPC port)",
                    q.url
                ),
            ));
        }
    }
    if q.api_key
        .chars()
        .any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(invalid(
            "qdrant.api_key",
            "must not contain spaces or control characters".to_string(),
        ));
    }
    in_range(
        "qdrant.timeout_seconds",
        q.timeout_seconds,
        above_zero(3600.0),
        " seconds",
    )
}
