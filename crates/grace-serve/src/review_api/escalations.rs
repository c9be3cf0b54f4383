//! A reviewer's work on escalations: list and read them, claim and
//! release, answer (or redraft with a hint, or promote), reject, retract,
//! and the audit log.

use axum::Extension;
use axum::extract::{Path, Query, State};
use serde::Deserialize;

use super::{
    ApiResult, acting_reviewer, blocking, blocking_with_permit, one_read_by, read_by, viewer,
};
use crate::AppState;
use crate::body::JsonObject;
use crate::error::ApiError;
use crate::gate::Caller;
use grace::exec::HumanReply;
use grace::review::{AuditEntry, Escalation, ListFilter, Resolution, ReviewAnswer, Status, Viewer};
use grace::tools::Citation;

/// Escalations listed per request at most (`limit`).
pub const MAX_LIST_LIMIT: usize = 500;

/// `GET /v1/review/escalations`'s query.
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct ListQuery {
    /// Only this status.
    status: Option<Status>,
    /// Settled ones too (open ones only by default).
    #[serde(default)]
    all: bool,
    /// At most this many (default 100).
    #[param(minimum = 1)]
    limit: Option<usize>,
    /// Only ids below this one: the next page after a page that ended there.
    before: Option<i64>,
}

#[utoipa::path(get, path = "/v1/review/escalations", operation_id = "listEscalations", params(ListQuery), responses((status = 200, description = "Escalations this caller may see, newest first (open ones by default)", body = [Escalation]), (status = 400, body = crate::error::ErrorBody), (status = 401, body = crate::error::ErrorBody)), security(("bearer" = [])))]
pub(crate) async fn list(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    Query(q): Query<ListQuery>,
) -> ApiResult<Vec<Escalation>> {
    let status = q.status;
    let limit = q.limit.unwrap_or(100);
    if !(1..=MAX_LIST_LIMIT).contains(&limit) {
        return Err(ApiError::bad_request(format!(
            "limit={limit} must be 1 to {MAX_LIST_LIMIT}"
        )));
    }
    let filter = ListFilter {
        status,
        open_only: status.is_none() && !q.all,
        limit: Some(limit),
        before: q.before,
    };
    let principals = s.gate.principals.clone();
    blocking(&s, move |queue, grace| {
        let mut list = queue.list_page(viewer(&caller), &filter)?;
        read_by(grace, &principals, &caller, &mut list)?;
        Ok(list)
    })
    .await
}

#[utoipa::path(get, path = "/v1/review/escalations/{id}", operation_id = "getEscalation", params(("id" = i64, Path)), responses((status = 200, description = "One escalation: question, reason, run (factors, sources), options", body = Escalation), (status = 401, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody)), security(("bearer" = [])))]
pub(crate) async fn show(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<i64>,
) -> ApiResult<Escalation> {
    let principals = s.gate.principals.clone();
    blocking(&s, move |queue, grace| {
        let e = queue.get(id, viewer(&caller))?;
        one_read_by(grace, &principals, &caller, e)
    })
    .await
}

#[utoipa::path(post, path = "/v1/review/escalations/{id}/claim", operation_id = "claimEscalation", params(("id" = i64, Path)), responses((status = 200, description = "Claims it for this reviewer", body = Escalation), (status = 400, body = crate::error::ErrorBody), (status = 401, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody), (status = 409, body = crate::error::ErrorBody)), security(("bearer" = [])))]
pub(crate) async fn claim(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<i64>,
) -> ApiResult<Escalation> {
    let who = acting_reviewer(caller.clone())?;
    let principals = s.gate.principals.clone();
    blocking(&s, move |queue, grace| {
        one_read_by(grace, &principals, &caller, queue.claim(id, &who)?)
    })
    .await
}

#[utoipa::path(post, path = "/v1/review/escalations/{id}/release", operation_id = "releaseEscalation", params(("id" = i64, Path)), responses((status = 200, description = "Gives a claim back", body = Escalation), (status = 400, body = crate::error::ErrorBody), (status = 401, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody), (status = 409, body = crate::error::ErrorBody)), security(("bearer" = [])))]
pub(crate) async fn release(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<i64>,
) -> ApiResult<Escalation> {
    let who = acting_reviewer(caller.clone())?;
    let principals = s.gate.principals.clone();
    blocking(&s, move |queue, grace| {
        one_read_by(grace, &principals, &caller, queue.release(id, &who)?)
    })
    .await
}

#[utoipa::path(post, path = "/v1/review/escalations/{id}/detach", operation_id = "detachEscalation", params(("id" = i64, Path)), responses((status = 200, description = "Takes an escalation out of the one it joined: its asker asks something else, and it stands alone", body = Escalation), (status = 400, body = crate::error::ErrorBody), (status = 401, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody), (status = 409, body = crate::error::ErrorBody)), security(("bearer" = [])))]
pub(crate) async fn detach(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<i64>,
) -> ApiResult<Escalation> {
    let who = acting_reviewer(caller.clone())?;
    let principals = s.gate.principals.clone();
    blocking(&s, move |queue, grace| {
        one_read_by(grace, &principals, &caller, queue.detach(id, &who)?)
    })
    .await
}

/// A reviewer's answer: their own words or an offered option, not both.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(untagged)]
pub(crate) enum AnswerBody {
    /// The answer in the reviewer's words ("redo: hint" searches again).
    Text(TextAnswer),
    /// An option the escalation offers (409 for one it does not).
    Option(OptionAnswer),
}

/// An answer in the reviewer's words.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct TextAnswer {
    /// Not blank.
    #[schema(min_length = 1, pattern = r"[^\s\x00-\x1f\x7f-\x9f]")]
    text: String,
    #[serde(default)]
    sources: Vec<SourceBody>,
    /// The reviewer's confidence (default `review.reviewer_confidence`).
    #[schema(minimum = 0.0, maximum = 1.0)]
    confidence: Option<f64>,
    /// Add the question and answer to the knowledge base.
    #[serde(default)]
    promote: bool,
    /// What the reviewer says of GRACE's draft (`right`, `partly_right`,
    /// `wrong`); absent: implied by the answer (the draft confirmed or
    /// kept unchanged is right; mostly kept, partly right; else wrong).
    verdict: Option<grace::review::Verdict>,
}

/// An offered option, by number.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct OptionAnswer {
    /// 1-based.
    #[schema(minimum = 1, maximum = 1000, value_type = usize)]
    #[serde(deserialize_with = "crate::body::whole")]
    option: Option<usize>,
    #[serde(default)]
    sources: Vec<SourceBody>,
    /// The reviewer's confidence (default `review.reviewer_confidence`).
    #[schema(minimum = 0.0, maximum = 1.0)]
    confidence: Option<f64>,
    /// Add the question and answer to the knowledge base.
    #[serde(default)]
    promote: bool,
    /// What the reviewer says of GRACE's draft (`right`, `partly_right`,
    /// `wrong`); absent: implied by the answer (the draft confirmed or
    /// kept unchanged is right; mostly kept, partly right; else wrong).
    verdict: Option<grace::review::Verdict>,
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SourceBody {
    source: String,
    section: Option<String>,
}

#[utoipa::path(post, path = "/v1/review/escalations/{id}/answer", operation_id = "answerEscalation", params(("id" = i64, Path)), request_body = AnswerBody, responses((status = 200, description = "Answers it (text starting with a replan word such as redo: ... searches again and returns a new draft instead)", body = Escalation), (status = 400, body = crate::error::ErrorBody), (status = 401, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody), (status = 409, body = crate::error::ErrorBody), (status = 507, description = "The server's disk is full: nothing was written", body = crate::error::ErrorBody)), security(("bearer" = [])))]
pub(crate) async fn answer(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<i64>,
    JsonObject(body): JsonObject<AnswerBody>,
) -> ApiResult<Escalation> {
    let who = acting_reviewer(caller.clone())?;
    let principals = s.gate.principals.clone();
    let (reply, sources, confidence, promote, verdict) = match body {
        AnswerBody::Text(t) => (
            HumanReply::Text(t.text),
            t.sources,
            t.confidence,
            t.promote,
            t.verdict,
        ),
        AnswerBody::Option(o) => (
            HumanReply::Option(o.option.unwrap_or(0)),
            o.sources,
            o.confidence,
            o.promote,
            o.verdict,
        ),
    };
    let answer = ReviewAnswer {
        reply,
        sources: sources
            .into_iter()
            .enumerate()
            .map(|(i, src)| Citation {
                number: i + 1,
                source: Some(src.source),
                section: src.section,
                page: None,
            })
            .collect(),
        confidence,
        verdict,
    };
    let hint = match &answer.reply {
        HumanReply::Text(t) => {
            grace::review::replan::hint(t, &s.grace.config().review.replan_words)
        }
        HumanReply::Option(_) | HumanReply::Skip => None,
    };
    // A redraft searches and a promotion ingests.
    if hint.is_some() || promote {
        return blocking_with_permit(&s, move |queue, grace| {
            if let Some(hint) = hint {
                let e = grace.redraft_blocking(id, &who, &hint)?;
                return one_read_by(grace, &principals, &caller, e);
            }
            let resolution = queue.answer(id, &who, &answer)?;
            if resolution.outcome == grace::review::Outcome::Answered {
                grace.promote_blocking(id, &who)?;
            }
            // A verdict is a label.
            grace.learn_if_due();
            let e = queue.get(id, Viewer::Reviewer(&who))?;
            one_read_by(grace, &principals, &caller, e)
        })
        .await;
    }
    blocking(&s, move |queue, grace| {
        queue.answer(id, &who, &answer)?;
        // A verdict is a label.
        grace.learn_if_due();
        let e = queue.get(id, Viewer::Reviewer(&who))?;
        one_read_by(grace, &principals, &caller, e)
    })
    .await
}

/// Why the escalation is not answered.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RejectBody {
    /// Not blank; the asker gets it.
    #[schema(min_length = 1, pattern = r"[^\s\x00-\x1f\x7f-\x9f]")]
    why: String,
}

#[utoipa::path(post, path = "/v1/review/escalations/{id}/reject", operation_id = "rejectEscalation", params(("id" = i64, Path)), request_body = RejectBody, responses((status = 200, description = "Rejects it with a reason", body = Resolution), (status = 400, body = crate::error::ErrorBody), (status = 401, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody), (status = 409, body = crate::error::ErrorBody)), security(("bearer" = [])))]
pub(crate) async fn reject(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<i64>,
    JsonObject(body): JsonObject<RejectBody>,
) -> ApiResult<Resolution> {
    let who = acting_reviewer(caller.clone())?;
    let principals = s.gate.principals.clone();
    blocking(&s, move |queue, grace| {
        let mut resolution = queue.reject(id, &who, &body.why)?;
        if let (Some(run), Some(_)) = (resolution.report.as_mut(), caller.reviewer_id()) {
            grace.withhold_run_for(run, &caller.review_scope(&principals)?)?;
        }
        Ok(resolution)
    })
    .await
}

#[utoipa::path(post, path = "/v1/review/escalations/{id}/retract", operation_id = "retractEscalation", params(("id" = i64, Path)), responses((status = 200, description = "Removes a promoted answer from the knowledge base", body = Escalation), (status = 400, body = crate::error::ErrorBody), (status = 401, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody), (status = 409, body = crate::error::ErrorBody)), security(("bearer" = [])))]
pub(crate) async fn retract(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<i64>,
) -> ApiResult<Escalation> {
    let who = acting_reviewer(caller.clone())?;
    let principals = s.gate.principals.clone();
    // Retracting rewrites the knowledge base.
    blocking_with_permit(&s, move |queue, grace| {
        // Only a reviewer who may see the escalation may retract it.
        queue.get(id, Viewer::Reviewer(&who))?;
        grace.retract_blocking(id, &who)?;
        let e = queue.get(id, Viewer::Reviewer(&who))?;
        one_read_by(grace, &principals, &caller, e)
    })
    .await
}

#[utoipa::path(get, path = "/v1/review/escalations/{id}/log", operation_id = "getEscalationLog", params(("id" = i64, Path)), responses((status = 200, description = "The audit log: who did what, when", body = [AuditEntry]), (status = 401, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody)), security(("bearer" = [])))]
pub(crate) async fn log(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<i64>,
) -> ApiResult<Vec<AuditEntry>> {
    blocking(&s, move |queue, _| Ok(queue.log(id, viewer(&caller))?)).await
}
