//! What every request passes before a handler: 503 while shutting down,
//! the web-page checks (a loopback `Host` without an API key, a same-origin
//! `Origin` on state-changing requests), bearer-token auth, the concurrency
//! limit (429), the request timeout (504), and a JSON body for every error,
//! including those axum makes itself (a malformed body, an unknown route, a
//! body over the limit). Every response carries the browser security
//! headers (`nosniff`, no framing, no referrer; a CSP on the reviewer page).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::Json;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;
use tokio::sync::OwnedSemaphorePermit;

use super::AppState;
use super::error::ApiError;

/// A concurrency permit, held by a request (and by an event stream until
/// it ends).
#[derive(Clone)]
pub struct Permit(#[allow(dead_code)] Arc<OwnedSemaphorePermit>);

/// `GET /health`: 200 while serving, 503 once shutting down.
pub async fn health(State(s): State<AppState>) -> Response {
    if s.gate.shutting_down.load(Ordering::SeqCst) {
        return ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "shutting_down",
            "shutting down",
        )
        .into_response();
    }
    Json(json!({"status": "ok"})).into_response()
}

/// New requests get 503 once shutdown began (those in flight finish).
pub async fn refuse_when_shutting_down(
    State(s): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    if s.gate.shutting_down.load(Ordering::SeqCst) {
        return ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "shutting_down",
            "the server is shutting down; retry against another instance or after restart",
        )
        .into_response();
    }
    next.run(request).await
}

/// A web page the operator visits must not reach the API.
///
/// - Without `server.api_key`, only loopback `Host` names are served
///   (`localhost`, `127.0.0.1`, `[::1]`, any port): a page that rebinds its
///   own DNS name to 127.0.0.1 still sends its own name, and is refused.
/// - A request that changes state (any method but GET, HEAD and OPTIONS)
///   and carries an `Origin` must come from the server's own origin: a
///   cross-site form or `fetch` POST (which needs no preflight) is refused.
///   Clients that are not browsers send no `Origin`.
pub async fn same_origin(State(s): State<AppState>, request: Request, next: Next) -> Response {
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .or_else(|| request.uri().authority().map(|a| a.to_string()));
    if s.gate.api_key.is_empty() && !host.as_deref().is_some_and(is_loopback_host) {
        return ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            "without server.api_key only loopback host names (localhost, 127.0.0.1, [::1]) are served; set server.api_key to serve others",
        )
        .into_response();
    }
    let changes_state = !matches!(
        *request.method(),
        axum::http::Method::GET | axum::http::Method::HEAD | axum::http::Method::OPTIONS
    );
    if changes_state && let Some(origin) = request.headers().get(header::ORIGIN) {
        let same = origin
            .to_str()
            .ok()
            .and_then(|o| o.split_once("://").map(|(_, rest)| rest))
            .is_some_and(|o| host.as_deref().is_some_and(|h| o.eq_ignore_ascii_case(h)));
        if !same {
            return ApiError::new(
                StatusCode::FORBIDDEN,
                "forbidden",
                "cross-origin request refused: the Origin is not this server's",
            )
            .into_response();
        }
    }
    next.run(request).await
}

/// `localhost`, `127.x.y.z` or `[::1]`, with or without a port.
fn is_loopback_host(host: &str) -> bool {
    let name = if let Some(rest) = host.strip_prefix('[') {
        rest.split(']').next().unwrap_or("")
    } else {
        host.rsplit_once(':').map_or(host, |(h, port)| {
            if port.chars().all(|c| c.is_ascii_digit()) {
                h
            } else {
                host
            }
        })
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The browser security headers, on every response; the reviewer page
/// (HTML) also gets a content security policy that allows only its own
/// inline script and style and requests to this server.
pub async fn security_headers(request: Request, next: Next) -> Response {
    let page = request.uri().path() == "/review";
    let mut response = next.run(request).await;
    let h = response.headers_mut();
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        header::HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::X_FRAME_OPTIONS,
        header::HeaderValue::from_static("DENY"),
    );
    h.insert(
        header::REFERRER_POLICY,
        header::HeaderValue::from_static("no-referrer"),
    );
    if page {
        h.insert(
            header::CONTENT_SECURITY_POLICY,
            header::HeaderValue::from_static(
                "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
                 connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; \
                 frame-ancestors 'none'",
            ),
        );
    }
    response
}

/// Which token a path needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    /// `/health`, `/openapi.json`, the reviewer page: anyone.
    Open,
    /// The review endpoints: the reviewer token or the API key.
    Reviewer,
    /// Everything else: the API key.
    Service,
}

fn access(path: &str) -> Access {
    match path {
        "/" | "/health" | "/openapi.json" | "/review" => Access::Open,
        p if p.starts_with("/v1/review/") => Access::Reviewer,
        _ => Access::Service,
    }
}

/// Checks `Authorization: Bearer <token>` when `server.api_key` is set.
pub async fn authenticate(State(s): State<AppState>, request: Request, next: Next) -> Response {
    let gate = &s.gate;
    let needed = access(request.uri().path());
    if gate.api_key.is_empty() || needed == Access::Open {
        return next.run(request).await;
    }
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
        .map(str::trim);
    let Some(token) = presented else {
        return ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "send the API key as `Authorization: Bearer <key>`",
        )
        .into_response();
    };
    let mut accepted = crate::durable::constant_time_eq(token.as_bytes(), gate.api_key.as_bytes());
    if needed == Access::Reviewer && !gate.reviewer_api_key.is_empty() {
        accepted |=
            crate::durable::constant_time_eq(token.as_bytes(), gate.reviewer_api_key.as_bytes());
    }
    if !accepted {
        return ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "the bearer token is not valid for this endpoint",
        )
        .into_response();
    }
    next.run(request).await
}

/// Takes a permit or answers 429 at once (no queueing: a client that
/// waits should retry after `Retry-After`).
pub async fn limit(State(s): State<AppState>, mut request: Request, next: Next) -> Response {
    let Ok(permit) = s.gate.permits.clone().try_acquire_owned() else {
        return ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "too_many_requests",
            format!(
                "the server is already serving {} requests (server.max_concurrency); retry shortly",
                s.gate.max_concurrency
            ),
        )
        .into_response();
    };
    request.extensions_mut().insert(Permit(Arc::new(permit)));
    next.run(request).await
}

/// Gives up on a request after `server.request_timeout` with 504; the
/// handler's future is dropped, which cancels its run. An escalation
/// wait (`?wait=`) has its own bound and is exempt.
pub async fn timeout(State(s): State<AppState>, request: Request, next: Next) -> Response {
    let exempt = request.uri().path().starts_with("/v1/escalations/")
        && request.uri().query().is_some_and(|q| q.contains("wait="));
    if exempt {
        return next.run(request).await;
    }
    match tokio::time::timeout(s.gate.timeout, next.run(request)).await {
        Ok(response) => response,
        Err(_) => ApiError::new(
            StatusCode::GATEWAY_TIMEOUT,
            "timeout",
            format!(
                "no answer within {:.0} s (server.request_timeout); the run was cancelled",
                s.gate.timeout.as_secs_f64()
            ),
        )
        .into_response(),
    }
}

/// Turns every error response without a JSON body (axum's rejections,
/// 404 for an unknown route, 405) into `{"error": {"type", "message"}}`.
pub async fn json_errors(request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return response;
    }
    let (parts, body) = response.into_parts();
    let text = axum::body::to_bytes(body, 64 * 1024)
        .await
        .map(|b| String::from_utf8_lossy(&b).trim().to_string())
        .unwrap_or_default();
    let message = if text.is_empty() {
        status
            .canonical_reason()
            .unwrap_or("error")
            .to_ascii_lowercase()
    } else {
        text
    };
    let mut fixed = ApiError::new(status, ApiError::kind_of(status), message).into_response();
    // Keep headers such as Allow (405) and Retry-After.
    for (name, value) in parts.headers.iter() {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            fixed.headers_mut().insert(name.clone(), value.clone());
        }
    }
    fixed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_need_the_right_token() {
        assert_eq!(access("/health"), Access::Open);
        assert_eq!(access("/openapi.json"), Access::Open);
        assert_eq!(access("/review"), Access::Open);
        assert_eq!(access("/v1/review/escalations"), Access::Reviewer);
        assert_eq!(access("/v1/ask"), Access::Service);
        assert_eq!(access("/v1/escalations/3"), Access::Service);
        assert_eq!(access("/v1/reviewx"), Access::Service);
    }

    #[test]
    fn tokens_compare_by_content() {
        assert!(crate::durable::constant_time_eq(b"abcdef", b"abcdef"));
        assert!(!crate::durable::constant_time_eq(b"abcdef", b"abcdeg"));
        assert!(!crate::durable::constant_time_eq(b"abc", b"abcdef"));
    }
}
