//! Property tests on arbitrary Unicode for the text paths that were
//! taught Japanese, Chinese and Korean: the lexical encoder (CJK bigrams
//! beside English words and identifiers), sentence splitting, word counts
//! and chunking. Inputs mix CJK, its punctuation, ASCII, identifiers'
//! punctuation, white space and anything else `proptest` draws.

use grace::ingest::chunk::{ChunkParams, chunk_text};
use grace::lexical::{LexicalEncoder, cjk_terms};
use grace::text::{is_cjk, sentences, word_count};
use proptest::prelude::*;

/// Text that is mostly the characters these paths treat specially, with
/// arbitrary code points among them.
fn mixed_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        4 => "[ぁ-んァ-ン一-龥가-힣]{1,12}",
        2 => "[a-zA-Z0-9_./:-]{1,10}",
        2 => "[ 。、！？「」『』（）．\n]{1,3}",
        1 => "[ａ-ｚＡ-Ｚ０-９　]{1,4}",
        1 => any::<String>(),
    ];
    prop::collection::vec(piece, 0..30).prop_map(|v| v.concat())
}

fn non_space(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn sparse_vectors_are_well_formed(text in mixed_text()) {
        let enc = LexicalEncoder::new().unwrap();
        for v in [enc.encode_document(&text), enc.encode_query(&text)] {
            prop_assert_eq!(v.indices.len(), v.values.len());
            prop_assert!(v.indices.windows(2).all(|w| w[0] < w[1]), "ids not unique and sorted");
            prop_assert!(v.values.iter().all(|x| x.is_finite() && *x > 0.0));
        }
    }

    #[test]
    fn a_text_matches_every_cjk_term_of_its_own(text in mixed_text()) {
        let enc = LexicalEncoder::new().unwrap();
        let doc = enc.encode_document(&text);
        let query = enc.encode_query(&text);
        for term in cjk_terms(&text) {
            prop_assert!(doc.indices.binary_search(&term).is_ok());
            prop_assert!(query.indices.binary_search(&term).is_ok());
        }
        // As many bigram occurrences as neighbouring CJK pairs, plus lone
        // characters.
        let chars: Vec<char> = text.chars().collect();
        let pairs = chars.windows(2).filter(|w| is_cjk(w[0]) && is_cjk(w[1])).count();
        let lone = (0..chars.len())
            .filter(|&i| {
                is_cjk(chars[i])
                    && (i == 0 || !is_cjk(chars[i - 1]))
                    && chars.get(i + 1).is_none_or(|c| !is_cjk(*c))
            })
            .count();
        prop_assert_eq!(cjk_terms(&text).len(), pairs + lone);
    }

    #[test]
    fn sentences_lose_no_characters(text in mixed_text()) {
        let joined: String = sentences(&text).concat();
        prop_assert_eq!(non_space(&joined), non_space(&text));
        prop_assert!(sentences(&text).iter().all(|s| !s.trim().is_empty()));
    }

    #[test]
    fn chunks_keep_the_text_and_their_size(text in mixed_text(), size in 1usize..60) {
        let chunks = chunk_text(&text, ChunkParams { size, overlap: 0 });
        // Nothing lost or added but white space, without overlap.
        let joined: String = chunks.concat();
        prop_assert_eq!(non_space(&joined), non_space(&text));
        // A chunk holds at most `size` words of pieces that weigh at least
        // half a word (a CJK character), so at most 2 × `size` pieces.
        for c in &chunks {
            prop_assert!(word_count(c) <= 2 * size, "{} words in a {size}-word chunk", word_count(c));
        }
    }

    #[test]
    fn word_counts_are_bounded_by_characters(text in mixed_text()) {
        let n = word_count(&text);
        prop_assert!(n <= text.chars().filter(|c| !c.is_whitespace()).count());
        prop_assert_eq!(n == 0, text.split_whitespace().next().is_none());
    }
}
