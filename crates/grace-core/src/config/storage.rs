//! The `storage` section: where the knowledge base is kept, by which
//! vector store, and how that store indexes and compresses its vectors.

use std::path::PathBuf;

use super::Result;
use super::check::{in_range, invalid};
use serde::{Deserialize, Serialize};

/// Where and how the knowledge base is stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StorageConfig {
    /// Folder holding the vector store and the ingest manifest.
    pub data_dir: PathBuf,
    /// Vector store backend. `edge`: embedded qdrant-edge, on disk, in
    /// process; `qdrant`: a Qdrant server (or cluster) at `qdrant.url`.
    pub backend: Backend,
    /// Threads the embedded store uses to search its segments in parallel
    /// within one query; `0`: one per CPU. 1 searches on the caller's
    /// thread: lowest latency on a small machine, and concurrent requests
    /// already run in parallel with each other.
    pub search_threads: usize,
    /// How the embedded store keeps the dense vectors it searches in
    /// memory: `int8` (a quarter of the size), `binary` (a thirty-second)
    /// or `none` (the full vectors). Quantised candidates are scored again
    /// with the full vectors, so scores stay exact cosines.
    pub quantization: Quantization,
    /// With quantisation, the candidates taken from the quantised vectors
    /// per result wanted (≥ 1), then scored again with the full vectors.
    pub oversampling: f64,
    /// Keep the full dense vectors on disk (memory-mapped, read when
    /// needed) instead of loaded in memory. Meant with quantisation: the
    /// search runs on the quantised copy in memory.
    pub vectors_on_disk: bool,
    /// Keep the lexical (BM25) index on disk (memory-mapped) instead of
    /// loaded in memory.
    pub lexical_on_disk: bool,
    /// Links per point in the dense index graph (HNSW `m`): more is more
    /// accurate, bigger and slower to build.
    pub hnsw_m: usize,
    /// Candidates considered per point while building the graph (HNSW
    /// `ef_construct`): more is more accurate and slower to build.
    pub hnsw_ef_construct: usize,
    /// Candidates a dense search keeps while walking the graph (HNSW `ef`);
    /// at least the candidates asked for. More is more accurate and slower.
    pub hnsw_ef: usize,
    /// Points per segment at most. Writing indexes what it has every this
    /// many points, so a large ingest never holds more than one segment's
    /// worth unindexed, and the indexed segments are merged up to this size.
    pub segment_points: usize,
    /// MiB the embedded store leaves free on its disk: it refuses a write,
    /// or an index build, that could take the free space below this. Its
    /// files are memory-mapped, and a memory-mapped write to a full disk
    /// kills the process instead of failing (SIGBUS); this check turns
    /// that into an error that writes nothing. 0: no check.
    pub min_free_mb: u64,
    /// Where GRACE keeps its state besides the vectors (review queue,
    /// sessions, keys, feedback, fits, tools, audit log, and the manifest
    /// when the vectors are on a Qdrant server; the book, "Running several
    /// servers"): `sqlite`, files in `data_dir`, or `postgres`, one
    /// database several servers share (`storage.postgres`).
    pub state: StateBackend,
    /// The PostgreSQL database of `state: postgres`.
    pub postgres: PostgresConfig,
}

/// Where GRACE's state is kept (`storage.state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StateBackend {
    /// SQLite files in `storage.data_dir`: one machine, one server.
    Sqlite,
    /// A PostgreSQL database: several servers share it.
    Postgres,
}

/// The PostgreSQL database of `storage.state: postgres`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PostgresConfig {
    /// `postgres://USER@HOST:PORT/DATABASE`, without a password (that is
    /// read from the variable `password_env` names). The connection is not
    /// encrypted (no TLS yet): keep the database on a private network.
    pub url: String,
    /// The environment variable holding the password; unset or empty: no
    /// password (trust or peer authentication).
    pub password_env: String,
    /// The schema (namespace) GRACE's tables live in; knowledge base
    /// `NAME` other than `default` uses `<schema>_NAME` (`-` read as `_`).
    pub schema: String,
    /// Connections per store, knowledge base and server at most (1..=64),
    /// opened as requests need them; listening for the others' writes, a
    /// leader's lock and an ingest's lock hold one more each.
    pub pool_size: usize,
    /// Seconds to wait for a connection, a new one or a free one from
    /// the pool, before a request fails as unavailable (1..=60).
    pub connect_timeout_seconds: f64,
}

impl Default for PostgresConfig {
    fn default() -> Self {
        Self {
            url: String::new(),
            password_env: "GRACE_POSTGRES_PASSWORD".into(),
            schema: "grace".into(),
            pool_size: 8,
            connect_timeout_seconds: 5.0,
        }
    }
}

/// How the embedded store compresses the dense vectors it keeps in memory
/// (`storage.quantization`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Quantization {
    /// The full 32-bit vectors.
    None,
    /// One byte per dimension (scalar quantisation).
    Int8,
    /// One bit per dimension.
    Binary,
}

/// The vector store implementations GRACE can use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Backend {
    /// Embedded qdrant-edge shard in `storage.data_dir`.
    Edge,
    /// A Qdrant server or cluster over gRPC (`qdrant.url`); the ingest
    /// manifest stays in `storage.data_dir`.
    Qdrant,
}

impl Backend {
    /// The name used in the configuration (`edge`, `qdrant`).
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Edge => "edge",
            Backend::Qdrant => "qdrant",
        }
    }
}

impl Default for StorageConfig {
    fn default() -> Self {
        Self {
            data_dir: PathBuf::from(".grace"),
            backend: Backend::Edge,
            search_threads: 1,
            quantization: Quantization::Int8,
            oversampling: 2.0,
            vectors_on_disk: true,
            lexical_on_disk: true,
            hnsw_m: 16,
            hnsw_ef_construct: 100,
            hnsw_ef: 128,
            segment_points: 50_000,
            min_free_mb: 64,
            state: StateBackend::Sqlite,
            postgres: PostgresConfig::default(),
        }
    }
}

/// The `storage` section; its index settings in [`validate_index`].
pub(super) fn validate_storage(s: &super::StorageConfig) -> Result<()> {
    if s.data_dir.as_os_str().is_empty() {
        return Err(invalid("storage.data_dir", "must not be empty"));
    }
    in_range(
        "storage.search_threads",
        s.search_threads,
        0..=1024,
        " (0: one per CPU)",
    )?;
    validate_index(s)?;
    validate_postgres(s)?;
    Ok(())
}

/// The longest `storage.postgres.url` taken.
const MAX_POSTGRES_URL_BYTES: usize = 2048;

/// `storage.postgres`: a URL GRACE can use (no password in the file) when
/// `storage.state` is `postgres`; the schema a plain PostgreSQL name.
fn validate_postgres(s: &super::StorageConfig) -> Result<()> {
    let p = &s.postgres;
    in_range("storage.postgres.pool_size", p.pool_size, 1..=64, "")?;
    in_range(
        "storage.postgres.connect_timeout_seconds",
        p.connect_timeout_seconds,
        1.0..=60.0,
        "",
    )?;
    if !p.password_env.is_empty()
        && (p.password_env.starts_with(|c: char| c.is_ascii_digit())
            || !p
                .password_env
                .bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_'))
    {
        return Err(invalid(
            "storage.postgres.password_env",
            format!(
                "{:?} is not an environment variable's name (A-Z, 0-9, _)",
                p.password_env
            ),
        ));
    }
    if s.state != super::StateBackend::Postgres {
        return Ok(());
    }
    // PostgreSQL's names are at most 63 bytes (a knowledge base's schema
    // is `<schema>_NAME`).
    let schema_ok = p.schema.len() <= 63
        && p.schema
            .starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
        && p.schema
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    if !schema_ok {
        return Err(invalid(
            "storage.postgres.schema",
            format!(
                "{:?} must be 1 to 63 of a-z, 0-9 and _, not starting with a digit",
                p.schema
            ),
        ));
    }
    if p.url.is_empty() {
        return Err(invalid(
            "storage.postgres.url",
            "is needed with storage.state: postgres (postgres://USER@HOST:PORT/DATABASE)",
        ));
    }
    if p.url.len() > MAX_POSTGRES_URL_BYTES {
        return Err(invalid(
            "storage.postgres.url",
            format!(
                "is {} bytes, more than {MAX_POSTGRES_URL_BYTES}",
                p.url.len()
            ),
        ));
    }
    let url = url::Url::parse(&p.url).map_err(|e| {
        invalid(
            "storage.postgres.url",
            format!("is not a URL ({e}); write postgres://USER@HOST:PORT/DATABASE"),
        )
    })?;
    if !matches!(url.scheme(), "postgres" | "postgresql") {
        return Err(invalid(
            "storage.postgres.url",
            format!(
                "scheme `{}` is not postgres:// (postgres://USER@HOST:PORT/DATABASE)",
                url.scheme()
            ),
        ));
    }
    if url.password().is_some() || url.query_pairs().any(|(k, _)| k == "password") {
        return Err(invalid(
            "storage.postgres.url",
            format!(
                "holds a password: remove it, and put it in the environment variable {} (storage.postgres.password_env)",
                if p.password_env.is_empty() {
                    "named by storage.postgres.password_env"
                } else {
                    &p.password_env
                }
            ),
        ));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(invalid("storage.postgres.url", "names no host"));
    }
    Ok(())
}

/// The embedded store's index settings (`storage.*`).
fn validate_index(s: &super::StorageConfig) -> Result<()> {
    in_range("storage.oversampling", s.oversampling, 1.0..=16.0, "")?;
    let ranges: [(&str, usize, std::ops::RangeInclusive<usize>, &str); 4] = [
        ("storage.hnsw_m", s.hnsw_m, 4..=128, ""),
        (
            "storage.hnsw_ef_construct",
            s.hnsw_ef_construct,
            4..=4096,
            "",
        ),
        ("storage.hnsw_ef", s.hnsw_ef, 1..=4096, ""),
        (
            "storage.segment_points",
            s.segment_points,
            10_000..=100_000_000,
            " (the store indexes a segment from ~6,700 points: smaller ones would never be)",
        ),
    ];
    for (key, value, range, why) in ranges {
        in_range(key, value, range, why)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::config::Config;

    fn error(vars: &[(&str, &str)]) -> String {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        match Config::load_with_env(None, &vars) {
            Ok(_) => panic!("accepted: {:.200?}", vars),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn hostile_postgres_settings_are_refused_naming_the_key() {
        let pg = |url: &str| {
            error(&[
                ("GRACE_STORAGE__STATE", "postgres"),
                ("GRACE_STORAGE__POSTGRES__URL", url),
            ])
        };
        // Needed, a URL, postgres://, a host, no password (never echoed).
        assert!(error(&[("GRACE_STORAGE__STATE", "postgres")]).contains("storage.postgres.url"));
        for (url, says) in [
            ("not a url", "is not a URL"),
            ("mysql://u@h/db", "scheme `mysql`"),
            ("postgres:///db", "names no host"),
            ("postgres://u:s3cret@h/db", "holds a password"),
            (
                "postgres://u@h/db?sslmode=disable&password=s3cret",
                "holds a password",
            ),
            (
                &format!("postgres://u@{}/db", "h".repeat(70_000)),
                "storage.postgres.url",
            ),
        ] {
            let e = pg(url);
            assert!(
                e.contains("storage.postgres.url") && e.contains(says),
                "{url:.40}: {e}"
            );
            assert!(!e.contains("s3cret"), "{e}");
        }
        // A schema that would need quoting, or is too long for PostgreSQL.
        for schema in ["Grace", "g;drop", "1grace", "", &"g".repeat(64), "gräce"] {
            let e = error(&[
                ("GRACE_STORAGE__STATE", "postgres"),
                ("GRACE_STORAGE__POSTGRES__URL", "postgres://u@h/db"),
                ("GRACE_STORAGE__POSTGRES__SCHEMA", schema),
            ]);
            assert!(e.contains("storage.postgres.schema"), "{schema:.20}: {e}");
        }
        for (key, value) in [
            ("GRACE_STORAGE__POSTGRES__POOL_SIZE", "0"),
            ("GRACE_STORAGE__POSTGRES__POOL_SIZE", "100000"),
            ("GRACE_STORAGE__POSTGRES__CONNECT_TIMEOUT_SECONDS", "0"),
            ("GRACE_STORAGE__POSTGRES__CONNECT_TIMEOUT_SECONDS", "NaN"),
            ("GRACE_STORAGE__POSTGRES__PASSWORD_ENV", "PASS WORD"),
            ("GRACE_STORAGE__POSTGRES__PASSWORD_ENV", "1PASS"),
        ] {
            let e = error(&[(key, value)]);
            let dotted = key
                .trim_start_matches("GRACE_")
                .to_lowercase()
                .replace("__", ".");
            assert!(e.contains(&dotted), "{key}={value}: {e}");
        }
        // Two knowledge bases whose schemas would be one.
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("grace_config.yml");
        std::fs::write(
            &file,
            "storage:\n  state: postgres\n  postgres:\n    url: postgres://u@h/db\nkbs:\n  hr-x: {}\n  hr_x: {}\n",
        )
        .unwrap();
        let e = Config::load_with_env(Some(&file), &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("grace_hr_x") && e.contains("rename one"), "{e}");
        // On SQLite the PostgreSQL keys are not needed.
        assert!(Config::load_with_env(None, &[]).is_ok());
    }
}
