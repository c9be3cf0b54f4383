//! Checks of how answers are read, written and scored: the reader
//! (`reader`, with `search.rerank_depth`, the passages it reads, and the
//! lexical gate of the search, `search.rare_term_share`, `rare_terms`), the
//! confidence formula (`confidence`) and the generator (`llm`).

use super::check::invalid;
use super::{Config, LlmProvider, Result};

/// The `reader` section, with `search.rerank_depth`: the passages it reads.
pub(super) fn validate_reader(c: &Config) -> Result<()> {
    let r = &c.reader;
    if r.model_dir.as_os_str().is_empty() {
        return Err(invalid("reader.model_dir", "must not be empty"));
    }
    if !(16..=512).contains(&r.max_length) {
        return Err(invalid(
            "reader.max_length",
            format!(
                "{} is out of range 16..=512 (the model's position limit)",
                r.max_length
            ),
        ));
    }
    if r.threads > 1024 {
        return Err(invalid(
            "reader.threads",
            format!("{} is out of range 0..=1024 (0 = all cores)", r.threads),
        ));
    }
    if !(1..=100).contains(&c.search.rerank_depth) {
        return Err(invalid(
            "search.rerank_depth",
            format!("{} is out of range 1..=100", c.search.rerank_depth),
        ));
    }
    let share = c.search.rare_term_share;
    if !(share.is_finite() && (0.0..=1.0).contains(&share)) {
        return Err(invalid(
            "search.rare_term_share",
            format!("{share} is out of range 0.0..=1.0 (a share of the candidate passages)"),
        ));
    }
    if c.search.rare_terms > MAX_RARE_TERMS {
        return Err(invalid(
            "search.rare_terms",
            format!(
                "{} is out of range 0..={MAX_RARE_TERMS}",
                c.search.rare_terms
            ),
        ));
    }
    Ok(())
}

/// Most strong terms `search.rare_terms` may ask of a passage.
const MAX_RARE_TERMS: usize = 16;

/// The `confidence` section (model-written questions need `llm.provider`).
pub(super) fn validate_confidence(c: &Config) -> Result<()> {
    let w = &c.confidence.weights;
    for (key, v) in [
        ("confidence.weights.bias", w.bias),
        ("confidence.weights.result_count", w.result_count),
        ("confidence.weights.max_score", w.max_score),
        ("confidence.weights.mean_score", w.mean_score),
        ("confidence.weights.score_variance", w.score_variance),
        ("confidence.weights.min_score", w.min_score),
        ("confidence.weights.margin", w.margin),
        ("confidence.weights.query_coverage", w.query_coverage),
        ("confidence.weights.groundedness", w.groundedness),
        ("confidence.weights.citation_validity", w.citation_validity),
        ("confidence.weights.self_assessment", w.self_assessment),
        ("confidence.weights.abstained", w.abstained),
    ] {
        if !(v.is_finite() && v.abs() <= 1000.0) {
            return Err(invalid(
                key,
                format!("{v} must be a finite number within ±1000"),
            ));
        }
    }
    let v1 = &c.confidence.grace_v1;
    for (key, v) in [
        ("confidence.grace_v1.search_quality", v1.search_quality),
        ("confidence.grace_v1.self_assessment", v1.self_assessment),
        (
            "confidence.grace_v1.citation_validity",
            v1.citation_validity,
        ),
    ] {
        if !(v.is_finite() && (0.0..=1000.0).contains(&v)) {
            return Err(invalid(key, format!("{v} is out of range 0.0..=1000.0")));
        }
    }
    if v1.search_quality + v1.self_assessment + v1.citation_validity <= 0.0 {
        return Err(invalid(
            "confidence.grace_v1",
            "at least one weight must be above 0",
        ));
    }
    if c.confidence
        .calibration
        .as_ref()
        .is_some_and(|p| p.as_os_str().is_empty())
    {
        return Err(invalid(
            "confidence.calibration",
            "must be a file path, or null for none",
        ));
    }
    let sc = &c.confidence.self_calibration;
    if !(1..=10_000).contains(&sc.questions) {
        return Err(invalid(
            "confidence.self_calibration.questions",
            format!("{} is out of range 1..=10000", sc.questions),
        ));
    }
    for (key, v, range) in [
        (
            "confidence.self_calibration.answerable_share",
            sc.answerable_share,
            0.1..=0.9,
        ),
        (
            "confidence.self_calibration.refit_share",
            sc.refit_share,
            0.0..=1.0,
        ),
        (
            "confidence.self_calibration.near_duplicate",
            sc.near_duplicate,
            0.5..=1.0,
        ),
    ] {
        if !range.contains(&v) {
            return Err(invalid(
                key,
                format!("{v} is out of range {}..={}", range.start(), range.end()),
            ));
        }
    }
    if !(10..=100_000).contains(&sc.min_sections) {
        return Err(invalid(
            "confidence.self_calibration.min_sections",
            format!(
                "{} is out of range 10..=100000 (fewer sections cannot fit 17 weights)",
                sc.min_sections
            ),
        ));
    }
    if sc.model_questions && c.llm.provider == LlmProvider::Extractive {
        return Err(invalid(
            "confidence.self_calibration.model_questions",
            "needs a language model to write the questions: set llm.provider to gemini or ollama, or model_questions to false",
        ));
    }
    if !(1..=100_000).contains(&c.confidence.feedback_refit_every) {
        return Err(invalid(
            "confidence.feedback_refit_every",
            format!(
                "{} is out of range 1..=100000 (new labels between two refits)",
                c.confidence.feedback_refit_every
            ),
        ));
    }
    let t = &c.confidence.thresholds;
    for (key, v) in [
        ("confidence.thresholds.silent", t.silent),
        ("confidence.thresholds.notify", t.notify),
        ("confidence.thresholds.confirm", t.confirm),
    ] {
        if !(0.0..=1.0).contains(&v) {
            return Err(invalid(key, format!("{v} is out of range 0.0..=1.0")));
        }
    }
    if !(t.confirm <= t.notify && t.notify <= t.silent) {
        return Err(invalid(
            "confidence.thresholds",
            format!(
                "must satisfy confirm ({}) <= notify ({}) <= silent ({})",
                t.confirm, t.notify, t.silent
            ),
        ));
    }
    Ok(())
}

/// The `llm` section.
pub(super) fn validate_llm(llm: &super::LlmConfig) -> Result<()> {
    let x = &llm.extractive;
    if !(1..=20).contains(&x.max_sentences) {
        return Err(invalid(
            "llm.extractive.max_sentences",
            format!("{} is out of range 1..=20", x.max_sentences),
        ));
    }
    if !(-1.0..=1.0).contains(&x.min_similarity) {
        return Err(invalid(
            "llm.extractive.min_similarity",
            format!(
                "{} is out of range -1.0..=1.0 (a cosine similarity)",
                x.min_similarity
            ),
        ));
    }
    for (key, r) in [("llm.gemini", &llm.gemini), ("llm.ollama", &llm.ollama)] {
        if r.model.trim().is_empty() {
            return Err(invalid(&format!("{key}.model"), "must name a model"));
        }
        let is_url = |u: &str| u.starts_with("http://") || u.starts_with("https://");
        if !(r.base_url.is_empty() || is_url(&r.base_url)) {
            return Err(invalid(
                &format!("{key}.base_url"),
                format!("`{}` is not an http(s) URL", r.base_url),
            ));
        }
        if !(r.timeout_seconds > 0.0 && r.timeout_seconds <= 3600.0) {
            return Err(invalid(
                &format!("{key}.timeout_seconds"),
                format!("{} is out of range (0, 3600]", r.timeout_seconds),
            ));
        }
        if !(0.0..=2.0).contains(&r.temperature) {
            return Err(invalid(
                &format!("{key}.temperature"),
                format!("{} is out of range 0.0..=2.0", r.temperature),
            ));
        }
        if !(16..=65_536).contains(&r.max_output_tokens) {
            return Err(invalid(
                &format!("{key}.max_output_tokens"),
                format!("{} is out of range 16..=65536", r.max_output_tokens),
            ));
        }
    }
    Ok(())
}
