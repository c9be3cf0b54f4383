//! Chunking: sections → chunks of about `chunk_size` words.
//!
//! A chunk never crosses a section, so it belongs to one heading path. Inside
//! a section, sentences are packed greedily; a sentence longer than a chunk
//! is cut at word boundaries. Each chunk after the first of a section starts
//! with the last sentences (at most `overlap` words) of the one before, so a
//! fact that straddles a boundary is whole in at least one chunk.

use super::load::Section;

/// One piece of a document, ready to embed.
#[derive(Debug, Clone, PartialEq)]
pub struct Chunk {
    /// Heading path joined with ` > ` (empty before the first heading).
    pub section: String,
    /// The chunk's own text.
    pub text: String,
}

impl Chunk {
    /// The text given to the embedder: the heading path as context, then the
    /// chunk text.
    pub fn embedding_text(&self, title: Option<&str>) -> String {
        let mut context: Vec<&str> = Vec::new();
        if let Some(t) = title {
            context.push(t);
        }
        if !self.section.is_empty() {
            context.push(&self.section);
        }
        if context.is_empty() {
            self.text.clone()
        } else {
            format!("{}\n{}", context.join(" > "), self.text)
        }
    }
}

/// Chunking parameters, in words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkParams {
    /// Target chunk length in words (`ingest.chunk_size`; at least 1 is used).
    pub size: usize,
    /// Words repeated from the end of one chunk at the start of the next
    /// (`ingest.chunk_overlap`; at most half of `size` is used).
    pub overlap: usize,
}

/// Splits sections into chunks.
pub fn chunk_sections(sections: &[Section], params: ChunkParams) -> Vec<Chunk> {
    let mut out = Vec::new();
    for s in sections {
        let section = s.headings.join(" > ");
        for text in chunk_text(&s.text, params) {
            out.push(Chunk {
                section: section.clone(),
                text,
            });
        }
    }
    out
}

/// Splits one section's text into chunk texts.
pub fn chunk_text(text: &str, params: ChunkParams) -> Vec<String> {
    let size = params.size.max(1);
    let overlap = params.overlap.min(size / 2);
    let units = units(text, size);
    let mut chunks = Vec::new();
    let mut current: Vec<&Unit> = Vec::new();
    let mut words = 0;
    // Units in `current` that came from the previous chunk's overlap.
    let mut carried = 0;
    for unit in &units {
        if words + unit.words > size && current.len() > carried {
            chunks.push(join(&current));
            let mut tail = overlap_tail(&current, overlap);
            words = tail.iter().map(|u| u.words).sum();
            // The overlap must leave room for the unit that starts the chunk.
            while !tail.is_empty() && words + unit.words > size {
                words -= tail.remove(0).words;
            }
            carried = tail.len();
            current = tail;
        }
        current.push(unit);
        words += unit.words;
    }
    if current.len() > carried {
        chunks.push(join(&current));
    }
    chunks
}

/// A sentence (or a piece of an over-long sentence) and whether a paragraph
/// ends after it.
#[derive(Debug)]
struct Unit {
    text: String,
    words: usize,
    paragraph_end: bool,
}

/// A "word" longer than this many characters (a run without spaces: a
/// base64 blob, a minified line) is cut into pieces of this length, each
/// counted as a word; so a chunk holds at most `size` × this many
/// characters, whatever the file.
pub const MAX_WORD_CHARS: usize = 200;

/// `word` in pieces of at most [`MAX_WORD_CHARS`] characters, cut at char
/// boundaries.
fn word_pieces(word: &str) -> impl Iterator<Item = &str> {
    let mut rest = word;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let cut = rest
            .char_indices()
            .nth(MAX_WORD_CHARS)
            .map_or(rest.len(), |(i, _)| i);
        let (piece, tail) = rest.split_at(cut);
        rest = tail;
        Some(piece)
    })
}

fn units(text: &str, max_words: usize) -> Vec<Unit> {
    let mut out = Vec::new();
    for paragraph in text.split("\n\n") {
        let sentences = sentences(paragraph);
        let n = sentences.len();
        for (i, sentence) in sentences.into_iter().enumerate() {
            let words: Vec<&str> = sentence.split_whitespace().flat_map(word_pieces).collect();
            let pieces: Vec<&[&str]> = words.chunks(max_words).collect();
            let last_piece = pieces.len().saturating_sub(1);
            for (j, piece) in pieces.into_iter().enumerate() {
                out.push(Unit {
                    text: piece.join(" "),
                    words: piece.len(),
                    paragraph_end: i + 1 == n && j == last_piece,
                });
            }
        }
    }
    out
}

pub use crate::text::sentences;

/// The trailing units of `chunk` totalling at most `overlap` words (never
/// the whole chunk, so every chunk adds new text).
fn overlap_tail<'a>(chunk: &[&'a Unit], overlap: usize) -> Vec<&'a Unit> {
    let mut tail = Vec::new();
    let mut words = 0;
    for unit in chunk.iter().rev() {
        if words + unit.words > overlap || tail.len() + 1 >= chunk.len() {
            break;
        }
        words += unit.words;
        tail.push(*unit);
    }
    tail.reverse();
    tail
}

fn join(units: &[&Unit]) -> String {
    let mut out = String::new();
    for (i, u) in units.iter().enumerate() {
        if i > 0 {
            out.push_str(if units[i - 1].paragraph_end {
                "\n\n"
            } else {
                " "
            });
        }
        out.push_str(&u.text);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(n: usize, tag: &str) -> String {
        (0..n)
            .map(|i| format!("{tag}{i}"))
            .collect::<Vec<_>>()
            .join(" ")
    }

    fn wc(s: &str) -> usize {
        s.split_whitespace().count()
    }

    #[test]
    fn a_run_without_spaces_is_cut_so_no_chunk_outgrows_its_bound() {
        // 1 MB of one "word", with multi-byte characters at the cuts.
        let run = "é".repeat(300) + &"x".repeat(1_000_000) + "日本";
        let p = ChunkParams {
            size: 50,
            overlap: 5,
        };
        let chunks = chunk_text(&run, p);
        assert!(chunks.len() > 1);
        let bound = p.size * MAX_WORD_CHARS + p.size;
        assert!(chunks.iter().all(|c| c.chars().count() <= bound));
        // Nothing is lost: the pieces (less the overlap) spell the run.
        let pieces: String = super::word_pieces(&run).collect();
        assert_eq!(pieces, run);
        assert!(chunks.last().unwrap().ends_with("日本"));
    }

    #[test]
    fn short_text_is_one_chunk() {
        let c = chunk_text(
            "One sentence. Another one.",
            ChunkParams {
                size: 50,
                overlap: 10,
            },
        );
        assert_eq!(c, vec!["One sentence. Another one."]);
    }

    #[test]
    fn chunks_respect_size_and_sentence_boundaries() {
        // 10 sentences of 9 words (+ a closing word with the period) = 10 words each.
        let text: String = (0..10)
            .map(|i| format!("{} end{i}.", words(9, &format!("S{i}w"))))
            .collect::<Vec<_>>()
            .join(" ");
        let chunks = chunk_text(
            &text,
            ChunkParams {
                size: 35,
                overlap: 10,
            },
        );
        for c in &chunks {
            assert!(wc(c) <= 35, "chunk over size: {c}");
            assert!(c.ends_with('.'), "chunk cut mid-sentence: {c}");
            assert!(c.starts_with('S'), "chunk starts mid-sentence: {c}");
        }
        // every sentence appears in some chunk
        for i in 0..10 {
            assert!(chunks.iter().any(|c| c.contains(&format!("end{i}."))));
        }
        // consecutive chunks overlap by exactly one 10-word sentence
        for pair in chunks.windows(2) {
            let last_sentence = pair[0].rsplit(". ").next().unwrap();
            assert!(pair[1].starts_with(last_sentence), "{pair:?}");
        }
    }

    #[test]
    fn no_overlap_means_disjoint_chunks() {
        let text = words(100, "w");
        let chunks = chunk_text(
            &text,
            ChunkParams {
                size: 30,
                overlap: 0,
            },
        );
        assert_eq!(chunks.len(), 4);
        assert_eq!(chunks.iter().map(|c| wc(c)).sum::<usize>(), 100);
    }

    #[test]
    fn overlong_sentence_is_cut_at_words() {
        let text = words(95, "w");
        let chunks = chunk_text(
            &text,
            ChunkParams {
                size: 40,
                overlap: 10,
            },
        );
        assert!(chunks.iter().all(|c| wc(c) <= 40));
        assert!(chunks[0].starts_with("w0 ") && chunks.last().unwrap().ends_with("w94"));
    }

    #[test]
    fn every_chunk_adds_new_text_even_with_large_sentences() {
        let text = format!(
            "{}. {}. {}.",
            words(20, "a"),
            words(20, "b"),
            words(20, "c")
        );
        let chunks = chunk_text(
            &text,
            ChunkParams {
                size: 25,
                overlap: 12,
            },
        );
        assert_eq!(chunks.len(), 3);
        for pair in chunks.windows(2) {
            assert_ne!(pair[0], pair[1]);
        }
    }

    #[test]
    fn paragraph_breaks_survive_inside_a_chunk() {
        let c = chunk_text(
            "First para.\n\nSecond para.",
            ChunkParams {
                size: 50,
                overlap: 0,
            },
        );
        assert_eq!(c, vec!["First para.\n\nSecond para."]);
    }

    #[test]
    fn sections_are_never_merged() {
        let sections = vec![
            Section {
                headings: vec!["A".into()],
                text: "Alpha text.".into(),
            },
            Section {
                headings: vec!["A".into(), "B".into()],
                text: "Beta text.".into(),
            },
        ];
        let chunks = chunk_sections(
            &sections,
            ChunkParams {
                size: 200,
                overlap: 20,
            },
        );
        assert_eq!(chunks.len(), 2);
        assert_eq!(chunks[1].section, "A > B");
        assert_eq!(chunks[1].embedding_text(None), "A > B\nBeta text.");
        assert_eq!(
            chunks[0].embedding_text(Some("Doc")),
            "Doc > A\nAlpha text."
        );
    }

    #[test]
    fn sentence_splitting_keeps_abbreviations_and_versions() {
        let s =
            sentences("Use version 1.2.3 here. Then e.g. not split. Next \"quoted\" one! Last?");
        assert_eq!(
            s,
            vec![
                "Use version 1.2.3 here.",
                "Then e.g. not split.",
                "Next \"quoted\" one!",
                "Last?"
            ]
        );
    }
}
