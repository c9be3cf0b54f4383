//! `grace serve`: the HTTP server (axum). Today it serves the reviewer web
//! page and the review endpoints it uses, which are also the endpoints
//! service backends use to review and to collect answers (see
//! [`review_api`] for the reference). The rest of the API (ask, search,
//! ingest, auth) comes with the service issue; until then the server only
//! listens on loopback.

pub mod review_api;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::response::{Html, Redirect};
use axum::routing::get;

use crate::review::ReviewQueue;
use crate::{Config, Error, Result};

/// What every handler shares.
#[derive(Clone)]
pub struct AppState {
    pub queue: Arc<ReviewQueue>,
    /// For promotion, which opens the knowledge base when it is needed (so
    /// that `grace ask` and `grace ingest` can use it the rest of the time).
    pub config: Arc<Config>,
}

/// The reviewer page: vanilla HTML and JavaScript over the review endpoints.
const REVIEW_PAGE: &str = include_str!("review_page.html");

/// The router: the page, `/health`, and the review endpoints.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/", get(|| async { Redirect::to("/review") }))
        .route("/review", get(|| async { Html(REVIEW_PAGE) }))
        .route(
            "/health",
            get(|| async { axum::Json(serde_json::json!({"status": "ok"})) }),
        )
        .merge(review_api::routes())
        .layer(axum::extract::DefaultBodyLimit::max(1024 * 1024))
        .with_state(state)
}

/// Serves until Ctrl-C or SIGTERM, then finishes the requests in flight.
pub fn serve(config: Config, bind: SocketAddr) -> Result<()> {
    if !bind.ip().is_loopback() {
        return Err(Error::InvalidInput(format!(
            "refusing to listen on {bind}: without API keys (not built yet) the server only binds to loopback, e.g. 127.0.0.1:8080"
        )));
    }
    let queue = Arc::new(ReviewQueue::open(&config)?);
    let state = AppState {
        queue,
        config: Arc::new(config),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::Server(format!("cannot start the runtime: {e}")))?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(bind)
            .await
            .map_err(|e| Error::Server(format!("cannot listen on {bind}: {e}")))?;
        let local = listener
            .local_addr()
            .map_err(|e| Error::Server(format!("cannot listen on {bind}: {e}")))?;
        tracing::info!(%local, "serving");
        eprintln!("GRACE is serving the reviewer page on http://{local}/review (Ctrl-C stops)");
        axum::serve(listener, router(state))
            .with_graceful_shutdown(shutdown_signal())
            .await
            .map_err(|e| Error::Server(format!("stopped: {e}")))
    })
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
    tracing::info!("shutting down: finishing requests in flight");
}
