//! Lexical (sparse) encoding of text for exact-term retrieval.
//!
//! Sentence embeddings match identifiers poorly: `E0382`, `--no-install-recommends`,
//! `apt_pkg.init()` or `1.24.4` carry little meaning for MiniLM. The lexical
//! signal makes them count. A text becomes a sparse vector of
//!
//! * BM25 term weights of its words (qdrant-edge's English tokenizer:
//!   lowercasing, stop words, Snowball stemming), and
//! * one extra term per *identifier* — a token that looks like code or a
//!   version rather than a word — hashed whole, so a query containing
//!   `--purge` matches documents containing exactly `--purge`, not every
//!   document mentioning "purge".
//!
//! * one term per pair of neighbouring CJK characters (`text::is_cjk`:
//!   Japanese, Chinese, Korean), since those scripts do not separate
//!   words with spaces: `削除する` gives `削除`, `除す`, `する`. This is the
//!   approach of Lucene's CJK analyser: no dictionary, and a word of two
//!   characters or more always matches itself. A lone CJK character is a
//!   term of its own.
//!
//! The English tokenizer sees the text with CJK characters blanked out, so
//! identifiers and English words inside Japanese sentences
//! (`apt-getでインストール`) are still found; full-width Latin letters and
//! digits (`ａｐｔ`) are folded to ASCII first.
//!
//! The store applies the IDF modifier at search time, so together with the
//! document-side term frequency weights this scores like BM25.

mod identifiers;

use qdrant_edge::bm25_embed::{EdgeBm25, EdgeBm25Config};

pub use self::identifiers::{distinct_identifiers, identifiers, identifiers_found};
use crate::text::{is_cjk, sized_as_cjk, word_count};

/// A sparse vector: parallel term ids and weights, ids unique.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SparseVector {
    /// Term ids in ascending order, each once (word terms from the BM25
    /// tokenizer, identifier terms hashed whole).
    pub indices: Vec<u32>,
    /// Weight of each term, parallel to `indices`.
    pub values: Vec<f32>,
}

impl SparseVector {
    /// True when the vector has no terms (a query of stop words only).
    pub fn is_empty(&self) -> bool {
        self.indices.is_empty()
    }
}

/// BM25 parameters used for identifier terms (the same as the word terms').
const K1: f32 = 1.2;
const B: f32 = 0.75;
const AVG_LEN: f32 = 256.0;
/// Identifier terms weigh this much more than a word with the same
/// frequency: an exact identifier match is strong evidence.
const IDENTIFIER_BOOST: f32 = 2.0;

/// Encodes documents and queries into [`SparseVector`]s.
#[derive(Debug)]
pub struct LexicalEncoder {
    bm25: EdgeBm25,
}

impl LexicalEncoder {
    /// Builds the English encoder.
    pub fn new() -> Result<Self, LexicalError> {
        let config = EdgeBm25Config {
            language: Some("english".to_string()),
            ..Default::default()
        };
        let bm25 = EdgeBm25::new(config).map_err(|e| LexicalError(e.to_string()))?;
        Ok(Self { bm25 })
    }

    /// Document-side vector: BM25 term-frequency weights.
    pub fn encode_document(&self, text: &str) -> SparseVector {
        let text = fold_width(text);
        let words = self.bm25.embed_document(&blank_cjk(&text));
        let doc_len = word_count(&text) as f32;
        let saturate = |tf: f32| tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * doc_len / AVG_LEN));
        let mut ids = identifiers(&text);
        ids.sort();
        let mut extra: Vec<(u32, f32)> = Vec::new();
        for group in ids.chunk_by(|a, b| a == b) {
            let tf = group.len() as f32;
            extra.push((identifier_term(&group[0]), saturate(tf) * IDENTIFIER_BOOST));
        }
        let mut bigrams = cjk_terms(&text);
        bigrams.sort_unstable();
        for group in bigrams.chunk_by(|a, b| a == b) {
            extra.push((group[0], saturate(group.len() as f32)));
        }
        merge(words.indices, words.values, extra)
    }

    /// Query-side vector: each distinct term once, weight 1 (the store's
    /// IDF modifier supplies the term's rarity).
    pub fn encode_query(&self, text: &str) -> SparseVector {
        let text = fold_width(text);
        let words = self.bm25.embed_query(&blank_cjk(&text));
        let mut ids = identifiers(&text);
        ids.sort();
        ids.dedup();
        let mut extra: Vec<(u32, f32)> = ids
            .iter()
            .map(|t| (identifier_term(t), IDENTIFIER_BOOST))
            .collect();
        let mut bigrams = cjk_terms(&text);
        bigrams.sort_unstable();
        bigrams.dedup();
        extra.extend(bigrams.into_iter().map(|t| (t, 1.0)));
        merge(words.indices, words.values, extra)
    }
}

/// `text` with full-width ASCII (`ａｐｔ－ｇｅｔ`, `１２３`) folded to ASCII
/// and the ideographic space to a space, as Japanese input methods often
/// type them.
fn fold_width(text: &str) -> std::borrow::Cow<'_, str> {
    let folds = |c: char| matches!(c, '\u{ff01}'..='\u{ff5e}' | '\u{3000}');
    if !text.chars().any(folds) {
        return std::borrow::Cow::Borrowed(text);
    }
    text.chars()
        .map(|c| match c {
            '\u{3000}' => ' ',
            '\u{ff01}'..='\u{ff5e}' => char::from_u32(c as u32 - 0xfee0).unwrap_or(c),
            c => c,
        })
        .collect()
}

/// `text` with every CJK character and CJK punctuation mark replaced by a
/// space, for the English tokenizer (which would otherwise take a whole
/// Japanese sentence for one word).
fn blank_cjk(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(sized_as_cjk) {
        return std::borrow::Cow::Borrowed(text);
    }
    text.chars()
        .map(|c| if sized_as_cjk(c) { ' ' } else { c })
        .collect()
}

/// Term ids of the CJK bigrams of `text`, in order, repeats kept: each pair
/// of neighbouring [`is_cjk`] characters, and a run of one character alone.
/// Punctuation, spaces and other scripts end a run.
pub fn cjk_terms(text: &str) -> Vec<u32> {
    let mut out = Vec::new();
    let mut run: Option<(char, bool)> = None; // previous char, and whether it was paired
    for c in text.chars() {
        if is_cjk(c) {
            if let Some((prev, _)) = run {
                out.push(cjk_term(&[prev, c]));
                run = Some((c, true));
            } else {
                run = Some((c, false));
            }
        } else {
            if let Some((prev, false)) = run {
                out.push(cjk_term(&[prev]));
            }
            run = None;
        }
    }
    if let Some((prev, false)) = run {
        out.push(cjk_term(&[prev]));
    }
    out
}

/// Term id of a CJK bigram (or lone character): [`namespaced_term`] of
/// its UTF-8 bytes, without building a string per bigram.
fn cjk_term(chars: &[char]) -> u32 {
    let mut utf8 = [0u8; 8];
    let mut len = 0;
    for c in chars.iter().take(2) {
        len += c.encode_utf8(&mut utf8[len..]).len();
    }
    namespaced_term(b"cjk:", utf8[..len].iter().copied())
}

/// The BM25 tokenizer could not be built (an unsupported language or
/// invalid parameters).
#[derive(Debug, thiserror::Error)]
#[error("cannot build the lexical (BM25) encoder: {0}")]
pub struct LexicalError(String);

/// Combines word terms and identifier terms, summing weights of equal ids
/// (a hash collision) so ids stay unique.
fn merge(indices: Vec<u32>, values: Vec<f32>, extra: Vec<(u32, f32)>) -> SparseVector {
    let mut pairs: Vec<(u32, f32)> = indices.into_iter().zip(values).chain(extra).collect();
    pairs.sort_by_key(|p| p.0);
    let mut out = SparseVector::default();
    for (i, v) in pairs {
        if out.indices.last() == Some(&i) {
            if let Some(last) = out.values.last_mut() {
                *last += v;
            }
        } else {
            out.indices.push(i);
            out.values.push(v);
        }
    }
    out
}

/// Term id of an identifier: FNV-1a of a namespaced form, so it cannot
/// coincide with the word term of the same letters except by a 32-bit
/// collision.
pub fn identifier_term(token: &str) -> u32 {
    namespaced_term(b"id:", token.as_bytes().iter().copied())
}

/// FNV-1a of `namespace` followed by `bytes`: a term id apart from the
/// BM25 tokenizer's (identifiers and CJK bigrams each have their own
/// namespace).
fn namespaced_term(namespace: &[u8], bytes: impl Iterator<Item = u8>) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in namespace.iter().copied().chain(bytes) {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

/// Two adjacent words of a question and the one word they make together:
/// users write "roll back", "log in", "set up" where manuals write
/// "rollback", "login", "setup".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compound {
    /// The two words' terms (`None` for a stop word: "up").
    pub parts: [Option<u32>; 2],
    /// The term of the two written as one word.
    pub whole: u32,
}

impl LexicalEncoder {
    /// The compounds two adjacent words of `text` make ([`Compound`]);
    /// only letters count as words, each at least two long.
    pub fn compounds(&self, text: &str) -> Vec<Compound> {
        let words: Vec<String> = text
            .split(|c: char| !c.is_alphabetic())
            .filter(|w| w.chars().count() >= 2 && !w.chars().any(is_cjk))
            .map(str::to_lowercase)
            .collect();
        let term = |w: &str| self.bm25.embed_query(w).indices.first().copied();
        let mut out = Vec::new();
        for pair in words.windows(2) {
            let parts = [term(&pair[0]), term(&pair[1])];
            if parts.iter().all(Option::is_none) {
                continue;
            }
            if let Some(whole) = term(&format!("{}{}", pair[0], pair[1])) {
                out.push(Compound { parts, whole });
            }
        }
        out
    }
}

/// [`term_coverage`], with a term also found when it is part of one of
/// `compounds` whose whole word is found ("roll back" in a passage that
/// says "rollback").
pub fn coverage_with_compounds(
    terms: &SparseVector,
    compounds: &[Compound],
    found: &std::collections::HashSet<u32>,
) -> Option<f64> {
    if terms.is_empty() {
        return None;
    }
    let joined = |t: u32| {
        compounds
            .iter()
            .any(|c| c.parts.contains(&Some(t)) && found.contains(&c.whole))
    };
    let hits = terms
        .indices
        .iter()
        .filter(|&&t| found.contains(&t) || joined(t))
        .count();
    Some(hits as f64 / terms.indices.len() as f64)
}

/// Share of `terms` (a query-side sparse vector) present in `found`;
/// `None` when there are no terms. The one measure behind query coverage,
/// sentence ranking and groundedness.
pub fn term_coverage(terms: &SparseVector, found: &std::collections::HashSet<u32>) -> Option<f64> {
    if terms.is_empty() {
        return None;
    }
    let hits = terms.indices.iter().filter(|t| found.contains(t)).count();
    Some(hits as f64 / terms.indices.len() as f64)
}

#[cfg(test)]
mod tests;
