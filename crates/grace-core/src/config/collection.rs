//! The `collection` section: the collection a knowledge base's passages
//! live in, and its layout when GRACE creates it on a Qdrant server.

use super::Result;
use super::check::{in_range, invalid};
use serde::{Deserialize, Serialize};

/// Longest collection name.
const MAX_COLLECTION_NAME_CHARS: usize = 64;

/// The collection: its name (each knowledge base has its own) and, on a
/// Qdrant server, how it is sharded and replicated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CollectionConfig {
    /// Collection name; the embedded store keeps it in
    /// `<data_dir>/collections/<name>`.
    pub name: String,
    /// Shards of a collection GRACE creates on a server; 0: the server's
    /// default (one per node). Fixed at creation: a collection that exists
    /// with another number is an error.
    pub shard_number: u32,
    /// Copies of each shard kept on different nodes; 0: the server's
    /// default (1). With 2 or more, a cluster keeps serving and writing
    /// when a node is lost.
    pub replication_factor: u32,
    /// Replicas that must apply a write before it counts as done; 0: the
    /// server's default (1). At most `replication_factor`.
    pub write_consistency_factor: u32,
}

impl Default for CollectionConfig {
    fn default() -> Self {
        Self {
            name: "grace".to_string(),
            shard_number: 0,
            replication_factor: 0,
            write_consistency_factor: 0,
        }
    }
}

/// The `collection` section: checked whatever the backend, so a mistake
/// shows before the day the backend is switched.
pub(super) fn validate_collection(c: &CollectionConfig) -> Result<()> {
    let name_ok = !c.name.is_empty()
        && c.name.len() <= MAX_COLLECTION_NAME_CHARS
        && c.name
            .chars()
            .all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == '-');
    if !name_ok {
        return Err(invalid(
            "collection.name",
            format!(
                "`{}` must be 1 to {MAX_COLLECTION_NAME_CHARS} characters of letters, digits, `_` or `-`",
                c.name
            ),
        ));
    }
    for (key, value) in [
        ("collection.shard_number", c.shard_number),
        ("collection.replication_factor", c.replication_factor),
        (
            "collection.write_consistency_factor",
            c.write_consistency_factor,
        ),
    ] {
        in_range(key, value, 0..=1000, " (0: the server's default)")?;
    }
    if c.write_consistency_factor > c.replication_factor.max(1) {
        return Err(invalid(
            "collection.write_consistency_factor",
            format!(
                "{} is more than the replicas there are (collection.replication_factor {}): no write could ever be confirmed",
                c.write_consistency_factor,
                c.replication_factor.max(1)
            ),
        ));
    }
    Ok(())
}
