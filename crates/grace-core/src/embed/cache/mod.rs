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
//!
//! A long-running server keeps the cache across a restart: it loads the
//! file [`CachedEmbedder::save`] wrote ([`snapshot`] has its layout) before
//! it listens, and saves it again every
//! [`SAVE_EVERY`] while new vectors came
//! in, and when it stops. Without it a restarted server's first questions
//! embedded every passage sentence again (each restart of the 10-minute
//! soak doubled the asks' 99th percentile).

mod snapshot;

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::{EmbedError, Embedder, Result};

/// How often a server saves its vector cache while vectors are added.
pub const SAVE_EVERY: Duration = Duration::from_secs(30);

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
    /// Whether a vector was added since the last save or load.
    dirty: AtomicBool,
    /// Held for a whole save: two saves (the periodic one and the one at
    /// shutdown) never write the temporary file at once.
    saving: Mutex<()>,
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
            dirty: AtomicBool::new(false),
            saving: Mutex::new(()),
        }
    }

    /// Saves the vectors held to `path` (through a temporary file beside
    /// it: a crash leaves the old file or the new one) when one was added
    /// since the last save or load; returns whether it wrote.
    pub fn save(&self, path: &Path) -> Result<bool> {
        // A save that panicked left nothing half done in memory.
        let _saving = self
            .saving
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if !self.dirty.swap(false, Ordering::SeqCst) {
            return Ok(false);
        }
        // Older generation first: loading inserts in file order, so the
        // recent vectors end up in the current generation again. Only the
        // documents' sentences are kept: they are what a restart would
        // embed again; the askers' questions stay in memory.
        let entries: Vec<snapshot::Entry> = self.with_generations(|g| {
            g.previous
                .iter()
                .chain(g.current.iter())
                .filter(|((kind, _), _)| *kind == Kind::Document)
                .map(|((kind, text), vector)| snapshot::Entry {
                    kind: *kind,
                    text: text.clone(),
                    vector: vector.clone(),
                })
                .collect()
        });
        let bytes = snapshot::encode(
            self.model_id(),
            self.dimension(),
            &entries,
            self.capacity.saturating_mul(2),
        );
        let written = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .map_or(Ok(()), std::fs::create_dir_all)
            .map_err(|e| format!("cannot create its folder: {e}"))
            .and_then(|()| {
                crate::durable::replace_private_file(path, &path.with_extension("bin.tmp"), &bytes)
                    .map_err(|e| format!("cannot {} {}: {}", e.action, e.path.display(), e.source))
            });
        written.map(|()| true).map_err(|message| {
            // Try again at the next save.
            self.dirty.store(true, Ordering::SeqCst);
            EmbedError::CacheFile {
                path: path.to_path_buf(),
                message,
            }
        })
    }

    /// Adds the vectors a [`CachedEmbedder::save`] left in `path`, as if
    /// they had just been embedded in the order saved; returns how many.
    /// No file is no vector. A file of another model or dimension, with
    /// more than the cache keeps, or damaged is refused whole (and
    /// replaced at the next save).
    pub fn load(&self, path: &Path) -> Result<usize> {
        let fail = |message: String| EmbedError::CacheFile {
            path: path.to_path_buf(),
            message,
        };
        if self.capacity == 0 {
            return Ok(0);
        }
        let file = match std::fs::File::open(path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(fail(format!("cannot open it: {e}"))),
        };
        let max_entries = self.capacity.saturating_mul(2);
        let max_bytes = snapshot::max_file_bytes(max_entries, self.dimension());
        let size = file
            .metadata()
            .map_err(|e| fail(format!("cannot read it: {e}")))?
            .len();
        if size > max_bytes {
            return Err(fail(format!(
                "it is {size} bytes, more than the {max_bytes} a cache of this size writes"
            )));
        }
        let entries = snapshot::decode(
            std::io::Read::take(std::io::BufReader::new(file), max_bytes + 1),
            self.model_id(),
            self.dimension(),
            max_entries,
        )
        .map_err(fail)?;
        let loaded = entries.len();
        self.with_generations(|g| {
            for e in entries {
                insert(g, self.capacity, (e.kind, e.text), e.vector);
            }
        });
        Ok(loaded)
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
        // Only documents' sentences are saved (see `save`).
        let saved = key.0 == Kind::Document;
        self.with_generations(|g| insert(g, self.capacity, key, Arc::from(vector)));
        if saved {
            self.dirty.store(true, Ordering::SeqCst);
        }
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

    fn query_leaves_a_core_free(&self) -> bool {
        self.inner.query_leaves_a_core_free()
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
    fn a_saved_cache_is_loaded_by_the_next_start_without_embedding_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("vector-cache").join("kb.bin");
        let first = CachedEmbedder::new(Arc::new(Counting::default()), 100);
        assert!(!first.save(&path).unwrap(), "nothing to save yet");
        first.embed(&strings(&["a", "bb"])).unwrap();
        first.embed_query("q?").unwrap();
        assert!(first.save(&path).unwrap());
        assert!(!first.save(&path).unwrap(), "saved already");

        // Only the file's owner reads it.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }

        let inner = Arc::new(Counting::default());
        let next = CachedEmbedder::new(inner.clone(), 100);
        // The documents' sentences, not the askers' questions.
        assert_eq!(next.load(&path).unwrap(), 2);
        assert_eq!(
            next.embed(&strings(&["bb", "a"])).unwrap(),
            vec![vec![2.0, 0.0], vec![1.0, 0.0]]
        );
        assert_eq!(inner.texts.load(Ordering::SeqCst), 0);
        assert_eq!(next.embed_query("q?").unwrap(), vec![2.0, 1.0]);
        assert_eq!(inner.queries.load(Ordering::SeqCst), 1);
        assert!(
            !next.save(&path).unwrap(),
            "neither loading nor a question is a change to save"
        );
    }

    #[test]
    fn a_file_bigger_than_the_cache_is_refused_and_one_that_fits_keeps_its_recent_vectors() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kb.bin");
        let big = CachedEmbedder::new(Arc::new(Counting::default()), 2);
        big.embed(&strings(&["a", "b"])).unwrap();
        big.embed(&strings(&["c", "d"])).unwrap(); // previous {a, b}, current {c, d}
        big.save(&path).unwrap();
        let inner = Arc::new(Counting::default());
        let small = CachedEmbedder::new(inner.clone(), 1);
        // Four vectors are more than twice one: refused whole.
        assert!(small.load(&path).is_err());
        let two = CachedEmbedder::new(inner.clone(), 2);
        assert_eq!(two.load(&path).unwrap(), 4);
        two.embed(&strings(&["c", "d"])).unwrap();
        assert_eq!(inner.texts.load(Ordering::SeqCst), 0, "c and d kept");
    }

    #[test]
    fn a_damaged_or_foreign_file_is_refused_and_the_cache_still_works() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kb.bin");
        let inner = Arc::new(Counting::default());
        let cache = CachedEmbedder::new(inner.clone(), 100);
        for bytes in [
            b"".to_vec(),
            b"GRACEVC1\xff\xff\xff\xff".to_vec(),
            vec![0xA5; 100_000],
            // Bigger than a cache of 100 vectors ever writes.
            vec![0; 1_000_000],
        ] {
            std::fs::write(&path, bytes).unwrap();
            let err = cache.load(&path).unwrap_err().to_string();
            assert!(err.contains("kb.bin"), "{err}");
            assert!(cache.is_empty());
        }
        // Another model's file.
        let other = CachedEmbedder::new(Arc::new(Counting::default()), 100);
        other.embed(&strings(&["x"])).unwrap();
        other.save(&path).unwrap();
        struct Other(Counting);
        impl Embedder for Other {
            fn dimension(&self) -> usize {
                2
            }
            fn model_id(&self) -> &str {
                "another"
            }
            fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
                self.0.embed(texts)
            }
        }
        let foreign = CachedEmbedder::new(Arc::new(Other(Counting::default())), 100);
        let err = foreign.load(&path).unwrap_err().to_string();
        assert!(err.contains("not of \"another\""), "{err}");
        assert!(foreign.is_empty());
        assert_eq!(
            cache.embed(&strings(&["ok"])).unwrap(),
            vec![vec![2.0, 0.0]]
        );
        // A missing file is an empty cache, not an error.
        assert_eq!(cache.load(&dir.path().join("none.bin")).unwrap(), 0);
    }

    #[test]
    fn a_save_that_fails_is_tried_again() {
        let dir = tempfile::tempdir().unwrap();
        let blocked = dir.path().join("a-file");
        std::fs::write(&blocked, b"").unwrap();
        let cache = CachedEmbedder::new(Arc::new(Counting::default()), 100);
        cache.embed(&strings(&["a"])).unwrap();
        // Its folder is a file: the save fails and says where.
        let err = cache.save(&blocked.join("kb.bin")).unwrap_err().to_string();
        assert!(err.contains("a-file"), "{err}");
        assert!(cache.save(&dir.path().join("kb.bin")).unwrap());
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
