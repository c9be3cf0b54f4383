//! Plain text: one section; paragraphs are kept for the chunker.

use super::{Document, SectionBuilder};

pub(super) fn load(text: &str) -> Document {
    let mut builder = SectionBuilder::default();
    builder.push_text(text);
    builder.finish(None)
}

#[cfg(test)]
mod tests {
    use super::super::{Format, Limits, load};

    #[test]
    fn one_section_with_paragraphs() {
        let doc = load(
            b"First para\nline two.\n\nSecond para.",
            Format::Text,
            &Limits::default(),
        )
        .unwrap();
        assert_eq!(doc.sections.len(), 1);
        assert!(doc.sections[0].headings.is_empty());
        assert_eq!(
            doc.sections[0].text,
            "First para\nline two.\n\nSecond para."
        );
    }
}
