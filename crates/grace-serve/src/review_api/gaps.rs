//! `GET /v1/review/gaps`: the gap report for reviewers and the
//! administrator (the gate lets no one else through to the review paths).

use axum::extract::{Query, State};
use serde::Deserialize;

use super::ApiResult;
use crate::AppState;
use grace::gaps::GapReport;

/// Groups a report shows when `limit` is not given.
const DEFAULT_GROUPS: usize = 20;

/// `GET /v1/review/gaps`'s query. The bounds are
/// [`grace::config::MAX_GAP_DAYS`] and [`grace::gaps::MAX_GROUPS`] (the
/// document has them from `schema_bounds`).
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct GapsQuery {
    /// Days of questions to read (default `feedback.gap_days`).
    #[param(minimum = 1)]
    days: Option<u32>,
    /// Groups shown, most asked first (default 20).
    #[param(minimum = 1)]
    limit: Option<usize>,
}

#[utoipa::path(get, path = "/v1/review/gaps", operation_id = "getGaps", params(GapsQuery), responses((status = 200, description = "What the knowledge base is missing: the questions people did not get an answer to (declined, escalated, rated down) grouped by meaning, most asked first", body = GapReport), (status = 401, body = crate::error::ErrorBody), (status = 422, body = crate::error::ErrorBody)), security(("bearer" = [])))]
pub(crate) async fn gaps(
    State(s): State<AppState>,
    Query(q): Query<GapsQuery>,
) -> ApiResult<GapReport> {
    let report = s
        .grace
        .gaps(q.days, q.limit.unwrap_or(DEFAULT_GROUPS))
        .await?;
    Ok(axum::Json(report))
}
