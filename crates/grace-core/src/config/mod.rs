//! Configuration: typed sections, built-in defaults, YAML loading,
//! `GRACE_<SECTION>__<KEY>` environment overrides and validation.
//!
//! Load order (later wins): [`Config::default()`] → the YAML file (`--config
//! PATH`, else `./grace_config.yml` when present) → environment variables.
//! `grace_config.yml` at the repository root documents every key and equals
//! `Config::default()` (a test proves it).
//!
//! Relative paths in a config file are resolved against the file's folder;
//! the model paths the file does not set (`embedding.model_dir`,
//! `embedding.runtime_path`, `reader.model_dir`) against GRACE's per-user
//! folder ([`grace_home`]), so a `grace` run from any directory finds the
//! models `scripts/setup` put there, or the system package's
//! ([`models_home`]); other defaults and environment values against the
//! current directory.

pub mod access;
mod check;
mod collection;
mod confidence;
mod env;
mod error;
mod feedback;
mod home;
mod ingest;
mod kbs;
mod llm;
mod models;
mod planner;
mod qdrant;
mod search;
mod serve;
mod storage;
mod tools;
mod validate;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use self::collection::CollectionConfig;
pub use self::confidence::{
    Aggregation, ConfidenceConfig, ConfidenceModel, FeedbackCalibrationMode, ReaderMode,
    SelfCalibrationConfig, SelfCalibrationMode, Thresholds, V1Weights, Weights,
};
pub use self::error::{ConfigError, Result};
pub use self::feedback::{
    FeedbackConfig, MAX_BOOST_HALF_LIFE_DAYS, MAX_DOCUMENT_BOOST, MAX_GAP_DAYS,
};
pub use self::home::{HOME_VAR, SYSTEM_HOME, cache_home, grace_home, models_home};
pub use self::ingest::IngestConfig;
pub use self::kbs::{
    KB_SECTIONS, KbConfig, MAX_KB_NAME_CHARS, MAX_KBS, Role, Roles, valid_kb_name,
};
pub use self::llm::{
    AnswerConfig, AnswerFormat, ExtractiveConfig, LlmConfig, LlmProvider, RemoteLlmConfig, ToolMode,
};
pub use self::models::{EmbeddingConfig, ReaderConfig};
pub use self::planner::{AgentConfig, PlannerConfig, Strategy};
pub use self::qdrant::QdrantConfig;
pub use self::search::{MAX_SEARCH_LIMIT, Rerank, SearchConfig};
pub use self::serve::{
    AuditConfig, AuthConfig, JwtConfig, McpConfig, ReviewConfig, ServerConfig, SessionsConfig,
};
pub use self::storage::{Backend, PostgresConfig, Quantization, StateBackend, StorageConfig};
pub use self::tools::*;

/// The knowledge base one configuration's collection is served as (today's
/// routes, the audit log).
pub const DEFAULT_KB: &str = "default";

/// The file looked for in the current directory when no `--config` is given.
pub const DEFAULT_CONFIG_FILE: &str = "grace_config.yml";

/// The whole configuration. Every section has defaults, so an empty file is
/// a valid configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Where and how the knowledge base is stored (`storage`).
    pub storage: StorageConfig,
    /// The local embedding model (`embedding`).
    pub embedding: EmbeddingConfig,
    /// How documents are found and chunked (`ingest`).
    pub ingest: IngestConfig,
    /// The collection: its name and, on a Qdrant server, its layout
    /// (`collection`).
    pub collection: CollectionConfig,
    /// The Qdrant server the collection lives on with `storage.backend:
    /// qdrant` (`qdrant`).
    pub qdrant: QdrantConfig,
    /// How a search ranks passages: the limit, the fusion of the dense and
    /// lexical rankings, identifier pinning, reranking (`search`).
    pub search: SearchConfig,
    /// The answerability reader, a cross-encoder (`reader`).
    pub reader: ReaderConfig,
    /// How confidence is scored and levelled (`confidence`).
    pub confidence: ConfidenceConfig,
    /// The tools a run may use and their policies (`tools`).
    pub tools: ToolsConfig,
    /// The generator that writes answers (`llm`).
    pub llm: LlmConfig,
    /// How answers are shown (`answer`).
    pub answer: AnswerConfig,
    /// Human review of escalations (`review`).
    pub review: ReviewConfig,
    /// The HTTP API of `grace serve` (`server`).
    pub server: ServerConfig,
    /// The MCP tool server of `grace mcp` (`mcp`).
    pub mcp: McpConfig,
    /// Conversations: how long they live and how much they hold (`sessions`).
    pub sessions: SessionsConfig,
    /// Askers' ratings of answers, and what a refit reads (`feedback`).
    pub feedback: FeedbackConfig,
    /// How a question is worked through: a fixed plan, a model's plan, or
    /// the agent loop (`planner`).
    pub planner: PlannerConfig,
    /// The agent loop's budgets (`agent`).
    pub agent: AgentConfig,
    /// The audit log (`audit`).
    pub audit: AuditConfig,
    /// Who may call GRACE besides its keys: OIDC / JWT tokens (`auth`).
    pub auth: AuthConfig,
    /// Knowledge bases besides `default` (the top level), and roles on
    /// each; see [`Config::for_kb`].
    pub kbs: BTreeMap<String, KbConfig>,
    /// Which knowledge base this configuration describes (set by
    /// [`Config::for_kb`]; empty: `default`). Not read from a file.
    #[serde(skip)]
    pub kb: String,
}

impl Config {
    /// Loads the configuration: defaults, then `path` (or `./grace_config.yml`
    /// if `path` is `None` and that file exists), then the process
    /// environment; validates the result.
    pub fn load(path: Option<&Path>) -> Result<Self> {
        let vars: Vec<(String, String)> = std::env::vars().collect();
        Self::load_with_env(path, &vars)
    }

    /// Like [`Config::load`], with the environment given explicitly (tests).
    pub fn load_with_env(path: Option<&Path>, vars: &[(String, String)]) -> Result<Self> {
        let file = match path {
            Some(p) => Some(p.to_path_buf()),
            None => {
                let p = PathBuf::from(DEFAULT_CONFIG_FILE);
                p.is_file().then_some(p)
            }
        };
        let (mut config, text) = match &file {
            Some(p) => {
                let text = std::fs::read_to_string(p).map_err(|source| ConfigError::Read {
                    path: p.clone(),
                    source,
                })?;
                let config = Self::from_yaml(&text).map_err(|e| e.in_file(p))?;
                (config, Some(text))
            }
            None => (Self::default(), None),
        };
        let parsed: Option<serde_yaml::Value> =
            text.as_deref().and_then(|t| serde_yaml::from_str(t).ok());
        let set_in_file = |section: &str, key: &str| {
            parsed
                .as_ref()
                .and_then(|v| v.get(section))
                .and_then(|v| v.get(key))
                .is_some_and(|v| !v.is_null())
        };
        let base = file.as_deref().and_then(Path::parent);
        config.resolve_paths(base, models_home(vars).as_deref(), &set_in_file);
        let from_env = env::apply_overrides(&mut config, vars)?;
        let source = file.as_deref().zip(text.as_deref());
        validate::validate(&config)
            .and_then(|()| kbs::validate_kbs(&config))
            .map_err(|e| e.locate(source, &from_env))?;
        Ok(config)
    }

    /// Parses YAML text over the defaults (missing keys keep their default)
    /// without validating ranges.
    pub fn from_yaml(text: &str) -> Result<Self> {
        if text.trim().is_empty() {
            return Ok(Self::default());
        }
        serde_yaml::from_str(text).map_err(ConfigError::from_yaml)
    }

    /// The YAML form of this configuration.
    pub fn to_yaml(&self) -> Result<String> {
        serde_yaml::to_string(self).map_err(ConfigError::from_yaml)
    }

    /// Makes relative paths absolute: those a config file sets, and the
    /// defaults of the data folder, display root and calibration file,
    /// against the file's folder `base`; the model paths the file does not
    /// set against GRACE's per-user folder `home`, where `scripts/setup`
    /// installs the models. An unknown root leaves a path as it is (the
    /// current directory).
    fn resolve_paths(
        &mut self,
        base: Option<&Path>,
        home: Option<&Path>,
        set_in_file: &dyn Fn(&str, &str) -> bool,
    ) {
        let join = |p: &mut PathBuf, root: Option<&Path>| {
            if let Some(root) = root.filter(|r| !r.as_os_str().is_empty())
                && p.is_relative()
                && !p.as_os_str().is_empty()
            {
                *p = root.join(&*p);
            }
        };
        for p in [&mut self.storage.data_dir, &mut self.server.display_root]
            .into_iter()
            .chain(self.server.watch.iter_mut())
            .chain(self.confidence.calibration.as_mut())
        {
            join(p, base);
        }
        kbs::resolve_paths(&mut self.kbs, base);
        for (section, key, p) in [
            ("embedding", "model_dir", &mut self.embedding.model_dir),
            (
                "embedding",
                "runtime_path",
                &mut self.embedding.runtime_path,
            ),
            ("reader", "model_dir", &mut self.reader.model_dir),
        ] {
            join(
                p,
                if set_in_file(section, key) {
                    base
                } else {
                    home
                },
            );
        }
    }

    /// Folder of the configured collection in the embedded store.
    pub fn collection_dir(&self) -> PathBuf {
        self.kb_dir()
            .join("collections")
            .join(&self.collection.name)
    }

    /// Where files uploaded to `/v1/ingest` are kept.
    pub fn uploads_dir(&self) -> PathBuf {
        self.kb_dir().join("uploads").join(&self.collection.name)
    }

    /// The review queue's SQLite database (escalations, reviewers,
    /// messages, shared context, audit), one per knowledge base.
    pub fn review_db_path(&self) -> PathBuf {
        self.kb_dir().join("review.sqlite3")
    }

    /// Usage statistics and health of every tool, one per knowledge base.
    pub fn tool_stats_path(&self) -> PathBuf {
        self.kb_dir().join("tool_stats.sqlite3")
    }

    /// Tools created at run time (scripts, their versions and audit log),
    /// one per knowledge base.
    pub fn runtime_tools_path(&self) -> PathBuf {
        self.kb_dir().join("runtime_tools.sqlite3")
    }

    /// Folder of reviewed answers promoted to knowledge (one Markdown file
    /// per answer), ingested like any other document.
    pub fn reviewed_dir(&self) -> PathBuf {
        self.kb_dir().join("reviewed").join(&self.collection.name)
    }

    /// Path of the ingest manifest of the configured collection: what the
    /// store holds, per source. Each backend has its own (a Qdrant
    /// server's per server URL), because each holds its own points:
    /// `manifests/<collection>.json` for `edge`,
    /// `manifests/qdrant/<host>_<port>/<collection>.json` for `qdrant`.
    pub fn manifest_path(&self) -> PathBuf {
        self.per_collection("manifests")
    }

    /// The collection's self-calibration (`grace calibrate --self`), kept
    /// beside its manifest: `<data_dir>/self-calibration/…/<collection>.json`.
    pub fn self_calibration_path(&self) -> PathBuf {
        self.per_collection("self-calibration")
    }

    /// The answering vector cache a server keeps across restarts
    /// (`CachedEmbedder::save`): `<data_dir>/vector-cache/…/<collection>.bin`.
    pub fn vector_cache_path(&self) -> PathBuf {
        self.per_collection("vector-cache").with_extension("bin")
    }

    /// The fit on people's feedback that scores runs
    /// (`confidence.feedback_calibration: auto`): `<data_dir>/feedback-calibration.json`.
    pub fn feedback_calibration_path(&self) -> PathBuf {
        self.kb_dir().join("feedback-calibration.json")
    }

    /// Every fit on people's feedback, kept or not: `<data_dir>/feedback-fits.json`.
    pub fn feedback_fits_path(&self) -> PathBuf {
        self.kb_dir().join("feedback-fits.json")
    }

    /// `<data_dir>/<folder>/<collection>.json`, under `qdrant/<server>/`
    /// for a collection on a Qdrant server.
    fn per_collection(&self, folder: &str) -> PathBuf {
        let manifests = self.kb_dir().join(folder);
        let file = format!("{}.json", self.collection.name);
        match self.storage.backend {
            Backend::Edge => manifests.join(file),
            Backend::Qdrant => manifests
                .join("qdrant")
                .join(server_folder_name(&self.qdrant.url))
                .join(file),
        }
    }

    /// Where the configured collection lives, for people: the embedded
    /// store's folder, or `<url>/collections/<collection>` on a server.
    pub fn collection_location(&self) -> PathBuf {
        match self.storage.backend {
            Backend::Edge => self.collection_dir(),
            Backend::Qdrant => PathBuf::from(format!(
                "{}/collections/{}",
                self.qdrant.url.trim_end_matches('/'),
                self.collection.name
            )),
        }
    }
}

/// A folder name for a server URL: `http://db.example:6334/` →
/// `db.example_6334` (scheme dropped, every other character that is not a
/// letter, digit, `.` or `-` replaced by `_`).
fn server_folder_name(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let name: String = rest
        .trim_end_matches('/')
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if name.is_empty() {
        "server".to_string()
    } else {
        name
    }
}

#[cfg(test)]
mod tests;
