//! `GET /metrics` scraped as Prometheus would, parsed with a Prometheus
//! text-format parser: behind the API key, and its counters move as
//! questions are asked, files ingested and store writes retried.
//!
//! A test binary of its own (Cargo.toml), not a module of `tests/it.rs`:
//! the metrics recorder is one per process, and the questions other
//! modules ask at the same time would move the counters it checks.

// The shared helpers; this binary uses a few of them.
#[allow(dead_code)]
mod support;

use support::common;

use std::collections::HashMap;

use grace::store::StoreError;
use grace::store::retry::{RetryPolicy, with_retries};
use grace::{Config, Grace};
use prometheus_parse::{Scrape, Value};
use reqwest::StatusCode;
use serde_json::json;

const KEY: &str = "metrics-test-key";

struct Server {
    http: reqwest::Client,
    server: common::TestServer,
    _dir: tempfile::TempDir,
}

impl Server {
    async fn start(docs: &std::path::Path) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let mut config: Config = common::config(dir.path());
        config.server.api_key = KEY.into();
        config.ingest.allowed_roots = vec![docs.to_path_buf()];
        let grace = Grace::builder(config)
            .embedder(common::embedder())
            .build()
            .unwrap();
        grace
            .ingest(vec![common::repo().join("examples/kb")], Default::default())
            .await
            .unwrap();
        let server = common::serve(grace).await;
        Self {
            http: reqwest::Client::new(),
            server,
            _dir: dir,
        }
    }

    async fn post(&self, path: &str, body: serde_json::Value) -> StatusCode {
        self.http
            .post(format!("{}{path}", self.server.base))
            .bearer_auth(KEY)
            .json(&body)
            .send()
            .await
            .unwrap()
            .status()
    }

    async fn scrape(&self) -> Metrics {
        let r = self
            .http
            .get(format!("{}/metrics", self.server.base))
            .bearer_auth(KEY)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        let content_type = r.headers()["content-type"].to_str().unwrap().to_string();
        assert!(content_type.starts_with("text/plain"), "{content_type}");
        let text = r.text().await.unwrap();
        let scrape = Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).unwrap();
        Metrics(scrape)
    }
}

/// A parsed scrape.
struct Metrics(Scrape);

impl Metrics {
    /// The sum of a counter's or gauge's samples whose labels include
    /// `labels` (0 when there are none).
    fn value(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.matching(name, labels)
            .map(|v| match v {
                Value::Counter(x) | Value::Gauge(x) | Value::Untyped(x) => *x,
                other => panic!("{name} is not a counter or gauge: {other:?}"),
            })
            .sum()
    }

    /// A histogram's observation count over the samples whose labels
    /// include `labels`.
    fn observations(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.matching(name, labels)
            .map(|v| match v {
                Value::Histogram(buckets) => buckets.last().map_or(0.0, |b| b.count),
                other => panic!("{name} is not a histogram: {other:?}"),
            })
            .sum()
    }

    fn matching<'a>(
        &'a self,
        name: &'a str,
        labels: &'a [(&'a str, &'a str)],
    ) -> impl Iterator<Item = &'a Value> + 'a {
        self.0
            .samples
            .iter()
            .filter(move |s| s.metric == name)
            .filter(move |s| labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
            .map(|s| &s.value)
    }

    fn label_values(&self, name: &str, label: &str) -> HashMap<String, f64> {
        self.0
            .samples
            .iter()
            .filter(|s| s.metric == name)
            .filter_map(|s| match (&s.value, s.labels.get(label)) {
                (Value::Gauge(x), Some(l)) => Some((l.to_string(), *x)),
                _ => None,
            })
            .collect()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn metrics_are_behind_the_key_and_move_with_the_work() {
    let docs = tempfile::tempdir().unwrap();
    let server = Server::start(docs.path()).await;

    // The same key as the rest of the API.
    let anonymous = server
        .http
        .get(format!("{}/metrics", server.server.base))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);

    let before = server.scrape().await;
    // The refused scrape was counted, under its route.
    assert!(
        before.value(
            "grace_http_requests_total",
            &[("route", "/metrics"), ("status", "401")]
        ) >= 1.0
    );
    let ask = [("route", "/v1/ask"), ("status", "200")];

    // One confident answer and one escalation.
    for question in ["How do I rotate an API key?", "Can I deploy on Fridays?"] {
        let s = server.post("/v1/ask", json!({"question": question})).await;
        assert_eq!(s, StatusCode::OK);
    }
    // A file ingested over the API.
    std::fs::write(
        docs.path().join("pager.md"),
        "# Pager\n\nThe on-call engineer carries the pager for one week, from Monday to Monday.\n",
    )
    .unwrap();
    let s = server
        .post("/v1/ingest", json!({"paths": [docs.path()]}))
        .await;
    assert_eq!(s, StatusCode::OK);
    // A store write that failed for a moment, through the retry the
    // ingest uses.
    let mut failed_once = false;
    let written = with_retries(RetryPolicy::new(2, 0.0), &mut |_| {}, || {
        if std::mem::replace(&mut failed_once, true) {
            Ok(())
        } else {
            Err(StoreError::Unavailable {
                url: "http://127.0.0.1:1".into(),
                message: "restarting".into(),
            })
        }
    });
    assert!(written.is_ok());

    let after = server.scrape().await;
    let moved = |name: &str, labels: &[(&str, &str)]| {
        after.value(name, labels) - before.value(name, labels)
    };
    assert_eq!(moved("grace_http_requests_total", &ask), 2.0);
    assert_eq!(
        moved("grace_http_requests_total", &[("route", "/v1/ingest")]),
        1.0
    );
    assert_eq!(moved("grace_decisions_total", &[]), 2.0);
    assert_eq!(
        moved("grace_decisions_total", &[("decision", "escalate")]),
        1.0
    );
    assert_eq!(
        moved("grace_ingest_files_total", &[("outcome", "added")]),
        1.0
    );
    assert!(moved("grace_ingest_chunks_total", &[]) >= 1.0);
    assert_eq!(moved("grace_store_retries_total", &[]), 1.0);

    // Histograms: both questions' confidence, and each phase timed.
    let observed = |name: &str, labels: &[(&str, &str)]| {
        after.observations(name, labels) - before.observations(name, labels)
    };
    assert_eq!(observed("grace_confidence", &[]), 2.0);
    for phase in ["embed", "search", "answer"] {
        assert!(
            observed("grace_ask_phase_seconds", &[("phase", phase)]) >= 2.0,
            "{phase}"
        );
    }
    assert!(
        observed(
            "grace_http_request_duration_seconds",
            &[("route", "/v1/ask")]
        ) == 2.0
    );

    // The review queue, read at the scrape: the escalation is pending.
    let escalations = after.label_values("grace_escalations", "status");
    assert_eq!(escalations.get("pending"), Some(&1.0), "{escalations:?}");
    for status in ["claimed", "answered", "rejected", "expired", "cancelled"] {
        assert_eq!(escalations.get(status), Some(&0.0), "{status}");
    }
}
