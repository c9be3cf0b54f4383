//! Which blocks an extractive answer quotes, once its best block is known:
//! the best source's other close sentences, then a block of another source
//! (or another term with its description, another list) only for a part of
//! the question the answer does not cover yet. Never a block because it is
//! merely close.

use std::collections::HashSet;

use super::{Candidate, Scored};
use crate::lexical::{Compound, SparseVector, identifiers_found};
use crate::text::blocks::Kind;

/// What the selection reads of the question.
pub(super) struct QuestionParts<'a> {
    /// Its lexical terms.
    pub(super) terms: &'a SparseVector,
    /// Two of its words written as one ("roll back", "rollback").
    pub(super) compounds: &'a [Compound],
    /// Its identifiers, found whole in a block's text.
    pub(super) identifiers: &'a [String],
    /// Their term ids (not words to cover).
    pub(super) identifier_terms: &'a HashSet<u32>,
}

/// The heading the best source's text sits under, and its lexical terms:
/// what it names is covered ("transfer.unpackLimit" over "When
/// `fetch.unpackLimit` or `receive.unpackLimit` are not set, the value of
/// this variable is used instead." needs no other page naming it).
pub(super) struct Heading<'a> {
    pub(super) text: &'a str,
    pub(super) terms: HashSet<u32>,
}

/// The blocks to quote: `best` first, then from `ranked` (the other close
/// blocks, best first) the best source's sentences and what covers a
/// missing part of the question (one neither the chosen blocks nor the
/// best source's `heading` cover), at most `max` in all. `terms[i]` are
/// candidate `i`'s lexical terms.
pub(super) fn choose(
    best: usize,
    ranked: &[Scored],
    candidates: &[Candidate],
    terms: &[HashSet<u32>],
    question: &QuestionParts<'_>,
    heading: Option<&Heading<'_>>,
    max: usize,
) -> Vec<usize> {
    let primary = candidates[best].source;
    let mut chosen = vec![best];
    // The best source's other close sentences. Another term with its
    // description, or a procedure, is another item: like another source's,
    // it must earn its place ("status: …" is no part of what "promote"
    // does, a deployment's steps none of whether Fridays are allowed).
    let same_item = |c: &Candidate| c.source == primary && c.block.kind == Kind::Sentence;
    for s in ranked.iter().filter(|s| same_item(&candidates[s.index])) {
        if chosen.len() >= max {
            break;
        }
        chosen.push(s.index);
    }
    // Another source only for a part of the question not yet covered: an
    // identifier, or at least two words and half of those missing.
    let found = |i: usize, id: &String| {
        identifiers_found(std::slice::from_ref(id), &candidates[i].block.plain) > 0
    };
    let in_heading = |id: &String| {
        heading.is_some_and(|h| identifiers_found(std::slice::from_ref(id), h.text) > 0)
    };
    let mut missing_ids: Vec<&String> = question
        .identifiers
        .iter()
        .filter(|id| !in_heading(id) && !chosen.iter().any(|&i| found(i, id)))
        .collect();
    // A word is there when its term is, or the compound it makes with its
    // neighbour ("roll back" in "rollback").
    let has = |i: usize, t: u32| {
        terms[i].contains(&t)
            || question
                .compounds
                .iter()
                .any(|c| c.parts.contains(&Some(t)) && terms[i].contains(&c.whole))
    };
    let mut missing_words: HashSet<u32> = question
        .terms
        .indices
        .iter()
        .copied()
        .filter(|t| !question.identifier_terms.contains(t))
        .filter(|t| !heading.is_some_and(|h| h.terms.contains(t)))
        .filter(|&t| !chosen.iter().any(|&i| has(i, t)))
        .collect();
    for s in ranked.iter().filter(|s| !same_item(&candidates[s.index])) {
        if chosen.len() >= max || (missing_ids.is_empty() && missing_words.is_empty()) {
            break;
        }
        let ids: Vec<&String> = missing_ids
            .iter()
            .copied()
            .filter(|id| found(s.index, id))
            .collect();
        let words: Vec<u32> = missing_words
            .iter()
            .copied()
            .filter(|&t| has(s.index, t))
            .collect();
        if !ids.is_empty() || (words.len() >= 2 && 2 * words.len() >= missing_words.len()) {
            chosen.push(s.index);
            missing_ids.retain(|id| !ids.contains(id));
            missing_words.retain(|t| !words.contains(t));
        }
    }
    chosen
}
