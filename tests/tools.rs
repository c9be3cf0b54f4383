//! The tool registry built from the configuration, and `rag_search` on the
//! real store and model.

use crate::support::common;

use std::sync::Arc;

use grace::confidence::Factor;
use grace::tools::{ToolOutput, ToolRegistry};
use serde_json::json;

#[test]
fn only_enabled_tools_are_constructed() {
    let data = tempfile::tempdir().unwrap();
    let kb = common::open_sample(data.path());
    let mut config = kb.config().clone();
    assert_eq!(
        ToolRegistry::from_config(&config, kb.clone())
            .unwrap()
            .names(),
        vec!["rag_search", "reasoning", "ask_user"]
    );
    config.tools.enabled = vec!["ask_user".into()];
    let registry = ToolRegistry::from_config(&config, kb.clone()).unwrap();
    assert_eq!(registry.names(), vec!["ask_user"]);
    assert!(registry.get("rag_search").is_none());
    let r = registry.call(
        "rag_search",
        &json!({"query": "rollback"}),
        &grace::access::ReadScope::All,
    );
    assert!(!r.success);
    assert!(r.error.unwrap().contains("not an enabled tool"));

    // Config is data: the registry checks the names against its tools.
    config.tools.enabled = vec!["web_search".into()];
    let err = ToolRegistry::from_config(&config, kb)
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("web_search") && err.contains("known: rag_search"),
        "{err}"
    );
}

#[test]
fn rag_search_returns_passages_sources_and_factors() {
    let data = tempfile::tempdir().unwrap();
    let kb = common::open_sample(data.path());
    let registry = ToolRegistry::from_config(kb.config(), kb.clone()).unwrap();

    let r = registry.call(
        "rag_search",
        &json!({"query": "What does ORB-2001 mean?", "limit": 3}),
        &grace::access::ReadScope::All,
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
    let r = registry.call(
        "rag_search",
        &json!({"query": "rollback"}),
        &grace::access::ReadScope::All,
    );
    let ToolOutput::Passages(p) = &r.output else {
        panic!()
    };
    assert_eq!(p.len(), kb.config().tools.rag_search.limit);

    // A filter narrows the sources.
    let secrets = std::fs::canonicalize(common::repo().join("examples/kb/secrets.html")).unwrap();
    let r = registry.call(
        "rag_search",
        &json!({"query": "rotate keys", "filter": {"source": secrets.to_string_lossy()}}),
        &grace::access::ReadScope::All,
    );
    assert!(r.success);
    assert_eq!(r.sources, vec![secrets.to_string_lossy().into_owned()]);
}

#[test]
fn rag_search_rejects_bad_input_without_retrying() {
    let data = tempfile::tempdir().unwrap();
    let kb = common::open_sample(data.path());
    let registry = ToolRegistry::from_config(kb.config(), kb.clone()).unwrap();
    for bad in [
        json!({}),
        json!({"query": "  "}),
        json!({"query": 7}),
        json!({"query": "x", "limit": 0}),
        json!({"query": "x", "limit": "five"}),
        json!({"query": "x", "filter": ["source"]}),
        json!({"query": "x", "filter": {"source": 1}}),
    ] {
        let r = registry.call("rag_search", &bad, &grace::access::ReadScope::All);
        assert!(!r.success, "{bad}");
        assert_eq!(r.attempts, 1, "{bad}");
        assert!(r.suggestions[0].contains("fix the input"), "{bad}: {r:?}");
    }
}

fn passages_json(r: &grace::tools::ToolResult) -> serde_json::Value {
    let ToolOutput::Passages(passages) = &r.output else {
        panic!("{:?}", r.output)
    };
    serde_json::Value::Array(
        passages
            .iter()
            .map(|p| json!({"text": p.text, "source": p.source, "section": p.section}))
            .collect(),
    )
}

#[test]
fn reasoning_answers_from_sources_with_citations_or_abstains() {
    let data = tempfile::tempdir().unwrap();
    let kb = common::open_sample(data.path());
    let registry = ToolRegistry::from_config(kb.config(), kb.clone()).unwrap();

    let question = "How do I rotate an API key?";
    let found = registry.call(
        "rag_search",
        &json!({"query": question, "limit": 3}),
        &grace::access::ReadScope::All,
    );
    let r = registry.call(
        "reasoning",
        &json!({"query": question, "sources": passages_json(&found)}),
        &grace::access::ReadScope::All,
    );
    assert!(r.success, "{r:?}");
    let ToolOutput::Answer(answer) = &r.output else {
        panic!("{:?}", r.output)
    };
    assert!(!answer.abstained, "{answer:?}");
    assert!(answer.text.contains("[1]"), "{answer:?}");
    assert!(common::first_cited(&answer.citations).ends_with("secrets.html"));
    assert!(answer.text.to_lowercase().contains("rotate"), "{answer:?}");
    assert_eq!(r.factors.get(Factor::Groundedness), Some(1.0));
    assert_eq!(r.factors.get(Factor::CitationValidity), Some(1.0));
    assert_eq!(r.factors.get(Factor::Abstained), Some(0.0));

    // A question the knowledge base knows nothing about: abstain, cite nothing.
    let question = "Who won the 1998 football world cup?";
    let found = registry.call(
        "rag_search",
        &json!({"query": question, "limit": 3}),
        &grace::access::ReadScope::All,
    );
    let r = registry.call(
        "reasoning",
        &json!({"query": question, "sources": passages_json(&found)}),
        &grace::access::ReadScope::All,
    );
    let ToolOutput::Answer(answer) = &r.output else {
        panic!("{:?}", r.output)
    };
    assert!(answer.abstained, "{answer:?}");
    assert!(answer.citations.is_empty());
    assert_eq!(r.factors.get(Factor::Abstained), Some(1.0));
    assert!(!r.suggestions.is_empty());

    // Bad input is rejected.
    for bad in [
        json!({"query": "q"}),
        json!({"query": "q", "sources": [{"source": "a"}]}),
        json!({"query": "", "sources": []}),
    ] {
        let r = registry.call("reasoning", &bad, &grace::access::ReadScope::All);
        assert!(!r.success && r.attempts == 1, "{bad}: {r:?}");
    }
}

/// A generator that returns something that is not the answer JSON.
struct Garbled;

impl grace::llm::LlmClient for Garbled {
    fn name(&self) -> &str {
        "garbled"
    }
    fn generate(
        &self,
        _r: &grace::llm::GenerateRequest,
    ) -> grace::llm::Result<grace::llm::Generation> {
        Ok(grace::llm::Generation::plain(
            "Sure! The answer is 42.",
            grace::llm::StopReason::Complete,
            Default::default(),
        ))
    }
}

#[test]
fn malformed_generator_output_is_retried_then_reported() {
    let tool = grace::tools::Reasoning::new(Arc::new(Garbled)).unwrap();
    let policy = grace::config::ToolPolicy {
        timeout_seconds: 5.0,
        retry_count: 2,
        retry_delay_seconds: 0.0,
    };
    let registry = ToolRegistry::with_tools(vec![(Arc::new(tool), policy)]);
    let r = registry.call(
        "reasoning",
        &json!({"query": "q?", "sources": [{"text": "Some text here."}]}),
        &grace::access::ReadScope::All,
    );
    assert!(!r.success);
    assert_eq!(r.attempts, 3);
    assert!(r.error.unwrap().contains("malformed JSON"));
}

/// The neighbour score of the top passage: its mean cosine to its nearest
/// other passages, from the stored vector (close to embedding its text
/// again: the stored vector also saw the section heading).
#[test]
fn rag_search_reports_how_generic_the_top_passage_is() {
    let data = tempfile::tempdir().unwrap();
    let kb = common::open_sample(data.path());
    let registry = ToolRegistry::from_config(kb.config(), kb.clone()).unwrap();
    let r = registry.call(
        "rag_search",
        &json!({"query": "How do I rotate an API key?"}),
        &grace::access::ReadScope::All,
    );
    let ToolOutput::Passages(passages) = &r.output else {
        panic!("{:?}", r.output)
    };
    let reported = r.factors.get(Factor::NeighbourScore).unwrap();
    assert!(reported > -1.0 && reported < 1.0, "{reported}");

    let top = &passages[0];
    assert!(top.vector.is_some(), "a search returns the stored vector");
    let mut without = top.clone();
    without.vector = None;
    let embedded = kb
        .neighbour_similarity(&without, 10, None)
        .unwrap()
        .unwrap();
    assert!(
        (embedded - reported).abs() < 0.05,
        "{embedded} vs {reported}"
    );
    // Fewer neighbours than asked for: the mean of those there are.
    let all = kb.neighbour_similarity(top, 1000, None).unwrap().unwrap();
    assert!(
        all < reported,
        "the 10 nearest are closer than the average passage"
    );
}
