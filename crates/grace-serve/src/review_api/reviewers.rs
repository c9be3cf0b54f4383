//! The reviewers themselves: registration and tokens, who a token names,
//! messages between reviewers, and shared context values.

use axum::Extension;
use axum::Json;
use axum::extract::{Path, Query, State};
use serde::Deserialize;
use serde_json::Value;

use super::{ApiResult, acting_reviewer, admin_only, blocking};
use crate::AppState;
use crate::body::JsonObject;
use crate::gate::Caller;
use grace::review::{Access, ContextValue, Message, MessageStatus, Reviewer};

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

#[utoipa::path(get, path = "/v1/review/reviewers", operation_id = "listReviewers", responses((status = 200, description = "Registered reviewers", body = [Reviewer]), (status = 401, body = crate::error::ErrorBody)), security(("bearer" = [])))]
pub(crate) async fn reviewers(State(s): State<AppState>) -> ApiResult<Vec<Reviewer>> {
    blocking(&s, |queue, _| Ok(queue.reviewers()?)).await
}

/// A reviewer to register.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RegisterBody {
    /// Unique, without spaces.
    #[schema(min_length = 1, pattern = r"^[^\s\x00-\x1f\x7f-\x9f]+$")]
    id: String,
    /// Display name, not blank.
    #[schema(min_length = 1, pattern = r"[^\s\x00-\x1f\x7f-\x9f]")]
    name: String,
    /// What the reviewer covers.
    #[serde(default)]
    description: String,
}

#[utoipa::path(post, path = "/v1/review/reviewers", operation_id = "registerReviewer", request_body = RegisterBody, responses((status = 200, description = "Registers a new reviewer; the answer carries the reviewer's token, shown only this once", body = IssuedToken), (status = 400, body = crate::error::ErrorBody), (status = 401, body = crate::error::ErrorBody), (status = 403, body = crate::error::ErrorBody), (status = 409, body = crate::error::ErrorBody)), security(("bearer" = [])))]
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

#[utoipa::path(post, path = "/v1/review/reviewers/{id}/token", operation_id = "rotateReviewerToken", params(("id" = String, Path)), responses((status = 200, description = "A new token for the reviewer, shown only this once; the old one stops working", body = IssuedToken), (status = 401, body = crate::error::ErrorBody), (status = 403, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody)), security(("bearer" = [])))]
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

#[utoipa::path(get, path = "/v1/review/me", operation_id = "getCurrentReviewer", responses((status = 200, description = "Who the token names: `{\"role\": \"admin\" | \"reviewer\", \"reviewer\"}`", body = Me), (status = 401, body = crate::error::ErrorBody)), security(("bearer" = [])))]
pub(crate) async fn me(Extension(caller): Extension<Caller>) -> ApiResult<Me> {
    let (role, reviewer) = match caller {
        Caller::Reviewer(id) => (Role::Reviewer, Some(id)),
        Caller::PrincipalReviewer(p) => (Role::Reviewer, Some(p.name)),
        Caller::Admin => (Role::Admin, None),
        // The gate lets no other caller through to the review paths.
        Caller::Service | Caller::Principal(_) | Caller::Anyone => (Role::None, None),
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

#[utoipa::path(get, path = "/v1/review/messages", operation_id = "listMessages", params(MessagesQuery), responses((status = 200, description = "This reviewer's messages (direct and broadcast)", body = [Message]), (status = 400, body = crate::error::ErrorBody), (status = 401, body = crate::error::ErrorBody)), security(("bearer" = [])))]
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

#[utoipa::path(post, path = "/v1/review/messages", operation_id = "sendMessage", request_body = SendBody, responses((status = 200, description = "Sends a message to a reviewer, or to every reviewer without `recipient`", body = MessageId), (status = 400, body = crate::error::ErrorBody), (status = 401, body = crate::error::ErrorBody), (status = 404, description = "No such recipient", body = crate::error::ErrorBody)), security(("bearer" = [])))]
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

#[utoipa::path(post, path = "/v1/review/messages/{id}/read", operation_id = "markMessageRead", params(("id" = i64, Path)), responses((status = 200, description = "Marks a message read", body = MessageState), (status = 400, body = crate::error::ErrorBody), (status = 401, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody), (status = 409, description = "The message is past that state", body = crate::error::ErrorBody)), security(("bearer" = [])))]
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

#[utoipa::path(post, path = "/v1/review/messages/{id}/archive", operation_id = "archiveMessage", params(("id" = i64, Path)), responses((status = 200, description = "Archives a message", body = MessageState), (status = 400, body = crate::error::ErrorBody), (status = 401, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody), (status = 409, description = "The message is past that state", body = crate::error::ErrorBody)), security(("bearer" = [])))]
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

#[utoipa::path(get, path = "/v1/review/context/{key}", operation_id = "getContext", params(("key" = String, Path, pattern = r"[^\s\x00-\x1f\x7f-\x9f]", description = "not blank")), responses((status = 200, description = "A shared context value (not found when restricted to others)", body = ContextValue), (status = 400, body = crate::error::ErrorBody), (status = 401, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody)), security(("bearer" = [])))]
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
    #[schema(schema_with = crate::body::optional_reviewer_ids)]
    allowed: Option<Vec<String>>,
}

#[utoipa::path(put, path = "/v1/review/context/{key}", operation_id = "putContext", params(("key" = String, Path, pattern = r"[^\s\x00-\x1f\x7f-\x9f]", description = "not blank")), request_body = ContextBody, responses((status = 200, description = "Writes a shared context value owned by this reviewer", body = ContextValue), (status = 400, body = crate::error::ErrorBody), (status = 401, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody)), security(("bearer" = [])))]
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
