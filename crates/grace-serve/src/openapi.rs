//! The OpenAPI 3.1 document, generated from the handlers' annotations
//! (utoipa) and served at `/openapi.json`.

use axum::Json;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use super::api;
use super::error::{ErrorBody, ErrorDetail};
use super::schema_bounds::SchemaBounds;

/// The API description.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "GRACE",
        description = "Knowledge-base question answering that knows when it does not know. \
                       Errors are `{\"error\": {\"type\", \"message\"}}`. With `server.api_key` set, \
                       send `Authorization: Bearer <key>`. The review endpoints take a reviewer's own \
                       token (`grace review register`), which names the reviewer, a principal's key \
                       that holds the review role, or `server.admin_api_key`. Every `/v1/…` path \
                       below but `/v1/kbs` serves the knowledge base `default`; the same path under \
                       `/v1/kbs/{kb}/…` (`/v1/kbs/hr/ask`) serves knowledge base `kb`. A knowledge \
                       base that is not served and one the caller may not ask answer the same 404 \
                       (`unknown_kb`)."
    ),
    paths(health, api::ask, api::reply, api::search, api::ingest, api::status, api::examples, super::kbs_api::list, super::review_api::list,
          super::review_api::show, super::review_api::claim, super::review_api::release, super::review_api::detach,
          super::review_api::answer, super::review_api::reject, super::review_api::retract,
          super::review_api::log, super::review_api::asker_view, super::review_api::reviewers, super::review_api::me, super::review_api::gaps, super::review_api::rotate,
          super::review_api::register, super::review_api::messages, super::review_api::send,
          super::review_api::read, super::review_api::archive, super::review_api::get_context,
          super::review_api::put_context, super::sessions_api::create, super::sessions_api::show,
          super::sessions_api::delete, super::feedback_api::rate, super::feedback_api::calibration, super::tools_api::list, super::tools_api::call,
          super::runtime_tools_api::create, super::runtime_tools_api::list,
          super::runtime_tools_api::remove, super::runtime_tools_api::history, metrics),
    components(schemas(ErrorBody, ErrorDetail, grace::tools::runtime::ToolSpec, grace::tools::runtime::Example, grace::review::Status, grace::review::MessageStatus)),
    modifiers(&BearerAuth, &GateResponses, &SchemaBounds)
)]
pub struct ApiDoc;

/// The answers the gate (see [`super::gate`]) and axum's extractors can
/// give on any operation, added to each where they apply, so that the
/// document lists every status a route can return: 403 (a foreign `Host`
/// or `Origin`), 500, 503 (shutting down) and 504 (the request timeout)
/// everywhere; 401 where a token is needed; 400 where there are path or
/// query parameters or a body; 413, 415 and 422 where there is a body.
struct GateResponses;

impl Modify for GateResponses {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::{ContentBuilder, Ref, ResponseBuilder};
        let error = |description: &str| {
            ResponseBuilder::new()
                .description(description)
                .content(
                    "application/json",
                    ContentBuilder::new()
                        .schema(Some(Ref::from_schema_name("ErrorBody")))
                        .build(),
                )
                .build()
        };
        for item in openapi.paths.paths.values_mut() {
            for op in [
                &mut item.get,
                &mut item.put,
                &mut item.post,
                &mut item.delete,
                &mut item.patch,
            ]
            .into_iter()
            .flatten()
            {
                let mut add = |code: &str, description: &str| {
                    op.responses
                        .responses
                        .entry(code.to_string())
                        .or_insert_with(|| error(description).into());
                };
                let mut codes = vec![
                    (
                        "403",
                        "A foreign Host (without server.api_key) or Origin, or a role that may not do this",
                    ),
                    (
                        "500",
                        "A failure on the server's side (the log has the details)",
                    ),
                    ("503", "Shutting down"),
                    ("504", "No answer within server.request_timeout"),
                ];
                let secured = op.security.as_ref().is_some_and(|s| !s.is_empty());
                let has_params = op.parameters.as_ref().is_some_and(|p| !p.is_empty());
                let has_body = op.request_body.is_some();
                if secured {
                    codes.push(("401", "No token, or one that does not open this route"));
                }
                if has_params || has_body {
                    codes.push(("400", "An invalid parameter or body"));
                }
                if has_body {
                    codes.extend([
                        ("413", "The body is over server.max_body_bytes"),
                        ("415", "The body is not JSON (Content-Type)"),
                        ("422", "The JSON does not fit the body's shape"),
                    ]);
                }
                for (code, description) in codes {
                    add(code, description);
                }
            }
        }
    }
}

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
#[utoipa::path(get, path = "/health", operation_id = "health",
    responses((status = 200, description = "Serving"), (status = 503, body = ErrorBody)))]
#[allow(dead_code)] // documents super::gate::health, which the router uses
fn health() {}

/// The metrics in Prometheus's text exposition format (version 0.0.4):
/// requests by route and status, question phases' latencies, decisions
/// and their confidence, escalations by status, ingest counts and store
/// retries.
#[utoipa::path(get, path = "/metrics", operation_id = "metrics", security(("bearer" = [])),
    responses(
        (status = 200, description = "Prometheus text format", body = String, content_type = "text/plain"),
        (status = 501, description = "Another metrics recorder owns this process", body = ErrorBody)))]
#[allow(dead_code)] // documents the metrics handler (metrics_api.rs), which the router uses
fn metrics() {}

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
            "/v1/examples",
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

    #[test]
    fn every_operation_has_its_own_id_a_generated_client_can_use_as_a_method() {
        let doc = serde_json::to_value(ApiDoc::openapi()).unwrap();
        let mut ids = Vec::new();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                let Some(id) = op.get("operationId").and_then(|v| v.as_str()) else {
                    panic!("{method} {path} has no operationId");
                };
                // A method name in TypeScript, Python or Rust: camelCase.
                assert!(
                    id.starts_with(|c: char| c.is_ascii_lowercase())
                        && id.chars().all(|c| c.is_ascii_alphanumeric()),
                    "{method} {path}: {id}"
                );
                ids.push(id.to_string());
            }
        }
        let n = ids.len();
        assert!(n >= 34, "{n} operations");
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), n, "repeated operation ids among {ids:?}");
        for id in ["ask", "listEscalations", "claimEscalation", "getSession"] {
            assert!(ids.iter().any(|i| i == id), "{id} missing from {ids:?}");
        }
    }

    /// Where in `value` a schema is an object that says nothing of its
    /// properties (`{"type": "object"}` alone): what a generated client
    /// cannot type.
    fn bare_objects(value: &serde_json::Value, at: &str, out: &mut Vec<String>) {
        let mut stack = vec![(value, at.to_string())];
        while let Some((v, path)) = stack.pop() {
            match v {
                serde_json::Value::Object(m) => {
                    let is_object = m.get("type").is_some_and(|t| t == "object");
                    let described = [
                        "properties",
                        "additionalProperties",
                        "$ref",
                        "allOf",
                        "oneOf",
                        "anyOf",
                    ]
                    .iter()
                    .any(|k| m.contains_key(*k));
                    if is_object && !described {
                        out.push(path.clone());
                    }
                    for (k, child) in m {
                        stack.push((child, format!("{path}/{k}")));
                    }
                }
                serde_json::Value::Array(a) => {
                    for (i, child) in a.iter().enumerate() {
                        stack.push((child, format!("{path}/{i}")));
                    }
                }
                _ => {}
            }
        }
    }

    #[test]
    fn every_success_body_is_described_by_its_type() {
        let doc = serde_json::to_value(ApiDoc::openapi()).unwrap();
        let mut bare = Vec::new();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                for (code, response) in op["responses"].as_object().unwrap() {
                    if code.starts_with('2') {
                        bare_objects(response, &format!("{method} {path} {code}"), &mut bare);
                    }
                }
            }
        }
        bare_objects(&doc["components"]["schemas"], "components", &mut bare);
        // Values that are free-form by nature: a tool's input and output,
        // JSON Schemas, a context value, an agent's tool-call arguments.
        let free_form = [
            "/input",
            "/output",
            "/input_schema",
            "/schema",
            "/value",
            "/arguments",
            "/details",
        ];
        bare.retain(|p| {
            !free_form
                .iter()
                .any(|f| p.ends_with(f) || p.contains(&format!("{f}/")))
        });
        assert!(bare.is_empty(), "bare objects: {bare:#?}");
    }

    #[test]
    fn the_published_patterns_are_the_ones_the_server_checks() {
        let doc = serde_json::to_value(ApiDoc::openapi()).unwrap();
        let schemas = &doc["components"]["schemas"];
        assert_eq!(
            schemas["AskBody"]["properties"]["question"]["pattern"],
            grace::text::WORD
        );
        assert_eq!(
            schemas["SearchBody"]["properties"]["query"]["pattern"],
            grace::text::NOT_BLANK
        );
        assert_eq!(
            schemas["RegisterBody"]["properties"]["id"]["pattern"],
            grace::text::PLAIN_ID
        );
        assert_eq!(
            schemas["AskBody"]["properties"]["reviewers"]["items"]["pattern"],
            grace::text::PLAIN_ID
        );
        // A run-time tool's published name is the check's (its lengths:
        // `schema_bounds`).
        let spec = &schemas["ToolSpec"]["properties"];
        assert_eq!(spec["name"]["pattern"], grace::tools::runtime::NAME_PATTERN);
        // A rating's published fields and text limit are the check's.
        let variants = schemas["FeedbackBody"]["oneOf"].as_array().unwrap();
        assert_eq!(variants.len(), 3, "the schema parsed: {variants:?}");
        assert_eq!(
            variants[2]["properties"]["text"]["maxLength"],
            grace::feedback::MAX_RATING_TEXT_CHARS
        );
        // Every reference resolves.
        let text = doc.to_string();
        let names = doc["components"]["schemas"].as_object().unwrap();
        for piece in text.split("#/components/schemas/").skip(1) {
            let name = piece.split('"').next().unwrap();
            assert!(
                names.contains_key(name),
                "{name} is referenced but not defined"
            );
        }
        for pattern in regex_literals(&text) {
            assert!(
                pattern == grace::text::NOT_BLANK
                    || pattern == grace::text::WORD
                    || pattern == grace::text::PLAIN_ID
                    || pattern == grace::session::SESSION_ID_PATTERN
                    || pattern == grace::session::RUN_ID_PATTERN
                    || pattern == grace::feedback::ANSWER_ID_PATTERN
                    || pattern == grace::tools::TOOL_NAME_PATTERN
                    || pattern == grace::tools::runtime::NAME_PATTERN,
                "an unchecked pattern in the document: {pattern}"
            );
        }
    }

    fn regex_literals(doc: &str) -> Vec<String> {
        let value: serde_json::Value = serde_json::from_str(doc).unwrap();
        let mut out = Vec::new();
        let mut stack = vec![&value];
        while let Some(v) = stack.pop() {
            match v {
                serde_json::Value::Object(m) => {
                    if let Some(serde_json::Value::String(p)) = m.get("pattern") {
                        out.push(p.clone());
                    }
                    stack.extend(m.values());
                }
                serde_json::Value::Array(a) => stack.extend(a),
                _ => {}
            }
        }
        out
    }
}
