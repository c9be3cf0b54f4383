//! Chunking: sections → chunks of about `chunk_size` words.
//!
//! A chunk never crosses a section, so it belongs to one heading path. Inside
//! a section, sentences are packed greedily; a sentence longer than a chunk
//! is cut at word boundaries. Where there are no spaces (Japanese, Chinese)
//! two characters count as a word (`text::word_count`), and a long sentence
//! is cut between characters. Each chunk after the first of a section starts
//! with the last sentences (at most `overlap` words) of the one before, so a
//! fact that straddles a boundary is whole in at least one chunk.

use super::load::Section;
use crate::text::blocks::unmarked;
use crate::text::references::without_cross_references;
use crate::text::{CJK_CHARS_PER_WORD, runs, sized_as_cjk};

/// One piece of a document, ready to embed.
#[derive(Debug, Clone, PartialEq)]
pub struct Chunk {
    /// Heading path joined with ` > ` (empty before the first heading).
    pub section: String,
    /// The chunk's own text.
    pub text: String,
    /// The page its section is on (PDF), from 1.
    pub page: Option<u32>,
}

impl Chunk {
    /// The text given to the embedder: the heading path as context, then the
    /// chunk text without the marks loaders add for answers
    /// ([`crate::text::blocks::unmarked`]) and without the titles its
    /// cross-references quote
    /// ([`crate::text::references::without_cross_references`]).
    pub fn embedding_text(&self, title: Option<&str>) -> String {
        let mut context: Vec<&str> = Vec::new();
        if let Some(t) = title {
            context.push(t);
        }
        if !self.section.is_empty() {
            context.push(&self.section);
        }
        let text = unmarked(&without_cross_references(&self.text));
        if context.is_empty() {
            text
        } else {
            format!("{}\n{}", context.join(" > "), text)
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
                page: s.page,
            });
        }
    }
    out
}

/// Sizes inside the chunker are counted in parts of a word: a word of a
/// spaced script (or a run of other characters inside a token) is this many
/// parts, a CJK character or CJK punctuation mark one.
const PARTS: usize = CJK_CHARS_PER_WORD;

/// Splits one section's text into chunk texts.
pub fn chunk_text(text: &str, params: ChunkParams) -> Vec<String> {
    let size = params.size.max(1) * PARTS;
    let overlap = params.overlap.min(params.size.max(1) / 2) * PARTS;
    let units = units(text, size);
    let mut chunks = Vec::new();
    let mut current: Vec<&Unit> = Vec::new();
    let mut parts = 0;
    // Units in `current` that came from the previous chunk's overlap.
    let mut carried = 0;
    for unit in &units {
        if parts + unit.parts > size && current.len() > carried {
            chunks.push(join(&current));
            let mut tail = overlap_tail(&current, overlap);
            parts = tail.iter().map(|u| u.parts).sum();
            // The overlap must leave room for the unit that starts the chunk.
            while !tail.is_empty() && parts + unit.parts > size {
                parts -= tail.remove(0).parts;
            }
            carried = tail.len();
            current = tail;
        }
        current.push(unit);
        parts += unit.parts;
    }
    if current.len() > carried {
        chunks.push(join(&current));
    }
    chunks
}

/// A sentence (or a piece of an over-long sentence), its size in
/// [`PARTS`] of a word, whether it follows the unit before without a space
/// (Japanese sentences, or a cut between characters) and whether a
/// paragraph ends after it.
#[derive(Debug)]
struct Unit {
    text: String,
    parts: usize,
    tight: bool,
    paragraph_end: bool,
    line_end: bool,
}

impl Unit {
    fn new(tight: bool) -> Self {
        Unit {
            text: String::new(),
            parts: 0,
            tight,
            paragraph_end: false,
            line_end: false,
        }
    }
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

/// The smallest pieces a sentence is cut into when it outgrows a chunk:
/// words (cut to [`MAX_WORD_CHARS`]) and single CJK characters, each with
/// its size and whether a space separated it from the one before.
struct Piece<'a> {
    text: &'a str,
    parts: usize,
    space_before: bool,
}

fn pieces(sentence: &str) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    for (w, word) in sentence.split_whitespace().enumerate() {
        let mut space_before = w > 0;
        for (run, cjk) in runs(word) {
            if cjk {
                for (i, c) in run.char_indices() {
                    out.push(Piece {
                        text: &run[i..i + c.len_utf8()],
                        parts: 1,
                        space_before,
                    });
                    space_before = false;
                }
            } else {
                for piece in word_pieces(run) {
                    out.push(Piece {
                        text: piece,
                        parts: PARTS,
                        space_before,
                    });
                    space_before = false;
                }
            }
        }
    }
    out
}

fn units(text: &str, max_parts: usize) -> Vec<Unit> {
    let mut out: Vec<Unit> = Vec::new();
    for paragraph in text.split("\n\n") {
        // A line break ends a sentence (`sentences` splits there too), and
        // is kept in the chunk: list items, a term and its description
        // stay on their lines for the answerer to read.
        let sentences: Vec<(String, bool)> = paragraph
            .split('\n')
            .flat_map(|line| {
                let s = sentences(line);
                let n = s.len();
                s.into_iter().enumerate().map(move |(i, s)| (s, i + 1 == n))
            })
            .collect();
        let n = sentences.len();
        for (i, (sentence, line_end)) in sentences.into_iter().enumerate() {
            // Sentences of a script without spaces follow each other
            // without one.
            let tight = i > 0
                && out.last().is_some_and(|u| u.text.ends_with(sized_as_cjk))
                && sentence.starts_with(sized_as_cjk);
            let mut unit = Unit::new(tight);
            for piece in pieces(&sentence) {
                if unit.parts + piece.parts > max_parts && unit.parts > 0 {
                    let next = Unit::new(!piece.space_before);
                    out.push(std::mem::replace(&mut unit, next));
                } else if piece.space_before {
                    unit.text.push(' ');
                }
                unit.text.push_str(piece.text);
                unit.parts += piece.parts;
            }
            unit.paragraph_end = i + 1 == n;
            unit.line_end = line_end;
            out.push(unit);
        }
    }
    out
}

pub use crate::text::sentences;

/// The trailing units of `chunk` totalling at most `overlap` parts (never
/// the whole chunk, so every chunk adds new text).
fn overlap_tail<'a>(chunk: &[&'a Unit], overlap: usize) -> Vec<&'a Unit> {
    let mut tail = Vec::new();
    let mut parts = 0;
    for unit in chunk.iter().rev() {
        if parts + unit.parts > overlap || tail.len() + 1 >= chunk.len() {
            break;
        }
        parts += unit.parts;
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
            } else if units[i - 1].line_end {
                "\n"
            } else if u.tight {
                ""
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
    fn line_breaks_survive_inside_a_chunk() {
        let params = ChunkParams {
            size: 200,
            overlap: 0,
        };
        let text =
            "Commands:\npromote\n: Copy the release. Keep it.\n1. First step.\n2. Second step.";
        assert_eq!(chunk_text(text, params), vec![text]);
    }

    #[test]
    fn sections_are_never_merged() {
        let sections = vec![
            Section {
                headings: vec!["A".into()],
                text: "Alpha text.".into(),
                page: None,
            },
            Section {
                headings: vec!["A".into(), "B".into()],
                text: "Beta text.".into(),
                page: Some(2),
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
        assert_eq!((chunks[0].page, chunks[1].page), (None, Some(2)));
        assert_eq!(chunks[1].embedding_text(None), "A > B\nBeta text.");
        assert_eq!(
            chunks[0].embedding_text(Some("Doc")),
            "Doc > A\nAlpha text."
        );
    }

    #[test]
    fn japanese_is_sized_in_characters_and_cut_without_spaces() {
        // 30 sentences of 21 characters (11 words each: 第, the number and
        // 18 more characters), no spaces.
        let sentence = |i: usize| format!("第{i:02}文はパッケージの削除方法を説明する。");
        let text: String = (0..30).map(sentence).collect();
        assert_eq!(crate::text::word_count(&sentence(1)), 11);
        let p = ChunkParams {
            size: 35,
            overlap: 12,
        };
        let chunks = chunk_text(&text, p);
        assert!(chunks.len() > 5, "{chunks:?}");
        for c in &chunks {
            assert!(crate::text::word_count(c) <= 35, "over size: {c}");
            assert!(
                c.ends_with('。') && c.starts_with('第'),
                "mid-sentence: {c}"
            );
            assert!(!c.contains(' '), "a space was put into Japanese: {c}");
        }
        // Consecutive chunks overlap by exactly one sentence.
        for pair in chunks.windows(2) {
            let last = last_sentence(&pair[0]);
            assert!(pair[1].starts_with(last), "{pair:?}");
        }
        // One long sentence without marks is cut between characters, and
        // without overlap the pieces spell it exactly.
        let run = "あ".repeat(1000) + "apt-get と /etc/apt/sources.list" + &"い".repeat(99);
        let chunks = chunk_text(
            &run,
            ChunkParams {
                size: 200,
                overlap: 0,
            },
        );
        assert!(chunks.iter().all(|c| crate::text::word_count(c) <= 200));
        assert_eq!(chunks[0].chars().count(), 400);
        assert_eq!(chunks.concat(), run);
    }

    /// The last sentence of a Japanese chunk (which ends in `。`).
    fn last_sentence(chunk: &str) -> &str {
        let body = &chunk[..chunk.len() - '。'.len_utf8()];
        let start = body.rfind('。').map_or(0, |i| i + '。'.len_utf8());
        &chunk[start..]
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
