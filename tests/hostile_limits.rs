//! Security review: numbers from outside (a client's `limit`, a model's
//! plan `timeout`) are bounded at the edge. Before, an ask for 10^12
//! passages overflowed `limit * 2` on the wider retry, an ask for 60 made
//! that retry's search invalid (120 > 100), and a plan step's
//! `"timeout": 1e20` panicked in `Duration::from_secs_f64`.

use crate::support::common;

use std::sync::Arc;

use grace::Config;
use grace::config::MAX_RAG_SEARCH_LIMIT;
use grace::exec::{Event, Executor};
use grace::service::AskOptions;
use grace::tools::ToolRegistry;
use serde_json::json;

const HUGE: usize = 1_000_000_000_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ask_for_more_passages_than_a_search_returns_is_refused_naming_the_range() {
    let dir = tempfile::tempdir().unwrap();
    let grace = common::sample_service(common::config(dir.path())).await;
    for limit in [0, MAX_RAG_SEARCH_LIMIT + 1, HUGE, usize::MAX] {
        let options = AskOptions {
            limit: Some(limit),
            ..Default::default()
        };
        let err = grace
            .ask("How do I rotate an API key?", options)
            .await
            .unwrap_err();
        assert!(
            matches!(err, grace::Error::InvalidInput(_)),
            "{limit}: {err}"
        );
        assert!(err.to_string().contains("1..=100"), "{err}");
        assert_eq!(err.exit_code(), grace::EXIT_BAD_INPUT);
    }

    // Over HTTP: 400 naming the range, and the server goes on answering.
    let server = common::serve(grace.clone()).await;
    let base = server.base.clone();
    let http = reqwest::Client::new();
    let r = http
        .post(format!("{base}/v1/ask"))
        .json(&json!({"question": "How do I rotate an API key?", "limit": 1_000_000_000_000u64}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), reqwest::StatusCode::BAD_REQUEST);
    assert!(r.text().await.unwrap().contains("1..=100"));
    let r = http
        .post(format!("{base}/v1/ask"))
        .json(&json!({"question": "How do I rotate an API key?", "limit": 100}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), reqwest::StatusCode::OK);
    // A streamed ask is checked before its stream starts (Schemathesis
    // found a 200 stream ending in `failed` for what the schema refuses).
    for body in [
        json!({"question": "How?", "limit": 0, "stream": true}),
        json!({"question": "\u{1c}\u{0}", "stream": true}),
        json!({"question": "How?", "reviewers": ["a b"], "stream": true}),
        json!({"question": "How?", "reviewers": ["\u{81}R"]}),
    ] {
        let r = http
            .post(format!("{base}/v1/ask"))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), reqwest::StatusCode::BAD_REQUEST, "{body}");
    }
    server.stop().await;
    drop(grace);

    // The CLI says so and exits 2, before it opens any knowledge base.
    let empty = tempfile::tempdir().unwrap();
    let data = empty.path().to_str().unwrap();
    let out = common::grace(
        empty.path(),
        &[
            "--data-dir",
            data,
            "ask",
            "--no-input",
            "-k",
            "1000000000000",
            "How do I rotate an API key?",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", common::output_text(&out));
    assert!(common::output_text(&out).contains("1..=100"));
}

/// Every step of every run (the first and the wider retry) succeeded.
fn ask_and_collect_failures(executor: &Executor<'_>, question: &str) -> (bool, Vec<String>) {
    let mut recovering = false;
    let mut failures = Vec::new();
    executor
        .ask(question, &mut |e| match e {
            Event::Recovering { .. } => recovering = true,
            Event::StepFinished { record } if !record.result.success => {
                failures.push(format!("{}: {:?}", record.id, record.result.error))
            }
            _ => {}
        })
        .unwrap();
    (recovering, failures)
}

#[test]
fn the_wider_retry_of_an_ask_for_60_or_100_passages_stays_a_valid_search() {
    let data = tempfile::tempdir().unwrap();
    let kb = common::open_sample(data.path());
    let config: Config = kb.config().clone();
    let registry = ToolRegistry::from_config(&config, kb.clone()).unwrap();
    for limit in [60, MAX_RAG_SEARCH_LIMIT] {
        let executor = Executor::new(&registry, &config, kb.scorer(), limit);
        // Nothing in the sample answers this: the wider retry runs.
        let (recovering, failures) = ask_and_collect_failures(
            &executor,
            "What is the airspeed velocity of an unladen swallow?",
        );
        assert!(recovering, "limit {limit}: no wider retry ran");
        assert!(failures.is_empty(), "limit {limit}: {failures:?}");
    }
}

#[test]
fn a_plan_timeout_of_1e20_seconds_is_clamped_to_the_tools_own_not_a_panic() {
    let data = tempfile::tempdir().unwrap();
    let kb = common::open_sample(data.path());
    let config: Config = kb.config().clone();
    let registry = ToolRegistry::from_config(&config, kb.clone()).unwrap();
    for timeout in [1e20, 1e308, 3.0e9] {
        let plan = json!({"steps": [
            {"id": "s", "action": "rag_search", "input": {"query": "rotate an API key"},
             "timeout": timeout},
            {"id": "a", "action": "reasoning", "depends_on": ["s"], "timeout": timeout,
             "input": {"query": "How do I rotate an API key?", "sources": {"$from": "s"}}}
        ]});
        let executor = Executor {
            registry: &registry,
            confidence: &config.confidence,
            scorer: kb.scorer(),
            limit: 5,
            planner: grace::plan::Planner::new(Some(Arc::new(common::FixedPlanner(
                plan.to_string(),
            )))),
            cancel: Default::default(),
            agent: None,
            clarifier: None,
            document_history: Default::default(),
            scope: Default::default(),
        };
        let r = executor
            .ask("How do I rotate an API key?", &mut |_| {})
            .unwrap();
        assert!(
            matches!(r.plan, grace::plan::PlanOrigin::Llm { .. }),
            "{timeout}: the model's plan was not run: {:?}",
            r.plan
        );
        assert!(
            r.steps.iter().all(|s| s.result.success),
            "{timeout}: {:?}",
            r.steps
        );
        assert!(r.answer.is_some(), "{timeout}");
    }
}
