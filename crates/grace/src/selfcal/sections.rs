//! The knowledge base's sections (its chunks grouped by document and
//! heading path), read from the store, and a deterministic sample of them
//! spread over the documents.

use crate::access::ReadScope;
use std::collections::BTreeMap;

use crate::error::Result;
use crate::rng::Rng;
use crate::store::VectorStore;

/// Points read from the store per page.
const PAGE: usize = 512;
/// Characters kept of a section's first chunk (what questions are made from).
const TEXT_CHARS: usize = 1_500;
/// Fewest words a section needs to answer anything.
pub const MIN_WORDS: usize = 15;

/// One section: the chunks of one document under one heading path.
#[derive(Debug, Clone, PartialEq)]
pub struct Section {
    /// The document (canonical path).
    pub source: String,
    /// Heading path (` > `-separated; empty before the first heading).
    pub section: String,
    /// Its chunks' point ids, in document order.
    pub ids: Vec<u64>,
    /// The beginning of its first chunk's text.
    pub text: String,
    /// Position of its first chunk in the document.
    pub(super) first_chunk: usize,
    /// Words in its first chunk.
    pub words: usize,
}

/// Every section of the collection, ordered by document and position.
/// Reads the whole collection page by page (ids and payloads; the
/// vectors are read but not kept).
pub fn read_sections(store: &dyn VectorStore) -> Result<Vec<Section>> {
    read_first_sections(store, usize::MAX, &ReadScope::All)
}

/// The sections of the collection's first `max_points` points (page by
/// page, whole pages), ordered by document and position: what a caller
/// that must stay cheap on a large collection reads.
pub fn read_first_sections(
    store: &dyn VectorStore,
    max_points: usize,
    scope: &ReadScope,
) -> Result<Vec<Section>> {
    let mut read = 0usize;
    let mut by_key: BTreeMap<(String, String), Section> = BTreeMap::new();
    let mut offset = None;
    loop {
        let page = store.scroll(offset, PAGE)?;
        read += page.points.len();
        for point in page
            .points
            .into_iter()
            .filter(|p| scope.may_read(&p.payload.readers))
        {
            let p = point.payload;
            let words = crate::text::word_count(&p.text);
            let entry = by_key
                .entry((p.source.clone(), p.section.clone()))
                .or_insert_with(|| Section {
                    source: p.source.clone(),
                    section: p.section.clone(),
                    ids: Vec::new(),
                    text: String::new(),
                    first_chunk: usize::MAX,
                    words: 0,
                });
            entry.ids.push(point.id);
            if p.chunk_index < entry.first_chunk {
                entry.first_chunk = p.chunk_index;
                entry.text = crate::text::truncate_chars(&p.text, TEXT_CHARS).to_string();
                entry.words = words;
            }
        }
        match page.next {
            Some(next) if read < max_points => offset = Some(next),
            _ => break,
        }
    }
    let mut sections: Vec<Section> = by_key.into_values().collect();
    sections.sort_by(|a, b| {
        (a.source.as_str(), a.first_chunk).cmp(&(b.source.as_str(), b.first_chunk))
    });
    Ok(sections)
}

/// Up to `n` of `sections` (indices), spread over the documents: the
/// documents in a shuffled order, each document's sections shuffled, then
/// one section from each document in turn.
pub fn sample(sections: &[Section], n: usize, rng: &mut Rng) -> Vec<usize> {
    let mut by_source: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, s) in sections.iter().enumerate() {
        by_source.entry(s.source.as_str()).or_default().push(i);
    }
    let mut groups: Vec<Vec<usize>> = by_source.into_values().collect();
    for g in &mut groups {
        rng.shuffle(g);
    }
    rng.shuffle(&mut groups);
    let mut picked = Vec::with_capacity(n.min(sections.len()));
    let mut round = 0;
    while picked.len() < n {
        let mut any = false;
        for g in &groups {
            if let Some(i) = g.get(round) {
                any = true;
                picked.push(*i);
                if picked.len() == n {
                    break;
                }
            }
        }
        if !any {
            break;
        }
        round += 1;
    }
    picked
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(source: &str, n: usize) -> Section {
        Section {
            source: source.into(),
            section: format!("S{n}"),
            ids: vec![n as u64],
            text: String::new(),
            first_chunk: n,
            words: 20,
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_sample() {
        let sections: Vec<Section> = (0..50)
            .map(|i| section(&format!("d{}", i % 7), i))
            .collect();
        let a = sample(&sections, 20, &mut Rng::new(7));
        assert_eq!(a, sample(&sections, 20, &mut Rng::new(7)));
        assert_ne!(a, sample(&sections, 20, &mut Rng::new(8)));
        let mut unique = a.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), 20);
    }

    #[test]
    fn samples_spread_over_documents() {
        // One large document and nine small ones: the small ones are all
        // sampled before the large one gives a second section.
        let mut sections: Vec<Section> = (0..100).map(|i| section("big", i)).collect();
        sections.extend((0..9).map(|i| section(&format!("small{i}"), 100 + i)));
        let picked = sample(&sections, 10, &mut Rng::new(1));
        let big = picked
            .iter()
            .filter(|i| sections[**i].source == "big")
            .count();
        assert_eq!(big, 1, "{picked:?}");
        assert_eq!(sample(&sections, 1000, &mut Rng::new(1)).len(), 109);
    }
}
