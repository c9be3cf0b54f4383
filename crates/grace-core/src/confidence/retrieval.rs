//! Confidence factors of a retrieval: score statistics of the passages and
//! how much of the question they cover.
//!
//! Score statistics alone separate answerable from unanswerable questions
//! poorly (an unrelated question still has a nearest passage), so the
//! lexical query coverage is reported beside them: the share of the
//! question's content words (stemmed, stop words dropped) and identifiers
//! (`E0382`, `--purge`, `foo_bar()`, matched whole and exactly) that occur
//! in the passages.

use std::collections::HashSet;

use statrs::statistics::Statistics;

use super::{Factor, Factors};
use crate::lexical::{
    LexicalEncoder, coverage_with_compounds, distinct_identifiers, identifiers_found,
};
use crate::search::Passage;

/// Share of the query's terms found in any of `passages` (two words of
/// the query also found written as one: "roll back" and "rollback");
/// `None` when the query has no content term (only stop words).
pub fn query_coverage(lexical: &LexicalEncoder, query: &str, passages: &[&str]) -> Option<f64> {
    let found: HashSet<u32> = passages
        .iter()
        .flat_map(|p| lexical.encode_document(p).indices)
        .collect();
    coverage_with_compounds(
        &lexical.encode_query(query),
        &lexical.compounds(query),
        &found,
    )
}

/// The factors of a search for `query` that returned `passages`. `focus`
/// is the follow-up as typed when `query` is its standalone rewrite: its
/// own terms must be found too ([`Factor::FollowUpCoverage`]).
pub fn retrieval_factors(
    lexical: &LexicalEncoder,
    query: &str,
    focus: Option<&str>,
    passages: &[Passage],
) -> Factors {
    let mut f = Factors::default();
    f.set(Factor::ResultCount, passages.len() as f64);
    if passages.is_empty() {
        f.set(Factor::QueryCoverage, 0.0);
        return f;
    }
    let scores: Vec<f64> = passages.iter().map(|p| f64::from(p.score)).collect();
    let mut sorted = scores.clone();
    sorted.sort_by(|a, b| b.total_cmp(a));
    f.set(Factor::MaxScore, Statistics::max(&scores));
    f.set(Factor::MinScore, Statistics::min(&scores));
    f.set(Factor::MeanScore, Statistics::mean(&scores));
    f.set(
        Factor::ScoreVariance,
        Statistics::population_variance(&scores),
    );
    f.set(
        Factor::Margin,
        sorted[0] - sorted.get(1).copied().unwrap_or(sorted[0]),
    );
    // The heading path is part of what was indexed, so it counts too.
    let texts: Vec<String> = passages
        .iter()
        .map(|p| format!("{}\n{}", p.section, p.text))
        .collect();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    if let Some(c) = query_coverage(lexical, query, &texts) {
        f.set(Factor::QueryCoverage, c);
    }
    // The passage an answer rests on is the first one.
    let wanted = distinct_identifiers(query);
    if !wanted.is_empty() {
        let found = identifiers_found(&wanted, texts[0]);
        f.set(
            Factor::IdentifierCoverage,
            found as f64 / wanted.len() as f64,
        );
    }
    if let Some(c) = focus.and_then(|q| query_coverage(lexical, q, &texts)) {
        f.set(Factor::FollowUpCoverage, c);
    }
    let mut read: Vec<f64> = passages
        .iter()
        .filter_map(|p| p.reader_score.map(f64::from))
        .collect();
    read.sort_by(|a, b| b.total_cmp(a));
    if let Some(&best) = read.first() {
        f.set(Factor::Reader, best);
        f.set(
            Factor::ReaderMargin,
            best - read.get(1).copied().unwrap_or(0.0),
        );
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    fn passage(score: f32, text: &str) -> Passage {
        Passage {
            id: 0,
            source: "/kb/a.md".into(),
            section: String::new(),
            chunk_index: 0,
            page: None,
            text: text.into(),
            score,
            fused_score: 0.0,
            dense_rank: Some(1),
            lexical_rank: None,
            lexical_score: None,
            pinned: false,
            reader_score: None,
            vector: None,
        }
    }

    #[test]
    fn identifier_coverage_reads_the_top_passage_only() {
        let enc = LexicalEncoder::new().unwrap();
        let ps = [
            passage(0.8, "Lifetime parameters that are never used."),
            passage(0.5, "error[E0392]: parameter `T` is never used"),
        ];
        let f = retrieval_factors(&enc, "Why does the compiler report E0392?", None, &ps);
        assert_eq!(f.get(Factor::IdentifierCoverage), Some(0.0));
        let f = retrieval_factors(&enc, "Why does the compiler report E0392?", None, &ps[1..]);
        assert_eq!(f.get(Factor::IdentifierCoverage), Some(1.0));
        // A question without identifiers reports none.
        let f = retrieval_factors(&enc, "why is a parameter never used", None, &ps);
        assert_eq!(f.get(Factor::IdentifierCoverage), None);
    }

    #[test]
    fn reader_factors_are_the_best_probability_and_its_margin() {
        let enc = LexicalEncoder::new().unwrap();
        let mut ps = [passage(0.8, "a"), passage(0.7, "b"), passage(0.6, "c")];
        let f = retrieval_factors(&enc, "question", None, &ps);
        assert_eq!(
            f.get(Factor::Reader),
            None,
            "nothing read, nothing reported"
        );
        ps[0].reader_score = Some(0.25);
        ps[1].reader_score = Some(0.75);
        ps[2].reader_score = Some(0.5);
        let f = retrieval_factors(&enc, "question", None, &ps);
        assert_eq!(f.get(Factor::Reader), Some(0.75));
        assert_eq!(f.get(Factor::ReaderMargin), Some(0.25));
    }

    #[test]
    fn score_statistics_by_hand() {
        let enc = LexicalEncoder::new().unwrap();
        let ps = [
            passage(0.8, "apt pinning"),
            passage(0.5, "other"),
            passage(0.2, "more"),
        ];
        let f = retrieval_factors(&enc, "apt pinning", None, &ps);
        let get = |x| f.get(x).unwrap();
        assert_eq!(get(Factor::ResultCount), 3.0);
        assert!((get(Factor::MaxScore) - 0.8).abs() < 1e-6);
        assert!((get(Factor::MinScore) - 0.2).abs() < 1e-6);
        assert!((get(Factor::MeanScore) - 0.5).abs() < 1e-6);
        // population variance of 0.8, 0.5, 0.2 = (0.09 + 0 + 0.09) / 3 = 0.06
        assert!((get(Factor::ScoreVariance) - 0.06).abs() < 1e-6);
        assert!((get(Factor::Margin) - 0.3).abs() < 1e-6);
        assert_eq!(get(Factor::QueryCoverage), 1.0);
    }

    #[test]
    fn a_follow_ups_own_terms_must_be_found() {
        let enc = LexicalEncoder::new().unwrap();
        let ps = [passage(
            0.7,
            "Flash players packaged for Debian: lightspark and gnash.",
        )];
        let query = "and Skype? (Flash player Debian)";
        let f = retrieval_factors(&enc, query, Some("and Skype?"), &ps);
        assert_eq!(f.get(Factor::FollowUpCoverage), Some(0.0));
        let f = retrieval_factors(&enc, query, Some("and gnash?"), &ps);
        assert_eq!(f.get(Factor::FollowUpCoverage), Some(1.0));
        // Not a follow-up, or nothing of its own (only pronouns): not reported.
        assert_eq!(
            retrieval_factors(&enc, query, None, &ps).get(Factor::FollowUpCoverage),
            None
        );
        let f = retrieval_factors(&enc, query, Some("and it?"), &ps);
        assert_eq!(f.get(Factor::FollowUpCoverage), None);
    }

    #[test]
    fn empty_retrieval_has_no_coverage() {
        let enc = LexicalEncoder::new().unwrap();
        let f = retrieval_factors(&enc, "anything at all", None, &[]);
        assert_eq!(f.get(Factor::ResultCount), Some(0.0));
        assert_eq!(f.get(Factor::QueryCoverage), Some(0.0));
        assert_eq!(f.get(Factor::MaxScore), None);
    }

    #[test]
    fn single_passage_has_zero_margin() {
        let enc = LexicalEncoder::new().unwrap();
        let f = retrieval_factors(&enc, "x", None, &[passage(0.7, "x")]);
        assert_eq!(f.get(Factor::Margin), Some(0.0));
        assert_eq!(f.get(Factor::ScoreVariance), Some(0.0));
    }

    #[test]
    fn coverage_counts_stemmed_words_and_exact_identifiers() {
        let enc = LexicalEncoder::new().unwrap();
        // "configuring" and "configuration" share a stem; stop words do not count.
        let full =
            query_coverage(&enc, "configuring the network", &["Network configuration."]).unwrap();
        assert_eq!(full, 1.0);
        let half = query_coverage(&enc, "network printers", &["The network is down."]).unwrap();
        assert!((half - 0.5).abs() < 1e-9, "{half}");
        // An identifier must match exactly: E0383 is not E0382.
        let exact = query_coverage(&enc, "E0382", &["error E0382 explained"]).unwrap();
        let wrong = query_coverage(&enc, "E0382", &["error E0383 explained"]).unwrap();
        assert_eq!(exact, 1.0);
        assert_eq!(wrong, 0.0);
        assert_eq!(query_coverage(&enc, "the of and", &["anything"]), None);
    }
}
