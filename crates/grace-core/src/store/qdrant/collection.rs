//! Creating the collection GRACE writes, and checking that an existing
//! one has the vectors, parameters and layout GRACE needs.

use qdrant_client::qdrant::{
    CreateCollection, CreateFieldIndexCollection, Distance, FieldType, Modifier,
    SparseVectorConfig, SparseVectorParams, VectorParams, VectorParamsMap, VectorsConfig,
    vectors_config,
};

use super::QdrantStore;
use crate::access::READERS_FIELD;
use crate::store::{DENSE_VECTOR, LEXICAL_VECTOR, Result, StoreError};

/// How long opening waits for a collection's shards to become active.
const READY_WAIT: std::time::Duration = std::time::Duration::from_secs(30);
/// How often it looks meanwhile.
const READY_POLL: std::time::Duration = std::time::Duration::from_millis(200);

impl QdrantStore {
    /// Waits until every shard of the collection has an active replica
    /// (at most [`READY_WAIT`], then goes on with a warning). A
    /// collection another server created a moment ago may still be setting
    /// up its shards across the cluster, and a read then fails ("0 of 0
    /// read operations failed"): several servers started at once must
    /// not die of it. A node that is down leaves its replicas dead; the
    /// shard's copies on the other nodes are active, and that is enough.
    pub(super) fn wait_active(&self) -> Result<()> {
        use qdrant_client::qdrant::ReplicaState;
        let started = std::time::Instant::now();
        loop {
            let client = self.client.clone();
            let name = self.target.collection.clone();
            let info = self.run(async move { client.collection_cluster_info(name).await })?;
            let active: std::collections::HashSet<u32> = info
                .local_shards
                .iter()
                .map(|s| (s.shard_id, s.state))
                .chain(info.remote_shards.iter().map(|s| (s.shard_id, s.state)))
                .filter(|(_, state)| *state == ReplicaState::Active as i32)
                .map(|(id, _)| id)
                .collect();
            if active.len() as u64 >= info.shard_count {
                return Ok(());
            }
            if started.elapsed() >= READY_WAIT {
                // A shard with no copy left (a node down, one replica) is
                // the cluster's state, not a start-up race: go on, and let
                // the reads and writes that need it say so.
                tracing::warn!(
                    active = active.len(),
                    shards = info.shard_count,
                    collection = %self.target.collection,
                    "not every shard has an active replica; look at the cluster (GET /collections/NAME/cluster on a node)"
                );
                return Ok(());
            }
            std::thread::sleep(READY_POLL);
        }
    }

    pub(super) fn create_collection(&self, dimension: usize) -> Result<()> {
        let name = self.target.collection.clone();
        let request = CreateCollection {
            collection_name: name.clone(),
            vectors_config: Some(VectorsConfig {
                config: Some(vectors_config::Config::ParamsMap(VectorParamsMap {
                    map: [(
                        DENSE_VECTOR.to_string(),
                        VectorParams {
                            size: dimension as u64,
                            distance: Distance::Cosine as i32,
                            ..Default::default()
                        },
                    )]
                    .into(),
                })),
            }),
            sparse_vectors_config: Some(SparseVectorConfig {
                map: [(
                    LEXICAL_VECTOR.to_string(),
                    SparseVectorParams {
                        index: None,
                        modifier: Some(Modifier::Idf as i32),
                    },
                )]
                .into(),
            }),
            shard_number: nonzero(self.layout.shard_number),
            replication_factor: nonzero(self.layout.replication_factor),
            write_consistency_factor: nonzero(self.layout.write_consistency_factor),
            ..Default::default()
        };
        let client = self.client.clone();
        let created = self.run(async move { client.create_collection(request).await });
        if let Err(e) = created {
            // Another process may have created it in the meantime.
            let client = self.client.clone();
            let again = name.clone();
            if self.run(async move { client.collection_exists(again).await })? {
                return Ok(());
            }
            return Err(e);
        }
        tracing::info!(url = %self.target.url, collection = %name, dimension, "created the collection");
        // A keyword index on `source` makes delete-by-source and source
        // filters cheap once the collection is large.
        self.keyword_index("source")?;
        self.keyword_index(READERS_FIELD)?;
        self.integer_index(super::convert::TERMS_FIELD)
    }

    /// Gives every point written before GRACE kept term ids its `terms`
    /// (from its lexical vector), a page at a time, and the field its
    /// index (on every open: an index that cannot be made only warns, as
    /// the readers index does).
    pub(super) fn backfill_terms(&self) -> Result<()> {
        use qdrant_client::qdrant::{
            Condition, Filter, PointsIdsList, PointsSelector, PointsUpdateOperation, ScrollPoints,
            UpdateBatchPoints, VectorsSelector, WithVectorsSelector, points_selector,
            points_update_operation, with_vectors_selector,
        };
        let field = super::convert::TERMS_FIELD;
        if let Err(e) = self.integer_index(field) {
            tracing::warn!(error = %e, "cannot create the term ids index");
        }
        let missing = Filter::must([Condition::is_empty(field)]);
        let (mut fixed, mut offset) = (0usize, None);
        loop {
            let request = ScrollPoints {
                collection_name: self.target.collection.clone(),
                filter: Some(missing.clone()),
                offset,
                limit: Some(256),
                with_vectors: Some(WithVectorsSelector {
                    selector_options: Some(with_vectors_selector::SelectorOptions::Include(
                        VectorsSelector {
                            names: vec![LEXICAL_VECTOR.to_string()],
                        },
                    )),
                }),
                ..Default::default()
            };
            let client = self.client.clone();
            let page = self.run(async move { client.scroll(request).await })?;
            if page.result.is_empty() {
                break;
            }
            let operations: Vec<PointsUpdateOperation> = page
                .result
                .into_iter()
                .map(|p| {
                    let terms = super::convert::lexical_of(p.vectors.as_ref())
                        .map(|s| s.indices)
                        .unwrap_or_default();
                    let mut payload = qdrant_client::Payload::new();
                    payload.insert(field, super::convert::terms_payload(&terms));
                    PointsUpdateOperation {
                        operation: Some(points_update_operation::Operation::SetPayload(
                            points_update_operation::SetPayload {
                                payload: payload.into(),
                                points_selector: Some(PointsSelector {
                                    points_selector_one_of: Some(
                                        points_selector::PointsSelectorOneOf::Points(
                                            PointsIdsList {
                                                ids: p.id.into_iter().collect(),
                                            },
                                        ),
                                    ),
                                }),
                                ..Default::default()
                            },
                        )),
                    }
                })
                .collect();
            fixed += operations.len();
            let request = UpdateBatchPoints {
                collection_name: self.target.collection.clone(),
                wait: Some(true),
                operations,
                ..Default::default()
            };
            let client = self.client.clone();
            self.run(async move { client.update_points_batch(request).await })?;
            // The next page after this one: a page is never read twice.
            match page.next_page_offset {
                Some(next) => offset = Some(next),
                None => break,
            }
        }
        if fixed > 0 {
            tracing::info!(collection = %self.target.collection, points = fixed, "term ids written for a principal's lexical statistics");
        }
        Ok(())
    }

    /// Creates a keyword index on `field` (the server keeps an existing
    /// one of the same type as it is).
    pub(super) fn keyword_index(&self, field: &str) -> Result<()> {
        self.field_index(field, FieldType::Keyword)
    }

    /// Creates an integer (match) index on `field`.
    pub(super) fn integer_index(&self, field: &str) -> Result<()> {
        self.field_index(field, FieldType::Integer)
    }

    fn field_index(&self, field: &str, kind: FieldType) -> Result<()> {
        let request = CreateFieldIndexCollection {
            collection_name: self.target.collection.clone(),
            wait: Some(true),
            field_name: field.to_string(),
            field_type: Some(kind as i32),
            ..Default::default()
        };
        let client = self.client.clone();
        let response = self.run(async move { client.create_field_index(request).await })?;
        self.check_applied(&response, "create a payload index")
    }

    /// The `dense` vector size of the collection, checking that it has the
    /// vectors GRACE writes, with the parameters GRACE needs (cosine, the
    /// IDF modifier) and the configured layout: a collection that exists
    /// with other parameters is a [`StoreError::ParametersDiffer`]; and
    /// its number of shards.
    pub(super) fn check_collection(&self) -> Result<(usize, u32)> {
        let client = self.client.clone();
        let name = self.target.collection.clone();
        let info = self.run(async move { client.collection_info(name).await })?;
        let params = info
            .result
            .and_then(|i| i.config)
            .and_then(|c| c.params)
            .ok_or_else(|| {
                self.target
                    .server("the server sent no collection parameters")
            })?;
        let dense = params
            .vectors_config
            .as_ref()
            .and_then(|v| v.config.as_ref())
            .and_then(|c| match c {
                vectors_config::Config::ParamsMap(m) => m.map.get(DENSE_VECTOR),
                vectors_config::Config::Params(_) => None,
            });
        let lexical = params
            .sparse_vectors_config
            .as_ref()
            .and_then(|s| s.map.get(LEXICAL_VECTOR));
        let (Some(dense), Some(lexical)) = (dense, lexical) else {
            return Err(self.target.server(format!(
                "the collection has no `{DENSE_VECTOR}` and `{LEXICAL_VECTOR}` vectors; it was not written by grace"
            )));
        };
        let mut differences = Vec::new();
        if dense.distance != Distance::Cosine as i32 {
            let found = Distance::try_from(dense.distance)
                .map(|d| d.as_str_name())
                .unwrap_or("unknown");
            differences.push(format!(
                "`{DENSE_VECTOR}` uses distance {found}, grace needs Cosine"
            ));
        }
        if lexical.modifier != Some(Modifier::Idf as i32) {
            differences.push(format!(
                "`{LEXICAL_VECTOR}` has no IDF modifier, which grace's lexical ranking needs"
            ));
        }
        let layout = [
            (
                "collection.shard_number",
                self.layout.shard_number,
                params.shard_number,
                "shards are fixed when a collection is created",
            ),
            (
                "collection.replication_factor",
                self.layout.replication_factor,
                params.replication_factor.unwrap_or(1),
                "change it on the server (PATCH /collections/NAME) or in the setting",
            ),
            (
                "collection.write_consistency_factor",
                self.layout.write_consistency_factor,
                params.write_consistency_factor.unwrap_or(1),
                "change it on the server (PATCH /collections/NAME) or in the setting",
            ),
        ];
        for (key, wanted, found, how) in layout {
            if wanted != 0 && wanted != found {
                differences.push(format!(
                    "{key} is {wanted} but the collection has {found} ({how}; 0 accepts what it has)"
                ));
            }
        }
        if !differences.is_empty() {
            return Err(StoreError::ParametersDiffer {
                path: self.target.location(),
                differences: differences.join("; "),
            });
        }
        Ok((dense.size as usize, params.shard_number.max(1)))
    }
}

/// `Some(n)` for a setting given, `None` (the server's default) for 0.
fn nonzero(n: u32) -> Option<u32> {
    (n != 0).then_some(n)
}
