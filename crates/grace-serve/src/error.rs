//! Errors as the HTTP API reports them: `{"error": {"type", "message"}}`
//! with a status code that says whose fault it is.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::json;
use utoipa::ToSchema;

use grace::Error;
use grace::exec::ExecError;
use grace::feedback::FeedbackError;
use grace::ingest::IngestError;
use grace::review::ReviewError;
use grace::session::SessionError;

/// An error response.
#[derive(Debug)]
pub struct ApiError {
    /// The HTTP status code.
    pub status: StatusCode,
    /// A stable machine-readable kind (`invalid_request`, `unauthorized`,
    /// `not_found`, `conflict`, `payload_too_large`, `too_many_requests`,
    /// `shutting_down`, `timeout`, `busy`, `internal`).
    pub kind: &'static str,
    /// What went wrong, for people.
    pub message: String,
}

impl ApiError {
    /// An error with this status, kind and message.
    pub fn new(status: StatusCode, kind: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            kind,
            message: message.into(),
        }
    }

    /// 500: the server failed. The text (which may name server paths) goes
    /// to the log; the client gets only the kind.
    pub fn internal(error: impl std::fmt::Display) -> Self {
        tracing::error!(%error, "request failed");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "internal error; the server's log has the details",
        )
    }

    /// 400: the request is wrong.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_request", message)
    }

    /// The kind that goes with a status, for errors made outside GRACE's
    /// handlers (axum's body rejections, unknown routes).
    pub fn kind_of(status: StatusCode) -> &'static str {
        match status {
            StatusCode::UNAUTHORIZED => "unauthorized",
            StatusCode::NOT_FOUND => "not_found",
            StatusCode::METHOD_NOT_ALLOWED => "method_not_allowed",
            StatusCode::CONFLICT => "conflict",
            StatusCode::PAYLOAD_TOO_LARGE => "payload_too_large",
            StatusCode::UNSUPPORTED_MEDIA_TYPE => "unsupported_media_type",
            StatusCode::TOO_MANY_REQUESTS => "too_many_requests",
            StatusCode::SERVICE_UNAVAILABLE => "shutting_down",
            StatusCode::GATEWAY_TIMEOUT | StatusCode::REQUEST_TIMEOUT => "timeout",
            s if s.is_client_error() => "invalid_request",
            _ => "internal",
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({"error": {"type": self.kind, "message": self.message}});
        let mut response = (self.status, Json(body)).into_response();
        let headers = response.headers_mut();
        match self.status {
            StatusCode::UNAUTHORIZED => {
                headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            }
            StatusCode::TOO_MANY_REQUESTS | StatusCode::SERVICE_UNAVAILABLE => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            }
            _ => {}
        }
        response
    }
}

impl From<Error> for ApiError {
    fn from(e: Error) -> Self {
        let (status, kind) = match &e {
            Error::Review(r) => review_status(r),
            Error::InvalidInput(_) | Error::Config(_) => {
                (StatusCode::BAD_REQUEST, "invalid_request")
            }
            Error::Ingest(IngestError::PathNotFound { .. }) => (StatusCode::NOT_FOUND, "not_found"),
            Error::UnknownKb(_) => (StatusCode::NOT_FOUND, "unknown_kb"),
            Error::Ingest(IngestError::BadGlob { .. } | IngestError::TooManyFiles { .. }) => {
                (StatusCode::BAD_REQUEST, "invalid_request")
            }
            Error::Ingest(IngestError::NotAllowed { .. } | IngestError::RemotePathsOff) => {
                (StatusCode::FORBIDDEN, "forbidden")
            }
            Error::Store(e) if e.is_transient() => (StatusCode::SERVICE_UNAVAILABLE, "busy"),
            e if e.is_disk_full() => (StatusCode::INSUFFICIENT_STORAGE, "insufficient_storage"),
            e if e.state().is_some_and(|s| s.is_unavailable()) => {
                (StatusCode::SERVICE_UNAVAILABLE, "busy")
            }
            Error::Exec(ExecError::Cancelled) => (StatusCode::GATEWAY_TIMEOUT, "timeout"),
            Error::Session(SessionError::NotFound { .. } | SessionError::RunNotFound { .. }) => {
                (StatusCode::NOT_FOUND, "not_found")
            }
            Error::Exec(ExecError::NotAnAgent) => (StatusCode::CONFLICT, "conflict"),
            Error::Feedback(f) => feedback_status(f),
            Error::Session(SessionError::TooMany { .. }) => {
                (StatusCode::TOO_MANY_REQUESTS, "too_many_requests")
            }
            _ => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
        };
        // A server-side failure's text names server paths (the database,
        // the manifest, the model folder): it goes to the log, not the client.
        let message = match status {
            StatusCode::INTERNAL_SERVER_ERROR => return Self::internal(e),
            StatusCode::SERVICE_UNAVAILABLE => {
                tracing::warn!(error = %e, "store busy");
                "the store is busy; retry shortly".to_string()
            }
            // The paths are the server's: they go to the log.
            StatusCode::INSUFFICIENT_STORAGE => {
                tracing::error!(error = %e, "disk full");
                "the server's disk is full: nothing was written; its administrator must free space"
                    .to_string()
            }
            _ => e.to_string(),
        };
        Self {
            status,
            kind,
            message,
        }
    }
}

impl From<ReviewError> for ApiError {
    fn from(e: ReviewError) -> Self {
        Error::Review(e).into()
    }
}

fn review_status(e: &ReviewError) -> (StatusCode, &'static str) {
    match e {
        ReviewError::NotFound { .. } => (StatusCode::NOT_FOUND, "not_found"),
        ReviewError::Invalid(_) => (StatusCode::BAD_REQUEST, "invalid_request"),
        ReviewError::Conflict { .. }
        | ReviewError::AlreadyRegistered(_)
        | ReviewError::WrongState(_) => (StatusCode::CONFLICT, "conflict"),
        ReviewError::WaitTimedOut { .. } => (StatusCode::REQUEST_TIMEOUT, "timeout"),
        // PostgreSQL unreachable (restarting, failing over): retry.
        ReviewError::State(s) if s.is_unavailable() => (StatusCode::SERVICE_UNAVAILABLE, "busy"),
        ReviewError::State(s) if s.is_disk_full() => {
            (StatusCode::INSUFFICIENT_STORAGE, "insufficient_storage")
        }
        _ => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
    }
}

/// Every error: `{"error": {"type", "message"}}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    /// The error's kind and message.
    pub error: ErrorDetail,
}

/// The error's kind and a message for people.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorDetail {
    /// `invalid_request`, `unauthorized` (or the reason a token was
    /// refused: `unknown_key`, `expired`, …), `forbidden`, `not_found`,
    /// `unknown_kb` (a knowledge base not served, or one the caller may
    /// not use), `conflict`, `payload_too_large`, `too_many_requests`,
    /// `shutting_down`, `timeout`, `busy`, `insufficient_storage` (the
    /// server's disk is full) or `internal`.
    #[serde(rename = "type")]
    pub kind: String,
    /// What went wrong, for people.
    pub message: String,
}

/// The status of a feedback error: 404 for an answer that is not the
/// caller's, 409 for one with nothing to rate, 422 for a malformed rating,
/// 429 past the hourly limit.
fn feedback_status(e: &FeedbackError) -> (StatusCode, &'static str) {
    match e {
        FeedbackError::NotFound { .. } => (StatusCode::NOT_FOUND, "not_found"),
        FeedbackError::NotAnswered { .. } | FeedbackError::Disabled => {
            (StatusCode::CONFLICT, "conflict")
        }
        FeedbackError::Invalid(_) | FeedbackError::TooLong { .. } => {
            (StatusCode::UNPROCESSABLE_ENTITY, "invalid_request")
        }
        FeedbackError::RateLimited { .. } => (StatusCode::TOO_MANY_REQUESTS, "too_many_requests"),
        FeedbackError::State(s) if s.is_unavailable() => (StatusCode::SERVICE_UNAVAILABLE, "busy"),
        FeedbackError::State(_) | FeedbackError::Corrupt { .. } | FeedbackError::Io { .. } => {
            (StatusCode::INTERNAL_SERVER_ERROR, "internal")
        }
    }
}
