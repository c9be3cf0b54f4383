//! Conversions between GRACE's points and filters and the client's
//! messages.

use qdrant_client::Payload;
use qdrant_client::qdrant::r#match::MatchValue;
use qdrant_client::qdrant::{
    Condition, Filter, NamedVectors, PointId, PointStruct, RepeatedStrings, Vector, Vectors,
    VectorsOutput, WithPayloadSelector, point_id, vector_output, with_payload_selector,
};

use super::QdrantStore;
use crate::access::READERS_FIELD;
use crate::lexical::SparseVector;
use crate::store::{
    ChunkPayload, ChunkPoint, DENSE_VECTOR, LEXICAL_VECTOR, PayloadFilter, Result, StoreError,
};

impl QdrantStore {
    pub(super) fn filter(filter: Option<&PayloadFilter>) -> Option<Filter> {
        let f = filter.filter(|f| !f.is_empty())?;
        // An explicit keyword match: `MatchValue::from(String)` would turn a
        // value with a space into a full-text match.
        let mut filter = Filter::must(f.must.iter().map(|(field, value)| {
            Condition::matches(field.as_str(), MatchValue::Keyword(value.clone()))
        }));
        if let Some(readers) = &f.readers {
            filter.must.push(Condition::from(readers_filter(readers)));
        }
        if !f.exclude_ids.is_empty() {
            filter.must_not = vec![Condition::has_id(
                f.exclude_ids.iter().map(|id| PointId::from(*id)),
            )];
        }
        Some(filter)
    }
}

/// Points one of `readers` may read: the readers field holds one of them,
/// or is empty (a chunk written before readers existed is everyone's).
pub(super) fn readers_filter(readers: &[String]) -> Filter {
    Filter::should([
        Condition::matches(
            READERS_FIELD,
            MatchValue::Keywords(RepeatedStrings {
                strings: readers.to_vec(),
            }),
        ),
        Condition::is_empty(READERS_FIELD),
    ])
}

/// The payload field holding a point's term ids (the indices of its
/// lexical vector), with an integer index.
pub(super) const TERMS_FIELD: &str = "terms";

/// The `terms` field of a point with these term ids. A point without any
/// gets `[-1]`, which matches no term id: an empty list would read as a
/// point written before term ids were kept.
pub(super) fn terms_payload(terms: &[u32]) -> Vec<i64> {
    match terms.is_empty() {
        true => vec![-1],
        false => terms.iter().map(|&t| i64::from(t)).collect(),
    }
}

pub(super) fn to_point(p: ChunkPoint) -> Result<PointStruct> {
    let payload = serde_json::to_value(&p.payload)
        .ok()
        .map(|mut v| {
            // The term ids, for counting a principal's lexical statistics
            // (`idf.rs`); never read back into a chunk.
            if let Some(map) = v.as_object_mut() {
                map.insert(TERMS_FIELD.into(), terms_payload(&p.lexical.indices).into());
            }
            v
        })
        .and_then(|v| Payload::try_from(v).ok())
        .ok_or_else(|| StoreError::BadPayload {
            id: p.id.to_string(),
            message: "the payload is not a JSON object".into(),
        })?;
    let vectors = NamedVectors {
        vectors: [
            (DENSE_VECTOR.to_string(), Vector::new_dense(p.dense)),
            (
                LEXICAL_VECTOR.to_string(),
                Vector::new_sparse(p.lexical.indices, p.lexical.values),
            ),
        ]
        .into(),
    };
    Ok(PointStruct {
        id: Some(PointId::from(p.id)),
        payload: payload.into(),
        vectors: Some(Vectors::from(vectors)),
    })
}

pub(super) fn numeric_id(id: Option<PointId>) -> Result<u64> {
    match id.and_then(|p| p.point_id_options) {
        Some(point_id::PointIdOptions::Num(n)) => Ok(n),
        Some(point_id::PointIdOptions::Uuid(u)) => Err(StoreError::BadPayload {
            id: u,
            message: "point id is not numeric".into(),
        }),
        None => Err(StoreError::BadPayload {
            id: "?".into(),
            message: "the server sent a point without an id".into(),
        }),
    }
}

pub(super) fn to_payload(
    id: u64,
    payload: std::collections::HashMap<String, qdrant_client::qdrant::Value>,
) -> Result<ChunkPayload> {
    let json = serde_json::Value::from(Payload::from(payload));
    serde_json::from_value(json).map_err(|e| StoreError::BadPayload {
        id: id.to_string(),
        message: e.to_string(),
    })
}

pub(super) fn dense_of(vectors: Option<&VectorsOutput>) -> Option<Vec<f32>> {
    match vectors?.get_vector_by_name(DENSE_VECTOR)? {
        vector_output::Vector::Dense(d) => Some(d.data),
        _ => None,
    }
}

pub(super) fn lexical_of(vectors: Option<&VectorsOutput>) -> Option<SparseVector> {
    match vectors?.get_vector_by_name(LEXICAL_VECTOR)? {
        vector_output::Vector::Sparse(s) => Some(SparseVector {
            indices: s.indices,
            values: s.values,
        }),
        _ => None,
    }
}

/// A stored point with both vectors, as scroll and retrieve return it.
pub(super) fn chunk_point(
    id: Option<PointId>,
    vectors: Option<&VectorsOutput>,
    payload: std::collections::HashMap<String, qdrant_client::qdrant::Value>,
) -> Result<ChunkPoint> {
    let id = numeric_id(id)?;
    let missing = |what: &str| StoreError::BadPayload {
        id: id.to_string(),
        message: format!("the point has no `{what}` vector"),
    };
    Ok(ChunkPoint {
        id,
        dense: dense_of(vectors).ok_or_else(|| missing(DENSE_VECTOR))?,
        lexical: lexical_of(vectors).ok_or_else(|| missing(LEXICAL_VECTOR))?,
        payload: to_payload(id, payload)?,
    })
}

/// A chunk's whole payload (without the term ids, which only counting
/// reads).
pub(super) fn all_payload() -> Option<WithPayloadSelector> {
    Some(WithPayloadSelector {
        selector_options: Some(with_payload_selector::SelectorOptions::Exclude(
            qdrant_client::qdrant::PayloadExcludeSelector {
                fields: vec![TERMS_FIELD.to_string()],
            },
        )),
    })
}
