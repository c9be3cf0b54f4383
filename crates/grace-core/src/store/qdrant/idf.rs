//! A principal's lexical statistics on a Qdrant server.
//!
//! The lexical ranking's BM25 weighs a term by its rarity, which the
//! server's IDF modifier counts over the whole collection: Qdrant 1.16 has
//! no parameter to count it over the points a filter keeps (qdrant-edge
//! has, and the embedded store uses it). A rare word in a restricted
//! document, a secret project's name, would then change the weight that
//! word has in everyone's ranking, and someone could tell that it exists.
//!
//! So a search within readers re-weights the query's terms first: each
//! term's weight is multiplied by its IDF over the points the readers may
//! read, divided by the IDF the server will apply. The server's ranking is
//! then exactly BM25 with the readable points' statistics.
//!
//! - The readable statistics are exact counts: the readable points, and
//!   those among them whose `terms` (the point's term ids, a payload field
//!   with an integer index, written with every point) hold the term.
//! - The server's IDF is read back from the server itself rather than
//!   recounted: a search for the term alone scores its best point by
//!   `idf × the point's weight for the term`, and that weight is returned
//!   with it. (The server's counts include points deleted but not yet
//!   vacuumed; a recount would not, and the difference would leak.)
//!
//! For a query of k terms (at most [`MAX_TERMS`], the first by weight,
//! then by term id) that is one batch of k probes and up to k + 1 counts,
//! at most [`IN_FLIGHT`] requests at once, and only for searches within
//! readers: the service key's, the operator's and an open knowledge base's
//! searches are as they were.
//!
//! The readable counts are kept for [`FRESH_FOR`] and forgotten at once
//! when this store writes (another process's writes are seen within that
//! time; a count only ever counts readable points). The server's IDF is
//! read at every search: it moves with documents the readers may not read
//! (another process's writes, the server's vacuuming), and a kept value
//! would carry that movement into their ranking.
//!
//! A collection of several shards counts statistics per shard, which one
//! probe cannot read: there a search within readers has no lexical
//! ranking (the dense one alone), rather than one weighed by documents
//! its readers may not read.

use qdrant_client::qdrant::r#match::MatchValue;
use qdrant_client::qdrant::{
    Condition, CountPoints, Filter, Query, QueryBatchPoints, QueryPoints,
    SparseVector as QdrantSparse, VectorInput, VectorsSelector, WithVectorsSelector, query,
    vector_input, vector_output, with_vectors_selector,
};

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use super::QdrantStore;
use super::convert::{TERMS_FIELD, readers_filter};
use crate::lexical::SparseVector;
use crate::store::{LEXICAL_VECTOR, Result};

/// Most query terms re-weighted: a longer query (a long Japanese one, in
/// bigrams) keeps the first by weight, then by term id.
pub(super) const MAX_TERMS: usize = 64;

/// Statistics requests in flight at once, per search.
const IN_FLIGHT: usize = 16;

/// How long a readable count is reused.
pub(super) const FRESH_FOR: std::time::Duration = std::time::Duration::from_secs(10);

/// Most statistics kept; past it the cache starts again empty.
const CACHED_MAX: usize = 100_000;

/// One readers' counts: a term, or none for all readable points → when
/// counted and the count.
type Counts = HashMap<Option<u32>, (Instant, usize)>;

/// Readable counts already asked for, with when.
#[derive(Default)]
pub(super) struct StatsCache {
    /// Moves on at the start and the end of every write: counts asked for
    /// across a write are not kept.
    generation: u64,
    /// The readers (one copy each) → a term, or none for all readable
    /// points → the count.
    counts: HashMap<Arc<str>, Counts>,
    /// Counts kept in all.
    entries: usize,
}

impl StatsCache {
    /// Forgets everything (this store writes).
    fn forget(&mut self) {
        self.generation = self.generation.wrapping_add(1);
        self.counts.clear();
        self.entries = 0;
    }

    fn count(&self, readers: &str, term: Option<u32>, now: Instant) -> Option<usize> {
        self.counts
            .get(readers)?
            .get(&term)
            .filter(|(at, _)| now.duration_since(*at) < FRESH_FOR)
            .map(|(_, n)| *n)
    }

    fn keep(&mut self, since: u64, readers: &str, terms: &[u32], stats: &[Stat], now: Instant) {
        if since != self.generation {
            return;
        }
        if self.entries + stats.len() > CACHED_MAX {
            self.counts.clear();
            self.entries = 0;
        }
        if !self.counts.contains_key(readers) {
            self.counts.insert(Arc::from(readers), HashMap::new());
        }
        let Some(kept) = self.counts.get_mut(readers) else {
            return;
        };
        for s in stats {
            let term = match *s {
                Stat::Readable(n) => Some((None, n)),
                Stat::TermReadable(i, n) => terms.get(i).map(|&t| (Some(t), n)),
                Stat::ServerIdf(..) => None,
            };
            if let Some((term, n)) = term
                && kept.insert(term, (now, n)).is_none()
            {
                self.entries += 1;
            }
        }
    }
}

/// What BM25 weighs a term by, as the server computes it: `n` points,
/// `df` of which hold the term.
fn idf(n: f64, df: f64) -> f64 {
    ((n - df + 0.5) / (df + 0.5) + 1.0).ln()
}

/// One request's answer: the readable count (`None`: all readable), a
/// term's readable count, or the server's IDF for a term (`None`: no point
/// holds it).
enum Stat {
    Readable(usize),
    TermReadable(usize, usize),
    ServerIdf(usize, Option<f64>),
}

impl QdrantStore {
    /// `query` with each term's weight scaled from the whole collection's
    /// IDF to the IDF over the points one of `readers` may read (see the
    /// module documentation); `None` where that cannot be exact (several
    /// shards).
    pub(super) fn readable_weights(
        &self,
        query: &SparseVector,
        readers: &[String],
    ) -> Result<Option<SparseVector>> {
        if self.shards > 1 {
            return Ok(None);
        }
        let query = &weightiest(query, MAX_TERMS);
        let key = readers.join("\u{1f}");
        let now = Instant::now();
        // What is fresh in the cache; the rest is asked for.
        let mut known = Vec::new();
        // The server's IDF every time; counts that are fresh from the
        // cache, the rest asked for.
        let mut need_idf: Vec<usize> = (0..query.indices.len()).collect();
        let (since, need_readable, mut need_count) = {
            let cache = self.stats.lock().unwrap_or_else(|e| e.into_inner());
            let readable = cache.count(&key, None, now);
            known.extend(readable.map(Stat::Readable));
            let mut need_count = Vec::new();
            for (i, &t) in query.indices.iter().enumerate() {
                match cache.count(&key, Some(t), now) {
                    Some(n) => known.push(Stat::TermReadable(i, n)),
                    None => need_count.push(i),
                }
            }
            (cache.generation, readable.is_none(), need_count)
        };
        let collection = self.target.collection.clone();
        let client = self.client.clone();
        let terms = query.indices.clone();
        let readable = readers_filter(readers);
        let (counts_for, idf_for) = (
            std::mem::take(&mut need_count),
            std::mem::take(&mut need_idf),
        );
        let asked = self.run(async move {
            let mut set = tokio::task::JoinSet::new();
            let permits = std::sync::Arc::new(tokio::sync::Semaphore::new(IN_FLIGHT));
            let count = |filter: Filter| CountPoints {
                collection_name: collection.clone(),
                filter: Some(filter),
                exact: Some(true),
                ..Default::default()
            };
            if need_readable {
                let (counter, request) = (client.clone(), count(readable.clone()));
                let permits = permits.clone();
                set.spawn(async move {
                    let _permit = permits.acquire_owned().await;
                    let r = counter.count(request).await?;
                    Ok(vec![Stat::Readable(counted(r.result)?)])
                });
            }
            for i in counts_for {
                let term = terms[i];
                let mut filter = readable.clone();
                filter.must.push(Condition::matches(
                    TERMS_FIELD,
                    MatchValue::Integer(i64::from(term)),
                ));
                let (counter, request) = (client.clone(), count(filter));
                let permits_count = permits.clone();
                set.spawn(async move {
                    let _permit = permits_count.acquire_owned().await;
                    let r = counter.count(request).await?;
                    Ok(vec![Stat::TermReadable(i, counted(r.result)?)])
                });
            }
            // The probes, one request for all of them.
            let probes: Vec<QueryPoints> = idf_for
                .iter()
                .map(|&i| QueryPoints {
                    collection_name: collection.clone(),
                    query: Some(Query {
                        variant: Some(query::Variant::Nearest(VectorInput {
                            variant: Some(vector_input::Variant::Sparse(QdrantSparse {
                                indices: vec![terms[i]],
                                values: vec![1.0],
                            })),
                        })),
                    }),
                    using: Some(LEXICAL_VECTOR.to_string()),
                    limit: Some(1),
                    with_vectors: Some(WithVectorsSelector {
                        selector_options: Some(with_vectors_selector::SelectorOptions::Include(
                            VectorsSelector {
                                names: vec![LEXICAL_VECTOR.to_string()],
                            },
                        )),
                    }),
                    ..Default::default()
                })
                .collect();
            if !probes.is_empty() {
                let prober = client.clone();
                let batch = QueryBatchPoints {
                    collection_name: collection.clone(),
                    query_points: probes,
                    ..Default::default()
                };
                let probed_terms: Vec<(usize, u32)> =
                    idf_for.iter().map(|&i| (i, terms[i])).collect();
                set.spawn(async move {
                    let r = prober.query_batch(batch).await?;
                    if r.result.len() != probed_terms.len() {
                        return Err(qdrant_client::QdrantError::ConversionError(
                            "the server answered another number of probes than were sent".into(),
                        ));
                    }
                    Ok(probed_terms
                        .iter()
                        .zip(r.result)
                        .map(|(&(i, term), found)| {
                            Stat::ServerIdf(i, server_idf(term, &found.result))
                        })
                        .collect::<Vec<_>>())
                });
            }
            let mut stats = Vec::with_capacity(set.len());
            while let Some(joined) = set.join_next().await {
                match joined {
                    Ok(Ok(found)) => stats.extend(found),
                    Ok(Err(e)) => return Err(e),
                    // A request's task cannot panic; a runtime going away
                    // ends the store anyway.
                    Err(_) => {
                        return Err(qdrant_client::QdrantError::ConversionError(
                            "a statistics request was cancelled".into(),
                        ));
                    }
                }
            }
            Ok(stats)
        })?;
        self.stats.lock().unwrap_or_else(|e| e.into_inner()).keep(
            since,
            &key,
            &query.indices,
            &asked,
            now,
        );
        known.extend(asked);
        Ok(Some(rescale(query, &known)))
    }
}

impl QdrantStore {
    /// Forgets the kept statistics now and again when the returned guard
    /// is dropped: hold it across a write.
    pub(super) fn writing(&self) -> Writing<'_> {
        self.forget_statistics();
        Writing(self)
    }

    fn forget_statistics(&self) {
        self.stats
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .forget();
    }
}

/// A write in progress (see [`QdrantStore::writing`]).
pub(super) struct Writing<'a>(&'a QdrantStore);

impl Drop for Writing<'_> {
    fn drop(&mut self) {
        self.0.forget_statistics();
    }
}

/// The server's IDF of `term`, read from a one-term search's best point
/// (`score = idf × the point's weight for the term`); `None` when no point
/// holds the term.
fn server_idf(term: u32, best: &[qdrant_client::qdrant::ScoredPoint]) -> Option<f64> {
    let p = best.first()?;
    let weight = match p.vectors.as_ref()?.get_vector_by_name(LEXICAL_VECTOR)? {
        vector_output::Vector::Sparse(s) => s
            .indices
            .iter()
            .position(|&t| t == term)
            .and_then(|at| s.values.get(at).copied()),
        _ => None,
    }?;
    (weight > 0.0).then(|| f64::from(p.score) / f64::from(weight))
}

/// A count's answer; a reply without one is an error, never zero.
fn counted(
    result: Option<qdrant_client::qdrant::CountResult>,
) -> std::result::Result<usize, qdrant_client::QdrantError> {
    result.map(|c| c.count as usize).ok_or_else(|| {
        qdrant_client::QdrantError::ConversionError("a count came back without its result".into())
    })
}

/// `query` with only its `max` weightiest terms (ties: the lower term id).
fn weightiest(query: &SparseVector, max: usize) -> SparseVector {
    if query.indices.len() <= max {
        return query.clone();
    }
    let mut terms: Vec<(u32, f32)> = query
        .indices
        .iter()
        .copied()
        .zip(query.values.iter().copied())
        .collect();
    terms.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    terms.truncate(max);
    terms.sort_by_key(|t| t.0);
    SparseVector {
        indices: terms.iter().map(|t| t.0).collect(),
        values: terms.iter().map(|t| t.1).collect(),
    }
}

/// `query` with each weight times `idf over the readable points / the
/// server's idf`. A term no readable point holds keeps its weight: it
/// scores no readable point.
fn rescale(query: &SparseVector, stats: &[Stat]) -> SparseVector {
    let k = query.indices.len();
    let mut readable = 0usize;
    let mut term_readable = vec![0usize; k];
    let mut server = vec![None; k];
    for s in stats {
        match *s {
            Stat::Readable(n) => readable = n,
            Stat::TermReadable(i, n) if i < k => term_readable[i] = n,
            Stat::ServerIdf(i, v) if i < k => server[i] = v,
            _ => {}
        }
    }
    let values = query
        .values
        .iter()
        .enumerate()
        .map(|(i, &w)| match server[i] {
            Some(at_server) if term_readable[i] > 0 && at_server > 0.0 => {
                // The counts are separate requests: a write between them
                // could make a term's count exceed the total.
                let n = readable.max(term_readable[i]) as f64;
                let own = idf(n, term_readable[i] as f64);
                (f64::from(w) * own / at_server).max(0.0) as f32
            }
            _ => w,
        })
        .collect();
    SparseVector {
        indices: query.indices.clone(),
        values,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_formula_is_the_servers() {
        // lib/segment/src/data_types/query_context.rs, `fancy_idf`.
        assert!((idf(10.0, 1.0) - ((10.0 - 1.0 + 0.5) / 1.5f64 + 1.0).ln()).abs() < 1e-12);
        assert!(idf(10.0, 10.0) > 0.0);
    }

    #[test]
    fn counts_are_reused_a_moment_and_never_across_a_write() {
        let mut cache = StatsCache::default();
        let now = Instant::now();
        let since = cache.generation;
        let stats = [
            Stat::Readable(7),
            Stat::TermReadable(0, 2),
            Stat::ServerIdf(0, Some(1.5)),
        ];
        cache.keep(since, "public", &[42], &stats, now);
        assert_eq!(cache.count("public", None, now), Some(7));
        assert_eq!(cache.count("public", Some(42), now), Some(2));
        // The server's IDF is never kept.
        assert_eq!(cache.entries, 2);
        // Other readers count their own.
        assert_eq!(cache.count("user:bo", None, now), None);
        // Stale after FRESH_FOR.
        assert_eq!(cache.count("public", None, now + FRESH_FOR), None);
        // A write forgets them, and what was asked for across it is not kept.
        cache.forget();
        assert_eq!(cache.count("public", Some(42), now), None);
        cache.keep(since, "public", &[42], &stats, now);
        assert_eq!(cache.count("public", None, now), None);
        assert_eq!(cache.entries, 0);
    }

    #[test]
    fn a_long_query_keeps_its_weightiest_terms_in_order() {
        let q = SparseVector {
            indices: vec![1, 2, 3, 4],
            values: vec![0.5, 2.0, 1.0, 2.0],
        };
        let w = weightiest(&q, 2);
        assert_eq!(w.indices, [2, 4]);
        assert_eq!(w.values, [2.0, 2.0]);
        assert_eq!(weightiest(&q, 9), q);
    }

    #[test]
    fn weights_move_from_the_servers_idf_to_the_readable_points_idf() {
        let q = SparseVector {
            indices: vec![3, 7, 9],
            values: vec![1.0, 2.0, 1.0],
        };
        let server_idf = idf(100.0, 50.0);
        let stats = [
            Stat::Readable(10),
            Stat::TermReadable(0, 1),
            Stat::ServerIdf(0, Some(server_idf)),
            // Nobody may read a point with term 7: unchanged.
            Stat::TermReadable(1, 0),
            Stat::ServerIdf(1, Some(1.0)),
            // No point holds term 9 at all.
            Stat::TermReadable(2, 0),
            Stat::ServerIdf(2, None),
        ];
        let r = rescale(&q, &stats);
        let want = (idf(10.0, 1.0) / server_idf) as f32;
        assert!((r.values[0] - want).abs() < 1e-6, "{r:?}");
        assert_eq!(r.values[1], 2.0);
        assert_eq!(r.values[2], 1.0);
        assert_eq!(r.indices, q.indices);
    }
}
