//! Headings from font sizes, for a PDF without an outline: lines set in a
//! clearly larger font than the body text.

use pdf_oxide::PdfDocument;

use super::{MAX_LEVEL, MAX_OUTLINE, Mark};

/// Longest line taken as a heading by its font size.
const MAX_HEADING_CHARS: usize = 120;

/// Pages sampled to find the body text's font size.
const FONT_SAMPLE_PAGES: usize = 30;

/// Headings by font size: runs of text in a font clearly larger than the
/// body's (the size that sets the most characters), short enough to be a
/// title. The largest such size is level 1.
pub(super) fn font_marks(doc: &PdfDocument, pages: usize) -> Vec<Mark> {
    let mut spans_by_page = Vec::with_capacity(pages);
    for page in 0..pages {
        spans_by_page.push(doc.extract_spans(page).unwrap_or_default());
    }
    // Font sizes in tenths of a point, weighted by characters.
    let mut weight: std::collections::HashMap<i64, usize> = Default::default();
    for spans in spans_by_page.iter().take(FONT_SAMPLE_PAGES) {
        for s in spans {
            *weight.entry(tenths(s.font_size)).or_default() += s.text.chars().count();
        }
    }
    let Some(body) = weight
        .iter()
        .max_by_key(|(size, n)| (**n, -**size))
        .map(|(s, _)| *s)
    else {
        return Vec::new();
    };
    let is_heading = |size: i64, text: &str| {
        size * 10 >= body * 12
            && (2..=MAX_HEADING_CHARS).contains(&text.chars().count())
            && text.chars().any(char::is_alphabetic)
    };
    let mut candidates = Vec::new();
    for (page, spans) in spans_by_page.iter().enumerate() {
        // Neighbouring spans of one size on one line are one heading.
        let mut current: Option<(i64, f32, String)> = None;
        for s in spans {
            let size = tenths(s.font_size);
            match &mut current {
                Some((sz, y, text)) if *sz == size && (s.bbox.y - *y).abs() < 1.0 => {
                    text.push(' ');
                    text.push_str(s.text.trim());
                }
                _ => {
                    if let Some((sz, _, text)) = current.take() {
                        candidates.push((page, sz, text));
                    }
                    current = Some((size, s.bbox.y, s.text.trim().to_string()));
                }
            }
        }
        if let Some((sz, _, text)) = current {
            candidates.push((page, sz, text));
        }
    }
    candidates.retain(|(_, size, text)| is_heading(*size, text));
    let mut sizes: Vec<i64> = candidates.iter().map(|(_, s, _)| *s).collect();
    sizes.sort_unstable_by(|a, b| b.cmp(a));
    sizes.dedup();
    candidates
        .into_iter()
        .take(MAX_OUTLINE)
        .map(|(page, size, text)| Mark {
            page,
            level: (sizes.iter().position(|s| *s == size).unwrap_or(0) + 1).min(MAX_LEVEL),
            title: text.split_whitespace().collect::<Vec<_>>().join(" "),
        })
        .collect()
}

fn tenths(size: f32) -> i64 {
    if size.is_finite() {
        (size.clamp(0.0, 10_000.0) * 10.0).round() as i64
    } else {
        0
    }
}
