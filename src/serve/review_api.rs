//! The review endpoints (JSON). The reviewer is named by the
//! `X-Grace-Reviewer` header; errors are `{"error": {"type", "message"}}`
//! with 400 (invalid), 404 (not found, or not visible to this reviewer),
//! 409 (the escalation's state does not allow it) or 500.
//!
//! | method and path | what |
//! | --- | --- |
//! | `GET /v1/review/escalations?status=S&all=true` | escalations this reviewer may see (open ones by default) |
//! | `GET /v1/review/escalations/{id}` | one escalation: question, reason, run (factors, sources), options |
//! | `POST /v1/review/escalations/{id}/claim` | take it |
//! | `POST /v1/review/escalations/{id}/release` | give it back |
//! | `POST /v1/review/escalations/{id}/answer` | `{"text"}` or `{"option"}`, optional `sources` `[{"source","section"}]`, `confidence`, `promote`; text starting with a replan word ("redo: …") searches again instead and returns the escalation still `claimed` with a new draft |
//! | `POST /v1/review/escalations/{id}/reject` | `{"why"}` |
//! | `POST /v1/review/escalations/{id}/retract` | remove a promoted answer from the knowledge base |
//! | `GET /v1/review/escalations/{id}/log` | the audit log |
//! | `GET /v1/escalations/{id}?wait=SECONDS` | the asker's view: status and resolution (waits up to `wait` for it) |
//! | `GET, POST /v1/review/reviewers` | list, register `{"id","name","description"}` |
//! | `GET /v1/review/messages?status=S`, `POST /v1/review/messages` | this reviewer's messages; send `{"recipient"?, "subject", "body"}` |
//! | `POST /v1/review/messages/{id}/read`, `.../archive` | move a message on |
//! | `GET, PUT /v1/review/context/{key}` | read; write `{"value", "allowed"?}` (owner = the reviewer) |

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{Value, json};

use super::AppState;
use crate::exec::HumanReply;
use crate::review::{
    Access, MessageStatus, ReviewAnswer, ReviewError, ReviewQueue, Reviewer, Status, Viewer,
};
use crate::tools::Citation;
use crate::{Error, KnowledgeBase, OpenMode};

/// The header naming the reviewer.
pub const REVIEWER_HEADER: &str = "x-grace-reviewer";

pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route("/v1/review/escalations", get(list))
        .route("/v1/review/escalations/{id}", get(show))
        .route("/v1/review/escalations/{id}/claim", post(claim))
        .route("/v1/review/escalations/{id}/release", post(release))
        .route("/v1/review/escalations/{id}/answer", post(answer))
        .route("/v1/review/escalations/{id}/reject", post(reject))
        .route("/v1/review/escalations/{id}/retract", post(retract))
        .route("/v1/review/escalations/{id}/log", get(log))
        .route("/v1/escalations/{id}", get(asker_view))
        .route("/v1/review/reviewers", get(reviewers).post(register))
        .route("/v1/review/messages", get(messages).post(send))
        .route("/v1/review/messages/{id}/read", post(read))
        .route("/v1/review/messages/{id}/archive", post(archive))
        .route(
            "/v1/review/context/{key}",
            get(get_context).put(put_context),
        )
}

/// An error as the API reports it.
pub struct ApiError {
    status: StatusCode,
    kind: &'static str,
    message: String,
}

impl ApiError {
    fn bad_request(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            kind: "invalid_request",
            message: message.into(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({"error": {"type": self.kind, "message": self.message}});
        (self.status, Json(body)).into_response()
    }
}

impl From<Error> for ApiError {
    fn from(e: Error) -> Self {
        let (status, kind) = match &e {
            Error::Review(r) => review_status(r),
            Error::InvalidInput(_) | Error::Config(_) => {
                (StatusCode::BAD_REQUEST, "invalid_request")
            }
            Error::Store(crate::store::StoreError::Busy { .. }) => {
                (StatusCode::SERVICE_UNAVAILABLE, "busy")
            }
            _ => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
        };
        Self {
            status,
            kind,
            message: e.to_string(),
        }
    }
}

impl From<ReviewError> for ApiError {
    fn from(e: ReviewError) -> Self {
        Error::Review(e).into()
    }
}

fn review_status(e: &ReviewError) -> (StatusCode, &'static str) {
    match e {
        ReviewError::NotFound { .. } => (StatusCode::NOT_FOUND, "not_found"),
        ReviewError::Invalid(_) => (StatusCode::BAD_REQUEST, "invalid_request"),
        ReviewError::Conflict { .. } => (StatusCode::CONFLICT, "conflict"),
        ReviewError::WaitTimedOut { .. } => (StatusCode::REQUEST_TIMEOUT, "timeout"),
        _ => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
    }
}

type ApiResult = std::result::Result<Json<Value>, ApiError>;

/// Runs blocking queue work off the async threads.
async fn blocking<T: serde::Serialize + Send + 'static>(
    state: &AppState,
    f: impl FnOnce(&ReviewQueue, &crate::Config) -> crate::Result<T> + Send + 'static,
) -> ApiResult {
    let queue = state.queue.clone();
    let config = state.config.clone();
    let out = tokio::task::spawn_blocking(move || f(&queue, &config))
        .await
        .map_err(|e| ApiError {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            kind: "internal",
            message: format!("the request's task failed: {e}"),
        })??;
    Ok(Json(serde_json::to_value(out).unwrap_or(Value::Null)))
}

fn reviewer(headers: &HeaderMap) -> Option<String> {
    headers
        .get(REVIEWER_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

fn require_reviewer(headers: &HeaderMap) -> std::result::Result<String, ApiError> {
    reviewer(headers).ok_or_else(|| {
        ApiError::bad_request(format!("name the reviewer in the {REVIEWER_HEADER} header"))
    })
}

#[derive(Deserialize)]
struct ListQuery {
    status: Option<String>,
    #[serde(default)]
    all: bool,
}

async fn list(
    State(s): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<ListQuery>,
) -> ApiResult {
    let who = reviewer(&headers);
    let status: Option<Status> = q.status.as_deref().map(str::parse).transpose()?;
    blocking(&s, move |queue, _| {
        let viewer = who.as_deref().map_or(Viewer::Anyone, Viewer::Reviewer);
        let mut list = queue.list(viewer, status)?;
        if status.is_none() && !q.all {
            list.retain(|e| e.status.is_open());
        }
        Ok(list)
    })
    .await
}

async fn show(State(s): State<AppState>, headers: HeaderMap, Path(id): Path<i64>) -> ApiResult {
    let who = reviewer(&headers);
    blocking(&s, move |queue, _| {
        Ok(queue.get(id, who.as_deref().map_or(Viewer::Anyone, Viewer::Reviewer))?)
    })
    .await
}

async fn claim(State(s): State<AppState>, headers: HeaderMap, Path(id): Path<i64>) -> ApiResult {
    let who = require_reviewer(&headers)?;
    blocking(&s, move |queue, _| Ok(queue.claim(id, &who)?)).await
}

async fn release(State(s): State<AppState>, headers: HeaderMap, Path(id): Path<i64>) -> ApiResult {
    let who = require_reviewer(&headers)?;
    blocking(&s, move |queue, _| Ok(queue.release(id, &who)?)).await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AnswerBody {
    text: Option<String>,
    option: Option<usize>,
    #[serde(default)]
    sources: Vec<SourceBody>,
    confidence: Option<f64>,
    #[serde(default)]
    promote: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SourceBody {
    source: String,
    section: Option<String>,
}

async fn answer(
    State(s): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<i64>,
    body: Option<Json<AnswerBody>>,
) -> ApiResult {
    let who = require_reviewer(&headers)?;
    let Json(body) =
        body.ok_or_else(|| ApiError::bad_request("send a JSON body with `text` or `option`"))?;
    let reply = match (body.text, body.option) {
        (Some(t), None) => HumanReply::Text(t),
        (None, Some(n)) => HumanReply::Option(n),
        _ => {
            return Err(ApiError::bad_request(
                "give exactly one of `text` and `option`",
            ));
        }
    };
    let answer = ReviewAnswer {
        reply,
        sources: body
            .sources
            .into_iter()
            .enumerate()
            .map(|(i, src)| Citation {
                number: i + 1,
                source: Some(src.source),
                section: src.section,
            })
            .collect(),
        confidence: body.confidence,
    };
    let promote = body.promote;
    blocking(&s, move |queue, config| {
        if let HumanReply::Text(t) = &answer.reply
            && let Some(hint) = crate::review::replan::hint(t, &config.review.replan_words)
        {
            return crate::review::replan::redraft(config, queue, id, &who, &hint);
        }
        let resolution = queue.answer(id, &who, &answer)?;
        if promote && resolution.outcome == crate::review::Outcome::Answered {
            let kb = KnowledgeBase::open(config.clone(), OpenMode::Create)?;
            crate::review::promote::promote(&kb, queue, id, &who)?;
        }
        Ok(queue.get(id, Viewer::Reviewer(&who))?)
    })
    .await
}

#[derive(Deserialize)]
struct RejectBody {
    why: String,
}

async fn reject(
    State(s): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<i64>,
    body: Option<Json<RejectBody>>,
) -> ApiResult {
    let who = require_reviewer(&headers)?;
    let Json(body) = body.ok_or_else(|| ApiError::bad_request("send a JSON body with `why`"))?;
    blocking(&s, move |queue, _| Ok(queue.reject(id, &who, &body.why)?)).await
}

async fn retract(State(s): State<AppState>, headers: HeaderMap, Path(id): Path<i64>) -> ApiResult {
    let who = require_reviewer(&headers)?;
    blocking(&s, move |queue, config| {
        // Only a reviewer who may see the escalation may retract it.
        queue.get(id, Viewer::Reviewer(&who))?;
        let kb = KnowledgeBase::open(config.clone(), OpenMode::Existing)?;
        crate::review::promote::retract(&kb, queue, id, &who)?;
        Ok(queue.get(id, Viewer::Reviewer(&who))?)
    })
    .await
}

async fn log(State(s): State<AppState>, headers: HeaderMap, Path(id): Path<i64>) -> ApiResult {
    let who = reviewer(&headers);
    blocking(&s, move |queue, _| {
        Ok(queue.log(id, who.as_deref().map_or(Viewer::Anyone, Viewer::Reviewer))?)
    })
    .await
}

#[derive(Deserialize)]
struct WaitQuery {
    /// Seconds to wait for the escalation to be settled.
    wait: Option<f64>,
}

async fn asker_view(
    State(s): State<AppState>,
    Path(id): Path<i64>,
    Query(q): Query<WaitQuery>,
) -> ApiResult {
    let wait = match q.wait {
        None => None,
        Some(w) if w.is_finite() && (0.0..=600.0).contains(&w) => Some(Duration::from_secs_f64(w)),
        Some(w) => {
            return Err(ApiError::bad_request(format!(
                "wait={w} must be 0 to 600 seconds"
            )));
        }
    };
    let e = match wait {
        Some(timeout) => {
            let handle = crate::review::EscalationHandle::new(Arc::clone(&s.queue), id);
            match handle.settled(timeout).await {
                Ok(e) => e,
                Err(ReviewError::WaitTimedOut { .. }) => handle.current()?,
                Err(other) => return Err(other.into()),
            }
        }
        None => {
            let queue = s.queue.clone();
            tokio::task::spawn_blocking(move || queue.get(id, Viewer::Asker))
                .await
                .map_err(|e| ApiError {
                    status: StatusCode::INTERNAL_SERVER_ERROR,
                    kind: "internal",
                    message: e.to_string(),
                })??
        }
    };
    Ok(Json(json!({
        "id": e.id,
        "status": e.status,
        "question": e.question,
        "resolution": e.resolution,
    })))
}

async fn reviewers(State(s): State<AppState>) -> ApiResult {
    blocking(&s, |queue, _| Ok(queue.reviewers()?)).await
}

async fn register(State(s): State<AppState>, body: Option<Json<Reviewer>>) -> ApiResult {
    let Json(r) = body.ok_or_else(|| {
        ApiError::bad_request("send a JSON body with `id`, `name`, `description`")
    })?;
    blocking(&s, move |queue, _| {
        queue.register_reviewer(&r)?;
        Ok(r)
    })
    .await
}

#[derive(Deserialize)]
struct MessagesQuery {
    status: Option<MessageStatus>,
}

async fn messages(
    State(s): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<MessagesQuery>,
) -> ApiResult {
    let who = require_reviewer(&headers)?;
    blocking(&s, move |queue, _| Ok(queue.messages(&who, q.status)?)).await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SendBody {
    recipient: Option<String>,
    #[serde(default)]
    subject: String,
    body: String,
}

async fn send(
    State(s): State<AppState>,
    headers: HeaderMap,
    body: Option<Json<SendBody>>,
) -> ApiResult {
    let who = require_reviewer(&headers)?;
    let Json(m) = body.ok_or_else(|| ApiError::bad_request("send a JSON body with `body`"))?;
    blocking(&s, move |queue, _| {
        let id = queue.send_message(&who, m.recipient.as_deref(), &m.subject, &m.body)?;
        Ok(json!({"id": id}))
    })
    .await
}

async fn read(State(s): State<AppState>, headers: HeaderMap, Path(id): Path<i64>) -> ApiResult {
    let who = require_reviewer(&headers)?;
    blocking(&s, move |queue, _| {
        Ok(json!({"id": id, "status": queue.mark_as_read(id, &who)?}))
    })
    .await
}

async fn archive(State(s): State<AppState>, headers: HeaderMap, Path(id): Path<i64>) -> ApiResult {
    let who = require_reviewer(&headers)?;
    blocking(&s, move |queue, _| {
        Ok(json!({"id": id, "status": queue.archive_message(id, &who)?}))
    })
    .await
}

async fn get_context(
    State(s): State<AppState>,
    headers: HeaderMap,
    Path(key): Path<String>,
) -> ApiResult {
    let who = require_reviewer(&headers)?;
    blocking(&s, move |queue, _| Ok(queue.get_context(&key, &who)?)).await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ContextBody {
    value: Value,
    /// Readers besides the owner; absent: public.
    allowed: Option<Vec<String>>,
}

async fn put_context(
    State(s): State<AppState>,
    headers: HeaderMap,
    Path(key): Path<String>,
    body: Option<Json<ContextBody>>,
) -> ApiResult {
    let who = require_reviewer(&headers)?;
    let Json(b) = body.ok_or_else(|| ApiError::bad_request("send a JSON body with `value`"))?;
    blocking(&s, move |queue, _| {
        let access = match b.allowed {
            None => Access::Public,
            Some(list) => Access::Restricted(list),
        };
        queue.set_context(&key, &b.value, &who, &access)?;
        Ok(queue.get_context(&key, &who)?)
    })
    .await
}
