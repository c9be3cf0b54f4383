//! Several knowledge bases on one server (`kbs:`). The top-level sections
//! describe the knowledge base `default`; each entry of `kbs:` names
//! another (or, as `default`, adds roles and folders to that one) and may
//! replace any of the sections a knowledge base owns ([`KB_SECTIONS`]),
//! key by key. [`Config::for_kb`] derives one knowledge base's complete
//! configuration: the sections merged, its own state folder
//! ([`Config::kb_dir`]) and, on a Qdrant server, its own collection.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::access::{MAX_READERS, PUBLIC, check_reader};
use super::check::invalid;
use super::{Config, ConfigError, DEFAULT_KB, Result};

/// Most knowledge bases one configuration may name.
pub const MAX_KBS: usize = 64;

/// Longest knowledge base name.
pub const MAX_KB_NAME_CHARS: usize = 64;

/// Whether `name` may name a knowledge base: 1 to [`MAX_KB_NAME_CHARS`]
/// lowercase ASCII letters, digits, `_` or `-`, starting with a letter or
/// a digit. It is a folder's name (`data_dir/kbs/NAME`), a collection's
/// and a path segment: never `.` or `..`, never two that differ in case
/// only.
pub fn valid_kb_name(name: &str) -> bool {
    name.len() <= MAX_KB_NAME_CHARS
        && name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
}

/// The sections a knowledge base may set for itself. The others (storage,
/// server, mcp, auth, audit, sessions, tools, llm) belong to the server
/// and are shared.
pub const KB_SECTIONS: [&str; 12] = [
    "embedding",
    "ingest",
    "collection",
    "qdrant",
    "search",
    "reader",
    "confidence",
    "answer",
    "review",
    "feedback",
    "planner",
    "agent",
];

/// One knowledge base's entry under `kbs:`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct KbConfig {
    /// Folders kept in step while serving this knowledge base (as
    /// `server.watch` for `default`).
    pub watch: Vec<PathBuf>,
    /// Who may ask it, review its escalations and administer it.
    pub roles: Roles,
    /// Its own `embedding` keys (`model_dir`: its model). Each section
    /// below replaces the top level's keys it sets, and keeps the others.
    pub embedding: Option<serde_yaml::Value>,
    /// Its own `ingest` keys (`default_access`, chunking…).
    pub ingest: Option<serde_yaml::Value>,
    /// Its own `collection` keys (`name`, default `<collection.name>-NAME`).
    pub collection: Option<serde_yaml::Value>,
    /// Its own `qdrant` keys (another server).
    pub qdrant: Option<serde_yaml::Value>,
    /// Its own `search` keys.
    pub search: Option<serde_yaml::Value>,
    /// Its own `reader` keys.
    pub reader: Option<serde_yaml::Value>,
    /// Its own `confidence` keys (thresholds, weights, `calibration`).
    pub confidence: Option<serde_yaml::Value>,
    /// Its own `answer` keys.
    pub answer: Option<serde_yaml::Value>,
    /// Its own `review` keys (escalation and waiting times).
    pub review: Option<serde_yaml::Value>,
    /// Its own `feedback` keys.
    pub feedback: Option<serde_yaml::Value>,
    /// Its own `planner` keys.
    pub planner: Option<serde_yaml::Value>,
    /// Its own `agent` keys.
    pub agent: Option<serde_yaml::Value>,
}

impl KbConfig {
    fn section(&self, name: &str) -> Option<&serde_yaml::Value> {
        match name {
            "embedding" => self.embedding.as_ref(),
            "ingest" => self.ingest.as_ref(),
            "collection" => self.collection.as_ref(),
            "qdrant" => self.qdrant.as_ref(),
            "search" => self.search.as_ref(),
            "reader" => self.reader.as_ref(),
            "confidence" => self.confidence.as_ref(),
            "answer" => self.answer.as_ref(),
            "review" => self.review.as_ref(),
            "feedback" => self.feedback.as_ref(),
            "planner" => self.planner.as_ref(),
            "agent" => self.agent.as_ref(),
            _ => None,
        }
    }

    /// Whether the entry names its own collection (else it is
    /// `<collection.name>-NAME`).
    fn names_its_collection(&self) -> bool {
        self.collection
            .as_ref()
            .and_then(|c| c.get("name"))
            .is_some()
    }

    fn section_mut(&mut self, name: &str) -> Option<&mut serde_yaml::Value> {
        match name {
            "embedding" => self.embedding.as_mut(),
            "reader" => self.reader.as_mut(),
            "confidence" => self.confidence.as_mut(),
            _ => None,
        }
    }
}

/// Who holds a role on a knowledge base: readers' words (`public`,
/// `group:NAME`, `user:NAME`) naming principals. The service key and the
/// administrator's key hold every role everywhere; a reviewer's own token
/// (`grace review register`) reviews the knowledge base that issued it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Roles {
    /// Who may ask and search it (and read its sessions). `public`: every
    /// caller the server lets in.
    pub ask: Vec<String>,
    /// Principals who review its escalations, as reviewers named by their
    /// principal's name.
    pub review: Vec<String>,
    /// Principals who may ingest into it over HTTP (trusted with its
    /// documents: an ingest report names the files it touched).
    pub admin: Vec<String>,
}

impl Default for Roles {
    fn default() -> Self {
        Self {
            ask: vec![PUBLIC.to_string()],
            review: Vec::new(),
            admin: Vec::new(),
        }
    }
}

/// A role on a knowledge base.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Asks, searches, holds sessions.
    Ask,
    /// Reviews escalations.
    Review,
    /// Ingests and administers.
    Admin,
}

impl Roles {
    /// Whether a principal named `name` in `groups` holds `role`. An
    /// administrator also reviews and asks; a reviewer also asks.
    pub fn grants(&self, role: Role, name: &str, groups: &[String]) -> bool {
        let holds = |list: &[String]| {
            list.iter().any(|r| {
                r == PUBLIC
                    || r.strip_prefix("user:") == Some(name)
                    || r.strip_prefix("group:")
                        .is_some_and(|g| groups.iter().any(|have| have == g))
            })
        };
        let admin = holds(&self.admin);
        let review = admin || holds(&self.review);
        match role {
            Role::Admin => admin,
            Role::Review => review,
            Role::Ask => review || holds(&self.ask),
        }
    }
}

impl Config {
    /// The knowledge bases this configuration serves, `default` first.
    pub fn kb_names(&self) -> Vec<String> {
        std::iter::once(DEFAULT_KB.to_string())
            .chain(self.kbs.keys().filter(|k| *k != DEFAULT_KB).cloned())
            .collect()
    }

    /// The roles on knowledge base `name` (the defaults for `default`
    /// when `kbs:` does not name it).
    pub fn roles(&self, name: &str) -> Roles {
        self.kbs
            .get(name)
            .map(|k| k.roles.clone())
            .unwrap_or_default()
    }

    /// The complete configuration of knowledge base `name`: the top level
    /// with the sections its entry sets merged in, key by key. `None` when
    /// no knowledge base has that name.
    pub fn for_kb(&self, name: &str) -> Result<Option<Config>> {
        let entry = match (name, self.kbs.get(name)) {
            (_, Some(entry)) => entry,
            (DEFAULT_KB, None) => {
                let mut c = self.clone();
                c.kb = DEFAULT_KB.to_string();
                return Ok(Some(c));
            }
            (_, None) => return Ok(None),
        };
        if !valid_kb_name(name) {
            return Err(invalid(
                &format!("kbs.{name}"),
                "not a knowledge base's name (lowercase letters, digits, `_` or `-`)",
            ));
        }
        let mut whole = serde_yaml::to_value(self).map_err(ConfigError::from_yaml)?;
        for section in KB_SECTIONS {
            if let (Some(overlay), Some(base)) = (entry.section(section), whole.get_mut(section)) {
                merge(base, overlay);
            }
        }
        // The path of what does not read is kept (the merged value has no
        // lines): an unknown key is named where the entry wrote it.
        let mut derived: Config =
            serde_path_to_error::deserialize(whole).map_err(|e| entry_error(name, e))?;
        derived.kb = name.to_string();
        if name != DEFAULT_KB {
            // A knowledge base's own folders; the top level's are
            // `default`'s.
            derived.server.watch = entry.watch.clone();
            if !entry.names_its_collection() {
                derived.collection.name = format!("{}-{name}", self.collection.name);
            }
            // Its own tables (storage is the server's: never the entry's).
            derived.storage.postgres.schema = kb_schema(&self.storage.postgres.schema, name);
        } else {
            derived.server.watch.extend(entry.watch.iter().cloned());
        }
        super::validate::validate(&derived).map_err(|e| match e {
            // The collection name made from the knowledge base's.
            ConfigError::Invalid { key, message, .. }
                if key == "collection.name" && name != DEFAULT_KB && !entry.names_its_collection() =>
            {
                invalid(
                    &format!("kbs.{name}"),
                    format!(
                        "its collection `{}`: {message}; shorten the name or set kbs.{name}.collection.name",
                        derived.collection.name
                    ),
                )
            }
            ConfigError::Invalid { key, message, .. } => {
                let section = key.split('.').next().unwrap_or_default();
                match entry.section(section) {
                    Some(_) => invalid(&format!("kbs.{name}.{key}"), message),
                    None => ConfigError::Invalid {
                        key,
                        message,
                        file: None,
                        line: None,
                    },
                }
            }
            other => other,
        })?;
        Ok(Some(derived))
    }

    /// The name of the knowledge base this configuration describes.
    pub fn kb_name(&self) -> &str {
        match self.kb.as_str() {
            "" => DEFAULT_KB,
            name => name,
        }
    }

    /// The PostgreSQL settings of the state every knowledge base shares
    /// (the principals, the audit log): `storage.postgres` with the
    /// server's schema, not a knowledge base's own.
    pub fn shared_postgres(&self) -> super::PostgresConfig {
        let mut settings = self.storage.postgres.clone();
        if self.kb_name() != DEFAULT_KB
            && let Some(root) = settings.schema.strip_suffix(&kb_schema("", self.kb_name()))
        {
            settings.schema = root.to_string();
        }
        settings
    }

    /// This knowledge base's state folder: `storage.data_dir` for
    /// `default`, `storage.data_dir/kbs/NAME` for another. The principals
    /// and the audit log stay in `storage.data_dir`, shared.
    pub fn kb_dir(&self) -> PathBuf {
        match self.kb_name() {
            DEFAULT_KB => self.storage.data_dir.clone(),
            name => self.storage.data_dir.join("kbs").join(name),
        }
    }
}

/// Why the sections of entry `name` merged into the top level do not
/// read. An unknown key (in a section or a table inside one) is named by
/// its path in the file (`kbs.NAME.SECTION.KEY`, so the load finds its
/// line), with what replaced it when an earlier GRACE read it; anything
/// else is the parser's message under `kbs.NAME`.
fn entry_error(name: &str, e: serde_path_to_error::Error<serde_yaml::Error>) -> ConfigError {
    // Where serde was: an unknown key's path ends with the key itself.
    let path = e.path().to_string();
    let e = e.into_inner();
    let message = e.to_string();
    let unknown = super::error::unknown_field(&message).and_then(|(_, key)| {
        let section = path.strip_suffix(key)?.strip_suffix('.')?;
        KB_SECTIONS
            .contains(&section.split('.').next().unwrap_or_default())
            .then_some((section, key))
    });
    let Some((section, key)) = unknown else {
        let mut e = ConfigError::from_yaml(e);
        if let ConfigError::Parse { message, .. } = &mut e {
            *message = format!("kbs.{name}: {message}");
        }
        return e;
    };
    // A value's error has no path or line: the message is serde's own.
    let hint = super::error::replaced(section, key).map_or(String::new(), |replaced| {
        format!(" ({replaced}; an entry takes the top level's keys)")
    });
    invalid(
        &format!("kbs.{name}.{section}.{key}"),
        format!("{message}{hint}"),
    )
}

/// The PostgreSQL schema of knowledge base `name`'s own tables under the
/// server's schema `root` (`-` reads as `_`).
fn kb_schema(root: &str, name: &str) -> String {
    format!("{root}_{}", name.replace('-', "_"))
}

/// Replaces `base`'s keys with `overlay`'s, recursing into mappings.
fn merge(base: &mut serde_yaml::Value, overlay: &serde_yaml::Value) {
    match (base, overlay) {
        (serde_yaml::Value::Mapping(b), serde_yaml::Value::Mapping(o)) => {
            for (k, v) in o {
                match b.get_mut(k) {
                    Some(slot) => merge(slot, v),
                    None => {
                        b.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (b, o) => *b = o.clone(),
    }
}

/// Resolves the paths an entry sets (models, calibration, folders)
/// against the config file's folder, as the top level's are.
pub(super) fn resolve_paths(kbs: &mut BTreeMap<String, KbConfig>, base: Option<&Path>) {
    let Some(base) = base.filter(|b| !b.as_os_str().is_empty()) else {
        return;
    };
    let join = |p: &Path| match p.is_relative() && !p.as_os_str().is_empty() {
        true => base.join(p),
        false => p.to_path_buf(),
    };
    for entry in kbs.values_mut() {
        for w in &mut entry.watch {
            *w = join(w);
        }
        for (section, key) in [
            ("embedding", "model_dir"),
            ("embedding", "runtime_path"),
            ("reader", "model_dir"),
            ("confidence", "calibration"),
        ] {
            if let Some(serde_yaml::Value::String(s)) =
                entry.section_mut(section).and_then(|v| v.get_mut(key))
            {
                *s = join(Path::new(s)).to_string_lossy().into_owned();
            }
        }
    }
}

/// Checks `kbs:`: names, roles, and that each derives a valid
/// configuration.
pub(super) fn validate_kbs(c: &Config) -> Result<()> {
    if c.kbs.len() > MAX_KBS {
        return Err(invalid(
            "kbs",
            format!("{} knowledge bases; at most {MAX_KBS}", c.kbs.len()),
        ));
    }
    for (name, entry) in &c.kbs {
        if !valid_kb_name(name) {
            return Err(invalid(
                &format!("kbs.{name}"),
                format!(
                    "a knowledge base's name is 1 to {MAX_KB_NAME_CHARS} lowercase letters, digits, `_` or `-`, starting with a letter or digit"
                ),
            ));
        }
        for (role, list) in [
            ("ask", &entry.roles.ask),
            ("review", &entry.roles.review),
            ("admin", &entry.roles.admin),
        ] {
            let key = format!("kbs.{name}.roles.{role}");
            if list.len() > MAX_READERS {
                return Err(invalid(
                    &key,
                    format!(
                        "{} entries; at most {MAX_READERS} (name a group)",
                        list.len()
                    ),
                ));
            }
            for r in list {
                check_reader(r).map_err(|m| invalid(&key, m))?;
            }
        }
        if name != DEFAULT_KB {
            c.for_kb(name)?;
        } else if KB_SECTIONS.iter().any(|s| entry.section(s).is_some()) {
            return Err(invalid(
                "kbs.default",
                "the top-level sections are the knowledge base `default`'s settings: set them there (kbs.default may only add roles and watch)",
            ));
        }
    }
    // On a Qdrant server, collections share one namespace: two knowledge
    // bases in one collection would read, prune and drop each other's
    // documents. Names are compared alone (one server has many spellings:
    // localhost, 127.0.0.1, a trailing slash), so no two knowledge bases
    // name the same collection whatever their URLs.
    // PostgreSQL schemas likewise (`hr-x` and `hr_x` make one name).
    if c.storage.state == super::StateBackend::Postgres {
        let mut seen: BTreeMap<String, String> = BTreeMap::new();
        for name in c.kb_names() {
            let Some(d) = c.for_kb(&name)? else { continue };
            if let Some(other) = seen.insert(d.storage.postgres.schema.clone(), name.clone()) {
                return Err(invalid(
                    &format!("kbs.{name}"),
                    format!(
                        "its PostgreSQL schema `{}` is knowledge base `{other}`'s too (`-` reads as `_`): rename one",
                        d.storage.postgres.schema
                    ),
                ));
            }
        }
    }
    if c.storage.backend == super::Backend::Qdrant {
        let mut seen: BTreeMap<String, String> = BTreeMap::new();
        for name in c.kb_names() {
            let Some(d) = c.for_kb(&name)? else { continue };
            if let Some(other) = seen.insert(d.collection.name.clone(), name.clone()) {
                return Err(invalid(
                    &format!("kbs.{name}.collection.name"),
                    format!(
                        "`{}` is knowledge base `{other}`'s collection too: each knowledge base needs its own",
                        d.collection.name
                    ),
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::tests::{load_error, write};

    fn load(text: &str) -> (tempfile::TempDir, Config) {
        let dir = tempfile::tempdir().unwrap();
        let p = write(dir.path(), text);
        let c = Config::load_with_env(Some(&p), &[]).unwrap();
        (dir, c)
    }

    #[test]
    fn an_entry_replaces_only_the_keys_it_sets() {
        let (dir, c) = load(
            "confidence:\n  thresholds:\n    silent: 0.9\nkbs:\n  hr:\n    embedding:\n      model_dir: e5\n    confidence:\n      thresholds:\n        notify: 0.6\n",
        );
        let hr = c.for_kb("hr").unwrap().unwrap();
        assert_eq!(hr.kb_name(), "hr");
        // Its own model, resolved against the file's folder as the top
        // level's paths are; the rest of the section is the top level's.
        assert_eq!(hr.embedding.model_dir, dir.path().join("e5"));
        assert_eq!(hr.embedding.max_length, c.embedding.max_length);
        assert_eq!(hr.confidence.thresholds.notify, 0.6);
        assert_eq!(hr.confidence.thresholds.silent, 0.9);
        // Its own state and collection.
        assert_eq!(hr.kb_dir(), c.storage.data_dir.join("kbs").join("hr"));
        assert_eq!(hr.collection.name, "grace-hr");
        assert!(hr.collection_dir().starts_with(hr.kb_dir()));
        assert!(hr.review_db_path().starts_with(hr.kb_dir()));
        // The roles stay readable from it.
        assert_eq!(hr.roles(hr.kb_name()), c.roles("hr"));
        // `default` is the top level, in its old places.
        let default = c.for_kb(DEFAULT_KB).unwrap().unwrap();
        assert_eq!(default.kb_dir(), c.storage.data_dir);
        assert_eq!(default.collection_dir(), c.collection_dir());
        assert!(c.for_kb("hq").unwrap().is_none());
        assert_eq!(c.kb_names(), ["default", "hr"]);
    }

    #[test]
    fn roles_grant_by_user_group_and_public_and_include_the_lesser_ones() {
        let roles = Roles {
            ask: vec!["group:hr".into()],
            review: vec!["user:rita".into()],
            admin: vec!["group:ops".into()],
        };
        let g = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(roles.grants(Role::Ask, "ann", &g(&["hr"])));
        assert!(!roles.grants(Role::Review, "ann", &g(&["hr"])));
        assert!(!roles.grants(Role::Ask, "bo", &[]));
        assert!(roles.grants(Role::Ask, "rita", &[]));
        assert!(roles.grants(Role::Review, "rita", &[]));
        assert!(!roles.grants(Role::Admin, "rita", &[]));
        assert!(roles.grants(Role::Admin, "olga", &g(&["ops"])));
        assert!(roles.grants(Role::Review, "olga", &g(&["ops"])));
        // A user named like a group is not in it.
        assert!(!roles.grants(Role::Ask, "hr", &[]));
        assert!(Roles::default().grants(Role::Ask, "anyone", &[]));
        assert!(!Roles::default().grants(Role::Review, "anyone", &[]));
    }

    #[test]
    fn bad_entries_are_refused_naming_the_key() {
        let dir = tempfile::tempdir().unwrap();
        for (text, key) in [
            (
                "kbs:\n  hr:\n    roles:\n      ask: [everyone]\n",
                "kbs.hr.roles.ask",
            ),
            ("kbs:\n  \"h r\": {}\n", "kbs.h r"),
            ("kbs:\n  \"..\": {}\n", "kbs..."),
            ("kbs:\n  HR: {}\n", "kbs.HR"),
            // Its collection `grace-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa` is too long a name.
            (
                "kbs:\n  aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa: {}\n",
                "kbs.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            ),
            (
                "kbs:\n  default:\n    embedding:\n      model_dir: x\n",
                "kbs.default",
            ),
            (
                "kbs:\n  hr:\n    search:\n      limit: 0\n",
                "kbs.hr.search.limit",
            ),
        ] {
            let e = load_error(&write(dir.path(), text));
            assert!(e.contains(&format!("`{key}`")), "{text}: {e}");
        }
        // A huge number, and deep nesting, inside an entry: refused
        // naming the entry, no overflow.
        let e = load_error(&write(
            dir.path(),
            "kbs:\n  hr:\n    search:\n      limit: 1e40\n",
        ));
        assert!(e.contains("kbs.hr"), "{e}");
        let deep = format!(
            "kbs:\n  hr:\n    embedding: {}{}\n",
            "{a: ".repeat(200),
            "}".repeat(200)
        );
        let e = load_error(&write(dir.path(), &deep));
        assert!(!e.is_empty());
        // An unknown key inside an entry's section names it.
        let e = load_error(&write(
            dir.path(),
            "kbs:\n  hr:\n    embedding:\n      modle_dir: x\n",
        ));
        assert!(e.contains("kbs.hr") && e.contains("modle_dir"), "{e}");
        let e = load_error(&write(
            dir.path(),
            "storage:\n  backend: qdrant\nkbs:\n  hr:\n    collection:\n      name: grace\n",
        ));
        assert!(
            e.contains("kbs.hr.collection.name") && e.contains("`default`"),
            "{e}"
        );
        // A key an earlier GRACE read, in an entry: its path in the entry,
        // its line and what replaced it.
        let e = load_error(&write(
            dir.path(),
            "kbs:\n  hr:\n    qdrant:\n      url: http://q:6334\n      collection: hr\n",
        ));
        assert!(
            e.contains(":5:")
                && e.contains("`kbs.hr.qdrant.collection`")
                && e.contains("it is collection.name"),
            "{e}"
        );
        // Inside a table of a section: the whole path, with its line.
        let e = load_error(&write(
            dir.path(),
            "kbs:\n  hr:\n    confidence:\n      weights:\n        bias: 1.0\n        bais: 2.0\n",
        ));
        assert!(
            e.contains(":6:") && e.contains("`kbs.hr.confidence.weights.bais`"),
            "{e}"
        );
        let e = load_error(&write(dir.path(), "kbs:\n  hr:\n    storage: {}\n"));
        assert!(e.contains("storage"), "{e}");
    }
}
