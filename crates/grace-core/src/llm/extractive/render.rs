//! An extractive answer's text: the chosen blocks as Markdown, those of
//! one source together and closed by its `[n]` marker; a list or a term
//! with its description stands in a paragraph of its own.

use super::Candidate;
use crate::text::blocks::Kind;
use crate::text::sized_as_cjk;

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
                part.push_str(if block.kind != Kind::Sentence {
                    "\n\n"
                } else if part.ends_with(sized_as_cjk) && block.markdown.starts_with(sized_as_cjk) {
                    // Japanese and Chinese sentences follow each other
                    // without a space.
                    ""
                } else {
                    " "
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::blocks::blocks;

    fn candidates(sources: &[(usize, &str)]) -> Vec<Candidate> {
        sources
            .iter()
            .flat_map(|(n, text)| {
                blocks(text)
                    .into_iter()
                    .enumerate()
                    .map(|(position, block)| Candidate {
                        source: *n,
                        position,
                        block,
                    })
            })
            .collect()
    }

    #[test]
    fn one_marker_closes_a_sources_blocks_and_lists_stand_apart() {
        let c = candidates(&[
            (1, "Run `orbit rollback`. It is quick."),
            (2, "To deploy:\n1. Build.\n2. Push."),
            (3, "パッケージを削除します。設定も消します。"),
        ]);
        let (answer, cited) = render(Some("The sources do not mention X.".into()), &[0, 1, 2], &c);
        assert_eq!(
            answer,
            "The sources do not mention X. Run `orbit rollback`. It is quick. [1]\n\nTo deploy:\n1. Build.\n2. Push. [2]"
        );
        assert_eq!(cited, [1, 2]);
        // Japanese sentences run on without a space.
        let (answer, _) = render(None, &[3, 4], &c);
        assert_eq!(answer, "パッケージを削除します。設定も消します。 [3]");
    }
}
