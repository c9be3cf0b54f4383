//! reStructuredText. Section titles are a line underlined (optionally also
//! overlined) with one repeated punctuation character; as in docutils, a
//! title's level is the order in which its adornment style first appears.
//! Directive and target lines (`.. note::`, `.. _label:`) are dropped, their
//! indented content kept; inline markup is reduced to its text.

use super::{Document, SectionBuilder};
use crate::text::blocks::DESCRIPTION;
use crate::text::word_count;

/// An inline literal of at most this many words is a code span.
const MAX_CODE_WORDS: usize = 8;

const ADORNMENT: &str = "=-`:'\"~^_*+#<>.";

pub(super) fn load(text: &str) -> Document {
    let lines: Vec<&str> = text.lines().collect();
    let mut styles: Vec<(char, bool)> = Vec::new();
    let mut builder = SectionBuilder::default();
    let mut i = 0;
    while i < lines.len() {
        // Overlined title: adornment, title, same adornment.
        if let Some(c) = adornment(lines[i]) {
            if i + 2 < lines.len()
                && adornment(lines[i + 2]) == Some(c)
                && !lines[i + 1].trim().is_empty()
                && lines[i + 2].trim().len() >= lines[i + 1].trim().chars().count()
            {
                let level = level_of(&mut styles, (c, true));
                builder.heading(level, &inline(lines[i + 1].trim()));
                i += 3;
                continue;
            }
            // A lone adornment line (a transition) carries no text.
            if lines[i].trim().len() >= 4 {
                builder.paragraph_break();
                i += 1;
                continue;
            }
        }
        // Underlined title: text, then an adornment at least as long.
        let line = lines[i];
        if !line.trim().is_empty()
            && !line.starts_with(char::is_whitespace)
            && i + 1 < lines.len()
            && let Some(c) = adornment(lines[i + 1])
            && lines[i + 1].trim().chars().count() >= line.trim().chars().count()
        {
            let level = level_of(&mut styles, (c, false));
            builder.heading(level, &inline(line.trim()));
            i += 2;
            continue;
        }
        let trimmed = line.trim_start();
        if let Some(rest) = trimmed.strip_prefix("..")
            && (rest.is_empty() || rest.starts_with(' '))
        {
            // directive, comment, target or footnote marker line
            builder.paragraph_break();
            i += 1;
            continue;
        }
        if trimmed.is_empty() {
            builder.paragraph_break();
        } else if let Some((name, body)) = field(trimmed) {
            // A field list item: the field's name and its body.
            builder.line_break();
            builder.push_text(&inline(name));
            builder.push_text("\n");
            builder.push_text(DESCRIPTION);
            builder.push_text(&inline(body));
            builder.push_text("\n");
        } else if is_term(&lines, i) {
            // A definition list item: the term, its indented definition next.
            builder.line_break();
            builder.push_text(&inline(trimmed));
            builder.push_text("\n");
            builder.push_text(DESCRIPTION);
        } else {
            let mut t = inline(trimmed);
            if let Some(stripped) = t.strip_suffix("::") {
                t = format!("{}:", stripped.trim_end());
            }
            if t != ":" {
                builder.push_text(&t);
                builder.push_text("\n");
            }
        }
        i += 1;
    }
    builder.finish(None)
}

/// A field list item (`:Version: 1.2`, `:param path: the file`): its name
/// and body. A role (`` :ref:`x` ``) is not one.
fn field(line: &str) -> Option<(&str, &str)> {
    let rest = line.strip_prefix(':')?;
    let end = rest.find(':')?;
    let (name, body) = (&rest[..end], &rest[end + 1..]);
    (!name.trim().is_empty()
        && !name.contains('`')
        && (body.is_empty() || body.starts_with(' '))
        && !body.trim().is_empty())
    .then_some((name.trim(), body.trim()))
}

/// Whether line `i` is a definition list's term: short, not indented, the
/// line after it indented text, and it does not close a paragraph.
fn is_term(lines: &[&str], i: usize) -> bool {
    let line = lines[i];
    let next = lines.get(i + 1).copied().unwrap_or("");
    let starts_paragraph = i == 0 || lines[i - 1].trim().is_empty();
    starts_paragraph
        && !line.starts_with(char::is_whitespace)
        && next.starts_with(char::is_whitespace)
        && !next.trim().is_empty()
        && !line.trim_end().ends_with(['.', ':', ','])
        && word_count(line) <= 8
}

/// The character of an adornment line (one punctuation character repeated,
/// at least twice), if `line` is one.
fn adornment(line: &str) -> Option<char> {
    let t = line.trim_end();
    let mut chars = t.chars();
    let c = chars.next()?;
    (ADORNMENT.contains(c) && t.chars().count() >= 2 && chars.all(|x| x == c)).then_some(c)
}

fn level_of(styles: &mut Vec<(char, bool)>, style: (char, bool)) -> usize {
    match styles.iter().position(|s| *s == style) {
        Some(p) => p + 1,
        None => {
            styles.push(style);
            styles.len()
        }
    }
}

/// Reduces inline markup to text: ``code``, *emphasis*, **strong**,
/// :role:`text`, `link text <url>`_ and `reference`_.
fn inline(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(start) = rest.find('`') {
        let (before, after) = rest.split_at(start);
        out.push_str(&strip_role(before));
        let double = after.starts_with("``");
        let open = if double { 2 } else { 1 };
        let body_and_more = &after[open..];
        let close = if double {
            body_and_more.find("``")
        } else {
            body_and_more.find('`')
        };
        match close {
            Some(end) => {
                let mut body = &body_and_more[..end];
                if !double
                    && body.ends_with('>')
                    && let Some(lt) = body.rfind(" <")
                {
                    body = &body[..lt];
                }
                // An inline literal (``make install``) stays code.
                if double && !body.trim().is_empty() && word_count(body) <= MAX_CODE_WORDS {
                    out.push('`');
                    out.push_str(body.trim());
                    out.push('`');
                } else {
                    out.push_str(body);
                }
                rest = &body_and_more[end + open..];
                rest = rest.trim_start_matches('_');
            }
            None => {
                out.push_str(after);
                rest = "";
            }
        }
    }
    out.push_str(&strip_role(rest));
    out.replace("**", "").replace(" *", " ").replace("* ", " ")
}

/// Drops a trailing `:role:` prefix that precedes a backquoted text.
fn strip_role(s: &str) -> String {
    if let Some(body) = s.strip_suffix(':')
        && let Some(colon) = body.rfind(':')
    {
        let role = &body[colon + 1..];
        if !role.is_empty()
            && role
                .chars()
                .all(|c| c.is_alphanumeric() || c == '-' || c == ':')
        {
            return body[..colon].to_string();
        }
    }
    s.to_string()
}

#[cfg(test)]
mod tests {
    use super::super::{Format, Limits, load as load_bytes, outline};
    use super::inline;

    #[test]
    fn adornment_styles_give_levels() {
        let rst = "=====\nGuide\n=====\n\nIntro.\n\nInstall\n=======\n\nRun ``make``.\n\nFrom source\n-----------\n\n.. note::\n\n   Needs a compiler.\n\nUsage\n=====\n\nSee :ref:`usage-label` and `Docs <http://x>`_.\n";
        let doc = load_bytes(rst.as_bytes(), Format::ReStructuredText, &Limits::default()).unwrap();
        let got = outline(&doc);
        assert_eq!(
            got,
            vec![
                (vec!["Guide"], "Intro."),
                (vec!["Guide", "Install"], "Run `make`."),
                (vec!["Guide", "Install", "From source"], "Needs a compiler."),
                (vec!["Guide", "Usage"], "See usage-label and Docs."),
            ]
        );
    }

    #[test]
    fn literal_block_marker_and_short_lines() {
        let doc = load_bytes(
            b"Example::\n\n    code here\n\nA\n\n",
            Format::ReStructuredText,
            &Limits::default(),
        )
        .unwrap();
        assert_eq!(doc.sections[0].text, "Example:\n\ncode here\n\nA");
    }

    #[test]
    fn field_and_definition_lists_are_terms() {
        let doc = load_bytes(
            b":Version: 4.2\n:Author: the platform team\n\nrollback\n    Return to the previous\n    release.\n\nA paragraph\nthat goes on.\n",
            Format::ReStructuredText,
            &Limits::default(),
        )
        .unwrap();
        assert_eq!(
            doc.sections[0].text,
            "Version\n: 4.2\nAuthor\n: the platform team\n\nrollback\n: Return to the previous\nrelease.\n\nA paragraph\nthat goes on."
        );
        let blocks = crate::text::blocks::blocks(&doc.sections[0].text);
        assert_eq!(
            blocks[2].markdown,
            "**rollback**: Return to the previous release."
        );
    }

    #[test]
    fn inline_markup() {
        assert_eq!(
            inline("use **bold** and *it* with ``x = 1``"),
            "use bold and it with `x = 1`"
        );
        assert_eq!(inline(":command:`apt-get` now"), "apt-get now");
    }
}
