use std::path::{Path, PathBuf};

use super::*;

/// A file of the repository (this crate is `crates/grace-core` in it).
fn repo_file(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(name)
}

pub(super) fn write(dir: &Path, text: &str) -> PathBuf {
    let p = dir.join("c.yml");
    std::fs::write(&p, text).unwrap();
    p
}

/// The error loading the config file `p` gives (no environment).
pub(super) fn load_error(p: &Path) -> String {
    Config::load_with_env(Some(p), &[]).unwrap_err().to_string()
}

pub(super) fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn shipped_config_file_equals_the_defaults() {
    let text = std::fs::read_to_string(repo_file(DEFAULT_CONFIG_FILE)).unwrap();
    let parsed = Config::from_yaml(&text).unwrap();
    assert_eq!(parsed, Config::default());
}

#[test]
fn empty_file_gives_defaults_and_relative_paths_follow_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "");
    let c = Config::load_with_env(Some(&p), &[]).unwrap();
    assert_eq!(c.qdrant, QdrantConfig::default());
    assert_eq!(c.collection, CollectionConfig::default());
    assert_eq!(c.search, SearchConfig::default());
    assert_eq!(c.storage.data_dir, dir.path().join(".grace"));
    // The models the file does not name: not in the file's folder, but in
    // GRACE's per-user folder, where setup put them (none known here).
    assert_eq!(c.embedding.model_dir, PathBuf::from("models/minilm"));
}

#[test]
fn model_paths_follow_the_file_that_sets_them_else_grace_home() {
    let dir = tempfile::tempdir().unwrap();
    let home = vars(&[("GRACE_HOME", "/opt/grace"), ("HOME", "/home/ann")]);
    // A file that names no model: the models under GRACE_HOME, the data
    // beside the file.
    let p = write(dir.path(), "search:\n  limit: 9\n");
    let c = Config::load_with_env(Some(&p), &home).unwrap();
    assert_eq!(
        c.embedding.model_dir,
        PathBuf::from("/opt/grace/models/minilm")
    );
    assert_eq!(
        c.embedding.runtime_path,
        PathBuf::from("/opt/grace/models/libonnxruntime.so")
    );
    assert_eq!(
        c.reader.model_dir,
        PathBuf::from("/opt/grace/models/reader")
    );
    assert_eq!(c.storage.data_dir, dir.path().join(".grace"));
    // A file that names a model folder: that one, against the file's folder.
    let p = write(dir.path(), "embedding:\n  model_dir: m/e5\n");
    let c = Config::load_with_env(Some(&p), &home).unwrap();
    assert_eq!(c.embedding.model_dir, dir.path().join("m/e5"));
    assert_eq!(
        c.embedding.runtime_path,
        PathBuf::from("/opt/grace/models/libonnxruntime.so")
    );
    // The environment's own relative path stays as given (the current folder).
    let mut env = home.clone();
    env.push(("GRACE_EMBEDDING__MODEL_DIR".into(), "models/e5".into()));
    let c = Config::load_with_env(Some(&p), &env).unwrap();
    assert_eq!(c.embedding.model_dir, PathBuf::from("models/e5"));
    // Absolute paths are never moved.
    let p = write(dir.path(), "reader:\n  model_dir: /srv/reader\n");
    let c = Config::load_with_env(Some(&p), &home).unwrap();
    assert_eq!(c.reader.model_dir, PathBuf::from("/srv/reader"));
}

#[test]
fn watched_folders_in_a_file_follow_the_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("docs")).unwrap();
    let p = write(dir.path(), "server:\n  watch: [docs]\n");
    let c = Config::load_with_env(Some(&p), &[]).unwrap();
    assert_eq!(c.server.watch, [dir.path().join("docs")]);
}

#[test]
fn file_overrides_defaults_and_keeps_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "search:\n  limit: 9\n");
    let c = Config::load_with_env(Some(&p), &[]).unwrap();
    assert_eq!(c.search.limit, 9);
    assert_eq!(c.search.candidates, 40);
    assert_eq!(c.collection.name, "grace");
    assert_eq!(c.ingest, IngestConfig::default());
}

#[test]
fn env_overrides_file() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "search:\n  limit: 9\n");
    let env = vars(&[
        ("GRACE_SEARCH__LIMIT", "12"),
        ("GRACE_COLLECTION__NAME", "1234"),
        ("GRACE_SEARCH__HYBRID", "false"),
        ("GRACE_INGEST__EXCLUDE", "[\"**/drafts/**\"]"),
        ("GRACE_CONFIG", "ignored: not an override"),
        ("HOME", "/root"),
    ]);
    let c = Config::load_with_env(Some(&p), &env).unwrap();
    assert_eq!(c.search.limit, 12);
    assert_eq!(c.collection.name, "1234");
    assert!(!c.search.hybrid);
    assert_eq!(c.ingest.exclude, vec!["**/drafts/**".to_string()]);
}

#[test]
fn env_overrides_reach_nested_keys() {
    let env = vars(&[
        ("GRACE_LLM__PROVIDER", "gemini"),
        ("GRACE_LLM__GEMINI__MODEL", "gemini-2.5-pro"),
        ("GRACE_CONFIDENCE__THRESHOLDS__NOTIFY", "0.75"),
    ]);
    let c = Config::load_with_env(None, &env).unwrap();
    assert_eq!(c.llm.provider, crate::config::LlmProvider::Gemini);
    assert_eq!(c.llm.gemini.model, "gemini-2.5-pro");
    assert_eq!(c.confidence.thresholds.notify, 0.75);

    for (var, value, says) in [
        (
            "GRACE_LLM__GEMINI__MODLE",
            "x",
            "unknown key `llm.gemini.modle`",
        ),
        (
            "GRACE_SERVER__REVIEWER_API_KEY",
            "0123456789abcdef",
            "reviewer_api_key was replaced: reviewers have their own tokens",
        ),
        ("GRACE_LLM__GEMINI", "x", "`llm.gemini` is a section"),
        ("GRACE_LLM__PROVIDER__X", "x", "`llm.provider` is a value"),
        (
            "GRACE_LLM__GEMINI__TIMEOUT_SECONDS",
            "soon",
            "llm.gemini.timeout_seconds",
        ),
    ] {
        let err = Config::load_with_env(None, &vars(&[(var, value)]))
            .unwrap_err()
            .to_string();
        assert!(err.contains(var) && err.contains(says), "{var}: {err}");
    }
}

/// An out-of-range value set by the environment is blamed on its
/// variable, even where the config file sets the same key (to a good
/// value, on a line the message must not point at); one set by the file
/// still names the file and line.
#[test]
fn an_out_of_range_override_names_its_variable_not_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "storage:\n  oversampling: 2.0\n");
    let err = Config::load_with_env(Some(&p), &vars(&[("GRACE_STORAGE__OVERSAMPLING", "0.5")]))
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with(
            "environment variable GRACE_STORAGE__OVERSAMPLING: invalid value for `storage.oversampling`"
        ) && err.contains("1.0..=16.0"),
        "{err}"
    );
    assert!(!err.contains("c.yml"), "{err}");

    let p = write(dir.path(), "storage:\n  oversampling: 2.0\n  hnsw_m: 2\n");
    let err = Config::load_with_env(Some(&p), &vars(&[("GRACE_STORAGE__HNSW_EF", "64")]))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("c.yml:3: invalid value for `storage.hnsw_m`"),
        "{err}"
    );
}

#[test]
fn the_tool_mode_comes_from_file_or_environment_and_bad_values_name_the_key() {
    assert_eq!(Config::default().llm.tool_mode, ToolMode::Auto);
    let c = Config::load_with_env(None, &vars(&[("GRACE_LLM__TOOL_MODE", "json")])).unwrap();
    assert_eq!(c.llm.tool_mode, ToolMode::Json);
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "llm:\n  tool_mode: native\n");
    let c = Config::load_with_env(Some(&p), &[]).unwrap();
    assert_eq!(c.llm.tool_mode, ToolMode::Native);

    let err = Config::load_with_env(None, &vars(&[("GRACE_LLM__TOOL_MODE", "xml")]))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("GRACE_LLM__TOOL_MODE") && err.contains("llm.tool_mode"),
        "{err}"
    );
    let p = write(dir.path(), "llm:\n  tool_mode: xml\n");
    let err = load_error(&p);
    assert!(
        err.contains("llm.tool_mode") && err.contains("xml"),
        "{err}"
    );
}

#[test]
fn qdrant_server_backend_from_the_environment() {
    let env = vars(&[
        ("GRACE_STORAGE__BACKEND", "qdrant"),
        ("GRACE_QDRANT__URL", "https://db.example:6334/"),
        ("GRACE_QDRANT__API_KEY", "s3cret-key"),
        ("GRACE_QDRANT__TIMEOUT_SECONDS", "2.5"),
    ]);
    let c = Config::load_with_env(None, &env).unwrap();
    assert_eq!(c.storage.backend, crate::config::Backend::Qdrant);
    assert_eq!(c.qdrant.url, "https://db.example:6334/");
    assert_eq!(c.qdrant.api_key, "s3cret-key");
    assert_eq!(c.qdrant.timeout_seconds, 2.5);
    // Each backend (and each server) keeps its own manifest.
    assert_eq!(
        c.manifest_path(),
        Path::new(".grace/manifests/qdrant/db.example_6334/grace.json")
    );
    assert_eq!(
        c.collection_location(),
        Path::new("https://db.example:6334/collections/grace")
    );
    let edge = Config::default();
    assert_eq!(
        edge.manifest_path(),
        Path::new(".grace/manifests/grace.json")
    );
    assert_eq!(edge.collection_location(), edge.collection_dir());
}

#[test]
fn env_override_with_a_wrong_type_names_the_variable() {
    let err = Config::load_with_env(None, &vars(&[("GRACE_SEARCH__LIMIT", "many")]))
        .unwrap_err()
        .to_string();
    assert!(err.contains("GRACE_SEARCH__LIMIT"), "{err}");
    assert!(err.contains("search.limit"), "{err}");
}

#[test]
fn env_override_of_an_unknown_key_is_an_error() {
    let err = Config::load_with_env(None, &vars(&[("GRACE_SEARCH__LIMT", "3")]))
        .unwrap_err()
        .to_string();
    assert!(err.contains("GRACE_SEARCH__LIMT"), "{err}");
    assert!(err.contains("unknown key `search.limt`"), "{err}");
    let err = Config::load_with_env(None, &vars(&[("GRACE_SERCH__LIMIT", "3")]))
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown config section `serch`"), "{err}");
}

#[test]
fn env_override_out_of_range_names_the_key() {
    let err = Config::load_with_env(None, &vars(&[("GRACE_EMBEDDING__BATCH_SIZE", "0")]))
        .unwrap_err()
        .to_string();
    assert!(err.contains("`embedding.batch_size`"), "{err}");
}

#[test]
fn the_document_boost_is_bounded_and_off_by_default() {
    assert_eq!(Config::default().feedback.document_boost, 0.0);
    for (key, value, name) in [
        (
            "GRACE_FEEDBACK__DOCUMENT_BOOST",
            "0.5",
            "`feedback.document_boost`",
        ),
        (
            "GRACE_FEEDBACK__DOCUMENT_BOOST",
            "-0.01",
            "`feedback.document_boost`",
        ),
        (
            "GRACE_FEEDBACK__DOCUMENT_BOOST",
            "NaN",
            "`feedback.document_boost`",
        ),
        (
            "GRACE_FEEDBACK__DOCUMENT_BOOST_HALF_LIFE_DAYS",
            "0",
            "`feedback.document_boost_half_life_days`",
        ),
    ] {
        let err = Config::load_with_env(None, &vars(&[(key, value)]))
            .unwrap_err()
            .to_string();
        assert!(err.contains(name), "{value}: {err}");
    }
    let on =
        Config::load_with_env(None, &vars(&[("GRACE_FEEDBACK__DOCUMENT_BOOST", "0.2")])).unwrap();
    assert_eq!(on.feedback.document_boost, MAX_DOCUMENT_BOOST);
}

#[test]
fn unknown_key_in_file_names_key_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "collection:\n  name: a\nsearch:\n  limt: 3\n");
    let err = load_error(&p);
    assert!(err.contains("limt"), "{err}");
    assert!(err.contains("line 4"), "{err}");
    assert!(err.contains("c.yml"), "{err}");
}

#[test]
fn unknown_section_in_file_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "retrieval:\n  limit: 3\n");
    let err = load_error(&p);
    assert!(err.contains("retrieval"), "{err}");
}

#[test]
fn wrong_type_in_file_names_key_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "ingest:\n  chunk_size: big\n");
    let err = load_error(&p);
    assert!(err.contains("ingest.chunk_size"), "{err}");
    assert!(err.contains("line 2"), "{err}");
}

#[test]
fn index_settings_from_the_environment() {
    let env = vars(&[
        ("GRACE_STORAGE__QUANTIZATION", "int8"),
        ("GRACE_STORAGE__OVERSAMPLING", "2.5"),
        ("GRACE_STORAGE__VECTORS_ON_DISK", "false"),
        ("GRACE_STORAGE__LEXICAL_ON_DISK", "false"),
        ("GRACE_STORAGE__HNSW_M", "32"),
        ("GRACE_STORAGE__HNSW_EF_CONSTRUCT", "200"),
        ("GRACE_STORAGE__HNSW_EF", "128"),
        ("GRACE_STORAGE__SEGMENT_POINTS", "250000"),
    ]);
    let c = Config::load_with_env(None, &env).unwrap();
    let s = &c.storage;
    assert_eq!(s.quantization, crate::config::Quantization::Int8);
    assert_eq!(s.oversampling, 2.5);
    assert!(!s.vectors_on_disk && !s.lexical_on_disk);
    assert_eq!((s.hnsw_m, s.hnsw_ef_construct, s.hnsw_ef), (32, 200, 128));
    assert_eq!(s.segment_points, 250_000);
}

#[test]
fn unknown_quantization_is_an_error_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "storage:\n  quantization: int4\n");
    let err = load_error(&p);
    assert!(err.contains("storage.quantization"), "{err}");
    assert!(err.contains("int4"), "{err}");
}

#[test]
fn unknown_backend_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "storage:\n  backend: sqlite\n");
    let err = load_error(&p);
    assert!(err.contains("storage.backend"), "{err}");
    assert!(err.contains("sqlite"), "{err}");
}

#[test]
fn unknown_confidence_weight_is_an_error() {
    let err = Config::from_yaml("confidence:\n  weights:\n    max_scor: 1\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("max_scor") && err.contains("line 3"), "{err}");
    let env = vars(&[("GRACE_CONFIDENCE__AGGREGATION", "median")]);
    let err = Config::load_with_env(None, &env).unwrap_err().to_string();
    assert!(err.contains("GRACE_CONFIDENCE__AGGREGATION"), "{err}");
    let env = vars(&[("GRACE_CONFIDENCE__AGGREGATION", "min")]);
    assert_eq!(
        Config::load_with_env(None, &env)
            .unwrap()
            .confidence
            .aggregation,
        Aggregation::Min
    );
}

#[test]
fn yaml_round_trip_preserves_the_config() {
    let c = Config::default();
    assert_eq!(Config::from_yaml(&c.to_yaml().unwrap()).unwrap(), c);
}

#[test]
fn example_configs_load() {
    let dir = repo_file("config");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "yml") {
            let c = Config::load_with_env(Some(&p), &[])
                .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            assert!(c.storage.data_dir.starts_with(&dir), "{}", p.display());
            n += 1;
        }
    }
    assert!(n >= 2);
}

#[test]
fn config_is_data_at_the_bottom_and_imports_nothing_above_it() {
    // Layering: every other module may read the configuration; the
    // configuration names no other module of the crate (tool names, MCP
    // tools and the calibration file are checked by the layers that use
    // them).
    // The section folders (`config/tools/`) too, one level down.
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/config");
    let entries = |d: &std::path::Path| -> Vec<std::path::PathBuf> {
        std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect()
    };
    let files = entries(&dir)
        .into_iter()
        .flat_map(|p| if p.is_dir() { entries(&p) } else { vec![p] });
    for path in files {
        if path.file_name().is_some_and(|n| n == "tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap();
        for line in code.lines() {
            let line = line.trim_start();
            if line.starts_with("//") {
                continue;
            }
            assert!(
                !line.replace("crate::config::", "").contains("crate::"),
                "{}: the configuration imports another module: {line}",
                path.display()
            );
        }
    }
}

#[test]
fn a_renamed_key_says_what_replaced_it() {
    let e = Config::from_yaml("review:\n  default_timeout: 30\n").unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("escalation_ttl_seconds") && text.contains("asker_wait_seconds"),
        "{text}"
    );
    let e = Config::from_yaml("llm:\n  planner: false\n").unwrap_err();
    assert!(e.to_string().contains("strategy"), "{e}");
}

#[test]
fn a_key_the_qdrant_section_held_says_where_it_is_now() {
    // In a file: serde's unknown field, with its line, and the new key.
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        "qdrant:\n  url: http://q:6334\n  search_limit: 9\n",
    );
    let err = load_error(&p);
    assert!(err.contains("unknown field `search_limit`"), "{err}");
    assert!(err.contains("line 3"), "{err}");
    assert!(
        err.contains("qdrant.search_limit was replaced: it is search.limit"),
        "{err}"
    );
    let e = Config::from_yaml("qdrant:\n  collection: docs\n").unwrap_err();
    assert!(e.to_string().contains("it is collection.name"), "{e}");
    let e = Config::from_yaml("qdrant:\n  replication_factor: 2\n").unwrap_err();
    assert!(
        e.to_string()
            .contains("it is collection.replication_factor"),
        "{e}"
    );
    // A key of that name in another section is not the old key.
    let e = Config::from_yaml("reader:\n  candidates: 3\n").unwrap_err();
    assert!(!e.to_string().contains("replaced"), "{e}");
    // In the environment: the variable, and the new key.
    let err = Config::load_with_env(None, &vars(&[("GRACE_QDRANT__HYBRID", "false")]))
        .unwrap_err()
        .to_string();
    assert!(err.contains("GRACE_QDRANT__HYBRID"), "{err}");
    assert!(err.contains("it is search.hybrid"), "{err}");
    // In a knowledge base's own section.
    let p = write(
        dir.path(),
        "kbs:\n  hr:\n    qdrant:\n      collection: hr-docs\n",
    );
    let err = load_error(&p);
    assert!(err.contains("kbs.hr"), "{err}");
    assert!(err.contains("it is collection.name"), "{err}");
}
