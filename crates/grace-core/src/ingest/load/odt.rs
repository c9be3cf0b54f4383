//! OpenDocument text (ODT): `content.xml` in a ZIP archive. Headings are
//! `text:h` with their outline level; tables become text, a row a line;
//! comments and tracked deletions are left out.

use super::bounded::Archive;
use super::tables::Tables;
use super::xml::{Node, walk};
use super::{Document, Limits, LoadError, SectionBuilder};

const FORMAT: &str = "ODT";

/// Deepest heading level kept.
const MAX_LEVEL: usize = 10;

pub(super) fn load(bytes: &[u8], limits: &Limits) -> Result<Document, LoadError> {
    let mut archive = Archive::open(bytes, FORMAT, limits)?;
    let content = archive.required_text("content.xml")?;
    let mut out = SectionBuilder::default();
    let mut tables = Tables::default();
    let mut para = String::new();
    // Open paragraphs and headings (a note's paragraph sits inside one).
    let mut depth = 0usize;
    let mut heading: Option<usize> = None;
    // Open elements whose text is not the document's.
    let mut skip = 0usize;
    walk(&content, FORMAT, |node| {
        if let Node::Open {
            name: "annotation" | "tracked-changes",
            ..
        } = node
        {
            skip += 1;
        }
        if let Node::Close {
            name: "annotation" | "tracked-changes",
        } = node
        {
            skip = skip.saturating_sub(1);
            return;
        }
        if skip > 0 {
            return;
        }
        match &node {
            Node::Open { name: "h", .. } => {
                if depth == 0 {
                    para.clear();
                    heading = Some(
                        node.attr("outline-level")
                            .and_then(|l| l.trim().parse::<usize>().ok())
                            .unwrap_or(1)
                            .clamp(1, MAX_LEVEL),
                    );
                }
                depth += 1;
            }
            Node::Open { name: "p", .. } => {
                if depth == 0 {
                    para.clear();
                    heading = None;
                }
                depth += 1;
            }
            Node::Text(t) if depth > 0 => para.push_str(t),
            Node::Open { name: "s", .. } if depth > 0 => para.push(' '),
            Node::Open { name: "tab", .. } if depth > 0 => para.push('\t'),
            Node::Open {
                name: "line-break", ..
            } if depth > 0 => para.push('\n'),
            Node::Close { name: "h" | "p" } if depth > 0 => {
                depth -= 1;
                if depth > 0 {
                    para.push(' ');
                    return;
                }
                if tables.active() {
                    tables.text(&para);
                    tables.text(" ");
                } else if let Some(level) = heading.take().filter(|_| !para.trim().is_empty()) {
                    out.heading(level, &para);
                } else {
                    out.push_text(&para);
                    out.paragraph_break();
                }
                para.clear();
            }
            Node::Open { name: "table", .. } => tables.open_table(),
            Node::Open {
                name: "table-row", ..
            } => tables.open_row(),
            Node::Open {
                name: "table-cell", ..
            } => tables.open_cell(),
            Node::Close { name: "table-cell" } => tables.close_cell(),
            Node::Close { name: "table-row" } => tables.close_row(),
            Node::Close { name: "table" } => tables.close_table_into(&mut out),
            _ => {}
        }
    })?;
    Ok(out.finish(None))
}

#[cfg(test)]
mod tests {
    use super::super::bounded::zip_of;
    use super::super::{Format, load as load_any, outline};
    use super::*;

    fn odt(body: &str) -> Vec<u8> {
        let content = format!(
            r#"<office:document-content xmlns:office="o" xmlns:text="t" xmlns:table="b"><office:body><office:text>{body}</office:text></office:body></office:document-content>"#
        );
        zip_of(&[
            ("mimetype", b"application/vnd.oasis.opendocument.text"),
            ("content.xml", content.as_bytes()),
        ])
    }

    #[test]
    fn headings_paragraphs_and_tables() {
        let body = r#"<text:h text:outline-level="1">Backups</text:h>
<text:p>Run <text:span>grace</text:span><text:s text:c="3"/>nightly.<office:annotation><text:p>a comment</text:p></office:annotation></text:p>
<text:h text:outline-level="2">Where</text:h>
<table:table><table:table-row><table:table-cell><text:p>Path</text:p></table:table-cell><table:table-cell><text:p>/var/backups</text:p></table:table-cell></table:table-row></table:table>
<text:p>Note<text:note><text:note-body><text:p>a footnote</text:p></text:note-body></text:note> here.</text:p>"#;
        let doc = load_any(&odt(body), Format::Odt, &Limits::default()).unwrap();
        assert_eq!(
            outline(&doc),
            [
                (vec!["Backups"], "Run grace nightly."),
                (
                    vec!["Backups", "Where"],
                    "Path\n: /var/backups\n\nNotea footnote here."
                ),
            ]
        );
    }

    #[test]
    fn an_archive_without_content_is_refused() {
        let err = load_any(
            &zip_of(&[("meta.xml", b"<a/>")]),
            Format::Odt,
            &Limits::default(),
        )
        .unwrap_err();
        assert!(err.to_string().contains("no content.xml"), "{err}");
    }
}
