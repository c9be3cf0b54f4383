//! A small service that embeds GRACE as a library: one shared [`Grace`]
//! handle, an endpoint of its own that asks GRACE and shapes the reply for
//! its clients, and GRACE's whole HTTP API mounted under `/grace`.
//!
//! ```sh
//! cargo run --example service -- examples/kb      # ingests the folder, then serves
//! curl -s localhost:3000/faq -d 'How do I rotate an API key?'
//! curl -s localhost:3000/grace/v1/status
//! ```

use std::net::SocketAddr;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use grace::exec::Decision;
use grace::{AskOptions, Config, Grace};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Config as for the CLI: defaults, ./grace_config.yml, GRACE_* variables.
    let config = Config::load(None)?;
    let grace = tokio::task::spawn_blocking(move || Grace::open(config)).await??;
    if let Some(folder) = std::env::args().nth(1) {
        let report = grace
            .ingest(vec![folder.into()], Default::default())
            .await?;
        eprintln!(
            "ingested: {} added, {} updated, {} unchanged",
            report.added, report.updated, report.unchanged
        );
    }

    let app = Router::new()
        .route("/faq", post(faq))
        .with_state(grace.clone())
        .nest(
            "/grace",
            grace_serve::router(grace_serve::AppState::new(grace)?),
        );
    let addr = SocketAddr::from(([127, 0, 0, 1], 3000));
    eprintln!("serving on http://{addr}");
    axum::serve(tokio::net::TcpListener::bind(addr).await?, app).await?;
    Ok(())
}

/// The question in the body; the answer as plain text, or 202 with the
/// escalation id when a human has to answer it.
async fn faq(State(grace): State<Grace>, question: String) -> (StatusCode, String) {
    let options = AskOptions {
        asker: "faq-service".into(),
        ..AskOptions::default()
    };
    match grace.ask(question, options).await {
        Ok(outcome) => match (outcome.report.decision, outcome.review_id) {
            (Decision::Answer | Decision::Caveat, _) => {
                let text = outcome.report.answer.map(|a| a.text).unwrap_or_default();
                (StatusCode::OK, text)
            }
            (Decision::Escalate, Some(id)) => (
                StatusCode::ACCEPTED,
                format!("A reviewer will answer this: escalation #{id}"),
            ),
            _ => (
                StatusCode::OK,
                "The knowledge base does not answer this.".into(),
            ),
        },
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}
