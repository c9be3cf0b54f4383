//! The tool registry over HTTP: `GET /v1/tools` lists the tools an HTTP
//! client may call (schema, policy, origin, statistics, health), and
//! `POST /v1/tools/{name}/call` calls one under its own timeout and
//! retries. A tool whose `callers` leave out `http` does not exist here.

use axum::Json;
use axum::extract::{Path, State};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::AppState;
use super::body::JsonObject;
use super::error::ApiError;
use super::gate::{Permit, held};
use grace::config::Caller;
use grace::tools::stats::Health;
use grace::tools::{ToolInfo, ToolResult};

/// What `GET /v1/tools` returns.
#[derive(Debug, Serialize, ToSchema)]
pub struct ToolsResponse {
    /// The tools an HTTP client may call, in registration order.
    pub tools: Vec<ToolInfo>,
}

/// The tools an HTTP client may call.
pub(super) fn visible(s: &AppState) -> Vec<ToolInfo> {
    s.grace
        .registry()
        .describe()
        .into_iter()
        .filter(|t| t.callers.contains(&Caller::Http) && !matches!(t.health, Health::Disabled(_)))
        .collect()
}

/// Lists the tools an HTTP client may call: name, description, input
/// schema, origin, timeout and retries, who may see it, usage statistics
/// (calls, failures by kind, p50/p95 latency, last use) and health.
#[utoipa::path(get, path = "/v1/tools", operation_id = "listTools",
    responses((status = 200, body = ToolsResponse), (status = 401, body = super::error::ErrorBody)),
    security(("bearer" = [])))]
pub async fn list(State(s): State<AppState>) -> Result<Json<ToolsResponse>, ApiError> {
    let state = s.clone();
    let tools = tokio::task::spawn_blocking(move || visible(&state))
        .await
        .map_err(ApiError::internal)?;
    Ok(Json(ToolsResponse { tools }))
}

/// `POST /v1/tools/{name}/call`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CallBody {
    /// The tool's input, matching its `input_schema`.
    #[schema(value_type = Object)]
    pub input: serde_json::Map<String, serde_json::Value>,
}

/// Calls a tool under its policy. The result says whether it succeeded
/// (`success`, `error`, `error_kind`, `suggestions`); a tool that is not
/// offered to HTTP clients is 404.
#[utoipa::path(post, path = "/v1/tools/{name}/call", operation_id = "callTool", request_body = CallBody,
    params(("name" = String, Path, pattern = r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$", example = "rag_search")),
    responses((status = 200, description = "The call's result", body = ToolResult),
        (status = 400, body = super::error::ErrorBody), (status = 401, body = super::error::ErrorBody),
        (status = 404, body = super::error::ErrorBody), (status = 429, body = super::error::ErrorBody)),
    security(("bearer" = [])))]
pub async fn call(
    State(s): State<AppState>,
    Path(name): Path<String>,
    axum::Extension(permit): axum::Extension<Permit>,
    axum::Extension(caller): axum::Extension<super::gate::Caller>,
    JsonObject(body): JsonObject<CallBody>,
) -> Result<Json<ToolResult>, ApiError> {
    if !s.grace.registry().visible_to(&name, Caller::Http) {
        return Err(ApiError::new(
            axum::http::StatusCode::NOT_FOUND,
            "not_found",
            format!(
                "no tool `{}` is offered to HTTP clients (GET /v1/tools lists them)",
                grace::text::ellipsized(&name, 80)
            ),
        ));
    }
    let grace = s.grace.clone();
    let input = serde_json::Value::Object(body.input);
    let scope = caller.scope();
    let label = scope.label().to_string();
    let result = held(permit, move |cancel| {
        let result = grace
            .registry()
            .call_until(&name, &input, None, &cancel, &scope);
        grace.audit_tool_call(&label, &name, &result);
        Ok(result)
    })
    .await?;
    Ok(Json(result))
}
