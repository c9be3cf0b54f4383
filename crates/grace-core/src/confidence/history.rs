//! The `document_history` factor: what askers said of the earlier answers
//! drawn from the documents an answer cites. Its weight, and its sign,
//! come from people's ratings (`grace calibrate --from-feedback`); the
//! shipped weight is 0. On the evaluation sets it is negative: there each
//! section answers about one question, so a document whose answer was
//! rated right is then cited mostly by questions it does not answer, and
//! one rated down was cited by a question it did not answer before its
//! own came (measured: the book's calibration chapter). Where people ask
//! the same thing again, the ratings may teach the other sign.

use std::collections::{BTreeSet, HashMap};

/// The mean rating history (`feedback::document_history`, in (−1, 1)) of
/// the documents in `cited` that have one, each counted once; `None` when
/// none has (no evidence either way, so the factor is not reported).
pub fn document_history_factor(cited: &[String], history: &HashMap<String, f32>) -> Option<f64> {
    if history.is_empty() {
        return None;
    }
    let documents: BTreeSet<&str> = cited.iter().map(String::as_str).collect();
    let known: Vec<f64> = documents
        .into_iter()
        .filter_map(|d| history.get(d).map(|h| f64::from(*h)))
        .filter(|h| h.is_finite())
        .collect();
    (!known.is_empty()).then(|| known.iter().sum::<f64>() / known.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn history() -> HashMap<String, f32> {
        HashMap::from([("a.md".to_string(), 0.5), ("b.md".to_string(), -0.25)])
    }

    #[test]
    fn the_mean_over_cited_documents_with_a_history_each_once() {
        let cited = |c: &[&str]| c.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        // b.md cited twice counts once; c.md has no history.
        let f = document_history_factor(&cited(&["a.md", "b.md", "b.md", "c.md"]), &history());
        assert!((f.unwrap() - 0.125).abs() < 1e-9, "{f:?}");
        assert_eq!(
            document_history_factor(&cited(&["b.md"]), &history()),
            Some(-0.25)
        );
        // Nothing known: no factor, not a zero that reads as "even".
        assert_eq!(document_history_factor(&cited(&["c.md"]), &history()), None);
        assert_eq!(document_history_factor(&[], &history()), None);
        assert_eq!(
            document_history_factor(&cited(&["a.md"]), &HashMap::new()),
            None
        );
    }

    #[test]
    fn a_non_finite_history_is_no_evidence() {
        let history = HashMap::from([("a.md".to_string(), f32::NAN)]);
        assert_eq!(
            document_history_factor(&["a.md".to_string()], &history),
            None
        );
    }
}
