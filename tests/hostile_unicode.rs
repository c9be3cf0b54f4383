//! Security review: text functions sliced by byte offsets, and one
//! non-ASCII letter before `.()` panicked (fixed with its own test in
//! tests/identifiers.rs). These are property tests over generated hostile
//! Unicode, for every text function a document or a question reaches: the
//! loaders (Markdown, HTML, reST, text), the chunker and sentence splitter,
//! the lexical encoder and identifier matching, citation markers, and the
//! extractive answerer. Each case must not panic, and what comes out must
//! be made of what went in. No dependency: a seeded xorshift generator, so
//! a failure names its seed and case and reruns the same.
//!
//! `GRACE_UNICODE_CASES=N` runs N cases per function (default 400; the
//! fuzz campaigns are meant to run many more).

use crate::support::common;

use std::sync::Arc;

use grace::ingest::chunk::{ChunkParams, chunk_text, sentences};
use grace::ingest::load::{Format, Limits, load};
use grace::lexical::{LexicalEncoder, distinct_identifiers, identifiers, identifiers_found};
use grace::tools::{Reasoning, Tool};
use serde_json::json;

/// Characters chosen to break byte-offset code: multi-byte letters, CJK,
/// combining marks, right-to-left text and marks, emoji with joiners and
/// variation selectors, NUL and other controls, lone surrogate-adjacent
/// code points, and the punctuation the text functions look for.
const PIECES: &[&str] = &[
    "é",
    "ß",
    "İ",
    "ﬁ",
    "日本語",
    "中",
    "한",
    "e\u{301}",
    "a\u{0308}\u{0323}",
    "\u{200f}",
    "\u{202e}",
    "مرحبا",
    "שלום",
    "👩\u{200d}💻",
    "🇫🇷",
    "❤\u{fe0f}",
    "\u{0}",
    "\u{7}",
    "\u{feff}",
    "\u{2028}",
    "\u{ffff}",
    "\u{10ffff}",
    "\t",
    "\n",
    "\n\n",
    "\r\n",
    " ",
    "  ",
    ".",
    ". ",
    "?",
    "!",
    "…",
    "()",
    ".()",
    "::",
    "->",
    "_",
    "-",
    "--flag",
    "E0392",
    "fetch.prune",
    "[1]",
    "[",
    "]",
    "#",
    "## ",
    "<",
    ">",
    "<div>",
    "</p>",
    "<h2>",
    "&amp;",
    "&",
    "`",
    "```",
    "*",
    "=",
    "====",
    "\"",
    "'",
    "Word",
    "x",
    "1.2.3",
    "v2",
    "a.b.c()",
    "ÉCOLE.",
    "Ωμέγα.",
    "\u{300}",
    "\u{1f600}.",
    "q\u{301}.()",
];

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    /// A string of up to `max` pieces, now and then a long run of one.
    fn text(&mut self, max: usize) -> String {
        let mut s = String::new();
        for _ in 0..self.below(max + 1) {
            let piece = PIECES[self.below(PIECES.len())];
            let times = if self.below(20) == 0 {
                1 + self.below(300)
            } else {
                1
            };
            for _ in 0..times {
                s.push_str(piece);
            }
        }
        s
    }
}

fn cases() -> usize {
    std::env::var("GRACE_UNICODE_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(400)
}

/// Runs `check` on `cases()` generated texts; a panic names the seed and case.
fn for_each_text(seed: u64, max_pieces: usize, mut check: impl FnMut(&str)) {
    let mut rng = Rng(seed);
    for case in 0..cases() {
        let text = rng.text(max_pieces);
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(&text)));
        if outcome.is_err() {
            panic!("seed {seed}, case {case}: panicked on {text:?}");
        }
    }
}

/// Every non-space character of `out` occurs in `input` (nothing invented;
/// entity decoding and headings aside, which the callers allow for).
fn made_of(out: &str, input: &str) -> bool {
    out.chars()
        .filter(|c| !c.is_whitespace())
        .all(|c| input.contains(c))
}

#[test]
fn loaders_take_any_text_without_panicking() {
    for (seed, format) in [
        (11, Format::Markdown),
        (12, Format::Html),
        (13, Format::ReStructuredText),
        (14, Format::Text),
        (15, Format::Man),
        (16, Format::QaCsv),
        (17, Format::QaJsonl),
    ] {
        for_each_text(seed, 60, |text| {
            if let Ok(doc) = load(text.as_bytes(), format, &Limits::default()) {
                for s in &doc.sections {
                    assert!(!s.text.is_empty());
                    if format == Format::Text {
                        assert!(made_of(&s.text, text), "{:?}", s.text);
                    }
                }
            }
        });
    }
}

#[test]
fn the_chunker_and_sentence_splitter_keep_every_character() {
    for_each_text(21, 80, |text| {
        for s in sentences(text) {
            assert!(made_of(&s, text));
        }
        let chunks = chunk_text(
            text,
            ChunkParams {
                size: 7,
                overlap: 2,
            },
        );
        let joined: String = chunks.concat();
        // Every word of the input is in some chunk.
        for word in text.split_whitespace() {
            let first: String = word.chars().take(3).collect();
            assert!(joined.contains(&first), "{word:?} lost");
        }
        for c in &chunks {
            assert!(made_of(c, text));
        }
    });
}

#[test]
fn the_lexical_encoder_and_identifiers_take_any_text() {
    let encoder = LexicalEncoder::new().unwrap();
    for_each_text(31, 40, |text| {
        let _ = encoder.encode_document(text);
        let _ = encoder.encode_query(text);
        let ids = identifiers(text);
        // Identifiers are lower-cased.
        let lower = text.to_lowercase();
        for id in &ids {
            assert!(made_of(id, &lower), "{id:?}");
        }
        let wanted = distinct_identifiers(text);
        assert!(identifiers_found(&wanted, text) <= wanted.len());
        let _ = grace::confidence::citation_markers(text);
    });
}

#[test]
fn the_extractive_answerer_quotes_only_what_its_sources_say() {
    let extractive = Arc::new(grace::llm::Extractive::new(common::embedder(), 3, 0.0).unwrap());
    let tool = Reasoning::new(extractive).unwrap();
    let mut rng = Rng(41);
    let mut answered = 0;
    // Fewer cases: each one embeds its sentences.
    for case in 0..cases() / 8 {
        let (q, a, b) = (rng.text(12), rng.text(40), rng.text(40));
        if q.trim().is_empty() {
            continue;
        }
        let mut sources = Vec::new();
        for t in [&a, &b] {
            if !t.trim().is_empty() {
                sources.push(json!({"text": t, "source": "/kb/x.md"}));
            }
        }
        let input = json!({"query": q, "sources": sources});
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            tool.execute(&input, &grace::access::ReadScope::All)
        }));
        let Ok(result) = outcome else {
            panic!("seed 41, case {case}: panicked on {input}");
        };
        if let Ok(r) = result
            && let grace::tools::ToolOutput::Answer(answer) = r.output
            && !answer.abstained
        {
            answered += 1;
            let both = format!("{a}{b}[]0123456789 ");
            // An identifier of the question no source mentions is named
            // first ("The sources do not mention v2."): from the question.
            let quoted = match answer
                .text
                .strip_prefix(grace::lang::Lang::En.texts().absence)
            {
                Some(rest) => {
                    let (lead, rest) = rest.split_once(". ").unwrap_or((rest, ""));
                    let named = lead.trim_start_matches("mention ");
                    assert!(
                        named
                            .split(", ")
                            .flat_map(|n| n.split(" or "))
                            .all(|n| q.to_lowercase().contains(&n.to_lowercase())),
                        "case {case}: {lead:?} names what {q:?} does not"
                    );
                    rest.to_string()
                }
                None => answer.text.clone(),
            };
            assert!(made_of(&quoted, &both), "case {case}: {:?}", answer.text);
        }
    }
    assert!(
        answered > 0,
        "no case was answered: the check above never ran"
    );
}
