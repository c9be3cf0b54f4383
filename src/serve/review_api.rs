//! The review endpoints (JSON). The caller is whoever its bearer token
//! names ([`Caller`]): a reviewer's own token acts as that reviewer, the
//! admin key (or no key on a keyless loopback server) registers reviewers
//! and reads everything but acts as no reviewer. Errors are
//! `{"error": {"type", "message"}}` with 400 (invalid), 403 (the caller's
//! role may not do it), 404 (not found, or not visible to this caller),
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
//! | `GET /v1/review/me` | who the token names: `{"role", "reviewer"}` |
//! | `GET, POST /v1/review/reviewers` | list; register `{"id","name","description"}` (admin; the answer carries the reviewer's token, once) |
//! | `POST /v1/review/reviewers/{id}/token` | a new token for a reviewer, the old one stops working (admin) |
//! | `GET /v1/review/messages?status=S`, `POST /v1/review/messages` | this reviewer's messages; send `{"recipient"?, "subject", "body"}` |
//! | `POST /v1/review/messages/{id}/read`, `.../archive` | move a message on |
//! | `GET, PUT /v1/review/context/{key}` | read; write `{"value", "allowed"?}` (owner = the reviewer) |

use std::time::Duration;

use axum::Extension;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::Value;

use super::AppState;
use super::body::JsonObject;
use super::error::ApiError;
use super::gate::Caller;
use crate::exec::HumanReply;
use crate::review::{
    Access, AuditEntry, ContextValue, Escalation, ListFilter, Message, MessageStatus, Resolution,
    ReviewAnswer, ReviewError, ReviewQueue, Reviewer, Status, Viewer,
};
use crate::service::Grace;
use crate::tools::Citation;

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
        .route("/v1/review/me", get(me))
        .route("/v1/review/reviewers", get(reviewers).post(register))
        .route("/v1/review/reviewers/{id}/token", post(rotate))
        .route("/v1/review/messages", get(messages).post(send))
        .route("/v1/review/messages/{id}/read", post(read))
        .route("/v1/review/messages/{id}/archive", post(archive))
        .route(
            "/v1/review/context/{key}",
            get(get_context).put(put_context),
        )
}

type ApiResult<T> = std::result::Result<Json<T>, ApiError>;

/// Runs blocking queue work off the async threads.
async fn blocking<T: serde::Serialize + Send + 'static>(
    state: &AppState,
    f: impl FnOnce(&ReviewQueue, &Grace) -> crate::error::Result<T> + Send + 'static,
) -> ApiResult<T> {
    let grace = state.grace.clone();
    let out = tokio::task::spawn_blocking(move || f(grace.escalations(), &grace))
        .await
        .map_err(|e| ApiError::internal(format!("the request's task failed: {e}")))??;
    Ok(Json(out))
}

/// [`blocking`] for review actions that search or ingest (a redraft, a
/// promotion, a retraction): they take a concurrency permit (429 when none
/// is free) and hold it until the work ends, like an ask.
async fn blocking_with_permit<T: serde::Serialize + Send + 'static>(
    state: &AppState,
    f: impl FnOnce(&ReviewQueue, &Grace) -> crate::error::Result<T> + Send + 'static,
) -> ApiResult<T> {
    let permit = super::gate::try_permit(&state.gate)?;
    let grace = state.grace.clone();
    let out = super::gate::held(permit, move |_| f(grace.escalations(), &grace)).await?;
    Ok(Json(out))
}

/// The asker's view of an escalation (`GET /v1/escalations/{id}`): no
/// run, reviewer or audit detail.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct AskerView {
    /// The escalation's id.
    pub id: i64,
    /// Where it stands.
    pub status: Status,
    /// The question as asked.
    pub question: String,
    /// How it was settled, once it is.
    pub resolution: Option<crate::review::Resolution>,
}

/// A reviewer's token, shown only this once: at registration (with the
/// reviewer's name and description) and at rotation.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct IssuedToken {
    /// The reviewer's id.
    pub id: String,
    /// The display name (at registration).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// What the reviewer covers (at registration).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The bearer token that names the reviewer.
    pub token: String,
}

/// Who a review token names.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// `server.admin_api_key` (or no key on loopback).
    Admin,
    /// A reviewer's own token.
    Reviewer,
    /// Neither (the gate lets no such caller through).
    None,
}

/// `GET /v1/review/me`.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct Me {
    /// The caller's role.
    pub role: Role,
    /// The reviewer's id, for a reviewer's token.
    pub reviewer: Option<String>,
}

/// A message sent.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct MessageId {
    /// The new message's id.
    pub id: i64,
}

/// A message's state after marking it.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct MessageState {
    /// The message's id.
    pub id: i64,
    /// Its state now.
    pub status: MessageStatus,
}

/// What `caller` may see: the admin everything, a reviewer what is
/// public or names them, anyone else what is public.
fn viewer(caller: &Caller) -> Viewer<'_> {
    match caller {
        Caller::Admin => Viewer::Admin,
        Caller::Reviewer(id) => Viewer::Reviewer(id),
        Caller::Service | Caller::Anyone => Viewer::Anyone,
    }
}

/// The reviewer acting: only a reviewer's own token names one.
fn acting_reviewer(caller: Caller) -> std::result::Result<String, ApiError> {
    match caller {
        Caller::Reviewer(id) => Ok(id),
        _ => Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            "this acts as a reviewer: send the reviewer's own token (`grace review register` issues it); the admin key acts as no reviewer",
        )),
    }
}

/// Registration and token rotation: the administrator only.
fn admin_only(caller: &Caller) -> std::result::Result<(), ApiError> {
    super::gate::admin_only(
        caller,
        "only the administrator (server.admin_api_key, or `grace review register` on the server's machine) registers reviewers and issues tokens",
    )
}

/// Escalations listed per request at most (`limit`).
pub const MAX_LIST_LIMIT: usize = 500;

/// `GET /v1/review/escalations`'s query.
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct ListQuery {
    /// Only this status.
    status: Option<Status>,
    /// Settled ones too (open ones only by default).
    #[serde(default)]
    all: bool,
    /// At most this many (default 100).
    #[param(minimum = 1, maximum = 500)]
    limit: Option<usize>,
    /// Only ids below this one: the next page after a page that ended there.
    before: Option<i64>,
}

#[utoipa::path(get, path = "/v1/review/escalations", operation_id = "listEscalations", params(ListQuery), responses((status = 200, description = "Escalations this caller may see, newest first (open ones by default)", body = [Escalation]), (status = 400, body = super::error::ErrorBody), (status = 401, body = super::error::ErrorBody)), security(("bearer" = [])))]
pub(crate) async fn list(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    Query(q): Query<ListQuery>,
) -> ApiResult<Vec<Escalation>> {
    let status = q.status;
    let limit = q.limit.unwrap_or(100);
    if !(1..=MAX_LIST_LIMIT).contains(&limit) {
        return Err(ApiError::bad_request(format!(
            "limit={limit} must be 1 to {MAX_LIST_LIMIT}"
        )));
    }
    let filter = ListFilter {
        status,
        open_only: status.is_none() && !q.all,
        limit: Some(limit),
        before: q.before,
    };
    blocking(&s, move |queue, _| {
        Ok(queue.list_page(viewer(&caller), &filter)?)
    })
    .await
}

#[utoipa::path(get, path = "/v1/review/escalations/{id}", operation_id = "getEscalation", params(("id" = i64, Path)), responses((status = 200, description = "One escalation: question, reason, run (factors, sources), options", body = Escalation), (status = 401, body = super::error::ErrorBody), (status = 404, body = super::error::ErrorBody)), security(("bearer" = [])))]
pub(crate) async fn show(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<i64>,
) -> ApiResult<Escalation> {
    blocking(&s, move |queue, _| Ok(queue.get(id, viewer(&caller))?)).await
}

#[utoipa::path(post, path = "/v1/review/escalations/{id}/claim", operation_id = "claimEscalation", params(("id" = i64, Path)), responses((status = 200, description = "Claims it for this reviewer", body = Escalation), (status = 400, body = super::error::ErrorBody), (status = 401, body = super::error::ErrorBody), (status = 404, body = super::error::ErrorBody), (status = 409, body = super::error::ErrorBody)), security(("bearer" = [])))]
pub(crate) async fn claim(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<i64>,
) -> ApiResult<Escalation> {
    let who = acting_reviewer(caller)?;
    blocking(&s, move |queue, _| Ok(queue.claim(id, &who)?)).await
}

#[utoipa::path(post, path = "/v1/review/escalations/{id}/release", operation_id = "releaseEscalation", params(("id" = i64, Path)), responses((status = 200, description = "Gives a claim back", body = Escalation), (status = 400, body = super::error::ErrorBody), (status = 401, body = super::error::ErrorBody), (status = 404, body = super::error::ErrorBody), (status = 409, body = super::error::ErrorBody)), security(("bearer" = [])))]
pub(crate) async fn release(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<i64>,
) -> ApiResult<Escalation> {
    let who = acting_reviewer(caller)?;
    blocking(&s, move |queue, _| Ok(queue.release(id, &who)?)).await
}

/// A reviewer's answer: their own words or an offered option, not both.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(untagged)]
pub(crate) enum AnswerBody {
    /// The answer in the reviewer's words ("redo: hint" searches again).
    Text(TextAnswer),
    /// An option the escalation offers (409 for one it does not).
    Option(OptionAnswer),
}

/// An answer in the reviewer's words.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct TextAnswer {
    /// Not blank.
    #[schema(min_length = 1, pattern = r"[^\s\x00-\x1f\x7f-\x9f]")]
    text: String,
    #[serde(default)]
    sources: Vec<SourceBody>,
    /// The reviewer's confidence (default `review.reviewer_confidence`).
    #[schema(minimum = 0.0, maximum = 1.0)]
    confidence: Option<f64>,
    /// Add the question and answer to the knowledge base.
    #[serde(default)]
    promote: bool,
}

/// An offered option, by number.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct OptionAnswer {
    /// 1-based.
    #[schema(minimum = 1, maximum = 1000, value_type = usize)]
    #[serde(deserialize_with = "super::body::whole")]
    option: Option<usize>,
    #[serde(default)]
    sources: Vec<SourceBody>,
    /// The reviewer's confidence (default `review.reviewer_confidence`).
    #[schema(minimum = 0.0, maximum = 1.0)]
    confidence: Option<f64>,
    /// Add the question and answer to the knowledge base.
    #[serde(default)]
    promote: bool,
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SourceBody {
    source: String,
    section: Option<String>,
}

#[utoipa::path(post, path = "/v1/review/escalations/{id}/answer", operation_id = "answerEscalation", params(("id" = i64, Path)), request_body = AnswerBody, responses((status = 200, description = "Answers it (text starting with a replan word such as redo: ... searches again and returns a new draft instead)", body = Escalation), (status = 400, body = super::error::ErrorBody), (status = 401, body = super::error::ErrorBody), (status = 404, body = super::error::ErrorBody), (status = 409, body = super::error::ErrorBody)), security(("bearer" = [])))]
pub(crate) async fn answer(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<i64>,
    JsonObject(body): JsonObject<AnswerBody>,
) -> ApiResult<Escalation> {
    let who = acting_reviewer(caller)?;
    let (reply, sources, confidence, promote) = match body {
        AnswerBody::Text(t) => (HumanReply::Text(t.text), t.sources, t.confidence, t.promote),
        AnswerBody::Option(o) => (
            HumanReply::Option(o.option.unwrap_or(0)),
            o.sources,
            o.confidence,
            o.promote,
        ),
    };
    let answer = ReviewAnswer {
        reply,
        sources: sources
            .into_iter()
            .enumerate()
            .map(|(i, src)| Citation {
                number: i + 1,
                source: Some(src.source),
                section: src.section,
                page: None,
            })
            .collect(),
        confidence,
    };
    let hint = match &answer.reply {
        HumanReply::Text(t) => {
            crate::review::replan::hint(t, &s.grace.config().review.replan_words)
        }
        HumanReply::Option(_) | HumanReply::Skip => None,
    };
    // A redraft searches and a promotion ingests.
    if hint.is_some() || promote {
        return blocking_with_permit(&s, move |queue, grace| {
            if let Some(hint) = hint {
                return grace.redraft_blocking(id, &who, &hint);
            }
            let resolution = queue.answer(id, &who, &answer)?;
            if resolution.outcome == crate::review::Outcome::Answered {
                grace.promote_blocking(id, &who)?;
            }
            Ok(queue.get(id, Viewer::Reviewer(&who))?)
        })
        .await;
    }
    blocking(&s, move |queue, _| {
        queue.answer(id, &who, &answer)?;
        Ok(queue.get(id, Viewer::Reviewer(&who))?)
    })
    .await
}

/// Why the escalation is not answered.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RejectBody {
    /// Not blank; the asker gets it.
    #[schema(min_length = 1, pattern = r"[^\s\x00-\x1f\x7f-\x9f]")]
    why: String,
}

#[utoipa::path(post, path = "/v1/review/escalations/{id}/reject", operation_id = "rejectEscalation", params(("id" = i64, Path)), request_body = RejectBody, responses((status = 200, description = "Rejects it with a reason", body = Resolution), (status = 400, body = super::error::ErrorBody), (status = 401, body = super::error::ErrorBody), (status = 404, body = super::error::ErrorBody), (status = 409, body = super::error::ErrorBody)), security(("bearer" = [])))]
pub(crate) async fn reject(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<i64>,
    JsonObject(body): JsonObject<RejectBody>,
) -> ApiResult<Resolution> {
    let who = acting_reviewer(caller)?;
    blocking(&s, move |queue, _| Ok(queue.reject(id, &who, &body.why)?)).await
}

#[utoipa::path(post, path = "/v1/review/escalations/{id}/retract", operation_id = "retractEscalation", params(("id" = i64, Path)), responses((status = 200, description = "Removes a promoted answer from the knowledge base", body = Escalation), (status = 400, body = super::error::ErrorBody), (status = 401, body = super::error::ErrorBody), (status = 404, body = super::error::ErrorBody), (status = 409, body = super::error::ErrorBody)), security(("bearer" = [])))]
pub(crate) async fn retract(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<i64>,
) -> ApiResult<Escalation> {
    let who = acting_reviewer(caller)?;
    // Retracting rewrites the knowledge base.
    blocking_with_permit(&s, move |queue, grace| {
        // Only a reviewer who may see the escalation may retract it.
        queue.get(id, Viewer::Reviewer(&who))?;
        grace.retract_blocking(id, &who)?;
        Ok(queue.get(id, Viewer::Reviewer(&who))?)
    })
    .await
}

#[utoipa::path(get, path = "/v1/review/escalations/{id}/log", operation_id = "getEscalationLog", params(("id" = i64, Path)), responses((status = 200, description = "The audit log: who did what, when", body = [AuditEntry]), (status = 401, body = super::error::ErrorBody), (status = 404, body = super::error::ErrorBody)), security(("bearer" = [])))]
pub(crate) async fn log(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<i64>,
) -> ApiResult<Vec<AuditEntry>> {
    blocking(&s, move |queue, _| Ok(queue.log(id, viewer(&caller))?)).await
}

/// The asker's view's query.
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct WaitQuery {
    /// Seconds to wait for the escalation to be settled.
    #[param(minimum = 0.0, maximum = 600.0)]
    wait: Option<f64>,
    /// The asker's handle: `review_handle` in the ask's response (404
    /// without it).
    #[param(required = true, value_type = String)]
    handle: Option<String>,
}

#[utoipa::path(get, path = "/v1/escalations/{id}", operation_id = "getEscalationForAsker", params(("id" = i64, Path), WaitQuery), responses((status = 200, description = "The asker's view: status and resolution", body = AskerView), (status = 400, body = super::error::ErrorBody), (status = 401, body = super::error::ErrorBody), (status = 404, body = super::error::ErrorBody)), security(("bearer" = [])))]
pub(crate) async fn asker_view(
    State(s): State<AppState>,
    Path(id): Path<i64>,
    Query(q): Query<WaitQuery>,
) -> ApiResult<AskerView> {
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
    Ok(Json(AskerView {
        id: e.id,
        status: e.status,
        question: e.question,
        resolution: e.resolution,
    }))
}

#[utoipa::path(get, path = "/v1/review/reviewers", operation_id = "listReviewers", responses((status = 200, description = "Registered reviewers", body = [Reviewer]), (status = 401, body = super::error::ErrorBody)), security(("bearer" = [])))]
pub(crate) async fn reviewers(State(s): State<AppState>) -> ApiResult<Vec<Reviewer>> {
    blocking(&s, |queue, _| Ok(queue.reviewers()?)).await
}

/// A reviewer to register.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RegisterBody {
    /// Unique, without spaces.
    #[schema(
        min_length = 1,
        max_length = 64,
        pattern = r"^[^\s\x00-\x1f\x7f-\x9f]+$"
    )]
    id: String,
    /// Display name, not blank.
    #[schema(min_length = 1, max_length = 200, pattern = r"[^\s\x00-\x1f\x7f-\x9f]")]
    name: String,
    /// What the reviewer covers.
    #[serde(default)]
    #[schema(max_length = 2000)]
    description: String,
}

#[utoipa::path(post, path = "/v1/review/reviewers", operation_id = "registerReviewer", request_body = RegisterBody, responses((status = 200, description = "Registers a new reviewer; the answer carries the reviewer's token, shown only this once", body = IssuedToken), (status = 400, body = super::error::ErrorBody), (status = 401, body = super::error::ErrorBody), (status = 403, body = super::error::ErrorBody), (status = 409, body = super::error::ErrorBody)), security(("bearer" = [])))]
pub(crate) async fn register(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    JsonObject(body): JsonObject<RegisterBody>,
) -> ApiResult<IssuedToken> {
    admin_only(&caller)?;
    let r = Reviewer {
        id: body.id,
        name: body.name,
        description: body.description,
    };
    blocking(&s, move |queue, _| {
        queue.register_new_reviewer(&r)?;
        let token = queue.issue_token(&r.id)?;
        Ok(IssuedToken {
            id: r.id,
            name: Some(r.name),
            description: Some(r.description),
            token,
        })
    })
    .await
}

#[utoipa::path(post, path = "/v1/review/reviewers/{id}/token", operation_id = "rotateReviewerToken", params(("id" = String, Path)), responses((status = 200, description = "A new token for the reviewer, shown only this once; the old one stops working", body = IssuedToken), (status = 401, body = super::error::ErrorBody), (status = 403, body = super::error::ErrorBody), (status = 404, body = super::error::ErrorBody)), security(("bearer" = [])))]
pub(crate) async fn rotate(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> ApiResult<IssuedToken> {
    admin_only(&caller)?;
    blocking(&s, move |queue, _| {
        let token = queue.issue_token(&id)?;
        Ok(IssuedToken {
            id,
            name: None,
            description: None,
            token,
        })
    })
    .await
}

#[utoipa::path(get, path = "/v1/review/me", operation_id = "getCurrentReviewer", responses((status = 200, description = "Who the token names: `{\"role\": \"admin\" | \"reviewer\", \"reviewer\"}`", body = Me), (status = 401, body = super::error::ErrorBody)), security(("bearer" = [])))]
pub(crate) async fn me(Extension(caller): Extension<Caller>) -> ApiResult<Me> {
    let (role, reviewer) = match caller {
        Caller::Reviewer(id) => (Role::Reviewer, Some(id)),
        Caller::Admin => (Role::Admin, None),
        // The gate lets no other caller through to the review paths.
        Caller::Service | Caller::Anyone => (Role::None, None),
    };
    Ok(Json(Me { role, reviewer }))
}

/// `GET /v1/review/messages`'s query.
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct MessagesQuery {
    /// Only messages in this state.
    status: Option<MessageStatus>,
}

#[utoipa::path(get, path = "/v1/review/messages", operation_id = "listMessages", params(MessagesQuery), responses((status = 200, description = "This reviewer's messages (direct and broadcast)", body = [Message]), (status = 400, body = super::error::ErrorBody), (status = 401, body = super::error::ErrorBody)), security(("bearer" = [])))]
pub(crate) async fn messages(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    Query(q): Query<MessagesQuery>,
) -> ApiResult<Vec<Message>> {
    let who = acting_reviewer(caller)?;
    blocking(&s, move |queue, _| Ok(queue.messages(&who, q.status)?)).await
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SendBody {
    /// A registered reviewer (404 otherwise); absent: every reviewer.
    #[schema(min_length = 1, pattern = r"^[^\s\x00-\x1f\x7f-\x9f]+$")]
    recipient: Option<String>,
    #[serde(default)]
    subject: String,
    /// Not blank.
    #[schema(min_length = 1, pattern = r"[^\s\x00-\x1f\x7f-\x9f]")]
    body: String,
}

#[utoipa::path(post, path = "/v1/review/messages", operation_id = "sendMessage", request_body = SendBody, responses((status = 200, description = "Sends a message to a reviewer, or to every reviewer without `recipient`", body = MessageId), (status = 400, body = super::error::ErrorBody), (status = 401, body = super::error::ErrorBody), (status = 404, description = "No such recipient", body = super::error::ErrorBody)), security(("bearer" = [])))]
pub(crate) async fn send(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    JsonObject(m): JsonObject<SendBody>,
) -> ApiResult<MessageId> {
    let who = acting_reviewer(caller)?;
    blocking(&s, move |queue, _| {
        let id = queue.send_message(&who, m.recipient.as_deref(), &m.subject, &m.body)?;
        Ok(MessageId { id })
    })
    .await
}

#[utoipa::path(post, path = "/v1/review/messages/{id}/read", operation_id = "markMessageRead", params(("id" = i64, Path)), responses((status = 200, description = "Marks a message read", body = MessageState), (status = 400, body = super::error::ErrorBody), (status = 401, body = super::error::ErrorBody), (status = 404, body = super::error::ErrorBody), (status = 409, description = "The message is past that state", body = super::error::ErrorBody)), security(("bearer" = [])))]
pub(crate) async fn read(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<i64>,
) -> ApiResult<MessageState> {
    let who = acting_reviewer(caller)?;
    blocking(&s, move |queue, _| {
        Ok(MessageState {
            id,
            status: queue.mark_as_read(id, &who)?,
        })
    })
    .await
}

#[utoipa::path(post, path = "/v1/review/messages/{id}/archive", operation_id = "archiveMessage", params(("id" = i64, Path)), responses((status = 200, description = "Archives a message", body = MessageState), (status = 400, body = super::error::ErrorBody), (status = 401, body = super::error::ErrorBody), (status = 404, body = super::error::ErrorBody), (status = 409, description = "The message is past that state", body = super::error::ErrorBody)), security(("bearer" = [])))]
pub(crate) async fn archive(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<i64>,
) -> ApiResult<MessageState> {
    let who = acting_reviewer(caller)?;
    blocking(&s, move |queue, _| {
        Ok(MessageState {
            id,
            status: queue.archive_message(id, &who)?,
        })
    })
    .await
}

#[utoipa::path(get, path = "/v1/review/context/{key}", operation_id = "getContext", params(("key" = String, Path, pattern = r"[^\s\x00-\x1f\x7f-\x9f]", description = "not blank")), responses((status = 200, description = "A shared context value (not found when restricted to others)", body = ContextValue), (status = 400, body = super::error::ErrorBody), (status = 401, body = super::error::ErrorBody), (status = 404, body = super::error::ErrorBody)), security(("bearer" = [])))]
pub(crate) async fn get_context(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(key): Path<String>,
) -> ApiResult<ContextValue> {
    let who = acting_reviewer(caller)?;
    blocking(&s, move |queue, _| Ok(queue.get_context(&key, &who)?)).await
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ContextBody {
    value: Value,
    /// Readers besides the owner (reviewer ids); absent: public.
    #[schema(schema_with = super::body::optional_reviewer_ids)]
    allowed: Option<Vec<String>>,
}

#[utoipa::path(put, path = "/v1/review/context/{key}", operation_id = "putContext", params(("key" = String, Path, pattern = r"[^\s\x00-\x1f\x7f-\x9f]", description = "not blank")), request_body = ContextBody, responses((status = 200, description = "Writes a shared context value owned by this reviewer", body = ContextValue), (status = 400, body = super::error::ErrorBody), (status = 401, body = super::error::ErrorBody), (status = 404, body = super::error::ErrorBody)), security(("bearer" = [])))]
pub(crate) async fn put_context(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(key): Path<String>,
    JsonObject(b): JsonObject<ContextBody>,
) -> ApiResult<ContextValue> {
    let who = acting_reviewer(caller)?;
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
