//! Range and consistency checks run after loading. Each error names the key.

use super::{Config, ConfigError, LlmProvider, Result};

fn invalid(key: &str, message: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        key: key.to_string(),
        message: message.into(),
        file: None,
        line: None,
    }
}

/// Checks every value that the types alone do not constrain.
pub(crate) fn validate(c: &Config) -> Result<()> {
    validate_review(&c.review)?;
    validate_server(&c.server)?;
    validate_mcp(&c.mcp)?;
    validate_sessions(&c.sessions)?;
    validate_agent(&c.agent)?;
    if c.storage.data_dir.as_os_str().is_empty() {
        return Err(invalid("storage.data_dir", "must not be empty"));
    }
    if c.storage.search_threads > 1024 {
        return Err(invalid(
            "storage.search_threads",
            format!(
                "{} is out of range 0..=1024 (0: one per CPU)",
                c.storage.search_threads
            ),
        ));
    }
    validate_index(&c.storage)?;

    validate_reader(c)?;
    let e = &c.embedding;
    if e.model_dir.as_os_str().is_empty() {
        return Err(invalid("embedding.model_dir", "must not be empty"));
    }
    if e.runtime_path.as_os_str().is_empty() {
        return Err(invalid("embedding.runtime_path", "must not be empty"));
    }
    if !(16..=8192).contains(&e.max_length) {
        return Err(invalid(
            "embedding.max_length",
            format!("{} is out of range 16..=8192", e.max_length),
        ));
    }
    if !(1..=4096).contains(&e.batch_size) {
        return Err(invalid(
            "embedding.batch_size",
            format!("{} is out of range 1..=4096", e.batch_size),
        ));
    }
    if e.threads > 1024 {
        return Err(invalid(
            "embedding.threads",
            format!("{} is out of range 0..=1024 (0 = all cores)", e.threads),
        ));
    }
    if e.cache_size > 1_000_000 {
        return Err(invalid(
            "embedding.cache_size",
            format!("{} is out of range 0..=1000000 (0 = off)", e.cache_size),
        ));
    }

    let i = &c.ingest;
    if !(20..=4000).contains(&i.chunk_size) {
        return Err(invalid(
            "ingest.chunk_size",
            format!("{} words is out of range 20..=4000", i.chunk_size),
        ));
    }
    if i.chunk_overlap * 2 > i.chunk_size {
        return Err(invalid(
            "ingest.chunk_overlap",
            format!(
                "{} must be at most half of ingest.chunk_size ({})",
                i.chunk_overlap, i.chunk_size
            ),
        ));
    }
    if i.include.is_empty() {
        return Err(invalid("ingest.include", "needs at least one glob pattern"));
    }
    for (key, patterns) in [
        ("ingest.include", &i.include),
        ("ingest.exclude", &i.exclude),
    ] {
        for p in patterns {
            globset::Glob::new(p)
                .map_err(|e| invalid(key, format!("`{p}` is not a valid glob: {e}")))?;
        }
    }
    if i.store_retries > 20 {
        return Err(invalid(
            "ingest.store_retries",
            format!("{} is out of range 0..=20", i.store_retries),
        ));
    }
    if !(i.store_retry_seconds.is_finite() && (0.0..=60.0).contains(&i.store_retry_seconds)) {
        return Err(invalid(
            "ingest.store_retry_seconds",
            format!("{} is out of range [0, 60]", i.store_retry_seconds),
        ));
    }
    if !(1..=100_000).contains(&i.commit_chunks) {
        return Err(invalid(
            "ingest.commit_chunks",
            format!("{} is out of range 1..=100000", i.commit_chunks),
        ));
    }
    if i.max_file_bytes == 0 {
        return Err(invalid("ingest.max_file_bytes", "must be greater than 0"));
    }
    for (key, value) in [
        (
            "ingest.max_compression_ratio",
            i.max_compression_ratio as usize,
        ),
        ("ingest.max_archive_entries", i.max_archive_entries),
        ("ingest.max_pages", i.max_pages),
    ] {
        if value == 0 {
            return Err(invalid(key, "must be greater than 0"));
        }
    }
    for (key, value) in [
        ("ingest.qa_question_column", &i.qa_question_column),
        ("ingest.qa_answer_column", &i.qa_answer_column),
    ] {
        if value.trim().is_empty() {
            return Err(invalid(key, "must name a column"));
        }
    }
    if i.qa_question_column
        .trim()
        .eq_ignore_ascii_case(i.qa_answer_column.trim())
    {
        return Err(invalid(
            "ingest.qa_answer_column",
            "must differ from ingest.qa_question_column",
        ));
    }
    if !(1..=10_000_000).contains(&i.max_files) {
        return Err(invalid(
            "ingest.max_files",
            format!("{} is out of range 1..=10000000", i.max_files),
        ));
    }
    if !(i.watch_debounce_seconds.is_finite() && (0.05..=60.0).contains(&i.watch_debounce_seconds))
    {
        return Err(invalid(
            "ingest.watch_debounce_seconds",
            format!("{} is out of range [0.05, 60]", i.watch_debounce_seconds),
        ));
    }
    for (n, root) in i.allowed_roots.iter().enumerate() {
        if !root.is_dir() {
            return Err(invalid(
                &format!("ingest.allowed_roots[{n}]"),
                format!("{} is not an existing folder", root.display()),
            ));
        }
    }

    let q = &c.qdrant;
    let name_ok = !q.collection.is_empty()
        && q.collection.len() <= 64
        && q.collection
            .chars()
            .all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == '-');
    if !name_ok {
        return Err(invalid(
            "qdrant.collection",
            format!(
                "`{}` must be 1 to 64 characters of letters, digits, `_` or `-`",
                q.collection
            ),
        ));
    }
    validate_qdrant_server(q)?;
    if !(1..=1000).contains(&q.search_limit) {
        return Err(invalid(
            "qdrant.search_limit",
            format!("{} is out of range 1..=1000", q.search_limit),
        ));
    }
    if !(-1.0..=1.0).contains(&q.score_threshold) {
        return Err(invalid(
            "qdrant.score_threshold",
            format!(
                "{} is out of range -1.0..=1.0 (a cosine similarity)",
                q.score_threshold
            ),
        ));
    }
    for (key, w) in [
        ("qdrant.lexical_weight", q.lexical_weight),
        ("qdrant.identifier_weight", q.identifier_weight),
    ] {
        if !(w.is_finite() && (0.0..=2.0).contains(&w)) {
            return Err(invalid(
                key,
                format!("{w} is out of range 0.0..=2.0 (a bonus in cosine units)"),
            ));
        }
    }
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
    validate_tools(&c.tools)?;
    let x = &c.llm.extractive;
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
    for (key, r) in [("llm.gemini", &c.llm.gemini), ("llm.ollama", &c.llm.ollama)] {
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
    if !(1..=10_000).contains(&q.candidates) {
        return Err(invalid(
            "qdrant.candidates",
            format!("{} is out of range 1..=10000", q.candidates),
        ));
    }
    Ok(())
}

/// The names in `tools.enabled` are checked by whoever builds the registry
/// (`ToolRegistry::from_config`) against the tools it has: config is data
/// and knows no layer above it.
fn validate_tools(t: &super::ToolsConfig) -> Result<()> {
    for (i, name) in t.enabled.iter().enumerate() {
        if t.enabled[..i].contains(name) {
            return Err(invalid(
                "tools.enabled",
                format!("`{name}` is listed twice"),
            ));
        }
    }
    let mut policies = vec![
        ("rag_search".to_string(), t.rag_search.policy()),
        ("reasoning".to_string(), t.reasoning.policy()),
        ("ask_user".to_string(), t.ask_user.policy()),
        ("web.fetch".to_string(), t.web.fetch.policy()),
        ("web.search".to_string(), t.web.search.policy()),
        ("runtime".to_string(), t.runtime.policy()),
    ];
    for (i, s) in t.mcp_servers.iter().enumerate() {
        validate_mcp_server(i, s, &t.mcp_servers[..i])?;
        policies.push((format!("mcp_servers[{i}]"), s.policy()));
        for (name, o) in &s.tools {
            let p = super::ToolPolicy {
                timeout_seconds: o.timeout_seconds.unwrap_or(s.timeout_seconds),
                retry_count: o.retry_count.unwrap_or(s.retry_count),
                retry_delay_seconds: o.retry_delay_seconds.unwrap_or(s.retry_delay_seconds),
            };
            policies.push((format!("mcp_servers[{i}].tools.{name}"), p));
        }
    }
    validate_web(&t.web)?;
    validate_runtime(&t.runtime)?;
    validate_reflection(&t.reflection)?;
    for (tool, p) in policies {
        if !(p.timeout_seconds.is_finite()
            && p.timeout_seconds > 0.0
            && p.timeout_seconds <= 86_400.0)
        {
            return Err(invalid(
                &format!("tools.{tool}.timeout_seconds"),
                format!("{} must be in (0, 86400]", p.timeout_seconds),
            ));
        }
        if p.retry_count > 10 {
            return Err(invalid(
                &format!("tools.{tool}.retry_count"),
                format!("{} is out of range 0..=10", p.retry_count),
            ));
        }
        if !(p.retry_delay_seconds.is_finite() && (0.0..=600.0).contains(&p.retry_delay_seconds)) {
            return Err(invalid(
                &format!("tools.{tool}.retry_delay_seconds"),
                format!("{} is out of range 0..=600", p.retry_delay_seconds),
            ));
        }
    }
    if !(1..=super::MAX_RAG_SEARCH_LIMIT).contains(&t.rag_search.limit) {
        return Err(invalid(
            "tools.rag_search.limit",
            format!(
                "{} is out of range 1..={}",
                t.rag_search.limit,
                super::MAX_RAG_SEARCH_LIMIT
            ),
        ));
    }
    Ok(())
}

/// A size or count from config must be in `range`.
fn in_range(key: &str, value: usize, range: std::ops::RangeInclusive<usize>) -> Result<()> {
    if range.contains(&value) {
        Ok(())
    } else {
        Err(invalid(
            key,
            format!(
                "{value} is out of range {}..={}",
                range.start(),
                range.end()
            ),
        ))
    }
}

fn validate_mcp_server(
    i: usize,
    s: &super::McpServerConfig,
    before: &[super::McpServerConfig],
) -> Result<()> {
    let key = |k: &str| format!("tools.mcp_servers[{i}].{k}");
    let name_ok = !s.name.is_empty()
        && s.name.len() <= 32
        && s.name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && s.name.starts_with(|c: char| c.is_ascii_lowercase());
    if !name_ok {
        return Err(invalid(
            &key("name"),
            format!(
                "`{}` must be 1-32 lowercase letters, digits or `_`, starting with a letter \
                 (tools are named mcp.<name>.<tool>)",
                s.name
            ),
        ));
    }
    if before.iter().any(|b| b.name == s.name) {
        return Err(invalid(
            &key("name"),
            format!("`{}` is used by another server", s.name),
        ));
    }
    match (&s.command, &s.url) {
        (Some(c), None) if !c.trim().is_empty() => {}
        (None, Some(u)) if u.starts_with("http://") || u.starts_with("https://") => {}
        (None, Some(u)) => {
            return Err(invalid(
                &key("url"),
                format!("`{u}` must be an http:// or https:// URL"),
            ));
        }
        _ => {
            return Err(invalid(
                &key("command"),
                "give exactly one of `command` (a program on stdio) and `url` (streamable HTTP)",
            ));
        }
    }
    for (k, v) in [
        ("connect_timeout_seconds", s.connect_timeout_seconds),
        ("reconnect_max_seconds", s.reconnect_max_seconds),
    ] {
        if !(v.is_finite() && v > 0.0 && v <= 3_600.0) {
            return Err(invalid(&key(k), format!("{v} must be in (0, 3600]")));
        }
    }
    in_range(
        &key("max_result_bytes"),
        s.max_result_bytes,
        1_024..=16 << 20,
    )?;
    for (k, patterns) in [("include", &s.include), ("exclude", &s.exclude)] {
        for p in patterns {
            if let Err(e) = globset::Glob::new(p) {
                return Err(invalid(
                    &key(k),
                    format!("`{p}` is not a glob pattern: {e}"),
                ));
            }
        }
    }
    Ok(())
}

fn validate_web(w: &super::WebConfig) -> Result<()> {
    let f = &w.fetch;
    in_range("tools.web.fetch.max_bytes", f.max_bytes, 1_024..=64 << 20)?;
    in_range("tools.web.fetch.max_redirects", f.max_redirects, 0..=20)?;
    in_range("tools.web.fetch.passages", f.passages, 1..=50)?;
    if f.content_types.is_empty() {
        return Err(invalid(
            "tools.web.fetch.content_types",
            "must list at least one type (e.g. text/html)",
        ));
    }
    if f.user_agent.trim().is_empty() || f.user_agent.len() > 200 {
        return Err(invalid(
            "tools.web.fetch.user_agent",
            "must be 1-200 characters",
        ));
    }
    let s = &w.search;
    if s.enabled && !(s.endpoint.starts_with("http://") || s.endpoint.starts_with("https://")) {
        return Err(invalid(
            "tools.web.search.endpoint",
            format!(
                "`{}` must be an http(s) URL when web_search is enabled \
                 (e.g. a SearXNG instance's http://localhost:8888/search)",
                s.endpoint
            ),
        ));
    }
    if s.shape != "searxng" {
        return Err(invalid(
            "tools.web.search.shape",
            format!("`{}` is not a known shape (known: searxng)", s.shape),
        ));
    }
    in_range("tools.web.search.max_results", s.max_results, 1..=50)?;
    for h in &w.allow_hosts {
        if h.trim().is_empty() || h.contains('/') {
            return Err(invalid(
                "tools.web.allow_hosts",
                format!("`{h}` must be a host or host:port, without a scheme or path"),
            ));
        }
    }
    Ok(())
}

fn validate_runtime(r: &super::RuntimeToolsConfig) -> Result<()> {
    in_range(
        "tools.runtime.max_code_bytes",
        r.max_code_bytes,
        64..=1 << 20,
    )?;
    in_range(
        "tools.runtime.memory_bytes",
        r.memory_bytes,
        1 << 20..=1 << 30,
    )?;
    in_range(
        "tools.runtime.stack_bytes",
        r.stack_bytes,
        64 << 10..=8 << 20,
    )?;
    in_range(
        "tools.runtime.max_output_bytes",
        r.max_output_bytes,
        64..=16 << 20,
    )?;
    in_range("tools.runtime.max_tools", r.max_tools, 1..=10_000)?;
    Ok(())
}

fn validate_reflection(r: &super::ReflectionConfig) -> Result<()> {
    if !(1..=1_000).contains(&r.failures) {
        return Err(invalid(
            "tools.reflection.failures",
            format!("{} is out of range 1..=1000", r.failures),
        ));
    }
    if r.disable_after != 0 && r.disable_after < r.failures {
        return Err(invalid(
            "tools.reflection.disable_after",
            format!(
                "{} must be 0 (never) or at least tools.reflection.failures ({})",
                r.disable_after, r.failures
            ),
        ));
    }
    if !(r.slow_seconds.is_finite() && r.slow_seconds > 0.0) {
        return Err(invalid(
            "tools.reflection.slow_seconds",
            format!("{} must be a positive number", r.slow_seconds),
        ));
    }
    in_range("tools.reflection.history", r.history, 10..=100_000)?;
    Ok(())
}

fn validate_review(r: &super::ReviewConfig) -> Result<()> {
    for (key, value) in [
        ("review.escalation_ttl_seconds", r.escalation_ttl_seconds),
        ("review.asker_wait_seconds", r.asker_wait_seconds),
    ] {
        if !(value.is_finite() && value > 0.0 && value <= 31_536_000.0) {
            return Err(invalid(
                key,
                format!("{value} must be a number of seconds above 0 and at most a year"),
            ));
        }
    }
    if !(0.0..=1.0).contains(&r.reviewer_confidence) {
        return Err(invalid(
            "review.reviewer_confidence",
            format!("{} is out of range 0..=1", r.reviewer_confidence),
        ));
    }
    if let Some(w) = r
        .replan_words
        .iter()
        .find(|w| w.trim().is_empty() || w.contains(char::is_whitespace))
    {
        return Err(invalid(
            "review.replan_words",
            format!("{w:?} must be one word"),
        ));
    }
    Ok(())
}

fn validate_agent(a: &super::AgentConfig) -> Result<()> {
    if !(1..=64).contains(&a.max_steps) {
        return Err(invalid(
            "agent.max_steps",
            format!("{} is out of range 1..=64", a.max_steps),
        ));
    }
    if !(1..=10_000_000).contains(&a.max_tokens) {
        return Err(invalid(
            "agent.max_tokens",
            format!("{} is out of range 1..=10000000", a.max_tokens),
        ));
    }
    for (key, value, max) in [
        ("agent.max_seconds", a.max_seconds, 3_600.0),
        (
            "agent.reply_timeout_seconds",
            a.reply_timeout_seconds,
            604_800.0,
        ),
    ] {
        if !(value.is_finite() && value > 0.0 && value <= max) {
            return Err(invalid(
                key,
                format!("{value} must be a number of seconds above 0 and at most {max}"),
            ));
        }
    }
    Ok(())
}

fn validate_sessions(s: &super::SessionsConfig) -> Result<()> {
    if !(s.ttl_seconds.is_finite() && s.ttl_seconds > 0.0) {
        return Err(invalid(
            "sessions.ttl_seconds",
            format!("{} must be a number of seconds above 0", s.ttl_seconds),
        ));
    }
    for (key, value, max) in [
        ("sessions.max_turns", s.max_turns, 10_000),
        ("sessions.max_bytes", s.max_bytes, 64 << 20),
        ("sessions.max_sessions", s.max_sessions, 10_000_000),
    ] {
        if !(1..=max).contains(&value) {
            return Err(invalid(key, format!("{value} is out of range 1..={max}")));
        }
    }
    Ok(())
}

fn validate_server(s: &super::ServerConfig) -> Result<()> {
    if s.bind.parse::<std::net::SocketAddr>().is_err() {
        return Err(invalid(
            "server.bind",
            format!(
                "{:?} is not an address and port such as 127.0.0.1:8080",
                s.bind
            ),
        ));
    }
    for (key, value) in [
        ("server.api_key", &s.api_key),
        ("server.admin_api_key", &s.admin_api_key),
    ] {
        if !value.is_empty() && (value.len() < 16 || value.contains(char::is_whitespace)) {
            return Err(invalid(
                key,
                "must be empty or at least 16 characters without spaces".to_string(),
            ));
        }
    }
    if !s.admin_api_key.is_empty() && s.api_key.is_empty() {
        return Err(invalid(
            "server.admin_api_key",
            "is set but server.api_key is not: without server.api_key every endpoint is open, admin token or not; set server.api_key too".to_string(),
        ));
    }
    if !s.admin_api_key.is_empty() && s.admin_api_key == s.api_key {
        return Err(invalid(
            "server.admin_api_key",
            "equals server.api_key: every service client would be the administrator; give it its own value".to_string(),
        ));
    }
    if s.max_body_bytes < 1024 {
        return Err(invalid(
            "server.max_body_bytes",
            format!("{} is below the least useful size, 1024", s.max_body_bytes),
        ));
    }
    if !(s.shutdown_grace_seconds.is_finite() && (0.0..=3600.0).contains(&s.shutdown_grace_seconds))
    {
        return Err(invalid(
            "server.shutdown_grace_seconds",
            format!(
                "{} must be a number of seconds from 0 to 3600",
                s.shutdown_grace_seconds
            ),
        ));
    }
    if !(s.request_timeout.is_finite() && s.request_timeout > 0.0) {
        return Err(invalid(
            "server.request_timeout",
            format!("{} must be a number of seconds above 0", s.request_timeout),
        ));
    }
    if !(1..=1024).contains(&s.max_concurrency) {
        return Err(invalid(
            "server.max_concurrency",
            format!("{} is out of range 1..=1024", s.max_concurrency),
        ));
    }
    if s.watch.len() > MAX_WATCHED {
        return Err(invalid(
            "server.watch",
            format!(
                "{} paths; at most {MAX_WATCHED} (watch their common folder)",
                s.watch.len()
            ),
        ));
    }
    for (n, path) in s.watch.iter().enumerate() {
        if !path.exists() {
            return Err(invalid(
                &format!("server.watch[{n}]"),
                format!("{} does not exist", path.display()),
            ));
        }
    }
    Ok(())
}

/// Most paths `server.watch` may name.
pub const MAX_WATCHED: usize = 100;

fn validate_reader(c: &Config) -> Result<()> {
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
    Ok(())
}

/// The names in `mcp.tools` are checked by `McpServer::new` against the
/// tools it offers.
fn validate_mcp(m: &super::McpConfig) -> Result<()> {
    if !(m.timeout_seconds.is_finite() && m.timeout_seconds > 0.0) {
        return Err(invalid(
            "mcp.timeout_seconds",
            format!("{} must be a number of seconds above 0", m.timeout_seconds),
        ));
    }
    Ok(())
}

/// The Qdrant server keys: checked whatever the backend, so a mistake shows
/// before the day the backend is switched.
fn validate_qdrant_server(q: &super::QdrantConfig) -> Result<()> {
    let rest = q
        .url
        .strip_prefix("http://")
        .or_else(|| q.url.strip_prefix("https://"));
    let host = rest.map(|r| r.split(['/', '?', '#']).next().unwrap_or(""));
    match host {
        Some(h) if !h.is_empty() && !h.starts_with(':') && !h.contains(char::is_whitespace) => {}
        _ => {
            return Err(invalid(
                "qdrant.url",
                format!(
                    "{:?} is not an http(s) URL with a host, such as http://localhost:6334 (the gRPC port)",
                    q.url
                ),
            ));
        }
    }
    if q.api_key
        .chars()
        .any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(invalid(
            "qdrant.api_key",
            "must not contain spaces or control characters".to_string(),
        ));
    }
    if !(q.timeout_seconds.is_finite() && q.timeout_seconds > 0.0 && q.timeout_seconds <= 3600.0) {
        return Err(invalid(
            "qdrant.timeout_seconds",
            format!("{} is out of range (0, 3600]", q.timeout_seconds),
        ));
    }
    for (key, value) in [
        ("qdrant.shard_number", q.shard_number),
        ("qdrant.replication_factor", q.replication_factor),
        (
            "qdrant.write_consistency_factor",
            q.write_consistency_factor,
        ),
    ] {
        if value > 1000 {
            return Err(invalid(
                key,
                format!("{value} is out of range 0..=1000 (0: the server's default)"),
            ));
        }
    }
    if q.write_consistency_factor > q.replication_factor.max(1) {
        return Err(invalid(
            "qdrant.write_consistency_factor",
            format!(
                "{} is more than the replicas there are (qdrant.replication_factor {}): no write could ever be confirmed",
                q.write_consistency_factor,
                q.replication_factor.max(1)
            ),
        ));
    }
    Ok(())
}

/// The embedded store's index settings (`storage.*`).
fn validate_index(s: &super::StorageConfig) -> Result<()> {
    if !(s.oversampling.is_finite() && (1.0..=16.0).contains(&s.oversampling)) {
        return Err(invalid(
            "storage.oversampling",
            format!("{} is out of range 1..=16", s.oversampling),
        ));
    }
    let ranges: [(&str, usize, std::ops::RangeInclusive<usize>, &str); 4] = [
        ("storage.hnsw_m", s.hnsw_m, 4..=128, ""),
        (
            "storage.hnsw_ef_construct",
            s.hnsw_ef_construct,
            4..=4096,
            "",
        ),
        ("storage.hnsw_ef", s.hnsw_ef, 1..=4096, ""),
        (
            "storage.segment_points",
            s.segment_points,
            10_000..=100_000_000,
            " (the store indexes a segment from ~6,700 points: smaller ones would never be)",
        ),
    ];
    for (key, value, range, why) in ranges {
        if !range.contains(&value) {
            return Err(invalid(
                key,
                format!(
                    "{value} is out of range {}..={}{why}",
                    range.start(),
                    range.end()
                ),
            ));
        }
    }
    Ok(())
}
