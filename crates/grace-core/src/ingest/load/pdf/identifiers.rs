//! Identifiers as printed. TeX draws `_` outside its typewriter fonts as a
//! rule, not a glyph, so a manual's headings and prototypes lose their
//! underscores to text extraction: the heading `asn1_der_decoding` reads
//! `asn1 der decoding` while the same name in the body's code keeps them.
//! Where a document spells an identifier with underscores somewhere, its
//! spaced form is put back together wherever else it appears, when the
//! form cannot be ordinary words: three parts or more, or a part with a
//! digit (`asn1 node`); `is valid` is left as it is.

use std::collections::HashSet;

/// Parts an identifier may have to be restored (longer ones are rare and
/// cost a wider window on every word).
const MAX_PARTS: usize = 8;

/// Longest identifier taken, in bytes.
const MAX_LEN: usize = 64;

fn is_part(c: char) -> bool {
    c.is_alphanumeric()
}

/// The underscored identifiers `text` spells that may be restored.
fn underscored(text: &str) -> HashSet<String> {
    let mut out = HashSet::new();
    for token in text.split(|c: char| !(is_part(c) || c == '_')) {
        let token = token.trim_matches('_');
        if token.len() > MAX_LEN || !token.contains('_') {
            continue;
        }
        let parts: Vec<&str> = token.split('_').collect();
        if parts.len() > MAX_PARTS || parts.iter().any(|p| p.is_empty()) {
            continue;
        }
        if parts.len() >= 3 || parts.iter().any(|p| p.chars().any(|c| c.is_ascii_digit())) {
            out.insert(token.to_string());
        }
    }
    out
}

/// The underscored identifiers `pages` spell that may be restored.
pub(super) fn known(pages: &[String]) -> HashSet<String> {
    pages.iter().flat_map(|p| underscored(p)).collect()
}

/// `text` with the spaced forms of `known` identifiers joined again (see
/// the module's documentation).
pub(super) fn restore(text: &str, known: &HashSet<String>) -> String {
    if known.is_empty() {
        return text.to_string();
    }
    text.lines()
        .map(|line| restore_line(line, known))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
fn restore_underscores(pages: &[String]) -> Vec<String> {
    let known = known(pages);
    pages.iter().map(|p| restore(p, &known)).collect()
}

fn restore_line(line: &str, known: &HashSet<String>) -> String {
    let words: Vec<&str> = line.split(' ').collect();
    let mut out: Vec<String> = Vec::with_capacity(words.len());
    let mut i = 0;
    while i < words.len() {
        let mut joined = None;
        for k in (2..=MAX_PARTS.min(words.len() - i)).rev() {
            let window = &words[i..i + k];
            // Punctuation may open the first word and close the last.
            let first = window[0].trim_start_matches(|c: char| !is_part(c));
            let last = window[k - 1].trim_end_matches(|c: char| !is_part(c));
            let inner_ok = window[1..k - 1]
                .iter()
                .all(|w| !w.is_empty() && w.chars().all(is_part));
            if first.is_empty() || last.is_empty() || !inner_ok || !first.chars().all(is_part) {
                continue;
            }
            if !last.chars().all(is_part) {
                continue;
            }
            let mut candidate = first.to_string();
            for w in &window[1..k - 1] {
                candidate.push('_');
                candidate.push_str(w);
            }
            candidate.push('_');
            candidate.push_str(last);
            if known.contains(&candidate) {
                let lead = &window[0][..window[0].len() - first.len()];
                let tail = &window[k - 1][last.len()..];
                joined = Some((k, format!("{lead}{candidate}{tail}")));
                break;
            }
        }
        match joined {
            Some((k, word)) => {
                out.push(word);
                i += k;
            }
            None => {
                out.push(words[i].to_string());
                i += 1;
            }
        }
    }
    out.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spaced_identifiers_the_document_spells_are_joined() {
        let pages = vec![
            "asn1 der decoding\nReturns: ASN1_SUCCESS if OK.".to_string(),
            "int asn1_der_decoding (asn1 node * element, int ider_len)\nis valid when is_valid says so.\nSee (asn1 der decoding)."
                .to_string(),
            "Uses asn1_node values.".to_string(),
        ];
        let out = restore_underscores(&pages);
        assert_eq!(out[0], "asn1_der_decoding\nReturns: ASN1_SUCCESS if OK.");
        // Two plain words stay words, even when the document names
        // `is_valid` or `ider_len`.
        assert_eq!(
            out[1],
            "int asn1_der_decoding (asn1_node * element, int ider_len)\nis valid when is_valid says so.\nSee (asn1_der_decoding)."
        );
        // Nothing to restore: the text is unchanged.
        let plain = vec!["no identifiers here".to_string()];
        assert_eq!(restore_underscores(&plain), plain);
    }

    #[test]
    fn hostile_text_stays_in_bounds() {
        let long = format!("{} {}", "a_".repeat(10_000), "é ".repeat(10_000));
        let out = restore_underscores(std::slice::from_ref(&long));
        assert_eq!(out[0].len(), long.len());
        let many = "x1_y z ".repeat(5_000) + &"x1 y ".repeat(5_000);
        assert!(restore_underscores(&[many])[0].contains("x1_y x1_y"));
    }
}
