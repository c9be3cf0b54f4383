//! `GET /v1/kbs`: the knowledge bases the caller may ask, and the 404 of
//! `/v1/kbs/{kb}/…` for a name that is not served (the same answer as for
//! a knowledge base the caller may not ask: see [`super::gate::kb_role`]).

use axum::extract::{Path, State};
use axum::response::Response;
use axum::{Extension, Json};
use serde::Serialize;
use utoipa::ToSchema;

use super::AppState;
use super::gate::Caller;
use grace::config::Role;

/// One knowledge base the caller may ask.
#[derive(Debug, Serialize, ToSchema)]
pub struct KbLine {
    /// Its name: its routes are `/v1/kbs/{name}/…` (and, for `default`,
    /// also `/v1/…`).
    #[schema(example = "default")]
    pub name: String,
    /// Whether the caller reviews its escalations.
    pub review: bool,
}

/// What `/v1/kbs` returns.
#[derive(Debug, Serialize, ToSchema)]
pub struct KbsResponse {
    /// The knowledge bases the caller may ask, `default` first.
    pub kbs: Vec<KbLine>,
}

/// The knowledge bases the caller may ask.
#[utoipa::path(get, path = "/v1/kbs", operation_id = "listKbs",
    responses((status = 200, body = KbsResponse),
        (status = 401, body = super::error::ErrorBody)),
    security(("bearer" = [])))]
pub async fn list(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
) -> Json<KbsResponse> {
    let kbs = s
        .kbs
        .names()
        .filter_map(|name| {
            let (ask, review) = match &caller {
                Caller::Principal(p) => (
                    s.kbs.grants(name, Role::Ask, &p.name, &p.groups),
                    s.kbs.grants(name, Role::Review, &p.name, &p.groups),
                ),
                Caller::Admin => (true, true),
                _ => (true, false),
            };
            ask.then(|| KbLine {
                name: name.to_string(),
                review,
            })
        })
        .collect();
    Json(KbsResponse { kbs })
}

/// `/v1/kbs/{kb}/…` for a knowledge base that is not served: 404, once
/// the caller's token has been checked.
pub async fn not_served(Path((kb, _rest)): Path<(String, String)>) -> Response {
    super::gate::kb_not_found(&kb)
}
