//! Run-time tools over HTTP, for the administrator only
//! (`server.admin_api_key`; the service key gets 403): `POST
//! /v1/tools/runtime` creates a tool or a new version, `GET
//! /v1/tools/runtime` lists them, `DELETE /v1/tools/runtime/{name}`
//! deletes one, `GET /v1/tools/runtime/{name}/history` shows its versions
//! and audit log. Creations are audited as `http`.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{delete, get, post};
use axum::{Extension, Json, Router};

use super::AppState;
use super::body::JsonObject;
use super::error::ApiError;
use super::gate::{Caller, held, try_permit};
use grace::tools::runtime::{
    Actor, Created, History, RuntimeError, RuntimeTools, StoredTool, ToolSpec,
};

pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route("/v1/tools/runtime", post(create).get(list))
        .route("/v1/tools/runtime/{name}", delete(remove))
        .route("/v1/tools/runtime/{name}/history", get(history))
}

/// Run-time tools are the administrator's.
fn admin_only(caller: &Caller) -> std::result::Result<(), ApiError> {
    super::gate::admin_only(
        caller,
        "only the administrator (server.admin_api_key) creates, lists and deletes run-time tools",
    )
}

fn api_error(e: RuntimeError) -> ApiError {
    use grace::tools::runtime::StoreError;
    match e {
        RuntimeError::Refused(_) => ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_request",
            e.to_string(),
        ),
        RuntimeError::NotFound(_) => {
            ApiError::new(StatusCode::NOT_FOUND, "not_found", e.to_string())
        }
        RuntimeError::Disabled => ApiError::new(StatusCode::FORBIDDEN, "forbidden", e.to_string()),
        RuntimeError::Store(StoreError::Full { .. }) => {
            ApiError::new(StatusCode::CONFLICT, "conflict", e.to_string())
        }
        // PostgreSQL unreachable: 503 and retry, as for every store.
        RuntimeError::Store(StoreError::State(state)) => grace::Error::State(state).into(),
        RuntimeError::Store(_) | RuntimeError::Registry(_) => ApiError::internal(e),
    }
}

/// Runs `f` with the run-time tools of the served GRACE (its knowledge
/// base for `grace.search`, its `web_fetch` when enabled), on a blocking
/// thread holding a concurrency permit (verification runs scripts).
async fn with_tools<T: Send + 'static>(
    s: &AppState,
    f: impl FnOnce(&RuntimeTools, &grace::service::Grace) -> Result<T, RuntimeError> + Send + 'static,
) -> Result<T, ApiError> {
    let permit = try_permit(&s.gate)?;
    let grace = s.grace.clone();
    let out = held(permit, move |_| {
        let host = RuntimeTools::host_for(grace.config(), grace.knowledge_base(), grace.registry());
        let tools = RuntimeTools::open(grace.config(), host).map(|t| f(&t, &grace));
        Ok(tools.and_then(|r| r))
    })
    .await?;
    out.map_err(api_error)
}

/// `GET /v1/tools/runtime`.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct RuntimeToolList {
    /// Each live tool at its latest version.
    pub tools: Vec<StoredTool>,
}

/// `DELETE /v1/tools/runtime/{name}`.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct Deleted {
    /// The tool's name (shortened past 60 characters).
    pub deleted: String,
    /// Its last version.
    pub version: u32,
}

/// Creates a run-time tool, or a new version of one: checked, run on its
/// examples, stored; registered as `rt.<name>` when `verified`.
#[utoipa::path(post, path = "/v1/tools/runtime", operation_id = "createRuntimeTool", request_body = ToolSpec,
    responses((status = 201, description = "Stored: the version, its status (`verified` or `failed`), quality, each example's outcome, and whether it is registered", body = Created),
        (status = 401, body = super::error::ErrorBody), (status = 403, body = super::error::ErrorBody),
        (status = 409, body = super::error::ErrorBody), (status = 422, body = super::error::ErrorBody),
        (status = 429, body = super::error::ErrorBody)),
    security(("bearer" = [])))]
pub(crate) async fn create(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    JsonObject(spec): JsonObject<ToolSpec>,
) -> Result<(StatusCode, Json<Created>), ApiError> {
    admin_only(&caller)?;
    let created = with_tools(&s, move |tools, grace| {
        tools.create_in(&grace.registry().registrar(), spec, Actor::Http)
    })
    .await?;
    Ok((StatusCode::CREATED, Json(created)))
}

/// The live run-time tools, each at its latest version.
#[utoipa::path(get, path = "/v1/tools/runtime", operation_id = "listRuntimeTools",
    responses((status = 200, description = "The tools: name, version, status, quality, description, schema, code, examples", body = RuntimeToolList),
        (status = 401, body = super::error::ErrorBody), (status = 403, body = super::error::ErrorBody)),
    security(("bearer" = [])))]
pub(crate) async fn list(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
) -> Result<Json<RuntimeToolList>, ApiError> {
    admin_only(&caller)?;
    let tools = with_tools(&s, |tools, _| tools.list()).await?;
    Ok(Json(RuntimeToolList { tools }))
}

/// Deletes a run-time tool: unregistered, marked deleted, history kept.
#[utoipa::path(delete, path = "/v1/tools/runtime/{name}", operation_id = "deleteRuntimeTool", params(("name" = String, Path)),
    responses((status = 200, description = "The tool deleted and its last version", body = Deleted),
        (status = 401, body = super::error::ErrorBody), (status = 403, body = super::error::ErrorBody),
        (status = 404, body = super::error::ErrorBody)),
    security(("bearer" = [])))]
pub(crate) async fn remove(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
) -> Result<Json<Deleted>, ApiError> {
    admin_only(&caller)?;
    let shown = grace::text::ellipsized(&name, 60);
    let version = with_tools(&s, move |tools, grace| {
        tools.delete(Some(&grace.registry().registrar()), &name, Actor::Http)
    })
    .await?;
    Ok(Json(Deleted {
        deleted: shown,
        version,
    }))
}

/// A run-time tool's versions and audit log (also after deletion).
#[utoipa::path(get, path = "/v1/tools/runtime/{name}/history", operation_id = "getRuntimeToolHistory", params(("name" = String, Path)),
    responses((status = 200, description = "Its versions and audit log", body = History),
        (status = 401, body = super::error::ErrorBody), (status = 403, body = super::error::ErrorBody),
        (status = 404, body = super::error::ErrorBody)),
    security(("bearer" = [])))]
pub(crate) async fn history(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
) -> Result<Json<History>, ApiError> {
    admin_only(&caller)?;
    Ok(Json(
        with_tools(&s, move |tools, _| tools.history(&name)).await?,
    ))
}
