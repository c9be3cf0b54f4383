//! Running headers and footers: a chapter title or a page number printed
//! at the top or bottom of every page is not part of the text under it
//! ("Chapter 4: Function reference 20" before a function's description).
//! A line among a page's first or last [`EDGE_LINES`] is one when the same
//! line, its numbers aside, stands at the edge of at least
//! [`MIN_PAGES`] pages and a [`MIN_SHARE`] of them.

use std::collections::HashMap;

/// Lines at each edge of a page that may be running.
const EDGE_LINES: usize = 2;

/// A running line repeats on at least this many pages.
const MIN_PAGES: usize = 3;

/// ... and on at least this share of the pages.
const MIN_SHARE: f64 = 0.2;

/// A line with its numbers (page, chapter) made one shape: `Chapter 4:
/// Function reference 20` and `Chapter 4: Function reference 21` agree.
fn shape(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut in_number = false;
    for c in line.trim().chars() {
        if c.is_ascii_digit() {
            if !in_number {
                out.push('#');
            }
            in_number = true;
        } else {
            in_number = false;
            out.extend(c.to_lowercase());
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The indices of a page's non-blank lines at its edges.
fn edges(lines: &[&str]) -> Vec<usize> {
    let filled: Vec<usize> = (0..lines.len())
        .filter(|&i| !lines[i].trim().is_empty())
        .collect();
    let mut out: Vec<usize> = filled.iter().take(EDGE_LINES).copied().collect();
    out.extend(filled.iter().rev().take(EDGE_LINES).copied());
    out.sort_unstable();
    out.dedup();
    out
}

/// Each page's text without its running header and footer lines.
pub(super) fn without_running_lines(pages: &[String]) -> Vec<String> {
    let split: Vec<Vec<&str>> = pages.iter().map(|p| p.lines().collect()).collect();
    let mut counts: HashMap<String, usize> = HashMap::new();
    for lines in &split {
        let mut seen: Vec<String> = edges(lines).iter().map(|&i| shape(lines[i])).collect();
        seen.sort();
        seen.dedup();
        for s in seen {
            *counts.entry(s).or_default() += 1;
        }
    }
    let needed = MIN_PAGES.max((MIN_SHARE * pages.len() as f64).ceil() as usize);
    let running = |line: &str| counts.get(&shape(line)).is_some_and(|&n| n >= needed);
    split
        .iter()
        .map(|lines| {
            let edge = edges(lines);
            lines
                .iter()
                .enumerate()
                .filter(|(i, l)| !(edge.contains(i) && running(l)))
                .map(|(_, l)| *l)
                .collect::<Vec<_>>()
                .join("\n")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_repeated_at_the_edge_of_pages_is_dropped() {
        let words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"];
        let pages: Vec<String> = words
            .iter()
            .enumerate()
            .map(|(n, w)| {
                format!(
                    "Chapter 4: Function reference {}\nasn1_der_{w}\nReturns: a code.\nThe {w} function ends.\n{}",
                    20 + n,
                    20 + n
                )
            })
            .collect();
        let kept = without_running_lines(&pages);
        assert_eq!(
            kept[0],
            "asn1_der_alpha\nReturns: a code.\nThe alpha function ends."
        );
        // A sentence repeated in the middle of pages is text, not a header;
        // lines seen on too few pages stay.
        assert!(kept.iter().all(|p| p.contains("Returns: a code.")));
        let two = vec!["Title\nbody one".to_string(), "Title\nbody two".to_string()];
        assert_eq!(without_running_lines(&two), two);
        assert!(without_running_lines(&[]).is_empty());
    }
}
