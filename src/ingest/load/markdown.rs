//! Markdown (CommonMark + tables, via pulldown-cmark). Headings start
//! sections; code is kept as text (identifiers in code matter for search);
//! YAML front matter and raw HTML tags are dropped.

use pulldown_cmark::{Event, HeadingLevel, Options, Parser, Tag, TagEnd};

use super::{Document, SectionBuilder};

pub(super) fn load(text: &str) -> Document {
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_YAML_STYLE_METADATA_BLOCKS
        | Options::ENABLE_FOOTNOTES;
    let mut builder = SectionBuilder::default();
    let mut heading: Option<(usize, String)> = None;
    let mut in_metadata = false;
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
            Event::Text(t) | Event::Code(t) if !in_metadata => match &mut heading {
                Some((_, title)) => title.push_str(&t),
                None => builder.push_text(&t),
            },
            Event::SoftBreak | Event::HardBreak => match &mut heading {
                Some((_, title)) => title.push(' '),
                None => builder.push_text("\n"),
            },
            Event::End(TagEnd::TableCell) => builder.push_text(" | "),
            Event::End(TagEnd::TableRow | TagEnd::TableHead | TagEnd::Item) => {
                builder.push_text("\n")
            }
            Event::End(
                TagEnd::Paragraph | TagEnd::CodeBlock | TagEnd::BlockQuote(_) | TagEnd::Table,
            ) => builder.paragraph_break(),
            _ => {}
        }
    }
    builder.finish(None)
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
                    "Use make install.\n\ncargo build --release"
                ),
                (vec!["Usage"], "one\ntwo"),
            ]
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
