//! The tool registry built from the configuration, and `rag_search` on the
//! real store and model.

mod common;

use std::sync::Arc;

use grace::confidence::Factor;
use grace::ingest::IngestOptions;
use grace::tools::{ToolOutput, ToolRegistry};
use serde_json::json;

fn kb_with_sample(data: &std::path::Path) -> Arc<grace::KnowledgeBase> {
    let kb = common::open(common::config(data));
    kb.ingest(
        &[common::repo().join("examples/kb")],
        &IngestOptions::default(),
        &mut |_| {},
    )
    .unwrap();
    Arc::new(kb)
}

#[test]
fn only_enabled_tools_are_constructed() {
    let data = tempfile::tempdir().unwrap();
    let kb = kb_with_sample(data.path());
    let mut config = kb.config().tools.clone();
    assert_eq!(
        ToolRegistry::from_config(&config, kb.clone())
            .unwrap()
            .names(),
        vec!["rag_search", "ask_user"]
    );
    config.enabled = vec!["ask_user".into()];
    let registry = ToolRegistry::from_config(&config, kb.clone()).unwrap();
    assert_eq!(registry.names(), vec!["ask_user"]);
    assert!(registry.get("rag_search").is_none());
    let r = registry.call("rag_search", &json!({"query": "rollback"}));
    assert!(!r.success);
    assert!(r.error.unwrap().contains("not an enabled tool"));

    config.enabled = vec!["web_search".into()];
    assert!(ToolRegistry::from_config(&config, kb).is_err());
}

#[test]
fn rag_search_returns_passages_sources_and_factors() {
    let data = tempfile::tempdir().unwrap();
    let kb = kb_with_sample(data.path());
    let registry = ToolRegistry::from_config(&kb.config().tools, kb.clone()).unwrap();

    let r = registry.call(
        "rag_search",
        &json!({"query": "What does ORB-2001 mean?", "limit": 3}),
    );
    assert!(r.success, "{r:?}");
    let ToolOutput::Passages(passages) = &r.output else {
        panic!("{:?}", r.output)
    };
    assert_eq!(passages.len(), 3);
    assert!(passages[0].section.contains("ORB-2001"));
    assert!(r.sources[0].ends_with("troubleshooting.md"));
    assert_eq!(r.factors.get(Factor::ResultCount), Some(3.0));
    // Terms: orb, 2001, mean and the identifier orb-2001 ("what", "does"
    // are stop words); the passages (headings included) lack only "mean".
    assert_eq!(r.factors.get(Factor::QueryCoverage), Some(0.75));
    let max = r.factors.get(Factor::MaxScore).unwrap();
    assert!(max > 0.0 && max <= 1.0);
    assert!(r.factors.get(Factor::Margin).unwrap() >= 0.0);
    assert_eq!(r.attempts, 1);

    // The configured default limit applies when none is given.
    let r = registry.call("rag_search", &json!({"query": "rollback"}));
    let ToolOutput::Passages(p) = &r.output else {
        panic!()
    };
    assert_eq!(p.len(), kb.config().tools.rag_search.limit);

    // A filter narrows the sources.
    let secrets = std::fs::canonicalize(common::repo().join("examples/kb/secrets.html")).unwrap();
    let r = registry.call(
        "rag_search",
        &json!({"query": "rotate keys", "filter": {"source": secrets.to_string_lossy()}}),
    );
    assert!(r.success);
    assert_eq!(r.sources, vec![secrets.to_string_lossy().into_owned()]);
}

#[test]
fn rag_search_rejects_bad_input_without_retrying() {
    let data = tempfile::tempdir().unwrap();
    let kb = kb_with_sample(data.path());
    let registry = ToolRegistry::from_config(&kb.config().tools, kb.clone()).unwrap();
    for bad in [
        json!({}),
        json!({"query": "  "}),
        json!({"query": 7}),
        json!({"query": "x", "limit": 0}),
        json!({"query": "x", "limit": "five"}),
        json!({"query": "x", "filter": ["source"]}),
        json!({"query": "x", "filter": {"source": 1}}),
    ] {
        let r = registry.call("rag_search", &bad);
        assert!(!r.success, "{bad}");
        assert_eq!(r.attempts, 1, "{bad}");
        assert!(r.suggestions[0].contains("fix the input"), "{bad}: {r:?}");
    }
}
