//! The dense ranking of a quantised store, scored again with the full
//! vectors once for the whole collection.
//!
//! The engine would score each segment's quantised candidates again with
//! the full vectors, segment by segment: `k` × oversampling full vectors
//! read from disk per segment (1,680 for a top 40 at 1M points in 21
//! segments), most of a search's cost once the store outgrows the page
//! cache. Past `ENGINE_RESCORES_SEGMENTS` segments' worth of points of an
//! int8 store (`EdgeStore::choose_rescoring`)
//! the engine ranks by the quantised scores alone, and only the
//! collection's best `k` × oversampling are read whole and scored exactly:
//! a segment count's fewer reads (80 at 1M), the same recall measured
//! (0.99 at 1M, 0.991 at 100k), for a second pass through the segments
//! (~0.07 ms at 100k points in memory; docs/src/measurements.md, "A million
//! chunks in 1 GiB").

use qdrant_edge::{
    Condition, Filter, HasIdCondition, NamedQuery, PointId, QueryEnum, QueryRequest, ScoringQuery,
    SearchParams, VectorInternal,
};

use super::{EdgeStore, to_filter};
use crate::store::{DENSE_VECTOR, QueryVector, Result, StoreQuery, StoredHit};

impl EdgeStore {
    /// The dense ranking of `vector` for `query`: the quantised ranking's
    /// `query.limit` × `oversampling` best, scored again by cosine with
    /// their full vectors, the `query.limit` best of those.
    pub(super) fn rescored(
        &self,
        vector: &[f32],
        query: &StoreQuery<'_>,
    ) -> Result<Vec<StoredHit>> {
        let wanted = query.limit;
        if wanted == 0 {
            return Ok(Vec::new());
        }
        // The first pass: the quantised scores alone.
        let (quantised_only, oversampling) = &self.first_pass;
        // `storage.oversampling` is validated to 1..=16 and the limit
        // bounded by the search's own limit, so this stays small.
        let taken = ((wanted as f64) * oversampling).ceil() as usize;
        let candidates = self.ranked_with(
            &StoreQuery {
                vector: QueryVector::Dense(vector),
                limit: taken.max(wanted),
                with_payload: false,
                with_dense: false,
                ..query.clone()
            },
            quantised_only,
        )?;
        if candidates.is_empty() {
            return Ok(candidates);
        }
        // Exact search among the candidates alone: the engine scores them
        // with the full vectors (its SIMD cosine) and orders them.
        let ids: HasIdCondition = candidates.iter().map(|h| PointId::NumId(h.id)).collect();
        let mut request = QueryRequest::new(wanted);
        request.params = Some(SearchParams {
            exact: true,
            ..SearchParams::default()
        });
        request.query = Some(ScoringQuery::Vector(QueryEnum::Nearest(NamedQuery {
            query: VectorInternal::from(vector.to_vec()),
            using: Some(DENSE_VECTOR.to_string()),
        })));
        // The caller's filter again too: a point whose readers changed
        // between the two passes is not returned to someone it no longer
        // lets read.
        let mut must = vec![Condition::HasId(ids)];
        if let Some(filter) = query
            .filter
            .map(|f| to_filter(&self.path, f))
            .transpose()?
            .flatten()
        {
            must.push(Condition::Filter(filter));
        }
        request.filter = Some(Filter {
            must: Some(must),
            ..Filter::default()
        });
        self.hits(request, query)
    }
}
