//! Cutting each page's text into sections where its headings start.

use super::Mark;
use crate::ingest::load::Section;

/// One section per page and heading: each page's text is cut where a
/// heading that starts on it is found (by its words); a heading not found
/// in the text starts where the previous one ended.
pub(super) fn sections(texts: &[String], marks: &[Mark]) -> Vec<Section> {
    let mut out = Vec::new();
    let mut path: Vec<(usize, String)> = Vec::new();
    let mut marks = marks.iter().peekable();
    for (page, text) in texts.iter().enumerate() {
        let words = word_spans(text);
        let mut cursor = 0; // a word index
        let mut start = 0; // a byte offset into `text`
        while let Some(mark) = marks.next_if(|m| m.page <= page) {
            let title: Vec<&str> = mark.title.split_whitespace().collect();
            let found = find_words(text, &words, cursor, &title);
            let (cut, resume) = match found {
                Some(at) => (words[at].0, at + title.len()),
                None => (words.get(cursor).map_or(text.len(), |w| w.0), cursor),
            };
            push(&mut out, &path, &text[start..cut], page);
            while path.last().is_some_and(|(l, _)| *l >= mark.level) {
                path.pop();
            }
            path.push((mark.level, mark.title.clone()));
            cursor = resume;
            start = words.get(resume).map_or(text.len(), |w| w.0);
        }
        push(&mut out, &path, &text[start..], page);
    }
    out
}

fn push(out: &mut Vec<Section>, path: &[(usize, String)], text: &str, page: usize) {
    if !text.trim().is_empty() {
        out.push(Section {
            headings: path.iter().map(|(_, t)| t.clone()).collect(),
            text: text.to_string(),
            page: u32::try_from(page + 1).ok(),
        });
    }
}

/// The byte ranges of the whitespace-separated words of `text`.
pub(super) fn word_spans(text: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices() {
        match (c.is_whitespace(), start) {
            (true, Some(s)) => {
                spans.push((s, i));
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    if let Some(s) = start {
        spans.push((s, text.len()));
    }
    spans
}

/// The index of the first word, from `from`, where `title`'s words follow
/// one another in `text`.
pub(super) fn find_words(
    text: &str,
    words: &[(usize, usize)],
    from: usize,
    title: &[&str],
) -> Option<usize> {
    if title.is_empty() || words.len() < title.len() {
        return None;
    }
    (from..=words.len() - title.len()).find(|&i| {
        title
            .iter()
            .zip(&words[i..])
            .all(|(t, (s, e))| text[*s..*e] == **t)
    })
}
