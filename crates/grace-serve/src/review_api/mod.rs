//! The review endpoints (JSON). The caller is whoever its bearer token
//! names ([`Caller`]): a reviewer's own token acts as that reviewer, the
//! admin key (or no key on a keyless loopback server) registers reviewers
//! and reads everything but acts as no reviewer. Errors are
//! `{"error": {"type", "message"}}` with 400 (invalid), 403 (the caller's
//! role may not do it), 404 (not found, or not visible to this caller),
//! 409 (the escalation's state does not allow it) or 500.
//!
//! | method and path | what |
//! | --- | --- |
//! | `GET /v1/review/escalations?status=S&all=true` | escalations this reviewer may see (open ones by default) |
//! | `GET /v1/review/escalations/{id}` | one escalation: question, reason, run (factors, sources), options |
//! | `POST /v1/review/escalations/{id}/claim` | take it |
//! | `POST /v1/review/escalations/{id}/release` | give it back |
//! | `POST /v1/review/escalations/{id}/detach` | take a joined escalation (a near repeat answered with the one it joined) out: it asks something else |
//! | `POST /v1/review/escalations/{id}/answer` | `{"text"}` or `{"option"}`, optional `sources` `[{"source","section"}]`, `confidence`, `promote`; text starting with a replan word ("redo: …") searches again instead and returns the escalation still `claimed` with a new draft |
//! | `POST /v1/review/escalations/{id}/reject` | `{"why"}` |
//! | `POST /v1/review/escalations/{id}/retract` | remove a promoted answer from the knowledge base |
//! | `GET /v1/review/escalations/{id}/log` | the audit log |
//! | `GET /v1/escalations/{id}?wait=SECONDS` | the asker's view: status and resolution (waits up to `wait` for it) |
//! | `GET /v1/review/gaps?days=N&limit=N` | the gap report: unanswered questions grouped by meaning |
//! | `GET /v1/review/me` | who the token names: `{"role", "reviewer"}` |
//! | `GET, POST /v1/review/reviewers` | list; register `{"id","name","description"}` (admin; the answer carries the reviewer's token, once) |
//! | `POST /v1/review/reviewers/{id}/token` | a new token for a reviewer, the old one stops working (admin) |
//! | `GET /v1/review/messages?status=S`, `POST /v1/review/messages` | this reviewer's messages; send `{"recipient"?, "subject", "body"}` |
//! | `POST /v1/review/messages/{id}/read`, `.../archive` | move a message on |
//! | `GET, PUT /v1/review/context/{key}` | read; write `{"value", "allowed"?}` (owner = the reviewer) |
//!
//! The handlers, by who they serve: `escalations` (a reviewer's work on
//! one escalation), `asker` (the asker's view) and `reviewers`
//! (registration, tokens, messages, shared context).

mod asker;
mod escalations;
mod gaps;
mod reviewers;

pub use self::asker::{AskerView, MAX_WAIT_SECONDS};
pub use self::escalations::MAX_LIST_LIMIT;
pub use self::reviewers::{IssuedToken, Me, MessageId, MessageState, Role};

// The handlers, with the `__path_*` types `#[utoipa::path]` generates
// beside each, where `routes` and the OpenAPI document (`openapi.rs`)
// name them.
pub(crate) use self::asker::{__path_asker_view, asker_view};
pub(crate) use self::escalations::{
    __path_answer, __path_claim, __path_detach, __path_list, __path_log, __path_reject,
    __path_release, __path_retract, __path_show, answer, claim, detach, list, log, reject, release,
    retract, show,
};
pub(crate) use self::gaps::{__path_gaps, gaps};
pub(crate) use self::reviewers::{
    __path_archive, __path_get_context, __path_me, __path_messages, __path_put_context,
    __path_read, __path_register, __path_reviewers, __path_rotate, __path_send, archive,
    get_context, me, messages, put_context, read, register, reviewers, rotate, send,
};

use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};

use super::AppState;
use super::error::ApiError;
use super::gate::Caller;
use grace::review::{Escalation, ReviewQueue, Viewer};
use grace::service::Grace;

pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route("/v1/review/escalations", get(list))
        .route("/v1/review/escalations/{id}", get(show))
        .route("/v1/review/escalations/{id}/claim", post(claim))
        .route("/v1/review/escalations/{id}/release", post(release))
        .route("/v1/review/escalations/{id}/detach", post(detach))
        .route("/v1/review/escalations/{id}/answer", post(answer))
        .route("/v1/review/escalations/{id}/reject", post(reject))
        .route("/v1/review/escalations/{id}/retract", post(retract))
        .route("/v1/review/escalations/{id}/log", get(log))
        .route("/v1/escalations/{id}", get(asker_view))
        .route("/v1/review/me", get(me))
        .route("/v1/review/gaps", get(gaps))
        .route("/v1/review/reviewers", get(reviewers).post(register))
        .route("/v1/review/reviewers/{id}/token", post(rotate))
        .route("/v1/review/messages", get(messages).post(send))
        .route("/v1/review/messages/{id}/read", post(read))
        .route("/v1/review/messages/{id}/archive", post(archive))
        .route(
            "/v1/review/context/{key}",
            get(get_context).put(put_context),
        )
}

type ApiResult<T> = std::result::Result<Json<T>, ApiError>;

/// Runs blocking queue work off the async threads.
async fn blocking<T: serde::Serialize + Send + 'static>(
    state: &AppState,
    f: impl FnOnce(&ReviewQueue, &Grace) -> grace::Result<T> + Send + 'static,
) -> ApiResult<T> {
    let grace = state.grace.clone();
    let out = tokio::task::spawn_blocking(move || f(grace.escalations(), &grace))
        .await
        .map_err(|e| ApiError::internal(format!("the request's task failed: {e}")))??;
    Ok(Json(out))
}

/// [`blocking`] for review actions that search or ingest (a redraft, a
/// promotion, a retraction): they take a concurrency permit (429 when none
/// is free) and hold it until the work ends, like an ask.
async fn blocking_with_permit<T: serde::Serialize + Send + 'static>(
    state: &AppState,
    f: impl FnOnce(&ReviewQueue, &Grace) -> grace::Result<T> + Send + 'static,
) -> ApiResult<T> {
    let permit = super::gate::try_permit(&state.gate)?;
    let grace = state.grace.clone();
    let out = super::gate::held(permit, move |_| f(grace.escalations(), &grace)).await?;
    Ok(Json(out))
}

/// What `caller` may see: the admin everything, a reviewer what is
/// public or names them, anyone else what is public.
fn viewer(caller: &Caller) -> Viewer<'_> {
    match caller {
        Caller::Admin => Viewer::Admin,
        Caller::Reviewer(id) => Viewer::Reviewer(id),
        Caller::PrincipalReviewer(p) => Viewer::Reviewer(&p.name),
        Caller::Service | Caller::Principal(_) | Caller::Anyone => Viewer::Anyone,
    }
}

/// `escalations` as `caller` may read them: a reviewer whose id is also a
/// principal's name (`grace auth add-key`) gets nothing of documents that
/// principal may not read, and a count of what was withheld.
pub(super) fn read_by(
    grace: &Grace,
    principals: &grace::auth::Principals,
    caller: &Caller,
    escalations: &mut [Escalation],
) -> grace::Result<()> {
    if caller.reviewer_id().is_some() {
        grace.withhold_for(escalations, &caller.review_scope(principals)?)?;
    }
    Ok(())
}

/// [`read_by`] for one escalation.
pub(super) fn one_read_by(
    grace: &Grace,
    principals: &grace::auth::Principals,
    caller: &Caller,
    mut e: Escalation,
) -> grace::Result<Escalation> {
    read_by(grace, principals, caller, std::slice::from_mut(&mut e))?;
    Ok(e)
}

/// The reviewer acting: only a reviewer's own token names one.
fn acting_reviewer(caller: Caller) -> std::result::Result<String, ApiError> {
    match caller {
        Caller::Reviewer(id) => Ok(id),
        Caller::PrincipalReviewer(p) => Ok(p.name),
        _ => Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            "this acts as a reviewer: send the reviewer's own token (`grace review register` issues it); the admin key acts as no reviewer",
        )),
    }
}

/// Registration and token rotation: the administrator only.
fn admin_only(caller: &Caller) -> std::result::Result<(), ApiError> {
    super::gate::admin_only(
        caller,
        "only the administrator (server.admin_api_key, or `grace review register` on the server's machine) registers reviewers and issues tokens",
    )
}
