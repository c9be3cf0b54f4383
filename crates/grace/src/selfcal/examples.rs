//! Example questions for an asker facing an empty page: made from the
//! knowledge base's own section headings ("Rotating keys" → "How do I
//! rotate keys?"), spread over its documents, the same every time.

use super::questions::{Origin, from_heading, is_generic, last_heading};
use super::sections::{MIN_WORDS, Section, read_first_sections, sample};
use crate::access::ReadScope;
use crate::error::Result;
use crate::rng::Rng;
use crate::store::VectorStore;

/// The most examples given.
pub const MAX_EXAMPLES: usize = 5;
/// Points read to find them: a large collection's first pages only.
const POINTS_READ: usize = 4_096;
/// The order the sections are drawn in (fixed: the page shows the same
/// examples on every visit).
const SEED: u64 = 7;

/// Up to `n` (at most [`MAX_EXAMPLES`]) questions, each from the heading of
/// a section with enough text to answer it, from as many documents as
/// there are, of what `scope` may read; none for a collection without
/// usable headings.
pub fn example_questions(
    store: &dyn VectorStore,
    n: usize,
    scope: &ReadScope,
) -> Result<Vec<String>> {
    Ok(pick(read_first_sections(store, POINTS_READ, scope)?, n))
}

/// Up to `n` questions from the headings of `sections`: a heading that is
/// a question first, then a "How do I …?" made from a task's heading, then
/// a short "What is …?" (a title, a heading with a colon or of more than
/// [`MAX_WHAT_IS_WORDS`] words makes none); within each, one document after
/// another.
fn pick(sections: Vec<Section>, n: usize) -> Vec<String> {
    let sections: Vec<Section> = sections
        .into_iter()
        .filter(|s| s.words >= MIN_WORDS && !is_generic(last_heading(&s.section)))
        .collect();
    let mut rng = Rng::new(SEED);
    let mut tiers: [Vec<String>; 3] = Default::default();
    for i in sample(&sections, sections.len(), &mut rng) {
        let heading = last_heading(&sections[i].section);
        if let Some((question, origin)) = from_heading(&sections[i].section)
            && let Some(tier) = tier(&question, origin, heading)
            && !tiers.iter().flatten().any(|q| *q == question)
        {
            tiers[tier].push(question);
        }
    }
    tiers
        .into_iter()
        .flatten()
        .take(n.min(MAX_EXAMPLES))
        .collect()
}

/// Words a heading made into "What is …?" may have.
const MAX_WHAT_IS_WORDS: usize = 4;

/// How good an example `question` (made from `heading` as `origin` says)
/// is: 0 the heading's own question, 1 a task, 2 a short "what is"; `None`
/// for one not worth showing.
fn tier(question: &str, origin: Origin, heading: &str) -> Option<usize> {
    match origin {
        Origin::HeadingQuestion => Some(0),
        _ if question.starts_with("How do I ") => Some(1),
        _ if heading.contains(':') || heading.split_whitespace().count() > MAX_WHAT_IS_WORDS => {
            None
        }
        _ => Some(2),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(source: &str, heading: &str, words: usize) -> Section {
        Section {
            source: source.into(),
            section: heading.into(),
            ids: vec![0],
            text: String::new(),
            first_chunk: 0,
            words,
        }
    }

    #[test]
    fn examples_come_from_headings_with_text_spread_over_documents() {
        let sections = vec![
            section("a.md", "Guide > Rotating keys", 40),
            section("a.md", "Guide > Rolling back a deployment", 40),
            section("b.md", "Can I deploy on Fridays?", 40),
            section("b.md", "See also", 40),
            section("c.md", "Scaling services", 3),
        ];
        let got = pick(sections.clone(), 10);
        assert_eq!(got.len(), 3, "{got:?}");
        // The heading's own question first, then tasks.
        assert_eq!(got[0], "Can I deploy on Fridays?");
        assert!(
            got.contains(&"How do I rotate keys?".to_string()),
            "{got:?}"
        );
        assert!(
            got.contains(&"Can I deploy on Fridays?".to_string()),
            "{got:?}"
        );
        // Too short a section, and a heading that answers nothing: none.
        assert!(
            !got.iter()
                .any(|q| q.contains("Scaling") || q.contains("See also"))
        );
        // The draw is the same every time.
        assert_eq!(pick(sections.clone(), 2), pick(sections, 2));
        assert!(pick(Vec::new(), 5).is_empty());
        // A title or a long heading makes no "What is …?".
        let titles = vec![
            section("r.md", "Sample knowledge base: the Orbit service", 40),
            section("r.md", "The long and winding heading of a section", 40),
            section("r.md", "Rollout", 40),
        ];
        assert_eq!(pick(titles, 5), ["What is rollout?"]);
    }

    #[test]
    fn never_more_than_the_most_examples() {
        let many: Vec<Section> = (0..40)
            .map(|i| section(&format!("d{i}.md"), &format!("Installing part {i}"), 40))
            .collect();
        assert_eq!(pick(many, 100).len(), MAX_EXAMPLES);
    }
}
