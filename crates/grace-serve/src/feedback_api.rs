//! Askers' ratings over HTTP: `POST /v1/answers/{id}/feedback` rates the
//! answer an ask returned (its `answer_id`), up or down with an optional
//! reason. The asker is the one who asked: the conversation (`session_id`)
//! when the ask named one, else its `asker`; anyone else's rating of that
//! answer is 404, as for an answer that does not exist.

use axum::Json;
use axum::extract::{Path, State};
use serde::Deserialize;
use utoipa::ToSchema;

use super::AppState;
use super::body::JsonObject;
use super::error::ApiError;
use serde_json::{Value, json};

use grace::feedback::{
    Asker, MAX_ASKER_CHARS, MAX_RATING_TEXT_CHARS, Rating, Reason, StoredRating, Vote,
};
use grace::learn::auto::FeedbackCalibration;

/// `POST /v1/answers/{id}/feedback`. Its schema (the `PartialSchema` below)
/// says which fields go together, as [`Rating::check`] does.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FeedbackBody {
    /// Up or down.
    pub vote: Vote,
    /// Why (with a down vote).
    pub reason: Option<Reason>,
    /// The asker's words, with the reason `other`.
    pub text: Option<String>,
    /// Who asked, as sent to `/v1/ask` (default `service`).
    pub asker: Option<String>,
    /// The conversation the question was asked in, as sent to `/v1/ask`.
    pub session_id: Option<String>,
}

impl utoipa::PartialSchema for FeedbackBody {
    /// One of: an up vote; a down vote with a reason other than `other`, or
    /// none; a down vote with the reason `other` and, optionally, the
    /// asker's words (not blank, at most [`MAX_RATING_TEXT_CHARS`]).
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        let who = |mut properties: Value| {
            properties["asker"] = json!({"type": ["string", "null"], "minLength": 1,
                "maxLength": MAX_ASKER_CHARS, "pattern": grace::text::NOT_BLANK,
                "description": "who asked, as sent to /v1/ask (default service)"});
            properties["session_id"] = json!({"type": ["string", "null"],
                "pattern": grace::session::SESSION_ID_PATTERN,
                "description": "the conversation the question was asked in, as sent to /v1/ask: the asker, when the ask named one"});
            properties
        };
        let named: Vec<&str> = Reason::ALL
            .iter()
            .filter(|r| **r != Reason::Other)
            .map(|r| r.as_str())
            .collect();
        let variant = |title: &str, properties: Value, required: Value| {
            json!({"title": title, "type": "object", "properties": who(properties),
                   "required": required, "additionalProperties": false})
        };
        let schema = json!({"oneOf": [
            variant("Up", json!({"vote": {"type": "string", "enum": ["up"]}, "reason": {"type": "null"}, "text": {"type": "null"}}),
                json!(["vote"])),
            variant("Down", json!({"vote": {"type": "string", "enum": ["down"]},
                "reason": {"type": ["string", "null"], "enum": named.iter().map(|r| json!(r)).chain([Value::Null]).collect::<Vec<_>>()},
                "text": {"type": "null"}}), json!(["vote"])),
            variant("DownOther", json!({"vote": {"type": "string", "enum": ["down"]}, "reason": {"type": "string", "enum": ["other"]},
                "text": {"type": ["string", "null"], "minLength": 1, "maxLength": MAX_RATING_TEXT_CHARS,
                         "pattern": grace::text::NOT_BLANK, "description": "the asker's words"}}),
                json!(["vote", "reason"])),
        ]});
        serde_json::from_value(schema).unwrap_or_default()
    }
}

impl ToSchema for FeedbackBody {}

/// Rates an answer (its `answer_id` from `/v1/ask`): one rating per asker
/// per answer; a second replaces the first. 404 for an answer that does
/// not exist or was given to another asker, 409 for a run that was not
/// answered (escalated, declined), 422 for a malformed rating or a text
/// over 500 characters, 429 past `feedback.max_ratings_per_hour`.
#[utoipa::path(post, path = "/v1/answers/{id}/feedback", operation_id = "rateAnswer", request_body = FeedbackBody,
    params(("id" = String, Path, pattern = r"^ans_[0-9a-f]{32}$")),
    responses((status = 200, description = "The rating as stored (`replaced`: it replaced an earlier one)", body = StoredRating),
        (status = 401, body = super::error::ErrorBody), (status = 404, body = super::error::ErrorBody),
        (status = 409, body = super::error::ErrorBody), (status = 422, body = super::error::ErrorBody),
        (status = 429, body = super::error::ErrorBody)),
    security(("bearer" = [])))]
pub async fn rate(
    State(s): State<AppState>,
    Path(id): Path<String>,
    JsonObject(body): JsonObject<FeedbackBody>,
) -> Result<Json<StoredRating>, ApiError> {
    let name = body
        .asker
        .unwrap_or_else(|| grace::service::AskOptions::default().asker);
    let asker = Asker::of(body.session_id.as_deref(), &name).map_err(grace::Error::from)?;
    let rating = Rating {
        vote: body.vote,
        reason: body.reason,
        text: body.text,
    };
    Ok(Json(s.grace.rate(id, asker, rating).await?))
}

/// The fit on people's feedback (`confidence.feedback_calibration`): how
/// many labels there are, when the next refit is due, the fit that scores
/// runs now and every refit with its out-of-fold figures.
#[utoipa::path(get, path = "/v1/review/calibration", operation_id = "getFeedbackCalibration",
    responses((status = 200, description = "The fit on feedback and its history", body = FeedbackCalibration),
        (status = 401, body = super::error::ErrorBody)),
    security(("bearer" = [])))]
pub async fn calibration(State(s): State<AppState>) -> Result<Json<FeedbackCalibration>, ApiError> {
    let grace = s.grace.clone();
    let view = tokio::task::spawn_blocking(move || grace.feedback_calibration())
        .await
        .map_err(ApiError::internal)??;
    Ok(Json(view))
}
