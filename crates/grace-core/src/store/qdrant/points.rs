//! The [`VectorStore`] operations on a server collection: writes that wait
//! until the server applied them, queries, scrolls and counts.

use qdrant_client::qdrant::{
    CountPoints, DeletePoints, DenseVector, GetPoints, PointId, PointsOperationResponse,
    PointsSelector, Query, QueryPoints, RetrievedPoint, ScrollPoints, SetPayloadPoints,
    UpdateStatus, UpsertPoints, VectorInput, VectorsSelector, WithPayloadSelector,
    WithVectorsSelector, points_selector, query, vector_input, with_vectors_selector,
};

use qdrant_client::Payload;

use super::QdrantStore;
use super::convert::{
    all_payload, chunk_point, dense_of, lexical_of, numeric_id, to_payload, to_point,
};
use crate::access::READERS_FIELD;
use crate::store::{
    ChunkPoint, DENSE_VECTOR, LEXICAL_VECTOR, PayloadFilter, QueryVector, Result, ScrollPage,
    StoreError, StoreInfo, StoreQuery, StoredHit, VectorStore,
};

/// Points sent per upsert request (a request stays well below gRPC's
/// message limits: 256 MiniLM chunks are about 1 MB).
const UPSERT_BATCH: usize = 256;

impl QdrantStore {
    /// The points with these ids (none asked: none read), with the payload
    /// and vectors selected.
    fn get(
        &self,
        ids: &[u64],
        with_payload: Option<WithPayloadSelector>,
        vectors: with_vectors_selector::SelectorOptions,
    ) -> Result<Vec<RetrievedPoint>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let request = GetPoints {
            collection_name: self.target.collection.clone(),
            ids: ids.iter().map(|&id| PointId::from(id)).collect(),
            with_payload,
            with_vectors: Some(WithVectorsSelector {
                selector_options: Some(vectors),
            }),
            ..Default::default()
        };
        let client = self.client.clone();
        Ok(self
            .run(async move { client.get_points(request).await })?
            .result)
    }

    /// An update sent with `wait = true` must come back applied.
    pub(super) fn check_applied(
        &self,
        response: &PointsOperationResponse,
        what: &str,
    ) -> Result<()> {
        let status = response
            .result
            .as_ref()
            .map(|r| r.status)
            .unwrap_or(UpdateStatus::Completed as i32);
        match UpdateStatus::try_from(status) {
            Ok(UpdateStatus::Completed) | Ok(UpdateStatus::Acknowledged) => Ok(()),
            Ok(UpdateStatus::WaitTimeout) => Err(StoreError::Unavailable {
                url: self.target.url.clone(),
                message: format!(
                    "could not {what}: the server accepted it but did not apply it in time"
                ),
            }),
            _ => Err(self
                .target
                .server(format!("could not {what}: update status {status}"))),
        }
    }
}

impl VectorStore for QdrantStore {
    fn upsert(&self, points: Vec<ChunkPoint>) -> Result<()> {
        let _writing = self.writing();
        let mut batch = Vec::with_capacity(points.len().min(UPSERT_BATCH));
        let mut points = points.into_iter().peekable();
        while let Some(p) = points.next() {
            if p.dense.len() != self.dimension {
                return Err(StoreError::DimensionMismatch {
                    path: self.target.location(),
                    found: self.dimension,
                    expected: p.dense.len(),
                });
            }
            batch.push(to_point(p)?);
            if batch.len() == UPSERT_BATCH || points.peek().is_none() {
                let request = UpsertPoints {
                    collection_name: self.target.collection.clone(),
                    wait: Some(true),
                    points: std::mem::take(&mut batch),
                    ..Default::default()
                };
                let client = self.client.clone();
                let response = self.run(async move { client.upsert_points(request).await })?;
                self.check_applied(&response, "upsert points")?;
            }
        }
        Ok(())
    }

    fn search(&self, query: &StoreQuery<'_>) -> Result<Vec<StoredHit>> {
        let (input, using) = match query.vector {
            QueryVector::Dense(v) => (
                vector_input::Variant::Dense(DenseVector { data: v.to_vec() }),
                DENSE_VECTOR,
            ),
            QueryVector::Lexical(s) => {
                if s.is_empty() {
                    return Ok(Vec::new());
                }
                // Within readers, the terms weigh what they weigh among
                // the points those readers may read (`idf.rs`); where that
                // cannot be made exact, no lexical ranking at all.
                let s = match query.filter.and_then(|f| f.readers.as_deref()) {
                    Some(readers) => match self.readable_weights(s, readers)? {
                        Some(s) => s,
                        None => return Ok(Vec::new()),
                    },
                    None => s.clone(),
                };
                (
                    vector_input::Variant::Sparse(qdrant_client::qdrant::SparseVector {
                        indices: s.indices,
                        values: s.values,
                    }),
                    LEXICAL_VECTOR,
                )
            }
        };
        let with_vectors = query.with_dense.then(|| WithVectorsSelector {
            selector_options: Some(with_vectors_selector::SelectorOptions::Include(
                VectorsSelector {
                    names: vec![DENSE_VECTOR.to_string()],
                },
            )),
        });
        let request = QueryPoints {
            collection_name: self.target.collection.clone(),
            query: Some(Query {
                variant: Some(query::Variant::Nearest(VectorInput {
                    variant: Some(input),
                })),
            }),
            using: Some(using.to_string()),
            filter: Self::filter(query.filter),
            limit: Some(query.limit as u64),
            with_payload: if query.with_payload {
                all_payload()
            } else {
                None
            },
            with_vectors,
            params: query.exact.then(|| qdrant_client::qdrant::SearchParams {
                exact: Some(true),
                ..Default::default()
            }),
            ..Default::default()
        };
        let client = self.client.clone();
        let response = self.run(async move { client.query(request).await })?;
        let mut hits = response
            .result
            .into_iter()
            .map(|p| {
                let id = numeric_id(p.id)?;
                Ok(StoredHit {
                    id,
                    score: p.score,
                    dense: dense_of(p.vectors.as_ref()),
                    payload: if query.with_payload {
                        Some(to_payload(id, p.payload)?)
                    } else {
                        None
                    },
                })
            })
            .collect::<Result<Vec<_>>>()?;
        crate::store::sort_hits(&mut hits);
        Ok(hits)
    }

    fn retrieve(&self, ids: &[u64]) -> Result<Vec<ChunkPoint>> {
        self.get(
            ids,
            all_payload(),
            with_vectors_selector::SelectorOptions::Enable(true),
        )?
        .into_iter()
        .map(|p| chunk_point(p.id, p.vectors.as_ref(), p.payload))
        .collect()
    }

    fn retrieve_terms(&self, ids: &[u64]) -> Result<Vec<(u64, Vec<u32>)>> {
        let lexical = with_vectors_selector::SelectorOptions::Include(VectorsSelector {
            names: vec![LEXICAL_VECTOR.to_string()],
        });
        self.get(ids, None, lexical)?
            .into_iter()
            .map(|p| {
                let id = numeric_id(p.id)?;
                let terms =
                    lexical_of(p.vectors.as_ref()).ok_or_else(|| StoreError::BadPayload {
                        id: id.to_string(),
                        message: format!("the point has no `{LEXICAL_VECTOR}` vector"),
                    })?;
                Ok((id, terms.indices))
            })
            .collect()
    }

    fn delete_by_source(&self, source: &str) -> Result<()> {
        let _writing = self.writing();
        let Some(filter) = Self::filter(Some(&PayloadFilter::source(source))) else {
            return Ok(());
        };
        let request = DeletePoints {
            collection_name: self.target.collection.clone(),
            wait: Some(true),
            points: Some(PointsSelector {
                points_selector_one_of: Some(points_selector::PointsSelectorOneOf::Filter(filter)),
            }),
            ..Default::default()
        };
        let client = self.client.clone();
        let response = self.run(async move { client.delete_points(request).await })?;
        self.check_applied(&response, "delete points")
    }

    fn set_readers(&self, source: &str, readers: &[String]) -> Result<()> {
        let _writing = self.writing();
        let Some(filter) = Self::filter(Some(&PayloadFilter::source(source))) else {
            return Ok(());
        };
        let mut payload = Payload::new();
        payload.insert(READERS_FIELD, readers.to_vec());
        let request = SetPayloadPoints {
            collection_name: self.target.collection.clone(),
            wait: Some(true),
            payload: payload.into(),
            points_selector: Some(PointsSelector {
                points_selector_one_of: Some(points_selector::PointsSelectorOneOf::Filter(filter)),
            }),
            ..Default::default()
        };
        let client = self.client.clone();
        let response = self.run(async move { client.set_payload(request).await })?;
        self.check_applied(&response, "set the readers")
    }

    fn count(&self, filter: Option<&PayloadFilter>) -> Result<usize> {
        let request = CountPoints {
            collection_name: self.target.collection.clone(),
            filter: Self::filter(filter),
            exact: Some(true),
            ..Default::default()
        };
        let client = self.client.clone();
        let response = self.run(async move { client.count(request).await })?;
        Ok(response.result.map(|r| r.count).unwrap_or(0) as usize)
    }

    fn flush(&self) -> Result<()> {
        // Every write waited until the server applied it; the server's
        // write-ahead log keeps it.
        Ok(())
    }

    fn optimize(&self) -> Result<bool> {
        // The server's optimizer builds indexes on its own schedule.
        Ok(false)
    }

    fn info(&self) -> Result<StoreInfo> {
        let client = self.client.clone();
        let name = self.target.collection.clone();
        let response = self.run(async move { client.collection_info(name).await })?;
        let info = response
            .result
            .ok_or_else(|| self.target.server("the server sent no collection info"))?;
        Ok(StoreInfo {
            points: info.points_count.unwrap_or(0) as usize,
            indexed_vectors: info.indexed_vectors_count.unwrap_or(0) as usize,
            segments: info.segments_count as usize,
            dimension: self.dimension,
            index: None,
        })
    }

    fn scroll(&self, offset: Option<u64>, limit: usize) -> Result<ScrollPage> {
        let request = ScrollPoints {
            collection_name: self.target.collection.clone(),
            offset: offset.map(PointId::from),
            limit: Some(u32::try_from(limit.max(1)).unwrap_or(u32::MAX)),
            with_payload: all_payload(),
            with_vectors: Some(WithVectorsSelector {
                selector_options: Some(with_vectors_selector::SelectorOptions::Enable(true)),
            }),
            ..Default::default()
        };
        let client = self.client.clone();
        let response = self.run(async move { client.scroll(request).await })?;
        let points = response
            .result
            .into_iter()
            .map(|p| chunk_point(p.id, p.vectors.as_ref(), p.payload))
            .collect::<Result<Vec<_>>>()?;
        let next = match response.next_page_offset {
            Some(id) => Some(numeric_id(Some(id))?),
            None => None,
        };
        Ok(ScrollPage { points, next })
    }
}
