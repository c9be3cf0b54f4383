//! The structure a loader keeps in a section's text, and reading it back
//! into blocks an answer can quote whole.
//!
//! Loaders write plain text with a few marks (`ingest::load` says which
//! loader writes which):
//! - a blank line ends a paragraph; a line break inside a paragraph is a
//!   real one (a list item, a table row, a term), while soft-wrapped lines
//!   of running text are read as one;
//! - `` `code` `` marks a command or an identifier as code;
//! - a term on its own line followed by a line starting with `: ` is a
//!   term and its description (a man page's `.TP`, an HTML `<dl>`, a
//!   two-column table, a reST field list):
//!   `promote` / `: Copy the release running on staging to production.`;
//! - `1. ` (or `1) `) starts an item of a numbered list, `- ` one of a
//!   bulleted list.
//!
//! [`blocks`] reads such text into sentences, terms with their
//! descriptions and numbered lists, in reading order; each block is shown
//! as Markdown ([`Block::markdown`]) and read without its marks
//! ([`Block::plain`], what is compared with a question). [`to_text`]
//! turns the Markdown back into plain text for a terminal.

use super::{sentences, word_count};

/// The mark that starts a description line (after its term's line).
pub const DESCRIPTION: &str = ": ";

/// A description longer than this many words is quoted a sentence at a
/// time (its first sentence with the term), not whole.
pub const MAX_DEFINITION_WORDS: usize = 60;

/// A numbered list longer than this many words, or with more than
/// [`MAX_LIST_ITEMS`] items, is quoted an item at a time.
pub const MAX_LIST_WORDS: usize = 150;

/// See [`MAX_LIST_WORDS`].
pub const MAX_LIST_ITEMS: usize = 12;

/// What a block is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// A sentence of running text (or one item of a long list).
    Sentence,
    /// A term and its description.
    Definition,
    /// A numbered list, with the line that leads into it.
    List,
}

/// One quotable piece of a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// What it is.
    pub kind: Kind,
    /// Its words without marks: what is compared with a question.
    pub plain: String,
    /// How an answer shows it (Markdown: code in backticks, the term in
    /// bold, a list one item a line).
    pub markdown: String,
    /// The paragraph it starts in, from 0.
    pub paragraph: usize,
}

/// One line of a paragraph, as its marks say.
#[derive(Debug, Clone, PartialEq)]
enum Line<'a> {
    Numbered(u32, &'a str),
    Bullet(&'a str),
    Description(&'a str),
    Text(&'a str),
}

fn classify(line: &str) -> Line<'_> {
    let t = line.trim();
    if let Some(rest) = t.strip_prefix(DESCRIPTION.trim_end())
        && (rest.starts_with(' ') || rest.is_empty())
    {
        return Line::Description(rest.trim());
    }
    for bullet in ["- ", "* ", "• "] {
        if let Some(rest) = t.strip_prefix(bullet) {
            return Line::Bullet(rest.trim());
        }
    }
    let digits = t.chars().take_while(char::is_ascii_digit).count();
    if (1..=3).contains(&digits) {
        let rest = &t[digits..];
        if let Some(item) = rest.strip_prefix(". ").or_else(|| rest.strip_prefix(") "))
            && let Ok(n) = t[..digits].parse()
        {
            return Line::Numbered(n, item.trim());
        }
    }
    Line::Text(t)
}

/// `text` without its Markdown marks: code backticks and bold or italic
/// asterisks dropped (list numbers and line breaks kept).
pub fn to_text(markdown: &str) -> String {
    let mut out = String::with_capacity(markdown.len());
    let mut chars = markdown.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '`' => {}
            '*' if chars.peek() == Some(&'*') => {
                chars.next();
            }
            _ => out.push(c),
        }
    }
    out
}

/// `text` without the marks loaders add for answers (code backticks, a
/// bulleted item's `- `, a description's `: `): what the embedding model
/// reads, so that the marks, which carry structure for an answer, do not
/// move a passage in the search.
pub fn unmarked(text: &str) -> String {
    text.split('\n')
        .map(|line| {
            let t = line.trim_start();
            let t = t
                .strip_prefix("- ")
                .or_else(|| t.strip_prefix(DESCRIPTION))
                .unwrap_or(line);
            t.replace('`', "")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The sentences of running text (soft-wrapped lines joined).
fn running(lines: &[&str]) -> Vec<String> {
    let joined = lines.join(" ");
    sentences(&joined)
}

/// Reads `text` into blocks, in reading order.
pub fn blocks(text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    // A numbered list still open.
    let mut list: Option<List> = None;
    for (paragraph, para) in text.split("\n\n").enumerate() {
        let lines: Vec<Line<'_>> = para
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(classify)
            .collect();
        let mut text_run: Vec<&str> = Vec::new();
        let mut i = 0;
        while i < lines.len() {
            match &lines[i] {
                Line::Numbered(n, item) => {
                    // The running text before it; its last sentence leads
                    // into the list when it ends with a colon.
                    let mut lead = None;
                    if !text_run.is_empty() {
                        let mut ss = running(&text_run);
                        text_run.clear();
                        if ss.last().is_some_and(|s| s.ends_with(':')) {
                            lead = ss.pop();
                        }
                        push_sentences(&mut out, ss, paragraph);
                    }
                    match &mut list {
                        Some(open) if lead.is_none() => open.items.push((*n, item.to_string())),
                        _ => {
                            flush_list(&mut out, list.take());
                            list = Some(List {
                                paragraph,
                                lead,
                                items: vec![(*n, item.to_string())],
                            });
                        }
                    }
                    i += 1;
                    continue;
                }
                _ => flush_list(&mut out, list.take()),
            }
            match &lines[i] {
                Line::Text(t)
                    if matches!(lines.get(i + 1), Some(Line::Description(_))) && !t.is_empty() =>
                {
                    push_sentences(&mut out, running(&text_run), paragraph);
                    text_run.clear();
                    // The description's lines, and the soft-wrapped lines
                    // that continue it (up to the next term).
                    let mut descriptions = Vec::new();
                    let mut j = i + 1;
                    loop {
                        match lines.get(j) {
                            Some(Line::Description(d)) => descriptions.push(*d),
                            Some(Line::Text(t))
                                if !matches!(lines.get(j + 1), Some(Line::Description(_))) =>
                            {
                                descriptions.push(*t)
                            }
                            _ => break,
                        }
                        j += 1;
                    }
                    push_definition(&mut out, t, &descriptions.join(" "), paragraph);
                    i = j;
                }
                Line::Text(t) => {
                    text_run.push(t);
                    i += 1;
                }
                Line::Description(d) => {
                    // A description without its term: running text.
                    text_run.push(d);
                    i += 1;
                }
                Line::Bullet(item) => {
                    push_sentences(&mut out, running(&text_run), paragraph);
                    text_run.clear();
                    push_sentences(&mut out, sentences(item), paragraph);
                    i += 1;
                }
                Line::Numbered(..) => unreachable!("handled above"),
            }
        }
        push_sentences(&mut out, running(&text_run), paragraph);
    }
    flush_list(&mut out, list);
    out
}

fn sentence(text: &str, paragraph: usize) -> Block {
    Block {
        kind: Kind::Sentence,
        plain: to_text(text),
        markdown: text.to_string(),
        paragraph,
    }
}

fn push_sentences(out: &mut Vec<Block>, sentences: Vec<String>, paragraph: usize) {
    out.extend(sentences.iter().map(|s| sentence(s, paragraph)));
}

/// A term and its description: whole when short, else its first sentence
/// with the term and the rest a sentence at a time.
fn push_definition(out: &mut Vec<Block>, term: &str, description: &str, paragraph: usize) {
    let mut rest = sentences(description);
    let first = if word_count(description) <= MAX_DEFINITION_WORDS || rest.is_empty() {
        rest.clear();
        description.to_string()
    } else {
        rest.remove(0)
    };
    let term_md = if term.contains('`') || term.contains("**") {
        term.to_string()
    } else {
        format!("**{term}**")
    };
    out.push(Block {
        kind: Kind::Definition,
        plain: format!("{}: {}", to_text(term), to_text(&first)),
        markdown: format!("{term_md}: {first}"),
        paragraph,
    });
    push_sentences(out, rest, paragraph);
}

/// A numbered list being read: where it starts, the line leading into it,
/// its items with their numbers.
struct List {
    paragraph: usize,
    lead: Option<String>,
    items: Vec<(u32, String)>,
}

/// A numbered list: whole when short, else an item at a time.
fn flush_list(out: &mut Vec<Block>, list: Option<List>) {
    let Some(List {
        paragraph,
        lead,
        items,
    }) = list
    else {
        return;
    };
    let words: usize = items.iter().map(|(_, i)| word_count(i)).sum::<usize>()
        + lead.as_deref().map_or(0, word_count);
    if items.len() > MAX_LIST_ITEMS || words > MAX_LIST_WORDS {
        if let Some(lead) = lead {
            out.push(sentence(&lead, paragraph));
        }
        for (_, item) in &items {
            push_sentences(out, sentences(item), paragraph);
        }
        return;
    }
    let mut markdown = lead.clone().map(|l| l + "\n").unwrap_or_default();
    let mut plain = lead.map(|l| to_text(&l) + " ").unwrap_or_default();
    for (n, item) in &items {
        markdown.push_str(&format!("{n}. {item}\n"));
        plain.push_str(&to_text(item));
        plain.push(' ');
    }
    out.push(Block {
        kind: Kind::List,
        plain: plain.trim_end().to_string(),
        markdown: markdown.trim_end().to_string(),
        paragraph,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn md(text: &str) -> Vec<String> {
        blocks(text).into_iter().map(|b| b.markdown).collect()
    }

    #[test]
    fn running_text_is_read_a_sentence_at_a_time_across_soft_wraps() {
        let text = "To return to the previous release immediately, run\n`orbit rollback api --env production`. Orbit keeps\nthe last 10 releases.";
        let b = blocks(text);
        assert_eq!(
            md(text),
            [
                "To return to the previous release immediately, run `orbit rollback api --env production`.",
                "Orbit keeps the last 10 releases."
            ]
        );
        assert_eq!(
            b[0].plain,
            "To return to the previous release immediately, run orbit rollback api --env production."
        );
        assert!(
            b.iter()
                .all(|b| b.kind == Kind::Sentence && b.paragraph == 0)
        );
    }

    #[test]
    fn a_term_keeps_its_description() {
        let text = "Commands:\n\ndeploy\n: Start a new release.\npromote\n: Copy the release running on staging to production, with the same image.\n\n`--env` name\n: The environment.";
        let b = blocks(text);
        assert_eq!(
            md(text),
            [
                "Commands:",
                "**deploy**: Start a new release.",
                "**promote**: Copy the release running on staging to production, with the same image.",
                "`--env` name: The environment."
            ]
        );
        assert_eq!(b[2].kind, Kind::Definition);
        assert_eq!(
            b[2].plain,
            "promote: Copy the release running on staging to production, with the same image."
        );
        assert_eq!(b[3].plain, "--env name: The environment.");
        // A description wrapped over lines, then the next term.
        assert_eq!(
            md("a\n: first half\nsecond half.\nb\n: other."),
            ["**a**: first half second half.", "**b**: other."]
        );
        // A long description: the term with its first sentence, then the rest.
        let long = format!(
            "term\n: First sentence here. {}",
            "More words follow. ".repeat(20)
        );
        let b = blocks(&long);
        assert_eq!(b[0].markdown, "**term**: First sentence here.");
        assert_eq!(b.len(), 21);
    }

    #[test]
    fn a_numbered_procedure_stays_one_list_with_its_lead() {
        let text = "To deploy a release:\n1. Build the image.\n2. Run `orbit deploy`.\n\n3. Watch the rollout.\n\nDone.";
        let b = blocks(text);
        assert_eq!(b.len(), 2, "{b:?}");
        assert_eq!(b[0].kind, Kind::List);
        assert_eq!(
            b[0].markdown,
            "To deploy a release:\n1. Build the image.\n2. Run `orbit deploy`.\n3. Watch the rollout."
        );
        assert_eq!(
            b[0].plain,
            "To deploy a release: Build the image. Run orbit deploy. Watch the rollout."
        );
        assert_eq!(b[1].markdown, "Done.");
        // Too long a list is quoted an item at a time.
        let items: String = (1..=15)
            .map(|n| format!("{n}. Step number {n}.\n"))
            .collect();
        assert_eq!(blocks(&items).len(), 15);
        assert!(blocks(&items).iter().all(|b| b.kind == Kind::Sentence));
    }

    #[test]
    fn bullets_and_stray_marks_are_sentences() {
        let text = "- First point. Second.\n- Third\n: orphan description\n2024) not a list";
        assert_eq!(
            md(text),
            [
                "First point.",
                "Second.",
                "Third",
                "orphan description 2024) not a list"
            ]
        );
    }

    #[test]
    fn hostile_structure_is_read_in_one_pass() {
        // Marks by the hundred thousand, in every order: lists too long to
        // quote whole, descriptions without terms, terms without end.
        let mut text = String::new();
        for n in 0..50_000 {
            text.push_str(&format!(
                "{}. step\n: orphan\nterm {n}\n: description\n- item\n",
                n % 999 + 1
            ));
        }
        let b = blocks(&text);
        assert!(b.len() >= 100_000, "{}", b.len());
        assert!(b.iter().all(|b| b.markdown.len() < 200));
        let one_list: String = (1..=100_000).map(|n| format!("{n}. x y z\n")).collect();
        assert!(blocks(&one_list).iter().all(|b| b.kind == Kind::Sentence));
    }

    #[test]
    fn the_search_reads_the_text_without_its_marks() {
        assert_eq!(
            unmarked("promote\n: Copy it with `orbit promote`.\n- one\n1. two\n\nA - B"),
            "promote\nCopy it with orbit promote.\none\n1. two\n\nA - B"
        );
    }

    #[test]
    fn markdown_back_to_text() {
        assert_eq!(
            to_text("**promote**: run `orbit promote`.\n1. a"),
            "promote: run orbit promote.\n1. a"
        );
        assert_eq!(to_text("2 * 3 and a*b"), "2 * 3 and a*b");
    }
}
