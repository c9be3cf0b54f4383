//! The asker's view of an escalation (`GET /v1/escalations/{id}`): its
//! status and resolution, waiting for them on request.

use std::time::Duration;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use serde::Deserialize;

use super::ApiResult;
use crate::AppState;
use crate::error::ApiError;
use grace::review::{ReviewError, Status, Viewer};

/// The asker's view of an escalation (`GET /v1/escalations/{id}`): no
/// run, reviewer or audit detail.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct AskerView {
    /// The escalation's id.
    pub id: i64,
    /// Where it stands.
    pub status: Status,
    /// The question as asked.
    pub question: String,
    /// How it was settled, once it is.
    pub resolution: Option<grace::review::Resolution>,
}

/// The longest an asker's view may wait for the escalation to be settled
/// (`wait`, seconds).
pub const MAX_WAIT_SECONDS: usize = 600;

/// The asker's view's query.
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct WaitQuery {
    /// Seconds to wait for the escalation to be settled.
    #[param(minimum = 0.0)]
    wait: Option<f64>,
    /// The asker's handle: `review_handle` in the ask's response (404
    /// without it).
    #[param(required = true, value_type = String)]
    handle: Option<String>,
}

#[utoipa::path(get, path = "/v1/escalations/{id}", operation_id = "getEscalationForAsker", params(("id" = i64, Path), WaitQuery), responses((status = 200, description = "The asker's view: status and resolution", body = AskerView), (status = 400, body = crate::error::ErrorBody), (status = 401, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody)), security(("bearer" = [])))]
pub(crate) async fn asker_view(
    State(s): State<AppState>,
    Path(id): Path<i64>,
    Query(q): Query<WaitQuery>,
) -> ApiResult<AskerView> {
    // Without the asker's handle an escalation reads as missing: ids are a
    // counter, and any client could read any question and its answer.
    s.grace
        .escalations()
        .check_asker_handle(id, q.handle.as_deref().unwrap_or(""))?;
    let wait = match q.wait {
        None => None,
        Some(w) if w.is_finite() && (0.0..=MAX_WAIT_SECONDS as f64).contains(&w) => {
            Some(Duration::from_secs_f64(w))
        }
        Some(w) => {
            return Err(ApiError::bad_request(format!(
                "wait={w} must be 0 to {MAX_WAIT_SECONDS} seconds"
            )));
        }
    };
    let e = match wait {
        Some(timeout) => {
            // Bounded: a waiting asker holds one of the waiter permits.
            let Ok(_permit) = s.gate.waiters.clone().try_acquire_owned() else {
                return Err(ApiError::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    "too_many_requests",
                    format!(
                        "{} askers are already waiting ({} per server.max_concurrency); retry shortly",
                        s.gate.max_concurrency * crate::WAITERS_PER_PERMIT,
                        crate::WAITERS_PER_PERMIT
                    ),
                ));
            };
            let handle = s.grace.escalation(id);
            // Registered before the flag is read, so a shutdown that begins
            // in between still wakes this wait.
            let shutdown = s.gate.shutdown.notified();
            tokio::pin!(shutdown);
            shutdown.as_mut().enable();
            let stopping = s
                .gate
                .shutting_down
                .load(std::sync::atomic::Ordering::SeqCst);
            // `None`: the server is stopping; answer with the state now.
            let settled = if stopping {
                None
            } else {
                tokio::select! {
                    r = handle.settled(timeout) => Some(r),
                    () = &mut shutdown => None,
                }
            };
            match settled {
                Some(Ok(e)) => e,
                // Timed out, or the server is stopping: the state now.
                None | Some(Err(ReviewError::WaitTimedOut { .. })) => {
                    tokio::task::spawn_blocking(move || handle.current())
                        .await
                        .map_err(ApiError::internal)??
                }
                Some(Err(other)) => return Err(other.into()),
            }
        }
        None => {
            let grace = s.grace.clone();
            tokio::task::spawn_blocking(move || grace.escalations().get(id, Viewer::Asker))
                .await
                .map_err(ApiError::internal)??
        }
    };
    // The asker reads the resolution within their own scope (a reviewer
    // may cite what they may not read).
    let mut e = e;
    let scope = e.run.scope.clone();
    s.grace.withhold_for(std::slice::from_mut(&mut e), &scope)?;
    Ok(Json(AskerView {
        id: e.id,
        status: e.status,
        question: e.question,
        resolution: e.resolution,
    }))
}
