//! `GET /v1/kbs`: the knowledge bases the caller may ask. One server serves
//! one knowledge base today, `default`; every caller that passes the gate
//! may ask it.

use axum::{Extension, Json};
use serde::Serialize;
use utoipa::ToSchema;

use super::gate::Caller;
use crate::config::DEFAULT_KB;

/// One knowledge base the caller may ask.
#[derive(Debug, Serialize, ToSchema)]
pub struct KbLine {
    /// Its name.
    #[schema(example = "default")]
    pub name: String,
}

/// What `/v1/kbs` returns.
#[derive(Debug, Serialize, ToSchema)]
pub struct KbsResponse {
    /// The knowledge bases the caller may ask, by name.
    pub kbs: Vec<KbLine>,
}

/// The knowledge bases the caller may ask.
#[utoipa::path(get, path = "/v1/kbs", operation_id = "listKbs",
    responses((status = 200, body = KbsResponse),
        (status = 401, body = super::error::ErrorBody)),
    security(("bearer" = [])))]
pub async fn list(Extension(_caller): Extension<Caller>) -> Json<KbsResponse> {
    Json(KbsResponse {
        kbs: vec![KbLine {
            name: DEFAULT_KB.to_string(),
        }],
    })
}
