//! The service endpoints: ask (JSON or a server-sent event stream),
//! search, ingest (paths on the server or uploaded files), status.
//! The reference is the OpenAPI document at `/openapi.json` (see
//! [`super::openapi`]).

use super::gate::Caller;
use grace::access::ReadScope;
use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::time::Duration;

use axum::Json;
use axum::extract::{Multipart, State};
use axum::http::{HeaderMap, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::AppState;
use super::body::JsonObject;
use super::error::ApiError;
use super::gate::{Permit, held};
use grace::ingest::{IngestOptions, IngestReport};
use grace::store::PayloadFilter;
use grace::{
    search::Passage,
    service::{AskOptions, AskOutcome, RunCounts, RunEvent},
};

/// `POST /v1/ask`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AskBody {
    /// The question: at most `MAX_QUESTION_CHARS` characters, with at
    /// least one character of a word (`text::WORD`).
    #[schema(
        min_length = 1,
        pattern = r"[A-Za-z\u00C0-\u1FFF\u2C00-\u2DFF\u2E80-\u2FFF\u3040-\uD7FF\uF900-\uFDFF\uFE70-\uFEFF\uFF21-\uFF3A\uFF41-\uFF5A\uFF66-\uFFDC]"
    )]
    pub question: String,
    /// Passages retrieved (default `tools.rag_search.limit`).
    #[schema(minimum = 1)]
    #[serde(default, deserialize_with = "super::body::whole")]
    pub limit: Option<usize>,
    /// Queue an escalated question for reviewers (default true).
    pub queue: Option<bool>,
    /// Only these reviewers may see the escalation.
    #[serde(default)]
    #[schema(schema_with = super::body::reviewer_ids)]
    pub reviewers: Vec<String>,
    /// Who asks, shown to reviewers (default `service`): 1 to
    /// `MAX_ASKER_CHARS` characters, not blank.
    #[schema(min_length = 1, pattern = r"[^\s\x00-\x1f\x7f-\x9f]")]
    pub asker: Option<String>,
    /// Answer with a `text/event-stream` of run events instead of JSON
    /// (the same as sending `Accept: text/event-stream`).
    #[serde(default)]
    pub stream: bool,
    /// The conversation this question continues (`POST /v1/sessions`): a
    /// follow-up is read against its earlier turns, and the turn is added.
    #[schema(pattern = r"^ses_[0-9a-f]{32}$")]
    pub session_id: Option<String>,
    /// Put the question to a person whatever GRACE decides (the asker
    /// asked for one, e.g. after a decline); queued like any escalation.
    #[serde(default)]
    pub escalate: bool,
}

impl AskBody {
    /// The ask's options, the server's defaults where the body is silent.
    pub fn options(&self, scope: ReadScope) -> AskOptions {
        let defaults = AskOptions::default();
        AskOptions {
            limit: self.limit,
            queue: self.queue.unwrap_or(defaults.queue),
            reviewers: self.reviewers.clone(),
            asker: self.asker.clone().unwrap_or(defaults.asker),
            session_id: self.session_id.clone(),
            escalate: self.escalate,
            scope,
        }
    }
}

/// Answers a question: the run's report as JSON, or its events as
/// server-sent events (`step_started`, `step_finished`, `recovering`,
/// `escalated`, then `done` with the report or `failed`).
#[utoipa::path(post, path = "/v1/ask", operation_id = "ask", request_body = AskBody,
    responses(
        (status = 200, description = "The outcome (JSON), or a `text/event-stream` of run events",
            content((grace::service::AskOutcome = "application/json"), (StreamEvent = "text/event-stream"))),
        (status = 400, body = super::error::ErrorBody), (status = 401, body = super::error::ErrorBody),
        (status = 404, description = "`session_id` names no live session", body = super::error::ErrorBody),
        (status = 413, body = super::error::ErrorBody), (status = 429, body = super::error::ErrorBody),
        (status = 503, body = super::error::ErrorBody), (status = 504, body = super::error::ErrorBody)),
    security(("bearer" = [])))]
pub async fn ask(
    State(s): State<AppState>,
    axum::Extension(permit): axum::Extension<Permit>,
    axum::Extension(caller): axum::Extension<Caller>,
    headers: HeaderMap,
    body: JsonObject<AskBody>,
) -> Result<Response, ApiError> {
    let JsonObject(body) = body;
    let wants_stream = body.stream
        || headers
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.contains("text/event-stream"));
    let options = body.options(caller.scope());
    if !wants_stream {
        let grace = s.grace.clone();
        let question = body.question;
        let outcome: AskOutcome = held(permit, move |cancel| {
            grace.ask_blocking(&question, &options, cancel, &mut |_| {})
        })
        .await?;
        return Ok(Json(outcome).into_response());
    }
    // A bad ask is a 400 before the stream starts.
    let run = s.grace.ask_stream(body.question, options)?;
    Ok(event_stream(&s, permit, run))
}

/// A run's events as server-sent events, ending after `done` or `failed`,
/// or, past the request timeout or at shutdown, with a `failed` event;
/// dropping the stream (client gone) cancels the run. The stream holds the
/// concurrency permit until it ends.
fn event_stream(s: &AppState, permit: Permit, run: grace::service::RunStream) -> Response {
    let deadline = tokio::time::Instant::now() + s.gate.timeout;
    let gate = s.gate.clone();
    let shown = s.display.clone();
    let events = futures_util::stream::unfold(Some((run, permit)), move |state| {
        let (gate, shown) = (gate.clone(), shown.clone());
        async move {
            let display = &*shown;
            let (mut run, permit) = state?;
            let next = tokio::select! {
                next = tokio::time::timeout_at(deadline, run.next()) => next,
                () = gate.cut_off() => Ok(Some(RunEvent::Failed {
                    error: "the server shut down (server.shutdown_grace_seconds); the run was cancelled"
                        .into(),
                })),
            };
            let event = match next {
                Ok(Some(event)) => event,
                Ok(None) => return None,
                Err(_) => RunEvent::Failed {
                    error: "the request timed out (server.request_timeout); the run was cancelled"
                        .into(),
                },
            };
            let last = matches!(event, RunEvent::Done { .. } | RunEvent::Failed { .. });
            let mut value = serde_json::to_value(&event).unwrap_or_default();
            display.rewrite(&mut value);
            let sse = Event::default()
                .event(event.name())
                .json_data(&value)
                .unwrap_or_else(|e| Event::default().event("failed").data(e.to_string()));
            Some((Ok::<_, Infallible>(sse), (!last).then_some((run, permit))))
        }
    });
    Sse::new(events)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(10)))
        .into_response()
}

/// `POST /v1/runs/{id}/reply`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplyBody {
    /// The asker's reply to the run's `clarification` (an option's text or
    /// free text); null or absent: no reply, and the agent proceeds on its
    /// best assumption, which its answer states.
    pub reply: Option<String>,
    /// Answer with a `text/event-stream` of run events instead of JSON.
    #[serde(default)]
    pub stream: bool,
}

/// Continues a run that ended with `decision: needs_input`, with the
/// asker's reply: the outcome as `/v1/ask` gives it (which may need input
/// again, with a new `run_id`). A run not continued within
/// `agent.reply_timeout_seconds`, or continued already, is 404.
#[utoipa::path(post, path = "/v1/runs/{id}/reply", operation_id = "replyToRun", request_body = ReplyBody,
    params(("id" = String, Path, pattern = r"^run_[0-9a-f]{32}$")),
    responses(
        (status = 200, description = "The outcome (JSON), or a `text/event-stream` of run events",
            content((grace::service::AskOutcome = "application/json"), (StreamEvent = "text/event-stream"))),
        (status = 400, body = super::error::ErrorBody), (status = 401, body = super::error::ErrorBody),
        (status = 404, body = super::error::ErrorBody), (status = 409, body = super::error::ErrorBody),
        (status = 429, body = super::error::ErrorBody), (status = 503, body = super::error::ErrorBody),
        (status = 504, body = super::error::ErrorBody)),
    security(("bearer" = [])))]
pub async fn reply(
    State(s): State<AppState>,
    axum::Extension(permit): axum::Extension<Permit>,
    axum::Extension(caller): axum::Extension<Caller>,
    axum::extract::Path(id): axum::extract::Path<String>,
    headers: HeaderMap,
    body: JsonObject<ReplyBody>,
) -> Result<Response, ApiError> {
    let JsonObject(body) = body;
    let scope = caller.scope();
    let wants_stream = body.stream
        || headers
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.contains("text/event-stream"));
    if !wants_stream {
        let grace = s.grace.clone();
        let outcome: AskOutcome = held(permit, move |cancel| {
            grace.reply_blocking_as(&id, body.reply.as_deref(), &scope, cancel, &mut |_| {})
        })
        .await?;
        return Ok(Json(outcome).into_response());
    }
    Ok(event_stream(
        &s,
        permit,
        s.grace.reply_stream(id, body.reply, scope)?,
    ))
}

/// One event of `/v1/ask`'s stream (`Accept: text/event-stream` or
/// `"stream": true`), for the API description.
#[derive(Debug, ToSchema)]
#[allow(dead_code)] // describes what the stream sends; never built
pub struct StreamEvent {
    /// `step_started`, `step_finished`, `recovering`, `escalated`, `done`
    /// or `failed`.
    pub event: String,
    /// The event as JSON (`done` carries the outcome).
    pub data: String,
}

/// `POST /v1/search`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchBody {
    /// What to look for (not blank).
    #[schema(min_length = 1, pattern = r"[^\s\x00-\x1f\x7f-\x9f]")]
    pub query: String,
    /// Passages returned (default `search.limit`).
    #[schema(minimum = 1)]
    #[serde(default, deserialize_with = "super::body::whole")]
    pub limit: Option<usize>,
    /// Only passages of this source (its path as stored).
    pub source: Option<String>,
}

/// What `/v1/search` returns.
#[derive(Debug, Serialize, ToSchema)]
pub struct SearchResponse {
    /// Best first.
    pub passages: Vec<Passage>,
}

/// Finds the passages that best match a query.
#[utoipa::path(post, path = "/v1/search", operation_id = "search", request_body = SearchBody,
    responses((status = 200, body = SearchResponse),
        (status = 400, body = super::error::ErrorBody), (status = 401, body = super::error::ErrorBody),
        (status = 429, body = super::error::ErrorBody), (status = 503, body = super::error::ErrorBody)),
    security(("bearer" = [])))]
pub async fn search(
    State(s): State<AppState>,
    axum::Extension(permit): axum::Extension<Permit>,
    axum::Extension(caller): axum::Extension<Caller>,
    JsonObject(body): JsonObject<SearchBody>,
) -> Result<Json<SearchResponse>, ApiError> {
    // A client names a source as it was shown to it (relative).
    let filter = body
        .source
        .as_deref()
        .map(|shown| PayloadFilter::source(&s.display.resolve(shown)));
    let grace = s.grace.clone();
    let passages = held(permit, move |_| {
        grace.search_blocking(&body.query, body.limit, filter.as_ref(), &caller.scope())
    })
    .await?;
    Ok(Json(SearchResponse { passages }))
}

/// `POST /v1/ingest` as JSON: files and folders on the server.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct IngestBody {
    /// Files, folders or glob patterns, as the server sees them.
    #[schema(min_items = 1)]
    pub paths: Vec<String>,
    /// Remove chunks of files gone from the given folders.
    #[serde(default)]
    pub prune: bool,
}

/// Adds or updates documents: JSON `{"paths": [...]}` names files on the
/// server, inside `ingest.allowed_roots` only (403 otherwise, and when none
/// is configured); `multipart/form-data` uploads them (each file part is
/// saved in [`crate::config::Config::uploads_dir`] and ingested).
#[utoipa::path(post, path = "/v1/ingest", operation_id = "ingest", request_body(content = IngestBody, description = "JSON, or multipart/form-data with file parts"),
    responses((status = 200, description = "The ingest report", body = grace::ingest::IngestReport),
        (status = 400, body = super::error::ErrorBody), (status = 401, body = super::error::ErrorBody),
        (status = 403, description = "A path outside ingest.allowed_roots or none configured; a foreign Origin or Host", body = super::error::ErrorBody),
        (status = 404, body = super::error::ErrorBody), (status = 413, body = super::error::ErrorBody),
        (status = 429, body = super::error::ErrorBody), (status = 503, body = super::error::ErrorBody),
        (status = 507, description = "The server's disk is full: nothing was written", body = super::error::ErrorBody)),
    security(("bearer" = [])))]
pub async fn ingest(
    State(s): State<AppState>,
    axum::Extension(permit): axum::Extension<Permit>,
    axum::Extension(caller): axum::Extension<Caller>,
    request: axum::extract::Request,
) -> Result<Json<IngestReport>, ApiError> {
    super::gate::kb_admin(
        &s,
        &caller,
        "a principal ingests only into a knowledge base it holds the admin role on (kbs.NAME.roles.admin); ingest with server.api_key or the admin key",
    )?;
    let is_multipart = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("multipart/form-data"));
    let (paths, prune) = if is_multipart {
        let multipart =
            <Multipart as axum::extract::FromRequest<AppState>>::from_request(request, &s)
                .await
                .map_err(|e| {
                    ApiError::new(e.status(), ApiError::kind_of(e.status()), e.body_text())
                })?;
        let dir = s.grace.config().uploads_dir();
        // Files the server wrote itself: read wherever its data folder is.
        let saved = save_uploads(multipart, &dir).await?;
        return ingest_held(&s, permit, saved, IngestOptions::default()).await;
    } else {
        let JsonObject(body) =
            <JsonObject<IngestBody> as axum::extract::FromRequest<AppState>>::from_request(
                request, &s,
            )
            .await?;
        if body.paths.is_empty() {
            return Err(ApiError::bad_request(
                "`paths` must name at least one file or folder",
            ));
        }
        (
            body.paths.into_iter().map(PathBuf::from).collect(),
            body.prune,
        )
    };
    let options = s.grace.remote_ingest_options(prune)?;
    ingest_held(&s, permit, paths, options).await
}

/// Ingests holding the request's permit until the run ends; a request that
/// timed out stops the run at the next file (what was read is committed).
async fn ingest_held(
    s: &AppState,
    permit: Permit,
    paths: Vec<PathBuf>,
    mut options: IngestOptions,
) -> Result<Json<IngestReport>, ApiError> {
    let grace = s.grace.clone();
    let principals = s.gate.principals.clone();
    let report = held(permit, move |cancel| {
        options.cancel = Some(cancel);
        let report = grace.ingest_blocking(&paths, &options, &mut |_| {})?;
        // As `grace ingest` does: a group no principal with a key is in
        // opens nothing (tokens may still carry it).
        if grace.config().auth.jwt.issuer.is_empty() {
            let unknown = principals.unknown_groups(&grace.knowledge_base().reader_groups()?)?;
            if !unknown.is_empty() {
                tracing::warn!(
                    groups = %unknown.join(","),
                    "no principal is in these groups: only the operator reads their documents"
                );
            }
        }
        Ok(report)
    })
    .await?;
    Ok(Json(report))
}

/// Saves every file part of an upload into `dir`; returns their paths.
async fn save_uploads(mut multipart: Multipart, dir: &Path) -> Result<Vec<PathBuf>, ApiError> {
    let mut saved = Vec::new();
    while let Some(field) = multipart
        .next_field()
        .await
        .map_err(|e| ApiError::new(e.status(), ApiError::kind_of(e.status()), e.body_text()))?
    {
        let Some(name) = field.file_name().map(safe_file_name) else {
            continue;
        };
        let name = name.ok_or_else(|| {
            ApiError::bad_request("an uploaded file needs a plain file name such as guide.md")
        })?;
        if saved
            .iter()
            .any(|p: &PathBuf| p.file_name() == Some(std::ffi::OsStr::new(&name)))
        {
            return Err(ApiError::bad_request(format!(
                "two uploaded files are named {name}: name each file once"
            )));
        }
        let bytes = field
            .bytes()
            .await
            .map_err(|e| ApiError::new(e.status(), ApiError::kind_of(e.status()), e.body_text()))?;
        let path = dir.join(&name);
        let (dir, target) = (dir.to_path_buf(), path.clone());
        tokio::task::spawn_blocking(move || -> std::io::Result<()> {
            std::fs::create_dir_all(&dir)?;
            // Written beside under a name no other upload uses: a crash
            // never leaves half a file for the next ingest, and two uploads
            // at once never write into one temporary file (the later rename
            // wins, as a later upload of a file would).
            static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
            let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let tmp = dir.join(format!(
                ".{}.{}-{n}.upload",
                target.file_name().unwrap_or_default().to_string_lossy(),
                std::process::id()
            ));
            grace::durable::replace_file(&target, &tmp, &bytes).map_err(|e| e.source)
        })
        .await
        .map_err(ApiError::internal)?
        .map_err(|e| {
            ApiError::internal(format!("cannot save the upload {}: {e}", path.display()))
        })?;
        saved.push(path);
    }
    if saved.is_empty() {
        return Err(ApiError::bad_request(
            "the upload has no file parts (send files as multipart/form-data with a filename)",
        ));
    }
    Ok(saved)
}

/// The last component of an uploaded file's name, if it is a plain one.
fn safe_file_name(name: &str) -> Option<String> {
    let base = name.rsplit(['/', '\\']).next()?.trim();
    let ok = !base.is_empty()
        && !base.starts_with('.')
        && base
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '.' | '-' | '_' | ' '));
    ok.then(|| base.to_string())
}

/// What `/v1/status` returns.
#[derive(Debug, Serialize, ToSchema)]
pub struct StatusResponse {
    /// The collection, its size and model (as `grace status --json`).
    pub knowledge_base: grace::Status,
    /// Runs in flight, finished and cancelled since the server started.
    pub runs: RunCounts,
    /// Requests doing work now, and the most served at once.
    pub busy: usize,
    /// `server.max_concurrency`: the most requests served at once.
    pub max_concurrency: usize,
    /// GRACE's version (the crate's).
    pub version: String,
    /// Usage of the tools HTTP clients may call (as `GET /v1/tools`, without schemas).
    pub tools: Vec<ToolLine>,
}

/// One tool's usage in `/v1/status`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ToolLine {
    /// The tool's name.
    pub name: String,
    /// Its usage statistics, when kept.
    pub stats: Option<grace::tools::stats::ToolUsage>,
}

/// The collection, the model and the server's load.
#[utoipa::path(get, path = "/v1/status", operation_id = "getStatus",
    responses((status = 200, body = StatusResponse), (status = 401, body = super::error::ErrorBody)),
    security(("bearer" = [])))]
pub async fn status(State(s): State<AppState>) -> Result<Json<StatusResponse>, ApiError> {
    let grace = s.grace.clone();
    let knowledge_base =
        tokio::task::spawn_blocking(move || grace.status().map(grace::Status::for_clients))
            .await
            .map_err(ApiError::internal)??;
    let state = s.clone();
    let tools = tokio::task::spawn_blocking(move || super::tools_api::visible(&state))
        .await
        .map_err(ApiError::internal)?
        .into_iter()
        .map(|t| ToolLine {
            name: t.name,
            stats: t.stats,
        })
        .collect();
    Ok(Json(StatusResponse {
        knowledge_base,
        runs: s.grace.runs(),
        busy: s.gate.max_concurrency - s.gate.permits.available_permits(),
        max_concurrency: s.gate.max_concurrency,
        version: env!("CARGO_PKG_VERSION").to_string(),
        tools,
    }))
}

/// What `/v1/examples` returns.
#[derive(Debug, Serialize, ToSchema)]
pub struct ExamplesResponse {
    /// Questions the knowledge base's own sections answer ("How do I
    /// rotate keys?"), for an asker facing an empty page; none when its
    /// headings make none.
    pub questions: Vec<String>,
}

/// Up to five example questions, from the knowledge base's section headings.
#[utoipa::path(get, path = "/v1/examples", operation_id = "getExamples",
    responses((status = 200, body = ExamplesResponse), (status = 401, body = super::error::ErrorBody)),
    security(("bearer" = [])))]
pub async fn examples(
    State(s): State<AppState>,
    axum::Extension(caller): axum::Extension<Caller>,
) -> Result<Json<ExamplesResponse>, ApiError> {
    let grace = s.grace.clone();
    let questions = tokio::task::spawn_blocking(move || {
        grace.example_questions_blocking(grace::selfcal::examples::MAX_EXAMPLES, &caller.scope())
    })
    .await
    .map_err(ApiError::internal)??;
    Ok(Json(ExamplesResponse { questions }))
}

#[cfg(test)]
mod tests {
    use super::safe_file_name;

    #[test]
    fn upload_names_keep_only_a_plain_last_component() {
        assert_eq!(safe_file_name("guide.md").as_deref(), Some("guide.md"));
        assert_eq!(
            safe_file_name("../../etc/passwd").as_deref(),
            Some("passwd")
        );
        assert_eq!(
            safe_file_name("C:\\docs\\a b.txt").as_deref(),
            Some("a b.txt")
        );
        assert_eq!(safe_file_name(".hidden"), None);
        assert_eq!(safe_file_name("x/"), None);
        assert_eq!(safe_file_name("a;rm.md"), None);
    }
}
