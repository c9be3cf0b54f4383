//! An evaluation's temporary stores, removed when dropped: a folder and, on
//! a Qdrant server, a collection.

use std::path::PathBuf;

use super::set::EvalError;
use grace::config::{CollectionConfig, Config, QdrantConfig};

/// `<pid>_<nanoseconds>`: a name no other evaluation running now has.
fn unique() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    format!("{}_{nanos}", std::process::id())
}

/// A Qdrant collection of the evaluation's own (`<collection>_eval_<pid>_<n>`),
/// deleted when dropped: the server and the collection it is on.
pub(super) struct TempCollection {
    server: QdrantConfig,
    collection: CollectionConfig,
}

impl TempCollection {
    /// With `storage.backend: qdrant`, points `config` at a new collection
    /// name; `None` for the embedded store.
    pub(super) fn on_server(config: &mut Config) -> Option<Self> {
        if config.storage.backend != grace::config::Backend::Qdrant {
            return None;
        }
        config.collection.name = format!("{}_eval_{}", config.collection.name, unique());
        Some(Self {
            server: config.qdrant.clone(),
            collection: config.collection.clone(),
        })
    }
}

impl Drop for TempCollection {
    fn drop(&mut self) {
        if let Err(e) = grace::drop_server_collection(&self.server, &self.collection) {
            tracing::warn!(collection = %self.collection.name, error = %e, "could not delete the evaluation's collection");
        }
    }
}

/// A temporary folder removed on drop.
pub(super) struct TempDir(pub(super) PathBuf);

impl TempDir {
    pub(super) fn new() -> std::result::Result<Self, EvalError> {
        let path = std::env::temp_dir().join(format!("grace-eval-{}", unique()));
        std::fs::create_dir_all(&path).map_err(|source| EvalError::Io {
            action: "create",
            path: path.clone(),
            source,
        })?;
        Ok(Self(path))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
