//! The checks run after loading: each section's own sit beside its struct
//! (`storage.rs`, `serve.rs`, `tools/validate.rs`, ...), every range
//! through `check::in_range`; this runs them in a fixed order, with the
//! few that span sections, and the first failing check is the error. Each
//! error names the key.

use super::check::invalid;
use super::collection::validate_collection;
use super::confidence::validate_confidence;
use super::feedback::validate_feedback;
use super::ingest::validate_ingest;
use super::llm::validate_llm;
use super::models::{validate_embedding, validate_reader};
use super::planner::validate_agent;
use super::qdrant::validate_qdrant;
use super::search::validate_search;
use super::serve::{
    validate_audit, validate_jwt, validate_mcp, validate_review, validate_server, validate_sessions,
};
use super::storage::validate_storage;
use super::tools::validate_tools;
use super::{Config, Result};

/// Checks every value that the types alone do not constrain.
pub(crate) fn validate(c: &Config) -> Result<()> {
    validate_review(&c.review)?;
    validate_server(&c.server)?;
    validate_mcp(&c.mcp)?;
    validate_audit(&c.audit)?;
    validate_jwt(&c.auth.jwt)?;
    // Without a key, a request with no token reads everything: tokens
    // would restrict nobody.
    if !c.auth.jwt.issuer.is_empty() && c.server.api_key.is_empty() {
        return Err(invalid(
            "auth.jwt.issuer",
            "needs server.api_key: without it a request with no token reads everything, and tokens restrict nobody",
        ));
    }
    validate_sessions(&c.sessions)?;
    validate_feedback(&c.feedback)?;
    validate_agent(&c.agent)?;
    validate_storage(&c.storage)?;

    validate_reader(&c.reader)?;
    validate_embedding(&c.embedding)?;

    validate_ingest(&c.ingest)?;

    validate_collection(&c.collection)?;
    validate_qdrant(&c.qdrant)?;
    validate_search(&c.search)?;
    validate_confidence(c)?;
    validate_tools(&c.tools)?;
    validate_llm(&c.llm)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::config::tests::{load_error, write};
    use crate::config::{Config, validate};

    #[test]
    fn defaults_are_valid() {
        validate::validate(&Config::default()).unwrap();
    }

    #[test]
    fn a_watched_folder_that_does_not_exist_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(dir.path(), "server:\n  watch: [/no/such/folder]\n");
        let msg = Config::load_with_env(Some(&p), &[])
            .unwrap_err()
            .to_string();
        assert!(msg.contains("`server.watch[0]`"), "{msg}");
        assert!(msg.contains("/no/such/folder does not exist"), "{msg}");
    }

    #[test]
    fn out_of_range_values_name_key_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let cases = [
            ("search:\n  limit: 0\n", "search.limit", 2),
            (
                "search:\n  score_threshold: 1.5\n",
                "search.score_threshold",
                2,
            ),
            (
                "search:\n  identifier_weight: 3\n",
                "search.identifier_weight",
                2,
            ),
            ("search:\n  candidates: 0\n", "search.candidates", 2),
            (
                "search:\n  rare_term_share: 1.5\n",
                "search.rare_term_share",
                2,
            ),
            ("search:\n  rare_terms: 99\n", "search.rare_terms", 2),
            (
                "search:\n  lexical_weight: -1\n",
                "search.lexical_weight",
                2,
            ),
            (
                "search:\n  identifier_weight: .nan\n",
                "search.identifier_weight",
                2,
            ),
            ("collection:\n  name: \"a b\"\n", "collection.name", 2),
            (
                "collection:\n  shard_number: 1001\n",
                "collection.shard_number",
                2,
            ),
            (
                "collection:\n  replication_factor: 2\n  write_consistency_factor: 3\n",
                "collection.write_consistency_factor",
                3,
            ),
            ("qdrant:\n  url: localhost:6334\n", "qdrant.url", 2),
            ("qdrant:\n  url: \"http://\"\n", "qdrant.url", 2),
            ("qdrant:\n  api_key: \"a b\"\n", "qdrant.api_key", 2),
            (
                "qdrant:\n  timeout_seconds: 0\n",
                "qdrant.timeout_seconds",
                2,
            ),
            (
                "qdrant:\n  timeout_seconds: .inf\n",
                "qdrant.timeout_seconds",
                2,
            ),
            ("ingest:\n  chunk_size: 5\n", "ingest.chunk_size", 2),
            (
                "ingest:\n  chunk_size: 100\n  chunk_overlap: 60\n",
                "ingest.chunk_overlap",
                3,
            ),
            ("ingest:\n  include: []\n", "ingest.include", 2),
            ("ingest:\n  exclude: [\"a/[\"]\n", "ingest.exclude", 2),
            ("ingest:\n  max_file_bytes: 0\n", "ingest.max_file_bytes", 2),
            (
                "ingest:\n  max_compression_ratio: 0\n",
                "ingest.max_compression_ratio",
                2,
            ),
            (
                "ingest:\n  max_archive_entries: 0\n",
                "ingest.max_archive_entries",
                2,
            ),
            ("ingest:\n  max_pages: 0\n", "ingest.max_pages", 2),
            (
                "ingest:\n  watch_debounce_seconds: 0\n",
                "ingest.watch_debounce_seconds",
                2,
            ),
            (
                "ingest:\n  qa_question_column: \" \"\n",
                "ingest.qa_question_column",
                2,
            ),
            (
                "ingest:\n  qa_question_column: Q\n  qa_answer_column: q\n",
                "ingest.qa_answer_column",
                3,
            ),
            ("ingest:\n  commit_chunks: 0\n", "ingest.commit_chunks", 2),
            (
                "ingest:\n  default_access: []\n",
                "ingest.default_access",
                2,
            ),
            (
                "ingest:\n  default_access: [everyone]\n",
                "ingest.default_access",
                2,
            ),
            (
                "auth:\n  jwt:\n    issuer: https://id.example\n    audience: grace\n    jwks_file: k.json\n",
                "auth.jwt.issuer",
                3,
            ),
            ("embedding:\n  max_length: 1\n", "embedding.max_length", 2),
            ("embedding:\n  batch_size: 0\n", "embedding.batch_size", 2),
            (
                "embedding:\n  cache_size: 2000000\n",
                "embedding.cache_size",
                2,
            ),
            ("embedding:\n  threads: 5000\n", "embedding.threads", 2),
            ("embedding:\n  model_dir: \"\"\n", "embedding.model_dir", 2),
            ("storage:\n  data_dir: \"\"\n", "storage.data_dir", 2),
            ("reader:\n  max_length: 4096\n", "reader.max_length", 2),
            ("reader:\n  threads: 5000\n", "reader.threads", 2),
            ("reader:\n  model_dir: \"\"\n", "reader.model_dir", 2),
            ("search:\n  rerank_depth: 0\n", "search.rerank_depth", 2),
            (
                "storage:\n  search_threads: 5000\n",
                "storage.search_threads",
                2,
            ),
            ("storage:\n  oversampling: 0.5\n", "storage.oversampling", 2),
            (
                "storage:\n  oversampling: .nan\n",
                "storage.oversampling",
                2,
            ),
            ("storage:\n  hnsw_m: 2\n", "storage.hnsw_m", 2),
            (
                "storage:\n  hnsw_ef_construct: 5000\n",
                "storage.hnsw_ef_construct",
                2,
            ),
            ("storage:\n  hnsw_ef: 0\n", "storage.hnsw_ef", 2),
            (
                "storage:\n  segment_points: 500\n",
                "storage.segment_points",
                2,
            ),
            (
                "server:\n  shutdown_grace_seconds: -1\n",
                "server.shutdown_grace_seconds",
                2,
            ),
            (
                "tools:\n  enabled: [ask_user, ask_user]\n",
                "tools.enabled",
                2,
            ),
            (
                "tools:\n  rag_search:\n    timeout_seconds: 0\n",
                "tools.rag_search.timeout_seconds",
                3,
            ),
            (
                "tools:\n  ask_user:\n    retry_count: 11\n",
                "tools.ask_user.retry_count",
                3,
            ),
            (
                "tools:\n  rag_search:\n    retry_delay_seconds: -1\n",
                "tools.rag_search.retry_delay_seconds",
                3,
            ),
            (
                "tools:\n  web:\n    fetch:\n      max_redirects: 50\n",
                "tools.web.fetch.max_redirects",
                4,
            ),
            (
                "tools:\n  web:\n    search:\n      enabled: true\n      endpoint: ftp://x\n",
                "tools.web.search.endpoint",
                5,
            ),
            (
                "tools:\n  runtime:\n    memory_bytes: 10\n",
                "tools.runtime.memory_bytes",
                3,
            ),
            (
                "tools:\n  reflection:\n    disable_after: 2\n",
                "tools.reflection.disable_after",
                3,
            ),
            (
                "tools:\n  rag_search:\n    limit: 0\n",
                "tools.rag_search.limit",
                3,
            ),
            (
                "confidence:\n  weights:\n    bias: .inf\n",
                "confidence.weights.bias",
                3,
            ),
            (
                "confidence:\n  weights:\n    reader_margin: .nan\n",
                "confidence.weights.reader_margin",
                3,
            ),
            (
                "confidence:\n  weights:\n    document_history: 1e9\n",
                "confidence.weights.document_history",
                3,
            ),
            (
                "confidence:\n  thresholds:\n    silent: 1.5\n",
                "confidence.thresholds.silent",
                3,
            ),
            (
                "confidence:\n  thresholds:\n    notify: 0.95\n",
                "confidence.thresholds",
                2,
            ),
        ];
        for (text, key, line) in cases {
            let p = write(dir.path(), text);
            let err = Config::load_with_env(Some(&p), &[]).unwrap_err();
            let msg = err.to_string();
            assert!(msg.contains(&format!("`{key}`")), "{text:?}: {msg}");
            assert!(msg.contains(&format!("c.yml:{line}:")), "{text:?}: {msg}");
        }
    }

    #[test]
    fn tool_names_are_data_here_and_checked_by_whoever_builds_the_tools() {
        // Config knows no layer above it: an unknown tool name loads, and the
        // registry (tests/tools.rs) or the MCP server refuses it, naming the
        // known ones.
        let dir = tempfile::tempdir().unwrap();
        let p = write(dir.path(), "tools:\n  enabled: [rag_search, web_search]\n");
        assert_eq!(
            Config::load_with_env(Some(&p), &[]).unwrap().tools.enabled,
            vec!["rag_search", "web_search"]
        );
        let p = write(dir.path(), "tools:\n  enabled: [ask_user]\n");
        assert_eq!(
            Config::load_with_env(Some(&p), &[]).unwrap().tools.enabled,
            vec!["ask_user"]
        );
    }

    #[test]
    fn mcp_servers_are_checked_by_index() {
        let cases = [
            (
                "tools:\n  mcp_servers:\n    - name: Bad-Name\n      command: x\n",
                "tools.mcp_servers[0].name",
            ),
            (
                "tools:\n  mcp_servers:\n    - name: a\n",
                "tools.mcp_servers[0].command",
            ),
            (
                "tools:\n  mcp_servers:\n    - name: a\n      command: x\n      url: http://h/mcp\n",
                "tools.mcp_servers[0].command",
            ),
            (
                "tools:\n  mcp_servers:\n    - name: a\n      url: ftp://h\n",
                "tools.mcp_servers[0].url",
            ),
            (
                "tools:\n  mcp_servers:\n    - name: a\n      command: x\n    - name: a\n      command: y\n",
                "tools.mcp_servers[1].name",
            ),
            (
                "tools:\n  mcp_servers:\n    - name: a\n      command: x\n      include: [\"[\"]\n",
                "tools.mcp_servers[0].include",
            ),
            (
                "tools:\n  mcp_servers:\n    - name: a\n      command: x\n      tools:\n        t: {timeout_seconds: 0}\n",
                "tools.mcp_servers[0].tools.t.timeout_seconds",
            ),
        ];
        for (yaml, key) in cases {
            let message = Config::from_yaml(yaml)
                .and_then(|c| validate::validate(&c))
                .unwrap_err()
                .to_string();
            assert!(message.contains(key), "{yaml}: {message}");
        }
        let ok = Config::from_yaml(
            "tools:\n  mcp_servers:\n    - name: kb_two\n      command: grace\n      args: [mcp]\n      callers: [agent, http]\n",
        )
        .unwrap();
        let s = &ok.tools.mcp_servers[0];
        assert!(s.callers.allows(crate::config::Caller::Http));
        assert!(!s.callers.allows(crate::config::Caller::Mcp));
    }

    #[test]
    fn model_written_questions_need_a_model() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            "confidence:\n  self_calibration:\n    model_questions: true\n",
        );
        let err = load_error(&p);
        assert!(
            err.contains("confidence.self_calibration.model_questions")
                && err.contains("llm.provider"),
            "{err}"
        );
    }
}
