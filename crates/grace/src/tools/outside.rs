//! Passages from outside the knowledge base (a web page, another server's
//! search) scored against the question the way the knowledge base's own
//! are: each is embedded by GRACE's embedder and ranked by its cosine
//! similarity to the question, then the usual retrieval factors are taken,
//! so the confidence model applies to them as to any search.

use crate::confidence::{Factors, retrieval_factors};
use crate::search::Passage;
use crate::tools::{ToolError, ToolErrorKind};
use crate::{embed, kb::KnowledgeBase};

/// Candidates embedded at most per call; the rest are dropped first.
pub const MAX_CANDIDATES: usize = 200;

/// A passage from outside, before scoring: `source` is what is cited (a
/// URL, `mcp.<server>:<remote source>`).
pub fn passage(source: &str, section: &str, chunk_index: usize, text: &str) -> Passage {
    Passage {
        id: crate::store::point_id(source, chunk_index, ""),
        source: source.to_string(),
        section: section.to_string(),
        chunk_index,
        page: None,
        text: text.to_string(),
        score: 0.0,
        fused_score: 0.0,
        dense_rank: None,
        lexical_rank: None,
        lexical_score: None,
        pinned: false,
        reader_score: None,
        vector: None,
    }
}

/// Ranks `candidates` by cosine similarity to `question` (GRACE's own
/// embedder) and keeps the best `k`, with the retrieval factors of the
/// kept ones. `tool` names the caller in errors.
pub fn rank(
    kb: &KnowledgeBase,
    tool: &str,
    question: &str,
    mut candidates: Vec<Passage>,
    k: usize,
) -> Result<(Vec<Passage>, Factors), ToolError> {
    candidates.truncate(MAX_CANDIDATES);
    let failed = |e: embed::EmbedError| {
        ToolError::new(tool, ToolErrorKind::Failed, format!("cannot embed: {e}"))
    };
    if !candidates.is_empty() {
        let q = kb.embedder().embed_query(question).map_err(failed)?;
        let texts: Vec<String> = candidates
            .iter()
            .map(|p| {
                // As ingest embeds a chunk: without the answer's marks.
                let text = crate::text::blocks::unmarked(&p.text);
                if p.section.is_empty() {
                    text
                } else {
                    format!("{}\n{}", p.section, text)
                }
            })
            .collect();
        let vectors = kb.embedder().embed(&texts).map_err(failed)?;
        let similarity = kb.embedder().similarity_scale().query;
        for (p, v) in candidates.iter_mut().zip(vectors) {
            p.score = similarity.apply(embed::cosine(&q, &v));
            p.fused_score = p.score;
            p.vector = Some(v);
        }
        candidates.sort_by(|a, b| b.score.total_cmp(&a.score));
        candidates.truncate(k.max(1));
        for (i, p) in candidates.iter_mut().enumerate() {
            p.dense_rank = Some(i + 1);
        }
    }
    let factors = retrieval_factors(kb.lexical(), question, None, &candidates);
    Ok((candidates, factors))
}
