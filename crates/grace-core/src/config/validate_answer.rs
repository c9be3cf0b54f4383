//! Checks of how answers are read, written and scored: the reader
//! (`reader`, with `search.rerank_depth`, the passages it reads, and the
//! lexical gate of the search, `search.rare_term_share`, `rare_terms`), the
//! confidence formula (`confidence`) and the generator (`llm`).

use super::check::{above_zero, in_range, invalid};
use super::{Config, LlmProvider, Result};

/// The `reader` section, with `search.rerank_depth`: the passages it reads.
pub(super) fn validate_reader(c: &Config) -> Result<()> {
    let r = &c.reader;
    if r.model_dir.as_os_str().is_empty() {
        return Err(invalid("reader.model_dir", "must not be empty"));
    }
    in_range(
        "reader.max_length",
        r.max_length,
        16..=512,
        " (the model's position limit)",
    )?;
    in_range("reader.threads", r.threads, 0..=1024, " (0 = all cores)")?;
    in_range("search.rerank_depth", c.search.rerank_depth, 1..=100, "")?;
    let share = c.search.rare_term_share;
    in_range(
        "search.rare_term_share",
        share,
        0.0..=1.0,
        " (a share of the candidate passages)",
    )?;
    in_range(
        "search.rare_terms",
        c.search.rare_terms,
        0..=MAX_RARE_TERMS,
        "",
    )?;
    Ok(())
}

/// Most strong terms `search.rare_terms` may ask of a passage.
const MAX_RARE_TERMS: usize = 16;

/// The `confidence` section (model-written questions need `llm.provider`).
pub(super) fn validate_confidence(c: &Config) -> Result<()> {
    // Every weight by the name the file gives it, so that none is left
    // out (six were: neighbour_score, the reader's, identifier and
    // follow-up coverage, document_history).
    if let Ok(serde_yaml::Value::Mapping(weights)) = serde_yaml::to_value(c.confidence.weights) {
        for (name, v) in &weights {
            let (Some(name), Some(v)) = (name.as_str(), v.as_f64()) else {
                continue;
            };
            in_range(
                &format!("confidence.weights.{name}"),
                v,
                -1000.0..=1000.0,
                "",
            )?;
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
        in_range(key, v, 0.0..=1000.0, "")?;
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
    in_range(
        "confidence.self_calibration.questions",
        sc.questions,
        1..=10000,
        "",
    )?;
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
        in_range(key, v, range, "")?;
    }
    in_range(
        "confidence.self_calibration.min_sections",
        sc.min_sections,
        10..=100000,
        " (fewer sections cannot fit 17 weights)",
    )?;
    if sc.model_questions && c.llm.provider == LlmProvider::Extractive {
        return Err(invalid(
            "confidence.self_calibration.model_questions",
            "needs a language model to write the questions: set llm.provider to gemini or ollama, or model_questions to false",
        ));
    }
    in_range(
        "confidence.feedback_refit_every",
        c.confidence.feedback_refit_every,
        1..=100000,
        " (new labels between two refits)",
    )?;
    let t = &c.confidence.thresholds;
    for (key, v) in [
        ("confidence.thresholds.silent", t.silent),
        ("confidence.thresholds.notify", t.notify),
        ("confidence.thresholds.confirm", t.confirm),
    ] {
        in_range(key, v, 0.0..=1.0, "")?;
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
    in_range("llm.extractive.max_sentences", x.max_sentences, 1..=20, "")?;
    in_range(
        "llm.extractive.min_similarity",
        x.min_similarity,
        -1.0..=1.0,
        " (a cosine similarity)",
    )?;
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
        in_range(
            &format!("{key}.timeout_seconds"),
            r.timeout_seconds,
            above_zero(3600.0),
            " seconds",
        )?;
        in_range(&format!("{key}.temperature"), r.temperature, 0.0..=2.0, "")?;
        in_range(
            &format!("{key}.max_output_tokens"),
            r.max_output_tokens,
            16..=65_536,
            "",
        )?;
    }
    Ok(())
}
