//! [`CachedEmbedder`]: remembers the vectors of recently embedded texts.
//!
//! Answering embeds the same texts again and again: the question once for
//! the search and once more in the extractive answerer, and every sentence
//! of the retrieved passages, which in a knowledge base that changes
//! rarely are the same few hundred passages for most questions. Without a
//! cache those sentences cost about nine tenths of an `ask` (measured with
//! `perf` under `scripts/load`: 93% of the server's time was in ONNX
//! Runtime). Ingest does not go through the cache: every chunk is new.
//!
//! The cache is bounded by a count of vectors and evicts in two
//! generations: lookups look in the current map, then in the previous one
//! (moving a hit forward); when the current map is full it becomes the
//! previous one and the old previous one is dropped. Recently used vectors
//! survive, the memory bound is `2 × capacity` vectors, and there is no
//! per-entry bookkeeping.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::{EmbedError, Embedder, Result};

/// Documents and queries are embedded differently by some models, so they
/// are cached apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Document,
    Query,
}

type Key = (Kind, String);

struct Generations {
    current: HashMap<Key, Arc<[f32]>>,
    previous: HashMap<Key, Arc<[f32]>>,
}

/// An [`Embedder`] that keeps up to about `capacity` recent vectors of
/// another one (see the module documentation).
pub struct CachedEmbedder {
    inner: Arc<dyn Embedder>,
    capacity: usize,
    generations: Mutex<Generations>,
}

impl CachedEmbedder {
    /// Caches `inner`'s vectors; `capacity` is the size of one generation
    /// (`embedding.cache_size`). With `capacity` 0 nothing is kept.
    pub fn new(inner: Arc<dyn Embedder>, capacity: usize) -> Self {
        Self {
            inner,
            capacity,
            generations: Mutex::new(Generations {
                current: HashMap::new(),
                previous: HashMap::new(),
            }),
        }
    }

    /// Vectors held now (both generations).
    pub fn len(&self) -> usize {
        self.with_generations(|g| g.current.len() + g.previous.len())
    }

    /// Whether no vector is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn with_generations<T>(&self, f: impl FnOnce(&mut Generations) -> T) -> T {
        // A panic while holding the lock cannot leave the maps inconsistent
        // (every change is one insert or one swap), so a poisoned lock is
        // still usable.
        let mut guard = self
            .generations
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        f(&mut guard)
    }

    fn get(&self, key: &Key) -> Option<Arc<[f32]>> {
        self.with_generations(|g| {
            if let Some(v) = g.current.get(key) {
                return Some(v.clone());
            }
            let v = g.previous.remove(key)?;
            insert(g, self.capacity, key.clone(), v.clone());
            Some(v)
        })
    }

    fn put(&self, key: Key, vector: &[f32]) {
        if self.capacity == 0 {
            return;
        }
        self.with_generations(|g| insert(g, self.capacity, key, Arc::from(vector)));
    }

    fn embed_kind(&self, kind: Kind, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        let mut out: Vec<Option<Vec<f32>>> = Vec::with_capacity(texts.len());
        let mut missing: Vec<String> = Vec::new();
        let mut missing_at: Vec<usize> = Vec::new();
        for (i, text) in texts.iter().enumerate() {
            match self.get(&(kind, text.clone())) {
                Some(v) => out.push(Some(v.to_vec())),
                None => {
                    out.push(None);
                    missing.push(text.clone());
                    missing_at.push(i);
                }
            }
        }
        if !missing.is_empty() {
            let vectors = match kind {
                Kind::Document => self.inner.embed(&missing)?,
                Kind::Query => missing
                    .iter()
                    .map(|q| self.inner.embed_query(q))
                    .collect::<Result<Vec<_>>>()?,
            };
            if vectors.len() != missing.len() {
                return Err(EmbedError::Model(format!(
                    "the model returned {} vectors for {} texts",
                    vectors.len(),
                    missing.len()
                )));
            }
            for ((text, at), vector) in missing.into_iter().zip(missing_at).zip(vectors) {
                self.put((kind, text), &vector);
                out[at] = Some(vector);
            }
        }
        Ok(out.into_iter().flatten().collect())
    }
}

fn insert(g: &mut Generations, capacity: usize, key: Key, vector: Arc<[f32]>) {
    if g.current.len() >= capacity {
        g.previous = std::mem::take(&mut g.current);
    }
    g.current.insert(key, vector);
}

impl Embedder for CachedEmbedder {
    fn dimension(&self) -> usize {
        self.inner.dimension()
    }

    fn model_id(&self) -> &str {
        self.inner.model_id()
    }

    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        self.embed_kind(Kind::Document, texts)
    }

    fn embed_query(&self, text: &str) -> Result<Vec<f32>> {
        self.embed_kind(Kind::Query, &[text.to_string()])?
            .pop()
            .ok_or_else(|| EmbedError::Model("the model returned no vector".into()))
    }

    fn languages(&self) -> &str {
        self.inner.languages()
    }

    fn similarity_scale(&self) -> super::SimilarityScale {
        self.inner.similarity_scale()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Embeds a text as [its length, number of calls so far], counting the
    /// texts it was asked for.
    #[derive(Default)]
    struct Counting {
        texts: AtomicUsize,
        queries: AtomicUsize,
    }

    impl Embedder for Counting {
        fn dimension(&self) -> usize {
            2
        }
        fn model_id(&self) -> &str {
            "counting"
        }
        fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
            self.texts.fetch_add(texts.len(), Ordering::SeqCst);
            Ok(texts.iter().map(|t| vec![t.len() as f32, 0.0]).collect())
        }
        fn embed_query(&self, text: &str) -> Result<Vec<f32>> {
            self.queries.fetch_add(1, Ordering::SeqCst);
            Ok(vec![text.len() as f32, 1.0])
        }
    }

    fn strings(texts: &[&str]) -> Vec<String> {
        texts.iter().map(|t| t.to_string()).collect()
    }

    #[test]
    fn embeds_only_what_it_has_not_seen_and_keeps_order() {
        let inner = Arc::new(Counting::default());
        let cache = CachedEmbedder::new(inner.clone(), 100);
        let first = cache.embed(&strings(&["a", "bb"])).unwrap();
        assert_eq!(first, vec![vec![1.0, 0.0], vec![2.0, 0.0]]);
        let second = cache.embed(&strings(&["ccc", "a", "bb"])).unwrap();
        assert_eq!(second, vec![vec![3.0, 0.0], vec![1.0, 0.0], vec![2.0, 0.0]]);
        assert_eq!(
            inner.texts.load(Ordering::SeqCst),
            3,
            "a and bb were cached"
        );
    }

    #[test]
    fn queries_and_documents_are_cached_apart() {
        let inner = Arc::new(Counting::default());
        let cache = CachedEmbedder::new(inner.clone(), 100);
        assert_eq!(cache.embed_query("q").unwrap(), vec![1.0, 1.0]);
        assert_eq!(cache.embed(&strings(&["q"])).unwrap(), vec![vec![1.0, 0.0]]);
        assert_eq!(cache.embed_query("q").unwrap(), vec![1.0, 1.0]);
        assert_eq!(inner.queries.load(Ordering::SeqCst), 1);
        assert_eq!(inner.texts.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn stays_within_two_generations_and_keeps_recently_used_vectors() {
        let inner = Arc::new(Counting::default());
        let cache = CachedEmbedder::new(inner.clone(), 2);
        cache.embed(&strings(&["a", "b"])).unwrap(); // current {a, b}
        cache.embed(&strings(&["c"])).unwrap(); // previous {a, b}, current {c}
        cache.embed(&strings(&["a"])).unwrap(); // hit, moved forward: current {c, a}
        cache.embed(&strings(&["d"])).unwrap(); // previous {c, a}, current {d}; b dropped
        assert!(cache.len() <= 4);
        let before = inner.texts.load(Ordering::SeqCst);
        cache.embed(&strings(&["a", "c", "d"])).unwrap();
        assert_eq!(inner.texts.load(Ordering::SeqCst), before, "all three kept");
        cache.embed(&strings(&["b"])).unwrap();
        assert_eq!(
            inner.texts.load(Ordering::SeqCst),
            before + 1,
            "b was evicted"
        );
    }

    #[test]
    fn capacity_zero_keeps_nothing() {
        let inner = Arc::new(Counting::default());
        let cache = CachedEmbedder::new(inner.clone(), 0);
        cache.embed(&strings(&["a"])).unwrap();
        cache.embed(&strings(&["a"])).unwrap();
        assert_eq!(inner.texts.load(Ordering::SeqCst), 2);
        assert!(cache.is_empty());
    }
}
