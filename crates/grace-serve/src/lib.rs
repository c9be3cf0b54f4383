//! `grace serve`: the HTTP API (axum) over one shared [`Grace`] handle.
//!
//! - [`ask_page`]: the asker's page at `/` (the chat);
//! - [`api`]: `POST /v1/ask` (JSON, or server-sent events), `/v1/search`,
//!   `/v1/ingest`, `GET /v1/status`;
//! - [`sessions_api`]: conversations (`/v1/sessions`);
//! - [`feedback_api`]: askers' ratings of answers (`/v1/answers/{id}/feedback`);
//! - [`tools_api`]: `GET /v1/tools` and `POST /v1/tools/{name}/call`;
//! - [`review_api`]: the review endpoints, also used by the reviewer page
//!   at `/review`;
//! - [`follow`]: the `server.watch` folders, kept in step while serving;
//! - [`gate`]: what every request passes first: 503 while shutting down,
//!   bearer-token auth, 429 beyond `server.max_concurrency`, the request
//!   timeout, and JSON bodies for every error;
//! - [`metrics_api`]: `GET /metrics` (Prometheus) and the middleware that
//!   counts every request by route and status;
//! - [`openapi`]: the OpenAPI document at `/openapi.json`.
//!
//! Without `server.api_key` the server refuses to bind beyond loopback.
//! On Ctrl-C or SIGTERM it stops accepting work (503), finishes the
//! requests in flight, and flushes the store.

#![warn(missing_docs)]

pub mod api;
pub mod ask_page;
pub mod body;
pub mod error;
pub mod feedback_api;
pub mod follow;
pub mod gate;
pub mod kbs_api;
pub mod metrics_api;
pub mod openapi;
pub mod review_api;
pub mod review_page;
pub mod runtime_tools_api;
mod schema_bounds;
pub mod sessions_api;
pub mod tools_api;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::Router;
use axum::middleware::from_fn_with_state;
use axum::routing::{get, post};
use tokio::sync::Semaphore;

use grace::{
    Error,
    Result,
    // `crate::config` as in the library: the handlers' doc comments are
    // the published OpenAPI document's text, which names `crate::config`.
    config::{self, Config},
    embed::SAVE_EVERY,
    service::{Grace, kbs::Kbs},
};

/// What every handler shares.
#[derive(Clone)]
pub struct AppState {
    /// The library handle of the knowledge base the request is for (the
    /// path's `/v1/kbs/{kb}/`, else `default`).
    pub grace: Grace,
    /// Its name.
    pub kb: String,
    /// Every knowledge base served, with its roles.
    pub kbs: Kbs,
    /// How its sources are shown to clients (relative, never the server's
    /// full paths; see [`grace::display`]).
    pub display: Arc<grace::display::SourceDisplay>,
    /// Limits, authentication and shutdown state (see [`gate`]).
    pub gate: Arc<Gate>,
}

/// The server's limits and switches (see [`gate`]).
pub struct Gate {
    /// Permits for asks, searches and ingests in progress.
    pub permits: Arc<Semaphore>,
    /// `server.max_concurrency`: the permits in all.
    pub max_concurrency: usize,
    /// Set on Ctrl-C/SIGTERM: new requests get 503.
    pub shutting_down: AtomicBool,
    /// Woken when shutdown begins: long polls answer at once instead of
    /// holding the shutdown for up to their `wait`.
    pub shutdown: tokio::sync::Notify,
    /// Set when a shutdown's grace (`server.shutdown_grace_seconds`) is
    /// over: requests and event streams still running end with 503 and
    /// their runs are cancelled.
    pub cut: tokio::sync::watch::Sender<bool>,
    /// Askers waiting on `?wait=` at once: [`WAITERS_PER_PERMIT`] ×
    /// `server.max_concurrency`; beyond, 429.
    pub waiters: Arc<Semaphore>,
    /// `server.api_key`; empty: no authentication.
    pub api_key: String,
    /// `server.admin_api_key`; empty: no administrator over HTTP (unless
    /// there is no `api_key` either).
    pub admin_api_key: String,
    /// `server.request_timeout`: how long a request may take before it gets
    /// 504.
    pub timeout: Duration,
    /// The principals and their keys (`grace auth add-key`), read at each
    /// request, so a key issued or revoked while the server runs counts at
    /// once.
    pub principals: Arc<grace::auth::Principals>,
    /// Verifies OIDC / JWT bearer tokens (`auth.jwt`); `None` when no
    /// issuer is configured.
    pub jwt: Option<Arc<grace::auth::jwt::JwtVerifier>>,
}

/// How long connections get to close after the grace is over and what
/// still ran was cut off.
const CLOSE_WAIT: Duration = Duration::from_secs(2);

impl Gate {
    /// Resolves once the shutdown's grace is over (see [`Gate::cut`]).
    pub async fn cut_off(&self) {
        let mut cut = self.cut.subscribe();
        let _ = cut.wait_for(|c| *c).await;
    }
}

/// Long polls allowed per `server.max_concurrency` permit (a waiting asker
/// costs a task and a database read now and then, not a run).
pub const WAITERS_PER_PERMIT: usize = 4;

impl AppState {
    /// The state for one knowledge base, `grace`, served as `default`,
    /// with its configured `server` settings.
    pub fn new(grace: Grace) -> grace::Result<Self> {
        Self::serving(Kbs::single(grace))
    }

    /// The state for every knowledge base in `kbs`; the server settings
    /// are `default`'s.
    pub fn serving(kbs: Kbs) -> grace::Result<Self> {
        let grace = kbs.default_kb().clone();
        let principals = Arc::new(grace::auth::Principals::open(grace.config())?);
        let s = &grace.config().server;
        let gate = Gate {
            permits: Arc::new(Semaphore::new(s.max_concurrency)),
            max_concurrency: s.max_concurrency,
            shutting_down: AtomicBool::new(false),
            shutdown: tokio::sync::Notify::new(),
            cut: tokio::sync::watch::Sender::new(false),
            waiters: Arc::new(Semaphore::new(s.max_concurrency * WAITERS_PER_PERMIT)),
            api_key: s.api_key.clone(),
            admin_api_key: s.admin_api_key.clone(),
            timeout: Duration::from_secs_f64(s.request_timeout),
            principals,
            jwt: grace::auth::jwt::JwtVerifier::new(&grace.config().auth.jwt).map(Arc::new),
        };
        Ok(Self {
            display: Arc::new(grace::display::SourceDisplay::new(grace.config())),
            grace,
            kb: config::DEFAULT_KB.to_string(),
            kbs,
            gate: Arc::new(gate),
        })
    }

    /// The same state for knowledge base `name`, when served.
    fn for_kb(&self, name: &str) -> Option<Self> {
        let grace = self.kbs.get(name)?.clone();
        Some(Self {
            display: Arc::new(grace::display::SourceDisplay::new(grace.config())),
            grace,
            kb: name.to_string(),
            ..self.clone()
        })
    }
}

/// Where a knowledge base's own routes start: `/v1/kbs/{kb}/ask` is
/// `/v1/ask` on knowledge base `kb`.
pub const KB_PREFIX: &str = "/v1/kbs/";

/// Splits a path `/v1/kbs/{kb}/{rest}` into the name and `rest`; `None`
/// for any other path, and for a `rest` that is itself `kbs…`
/// (`/v1/kbs/{kb}/kbs` is no knowledge base's route: it would list the
/// knowledge bases to a caller who may not ask `kb`).
pub(crate) fn kb_route_parts(path: &str) -> Option<(&str, &str)> {
    let (kb, rest) = path.strip_prefix(KB_PREFIX)?.split_once('/')?;
    if kb.is_empty() || rest.is_empty() || rest == "kbs" || rest.starts_with("kbs/") {
        return None;
    }
    Some((kb, rest))
}

/// [`kb_route_parts`] of a request's URI: the name and the `/v1/{rest}`
/// URI (with the query kept).
fn kb_route(uri: &axum::http::Uri) -> Option<(&str, String)> {
    let (kb, rest) = kb_route_parts(uri.path())?;
    let query = uri.query().map(|q| format!("?{q}")).unwrap_or_default();
    Some((kb, format!("/v1/{rest}{query}")))
}

/// The whole router: `/v1/kbs/{kb}/…` goes to that knowledge base's
/// routes as `/v1/…`, everything else to `default`'s. A name that is not
/// served goes to `default`'s routes unchanged, where, once the caller is
/// known, it is the same 404 as a knowledge base the caller may not ask.
pub fn router(state: AppState) -> Router {
    // The recorder is in place before the first request is counted.
    metrics_api::handle();
    let routers: Arc<std::collections::BTreeMap<String, Router>> = Arc::new(
        state
            .kbs
            .names()
            .filter_map(|name| Some((name.to_string(), kb_router(state.for_kb(name)?))))
            .collect(),
    );
    let fallback = kb_router(state);
    let dispatch = tower::service_fn(move |mut request: axum::extract::Request| {
        let target = kb_route(request.uri()).and_then(|(kb, uri)| {
            let router = routers.get(kb)?.clone();
            Some((router, uri.parse::<axum::http::Uri>().ok()?))
        });
        let router = match target {
            Some((router, uri)) => {
                *request.uri_mut() = uri;
                router
            }
            None => fallback.clone(),
        };
        tower::ServiceExt::oneshot(router, request)
    });
    Router::new().fallback_service(dispatch)
}

/// One knowledge base's routes (`state.kb`'s).
fn kb_router(state: AppState) -> Router {
    // Work that costs CPU: bounded by `server.max_concurrency`.
    let work = Router::new()
        .route("/v1/ask", post(api::ask))
        .route("/v1/runs/{id}/reply", post(api::reply))
        .route("/v1/search", post(api::search))
        .route("/v1/ingest", post(api::ingest))
        .route("/v1/tools/{name}/call", post(tools_api::call))
        .route_layer(from_fn_with_state(state.clone(), gate::limit));
    // The API's answers are what carry sources: only they are rewritten
    // (not the OpenAPI document or the page).
    let v1 = Router::new()
        .route("/v1/status", get(api::status))
        .route("/v1/examples", get(api::examples))
        .route("/v1/kbs", get(kbs_api::list))
        .route(
            "/v1/kbs/{kb}/{*rest}",
            axum::routing::any(kbs_api::not_served),
        )
        .route("/v1/tools", get(tools_api::list))
        .route("/v1/answers/{id}/feedback", post(feedback_api::rate))
        .route("/v1/review/calibration", get(feedback_api::calibration))
        .route("/v1/sessions", post(sessions_api::create))
        .route(
            "/v1/sessions/{id}",
            get(sessions_api::show).delete(sessions_api::delete),
        )
        .merge(work)
        .merge(review_api::routes())
        .merge(runtime_tools_api::routes())
        .route_layer(from_fn_with_state(state.clone(), gate::show_sources));
    Router::new()
        .merge(ask_page::routes())
        .merge(review_page::routes())
        .route("/health", get(gate::health))
        .route("/openapi.json", get(openapi::document))
        .route("/metrics", get(metrics_api::metrics))
        .merge(v1)
        .layer(axum::extract::DefaultBodyLimit::max(
            state.grace.config().server.max_body_bytes,
        ))
        .layer(from_fn_with_state(state.clone(), gate::kb_role))
        .layer(from_fn_with_state(state.clone(), gate::timeout))
        .layer(from_fn_with_state(state.clone(), gate::authenticate))
        .layer(from_fn_with_state(state.clone(), gate::same_origin))
        .layer(from_fn_with_state(
            state.clone(),
            gate::refuse_when_shutting_down,
        ))
        .layer(axum::middleware::from_fn(gate::json_errors))
        .layer(axum::middleware::from_fn(gate::security_headers))
        .layer(axum::middleware::from_fn(metrics_api::track))
        .with_state(state)
}

/// Serves until Ctrl-C or SIGTERM, then finishes the requests in flight
/// and flushes the store.
pub fn serve(config: Config, bind: SocketAddr) -> Result<()> {
    if !bind.ip().is_loopback() && config.server.api_key.is_empty() {
        return Err(Error::InvalidInput(format!(
            "refusing to listen on {bind} without authentication: set server.api_key \
             (GRACE_SERVER__API_KEY) or bind to loopback, e.g. 127.0.0.1:8080"
        )));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::Server(format!("cannot start the runtime: {e}")))?;
    let kbs = Kbs::open(&config)?;
    // Before listening, so that a load balancer's health check sends no
    // question to a server still cold.
    for (name, grace) in kbs.handles() {
        if let Err(e) = grace.knowledge_base().warm_up() {
            tracing::warn!(
                kb = name,
                "warming up failed, the first questions may fail: {e}"
            );
        }
    }
    let state = AppState::serving(kbs)?;
    let served = runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(bind)
            .await
            .map_err(|e| Error::Server(format!("cannot listen on {bind}: {e}")))?;
        let local = listener
            .local_addr()
            .map_err(|e| Error::Server(format!("cannot listen on {bind}: {e}")))?;
        tracing::info!(%local, "serving");
        eprintln!(
            "GRACE is serving http://{local} (ask: /, reviewer page: /review, API reference: /openapi.json; Ctrl-C stops)"
        );
        run(listener, state, shutdown_signal()).await
    });
    // Work cut off at the end of the grace is not waited for again.
    runtime.shutdown_timeout(Duration::from_secs(1));
    served?;
    eprintln!("GRACE stopped; the store is flushed.");
    Ok(())
}

/// Serves on `listener` until `shutdown` completes; then refuses new work
/// (503), finishes the requests in flight (for up to
/// `server.shutdown_grace_seconds`; those still running then are
/// cancelled) and flushes the store.
pub async fn run(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<()> {
    let gate = state.gate.clone();
    let handles: Vec<Grace> = state.kbs.handles().map(|(_, g)| g.clone()).collect();
    let grace_period = Duration::from_secs_f64(state.grace.config().server.shutdown_grace_seconds);
    // When the shutdown's grace ends, set as it begins.
    let deadline = Arc::new(std::sync::OnceLock::<tokio::time::Instant>::new());
    let (began, shutdown_began) = tokio::sync::oneshot::channel::<()>();
    let followers: Vec<follow::Follower> =
        handles.iter().filter_map(follow::Follower::start).collect();
    let saver = tokio::spawn(save_vector_caches_every(handles.clone()));
    let (signal_gate, signal_deadline) = (gate.clone(), deadline.clone());
    let server = axum::serve(listener, router(state))
        .with_graceful_shutdown(async move {
            shutdown.await;
            let _ = signal_deadline.set(tokio::time::Instant::now() + grace_period);
            signal_gate.shutting_down.store(true, Ordering::SeqCst);
            signal_gate.shutdown.notify_waiters();
            let _ = began.send(());
        })
        .into_future();
    tokio::pin!(server);
    let grace_over = {
        let deadline = deadline.clone();
        async move {
            match (shutdown_began.await, deadline.get()) {
                (Ok(()), Some(&d)) => tokio::time::sleep_until(d).await,
                // The server ended without a shutdown: nothing to time.
                _ => std::future::pending().await,
            }
        }
    };
    tokio::select! {
        served = &mut server => served.map_err(|e| Error::Server(format!("stopped: {e}")))?,
        () = grace_over => {
            // What still runs answers 503 now (its run is cancelled: it
            // stops at its next step or file), and the connections close.
            tracing::warn!(
                seconds = grace_period.as_secs_f64(),
                "requests still in flight after server.shutdown_grace_seconds are cancelled"
            );
            gate.cut.send_replace(true);
            let _ = tokio::time::timeout(CLOSE_WAIT, &mut server).await;
        }
    }
    for follower in followers {
        let _ = tokio::task::spawn_blocking(move || follower.stop()).await;
    }
    // Blocking work holds its permit until it has stopped (a request that
    // timed out, one cancelled above): wait for it, within the grace, so
    // that nothing writes while the store is flushed. Work still running
    // then is cut off with the process; an ingest cut mid-file is repaired
    // by the next one, as after a crash.
    let all = u32::try_from(gate.max_concurrency).unwrap_or(u32::MAX);
    let until = deadline
        .get()
        .copied()
        .unwrap_or_else(|| tokio::time::Instant::now() + grace_period);
    if tokio::time::timeout_at(until, gate.permits.acquire_many(all))
        .await
        .is_err()
    {
        tracing::warn!(
            "work still running at the end of server.shutdown_grace_seconds; flushing anyway"
        );
    }
    // A save already running finishes (saves take turns); the last one
    // comes after the store's flush, which matters more.
    saver.abort();
    tokio::task::spawn_blocking(move || {
        let flushed = handles.iter().try_for_each(Grace::flush);
        save_vector_caches(&handles);
        flushed
    })
    .await
    .map_err(|e| Error::Server(format!("flushing the store failed: {e}")))?
}

/// Saves each knowledge base's vector cache every [`SAVE_EVERY`] (when it
/// changed), for the next start ([`KnowledgeBase::warm_up`]).
///
/// [`KnowledgeBase::warm_up`]: grace::KnowledgeBase::warm_up
async fn save_vector_caches_every(handles: Vec<Grace>) {
    let mut every = tokio::time::interval(SAVE_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    every.tick().await; // the first tick is at once
    loop {
        every.tick().await;
        let handles = handles.clone();
        let _ = tokio::task::spawn_blocking(move || save_vector_caches(&handles)).await;
    }
}

/// A cache that cannot be saved costs the next start's speed, not an
/// answer: a warning.
fn save_vector_caches(handles: &[Grace]) {
    for grace in handles {
        if let Err(e) = grace.knowledge_base().save_vector_cache() {
            tracing::warn!("{e}");
        }
    }
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
