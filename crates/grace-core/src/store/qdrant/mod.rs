//! The Qdrant server backend: the same collection layout as
//! [`super::edge::EdgeStore`] (named dense vector `dense`, cosine; sparse
//! vector `lexical` with the IDF modifier; a keyword index on `source`),
//! kept in a Qdrant server or cluster and reached over gRPC with
//! `qdrant-client`.
//!
//! The [`VectorStore`] trait is synchronous, the client is async: the
//! store owns a small tokio runtime, runs every call as a task on it and
//! waits for the answer on a channel. That works from plain threads, from
//! tokio's `spawn_blocking` threads and from inside another runtime, and it
//! never calls `block_on` on someone else's async worker. (Called directly
//! on an async worker, a call blocks that worker for one round trip, like
//! any other synchronous store; async callers use `spawn_blocking`.)
//!
//! Writes wait until the server has applied them (`wait = true`), so
//! [`VectorStore::flush`] has nothing left to do: the server's own
//! write-ahead log makes an applied update durable. Index building is the
//! server's optimizer's job, so [`VectorStore::optimize`] does nothing.
//!
//! [`VectorStore`]: super::VectorStore
//! [`VectorStore::flush`]: super::VectorStore::flush
//! [`VectorStore::optimize`]: super::VectorStore::optimize

mod collection;
mod convert;
mod idf;
mod points;
mod target;
mod version;

use crate::access::READERS_FIELD;
use std::future::Future;
use std::time::Duration;

use qdrant_client::{Qdrant, QdrantError};
use tokio::runtime::Runtime;

use self::target::Target;
use self::version::parse_version;
pub use self::version::{CLIENT_VERSION, TESTED_VERSIONS, check_version, supported};
use super::{Result, StoreError};
use crate::config::{CollectionConfig, QdrantConfig};

/// A collection on a Qdrant server.
pub struct QdrantStore {
    client: Qdrant,
    // `Option` so that `Drop` can shut it down without blocking.
    runtime: Option<Runtime>,
    target: Target,
    /// How a new collection is spread over a cluster (0: the server's
    /// default, and not checked on an existing collection).
    layout: CollectionConfig,
    dimension: usize,
    /// The collection's shards: each counts its own term statistics.
    shards: u32,
    /// Term statistics of principals' searches, reused a moment
    /// (`idf.rs`); emptied by every write.
    stats: std::sync::Mutex<idf::StatsCache>,
    server_version: String,
}

impl std::fmt::Debug for QdrantStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QdrantStore")
            .field("url", &self.target.url)
            .field("collection", &self.target.collection)
            .field("dimension", &self.dimension)
            .field("server_version", &self.server_version)
            .finish()
    }
}

impl QdrantStore {
    /// Opens `collection` on the server `server`, creating it for
    /// `dimension`-sized dense vectors (with the lexical vector and the
    /// `source` index) if it does not exist yet.
    pub fn open_or_create(
        server: &QdrantConfig,
        collection: &CollectionConfig,
        dimension: usize,
    ) -> Result<Self> {
        let mut store = Self::connect(server, collection)?;
        let target = store.target.clone();
        let client = store.client.clone();
        let name = target.collection.clone();
        let exists = store.run(async move { client.collection_exists(name).await })?;
        if exists {
            store.wait_active()?;
            // A collection written before readers existed gets their index
            // here (a key that may not change the collection only warns:
            // filters still work, more slowly).
            if let Err(e) = store.keyword_index(READERS_FIELD) {
                tracing::warn!(error = %e, "cannot create the readers index");
            }
            // Points written before the term ids were kept get them (and
            // their index): a principal's lexical statistics count them.
            store.backfill_terms()?;
        } else {
            store.create_collection(dimension)?;
            store.wait_active()?;
        }
        (store.dimension, store.shards) = store.check_collection()?;
        if store.dimension != dimension {
            return Err(StoreError::DimensionMismatch {
                path: target.location(),
                found: store.dimension,
                expected: dimension,
            });
        }
        Ok(store)
    }

    /// Opens an existing collection; [`StoreError::CollectionNotFound`] if
    /// the server has none of that name.
    pub fn open_existing(server: &QdrantConfig, collection: &CollectionConfig) -> Result<Self> {
        let mut store = Self::connect(server, collection)?;
        let client = store.client.clone();
        let name = store.target.collection.clone();
        if !store.run(async move { client.collection_exists(name).await })? {
            return Err(StoreError::CollectionNotFound {
                url: store.target.url.clone(),
                collection: store.target.collection.clone(),
            });
        }
        store.wait_active()?;
        (store.dimension, store.shards) = store.check_collection()?;
        Ok(store)
    }

    /// Deletes `collection` from the server; returns whether it existed.
    pub fn drop_collection(server: &QdrantConfig, collection: &CollectionConfig) -> Result<bool> {
        let store = Self::connect(server, collection)?;
        let client = store.client.clone();
        let name = store.target.collection.clone();
        if !store.run(async move { client.collection_exists(name).await })? {
            return Ok(false);
        }
        let client = store.client.clone();
        let name = store.target.collection.clone();
        let response = store.run(async move { client.delete_collection(name).await })?;
        Ok(response.result)
    }

    /// The client, its runtime, and a health check that proves the server
    /// answers and speaks a compatible protocol version.
    fn connect(server: &QdrantConfig, collection: &CollectionConfig) -> Result<Self> {
        let target = Target {
            url: server.url.clone(),
            collection: collection.name.clone(),
        };
        let timeout = Duration::try_from_secs_f64(server.timeout_seconds)
            .map_err(|e| target.server(format!("qdrant.timeout_seconds: {e}")))?;
        let api_key = (!server.api_key.is_empty()).then(|| server.api_key.clone());
        // The client's own compatibility check only prints to stdout and
        // runs a second runtime; the check below fails instead.
        let client = Qdrant::from_url(&server.url)
            .api_key(api_key)
            .timeout(timeout)
            .connect_timeout(timeout)
            .skip_compatibility_check()
            .build()
            .map_err(|e| target.error(e))?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("grace-qdrant")
            .enable_all()
            .build()
            .map_err(|e| target.server(format!("cannot start the client's runtime: {e}")))?;
        let mut store = Self {
            client,
            runtime: Some(runtime),
            target,
            layout: collection.clone(),
            dimension: 0,
            shards: 1,
            stats: Default::default(),
            server_version: String::new(),
        };
        let client = store.client.clone();
        let reply = store
            .run(async move { client.health_check().await })
            .map_err(|e| match e {
                StoreError::Server {
                    url,
                    collection,
                    message,
                } => StoreError::Server {
                    url,
                    collection,
                    message: format!(
                        "the health check failed ({message}); is this a Qdrant server's gRPC port?"
                    ),
                },
                other => other,
            })?;
        if !check_version(&store.target.url, &reply.version)? {
            tracing::warn!(
                url = %store.target.url,
                version = %reply.version,
                "this Qdrant server version has not been tested with grace (supported: {})",
                supported()
            );
        }
        store.server_version = reply.version;
        Ok(store)
    }

    /// The server's version, as its health check reported it.
    pub fn server_version(&self) -> &str {
        &self.server_version
    }

    /// Whether the server's version is one GRACE is tested against
    /// ([`TESTED_VERSIONS`]).
    pub fn version_tested(&self) -> bool {
        parse_version(&self.server_version).is_some_and(|v| TESTED_VERSIONS.contains(&v))
    }

    /// The server URL.
    pub fn url(&self) -> &str {
        &self.target.url
    }

    /// The collection's name.
    pub fn collection(&self) -> &str {
        &self.target.collection
    }

    /// Size of the dense vectors.
    pub fn dimension(&self) -> usize {
        self.dimension
    }

    /// Runs one client call on the store's runtime and waits for it.
    fn run<T, F>(&self, call: F) -> Result<T>
    where
        T: Send + 'static,
        F: Future<Output = std::result::Result<T, QdrantError>> + Send + 'static,
    {
        let Some(runtime) = &self.runtime else {
            return Err(self.target.server("the store is closed"));
        };
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        runtime.spawn(async move {
            let _ = tx.send(call.await);
        });
        match rx.recv() {
            Ok(result) => result.map_err(|e| self.target.error(e)),
            Err(_) => Err(self
                .target
                .server("the client task stopped before answering")),
        }
    }
}

impl Drop for QdrantStore {
    fn drop(&mut self) {
        // Never blocks, so dropping the store inside async code is safe.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

#[cfg(test)]
mod tests {
    use qdrant_client::qdrant::r#match::MatchValue;

    use super::*;
    use crate::store::PayloadFilter;

    #[test]
    fn versions_from_the_tested_one_to_one_past_the_client_are_accepted() {
        for tested in ["1.16.3", "1.16.0", "v1.16.1"] {
            assert!(check_version("http://x", tested).unwrap(), "{tested}");
        }
        for untested in ["1.17.0", "1.19.3", "1.20.0", "1.21.0"] {
            assert!(!check_version("http://x", untested).unwrap(), "{untested}");
        }
        for bad in [
            "1.15.9", "1.10.0", "1.22.0", "2.20.0", "0.16.3", "1.16", "dev", "",
        ] {
            let err = check_version("http://x", bad);
            assert!(matches!(err, Err(StoreError::Incompatible { .. })), "{bad}");
        }
        let m = check_version("http://x:6334", "1.9.0")
            .unwrap_err()
            .to_string();
        assert!(m.contains("1.9.0") && m.contains(&supported()), "{m}");
        assert_eq!(supported(), "1.16 to 1.21 (tested: 1.16)");
    }

    #[test]
    fn source_filters_are_exact_keyword_matches() {
        use qdrant_client::qdrant::condition::ConditionOneOf;
        let f = QdrantStore::filter(Some(&PayloadFilter::source("/kb/a b.md"))).unwrap();
        let Some(ConditionOneOf::Field(field)) = &f.must[0].condition_one_of else {
            panic!("{f:?}");
        };
        assert_eq!(field.key, "source");
        assert_eq!(
            field.r#match.as_ref().unwrap().match_value,
            Some(MatchValue::Keyword("/kb/a b.md".into()))
        );
        assert!(QdrantStore::filter(Some(&PayloadFilter::default())).is_none());
        assert!(QdrantStore::filter(None).is_none());
    }
}
