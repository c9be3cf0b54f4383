//! HTML: visible text only. `<script>`, `<style>`, `<noscript>`,
//! `<template>`, `<svg>`, `<nav>` and the `<head>` (but its `<title>`) are
//! dropped; `<h1>`…`<h6>` start sections; block elements end paragraphs.
//!
//! A page nested deeper than [`MAX_DEPTH`] elements is not parsed into a
//! DOM: html5ever's work per block start tag grows with the depth (40,000
//! nested `<div>`s take about 4 s, a 10 MB file of them hours). Its text is
//! read by a linear tag stripper instead ([`flat`]): kept, without sections.

use scraper::{ElementRef, Html, Node, Selector};

use super::{Document, SectionBuilder};
use crate::text::blocks::DESCRIPTION;
use crate::text::word_count;

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

/// Deeper pages are read by [`flat`]; at this depth html5ever takes about
/// 10 ms.
pub(crate) const MAX_DEPTH: usize = 2_000;

/// Elements that are never closed (void) or whose end tag may be left out:
/// they do not count towards the nesting depth.
const UNCOUNTED: &[&str] = &[
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source",
    "track", "wbr", "p", "li", "dt", "dd", "tr", "td", "th", "option", "optgroup", "thead",
    "tbody", "tfoot", "colgroup", "rb", "rt", "rp", "html", "head", "body", "!doctype",
];

pub(super) fn load(text: &str) -> Document {
    let lower = text.to_ascii_lowercase();
    if nesting_depth(text, &lower) > MAX_DEPTH {
        return flat(text, &lower);
    }
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

/// One piece of the walk still to do (`N`: the DOM's node reference).
enum Work<N> {
    /// Read this node (and, for an element, its children).
    Node(N),
    /// A block element's children are done: end its paragraph.
    EndBlock,
    /// A `<dt>`'s children are done: its description follows on the next line.
    EndTerm,
    /// A code element's children are done: close its span.
    EndCode,
    /// A `<pre>`'s children are done.
    EndPre,
}

/// Elements whose short text is code (`` `orbit deploy` ``).
const CODE: &[&str] = &["code", "kbd", "samp", "tt"];

/// A code element's text of at most this many words is a code span.
const MAX_CODE_WORDS: usize = 8;

/// Depth-first over the document with a stack of its own, not the call
/// stack: a page of 100,000 nested `<div>`s is as deep as html5ever builds
/// it, and recursion that deep overflows a thread's stack (an abort, not a
/// panic that ingest could report). The structure an answer quotes is
/// kept ([`crate::text::blocks`]): a `<dt>` and its `<dd>` as a term and
/// its description, a two-cell table row likewise (wider rows as cells
/// between ` | `), `<ol>` items numbered, `<ul>` items bulleted, short
/// `<code>` as a code span.
fn walk(root: ElementRef<'_>, builder: &mut SectionBuilder) {
    let mut stack: Vec<Work<_>> = root.children().rev().map(Work::Node).collect();
    // Inside `<pre>`: code is not marked again.
    let mut pre = 0usize;
    // A `<dt>` just ended: a `<dd>` continues it.
    let mut after_term = false;
    while let Some(work) = stack.pop() {
        let child = match work {
            Work::EndBlock => {
                builder.paragraph_break();
                continue;
            }
            Work::EndTerm => {
                builder.line_break();
                after_term = true;
                continue;
            }
            Work::EndCode => {
                builder.push_text("`");
                continue;
            }
            Work::EndPre => {
                pre = pre.saturating_sub(1);
                builder.paragraph_break();
                continue;
            }
            Work::Node(child) => child,
        };
        match child.value() {
            Node::Text(t) => {
                if !t.trim().is_empty() {
                    after_term = false;
                    builder.push_text(t);
                } else if !after_term {
                    // White space between a `<dt>` and its `<dd>` is dropped.
                    builder.push_text(t);
                }
            }
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
                    after_term = false;
                    continue;
                }
                let continues_term = name == "dd" && std::mem::take(&mut after_term);
                if continues_term {
                    builder.push_text(DESCRIPTION);
                    stack.push(Work::EndBlock);
                } else if name == "dt" {
                    builder.paragraph_break();
                    stack.push(Work::EndTerm);
                } else if name == "pre" {
                    builder.paragraph_break();
                    pre += 1;
                    stack.push(Work::EndPre);
                } else if BLOCKS.contains(&name) {
                    builder.paragraph_break();
                    stack.push(Work::EndBlock);
                }
                match name {
                    "li" => builder.push_text(&item_marker(child_el)),
                    "td" | "th" => builder.push_text(&cell_separator(child_el)),
                    _ if CODE.contains(&name) && pre == 0 && is_code(child_el) => {
                        builder.push_text("`");
                        stack.push(Work::EndCode);
                    }
                    _ => {}
                }
                stack.extend(child.children().rev().map(Work::Node));
            }
            _ => {}
        }
    }
}

/// Whether a code element's text makes a code span: short, one line, no
/// backtick of its own.
fn is_code(element: ElementRef<'_>) -> bool {
    let text: String = element.text().collect();
    !text.trim().is_empty()
        && !text.contains('`')
        && !text.trim().contains('\n')
        && word_count(&text) <= MAX_CODE_WORDS
}

/// What starts a list item: `N. ` in an `<ol>` (counting from its
/// `start`), `- ` in a `<ul>`, nothing elsewhere.
fn item_marker(item: ElementRef<'_>) -> String {
    let Some(list) = item.parent().and_then(ElementRef::wrap) else {
        return String::new();
    };
    match list.value().name() {
        "ol" => {
            let start: u64 = list
                .value()
                .attr("start")
                .and_then(|s| s.trim().parse().ok())
                .unwrap_or(1);
            let before = item
                .prev_siblings()
                .filter_map(ElementRef::wrap)
                .filter(|e| e.value().name() == "li")
                .count() as u64;
            format!("{}. ", start.saturating_add(before))
        }
        "ul" => "- ".to_string(),
        _ => String::new(),
    }
}

/// What goes before a table cell: nothing before the first; in a two-cell
/// row the second is the first's description; otherwise ` | `.
fn cell_separator(cell: ElementRef<'_>) -> String {
    let is_cell = |e: &ElementRef<'_>| matches!(e.value().name(), "td" | "th");
    let before = cell
        .prev_siblings()
        .filter_map(ElementRef::wrap)
        .filter(is_cell)
        .count();
    if before == 0 {
        return " ".to_string();
    }
    let cells = before
        + 1
        + cell
            .next_siblings()
            .filter_map(ElementRef::wrap)
            .filter(is_cell)
            .count();
    if cells == 2 {
        format!("\n{DESCRIPTION}")
    } else {
        " | ".to_string()
    }
}

/// The name of the tag that starts at `lower[at]` (`<` already seen): ASCII
/// letters, digits, `-`, `:` and `!`.
fn tag_name(lower: &str, at: usize) -> &str {
    let rest = &lower[at..];
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | ':' | '!')))
        .unwrap_or(rest.len());
    &rest[..end]
}

/// One piece of a page as a linear scan sees it.
enum Piece<'a> {
    /// Text up to the next tag, entities not decoded (a `<` that starts no
    /// tag, as in `a < b`, is text too).
    Text(&'a str),
    /// A start or end tag; its name is lower case.
    Tag {
        name: &'a str,
        close: bool,
        self_closing: bool,
    },
}

/// The pieces of a page in order, comments left out: what [`nesting_depth`]
/// and [`flat`] read, without a DOM. Linear in the page's size.
struct Tags<'a> {
    text: &'a str,
    /// `text` in ASCII lower case (the same byte offsets).
    lower: &'a str,
    at: usize,
}

impl<'a> Tags<'a> {
    fn new(text: &'a str, lower: &'a str) -> Self {
        Self { text, lower, at: 0 }
    }

    /// After the start tag of `name`: jumps to its end tag (the element's
    /// content is not read).
    fn skip_element(&mut self, name: &str) {
        let closing = format!("</{name}");
        self.at = self.lower[self.at..]
            .find(&closing)
            .map_or(self.text.len(), |e| self.at + e);
    }
}

impl<'a> Iterator for Tags<'a> {
    type Item = Piece<'a>;

    fn next(&mut self) -> Option<Piece<'a>> {
        let (text, lower, len) = (self.text, self.lower, self.text.len());
        loop {
            if self.at >= len {
                return None;
            }
            match lower[self.at..].find('<') {
                None => {
                    let rest = &text[self.at..];
                    self.at = len;
                    return Some(Piece::Text(rest));
                }
                Some(0) => {}
                Some(found) => {
                    let before = &text[self.at..self.at + found];
                    self.at += found;
                    return Some(Piece::Text(before));
                }
            }
            let start = self.at + 1;
            if lower[start..].starts_with("!--") {
                self.at = lower[start..].find("-->").map_or(len, |e| start + e + 3);
                continue;
            }
            let close = lower[start..].starts_with('/');
            let name = tag_name(lower, start + usize::from(close));
            if name.is_empty() {
                self.at = start;
                return Some(Piece::Text(&text[start - 1..start]));
            }
            let end = lower[start..].find('>').map_or(len, |e| start + e);
            let self_closing = end > start && lower[..end].ends_with('/');
            self.at = (end + 1).min(len);
            return Some(Piece::Tag {
                name,
                close,
                self_closing,
            });
        }
    }
}

/// The deepest nesting of elements that need an end tag, by one linear
/// scan of the tags (comments skipped). Approximate (HTML closes some
/// elements implicitly), and only used to choose how to read the page.
/// `lower` is `text.to_ascii_lowercase()`.
fn nesting_depth(text: &str, lower: &str) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    for piece in Tags::new(text, lower) {
        if let Piece::Tag {
            name,
            close,
            self_closing,
        } = piece
            && !UNCOUNTED.contains(&name)
        {
            if close {
                depth = depth.saturating_sub(1);
            } else if !self_closing {
                depth += 1;
                deepest = deepest.max(depth);
            }
        }
    }
    deepest
}

/// The text of a page without building its DOM: tags dropped (block tags
/// end paragraphs), the contents of skipped elements dropped, the common
/// entities decoded. Linear in the page's size.
fn flat(text: &str, lower: &str) -> Document {
    let mut builder = SectionBuilder::default();
    let mut tags = Tags::new(text, lower);
    while let Some(piece) = tags.next() {
        match piece {
            Piece::Text(t) => builder.push_text(&decode_entities(t)),
            Piece::Tag { name, close, .. } => {
                if !close && SKIPPED.contains(&name) {
                    tags.skip_element(name);
                } else if BLOCKS.contains(&name) || heading_level(name).is_some() {
                    builder.paragraph_break();
                }
            }
        }
    }
    builder.finish(None)
}

/// `&amp;`, `&lt;`, `&gt;`, `&quot;`, `&#39;`, `&apos;`, `&nbsp;`; other
/// entities stay as written.
fn decode_entities(text: &str) -> String {
    if !text.contains('&') {
        return text.to_string();
    }
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&apos;", "'")
        .replace("&nbsp;", " ")
        .replace("&amp;", "&")
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
    use super::super::{Format, Limits, load};
    use super::MAX_DEPTH;

    fn nesting_depth(text: &str) -> usize {
        super::nesting_depth(text, &text.to_ascii_lowercase())
    }

    #[test]
    fn nesting_depth_counts_elements_that_need_an_end_tag() {
        assert_eq!(nesting_depth("<div><div><span>x</span></div></div>"), 3);
        // Unclosed paragraphs and list items, void and self-closed elements,
        // comments and a doctype do not add up.
        let page = format!(
            "<!DOCTYPE html><html><body><ul>{}</ul><!-- <div><div> -->{}</body></html>",
            "<li><p>item<br><img src=x><span/>".repeat(5_000),
            "<p>para".repeat(5_000)
        );
        assert_eq!(nesting_depth(&page), 1);
        assert_eq!(nesting_depth("<DIV><Div>x"), 2);
        assert_eq!(nesting_depth("text < not a tag, a <b"), 1);
        assert_eq!(nesting_depth("é.()<div>ü</div>"), 1);
    }

    #[test]
    fn a_page_deeper_than_the_bound_is_read_flat_with_its_text() {
        let deep = format!(
            "<html><head><title>T</title><script>var a = '<p>no</p>';</script></head><body>{}\
             <h2>Heading</h2><p>Fish &amp; chips &lt;3</p><!-- hidden --><div>next</div></body></html>",
            "<div>".repeat(MAX_DEPTH + 1)
        );
        let doc = load(deep.as_bytes(), Format::Html, &Limits::default()).unwrap();
        let text: Vec<&str> = doc.sections.iter().map(|s| s.text.as_str()).collect();
        let all = text.join("\n");
        assert!(all.contains("Fish & chips <3"), "{all}");
        assert!(all.contains("Heading") && all.contains("next"), "{all}");
        assert!(
            !all.contains("no") && !all.contains("hidden") && !all.contains("var a"),
            "{all}"
        );
        // At the bound it is still parsed, with sections.
        let shallow = format!(
            "{}<h2>Heading</h2><p>text</p>",
            "<div>".repeat(MAX_DEPTH - 1)
        );
        let doc = load(shallow.as_bytes(), Format::Html, &Limits::default()).unwrap();
        assert_eq!(doc.sections[0].headings, vec!["Heading".to_string()]);
    }

    #[test]
    fn text_only_with_sections() {
        let html = r#"<!doctype html><html><head><title>The  Guide</title>
<style>body { color: red }</style><script>var secret = "do not index";</script></head>
<body><nav>Home | About</nav><p>Intro <b>bold</b> text.</p>
<h1>Install</h1><p>Run <code>make</code>.</p><script>alert(1)</script>
<h2>From source</h2><ul><li>one</li><li>two</li></ul>
<noscript>enable js</noscript></body></html>"#;
        let doc = load(html.as_bytes(), Format::Html, &Limits::default()).unwrap();
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
        assert_eq!(doc.sections[1].text, "Run `make`.");
        assert_eq!(doc.sections[2].headings, vec!["Install", "From source"]);
        assert_eq!(doc.sections[2].text, "- one\n\n- two");
    }

    #[test]
    fn terms_tables_and_numbered_lists_keep_their_structure() {
        let html = r#"<html><body><h1>Commands</h1>
<dl><dt><code>promote</code></dt>
<dd>Copy the release running on staging
  to production.</dd>
<dt>status</dt><dd>Show a service's release.</dd></dl>
<table><tr><th>Option</th><th>Meaning</th></tr><tr><td><code>--env</code></td><td>The environment</td></tr></table>
<table><tr><td>a</td><td>b</td><td>c</td></tr></table>
<ol start="3"><li>Build the image.</li><li>Run <kbd>orbit deploy</kbd>.</li></ol>
<pre><code>orbit rollback api
</code></pre></body></html>"#;
        let doc = load(html.as_bytes(), Format::Html, &Limits::default()).unwrap();
        let text = &doc.sections[0].text;
        assert_eq!(
            text,
            "`promote`\n: Copy the release running on staging\nto production.\n\nstatus\n: Show a service's release.\n\nOption\n: Meaning\n\n`--env`\n: The environment\n\na | b | c\n\n3. Build the image.\n\n4. Run `orbit deploy`.\n\norbit rollback api"
        );
        let blocks = crate::text::blocks::blocks(text);
        let md: Vec<&str> = blocks.iter().map(|b| b.markdown.as_str()).collect();
        assert_eq!(
            md,
            [
                "`promote`: Copy the release running on staging to production.",
                "**status**: Show a service's release.",
                "**Option**: Meaning",
                "`--env`: The environment",
                "a | b | c",
                "3. Build the image.\n4. Run `orbit deploy`.",
                "orbit rollback api"
            ]
        );
    }
}
