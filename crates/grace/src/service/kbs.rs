//! Several knowledge bases served at once (`kbs:` in the configuration):
//! one [`Grace`] handle each, opened from its own derived configuration
//! ([`Config::for_kb`]), and the roles that say who may use which.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::Grace;
use crate::config::{Config, DEFAULT_KB, EmbeddingConfig, Role, Roles};
use crate::embed::{Embedder, FastEmbedder};
use crate::error::{Error, Result};

/// The complete configuration of knowledge base `name` (its sections
/// merged over the top level's), or [`Error::UnknownKb`]. Its calibration
/// is read, so that a missing or broken file is a configuration error now,
/// whatever is done next; the knowledge base scores with it when it opens.
pub fn kb_config(base: &Config, name: &str) -> Result<Config> {
    let config = base
        .for_kb(name)?
        .ok_or_else(|| Error::UnknownKb(name.to_string()))?;
    crate::confidence::calibration::load(&config)?;
    Ok(config)
}

/// Every knowledge base a server serves, by name, with its roles.
#[derive(Clone)]
pub struct Kbs {
    default: Grace,
    handles: BTreeMap<String, Grace>,
    roles: BTreeMap<String, Roles>,
}

impl Kbs {
    /// Opens every knowledge base `base` names (`default` always). A
    /// `--data-dir`-style change to `base` applies to all of them. Those
    /// with the same embedding settings share one copy of the model.
    pub fn open(base: &Config) -> Result<Self> {
        let mut models: Vec<(EmbeddingConfig, Arc<dyn Embedder>)> = Vec::new();
        Self::open_with(base, |config| {
            let shared = models
                .iter()
                .find(|(settings, _)| *settings == config.embedding)
                .map(|(_, model)| model.clone());
            let model = match shared {
                Some(model) => model,
                None => {
                    let model: Arc<dyn Embedder> = Arc::new(FastEmbedder::new(&config.embedding)?);
                    models.push((config.embedding.clone(), model.clone()));
                    model
                }
            };
            Grace::builder(config).embedder(model).build()
        })
    }

    /// [`Kbs::open`] with each handle built by `open` (tests give a mock
    /// generator this way).
    pub fn open_with(base: &Config, mut open: impl FnMut(Config) -> Result<Grace>) -> Result<Self> {
        let mut handles = BTreeMap::new();
        let mut roles = BTreeMap::new();
        for name in base.kb_names() {
            let config = kb_config(base, &name)?;
            handles.insert(name.clone(), open(config)?);
            roles.insert(name.clone(), base.roles(&name));
        }
        let default = handles
            .get(DEFAULT_KB)
            .cloned()
            .ok_or_else(|| Error::UnknownKb(DEFAULT_KB.to_string()))?;
        Ok(Self {
            default,
            handles,
            roles,
        })
    }

    /// One knowledge base alone, as `default` (what a server without
    /// `kbs:` serves; tests build servers this way).
    pub fn single(grace: Grace) -> Self {
        let roles = grace.config().kbs.get(DEFAULT_KB).map(|k| k.roles.clone());
        Self {
            roles: BTreeMap::from([(DEFAULT_KB.to_string(), roles.unwrap_or_default())]),
            handles: BTreeMap::from([(DEFAULT_KB.to_string(), grace.clone())]),
            default: grace,
        }
    }

    /// The knowledge base `default`.
    pub fn default_kb(&self) -> &Grace {
        &self.default
    }

    /// The knowledge base `name`, if served.
    pub fn get(&self, name: &str) -> Option<&Grace> {
        self.handles.get(name)
    }

    /// The names served, `default` first.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        std::iter::once(DEFAULT_KB)
            .filter(|d| self.handles.contains_key(*d))
            .chain(
                self.handles
                    .keys()
                    .map(String::as_str)
                    .filter(|n| *n != DEFAULT_KB),
            )
    }

    /// Every handle, `default` first.
    pub fn handles(&self) -> impl Iterator<Item = (&str, &Grace)> {
        self.names()
            .filter_map(|n| self.handles.get(n).map(|g| (n, g)))
    }

    /// Whether a caller reading within `scope` may ask knowledge base `kb`:
    /// the operator (everything) any served one, a principal those its
    /// ask role names.
    pub fn may_ask(&self, kb: &str, scope: &crate::access::ReadScope) -> bool {
        match scope {
            crate::access::ReadScope::All => self.handles.contains_key(kb),
            crate::access::ReadScope::Principal(p) => {
                self.grants(kb, Role::Ask, &p.name, &p.groups)
            }
        }
    }

    /// Whether a principal named `name` in `groups` holds `role` on
    /// knowledge base `kb` (false for one not served).
    pub fn grants(&self, kb: &str, role: Role, name: &str, groups: &[String]) -> bool {
        self.roles
            .get(kb)
            .is_some_and(|r| r.grants(role, name, groups))
    }
}

/// One knowledge base as `grace kb list` shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct KbSummary {
    /// Its name.
    pub name: String,
    /// Its collection (`collection.name`, its own on a Qdrant server).
    pub collection: String,
    /// Where its collection lives (a folder, or a Qdrant server's URL).
    pub location: String,
    /// Its state folder (manifest, review queue, sessions, feedback).
    pub state: std::path::PathBuf,
    /// Its embedding model's folder.
    pub model_dir: std::path::PathBuf,
    /// Chunks stored; `None` before its first ingest (or `grace kb create`).
    pub chunks: Option<usize>,
    /// Why its collection could not be read, when it exists but cannot
    /// (a Qdrant server not answering, say).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Who may ask, review and administer it.
    pub roles: Roles,
}

/// Every knowledge base `base` names, with its size when it exists.
pub fn summaries(base: &Config) -> Result<Vec<KbSummary>> {
    base.kb_names()
        .into_iter()
        .map(|name| {
            let config = kb_config(base, &name)?;
            let (chunks, error) = match crate::kb::status(&config) {
                Ok(s) => (Some(s.store.points), None),
                Err(Error::Store(
                    crate::store::StoreError::CollectionNotFound { .. }
                    | crate::store::StoreError::NotFound { .. },
                )) => (None, None),
                Err(e) => (None, Some(e.to_string())),
            };
            Ok(KbSummary {
                collection: config.collection.name.clone(),
                location: config.collection_location().display().to_string(),
                state: config.kb_dir(),
                model_dir: config.embedding.model_dir.clone(),
                chunks,
                error,
                roles: base.roles(&name),
                name,
            })
        })
        .collect()
}

/// Creates knowledge base `config`'s empty collection (with its model's
/// dimension), so a server serves it before its first ingest.
pub fn create(config: Config) -> Result<()> {
    let kb = crate::kb::KnowledgeBase::open(config, crate::kb::OpenMode::Create)?;
    kb.store().flush()?;
    Ok(())
}

/// Deletes everything knowledge base `config` holds: its collection (on a
/// Qdrant server too), manifest, review queue (its PostgreSQL schema with
/// `storage.state: postgres`), sessions and feedback.
/// The top-level knowledge base `default` shares its folder with the
/// principals and the audit log and is refused.
pub fn drop_kb(config: &Config) -> Result<()> {
    if config.kb_name() == DEFAULT_KB {
        return Err(Error::InvalidInput(
            "the knowledge base `default` holds the server's principals and audit log: delete its data by hand (storage.data_dir) if you mean it".into(),
        ));
    }
    let dir = config.kb_dir();
    // Only ever a real folder right under the real data_dir/kbs: no
    // symbolic link on the way may take the deletion elsewhere.
    let kbs = config.storage.data_dir.join("kbs");
    let linked = |p: &std::path::Path| {
        std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink())
    };
    let real_parent = match (std::fs::canonicalize(&kbs), std::fs::canonicalize(&dir)) {
        (Ok(kbs), Ok(dir)) => dir.parent() == Some(kbs.as_path()),
        // Nothing there yet: nothing to delete on disk.
        (_, Err(_)) => true,
        (Err(_), Ok(_)) => false,
    };
    let own = crate::config::valid_kb_name(config.kb_name()) && real_parent;
    if !own || linked(&dir) || linked(&kbs) {
        return Err(Error::InvalidInput(format!(
            "refusing to delete {}: not a knowledge base's own folder",
            dir.display()
        )));
    }
    if config.storage.backend == crate::config::Backend::Qdrant {
        crate::kb::drop_server_collection(&config.qdrant, &config.collection)?;
    }
    crate::state::drop_postgres_schema(config)?;
    match std::fs::remove_dir_all(&dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::Server(format!(
            "cannot delete {}: {e}",
            dir.display()
        ))),
    }
}
