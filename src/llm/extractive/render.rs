//! An extractive answer's text: the chosen blocks as Markdown, those of
//! one source together and closed by its `[n]` marker; a list or a term
//! with its description stands in a paragraph of its own.

use super::Candidate;
use crate::text::blocks::Kind;

/// The answer (`lead` first, when there is one) and the source numbers it
/// cites, in order, from the blocks `chosen` (indices into `candidates`,
/// in the order to quote them).
pub(super) fn render(
    lead: Option<String>,
    chosen: &[usize],
    candidates: &[Candidate],
) -> (String, Vec<usize>) {
    let mut answer = lead.unwrap_or_default();
    let mut citations = Vec::new();
    let groups: Vec<&[usize]> = chosen
        .chunk_by(|a, b| candidates[*a].source == candidates[*b].source)
        .collect();
    for group in groups {
        let number = candidates[group[0]].source;
        let mut part = String::new();
        for &i in group {
            let block = &candidates[i].block;
            if !part.is_empty() {
                part.push_str(if block.kind == Kind::Sentence {
                    " "
                } else {
                    "\n\n"
                });
            }
            part.push_str(&block.markdown);
        }
        let stands_apart = group
            .iter()
            .any(|&i| candidates[i].block.kind == Kind::List)
            || part.contains('\n');
        if !answer.is_empty() {
            answer.push_str(if stands_apart || answer.contains('\n') {
                "\n\n"
            } else {
                " "
            });
        }
        answer.push_str(&format!("{part} [{number}]"));
        if !citations.contains(&number) {
            citations.push(number);
        }
    }
    (answer, citations)
}
