//! Word (DOCX): `word/document.xml` in a ZIP archive. Headings are the
//! paragraphs whose style is a heading in `word/styles.xml` (its name
//! `heading N` or `Title`, or an outline level), so they are found in any
//! language Word was set to; tables become text, a row a line.

use std::collections::HashMap;

use super::bounded::Archive;
use super::tables::Tables;
use super::xml::{Node, walk};
use super::{Document, Limits, LoadError, SectionBuilder};

const FORMAT: &str = "DOCX";

/// Word's outline levels run 0–8; 9 is body text.
const MAX_OUTLINE_LEVEL: usize = 8;

/// Longest paragraph taken as a heading (a long one is body text in a
/// heading style).
const MAX_HEADING_CHARS: usize = 300;

pub(super) fn load(bytes: &[u8], limits: &Limits) -> Result<Document, LoadError> {
    let mut archive = Archive::open(bytes, FORMAT, limits)?;
    let body = archive.required_text("word/document.xml")?;
    let styles = match archive.read_text("word/styles.xml")? {
        Some(xml) => heading_styles(&xml)?,
        None => HashMap::new(),
    };
    read_body(&body, &styles)
}

/// Style id → heading level (1 = top), from the styles' names and outline
/// levels.
fn heading_styles(xml: &str) -> Result<HashMap<String, usize>, LoadError> {
    let mut levels = HashMap::new();
    let mut current: Option<String> = None;
    walk(xml, FORMAT, |node| match &node {
        Node::Open { name: "style", .. } => {
            current = node.attr("styleId").map(str::to_string);
        }
        Node::Open { name: "name", .. } => {
            if let (Some(id), Some(name)) = (&current, node.attr("val"))
                && let Some(level) = level_of_name(name)
            {
                levels.insert(id.clone(), level);
            }
        }
        Node::Open {
            name: "outlineLvl", ..
        } => {
            if let (Some(id), Some(level)) = (&current, node.attr("val").and_then(outline_level)) {
                levels.entry(id.clone()).or_insert(level);
            }
        }
        Node::Close { name: "style" } => current = None,
        _ => {}
    })?;
    Ok(levels)
}

/// `heading 2` → 2; `Title` → 0, the document's title.
fn level_of_name(name: &str) -> Option<usize> {
    let name = name.trim().to_ascii_lowercase();
    if name == "title" {
        return Some(0);
    }
    let n: usize = name.strip_prefix("heading")?.trim().parse().ok()?;
    (1..=MAX_OUTLINE_LEVEL + 1).contains(&n).then_some(n)
}

/// A `w:outlineLvl` value (0-based; 9 is body text) as a level from 1.
fn outline_level(val: &str) -> Option<usize> {
    let n: usize = val.trim().parse().ok()?;
    (n <= MAX_OUTLINE_LEVEL).then_some(n + 1)
}

/// The body: paragraphs, their styles and the tables.
fn read_body(xml: &str, styles: &HashMap<String, usize>) -> Result<Document, LoadError> {
    let mut out = SectionBuilder::default();
    let mut title: Option<String> = None;
    let mut tables = Tables::default();
    let mut para = String::new();
    let mut level: Option<usize> = None;
    let (mut in_text, mut in_props) = (false, false);
    walk(xml, FORMAT, |node| match &node {
        Node::Open { name: "p", .. } => {
            para.clear();
            level = None;
        }
        Node::Open { name: "pPr", .. } => in_props = true,
        Node::Close { name: "pPr" } => in_props = false,
        Node::Open { name: "pStyle", .. } if in_props => {
            if let Some(id) = node.attr("val") {
                level = styles.get(id).copied().or_else(|| {
                    // Word's own ids when styles.xml is missing: Heading1, Title.
                    let lower = id.to_ascii_lowercase();
                    level_of_name(&lower.replace("heading", "heading "))
                });
            }
        }
        Node::Open {
            name: "outlineLvl", ..
        } if in_props => {
            if let Some(l) = node.attr("val").and_then(outline_level) {
                level = Some(l);
            }
        }
        Node::Open { name: "t", .. } => in_text = true,
        Node::Close { name: "t" } => in_text = false,
        Node::Text(t) if in_text => para.push_str(t),
        Node::Open { name: "tab", .. } if !in_props => para.push('\t'),
        Node::Open {
            name: "br" | "cr", ..
        } => para.push('\n'),
        Node::Close { name: "p" } => {
            if tables.active() {
                tables.text(&para);
                tables.text(" ");
            } else {
                match level {
                    Some(0) if is_heading(&para) && title.is_none() => {
                        title = Some(para.split_whitespace().collect::<Vec<_>>().join(" "));
                    }
                    Some(l) if is_heading(&para) => out.heading(l.max(1), &para),
                    _ => {
                        out.push_text(&para);
                        out.paragraph_break();
                    }
                }
            }
            para.clear();
        }
        Node::Open { name: "tbl", .. } => tables.open_table(),
        Node::Open { name: "tr", .. } => tables.open_row(),
        Node::Open { name: "tc", .. } => tables.open_cell(),
        Node::Close { name: "tc" } => tables.close_cell(),
        Node::Close { name: "tr" } => tables.close_row(),
        Node::Close { name: "tbl" } => tables.close_table_into(&mut out),
        _ => {}
    })?;
    Ok(out.finish(title))
}

fn is_heading(text: &str) -> bool {
    let n = text.trim().chars().count();
    n > 0 && n <= MAX_HEADING_CHARS
}

#[cfg(test)]
mod tests {
    use super::super::bounded::zip_of;
    use super::super::{Format, load as load_any, outline};
    use super::*;

    const STYLES: &str = r#"<w:styles xmlns:w="w">
<w:style w:styleId="berschrift1"><w:name w:val="heading 1"/></w:style>
<w:style w:styleId="Sub"><w:name w:val="My subsection"/><w:pPr><w:outlineLvl w:val="1"/></w:pPr></w:style>
<w:style w:styleId="Normal"><w:name w:val="Normal"/></w:style>
</w:styles>"#;

    fn para(style: &str, text: &str) -> String {
        let props = if style.is_empty() {
            String::new()
        } else {
            format!(
                r#"<w:pPr><w:pStyle w:val="{style}"/><w:tabs><w:tab w:val="left"/></w:tabs></w:pPr>"#
            )
        };
        format!(r#"<w:p>{props}<w:r><w:t xml:space="preserve">{text}</w:t></w:r></w:p>"#)
    }

    fn docx(body: &str, styles: Option<&str>) -> Vec<u8> {
        let doc = format!(r#"<w:document xmlns:w="w"><w:body>{body}</w:body></w:document>"#);
        let mut entries: Vec<(&str, &[u8])> = vec![("word/document.xml", doc.as_bytes())];
        if let Some(s) = styles {
            entries.push(("word/styles.xml", s.as_bytes()));
        }
        zip_of(&entries)
    }

    #[test]
    fn headings_come_from_the_styles_in_any_language() {
        let body = [
            para("berschrift1", "Installation"),
            para("Normal", "Run the installer."),
            para("Sub", "On Debian"),
            para("", "Use apt &amp; friends."),
            para("Quote", "Quoted, so body text"),
        ]
        .concat();
        let doc = load_any(&docx(&body, Some(STYLES)), Format::Docx, &Limits::default()).unwrap();
        assert_eq!(
            outline(&doc),
            [
                (vec!["Installation"], "Run the installer."),
                (
                    vec!["Installation", "On Debian"],
                    "Use apt & friends.\n\nQuoted, so body text"
                ),
            ]
        );
        // Without styles.xml Word's own ids still name headings.
        let body =
            para("Title", "The Manual") + &para("Heading1", "Installation") + &para("", "Run it.");
        let doc = load_any(&docx(&body, None), Format::Docx, &Limits::default()).unwrap();
        assert_eq!(outline(&doc), [(vec!["Installation"], "Run it.")]);
        assert_eq!(doc.title.as_deref(), Some("The Manual"));
    }

    #[test]
    fn tables_become_rows_of_cells() {
        let cell = |t: &str| format!("<w:tc>{}</w:tc>", para("", t));
        let table = format!(
            "<w:tbl><w:tr>{}{}</w:tr><w:tr>{}{}</w:tr></w:tbl>",
            cell("Option"),
            cell("Meaning"),
            cell("-v"),
            cell("verbose")
        );
        let body = para("Heading1", "Options") + &table + &para("", "After.");
        let doc = load_any(&docx(&body, None), Format::Docx, &Limits::default()).unwrap();
        assert_eq!(
            outline(&doc),
            [(
                vec!["Options"],
                "Option\n: Meaning\n-v\n: verbose\n\nAfter."
            )]
        );
    }

    #[test]
    fn hostile_archives_are_refused_with_reasons() {
        let limits = Limits::default();
        let not_zip = load_any(b"PK\x03\x04 nonsense", Format::Docx, &limits).unwrap_err();
        assert!(
            not_zip.to_string().contains("not a ZIP archive"),
            "{not_zip}"
        );
        let empty = zip_of(&[("other.xml", b"<a/>")]);
        let err = load_any(&empty, Format::Docx, &limits).unwrap_err();
        assert!(err.to_string().contains("no word/document.xml"), "{err}");
        let broken = zip_of(&[("word/document.xml", b"<w:document><w:p>")]);
        assert!(load_any(&broken, Format::Docx, &limits).is_err());
        let bomb = docx(&para("", &"a".repeat(3_000_000)), None);
        let err = load_any(&bomb, Format::Docx, &limits).unwrap_err();
        assert!(matches!(err, LoadError::Ratio { .. }), "{err}");
    }
}
