//! Checks of the knowledge base's sections: where it is stored
//! (`storage`), how documents are embedded (`embedding`) and read
//! (`ingest`), and the collection and its server (`qdrant`).

use super::Result;
use super::check::{above_zero, in_range, invalid};

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

/// The `embedding` section.
pub(super) fn validate_embedding(e: &super::EmbeddingConfig) -> Result<()> {
    if e.model_dir.as_os_str().is_empty() {
        return Err(invalid("embedding.model_dir", "must not be empty"));
    }
    if e.runtime_path.as_os_str().is_empty() {
        return Err(invalid("embedding.runtime_path", "must not be empty"));
    }
    in_range("embedding.max_length", e.max_length, 16..=8192, "")?;
    in_range("embedding.batch_size", e.batch_size, 1..=4096, "")?;
    in_range("embedding.threads", e.threads, 0..=1024, " (0 = all cores)")?;
    in_range(
        "embedding.cache_size",
        e.cache_size,
        0..=1000000,
        " (0 = off)",
    )?;
    Ok(())
}

/// The `ingest` section.
pub(super) fn validate_ingest(i: &super::IngestConfig) -> Result<()> {
    in_range("ingest.chunk_size", i.chunk_size, 20..=4000, " words")?;
    if i.chunk_overlap * 2 > i.chunk_size {
        return Err(invalid(
            "ingest.chunk_overlap",
            format!(
                "{} must be at most half of ingest.chunk_size ({})",
                i.chunk_overlap, i.chunk_size
            ),
        ));
    }
    super::access::check_readers(&i.default_access)
        .map_err(|m| invalid("ingest.default_access", m))?;
    if i.include.is_empty() {
        return Err(invalid("ingest.include", "needs at least one glob pattern"));
    }
    for (key, patterns) in [
        ("ingest.include", &i.include),
        ("ingest.exclude", &i.exclude),
    ] {
        for p in patterns {
            globset::Glob::new(p)
                .map_err(|e| invalid(key, format!("`{p}` is not a valid glob: {e}")))?;
        }
    }
    in_range("ingest.store_retries", i.store_retries, 0..=20, "")?;
    in_range(
        "ingest.store_retry_seconds",
        i.store_retry_seconds,
        0.0..=60.0,
        " seconds",
    )?;
    in_range("ingest.commit_chunks", i.commit_chunks, 1..=100000, "")?;
    if i.max_file_bytes == 0 {
        return Err(invalid("ingest.max_file_bytes", "must be greater than 0"));
    }
    for (key, value) in [
        (
            "ingest.max_compression_ratio",
            i.max_compression_ratio as usize,
        ),
        ("ingest.max_archive_entries", i.max_archive_entries),
        ("ingest.max_pages", i.max_pages),
    ] {
        if value == 0 {
            return Err(invalid(key, "must be greater than 0"));
        }
    }
    for (key, value) in [
        ("ingest.qa_question_column", &i.qa_question_column),
        ("ingest.qa_answer_column", &i.qa_answer_column),
    ] {
        if value.trim().is_empty() {
            return Err(invalid(key, "must name a column"));
        }
    }
    if i.qa_question_column
        .trim()
        .eq_ignore_ascii_case(i.qa_answer_column.trim())
    {
        return Err(invalid(
            "ingest.qa_answer_column",
            "must differ from ingest.qa_question_column",
        ));
    }
    in_range("ingest.max_files", i.max_files, 1..=10000000, "")?;
    in_range(
        "ingest.watch_debounce_seconds",
        i.watch_debounce_seconds,
        0.05..=60.0,
        " seconds",
    )?;
    for (n, root) in i.allowed_roots.iter().enumerate() {
        if !root.is_dir() {
            return Err(invalid(
                &format!("ingest.allowed_roots[{n}]"),
                format!("{} is not an existing folder", root.display()),
            ));
        }
    }
    Ok(())
}

/// The `qdrant` section but `qdrant.candidates` (checked last, in
/// [`super::validate::validate`]).
pub(super) fn validate_qdrant(q: &super::QdrantConfig) -> Result<()> {
    let name_ok = !q.collection.is_empty()
        && q.collection.len() <= 64
        && q.collection
            .chars()
            .all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == '-');
    if !name_ok {
        return Err(invalid(
            "qdrant.collection",
            format!(
                "`{}` must be 1 to 64 characters of letters, digits, `_` or `-`",
                q.collection
            ),
        ));
    }
    validate_qdrant_server(q)?;
    in_range(
        "qdrant.search_limit",
        q.search_limit,
        1..=super::MAX_SEARCH_LIMIT,
        "",
    )?;
    in_range(
        "qdrant.score_threshold",
        q.score_threshold,
        -1.0..=1.0,
        " (a cosine similarity)",
    )?;
    for (key, w) in [
        ("qdrant.lexical_weight", q.lexical_weight),
        ("qdrant.identifier_weight", q.identifier_weight),
    ] {
        in_range(key, w, 0.0..=2.0, " (a bonus in cosine units)")?;
    }
    Ok(())
}

/// The Qdrant server keys: checked whatever the backend, so a mistake shows
/// before the day the backend is switched.
fn validate_qdrant_server(q: &super::QdrantConfig) -> Result<()> {
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
    )?;
    for (key, value) in [
        ("qdrant.shard_number", q.shard_number),
        ("qdrant.replication_factor", q.replication_factor),
        (
            "qdrant.write_consistency_factor",
            q.write_consistency_factor,
        ),
    ] {
        in_range(key, value, 0..=1000, " (0: the server's default)")?;
    }
    if q.write_consistency_factor > q.replication_factor.max(1) {
        return Err(invalid(
            "qdrant.write_consistency_factor",
            format!(
                "{} is more than the replicas there are (qdrant.replication_factor {}): no write could ever be confirmed",
                q.write_consistency_factor,
                q.replication_factor.max(1)
            ),
        ));
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
