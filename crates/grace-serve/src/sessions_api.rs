//! Conversations over HTTP: `POST /v1/sessions` starts one, `GET
//! /v1/sessions/{id}` reads its turns, `DELETE /v1/sessions/{id}` ends it.
//! A question continues a conversation with `session_id` on `/v1/ask`.
//! A session id is the only key to its turns (`ses_` and 32 random hex
//! digits), behind the service's bearer key like every `/v1` route. A
//! session started with a principal's key is that principal's: any other
//! principal gets 404, as for one that never was.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};

use super::AppState;
use super::error::ApiError;
use super::gate::Caller;
use grace::session::Session;

/// Starts a conversation: its id, creation and expiry (extended by every
/// turn by `sessions.ttl_seconds`).
#[utoipa::path(post, path = "/v1/sessions", operation_id = "createSession",
    responses((status = 201, description = "The new session (no turns yet)", body = Session),
        (status = 401, body = super::error::ErrorBody), (status = 429, body = super::error::ErrorBody)),
    security(("bearer" = [])))]
pub async fn create(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
) -> Result<(StatusCode, Json<Session>), ApiError> {
    let grace = s.grace.clone();
    let session = tokio::task::spawn_blocking(move || grace.create_session_as(&caller.scope()))
        .await
        .map_err(ApiError::internal)??;
    Ok((StatusCode::CREATED, Json(session)))
}

/// A conversation's turns: question, standalone rewrite, answer, sources,
/// decision and confidence.
#[utoipa::path(get, path = "/v1/sessions/{id}", operation_id = "getSession", params(("id" = String, Path, pattern = r"^ses_[0-9a-f]{32}$")),
    responses((status = 200, description = "The session and its turns", body = Session),
        (status = 401, body = super::error::ErrorBody), (status = 404, body = super::error::ErrorBody)),
    security(("bearer" = [])))]
pub async fn show(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<Json<Session>, ApiError> {
    let grace = s.grace.clone();
    let session = tokio::task::spawn_blocking(move || grace.session_as(&id, &caller.scope()))
        .await
        .map_err(ApiError::internal)??;
    Ok(Json(session))
}

/// Ends a conversation; its turns are deleted.
#[utoipa::path(delete, path = "/v1/sessions/{id}", operation_id = "deleteSession", params(("id" = String, Path, pattern = r"^ses_[0-9a-f]{32}$")),
    responses((status = 204, description = "Deleted"),
        (status = 401, body = super::error::ErrorBody), (status = 404, body = super::error::ErrorBody)),
    security(("bearer" = [])))]
pub async fn delete(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let grace = s.grace.clone();
    tokio::task::spawn_blocking(move || grace.delete_session_as(&id, &caller.scope()))
        .await
        .map_err(ApiError::internal)??;
    Ok(StatusCode::NO_CONTENT)
}
