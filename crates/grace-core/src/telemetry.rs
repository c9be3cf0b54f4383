//! What GRACE counts and times while it works, through the `metrics`
//! facade: the library records, and whoever installs a recorder sees it
//! (`grace serve` renders Prometheus's text format at `GET /metrics`, see
//! `grace_serve::metrics_api`). Without a recorder (the CLI, a library
//! user who installs none) every call here costs a few nanoseconds and
//! records nothing.
//!
//! Names follow Prometheus's conventions: a unit suffix, `_total` on
//! counters, labels from small fixed sets (never a question or a source).

use std::time::Duration;

/// Requests served, by `route` (the path template), `method` and `status`.
pub const HTTP_REQUESTS: &str = "grace_http_requests_total";
/// How long requests took, by `route`.
pub const HTTP_SECONDS: &str = "grace_http_request_duration_seconds";
/// How long each phase of a question took, by `phase` ([`Phase`]).
pub const PHASE_SECONDS: &str = "grace_ask_phase_seconds";
/// Questions decided, by `decision` (answer, caveat, escalate, decline,
/// needs_input).
pub const DECISIONS: &str = "grace_decisions_total";
/// The confidence of each decided question, by `decision`.
pub const CONFIDENCE: &str = "grace_confidence";
/// Files ingested, by `outcome` (added, updated, unchanged, removed,
/// skipped).
pub const INGEST_FILES: &str = "grace_ingest_files_total";
/// Chunks embedded and written by ingests.
pub const INGEST_CHUNKS: &str = "grace_ingest_chunks_total";
/// Store writes tried again after a transient failure.
pub const STORE_RETRIES: &str = "grace_store_retries_total";
/// Escalations in the review queue, by `status` (pending, claimed,
/// answered, rejected, expired, cancelled): read from the queue at each
/// scrape, so it counts every escalation ever opened, whichever process
/// settled it.
pub const ESCALATIONS: &str = "grace_escalations";

/// Bucket bounds for the durations, in seconds: from a cached search to a
/// slow remote generation.
pub const SECONDS_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];
/// Bucket bounds for confidence, a tenth wide.
pub const CONFIDENCE_BUCKETS: &[f64] = &[0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0];

/// A phase of answering a question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Embedding the question.
    Embed,
    /// Ranking and fetching passages in the store (the rest of a search).
    Search,
    /// The answerability reader over the passages found.
    Read,
    /// Generating the answer (the extractive answerer or a language model).
    Answer,
}

impl Phase {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Embed => "embed",
            Phase::Search => "search",
            Phase::Read => "read",
            Phase::Answer => "answer",
        }
    }
}

/// Gives each metric its help text, and the unlabelled counters their
/// zero, so a scrape lists them before anything happened; called once,
/// by whoever installs the recorder.
pub fn describe() {
    use metrics::{describe_counter, describe_gauge, describe_histogram};
    describe_counter!(
        HTTP_REQUESTS,
        "HTTP requests by route template, method and status."
    );
    describe_histogram!(
        HTTP_SECONDS,
        metrics::Unit::Seconds,
        "HTTP request latency by route template (an event stream to its first byte)."
    );
    describe_histogram!(
        PHASE_SECONDS,
        metrics::Unit::Seconds,
        "Time in each phase of answering: embed, search, read, answer."
    );
    describe_counter!(DECISIONS, "Questions decided, by decision.");
    describe_histogram!(CONFIDENCE, "Confidence of decided questions, by decision.");
    describe_counter!(INGEST_FILES, "Files ingested, by outcome.");
    describe_counter!(INGEST_CHUNKS, "Chunks embedded and written by ingests.");
    describe_counter!(
        STORE_RETRIES,
        "Store writes tried again after a transient failure."
    );
    describe_gauge!(
        ESCALATIONS,
        "Escalations in the review queue by status (all ever opened, read at each scrape)."
    );
    metrics::counter!(INGEST_CHUNKS).absolute(0);
    metrics::counter!(STORE_RETRIES).absolute(0);
}

/// Records that `phase` took `took`.
pub fn phase(phase: Phase, took: Duration) {
    metrics::histogram!(PHASE_SECONDS, "phase" => phase.as_str()).record(took.as_secs_f64());
}

/// Records a decided question: its decision and its confidence.
pub fn decision(decision: &'static str, confidence: f64) {
    metrics::counter!(DECISIONS, "decision" => decision).increment(1);
    metrics::histogram!(CONFIDENCE, "decision" => decision).record(confidence);
}

/// Records one request.
pub fn request(route: &'static str, method: String, status: u16, took: Duration) {
    metrics::histogram!(HTTP_SECONDS, "route" => route).record(took.as_secs_f64());
    metrics::counter!(HTTP_REQUESTS, "route" => route, "method" => method, "status" => status.to_string())
        .increment(1);
}

/// Records `n` files with ingest `outcome`.
pub fn ingest_files(outcome: &'static str, n: usize) {
    if n > 0 {
        metrics::counter!(INGEST_FILES, "outcome" => outcome).increment(n as u64);
    }
}

/// Records `n` chunks written by an ingest.
pub fn ingest_chunks(n: usize) {
    if n > 0 {
        metrics::counter!(INGEST_CHUNKS).increment(n as u64);
    }
}

/// Records one store write tried again.
pub fn store_retry() {
    metrics::counter!(STORE_RETRIES).increment(1);
}

/// Sets the number of escalations with `status`.
pub fn escalations(status: &'static str, n: u64) {
    metrics::gauge!(ESCALATIONS, "status" => status).set(n as f64);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_have_distinct_labels() {
        let all = [Phase::Embed, Phase::Search, Phase::Read, Phase::Answer];
        let labels: std::collections::HashSet<_> = all.iter().map(|p| p.as_str()).collect();
        assert_eq!(labels.len(), all.len());
    }

    #[test]
    fn buckets_are_increasing() {
        for b in [SECONDS_BUCKETS, CONFIDENCE_BUCKETS] {
            assert!(b.windows(2).all(|w| w[0] < w[1]), "{b:?}");
        }
    }
}
