//! Ingest throughput next to the raw embedder's on the same chunks.
//!
//! `cargo run --release --example bench_ingest -- CORPUS_DIR` (see
//! `scripts/bench-ingest`). Both figures are in chunks per second of wall
//! time with the model already loaded; their ratio is the pipeline's
//! overhead (reading, chunking, lexical encoding, upserts, flushes, the
//! manifest and index building). A second, unchanged ingest is timed too.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use grace::embed::{Embedder, FastEmbedder};
use grace::ingest::IngestOptions;
use grace::ingest::chunk::{ChunkParams, chunk_sections};
use grace::ingest::load::{Format, load};
use grace::ingest::walk::{Filters, walk};
use grace::{Config, KnowledgeBase, OpenMode};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let corpus: PathBuf = std::env::args()
        .nth(1)
        .ok_or("usage: bench_ingest CORPUS_DIR")?
        .into();
    let mut config = Config::load(None)?;
    let data = std::env::temp_dir().join(format!("grace-bench-ingest-{}", std::process::id()));
    config.storage.data_dir = data.clone();

    // The chunks exactly as ingest makes them.
    let filters = Filters::new(&config.ingest.include, &config.ingest.exclude)?;
    let found = walk(std::slice::from_ref(&corpus), &filters)?;
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
    println!(
        "corpus: {} ({} files, {} chunks)",
        corpus.display(),
        found.files.len(),
        texts.len()
    );

    let raw = FastEmbedder::new(&config.embedding)?;
    raw.embed(&["warm-up".to_string()])?;
    let t = Instant::now();
    raw.embed(&texts)?;
    let raw_secs = t.elapsed().as_secs_f64();
    drop(raw);

    let embedder: Arc<dyn Embedder> = Arc::new(FastEmbedder::new(&config.embedding)?);
    embedder.embed(&["warm-up".to_string()])?;
    let kb = KnowledgeBase::with_embedder(config, embedder, OpenMode::Create)?;
    let t = Instant::now();
    let report = kb.ingest(
        std::slice::from_ref(&corpus),
        &IngestOptions::default(),
        &mut |_| {},
    )?;
    let ingest_secs = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let again = kb.ingest(&[corpus], &IngestOptions::default(), &mut |_| {})?;
    let again_secs = t.elapsed().as_secs_f64();
    drop(kb);
    let _ = std::fs::remove_dir_all(&data);

    let n = texts.len() as f64;
    let raw_rate = n / raw_secs;
    let ingest_rate = report.chunks_written as f64 / ingest_secs;
    println!(
        "raw embedder      {raw_rate:8.1} chunks/s  ({} chunks in {raw_secs:.2} s)",
        texts.len()
    );
    println!(
        "grace ingest      {ingest_rate:8.1} chunks/s  ({} chunks in {ingest_secs:.2} s, {:.2} s embedding)",
        report.chunks_written, report.embed_secs
    );
    println!("ratio ingest/raw  {:8.3}", ingest_rate / raw_rate);
    println!(
        "unchanged re-ingest {:.3} s ({} files unchanged, {} chunks written)",
        again_secs, again.unchanged, again.chunks_written
    );
    Ok(())
}
