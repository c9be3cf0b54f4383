//! HTML: visible text only. `<script>`, `<style>`, `<noscript>`,
//! `<template>`, `<svg>`, `<nav>` and the `<head>` (but its `<title>`) are
//! dropped; `<h1>`…`<h6>` start sections; block elements end paragraphs.

use scraper::{ElementRef, Html, Node, Selector};

use super::{Document, SectionBuilder};

const SKIPPED: &[&str] = &[
    "script", "style", "noscript", "template", "svg", "head", "nav", "iframe", "object", "canvas",
];
const BLOCKS: &[&str] = &[
    "p",
    "div",
    "section",
    "article",
    "main",
    "aside",
    "header",
    "footer",
    "ul",
    "ol",
    "li",
    "dl",
    "dt",
    "dd",
    "pre",
    "blockquote",
    "table",
    "tr",
    "br",
    "hr",
    "figure",
    "figcaption",
    "form",
    "fieldset",
    "address",
    "details",
    "summary",
];

pub(super) fn load(text: &str) -> Document {
    let html = Html::parse_document(text);
    let title = Selector::parse("title")
        .ok()
        .and_then(|sel| html.select(&sel).next())
        .map(|t| {
            t.text()
                .collect::<String>()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        })
        .filter(|t| !t.is_empty());
    let mut builder = SectionBuilder::default();
    walk(html.root_element(), &mut builder);
    builder.finish(title)
}

fn walk(element: ElementRef<'_>, builder: &mut SectionBuilder) {
    for child in element.children() {
        match child.value() {
            Node::Text(t) => builder.push_text(t),
            Node::Element(e) => {
                let name = e.name();
                if SKIPPED.contains(&name) {
                    continue;
                }
                let Some(child_el) = ElementRef::wrap(child) else {
                    continue;
                };
                if let Some(level) = heading_level(name) {
                    let title: String = child_el.text().collect();
                    builder.heading(level, &title);
                    continue;
                }
                let block = BLOCKS.contains(&name);
                if block {
                    builder.paragraph_break();
                }
                if matches!(name, "td" | "th") {
                    builder.push_text(" ");
                }
                walk(child_el, builder);
                if block {
                    builder.paragraph_break();
                }
            }
            _ => {}
        }
    }
}

fn heading_level(name: &str) -> Option<usize> {
    match name {
        "h1" => Some(1),
        "h2" => Some(2),
        "h3" => Some(3),
        "h4" => Some(4),
        "h5" => Some(5),
        "h6" => Some(6),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Format, load};

    #[test]
    fn text_only_with_sections() {
        let html = r#"<!doctype html><html><head><title>The  Guide</title>
<style>body { color: red }</style><script>var secret = "do not index";</script></head>
<body><nav>Home | About</nav><p>Intro <b>bold</b> text.</p>
<h1>Install</h1><p>Run <code>make</code>.</p><script>alert(1)</script>
<h2>From source</h2><ul><li>one</li><li>two</li></ul>
<noscript>enable js</noscript></body></html>"#;
        let doc = load(html.as_bytes(), Format::Html).unwrap();
        assert_eq!(doc.title.as_deref(), Some("The Guide"));
        let all: String = doc
            .sections
            .iter()
            .map(|s| s.text.clone())
            .collect::<Vec<_>>()
            .join("|");
        assert!(
            !all.contains("secret") && !all.contains("alert") && !all.contains("color"),
            "{all}"
        );
        assert!(!all.contains("enable js") && !all.contains("Home"), "{all}");
        assert_eq!(doc.sections[0].text, "Intro bold text.");
        assert_eq!(doc.sections[1].headings, vec!["Install"]);
        assert_eq!(doc.sections[1].text, "Run make.");
        assert_eq!(doc.sections[2].headings, vec!["Install", "From source"]);
        assert_eq!(doc.sections[2].text, "one\n\ntwo");
    }
}
