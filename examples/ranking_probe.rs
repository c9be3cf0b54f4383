//! Research tool: the raw material for choosing a fusion and confidence
//! factors offline. For an evaluation set it ingests the corpus (or reuses
//! a store built before, `--data DIR`), then writes to OUT:
//!
//! - `chunks.jsonl`: every chunk (id, corpus file, section, text, lexical
//!   term ids), and
//!   `chunk_vectors.f32`: their stored dense vectors, little-endian f32,
//!   in the same order;
//! - `rankings.jsonl`: per question its dense and lexical rankings (the
//!   store's best `--depth` ids and scores, the cosines on the model's
//!   similarity scale as a search fuses them), the identifiers it names, its
//!   lexical term ids,
//!   and GRACE's own search result as configured (ids, in order);
//! - `question_vectors.f32`: the questions' embeddings, in file order.
//!
//! ```sh
//! cargo run --release --example ranking_probe -- eval/users-words/dev OUT [--data DIR] [--depth 100]
//! ```

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use grace::embed::{Embedder, FastEmbedder};
use grace::lexical::distinct_identifiers;
use grace::store::{QueryVector, StoreQuery};
use grace::{Config, KnowledgeBase, OpenMode};
use grace_eval::load_questions;
use serde_json::json;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: ranking_probe SET OUT [--data DIR] [--depth N]";
    let set = PathBuf::from(args.next().ok_or(usage)?);
    let out = PathBuf::from(args.next().ok_or(usage)?);
    let (mut data, mut depth) = (None, 100usize);
    while let Some(flag) = args.next() {
        match flag.as_str() {
            "--data" => data = Some(PathBuf::from(args.next().ok_or(usage)?)),
            "--depth" => depth = args.next().ok_or(usage)?.parse()?,
            _ => return Err(usage.into()),
        }
    }
    std::fs::create_dir_all(&out)?;
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let temp = tempfile::tempdir()?;
    let data = data.unwrap_or_else(|| temp.path().to_path_buf());
    // The repository's configuration, with GRACE_* overrides (variants).
    let mut config = Config::load(Some(&repo.join("grace_config.yml")))?;
    config.storage.data_dir = data.clone();
    let embedder: Arc<dyn Embedder> = Arc::new(FastEmbedder::new(&config.embedding)?);
    let kb = KnowledgeBase::with_embedder(config, embedder.clone(), OpenMode::Create)?;
    let started = std::time::Instant::now();
    let report = kb.ingest(&[set.join("corpus")], &Default::default(), &mut |_| {})?;
    eprintln!(
        "ranking_probe: {} chunks ({} written) in {:.0} s",
        report.points_total,
        report.chunks_written,
        started.elapsed().as_secs_f64()
    );
    dump_chunks(&kb, &out)?;

    let questions = load_questions(&set.join("questions.jsonl"))?;
    let mut rankings = std::io::BufWriter::new(std::fs::File::create(out.join("rankings.jsonl"))?);
    let mut qvectors =
        std::io::BufWriter::new(std::fs::File::create(out.join("question_vectors.f32"))?);
    let store = kb.store();
    for q in &questions {
        let v = embedder.embed_query(&q.question)?;
        for x in &v {
            qvectors.write_all(&x.to_le_bytes())?;
        }
        let sparse = kb.lexical().encode_query(&q.question);
        let dense = store.search(&StoreQuery::ranking(QueryVector::Dense(&v), depth))?;
        let lexical = store.search(&StoreQuery::ranking(QueryVector::Lexical(&sparse), depth))?;
        let grace = kb.search(&q.question, Some(10), None)?;
        let pairs = |hits: &[grace::store::StoredHit]| -> Vec<(String, f32)> {
            hits.iter().map(|h| (h.id.to_string(), h.score)).collect()
        };
        // Cosines on GRACE's similarity scale, as a search fuses them.
        let scale = embedder.similarity_scale().query;
        let dense_scaled: Vec<(String, f32)> = dense
            .iter()
            .map(|h| (h.id.to_string(), scale.apply(h.score)))
            .collect();
        let row = json!({
            "id": q.id,
            "question": q.question,
            "answerable": q.answerable,
            "in_domain": q.in_domain(),
            "gold": q.gold_sources,
            "identifiers": distinct_identifiers(&q.question),
            "terms": sparse.indices,
            "dense": dense_scaled,
            "lexical": pairs(&lexical),
            "grace": grace.iter().map(|p| p.id.to_string()).collect::<Vec<_>>(),
        });
        writeln!(rankings, "{row}")?;
    }
    eprintln!(
        "ranking_probe: {} questions -> {}",
        questions.len(),
        out.display()
    );
    Ok(())
}

fn dump_chunks(kb: &KnowledgeBase, out: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let mut chunks = std::io::BufWriter::new(std::fs::File::create(out.join("chunks.jsonl"))?);
    let mut vectors =
        std::io::BufWriter::new(std::fs::File::create(out.join("chunk_vectors.f32"))?);
    let mut offset = None;
    loop {
        let page = kb.store().scroll(offset, 512)?;
        for p in &page.points {
            let row = json!({
                "id": p.id.to_string(),
                "file": grace_eval::corpus_file(&p.payload.source),
                "section": p.payload.section,
                "chunk_index": p.payload.chunk_index,
                "text": p.payload.text,
                "terms": p.lexical.indices,
            });
            writeln!(chunks, "{row}")?;
            for x in &p.dense {
                vectors.write_all(&x.to_le_bytes())?;
            }
        }
        match page.next {
            Some(next) => offset = Some(next),
            None => break,
        }
    }
    Ok(())
}
