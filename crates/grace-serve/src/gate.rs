//! What every request passes before a handler: 503 while shutting down,
//! the web-page checks (a loopback `Host` without an API key, a same-origin
//! `Origin` on state-changing requests), bearer-token auth, the concurrency
//! limit (429), the request timeout (504), and a JSON body for every error,
//! including those axum makes itself (a malformed body, an unknown route, a
//! body over the limit). Every response carries the browser security
//! headers (`nosniff`, no framing, no referrer; a CSP on the reviewer page).

use grace::access::{Principal, ReadScope};
use grace::auth::KEY_PREFIX;
use grace::config::Role;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

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

/// Runs a request's blocking work holding its concurrency `permit` until
/// the work really ends, not only until the request is answered: a request
/// that timed out (504) keeps its permit while its work stops, so timed-out
/// requests cannot pile up work beyond `server.max_concurrency`. The flag
/// passed to `f` is set when the request's future is dropped; `f` stops at
/// its next check (an ask between steps, an ingest between files).
pub async fn held<T: Send + 'static>(
    permit: Permit,
    f: impl FnOnce(Arc<AtomicBool>) -> grace::Result<T> + Send + 'static,
) -> Result<T, ApiError> {
    let cancel = Arc::new(AtomicBool::new(false));
    let _on_drop = grace::service::CancelOnDrop(cancel.clone());
    tokio::task::spawn_blocking(move || {
        let _held = permit;
        f(cancel)
    })
    .await
    .map_err(|e| ApiError::internal(format!("the request's task failed: {e}")))?
    .map_err(ApiError::from)
}

/// A permit taken outside the [`limit`] layer (review actions that search
/// or ingest), or 429.
pub fn try_permit(gate: &super::Gate) -> Result<Permit, ApiError> {
    gate.permits
        .clone()
        .try_acquire_owned()
        .map(|p| Permit(Arc::new(p)))
        .map_err(|_| busy(gate.max_concurrency))
}

fn busy(max_concurrency: usize) -> ApiError {
    ApiError::new(
        StatusCode::TOO_MANY_REQUESTS,
        "too_many_requests",
        format!(
            "the server is already serving {max_concurrency} requests (server.max_concurrency); retry shortly"
        ),
    )
}

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

/// The browser security headers, on every response; the two pages also
/// get a content security policy: each runs only the script and style
/// files it is served with (nothing inline), and talks to this server
/// only.
pub async fn security_headers(request: Request, next: Next) -> Response {
    let policy = match request.uri().path() {
        super::review_page::PAGE_PATH => Some(super::review_page::POLICY),
        "/" => Some(super::ask_page::POLICY),
        _ => None,
    };
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
    if let Some(policy) = policy {
        h.insert(
            header::CONTENT_SECURITY_POLICY,
            header::HeaderValue::from_static(policy),
        );
    }
    response
}

/// Which token a path needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    /// `/health`, `/openapi.json`, the two pages and their files: anyone.
    Open,
    /// The review endpoints: a reviewer's own token or the admin key.
    Reviewer,
    /// Everything else: the API key or the admin key.
    Service,
}

fn access(path: &str) -> Access {
    // `/v1/kbs/{kb}/review/…` is a review path whether or not `kb` is
    // served: the same token gets the same answer for both.
    let routed;
    let path = match super::kb_route_parts(path) {
        Some((_, rest)) => {
            routed = format!("/v1/{rest}");
            routed.as_str()
        }
        None => path,
    };
    match path {
        "/health" | "/openapi.json" => Access::Open,
        p if super::ask_page::PATHS.contains(&p) || super::review_page::PATHS.contains(&p) => {
            Access::Open
        }
        p if p.starts_with("/v1/review/") => Access::Reviewer,
        _ => Access::Service,
    }
}

/// Refuses (403, saying `message`) a caller who is not the administrator.
pub fn admin_only(caller: &Caller, message: &'static str) -> Result<(), ApiError> {
    if *caller == Caller::Admin {
        Ok(())
    } else {
        Err(ApiError::new(StatusCode::FORBIDDEN, "forbidden", message))
    }
}

/// Who sent a request, as its bearer token says; the handlers read it
/// from the request's extensions. The token alone names a reviewer: no
/// header or body field can.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caller {
    /// `server.admin_api_key`, or anyone on a server without keys (which
    /// serves loopback only): registers reviewers, reads every escalation,
    /// acts as no reviewer.
    Admin,
    /// A reviewer's own token (`grace review register`).
    Reviewer(String),
    /// A principal (its key or token) holding the review role on the
    /// knowledge base: the reviewer of its name, reading escalations as
    /// that principal.
    PrincipalReviewer(Principal),
    /// `server.api_key`: a service asking, searching, ingesting.
    Service,
    /// A principal's own key (`grace auth add-key`): asks and searches
    /// what its readers open, and nothing else.
    Principal(Principal),
    /// No token, on a path that needs none.
    Anyone,
}

impl Caller {
    /// What this caller may read: a principal what it is a reader of, a
    /// caller without a token what is public, the keys of the service, the
    /// administrator and the reviewers everything.
    pub fn scope(&self) -> ReadScope {
        match self {
            Caller::Admin | Caller::Reviewer(_) | Caller::Service => ReadScope::All,
            Caller::Principal(p) | Caller::PrincipalReviewer(p) => ReadScope::Principal(p.clone()),
            Caller::Anyone => ReadScope::public(),
        }
    }

    /// The reviewer this caller acts as, if any.
    pub fn reviewer_id(&self) -> Option<&str> {
        match self {
            Caller::Reviewer(id) => Some(id),
            Caller::PrincipalReviewer(p) => Some(&p.name),
            _ => None,
        }
    }

    /// What this caller reads of escalations: a principal reviewing, what
    /// it may read; a reviewer's own token, what the principal of the same
    /// name may read when there is one (`grace auth add-key`), else
    /// everything, as reviewers did before principals; anyone else
    /// everything they are shown.
    pub fn review_scope(&self, principals: &grace::auth::Principals) -> grace::Result<ReadScope> {
        match self {
            Caller::PrincipalReviewer(p) => Ok(ReadScope::Principal(p.clone())),
            Caller::Reviewer(id) => Ok(grace::auth::reviewer_scope(principals, id)?),
            _ => Ok(ReadScope::All),
        }
    }
}

/// Refuses (403) a principal's key on what only the service or the
/// administrator may do (ingest, for one).
pub fn not_a_principal(caller: &Caller, what: &'static str) -> Result<(), ApiError> {
    match caller {
        Caller::Principal(_) => Err(ApiError::new(StatusCode::FORBIDDEN, "forbidden", what)),
        _ => Ok(()),
    }
}

/// Refuses (403, saying `what`) a principal who does not hold the admin
/// role on the request's knowledge base (`kbs.NAME.roles.admin`); the
/// service and administrator keys hold it everywhere.
pub fn kb_admin(s: &AppState, caller: &Caller, what: &'static str) -> Result<(), ApiError> {
    match caller {
        Caller::Principal(p) if !s.kbs.grants(&s.kb, Role::Admin, &p.name, &p.groups) => {
            not_a_principal(caller, what)
        }
        _ => Ok(()),
    }
}

/// The answer for a knowledge base that is not served and for one the
/// caller may not use: the same 404, so that existence does not leak.
pub fn kb_not_found(name: &str) -> Response {
    ApiError::from(grace::Error::UnknownKb(name.to_string())).into_response()
}

/// The knowledge base a request names: the `{kb}` of a path
/// `/v1/kbs/{kb}/…` that reached `default`'s routes because no knowledge
/// base of that name is served, else the one whose routes it reached.
fn named_kb<'a>(path: &'a str, s: &'a AppState) -> &'a str {
    super::kb_route_parts(path).map_or(&s.kb, |(kb, _)| kb)
}

/// Lets a request for a knowledge base's routes through only for a caller
/// who may use it: a principal needs the ask role on it (the review role
/// on the review routes, which [`authenticate`] checked); everyone else
/// passed [`authenticate`] with a key that holds every role, or a
/// reviewer's token issued by this knowledge base.
pub async fn kb_role(State(s): State<AppState>, request: Request, next: Next) -> Response {
    let path = request.uri().path();
    let guarded =
        path.starts_with("/v1/") && path != "/v1/kbs" && !path.starts_with(super::KB_PREFIX);
    if let (true, Some(Caller::Principal(p))) = (guarded, request.extensions().get::<Caller>())
        && !s.kbs.grants(&s.kb, Role::Ask, &p.name, &p.groups)
    {
        return kb_not_found(&s.kb);
    }
    next.run(request).await
}

/// The caller a principal's key or token makes: on the review routes its
/// reviewer ([`principal_as_reviewer`]), elsewhere the principal.
async fn principal_caller(
    s: &AppState,
    needed: Access,
    p: Principal,
    path: &str,
) -> Result<Caller, Response> {
    match needed {
        Access::Reviewer => principal_as_reviewer(s, p, path).await,
        _ => Ok(Caller::Principal(p)),
    }
}

/// A principal on the review routes: the reviewer named by its name when
/// it holds the review role on this knowledge base (registered in its
/// queue on first use), else the 404 of a knowledge base it may not use.
async fn principal_as_reviewer(s: &AppState, p: Principal, path: &str) -> Result<Caller, Response> {
    // A name not served (this is `default`'s routes answering for it), or
    // no review role here: nothing to register.
    if super::kb_route_parts(path).is_some()
        || !s.kbs.grants(&s.kb, Role::Review, &p.name, &p.groups)
    {
        return Err(kb_not_found(named_kb(path, s)));
    }
    let queue = s.grace.escalations().clone();
    let reviewer = grace::review::Reviewer {
        id: p.name.clone(),
        name: p.name.clone(),
        description: String::new(),
    };
    match tokio::task::spawn_blocking(move || queue.register_new_reviewer(&reviewer)).await {
        Ok(Ok(()) | Err(grace::review::ReviewError::AlreadyRegistered(_))) => {
            Ok(Caller::PrincipalReviewer(p))
        }
        Ok(Err(e)) => Err(ApiError::from(e).into_response()),
        Err(e) => Err(ApiError::internal(e).into_response()),
    }
}

fn bearer(request: &Request) -> Option<&str> {
    request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
        .map(str::trim)
}

fn unauthorized(message: &'static str) -> Response {
    ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", message).into_response()
}

/// 401 with a reason code of its own (`unknown_key`, …).
fn unauthorized_because(code: &'static str, message: &'static str) -> Response {
    ApiError::new(StatusCode::UNAUTHORIZED, code, message).into_response()
}

/// Works out the [`Caller`] from `Authorization: Bearer <token>` and
/// refuses a request whose token does not open its path (401).
///
/// - Service paths: `server.api_key`, `server.admin_api_key`, a
///   principal's key (`gk_…`) or, with `auth.jwt`, an identity provider's
///   token (a principal too).
/// - Review paths (`/v1/review/…`, also under `/v1/kbs/{kb}/`): a
///   reviewer's token of this knowledge base, a principal holding its
///   review role, or the admin key; the service key does not open them (a
///   service could otherwise read every asker's escalation). A reviewer's
///   token of another knowledge base, and a principal without the role,
///   get the 404 of a knowledge base not served.
/// - Without `server.api_key` (loopback only), a request without a token
///   is the administrator, and a reviewer names itself with its token.
pub async fn authenticate(State(s): State<AppState>, mut request: Request, next: Next) -> Response {
    let gate = &s.gate;
    let needed = access(request.uri().path());
    let open = gate.api_key.is_empty();
    let token = bearer(&request);
    // A principal's key always acts as that principal (on a server without
    // keys too); a key that does not work is refused, never read as no key.
    if needed != Access::Open
        && let Some(token) = token.filter(|t| t.starts_with(KEY_PREFIX))
    {
        let principals = gate.principals.clone();
        let token = token.to_string();
        let principal =
            match tokio::task::spawn_blocking(move || principals.principal_for_key(&token)).await {
                Ok(Ok(Some(p))) => p,
                Ok(Ok(None)) => {
                    return unauthorized_because(
                        "unknown_key",
                        "the key is unknown or revoked (`grace auth list` shows the principals)",
                    );
                }
                // PostgreSQL unreachable: 503, like every store.
                Ok(Err(e)) => return ApiError::from(grace::Error::Auth(e)).into_response(),
                Err(e) => return ApiError::internal(e).into_response(),
            };
        let caller = match principal_caller(&s, needed, principal, request.uri().path()).await {
            Ok(c) => c,
            Err(refused) => return refused,
        };
        request.extensions_mut().insert(caller);
        return next.run(request).await;
    }
    // A JWT is verified as one when tokens are accepted: a token that
    // fails is refused with its reason, never read as no token.
    if needed != Access::Open
        && let (Some(verifier), Some(token)) = (
            gate.jwt.clone(),
            token.filter(|t| grace::auth::jwt::looks_like_jwt(t)),
        )
    {
        let principal = match verifier.verify(token).await {
            Ok(p) => p,
            Err(e) => {
                return ApiError::new(StatusCode::UNAUTHORIZED, e.code(), e.to_string())
                    .into_response();
            }
        };
        let caller = match principal_caller(&s, needed, principal, request.uri().path()).await {
            Ok(c) => c,
            Err(refused) => return refused,
        };
        request.extensions_mut().insert(caller);
        return next.run(request).await;
    }
    let caller = match (needed, token) {
        (Access::Open, _) => Caller::Anyone,
        (_, None) if open => Caller::Admin,
        (Access::Service, _) if open => Caller::Admin,
        (_, None) => {
            return unauthorized("send your token as `Authorization: Bearer <token>`");
        }
        (_, Some(token)) => {
            let eq = |key: &str| {
                !key.is_empty()
                    && grace::durable::constant_time_eq(token.as_bytes(), key.as_bytes())
            };
            if eq(&gate.admin_api_key) {
                Caller::Admin
            } else if needed == Access::Service && eq(&gate.api_key) {
                Caller::Service
            } else if needed == Access::Reviewer {
                let kbs = s.kbs.clone();
                let own = s.kb.clone();
                let token = token.to_string();
                // This knowledge base's reviewer; one of another is told
                // what a name not served would tell it.
                let found = tokio::task::spawn_blocking(move || {
                    let mine = kbs
                        .get(&own)
                        .map(|g| g.escalations().reviewer_for_token(&token));
                    match mine.transpose()?.flatten() {
                        Some(id) => Ok::<_, grace::review::ReviewError>(Some((id, true))),
                        None => {
                            for (_, g) in kbs.handles() {
                                if let Some(id) = g.escalations().reviewer_for_token(&token)? {
                                    return Ok(Some((id, false)));
                                }
                            }
                            Ok(None)
                        }
                    }
                })
                .await;
                match found {
                    Ok(Ok(Some((id, true)))) => Caller::Reviewer(id),
                    Ok(Ok(Some((_, false)))) => {
                        return kb_not_found(named_kb(request.uri().path(), &s));
                    }
                    Ok(Ok(None)) => {
                        return unauthorized(
                            "the review endpoints take a reviewer's own token (`grace review register`) or server.admin_api_key",
                        );
                    }
                    // The review database unreachable: 503, retry.
                    Ok(Err(e)) => return ApiError::from(e).into_response(),
                    Err(e) => return ApiError::internal(e).into_response(),
                }
            } else {
                return unauthorized("the bearer token is not valid for this endpoint");
            }
        }
    };
    request.extensions_mut().insert(caller);
    next.run(request).await
}

/// Takes a permit or answers 429 at once (no queueing: a client that
/// waits should retry after `Retry-After`).
pub async fn limit(State(s): State<AppState>, mut request: Request, next: Next) -> Response {
    let permit = match try_permit(&s.gate) {
        Ok(p) => p,
        Err(e) => return e.into_response(),
    };
    request.extensions_mut().insert(permit);
    next.run(request).await
}

/// Gives up on a request after `server.request_timeout` with 504; the
/// handler's future is dropped, which cancels its run. An escalation
/// wait (`?wait=`) has its own bound and is exempt.
pub async fn timeout(State(s): State<AppState>, request: Request, next: Next) -> Response {
    let exempt = request.uri().path().starts_with("/v1/escalations/")
        && request.uri().query().is_some_and(|q| q.contains("wait="));
    let work = async {
        if exempt {
            Ok(next.run(request).await)
        } else {
            tokio::time::timeout(s.gate.timeout, next.run(request)).await
        }
    };
    let outcome = tokio::select! {
        outcome = work => outcome,
        // A shutdown's grace is over: dropping the handler cancels its run.
        () = s.gate.cut_off() => return cut_off_response(),
    };
    match outcome {
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

/// What a request still running at the end of a shutdown's grace gets.
pub fn cut_off_response() -> Response {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "shutting_down",
        "the server shut down: requests still running at the end of server.shutdown_grace_seconds are cancelled; retry",
    )
    .into_response()
}

/// Largest JSON response rewritten by [`show_sources`].
const MAX_REWRITTEN_BYTES: usize = 256 * 1024 * 1024;

/// Shows sources in every JSON answer of the API as clients may see them: relative
/// to a folder they know, never the server's full path (see
/// [`grace::display`]). Event streams are rewritten event by event where
/// they are made.
pub async fn show_sources(State(s): State<AppState>, request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !is_json {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let bytes = match axum::body::to_bytes(body, MAX_REWRITTEN_BYTES).await {
        Ok(b) => b,
        Err(e) => return ApiError::internal(format!("reading a response: {e}")).into_response(),
    };
    let Ok(mut value) = serde_json::from_slice::<serde_json::Value>(&bytes) else {
        return Response::from_parts(parts, axum::body::Body::from(bytes));
    };
    s.display.rewrite(&mut value);
    let body = serde_json::to_vec(&value).unwrap_or_else(|_| bytes.to_vec());
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, axum::body::Body::from(body))
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
        assert_eq!(access("/"), Access::Open);
        assert_eq!(access("/health"), Access::Open);
        assert_eq!(access("/openapi.json"), Access::Open);
        assert_eq!(access("/review"), Access::Open);
        assert_eq!(access("/assets/ask.js"), Access::Open);
        assert_eq!(access("/assets/other.js"), Access::Service);
        assert_eq!(access("/v1/review/escalations"), Access::Reviewer);
        assert_eq!(access("/v1/ask"), Access::Service);
        assert_eq!(access("/v1/escalations/3"), Access::Service);
        assert_eq!(access("/v1/reviewx"), Access::Service);
    }

    #[test]
    fn tokens_compare_by_content() {
        assert!(grace::durable::constant_time_eq(b"abcdef", b"abcdef"));
        assert!(!grace::durable::constant_time_eq(b"abcdef", b"abcdeg"));
        assert!(!grace::durable::constant_time_eq(b"abc", b"abcdef"));
    }
}
