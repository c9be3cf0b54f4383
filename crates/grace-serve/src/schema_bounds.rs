//! The bounds the code checks, written into the OpenAPI document from the
//! constants the checks use. utoipa's `maximum`, `max_length` and
//! `max_items` attributes take only literals, which would copy each limit
//! into the schema a second time; the fields here carry the rest of their
//! schema in attributes and get their bound from [`BOUNDS`].

use utoipa::Modify;
use utoipa::openapi::{OpenApi, RefOr, Schema};

/// Which bound of a schema.
#[derive(Debug, Clone, Copy)]
enum Bound {
    /// `maximum` (a number).
    Maximum(usize),
    /// `maxLength` (characters of a string).
    MaxLength(usize),
    /// `maxItems` (of an array).
    MaxItems(usize),
}

/// Where in the document.
#[derive(Debug, Clone, Copy)]
enum Place {
    /// A body's field: `(schema, field)`.
    Field(&'static str, &'static str),
    /// An operation's query parameter: `(path, name)` of a `GET`.
    Param(&'static str, &'static str),
}

/// Every bound the schema states and the code checks, with its constant.
const BOUNDS: [(Place, Bound); 16] = [
    (
        Place::Field("AskBody", "question"),
        Bound::MaxLength(grace::service::MAX_QUESTION_CHARS),
    ),
    (
        Place::Field("AskBody", "limit"),
        Bound::Maximum(grace::config::MAX_RAG_SEARCH_LIMIT),
    ),
    (
        Place::Field("AskBody", "asker"),
        Bound::MaxLength(grace::feedback::MAX_ASKER_CHARS),
    ),
    (
        Place::Field("ReplyBody", "reply"),
        Bound::MaxLength(grace::service::MAX_REPLY_CHARS),
    ),
    (
        Place::Field("SearchBody", "limit"),
        Bound::Maximum(grace::config::MAX_SEARCH_LIMIT),
    ),
    (
        Place::Field("ExamplesResponse", "questions"),
        Bound::MaxItems(grace::selfcal::examples::MAX_EXAMPLES),
    ),
    (
        Place::Field("Rating", "text"),
        Bound::MaxLength(grace::feedback::MAX_RATING_TEXT_CHARS),
    ),
    (
        Place::Field("RegisterBody", "id"),
        Bound::MaxLength(grace::review::MAX_REVIEWER_ID_CHARS),
    ),
    (
        Place::Field("RegisterBody", "name"),
        Bound::MaxLength(grace::review::MAX_REVIEWER_NAME_CHARS),
    ),
    (
        Place::Field("RegisterBody", "description"),
        Bound::MaxLength(grace::review::MAX_REVIEWER_DESCRIPTION_CHARS),
    ),
    (
        Place::Field("ToolSpec", "description"),
        Bound::MaxLength(grace::tools::runtime::check::MAX_DESCRIPTION_CHARS),
    ),
    (
        Place::Field("ToolSpec", "code"),
        Bound::MaxLength(grace::tools::runtime::check::MAX_CODE_CHARS),
    ),
    (
        Place::Param("/v1/review/escalations", "limit"),
        Bound::Maximum(super::review_api::MAX_LIST_LIMIT),
    ),
    (
        Place::Param("/v1/review/gaps", "days"),
        Bound::Maximum(grace::config::MAX_GAP_DAYS as usize),
    ),
    (
        Place::Param("/v1/review/gaps", "limit"),
        Bound::Maximum(grace::gaps::MAX_GROUPS),
    ),
    (
        Place::Param("/v1/escalations/{id}", "wait"),
        Bound::Maximum(super::review_api::MAX_WAIT_SECONDS),
    ),
];

/// Sets each of [`BOUNDS`] in the document.
pub(super) struct SchemaBounds;

impl Modify for SchemaBounds {
    fn modify(&self, openapi: &mut OpenApi) {
        for (place, bound) in BOUNDS {
            match (bound, schema_at(openapi, place)) {
                (Bound::Maximum(most), Some(RefOr::T(Schema::Object(number)))) => {
                    number.maximum = Some(most.into());
                }
                (Bound::MaxLength(most), Some(RefOr::T(Schema::Object(text)))) => {
                    text.max_length = Some(most);
                }
                (Bound::MaxItems(most), Some(RefOr::T(Schema::Array(list)))) => {
                    list.max_items = Some(most);
                }
                // Not where the table says: the test below names it.
                _ => {}
            }
        }
    }
}

/// The schema at `place`, if the document has it.
fn schema_at(openapi: &mut OpenApi, place: Place) -> Option<&mut RefOr<Schema>> {
    match place {
        Place::Field(schema, field) => {
            let components = openapi.components.as_mut()?;
            match components.schemas.get_mut(schema)? {
                RefOr::T(Schema::Object(body)) => body.properties.get_mut(field),
                _ => None,
            }
        }
        Place::Param(path, name) => openapi
            .paths
            .paths
            .get_mut(path)?
            .get
            .as_mut()?
            .parameters
            .as_mut()?
            .iter_mut()
            .find(|p| p.name == name)?
            .schema
            .as_mut(),
    }
}

#[cfg(test)]
mod tests {
    use utoipa::OpenApi;

    use super::*;

    /// Each bound is found where the table says and carries its
    /// constant: a renamed body, field or parameter fails here instead of
    /// leaving the document without its bound.
    #[test]
    fn every_bound_is_in_the_document_with_its_constant() {
        let doc = serde_json::to_value(super::super::openapi::ApiDoc::openapi()).unwrap();
        for (place, bound) in BOUNDS {
            let schema = match place {
                Place::Field(schema, field) => {
                    doc["components"]["schemas"][schema]["properties"][field].clone()
                }
                Place::Param(path, name) => doc["paths"][path]["get"]["parameters"]
                    .as_array()
                    .and_then(|ps| ps.iter().find(|p| p["name"] == name))
                    .map(|p| p["schema"].clone())
                    .unwrap_or_default(),
            };
            let (key, most) = match bound {
                Bound::Maximum(most) => ("maximum", most),
                Bound::MaxLength(most) => ("maxLength", most),
                Bound::MaxItems(most) => ("maxItems", most),
            };
            assert_eq!(
                schema[key].as_u64(),
                Some(most as u64),
                "{place:?}: {key} in {schema}"
            );
        }
    }
}
