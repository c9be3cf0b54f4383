//! GRACE's side of `scripts/bench` (the peer's is scripts/bench_peer.py):
//!
//! ```text
//! bench raw CORPUS               embed ingest's chunks with the bare model
//! bench ingest CORPUS DATA_DIR   ingest into a fresh store (timed), then
//!                                again unchanged (timed)
//! bench query DATA_DIR QUESTIONS retrieval only (hybrid search, top 5) per
//!                                question, and the question's embedding alone
//! bench scale FROM DATA_DIR N    N points into a fresh store in DATA_DIR from
//!                                the store ingested in FROM (timed)
//! ```
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

use std::path::PathBuf;
use std::time::Instant;

use grace::embed::{Embedder, FastEmbedder};
use grace::ingest::IngestOptions;
use grace::ingest::chunk::{ChunkParams, chunk_sections};
use grace::ingest::load::{Format, load};
use grace::ingest::walk::{Filters, walk};
use grace::{Config, KnowledgeBase, OpenMode};
use serde_json::json;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: bench raw CORPUS | ingest CORPUS DATA_DIR | query DATA_DIR QUESTIONS_JSONL | scale FROM_DATA_DIR DATA_DIR N";
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
        ["scale", from, to, n] => scale(config, from.into(), to.into(), n.parse()?),
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
        let Ok(doc) = load(&bytes, Format::from_path(&f.path).unwrap_or(Format::Text)) else {
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
    embedder.embed(&["warm-up".to_string()])?;
    let started = Instant::now();
    embedder.embed(&texts)?;
    let seconds = started.elapsed().as_secs_f64();
    println!("{}", json!({"chunks": texts.len(), "seconds": seconds}));
    Ok(())
}

fn ingest(mut config: Config, corpus: PathBuf, data: PathBuf) -> Result<()> {
    config.storage.data_dir = data;
    let embedder = std::sync::Arc::new(FastEmbedder::new(&config.embedding)?);
    embedder.embed(&["warm-up".to_string()])?;
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

fn query(mut config: Config, data: PathBuf, questions: PathBuf) -> Result<()> {
    config.storage.data_dir = data;
    let asked: Vec<String> = std::fs::read_to_string(&questions)?
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| -> Result<String> {
            let v: serde_json::Value = serde_json::from_str(l)?;
            Ok(v["question"]
                .as_str()
                .ok_or("a line without \"question\"")?
                .to_string())
        })
        .collect::<Result<_>>()?;
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

fn scale(config: Config, from: PathBuf, to: PathBuf, target: usize) -> Result<()> {
    let mut originals = Vec::new();
    {
        let mut source = config.clone();
        source.storage.data_dir = from;
        let kb = KnowledgeBase::open(source, OpenMode::Existing)?;
        let mut offset = None;
        loop {
            let page = kb.store().scroll(offset, 256)?;
            originals.extend(page.points);
            match page.next {
                Some(next) => offset = Some(next),
                None => break,
            }
        }
    }
    if originals.is_empty() {
        return Err("the store is empty: ingest a corpus first".into());
    }
    let mut config = config;
    config.storage.data_dir = to;
    // Ingest upserts a document's chunks at once: ~18 on the docs corpus.
    let batch = 32;
    // The model stays loaded, as it is while ingesting.
    let embedder = std::sync::Arc::new(FastEmbedder::new(&config.embedding)?);
    embedder.embed(&["warm-up".to_string()])?;
    let kb = KnowledgeBase::with_embedder(config, embedder, OpenMode::Create)?;
    let store = kb.store();
    let started = Instant::now();
    let mut rng = Jitter(0x9e37_79b9_7f4a_7c15);
    let mut written = 0;
    let mut pending = Vec::with_capacity(batch);
    'grow: for copy in 0.. {
        for original in &originals {
            if written == target {
                break 'grow;
            }
            let mut point = original.clone();
            if copy > 0 {
                point.payload.source = format!("{}#copy{copy}", point.payload.source);
                point.id = grace::store::point_id(
                    &point.payload.source,
                    point.payload.chunk_index,
                    &point.payload.content_hash,
                );
                for x in &mut point.dense {
                    *x += 0.02 * rng.normal();
                }
                let norm = point.dense.iter().map(|x| x * x).sum::<f32>().sqrt();
                point.dense.iter_mut().for_each(|x| *x /= norm);
            }
            pending.push(point);
            written += 1;
            if pending.len() == batch {
                store.upsert(std::mem::take(&mut pending))?;
            }
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
