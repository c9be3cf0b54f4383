//! The OpenAPI 3.1 document, generated from the handlers' annotations
//! (utoipa) and served at `/openapi.json`.

use axum::Json;
use serde::Serialize;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi, ToSchema};

use super::api;

/// Every error: `{"error": {"type", "message"}}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    /// The error's kind and message.
    pub error: ErrorDetail,
}

/// The error's kind and a message for people.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorDetail {
    /// `invalid_request`, `unauthorized`, `not_found`, `conflict`,
    /// `payload_too_large`, `too_many_requests`, `shutting_down`,
    /// `timeout`, `busy` or `internal`.
    #[serde(rename = "type")]
    pub kind: String,
    /// What went wrong, for people.
    pub message: String,
}

/// The API description.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "GRACE",
        description = "Knowledge-base question answering that knows when it does not know. \
                       Errors are `{\"error\": {\"type\", \"message\"}}`. With `server.api_key` set, \
                       send `Authorization: Bearer <key>`; the review endpoints also take \
                       `server.reviewer_api_key`, and name the reviewer in `X-Grace-Reviewer`."
    ),
    paths(health, api::ask, api::search, api::ingest, api::status, super::review_api::list,
          super::review_api::show, super::review_api::claim, super::review_api::release,
          super::review_api::answer, super::review_api::reject, super::review_api::retract,
          super::review_api::log, super::review_api::asker_view, super::review_api::reviewers,
          super::review_api::register, super::review_api::messages, super::review_api::send,
          super::review_api::read, super::review_api::archive, super::review_api::get_context,
          super::review_api::put_context),
    components(schemas(ErrorBody, ErrorDetail)),
    modifiers(&BearerAuth)
)]
pub struct ApiDoc;

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

/// Liveness: 200 `{"status": "ok"}` while serving, 503 once shutting down.
#[utoipa::path(get, path = "/health",
    responses((status = 200, description = "Serving"), (status = 503, body = ErrorBody)))]
#[allow(dead_code)] // documents super::gate::health, which the router uses
fn health() {}

/// `GET /openapi.json`.
pub async fn document() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_document_lists_every_endpoint() {
        let doc = serde_json::to_value(ApiDoc::openapi()).unwrap();
        let paths = doc["paths"].as_object().unwrap();
        for p in [
            "/health",
            "/v1/ask",
            "/v1/search",
            "/v1/ingest",
            "/v1/status",
            "/v1/review/escalations",
            "/v1/review/escalations/{id}/answer",
            "/v1/escalations/{id}",
            "/v1/review/context/{key}",
        ] {
            assert!(paths.contains_key(p), "{p} missing from {:?}", paths.keys());
        }
        assert_eq!(
            doc["components"]["securitySchemes"]["bearer"]["scheme"],
            "bearer"
        );
    }
}
