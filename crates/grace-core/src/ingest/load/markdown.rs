//! Markdown (CommonMark + tables, via pulldown-cmark). Headings start
//! sections; code is kept as text (identifiers in code matter for search);
//! YAML front matter and raw HTML tags are dropped.

use pulldown_cmark::{Event, HeadingLevel, Options, Parser, Tag, TagEnd};

use super::{Document, SectionBuilder};
use crate::text::blocks::DESCRIPTION;
use crate::text::word_count;

/// An inline code span of at most this many words stays code
/// (`` `orbit rollback api` ``); a longer one is prose set in backticks
/// (TeX-style quoting, `` `stable' ``…), read as text.
const MAX_CODE_WORDS: usize = 8;

pub(super) fn load(text: &str) -> Document {
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_YAML_STYLE_METADATA_BLOCKS
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_DEFINITION_LIST;
    let mut builder = SectionBuilder::default();
    let mut heading: Option<(usize, String)> = None;
    let mut in_metadata = false;
    // Each open list's next item number (`None`: bulleted).
    let mut lists: Vec<Option<u64>> = Vec::new();
    // Inside a definition: its paragraphs run on one line.
    let mut in_definition = false;
    // The cells of the table row being read.
    let mut row: Option<Vec<String>> = None;
    for event in Parser::new_ext(text, options) {
        match event {
            Event::Start(Tag::Heading { level, .. }) => {
                heading = Some((level_number(level), String::new()));
            }
            Event::End(TagEnd::Heading(_)) => {
                if let Some((level, title)) = heading.take() {
                    builder.heading(level, &title);
                }
            }
            Event::Start(Tag::MetadataBlock(_)) => in_metadata = true,
            Event::End(TagEnd::MetadataBlock(_)) => in_metadata = false,
            Event::Text(t) if !in_metadata => write(&mut heading, &mut row, &mut builder, &t),
            Event::Code(t) if !in_metadata => {
                let code = heading.is_none() && is_code(&t);
                let t = if code {
                    format!("`{t}`")
                } else {
                    t.to_string()
                };
                write(&mut heading, &mut row, &mut builder, &t);
            }
            Event::SoftBreak | Event::HardBreak => match &mut heading {
                Some((_, title)) => title.push(' '),
                None if in_definition || row.is_some() => {
                    write(&mut heading, &mut row, &mut builder, " ")
                }
                None => builder.push_text("\n"),
            },
            Event::Start(Tag::List(start)) => {
                builder.line_break();
                lists.push(start);
            }
            Event::End(TagEnd::List(_)) => {
                lists.pop();
                if lists.is_empty() {
                    builder.paragraph_break();
                }
            }
            Event::Start(Tag::Item) => {
                builder.line_break();
                match lists.last_mut() {
                    Some(Some(n)) => {
                        builder.push_text(&format!("{n}. "));
                        *n += 1;
                    }
                    _ => builder.push_text("- "),
                }
            }
            Event::End(TagEnd::Item) => builder.line_break(),
            Event::Start(Tag::DefinitionListTitle) => builder.paragraph_break(),
            Event::End(TagEnd::DefinitionList) => builder.paragraph_break(),
            Event::End(TagEnd::DefinitionListTitle) => builder.line_break(),
            Event::Start(Tag::DefinitionListDefinition) => {
                builder.line_break();
                builder.push_text(DESCRIPTION);
                in_definition = true;
            }
            Event::End(TagEnd::DefinitionListDefinition) => {
                in_definition = false;
                builder.line_break();
            }
            Event::Start(Tag::TableHead | Tag::TableRow) => row = Some(Vec::new()),
            Event::Start(Tag::TableCell) => {
                if let Some(cells) = &mut row {
                    cells.push(String::new());
                }
            }
            Event::End(TagEnd::TableRow | TagEnd::TableHead) => {
                if let Some(cells) = row.take() {
                    table_row(&mut builder, &cells);
                }
            }
            Event::End(TagEnd::Paragraph) if in_definition || !lists.is_empty() => {
                if in_definition {
                    builder.push_text(" ");
                } else {
                    builder.line_break();
                }
            }
            Event::End(
                TagEnd::Paragraph | TagEnd::CodeBlock | TagEnd::BlockQuote(_) | TagEnd::Table,
            ) => builder.paragraph_break(),
            _ => {}
        }
    }
    builder.finish(None)
}

/// Where text goes: the heading being read, the table cell being read, or
/// the section.
fn write(
    heading: &mut Option<(usize, String)>,
    row: &mut Option<Vec<String>>,
    builder: &mut SectionBuilder,
    text: &str,
) {
    match (heading, row) {
        (Some((_, title)), _) => title.push_str(text),
        (None, Some(cells)) => {
            if let Some(cell) = cells.last_mut() {
                cell.push_str(text);
            }
        }
        (None, None) => builder.push_text(text),
    }
}

/// Whether an inline code span is code: short, and not TeX-style quoting
/// (`` `stable' `` opens with a backtick and closes with an apostrophe, so
/// a "span" runs from one such quote to the next, with an odd number of
/// apostrophes in it).
fn is_code(span: &str) -> bool {
    word_count(span) <= MAX_CODE_WORDS && span.matches('\'').count().is_multiple_of(2)
}

/// A table row on its own line: a two-column row as a term and its
/// description, a wider one as its cells between ` | `.
pub(super) fn table_row(builder: &mut SectionBuilder, cells: &[String]) {
    let cells: Vec<String> = cells
        .iter()
        .map(|c| c.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    builder.line_break();
    match cells.as_slice() {
        [term, description] if !term.is_empty() && !description.is_empty() => {
            builder.push_text(term);
            builder.push_text("\n");
            builder.push_text(DESCRIPTION);
            builder.push_text(description);
        }
        _ => builder.push_text(&cells.join(" | ")),
    }
    builder.push_text("\n");
}

fn level_number(level: HeadingLevel) -> usize {
    match level {
        HeadingLevel::H1 => 1,
        HeadingLevel::H2 => 2,
        HeadingLevel::H3 => 3,
        HeadingLevel::H4 => 4,
        HeadingLevel::H5 => 5,
        HeadingLevel::H6 => 6,
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Format, Limits, load as load_bytes, outline};

    #[test]
    fn headings_make_nested_sections() {
        let md = "---\ntitle: x\n---\nIntro text.\n\n# Install\nRun it.\n\n## From source\nUse `make install`.\n\n```sh\ncargo build --release\n```\n\n# Usage\n- one\n- two\n";
        let doc = load_bytes(md.as_bytes(), Format::Markdown, &Limits::default()).unwrap();
        let got = outline(&doc);
        assert_eq!(
            got,
            vec![
                (vec![], "Intro text."),
                (vec!["Install"], "Run it."),
                (
                    vec!["Install", "From source"],
                    "Use `make install`.\n\ncargo build --release"
                ),
                (vec!["Usage"], "- one\n- two"),
            ]
        );
    }

    #[test]
    fn lists_terms_and_tables_keep_their_structure() {
        let md = "# Steps\n\nTo deploy:\n\n1. Build.\n2. Run `orbit deploy`.\n\n- a\n- b\n\npromote\n: Copy the release\n  to production.\n\n| Option | Meaning |\n|---|---|\n| `--env` | The environment |\n\n| a | b | c |\n|---|---|---|\n| 1 | 2 | 3 |\n\nSee `stable' distribution and `unstable' too with many more words in between them.";
        let doc = load_bytes(md.as_bytes(), Format::Markdown, &Limits::default()).unwrap();
        assert_eq!(
            doc.sections[0].text,
            "To deploy:\n\n1. Build.\n2. Run `orbit deploy`.\n\n- a\n- b\n\npromote\n: Copy the release to production.\n\nOption\n: Meaning\n`--env`\n: The environment\n\na | b | c\n1 | 2 | 3\n\nSee stable' distribution and unstable' too with many more words in between them."
        );
        let blocks = crate::text::blocks::blocks(&doc.sections[0].text);
        assert!(
            blocks
                .iter()
                .any(|b| b.markdown == "**promote**: Copy the release to production."),
            "{blocks:?}"
        );
        assert!(
            blocks
                .iter()
                .any(|b| b.markdown == "`--env`: The environment")
        );
    }

    #[test]
    fn setext_headings_and_inline_markup() {
        let md = "Title\n=====\n\nSome *emphasis* and a [link](http://x).\n\nSub\n---\n\nbody";
        let doc = load_bytes(md.as_bytes(), Format::Markdown, &Limits::default()).unwrap();
        assert_eq!(doc.sections[0].headings, vec!["Title"]);
        assert_eq!(doc.sections[0].text, "Some emphasis and a link.");
        assert_eq!(doc.sections[1].headings, vec!["Title", "Sub"]);
    }
}
