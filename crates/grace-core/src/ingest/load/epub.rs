//! EPUB: the package file named by `META-INF/container.xml` lists the
//! chapters (its spine); each chapter is XHTML, read by the HTML loader
//! with its own headings. The book's title is the document's.

use std::collections::HashMap;

use super::bounded::Archive;
use super::xml::{Node, walk};
use super::{Document, Limits, LoadError, html};

const FORMAT: &str = "EPUB";

pub(super) fn load(bytes: &[u8], limits: &Limits) -> Result<Document, LoadError> {
    let malformed = |message: String| LoadError::Malformed {
        format: FORMAT,
        message,
    };
    let mut archive = Archive::open(bytes, FORMAT, limits)?;
    let container = archive.required_text("META-INF/container.xml")?;
    let mut package_path = None;
    walk(&container, FORMAT, |node| {
        if let Node::Open {
            name: "rootfile", ..
        } = node
            && package_path.is_none()
        {
            package_path = node.attr("full-path").map(str::to_string);
        }
    })?;
    let package_path =
        package_path.ok_or_else(|| malformed("container.xml names no package file".into()))?;
    let package = archive.required_text(&package_path)?;
    let (title, chapters) = spine(&package)?;
    if chapters.len() > limits.max_pages {
        return Err(LoadError::TooMany {
            what: "chapters",
            limit: limits.max_pages,
            key: "ingest.max_pages",
        });
    }
    let base = package_path.rsplit_once('/').map_or("", |(dir, _)| dir);
    let mut doc = Document {
        title,
        sections: Vec::new(),
    };
    for href in chapters {
        let Some(xhtml) = archive.read(&resolve(base, &href))? else {
            continue;
        };
        let text = String::from_utf8_lossy(&xhtml);
        doc.sections.extend(html::load(&text).sections);
    }
    Ok(doc)
}

/// The book's title and its chapters' paths (relative to the package
/// file), in reading order.
fn spine(package: &str) -> Result<(Option<String>, Vec<String>), LoadError> {
    let mut hrefs: HashMap<String, String> = HashMap::new();
    let mut order: Vec<String> = Vec::new();
    let mut title = String::new();
    let mut in_title = false;
    walk(package, FORMAT, |node| match &node {
        Node::Open { name: "item", .. } => {
            let xhtml = node.attr("media-type").is_some_and(|m| m.contains("html"));
            if let (true, Some(id), Some(href)) = (xhtml, node.attr("id"), node.attr("href")) {
                hrefs.insert(id.to_string(), href.to_string());
            }
        }
        Node::Open {
            name: "itemref", ..
        } => {
            if node.attr("linear") != Some("no")
                && let Some(id) = node.attr("idref")
            {
                order.push(id.to_string());
            }
        }
        Node::Open { name: "title", .. } if title.is_empty() => in_title = true,
        Node::Text(t) if in_title => title.push_str(t),
        Node::Close { name: "title" } => in_title = false,
        _ => {}
    })?;
    let chapters = order
        .iter()
        .filter_map(|id| hrefs.get(id).cloned())
        .collect();
    let title = title.split_whitespace().collect::<Vec<_>>().join(" ");
    Ok(((!title.is_empty()).then_some(title), chapters))
}

/// `href` (percent-encoded, relative, maybe with `..` or a `#fragment`)
/// against the package file's folder, as a path inside the archive.
fn resolve(base: &str, href: &str) -> String {
    let href = href.split('#').next().unwrap_or_default();
    let href = percent_decode(href);
    let mut parts: Vec<&str> = if href.starts_with('/') {
        Vec::new()
    } else {
        base.split('/').filter(|p| !p.is_empty()).collect()
    };
    for part in href.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    parts.join("/")
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && let (Some(h), Some(l)) = (
                bytes.get(i + 1).and_then(|b| hex(*b)),
                bytes.get(i + 2).and_then(|b| hex(*b)),
            )
        {
            out.push((h * 16 + l) as u8);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::super::bounded::zip_of;
    use super::super::{Format, load as load_any, outline};
    use super::*;

    const CONTAINER: &[u8] = br#"<container><rootfiles><rootfile full-path="OEBPS/content.opf"/></rootfiles></container>"#;

    fn epub(chapters: usize) -> Vec<u8> {
        let mut manifest = String::new();
        let mut spine = String::new();
        let mut files = Vec::new();
        for i in 0..chapters {
            manifest.push_str(&format!(
                r#"<item id="c{i}" href="text/ch%20{i}.xhtml" media-type="application/xhtml+xml"/>"#
            ));
            spine.push_str(&format!(r#"<itemref idref="c{i}"/>"#));
            files.push((
                format!("OEBPS/text/ch {i}.xhtml"),
                format!(
                    "<html><body><h1>Chapter {i}</h1><p>Text of chapter {i}.</p></body></html>"
                ),
            ));
        }
        let opf = format!(
            r#"<package><metadata><dc:title>The Book</dc:title></metadata><manifest>{manifest}<item id="css" href="s.css" media-type="text/css"/></manifest><spine><itemref idref="css"/>{spine}</spine></package>"#
        );
        let mut entries: Vec<(&str, &[u8])> = vec![
            ("META-INF/container.xml", CONTAINER),
            ("OEBPS/content.opf", opf.as_bytes()),
        ];
        for (name, text) in &files {
            entries.push((name, text.as_bytes()));
        }
        zip_of(&entries)
    }

    #[test]
    fn chapters_in_spine_order_with_their_headings() {
        let doc = load_any(&epub(2), Format::Epub, &Limits::default()).unwrap();
        assert_eq!(doc.title.as_deref(), Some("The Book"));
        assert_eq!(
            outline(&doc),
            [
                (vec!["Chapter 0"], "Text of chapter 0."),
                (vec!["Chapter 1"], "Text of chapter 1.")
            ]
        );
    }

    #[test]
    fn too_many_chapters_and_missing_parts_are_refused() {
        let few = Limits {
            max_pages: 3,
            ..Limits::default()
        };
        let err = load_any(&epub(4), Format::Epub, &few).unwrap_err();
        assert!(err.to_string().contains("ingest.max_pages"), "{err}");
        let bare = zip_of(&[("mimetype", b"application/epub+zip")]);
        let err = load_any(&bare, Format::Epub, &few).unwrap_err();
        assert!(err.to_string().contains("container.xml"), "{err}");
    }

    #[test]
    fn hrefs_resolve_inside_the_archive() {
        assert_eq!(resolve("OEBPS", "../x/a%20b.html#top"), "x/a b.html");
        assert_eq!(resolve("", "../../../etc/passwd"), "etc/passwd");
        assert_eq!(resolve("a/b", "./c.xhtml"), "a/b/c.xhtml");
        assert_eq!(percent_decode("%e3%81%82%zz%"), "あ%zz%");
    }
}
