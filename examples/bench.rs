//! GRACE's side of `scripts/bench` (the peer's is scripts/bench_peer.py):
//!
//! ```text
//! bench raw CORPUS               embed ingest's chunks with the bare model
//! bench ingest CORPUS DATA_DIR   ingest into a fresh store (timed), then
//!                                again unchanged (timed)
//! bench query DATA_DIR QUESTIONS retrieval only (hybrid search, top 5) per
//!                                question, and the question's embedding alone
//! bench ask DATA_DIR QUESTIONS   a whole `ask` per question (plan, search,
//!                                the offline extractive answer, confidence;
//!                                nothing queued), each question once, as a
//!                                person at the CLI asks them one at a time
//! bench scale FROM DATA_DIR N    N points into a fresh store in DATA_DIR from
//!                                the store ingested in FROM (timed)
//! bench store-write FROM DATA_DIR [N]
//!                                FROM's points (and jittered copies up to N)
//!                                into a fresh store of the configured backend
//!                                (`storage.backend`: the embedded store in
//!                                DATA_DIR, or `collection.name` on the
//!                                server at `qdrant.url`, dropped first), in
//!                                batches of 256 (timed per batch)
//! bench store-query DATA_DIR QUESTIONS [PASSES] [CLIENTS]
//!                                that store's rankings for each question,
//!                                embedded once beforehand: dense, lexical and
//!                                GRACE's hybrid search, PASSES times (5); the
//!                                hybrid search from CLIENTS threads at once
//!                                (4); then the search with the question's
//!                                embedding, as `query` measures it; the
//!                                RSS at that point (serving); then, for
//!                                each question, the fetch of the 5 kept
//!                                passages alone and the recall@10 of the
//!                                dense and the hybrid ranking against
//!                                exact search (`StoreQuery::exact`;
//!                                GRACE_BENCH_RECALL=0 skips it: under a
//!                                memory limit it would read every full
//!                                vector through the limit)
//! bench access FROM DATA_DIR N GROUPS QUESTIONS
//!                                FROM's points grown to N (as `scale`), each
//!                                document readable by one of GROUPS groups;
//!                                then, per question, the dense ranking and
//!                                GRACE's hybrid search unfiltered and for a
//!                                principal of one group (1/GROUPS of the
//!                                points), timed, and the recall@10 of the
//!                                filtered dense ranking against exact
//!                                filtered search
//! ```
//!
//! `store-write` and `store-query` compare the vector store backends
//! (`scripts/bench --backend qdrant`): the same points, read back from the
//! embedded store ingest built ([`VectorStore::scroll`]: nothing is
//! embedded again), written to each backend and queried with the same
//! vectors, so what differs is the store alone. The store's settings come
//! from the configuration as GRACE reads it (`GRACE_STORAGE__BACKEND`,
//! `GRACE_QDRANT__URL`, ...); `store-write` waits until a server reports
//! the collection green (optimizers done) and says how it is sharded.
//!
//! `scale` is how the 100k-chunk figures are made without embedding 100k
//! chunks (about 90 minutes on two cores): it writes FROM's real points,
//! then copies of them, each under a new id and source, with its dense vector
//! jittered and renormalised (so copies are near, not equal, to their
//! original) and its lexical vector and payload unchanged, upserts them a few
//! dozen at a time (as ingest does, a document at a time) with the model loaded as ingest has it, and builds
//! the index as ingest does. Its peak RSS is the store side of ingesting N
//! chunks; `query` on the grown store gives the latency at N.
//!
//! Each prints one JSON line. Run it one process at a time (scripts/bench
//! does, under `/usr/bin/time` for the peak RSS), release build.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use grace::config::Backend;
use grace::embed::{Embedder, FastEmbedder};
use grace::ingest::IngestOptions;
use grace::ingest::chunk::{ChunkParams, chunk_sections};
use grace::ingest::load::{Format, load};
use grace::ingest::walk::{Filters, walk};
use grace::search::{SearchError, SearchRequest};
use grace::store::qdrant::QdrantStore;
use grace::store::{ChunkPoint, QueryVector, StoreError, StoreQuery, VectorStore};
use grace::{Config, KnowledgeBase, OpenMode};
use serde_json::json;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: bench raw CORPUS | ingest CORPUS DATA_DIR | query DATA_DIR QUESTIONS_JSONL | ask DATA_DIR QUESTIONS_JSONL | scale FROM_DATA_DIR DATA_DIR N \
                 | store-write FROM_DATA_DIR DATA_DIR [N] | store-query DATA_DIR QUESTIONS_JSONL [PASSES] [CLIENTS]";
    let config = Config::load(None)?;
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["raw", corpus] => raw(config, corpus.into()),
        ["ingest", corpus, data] => ingest(config, corpus.into(), data.into()),
        ["query", data, questions] => query(config, data.into(), questions.into()),
        ["ask", data, questions] => ask(config, data.into(), questions.into()),
        ["scale", from, to, n] => scale(config, from.into(), to.into(), n.parse()?),
        ["access", from, to, n, groups, questions] => access(
            config,
            from.into(),
            to.into(),
            n.parse()?,
            groups.parse()?,
            questions.into(),
        ),
        ["store-write", from, to] => store_write(config, from.into(), to.into(), 0),
        ["store-write", from, to, n] => store_write(config, from.into(), to.into(), n.parse()?),
        ["store-query", data, questions] => {
            store_query(config, data.into(), questions.into(), 5, 4)
        }
        ["store-query", data, questions, passes] => {
            store_query(config, data.into(), questions.into(), passes.parse()?, 4)
        }
        ["store-query", data, questions, passes, clients] => store_query(
            config,
            data.into(),
            questions.into(),
            passes.parse()?,
            clients.parse()?,
        ),
        _ => Err(usage.into()),
    }
}

/// The texts ingest embeds, exactly as it makes them.
fn chunk_texts(config: &Config, corpus: &PathBuf) -> Result<Vec<String>> {
    let filters = Filters::new(&config.ingest.include, &config.ingest.exclude)?;
    let found = walk(std::slice::from_ref(corpus), &filters, None, usize::MAX)?;
    let params = ChunkParams {
        size: config.ingest.chunk_size,
        overlap: config.ingest.chunk_overlap,
    };
    let mut texts = Vec::new();
    for f in &found.files {
        let bytes = std::fs::read(&f.path)?;
        let format = Format::from_path(&f.path).unwrap_or(Format::Text);
        let Ok(doc) = load(&bytes, format, &grace::ingest::limits(&config.ingest)) else {
            continue;
        };
        for c in chunk_sections(&doc.sections, params) {
            texts.push(c.embedding_text(doc.title.as_deref()));
        }
    }
    Ok(texts)
}

fn raw(config: Config, corpus: PathBuf) -> Result<()> {
    let texts = chunk_texts(&config, &corpus)?;
    let embedder = FastEmbedder::new(&config.embedding)?;
    warm(&embedder)?;
    let started = Instant::now();
    embedder.embed(&texts)?;
    let seconds = started.elapsed().as_secs_f64();
    println!("{}", json!({"chunks": texts.len(), "seconds": seconds}));
    Ok(())
}

fn ingest(mut config: Config, corpus: PathBuf, data: PathBuf) -> Result<()> {
    config.storage.data_dir = data;
    let embedder = std::sync::Arc::new(FastEmbedder::new(&config.embedding)?);
    warm(embedder.as_ref())?;
    let kb = KnowledgeBase::with_embedder(config, embedder, OpenMode::Create)?;
    let started = Instant::now();
    let report = kb.ingest(
        std::slice::from_ref(&corpus),
        &IngestOptions::default(),
        &mut |_| {},
    )?;
    let seconds = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let again = kb.ingest(&[corpus], &IngestOptions::default(), &mut |_| {})?;
    let again_seconds = started.elapsed().as_secs_f64();
    println!(
        "{}",
        json!({
            "chunks": report.chunks_written,
            "seconds": seconds,
            "embed_seconds": report.embed_secs,
            "reingest_seconds": again_seconds,
            "reingest_unchanged": again.unchanged,
            "reingest_chunks_written": again.chunks_written,
        })
    );
    Ok(())
}

/// Loads every session of the model, as a long ingest has them (the
/// peer's single session is loaded before its timing too): one text for
/// the lone-text session, two for the batch sessions.
fn warm(embedder: &dyn Embedder) -> Result<()> {
    embedder.embed(&["warm-up".to_string()])?;
    embedder.embed(&["warm-up".to_string(), "every session".to_string()])?;
    Ok(())
}

/// The `question` of every line of a questions file.
fn read_questions(questions: &PathBuf) -> Result<Vec<String>> {
    let text = std::fs::read_to_string(questions)
        .map_err(|e| format!("cannot read {}: {e}", questions.display()))?;
    let asked: Vec<String> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| -> Result<String> {
            let v: serde_json::Value = serde_json::from_str(l)?;
            Ok(v["question"]
                .as_str()
                .ok_or_else(|| format!("{}: a line without \"question\"", questions.display()))?
                .to_string())
        })
        .collect::<Result<_>>()?;
    if asked.is_empty() {
        return Err(format!("{}: no questions", questions.display()).into());
    }
    Ok(asked)
}

/// Every point of the embedded store in `from`, with its vectors and payload.
fn read_points(config: &Config, from: PathBuf) -> Result<Vec<ChunkPoint>> {
    let mut source = config.clone();
    source.storage.data_dir = from;
    source.storage.backend = Backend::Edge;
    let kb = KnowledgeBase::open(source, OpenMode::Existing)
        .map_err(|e| format!("cannot open the ingested store: {e}"))?;
    let mut points = Vec::new();
    let mut offset = None;
    loop {
        let page = kb.store().scroll(offset, 256)?;
        points.extend(page.points);
        match page.next {
            Some(next) => offset = Some(next),
            None => break,
        }
    }
    if points.is_empty() {
        return Err("the store is empty: ingest a corpus first".into());
    }
    Ok(points)
}

fn query(mut config: Config, data: PathBuf, questions: PathBuf) -> Result<()> {
    config.storage.data_dir = data;
    let asked = read_questions(&questions)?;
    let first = asked.first().ok_or("no questions")?;
    let kb = KnowledgeBase::open(config, OpenMode::Existing)?;
    kb.search(&format!("{first} (warm-up)"), Some(5), None)?;
    // The question's embedding alone, through the same model session (a
    // second session would add its memory to the peak RSS); the text
    // differs from the one searched, so the embedding cache cannot serve it.
    let bare = kb.embedder();
    let (mut latencies, mut embed_only) = (Vec::new(), Vec::new());
    for q in &asked {
        let started = Instant::now();
        kb.search(q, Some(5), None)?;
        latencies.push(started.elapsed().as_secs_f64() * 1000.0);
        let started = Instant::now();
        bare.embed_query(&format!("{q} (alone)"))?;
        embed_only.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    println!(
        "{}",
        json!({"questions": asked.len(), "latencies_ms": latencies, "embed_ms": embed_only})
    );
    Ok(())
}

fn ask(mut config: Config, data: PathBuf, questions: PathBuf) -> Result<()> {
    config.storage.data_dir = data;
    // The answer is the offline one whatever the machine's settings say.
    config.llm.provider = grace::config::LlmProvider::Extractive;
    let asked = read_questions(&questions)?;
    let grace = grace::Grace::open(config)?;
    let options = grace::service::AskOptions {
        queue: false,
        ..Default::default()
    };
    let cancel = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let ask_one = |q: &str| grace.ask_blocking(q, &options, Arc::clone(&cancel), &mut |_| {});
    // Loads the models and the reader, as the first question of a session
    // does; its time is not counted.
    ask_one("How do I warm up? (warm-up)")?;
    let mut latencies = Vec::new();
    let mut answered = 0;
    for q in &asked {
        let started = Instant::now();
        let outcome = ask_one(q)?;
        latencies.push(started.elapsed().as_secs_f64() * 1000.0);
        answered += usize::from(outcome.report.decision == grace::exec::Decision::Answer);
    }
    println!(
        "{}",
        json!({"questions": asked.len(), "ask_ms": latencies, "answered": answered})
    );
    Ok(())
}

fn scale(config: Config, from: PathBuf, to: PathBuf, target: usize) -> Result<()> {
    let originals = read_points(&config, from)?;
    let mut config = config;
    config.storage.data_dir = to;
    // Ingest upserts a document's chunks at once: ~18 on the docs corpus.
    let batch = 32;
    // The model stays loaded, as it is while ingesting.
    let embedder = std::sync::Arc::new(FastEmbedder::new(&config.embedding)?);
    warm(embedder.as_ref())?;
    let kb = KnowledgeBase::with_embedder(config, embedder, OpenMode::Create)?;
    let store = kb.store();
    let started = Instant::now();
    let mut pending = Vec::with_capacity(batch);
    for point in Grown::new(&originals, target) {
        pending.push(point);
        if pending.len() == batch {
            store.upsert(std::mem::take(&mut pending))?;
        }
    }
    store.upsert(pending)?;
    store.flush()?;
    let optimized = store.optimize()?;
    let seconds = started.elapsed().as_secs_f64();
    let info = store.info()?;
    println!(
        "{}",
        json!({
            "points": info.points,
            "original_points": originals.len(),
            "seconds": seconds,
            "optimized": optimized,
            "indexed_vectors": info.indexed_vectors,
            "segments": info.segments,
        })
    );
    Ok(())
}

/// The group a document is for in `access`: one of `groups`, by its source.
fn group_of(source: &str, groups: u64) -> u64 {
    grace::store::point_id(source, 0, "group") % groups
}

fn access(
    config: Config,
    from: PathBuf,
    to: PathBuf,
    target: usize,
    groups: u64,
    questions: PathBuf,
) -> Result<()> {
    if groups == 0 {
        return Err("GROUPS must be at least 1".into());
    }
    let originals = read_points(&config, from)?;
    let asked = read_questions(&questions)?;
    let mut config = config;
    config.storage.data_dir = to;
    let model = Arc::new(FastEmbedder::new(&config.embedding)?);
    warm(model.as_ref())?;
    let kb = KnowledgeBase::with_embedder(config, model.clone(), OpenMode::Create)?;
    let store = kb.store();
    let started = Instant::now();
    let mut pending = Vec::with_capacity(32);
    for mut point in Grown::new(&originals, target) {
        let g = group_of(&point.payload.source, groups);
        point.payload.readers = vec![format!("group:g{g}")];
        pending.push(point);
        if pending.len() == 32 {
            store.upsert(std::mem::take(&mut pending))?;
        }
    }
    store.upsert(pending)?;
    store.flush()?;
    store.optimize()?;
    let write_seconds = started.elapsed().as_secs_f64();
    settle(store)?;
    let principal = grace::access::Principal::new("p", &["g0".to_string()]);
    let filter = grace::store::PayloadFilter::readable_by(Some(principal.tokens()));
    let readable = store.count(filter.as_ref())?;
    let points = store.count(None)?;
    let mut vectors = HashMap::new();
    for q in &asked {
        vectors.insert(q.trim().to_string(), model.embed_query(q.trim())?);
    }
    let precomputed = Precomputed {
        vectors,
        dimension: model.dimension(),
    };
    let tuning = &kb.config().search;
    let search = |q: &str, filter: Option<&grace::store::PayloadFilter>| -> Result<Vec<u64>> {
        let request = SearchRequest {
            query: q,
            limit: 10,
            filter,
        };
        let passages = grace::search::search(store, &precomputed, kb.lexical(), tuning, &request)?;
        Ok(passages.iter().map(|p| p.id).collect())
    };
    let dense =
        |q: &str, filter: Option<&grace::store::PayloadFilter>, exact: bool| -> Result<Vec<u64>> {
            let v = precomputed.vectors.get(q.trim()).ok_or("no vector")?;
            let query = StoreQuery {
                filter,
                exact,
                ..StoreQuery::ranking(QueryVector::Dense(v), 10)
            };
            Ok(store.search(&query)?.iter().map(|h| h.id).collect())
        };
    for q in asked.iter().take(5) {
        search(q, None)?;
        search(q, filter.as_ref())?;
    }
    let (mut open_ms, mut filtered_ms, mut open_dense_ms, mut filtered_dense_ms) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut recalls = Vec::new();
    for q in &asked {
        let t = Instant::now();
        search(q, None)?;
        open_ms.push(ms_since(t));
        let t = Instant::now();
        search(q, filter.as_ref())?;
        filtered_ms.push(ms_since(t));
        let t = Instant::now();
        dense(q, None, false)?;
        open_dense_ms.push(ms_since(t));
        let t = Instant::now();
        let found = dense(q, filter.as_ref(), false)?;
        filtered_dense_ms.push(ms_since(t));
        let exact = dense(q, filter.as_ref(), true)?;
        if !exact.is_empty() {
            let hit = exact.iter().filter(|id| found.contains(id)).count();
            recalls.push(hit as f64 / exact.len() as f64);
        }
    }
    println!(
        "{}",
        json!({
            "points": points,
            "readable": readable,
            "groups": groups,
            "write_seconds": write_seconds,
            "questions": asked.len(),
            "hybrid_open_ms": open_ms,
            "hybrid_filtered_ms": filtered_ms,
            "dense_open_ms": open_dense_ms,
            "dense_filtered_ms": filtered_dense_ms,
            "recall_at_10": recalls,
        })
    );
    Ok(())
}

/// Waits (at most five minutes) until the store's index stops growing:
/// a Qdrant server indexes what was written in the background, and a
/// search timed meanwhile times the indexing too. The embedded store has
/// indexed already (`optimize`).
fn settle(store: &dyn grace::store::VectorStore) -> Result<()> {
    let deadline = Instant::now() + std::time::Duration::from_secs(300);
    let mut last = store.info()?.indexed_vectors;
    let mut still = 0;
    while still < 5 && Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_secs(1));
        let now = store.info()?.indexed_vectors;
        still = if now == last { still + 1 } else { 0 };
        last = now;
    }
    Ok(())
}

/// `target` points made from `originals`: the originals themselves, then
/// copies of them, each under a new id and source, with its dense vector
/// jittered by N(0, 0.02²) per dimension and renormalised (lexical vector
/// and payload unchanged), until there are `target`.
struct Grown<'a> {
    originals: &'a [ChunkPoint],
    target: usize,
    made: usize,
    rng: Jitter,
}

impl<'a> Grown<'a> {
    fn new(originals: &'a [ChunkPoint], target: usize) -> Self {
        Self {
            originals,
            target,
            made: 0,
            rng: Jitter(0x9e37_79b9_7f4a_7c15),
        }
    }
}

impl Iterator for Grown<'_> {
    type Item = ChunkPoint;

    fn next(&mut self) -> Option<ChunkPoint> {
        if self.made == self.target || self.originals.is_empty() {
            return None;
        }
        let copy = self.made / self.originals.len();
        let mut point = self.originals[self.made % self.originals.len()].clone();
        self.made += 1;
        if copy > 0 {
            point.payload.source = format!("{}#copy{copy}", point.payload.source);
            point.id = grace::store::point_id(
                &point.payload.source,
                point.payload.chunk_index,
                &point.payload.content_hash,
            );
            for x in &mut point.dense {
                *x += 0.02 * self.rng.normal();
            }
            let norm = point.dense.iter().map(|x| x * x).sum::<f32>().sqrt();
            point.dense.iter_mut().for_each(|x| *x /= norm);
        }
        Some(point)
    }
}

/// Points per write request in `store-write` (also what the server
/// backend sends per request, and what `grace migrate` reads per page).
const WRITE_BATCH: usize = 256;

fn store_write(config: Config, from: PathBuf, to: PathBuf, grow_to: usize) -> Result<()> {
    let originals = read_points(&config, from)?;
    let target = grow_to.max(originals.len());
    let points: Vec<ChunkPoint> = Grown::new(&originals, target).collect();
    let mut config = config;
    config.storage.data_dir = to;
    if config.storage.backend == Backend::Qdrant {
        // A fresh collection on every run (and every backend's settings
        // as the configuration gives them now).
        QdrantStore::drop_collection(&config.qdrant, &config.collection)
            .map_err(|e| format!("cannot drop the old collection: {e}"))?;
    }
    // The model is not loaded (FastEmbedder loads it on the first
    // embedding): writing copies embeds nothing.
    let embedder = Arc::new(FastEmbedder::new(&config.embedding)?);
    let kb = KnowledgeBase::with_embedder(config.clone(), embedder, OpenMode::Create)
        .map_err(|e| format!("cannot open the {} store: {e}", backend_name(&config)))?;
    let store = kb.store();
    let mut batch_ms = Vec::new();
    let started = Instant::now();
    for batch in points.chunks(WRITE_BATCH) {
        let t = Instant::now();
        store.upsert(batch.to_vec())?;
        batch_ms.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    let write_seconds = started.elapsed().as_secs_f64();
    // Then until the store is ready to serve as ingest leaves it: the
    // embedded store flushed and indexed, a server's optimizers done.
    let t = Instant::now();
    store.flush()?;
    store.optimize()?;
    let layout = match config.storage.backend {
        Backend::Qdrant => Some(server_layout(&config)?),
        Backend::Edge => None,
    };
    let settle_seconds = t.elapsed().as_secs_f64();
    let counted = store.count(None)?;
    if counted != points.len() {
        return Err(format!(
            "wrote {} points but the store counts {counted}",
            points.len()
        )
        .into());
    }
    println!(
        "{}",
        json!({
            "backend": backend_name(&config),
            "points": counted,
            "original_points": originals.len(),
            "batch": WRITE_BATCH,
            "write_seconds": write_seconds,
            "batch_ms": batch_ms,
            "settle_seconds": settle_seconds,
            "layout": layout,
        })
    );
    Ok(())
}

fn backend_name(config: &Config) -> String {
    match config.storage.backend {
        Backend::Edge => "edge".into(),
        Backend::Qdrant => format!("qdrant {}", config.qdrant.url),
    }
}

/// Waits until the server reports the collection green (its optimizers
/// done: what was written is indexed), then reads how it is laid out:
/// shards, replication, write consistency, replicas and peers.
fn server_layout(config: &Config) -> Result<serde_json::Value> {
    use qdrant_client::qdrant::CollectionStatus;
    let api_key = (!config.qdrant.api_key.is_empty()).then(|| config.qdrant.api_key.clone());
    let client = qdrant_client::Qdrant::from_url(&config.qdrant.url)
        .api_key(api_key)
        .skip_compatibility_check()
        .build()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let name = config.collection.name.clone();
    let deadline = Instant::now() + Duration::from_secs(600);
    let info = loop {
        let info = runtime
            .block_on(client.collection_info(name.clone()))?
            .result
            .ok_or("the server sent no collection info")?;
        if info.status == CollectionStatus::Green as i32 {
            break info;
        }
        if Instant::now() > deadline {
            return Err(format!("the collection is not green after 600 s: {info:?}").into());
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let params = info.config.and_then(|c| c.params);
    let cluster = runtime.block_on(client.collection_cluster_info(name))?;
    let mut peers: Vec<u64> = cluster
        .remote_shards
        .iter()
        .map(|r| r.peer_id)
        .chain(std::iter::once(cluster.peer_id))
        .collect();
    peers.sort_unstable();
    peers.dedup();
    Ok(json!({
        "shard_number": params.as_ref().map(|p| p.shard_number),
        "replication_factor": params.as_ref().and_then(|p| p.replication_factor),
        "write_consistency_factor": params.as_ref().and_then(|p| p.write_consistency_factor),
        "shard_count": cluster.shard_count,
        "replicas": cluster.local_shards.len() + cluster.remote_shards.len(),
        "peers": peers.len(),
        "segments": info.segments_count,
    }))
}

/// Question vectors computed once beforehand: the searches then measure the
/// store (and GRACE's fusion), not the model.
struct Precomputed {
    vectors: HashMap<String, Vec<f32>>,
    dimension: usize,
}

impl Embedder for Precomputed {
    fn dimension(&self) -> usize {
        self.dimension
    }

    fn model_id(&self) -> &str {
        "precomputed"
    }

    fn embed(&self, texts: &[String]) -> grace::embed::Result<Vec<Vec<f32>>> {
        texts
            .iter()
            .map(|t| {
                self.vectors.get(t.trim()).cloned().ok_or_else(|| {
                    grace::embed::EmbedError::Model(format!("no precomputed vector for {t:?}"))
                })
            })
            .collect()
    }
}

fn ms_since(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1000.0
}

fn store_query(
    mut config: Config,
    data: PathBuf,
    questions: PathBuf,
    passes: usize,
    clients: usize,
) -> Result<()> {
    config.storage.data_dir = data;
    let asked = read_questions(&questions)?;
    if passes == 0 || clients == 0 {
        return Err("PASSES and CLIENTS must be at least 1".into());
    }
    // GRACE_BENCH_RECALL=0: no exact searches (each reads every full
    // vector: under a memory limit smaller than the store, minutes each).
    let measure_recall = std::env::var("GRACE_BENCH_RECALL").map_or(true, |v| v != "0");
    let model = Arc::new(FastEmbedder::new(&config.embedding)?);
    let kb = KnowledgeBase::with_embedder(config.clone(), model.clone(), OpenMode::Existing)
        .map_err(|e| format!("cannot open the {} store: {e}", backend_name(&config)))?;
    let store = kb.store();
    let points = store.count(None)?;
    // Each question embedded once, by the bare model (not the knowledge
    // base's cache, so the last phase's searches embed their question).
    warm(model.as_ref())?;
    let mut vectors = HashMap::new();
    let mut embed_ms = Vec::new();
    for q in &asked {
        let t = Instant::now();
        let v = model.embed_query(q.trim())?;
        embed_ms.push(ms_since(t));
        vectors.insert(q.trim().to_string(), v);
    }
    let lexical: Vec<_> = asked.iter().map(|q| kb.lexical().encode_query(q)).collect();
    let precomputed = Precomputed {
        vectors,
        dimension: model.dimension(),
    };
    let tuning = &kb.config().search;
    let candidates = tuning.candidates;
    let ids = |hits: Vec<grace::store::StoredHit>| hits.iter().map(|h| h.id).collect::<Vec<u64>>();
    // A call that fails in a way GRACE counts as transient (a server busy,
    // unreachable or timing out: `rag_search` retries those) is tried again
    // at once, up to 3 times in all; the failures are counted and reported,
    // and the latency includes them, as a user would see it.
    let retried = Retried::default();
    let store_transient = |e: &StoreError| e.is_transient();
    let search_transient = |e: &SearchError| matches!(e, SearchError::Store(s) if s.is_transient());
    let ranking = |vector: QueryVector<'_>| -> Result<Vec<u64>> {
        let query = StoreQuery::ranking(vector, candidates);
        Ok(ids(retried.call(|| store.search(&query), store_transient)?))
    };
    let dense = |q: &str| -> Result<Vec<u64>> {
        ranking(QueryVector::Dense(
            precomputed.vectors.get(q.trim()).ok_or("no vector")?,
        ))
    };
    let lexical_ranking = |i: usize| ranking(QueryVector::Lexical(&lexical[i]));
    let hybrid = |q: &str| -> Result<Vec<u64>> {
        let request = SearchRequest {
            query: q,
            limit: 5,
            filter: None,
        };
        let passages = retried.call(
            || grace::search::search(store, &precomputed, kb.lexical(), tuning, &request),
            search_transient,
        )?;
        Ok(passages.iter().map(|p| p.id).collect())
    };
    // Warm-up: connections open, caches and pages in.
    for (i, q) in asked.iter().enumerate().take(5) {
        dense(q)?;
        lexical_ranking(i)?;
        hybrid(q)?;
    }
    let (mut dense_ms, mut lexical_ms, mut hybrid_ms) = (Vec::new(), Vec::new(), Vec::new());
    // What each backend found (first pass), to compare with the others.
    let (mut top5, mut dense_top10, mut lexical_top10) = (Vec::new(), Vec::new(), Vec::new());
    for pass in 0..passes {
        for (i, q) in asked.iter().enumerate() {
            let t = Instant::now();
            let d = dense(q)?;
            dense_ms.push(ms_since(t));
            let t = Instant::now();
            let l = lexical_ranking(i)?;
            lexical_ms.push(ms_since(t));
            let t = Instant::now();
            let h = hybrid(q)?;
            hybrid_ms.push(ms_since(t));
            if pass == 0 {
                dense_top10.push(d.into_iter().take(10).collect::<Vec<_>>());
                lexical_top10.push(l.into_iter().take(10).collect::<Vec<_>>());
                top5.push(h);
            }
        }
    }
    // Several clients at once: each asks every question, from its own
    // starting point.
    let started = Instant::now();
    let answered: usize = std::thread::scope(|scope| -> Result<usize> {
        let workers: Vec<_> = (0..clients)
            .map(|c| {
                let (asked, hybrid) = (&asked, &hybrid);
                scope.spawn(move || -> std::result::Result<usize, String> {
                    let n = asked.len();
                    for k in 0..n {
                        hybrid(&asked[(k + c * n / clients) % n]).map_err(|e| e.to_string())?;
                    }
                    Ok(n)
                })
            })
            .collect();
        let mut total = 0;
        for w in workers {
            total += w.join().map_err(|_| "a client thread panicked")??;
        }
        Ok(total)
    })?;
    let concurrent_qps = answered as f64 / started.elapsed().as_secs_f64();
    // For reference: the whole search as `grace search` runs it, the
    // question embedded by the model (each question once: the knowledge
    // base caches question vectors).
    let grace_transient =
        |e: &grace::Error| matches!(e, grace::Error::Store(s) if s.is_transient());
    retried.call(
        || kb.search("warm-up question for the model", Some(5), None),
        grace_transient,
    )?;
    let mut search_ms = Vec::new();
    for q in &asked {
        let t = Instant::now();
        retried.call(|| kb.search(q, Some(5), None), grace_transient)?;
        search_ms.push(ms_since(t));
    }
    // What serving these questions holds in memory, before the exact
    // searches below read every full vector.
    let (serving_rss_kb, serving_anon_kb) = memory_kb();
    eprintln!(
        "bench: {points} points served ({} searches timed); exact search for the recall{}",
        dense_ms.len() + search_ms.len(),
        if measure_recall {
            ""
        } else {
            ": skipped (GRACE_BENCH_RECALL=0)"
        }
    );
    // The served index against exact search (every point scored with the
    // full vectors): the dense top 10, and GRACE's hybrid top 10 with the
    // dense ranking exact (the lexical one is exact either way).
    let exact = Exact(store);
    let overlap = |served: &[u64], exact: &[u64]| -> f64 {
        let found = exact.iter().filter(|id| served.contains(id)).count();
        found as f64 / exact.len().max(1) as f64
    };
    let (mut dense_recall, mut hybrid_recall, mut fetch_ms) = (Vec::new(), Vec::new(), Vec::new());
    for (i, q) in asked.iter().enumerate() {
        // The fetch phase alone: the kept passages read back.
        let t = Instant::now();
        store.retrieve(&top5[i])?;
        fetch_ms.push(ms_since(t));
        if !measure_recall {
            continue;
        }
        let v = precomputed.vectors.get(q.trim()).ok_or("no vector")?;
        let truth = exact.search(&StoreQuery {
            exact: true,
            ..StoreQuery::ranking(QueryVector::Dense(v), 10)
        })?;
        dense_recall.push(overlap(&dense_top10[i], &ids(truth)));
        let request = SearchRequest {
            query: q,
            limit: 10,
            filter: None,
        };
        let top10 = |s: &dyn grace::store::VectorStore| -> Result<Vec<u64>> {
            let passages = grace::search::search(s, &precomputed, kb.lexical(), tuning, &request)?;
            Ok(passages.iter().map(|p| p.id).collect())
        };
        hybrid_recall.push(overlap(&top10(store)?, &top10(&exact)?));
    }
    println!(
        "{}",
        json!({
            "backend": backend_name(&config),
            "points": points,
            "questions": asked.len(),
            "passes": passes,
            "candidates": candidates,
            "dense_ms": dense_ms,
            "lexical_ms": lexical_ms,
            "hybrid_ms": hybrid_ms,
            "clients": clients,
            "concurrent_qps": concurrent_qps,
            "search_ms": search_ms,
            "fetch_ms": fetch_ms,
            "serving_rss_kb": serving_rss_kb,
            "serving_anon_kb": serving_anon_kb,
            "dense_recall10": dense_recall,
            "hybrid_recall10": hybrid_recall,
            "embed_ms": embed_ms,
            "transient_errors": retried.count.load(Ordering::Relaxed),
            "first_transient_error": retried.first.lock().map(|f| f.clone()).unwrap_or_default(),
            "top5": top5,
            "dense_top10": dense_top10,
            "lexical_top10": lexical_top10,
        })
    );
    Ok(())
}

/// This process's resident memory and the anonymous part of it, in KiB
/// (`/proc/self/status`; 0 where it cannot be read).
fn memory_kb() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("RssAnon:"))
}

/// A store whose dense searches are exact (every point scored with the
/// full vectors): what the served index's recall is measured against.
struct Exact<'a>(&'a dyn grace::store::VectorStore);

impl grace::store::VectorStore for Exact<'_> {
    fn upsert(&self, points: Vec<ChunkPoint>) -> grace::store::Result<()> {
        self.0.upsert(points)
    }
    fn search(&self, query: &StoreQuery<'_>) -> grace::store::Result<Vec<grace::store::StoredHit>> {
        self.0.search(&StoreQuery {
            exact: true,
            ..query.clone()
        })
    }
    fn retrieve(&self, ids: &[u64]) -> grace::store::Result<Vec<ChunkPoint>> {
        self.0.retrieve(ids)
    }
    fn delete_by_source(&self, source: &str) -> grace::store::Result<()> {
        self.0.delete_by_source(source)
    }
    fn set_readers(&self, source: &str, readers: &[String]) -> grace::store::Result<()> {
        self.0.set_readers(source, readers)
    }
    fn count(&self, filter: Option<&grace::store::PayloadFilter>) -> grace::store::Result<usize> {
        self.0.count(filter)
    }
    fn flush(&self) -> grace::store::Result<()> {
        self.0.flush()
    }
    fn optimize(&self) -> grace::store::Result<bool> {
        self.0.optimize()
    }
    fn info(&self) -> grace::store::Result<grace::store::StoreInfo> {
        self.0.info()
    }
    fn scroll(
        &self,
        offset: Option<u64>,
        limit: usize,
    ) -> grace::store::Result<grace::store::ScrollPage> {
        self.0.scroll(offset, limit)
    }
}

/// Counts the calls that failed transiently and were tried again.
#[derive(Default)]
struct Retried {
    count: AtomicUsize,
    first: Mutex<Option<String>>,
}

impl Retried {
    const ATTEMPTS: usize = 3;

    fn call<T, E: std::error::Error + 'static>(
        &self,
        mut call: impl FnMut() -> std::result::Result<T, E>,
        transient: impl Fn(&E) -> bool,
    ) -> Result<T> {
        let mut attempt = 1;
        loop {
            match call() {
                Ok(v) => return Ok(v),
                Err(e) if transient(&e) && attempt < Self::ATTEMPTS => {
                    self.count.fetch_add(1, Ordering::Relaxed);
                    if let Ok(mut first) = self.first.lock()
                        && first.is_none()
                    {
                        eprintln!("bench: a transient store error, trying again: {e}");
                        *first = Some(e.to_string());
                    }
                    attempt += 1;
                }
                Err(e) => return Err(Box::new(e)),
            }
        }
    }
}

/// A small deterministic Gaussian source (xorshift + Box–Muller), so the
/// grown store is the same on every run.
struct Jitter(u64);

impl Jitter {
    fn uniform(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        ((self.0 >> 40) as f32 + 0.5) / (1u64 << 24) as f32
    }

    fn normal(&mut self) -> f32 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (std::f32::consts::TAU * v).cos()
    }
}
