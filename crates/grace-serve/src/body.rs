//! [`JsonObject`]: a JSON request body that must be an object of the
//! body's shape. `axum::Json` alone also takes an array for a struct (serde
//! reads a struct from a sequence), which the published schema does not
//! allow.

use axum::Json;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::error::ApiError;

/// A JSON object body, deserialised into `T`: 415 without a JSON content
/// type, 400 for JSON that does not parse, 422 for JSON that is not an
/// object or does not fit `T`.
pub struct JsonObject<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for JsonObject<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        let Json(value) = Json::<Value>::from_request(request, state)
            .await
            .map_err(|e| ApiError::new(e.status(), ApiError::kind_of(e.status()), e.body_text()))?;
        if !value.is_object() {
            return Err(unprocessable("the body must be a JSON object".into()));
        }
        serde_json::from_value(value)
            .map(JsonObject)
            .map_err(|e| unprocessable(format!("the body does not fit: {e}")))
    }
}

fn unprocessable(message: String) -> ApiError {
    ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_request", message)
}

/// Deserialises a count that JSON may write as `40` or `40.0` (JSON Schema
/// calls both integers): a whole, non-negative number that fits `usize`.
pub fn whole<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
    use serde::Deserialize;
    let Some(n) = Option::<serde_json::Number>::deserialize(d)? else {
        return Ok(None);
    };
    if let Some(u) = n.as_u64() {
        return usize::try_from(u)
            .map(Some)
            .map_err(|_| serde::de::Error::custom(format!("{n} is too large")));
    }
    match n.as_f64() {
        Some(f) if f.fract() == 0.0 && f >= 0.0 && f < u64::MAX as f64 => Ok(Some(f as usize)),
        _ => Err(serde::de::Error::custom(format!(
            "{n} is not a whole number of at least 0"
        ))),
    }
}

/// A list of reviewer ids (no spaces), for the schema.
pub fn reviewer_ids() -> utoipa::openapi::schema::Array {
    reviewer_ids_of(utoipa::openapi::schema::Type::Array.into())
}

/// [`reviewer_ids`] or null.
pub fn optional_reviewer_ids() -> utoipa::openapi::schema::Array {
    use utoipa::openapi::schema::{SchemaType, Type};
    reviewer_ids_of(SchemaType::from_iter([Type::Array, Type::Null]))
}

fn reviewer_ids_of(kind: utoipa::openapi::schema::SchemaType) -> utoipa::openapi::schema::Array {
    use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, Type};
    ArrayBuilder::new()
        .schema_type(kind)
        .items(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .pattern(Some(grace::text::PLAIN_ID))
                .min_length(Some(1)),
        )
        .build()
}

#[cfg(test)]
mod tests {
    #[derive(serde::Deserialize)]
    struct B {
        #[serde(default, deserialize_with = "super::whole")]
        n: Option<usize>,
    }

    #[test]
    fn whole_numbers_may_be_written_with_a_zero_fraction() {
        let n = |t: &str| serde_json::from_str::<B>(t).map(|b| b.n);
        assert_eq!(n(r#"{"n": 40}"#).unwrap(), Some(40));
        assert_eq!(n(r#"{"n": 40.0}"#).unwrap(), Some(40));
        assert_eq!(n(r#"{}"#).unwrap(), None);
        assert_eq!(n(r#"{"n": null}"#).unwrap(), None);
        for bad in [
            r#"{"n": 1.5}"#,
            r#"{"n": -1}"#,
            r#"{"n": 1e300}"#,
            r#"{"n": "4"}"#,
        ] {
            assert!(n(bad).is_err(), "{bad}");
        }
    }
}
