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

use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{Value, json};

use super::AppState;
use super::error::ApiError;
use crate::Grace;
use crate::exec::HumanReply;
use crate::review::{
    Access, MessageStatus, ReviewAnswer, ReviewError, ReviewQueue, Reviewer, Status, Viewer,
};
use crate::tools::Citation;

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

type ApiResult = std::result::Result<Json<Value>, ApiError>;

/// Runs blocking queue work off the async threads.
async fn blocking<T: serde::Serialize + Send + 'static>(
    state: &AppState,
    f: impl FnOnce(&ReviewQueue, &Grace) -> crate::Result<T> + Send + 'static,
) -> ApiResult {
    let grace = state.grace.clone();
    let out = tokio::task::spawn_blocking(move || f(grace.escalations(), &grace))
        .await
        .map_err(|e| ApiError::internal(format!("the request's task failed: {e}")))??;
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
pub(crate) struct ListQuery {
    status: Option<String>,
    #[serde(default)]
    all: bool,
}

#[utoipa::path(get, path = "/v1/review/escalations", params(("status" = Option<String>, Query, description = "pending, claimed, answered, rejected, expired or cancelled"), ("all" = Option<bool>, Query, description = "settled ones too"), ("x-grace-reviewer" = Option<String>, Header, description = "the reviewer")), responses((status = 200, description = "Escalations this reviewer may see (open ones by default)", body = Object), (status = 400, body = super::openapi::ErrorBody), (status = 401, body = super::openapi::ErrorBody)), security(("bearer" = [])))]
pub(crate) async fn list(
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

#[utoipa::path(get, path = "/v1/review/escalations/{id}", params(("id" = i64, Path), ("x-grace-reviewer" = Option<String>, Header)), responses((status = 200, description = "One escalation: question, reason, run (factors, sources), options", body = Object), (status = 401, body = super::openapi::ErrorBody), (status = 404, body = super::openapi::ErrorBody)), security(("bearer" = [])))]
pub(crate) async fn show(
    State(s): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<i64>,
) -> ApiResult {
    let who = reviewer(&headers);
    blocking(&s, move |queue, _| {
        Ok(queue.get(id, who.as_deref().map_or(Viewer::Anyone, Viewer::Reviewer))?)
    })
    .await
}

#[utoipa::path(post, path = "/v1/review/escalations/{id}/claim", params(("id" = i64, Path), ("x-grace-reviewer" = String, Header)), responses((status = 200, description = "Claims it for this reviewer", body = Object), (status = 400, body = super::openapi::ErrorBody), (status = 401, body = super::openapi::ErrorBody), (status = 404, body = super::openapi::ErrorBody), (status = 409, body = super::openapi::ErrorBody)), security(("bearer" = [])))]
pub(crate) async fn claim(
    State(s): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<i64>,
) -> ApiResult {
    let who = require_reviewer(&headers)?;
    blocking(&s, move |queue, _| Ok(queue.claim(id, &who)?)).await
}

#[utoipa::path(post, path = "/v1/review/escalations/{id}/release", params(("id" = i64, Path), ("x-grace-reviewer" = String, Header)), responses((status = 200, description = "Gives a claim back", body = Object), (status = 400, body = super::openapi::ErrorBody), (status = 401, body = super::openapi::ErrorBody), (status = 404, body = super::openapi::ErrorBody), (status = 409, body = super::openapi::ErrorBody)), security(("bearer" = [])))]
pub(crate) async fn release(
    State(s): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<i64>,
) -> ApiResult {
    let who = require_reviewer(&headers)?;
    blocking(&s, move |queue, _| Ok(queue.release(id, &who)?)).await
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct AnswerBody {
    text: Option<String>,
    option: Option<usize>,
    #[serde(default)]
    sources: Vec<SourceBody>,
    confidence: Option<f64>,
    #[serde(default)]
    promote: bool,
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SourceBody {
    source: String,
    section: Option<String>,
}

#[utoipa::path(post, path = "/v1/review/escalations/{id}/answer", params(("id" = i64, Path), ("x-grace-reviewer" = String, Header)), request_body = AnswerBody, responses((status = 200, description = "Answers it (text starting with a replan word such as redo: ... searches again and returns a new draft instead)", body = Object), (status = 400, body = super::openapi::ErrorBody), (status = 401, body = super::openapi::ErrorBody), (status = 404, body = super::openapi::ErrorBody), (status = 409, body = super::openapi::ErrorBody)), security(("bearer" = [])))]
pub(crate) async fn answer(
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
    blocking(&s, move |queue, grace| {
        if let HumanReply::Text(t) = &answer.reply
            && let Some(hint) = crate::review::replan::hint(t, &grace.config().review.replan_words)
        {
            return grace.redraft_blocking(id, &who, &hint);
        }
        let resolution = queue.answer(id, &who, &answer)?;
        if promote && resolution.outcome == crate::review::Outcome::Answered {
            grace.promote_blocking(id, &who)?;
        }
        Ok(queue.get(id, Viewer::Reviewer(&who))?)
    })
    .await
}

#[derive(Deserialize, utoipa::ToSchema)]
pub(crate) struct RejectBody {
    why: String,
}

#[utoipa::path(post, path = "/v1/review/escalations/{id}/reject", params(("id" = i64, Path), ("x-grace-reviewer" = String, Header)), request_body = RejectBody, responses((status = 200, description = "Rejects it with a reason", body = Object), (status = 400, body = super::openapi::ErrorBody), (status = 401, body = super::openapi::ErrorBody), (status = 404, body = super::openapi::ErrorBody), (status = 409, body = super::openapi::ErrorBody)), security(("bearer" = [])))]
pub(crate) async fn reject(
    State(s): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<i64>,
    body: Option<Json<RejectBody>>,
) -> ApiResult {
    let who = require_reviewer(&headers)?;
    let Json(body) = body.ok_or_else(|| ApiError::bad_request("send a JSON body with `why`"))?;
    blocking(&s, move |queue, _| Ok(queue.reject(id, &who, &body.why)?)).await
}

#[utoipa::path(post, path = "/v1/review/escalations/{id}/retract", params(("id" = i64, Path), ("x-grace-reviewer" = String, Header)), responses((status = 200, description = "Removes a promoted answer from the knowledge base", body = Object), (status = 400, body = super::openapi::ErrorBody), (status = 401, body = super::openapi::ErrorBody), (status = 404, body = super::openapi::ErrorBody), (status = 409, body = super::openapi::ErrorBody)), security(("bearer" = [])))]
pub(crate) async fn retract(
    State(s): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<i64>,
) -> ApiResult {
    let who = require_reviewer(&headers)?;
    blocking(&s, move |queue, grace| {
        // Only a reviewer who may see the escalation may retract it.
        queue.get(id, Viewer::Reviewer(&who))?;
        grace.retract_blocking(id, &who)?;
        Ok(queue.get(id, Viewer::Reviewer(&who))?)
    })
    .await
}

#[utoipa::path(get, path = "/v1/review/escalations/{id}/log", params(("id" = i64, Path), ("x-grace-reviewer" = Option<String>, Header)), responses((status = 200, description = "The audit log: who did what, when", body = Object), (status = 401, body = super::openapi::ErrorBody), (status = 404, body = super::openapi::ErrorBody)), security(("bearer" = [])))]
pub(crate) async fn log(
    State(s): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<i64>,
) -> ApiResult {
    let who = reviewer(&headers);
    blocking(&s, move |queue, _| {
        Ok(queue.log(id, who.as_deref().map_or(Viewer::Anyone, Viewer::Reviewer))?)
    })
    .await
}

#[derive(Deserialize)]
pub(crate) struct WaitQuery {
    /// Seconds to wait for the escalation to be settled.
    wait: Option<f64>,
    /// The asker's handle (`review_handle` in the ask's response).
    handle: Option<String>,
}

#[utoipa::path(get, path = "/v1/escalations/{id}", params(("id" = i64, Path), ("handle" = String, Query, description = "the asker's handle: `review_handle` in the ask's response (404 without it)"), ("wait" = Option<f64>, Query, description = "seconds (0-600) to wait for it to be settled")), responses((status = 200, description = "The asker's view: status and resolution", body = Object), (status = 400, body = super::openapi::ErrorBody), (status = 401, body = super::openapi::ErrorBody), (status = 404, body = super::openapi::ErrorBody)), security(("bearer" = [])))]
pub(crate) async fn asker_view(
    State(s): State<AppState>,
    Path(id): Path<i64>,
    Query(q): Query<WaitQuery>,
) -> ApiResult {
    // Without the asker's handle an escalation reads as missing: ids are a
    // counter, and any client could read any question and its answer.
    s.grace
        .escalations()
        .check_asker_handle(id, q.handle.as_deref().unwrap_or(""))?;
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
            // Bounded: a waiting asker holds one of the waiter permits.
            let Ok(_permit) = s.gate.waiters.clone().try_acquire_owned() else {
                return Err(ApiError::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    "too_many_requests",
                    format!(
                        "{} askers are already waiting ({} per server.max_concurrency); retry shortly",
                        s.gate.max_concurrency * super::WAITERS_PER_PERMIT,
                        super::WAITERS_PER_PERMIT
                    ),
                ));
            };
            let handle = s.grace.escalation(id);
            // Registered before the flag is read, so a shutdown that begins
            // in between still wakes this wait.
            let shutdown = s.gate.shutdown.notified();
            tokio::pin!(shutdown);
            shutdown.as_mut().enable();
            let stopping = s
                .gate
                .shutting_down
                .load(std::sync::atomic::Ordering::SeqCst);
            // `None`: the server is stopping; answer with the state now.
            let settled = if stopping {
                None
            } else {
                tokio::select! {
                    r = handle.settled(timeout) => Some(r),
                    () = &mut shutdown => None,
                }
            };
            match settled {
                Some(Ok(e)) => e,
                // Timed out, or the server is stopping: the state now.
                None | Some(Err(ReviewError::WaitTimedOut { .. })) => handle.current()?,
                Some(Err(other)) => return Err(other.into()),
            }
        }
        None => {
            let grace = s.grace.clone();
            tokio::task::spawn_blocking(move || grace.escalations().get(id, Viewer::Asker))
                .await
                .map_err(ApiError::internal)??
        }
    };
    Ok(Json(json!({
        "id": e.id,
        "status": e.status,
        "question": e.question,
        "resolution": e.resolution,
    })))
}

#[utoipa::path(get, path = "/v1/review/reviewers", responses((status = 200, description = "Registered reviewers", body = Object), (status = 401, body = super::openapi::ErrorBody)), security(("bearer" = [])))]
pub(crate) async fn reviewers(State(s): State<AppState>) -> ApiResult {
    blocking(&s, |queue, _| Ok(queue.reviewers()?)).await
}

#[utoipa::path(post, path = "/v1/review/reviewers", request_body(content = Object, description = "`{\"id\", \"name\", \"description\"}`"), responses((status = 200, description = "Registers (or updates) a reviewer", body = Object), (status = 400, body = super::openapi::ErrorBody), (status = 401, body = super::openapi::ErrorBody)), security(("bearer" = [])))]
pub(crate) async fn register(State(s): State<AppState>, body: Option<Json<Reviewer>>) -> ApiResult {
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
pub(crate) struct MessagesQuery {
    status: Option<MessageStatus>,
}

#[utoipa::path(get, path = "/v1/review/messages", params(("status" = Option<String>, Query, description = "pending, read or archived"), ("x-grace-reviewer" = String, Header)), responses((status = 200, description = "This reviewer's messages (direct and broadcast)", body = Object), (status = 400, body = super::openapi::ErrorBody), (status = 401, body = super::openapi::ErrorBody)), security(("bearer" = [])))]
pub(crate) async fn messages(
    State(s): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<MessagesQuery>,
) -> ApiResult {
    let who = require_reviewer(&headers)?;
    blocking(&s, move |queue, _| Ok(queue.messages(&who, q.status)?)).await
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SendBody {
    recipient: Option<String>,
    #[serde(default)]
    subject: String,
    body: String,
}

#[utoipa::path(post, path = "/v1/review/messages", params(("x-grace-reviewer" = String, Header)), request_body = SendBody, responses((status = 200, description = "Sends a message to a reviewer, or to every reviewer without `recipient`", body = Object), (status = 400, body = super::openapi::ErrorBody), (status = 401, body = super::openapi::ErrorBody)), security(("bearer" = [])))]
pub(crate) async fn send(
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

#[utoipa::path(post, path = "/v1/review/messages/{id}/read", params(("id" = i64, Path), ("x-grace-reviewer" = String, Header)), responses((status = 200, description = "Marks a message read", body = Object), (status = 400, body = super::openapi::ErrorBody), (status = 401, body = super::openapi::ErrorBody), (status = 404, body = super::openapi::ErrorBody)), security(("bearer" = [])))]
pub(crate) async fn read(
    State(s): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<i64>,
) -> ApiResult {
    let who = require_reviewer(&headers)?;
    blocking(&s, move |queue, _| {
        Ok(json!({"id": id, "status": queue.mark_as_read(id, &who)?}))
    })
    .await
}

#[utoipa::path(post, path = "/v1/review/messages/{id}/archive", params(("id" = i64, Path), ("x-grace-reviewer" = String, Header)), responses((status = 200, description = "Archives a message", body = Object), (status = 400, body = super::openapi::ErrorBody), (status = 401, body = super::openapi::ErrorBody), (status = 404, body = super::openapi::ErrorBody)), security(("bearer" = [])))]
pub(crate) async fn archive(
    State(s): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<i64>,
) -> ApiResult {
    let who = require_reviewer(&headers)?;
    blocking(&s, move |queue, _| {
        Ok(json!({"id": id, "status": queue.archive_message(id, &who)?}))
    })
    .await
}

#[utoipa::path(get, path = "/v1/review/context/{key}", params(("key" = String, Path), ("x-grace-reviewer" = String, Header)), responses((status = 200, description = "A shared context value (not found when restricted to others)", body = Object), (status = 400, body = super::openapi::ErrorBody), (status = 401, body = super::openapi::ErrorBody), (status = 404, body = super::openapi::ErrorBody)), security(("bearer" = [])))]
pub(crate) async fn get_context(
    State(s): State<AppState>,
    headers: HeaderMap,
    Path(key): Path<String>,
) -> ApiResult {
    let who = require_reviewer(&headers)?;
    blocking(&s, move |queue, _| Ok(queue.get_context(&key, &who)?)).await
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ContextBody {
    value: Value,
    /// Readers besides the owner; absent: public.
    allowed: Option<Vec<String>>,
}

#[utoipa::path(put, path = "/v1/review/context/{key}", params(("key" = String, Path), ("x-grace-reviewer" = String, Header)), request_body = ContextBody, responses((status = 200, description = "Writes a shared context value owned by this reviewer", body = Object), (status = 400, body = super::openapi::ErrorBody), (status = 401, body = super::openapi::ErrorBody), (status = 404, body = super::openapi::ErrorBody)), security(("bearer" = [])))]
pub(crate) async fn put_context(
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
