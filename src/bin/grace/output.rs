//! Rendering results for people (plain text) and machines (`--json`).

use std::error::Error as _;

use grace::confidence::calibration::Calibration;
use grace::config::Quantization;
use grace::eval::{EvalReport, Separation};
use grace::exec::{Decision, RunReport};
use grace::ingest::IngestReport;
use grace::plan::PlanOrigin;
use grace::review::{AuditEntry, Escalation, Message, Outcome};
use grace::tools::stats::ToolUsage;
use grace::{Config, Passage, Status};
use serde::Serialize;

/// A path as the user would type it: relative to the current folder when
/// it lies below it.
pub fn display_path(path: &str) -> String {
    let p = std::path::Path::new(path);
    match std::env::current_dir() {
        Ok(cwd) => p
            .strip_prefix(&cwd)
            .map(|r| r.display().to_string())
            .unwrap_or_else(|_| path.to_string()),
        Err(_) => path.to_string(),
    }
}

/// A reply to GRACE's question: the option a number names, else the text.
pub fn chosen(options: &[String], line: &str) -> String {
    line.parse::<usize>()
        .ok()
        .and_then(|n| options.get(n.wrapping_sub(1)))
        .cloned()
        .unwrap_or_else(|| line.to_string())
}

/// One value as one line of JSON (`grace chat --json`: a line per turn).
pub fn print_json_line<T: Serialize>(value: &T) {
    match serde_json::to_string(value) {
        Ok(s) => println!("{s}"),
        Err(e) => eprintln!("error: cannot render JSON: {e}"),
    }
}

fn print_json<T: Serialize>(value: &T) {
    match serde_json::to_string_pretty(value) {
        Ok(s) => println!("{s}"),
        Err(e) => eprintln!("error: cannot render JSON: {e}"),
    }
}

/// Prints an error with its causes, on stderr (and as JSON on stdout with `--json`).
pub fn error(e: &grace::Error, json: bool) {
    let mut message = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = s.source();
    }
    if json {
        print_json(&serde_json::json!({
            "error": { "message": message, "exit_code": e.exit_code() }
        }));
    }
    eprintln!("error: {message}");
}

/// One batch of `grace ingest --watch`: a line of text, or of JSON.
pub fn watch_batch(
    batch: &grace::watch::Batch,
    r: &IngestReport,
    took: std::time::Duration,
    json: bool,
    quiet: bool,
) {
    if json {
        print_json_line(&serde_json::json!({
            "changes": batch.events,
            "rescan": batch.rescan,
            "paths": batch.sample,
            "seconds": took.as_secs_f64(),
            "report": r,
        }));
        return;
    }
    if quiet {
        return;
    }
    let names: Vec<String> = batch
        .sample
        .iter()
        .map(|p| display_path(&p.to_string_lossy()))
        .collect();
    let more = if batch.events > names.len() {
        ", …"
    } else {
        ""
    };
    println!(
        "{} change(s) ({}{more}): {} added, {} updated, {} removed, {} skipped in {:.1} s; {} chunks",
        batch.events,
        names.join(", "),
        r.added,
        r.updated,
        r.removed.len(),
        r.skipped.len(),
        took.as_secs_f64(),
        r.points_total
    );
    for skipped in &r.skipped {
        println!(
            "  skipped {}: {}",
            display_path(&skipped.path.to_string_lossy()),
            skipped.reason
        );
    }
}

pub fn ingest_report(r: &IngestReport, collection: &str, json: bool) {
    if json {
        print_json(r);
        return;
    }
    println!(
        "{} files: {} added, {} updated, {} unchanged, {} skipped, {} removed",
        r.files_seen,
        r.added,
        r.updated,
        r.unchanged,
        r.skipped.len(),
        r.removed.len()
    );
    let rate = if r.embed_secs > 0.0 {
        format!(", embedding {:.1} s", r.embed_secs)
    } else {
        String::new()
    };
    println!(
        "{} chunks written in {:.1} s{rate}; collection `{collection}` holds {} chunks",
        r.chunks_written, r.elapsed_secs, r.points_total
    );
    if r.store_retries > 0 {
        println!(
            "the store failed {} write(s) for a moment; each was tried again and applied (writes are idempotent: nothing duplicated)",
            r.store_retries
        );
    }
    if !r.skipped.is_empty() {
        println!("skipped:");
        for s in &r.skipped {
            println!(
                "  {}: {}",
                display_path(&s.path.to_string_lossy()),
                s.reason
            );
        }
    }
    if !r.removed.is_empty() {
        println!("removed:");
        for s in &r.removed {
            println!("  {}", display_path(s));
        }
    }
}

pub fn passages(passages: &[Passage], json: bool) {
    if json {
        print_json(&passages);
        return;
    }
    if passages.is_empty() {
        println!("no passages found");
        return;
    }
    for (i, p) in passages.iter().enumerate() {
        let mut section = p.page.map(|n| format!(" p. {n}")).unwrap_or_default();
        if !p.section.is_empty() {
            section.push_str(&format!(" § {}", p.section));
        }
        let via = match (p.dense_rank, p.lexical_rank) {
            (Some(_), Some(_)) => "dense+lexical",
            (Some(_), None) => "dense",
            (None, Some(_)) => "lexical",
            (None, None) => "",
        };
        let reader = p
            .reader_score
            .map(|r| format!(", reader {r:.2}"))
            .unwrap_or_default();
        let pinned = if p.pinned { ", identifier match" } else { "" };
        println!(
            "{}. [{:.3}] {}{section}  (chunk {}, {via}{reader}{pinned})",
            i + 1,
            p.score,
            display_path(&p.source),
            p.chunk_index
        );
        println!("   {}", snippet(&p.text, 320));
    }
}

fn snippet(text: &str, max_chars: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max_chars {
        flat
    } else {
        let cut: String = flat.chars().take(max_chars).collect();
        format!("{}…", cut.trim_end())
    }
}

pub fn status(s: &Status, tools: &[(String, ToolUsage)], json: bool) {
    if json {
        #[derive(Serialize)]
        struct View<'a> {
            #[serde(flatten)]
            status: &'a Status,
            tools: Vec<crate::tools::UsageLine<'a>>,
        }
        print_json(&View {
            status: s,
            tools: crate::tools::usage_lines(tools),
        });
        return;
    }
    println!("collection   {} ({} backend)", s.collection, s.backend);
    println!("path         {}", s.path.display());
    println!(
        "chunks       {} in {} sources ({} vectors indexed, {} segments)",
        s.store.points, s.sources, s.store.indexed_vectors, s.store.segments
    );
    if let Some(index) = &s.index {
        println!("index        {}", index_line(&index.built));
        if index.rebuild_pending {
            println!(
                "             storage.* now asks for other index settings: the next `grace ingest` rebuilds the index with them"
            );
        }
    }
    if s.pending_sources > 0 {
        println!(
            "pending      {} sources left half-written by an interrupted ingest; the next ingest repairs them",
            s.pending_sources
        );
    }
    match (&s.model, &s.model_error) {
        (Some(m), _) => println!(
            "model        {m} ({}d store) from {}; reads {}",
            s.store.dimension,
            s.model_dir.display(),
            s.model_languages.as_deref().unwrap_or("English")
        ),
        (None, Some(e)) => println!("model        unavailable: {e}"),
        (None, None) => println!("model        unknown"),
    }
    if let Some(p) = &s.pipeline {
        println!("built with   {p}");
    }
    println!(
        "search       {}",
        if s.hybrid {
            "hybrid (dense cosine + weighted BM25)"
        } else {
            "dense"
        }
    );
    let c = &s.confidence;
    match &c.fit {
        Some(fit) => {
            println!(
                "confidence   {} weights, fitted {} on {} questions (out of fold: ECE {}, AUROC {}); {:.0}% of documents changed since{}",
                c.weights,
                fit.created,
                fit.questions,
                num(fit.ece),
                num(fit.auroc),
                fit.changed_share * 100.0,
                if fit.stale {
                    match c.weights {
                        "self" => {
                            ": stale, `grace calibrate --self` (or the next ingest) fits it again"
                        }
                        _ => ": stale, run `grace calibrate` again",
                    }
                } else {
                    ""
                }
            );
            println!("             {}", fit.file.display());
        }
        None => println!(
            "confidence   {} weights ({})",
            c.weights,
            c.note.as_deref().unwrap_or("")
        ),
    }
    for (name, usage) in tools {
        println!("tool         {name}: {}", crate::tools::figures(usage));
    }
}

/// How an embedded store's index is built, in a line.
fn index_line(i: &grace::store::edge::IndexSettings) -> String {
    let place = |on_disk: bool| if on_disk { "on disk" } else { "in memory" };
    let full = place(i.vectors_on_disk);
    let vectors = match i.quantization {
        Quantization::None => format!("vectors {full}"),
        Quantization::Int8 => format!("int8 vectors in memory, full vectors {full}"),
        Quantization::Binary => format!("binary vectors in memory, full vectors {full}"),
    };
    format!(
        "{vectors}; lexical index {}; HNSW m {}, ef_construct {}; segments of up to {} points",
        place(i.lexical_on_disk),
        i.hnsw_m,
        i.hnsw_ef_construct,
        i.segment_points
    )
}

pub fn config(c: &Config, json: bool) -> grace::Result<()> {
    // Secrets are shown as set or not, never printed.
    let mut c = c.clone();
    for key in [
        &mut c.server.api_key,
        &mut c.server.admin_api_key,
        &mut c.qdrant.api_key,
    ] {
        if !key.is_empty() {
            *key = "<set>".to_string();
        }
    }
    let c = &c;
    if json {
        print_json(c);
    } else {
        print!("{}", c.to_yaml()?);
    }
    Ok(())
}

fn pct(x: Option<f64>) -> String {
    x.map(|v| format!("{:.1}%", v * 100.0))
        .unwrap_or_else(|| "n/a".into())
}

fn num(x: Option<f64>) -> String {
    x.map(|v| format!("{v:.3}")).unwrap_or_else(|| "n/a".into())
}

fn separation_line(name: &str, s: &Separation) {
    println!(
        "  {name:<22} AUROC {} (in-domain {}); unanswerable passing at 80% / 90% answerable kept: {} / {} (in-domain at 90%: {})",
        num(s.auroc),
        num(s.auroc_in_domain),
        pct(s.unanswerable_passing_at_80),
        pct(s.unanswerable_passing_at_90),
        pct(s.in_domain_passing_at_90)
    );
}

/// `grace eval --conversations`: follow-ups with and without their history.
pub fn conversation_report(r: &grace::eval::conversations::ConversationReport, json: bool) {
    if json {
        print_json(r);
        return;
    }
    println!(
        "{} over {}: {} conversations, {} turns, {} follow-ups ({} answerable, {} unanswerable); {} rewritten",
        r.conversations_file.display(),
        r.set.display(),
        r.conversations,
        r.turns,
        r.follow_ups,
        r.follow_ups_answerable,
        r.follow_ups_unanswerable,
        r.rewritten
    );
    println!("follow-ups            with history   asked alone");
    println!(
        "  recall@{:<2}              {:>8}      {:>8}",
        r.k,
        pct(r.recall_at_k_with_history),
        pct(r.recall_at_k_alone)
    );
    println!(
        "  answerable answered     {:>8}      {:>8}",
        pct(r.answered_with_history),
        pct(r.answered_alone)
    );
    println!(
        "  unanswerable answered   {:>8}      {:>8}   (the worst outcome)",
        pct(r.unanswerable_answered_with_history),
        pct(r.unanswerable_answered_alone)
    );
    println!(
        "first turns: recall@{} {}",
        r.k,
        pct(r.first_turn_recall_at_k)
    );
}

pub fn eval_report(r: &EvalReport, json: bool) {
    if json {
        print_json(r);
        return;
    }
    println!(
        "{}: {} questions ({} answerable, {} unanswerable in-domain, {} out-of-domain), {} chunks{}",
        r.set.display(),
        r.questions,
        r.answerable,
        r.unanswerable_in_domain,
        r.unanswerable_out_of_domain,
        r.chunks,
        if r.backend == "edge" {
            ""
        } else {
            " (on the Qdrant server)"
        }
    );
    println!(
        "retrieval: recall@1 {:.3}, recall@{} {:.3}",
        r.recall_at_1, r.k, r.recall_at_k
    );
    println!(
        "answers: {} of questions answered; {} of answers right (answerable, gold source cited); {} of unanswerable questions answered ({} of {} in-domain, {} of {} out-of-domain)",
        pct(Some(r.answered)),
        pct(Some(r.answered_right)),
        pct(Some(r.unanswerable_answered)),
        r.unanswerable_answered_in_domain,
        r.unanswerable_in_domain,
        r.unanswerable_answered_out_of_domain,
        r.unanswerable_out_of_domain
    );
    println!("separating answerable from unanswerable questions:");
    separation_line("top-1 cosine", &r.top1_cosine);
    if let Some(reader) = &r.reader_top {
        separation_line("reader (best passage)", reader);
    }
    separation_line("answer confidence", &r.answer_confidence);
    println!(
        "calibration of the answer confidence: ECE {} (10 bins), Brier {}",
        num(r.ece),
        num(r.brier)
    );
    if let Some(s) = &r.self_calibration {
        println!(
            "self-calibrated first: {} questions built from the corpus ({} answerable, {} with their section withheld, {} general) in {:.0} s; out of fold on them ECE {}, AUROC {}",
            s.questions,
            s.answerable,
            s.in_domain,
            s.out_of_domain,
            s.seconds,
            num(s.cross_validated.ece),
            num(s.cross_validated.auroc)
        );
    }
    if !r.models.is_empty() {
        println!(
            "confidence models on the final answers (right = answerable and gold source cited):"
        );
        println!(
            "  {:<15} {:>6} {:>7} {:>6} {:>6} {:>8}  how",
            "model", "ECE", "chance", "Brier", "AUROC", "log loss"
        );
        for m in &r.models {
            println!(
                "  {:<15} {:>6} {:>7} {:>6} {:>6} {:>8}  {}",
                m.model,
                num(m.fare.ece),
                m.ece_floor.map_or("-".into(), |f| format!("≤{:.3}", f.p95)),
                num(m.fare.brier),
                num(m.fare.auroc),
                num(m.fare.log_loss),
                m.note
            );
        }
        println!(
            "  (chance: the ECE a perfectly calibrated model with these scores reaches by chance on this many questions, 95th percentile)"
        );
        println!("coverage / risk (share answered / share of answered wrong) by threshold:");
        print!("  {:<15}", "threshold");
        for t in [0.3, 0.5, 0.7, 0.8, 0.9] {
            print!(" {:>11}", format!("{t:.1}"));
        }
        println!();
        for m in &r.models {
            print!("  {:<15}", m.model);
            for t in [0.3, 0.5, 0.7, 0.8, 0.9] {
                match m
                    .coverage_risk
                    .iter()
                    .find(|p| (p.threshold - t).abs() < 1e-9)
                {
                    Some(p) => print!(" {:>11}", format!("{:.2}/{:.2}", p.coverage, p.risk)),
                    None => print!(" {:>11}", "-"),
                }
            }
            println!();
        }
    }
    println!(
        "latency per question (whole ask): p50 {} ms, p95 {} ms",
        r.latency_p50_ms
            .map(|v| format!("{v:.1}"))
            .unwrap_or_else(|| "n/a".into()),
        r.latency_p95_ms
            .map(|v| format!("{v:.1}"))
            .unwrap_or_else(|| "n/a".into())
    );
}

/// What `grace calibrate` fitted, and how to use it.
/// What `grace calibrate --self` did.
pub fn self_calibration(outcome: &grace::selfcal::Outcome, config: &grace::Config, json: bool) {
    use grace::selfcal::Outcome;
    match outcome {
        Outcome::Fitted {
            calibration, path, ..
        } => {
            calibration_figures(calibration, json);
            if !json {
                println!("written to {}", path.display());
                if config.confidence.calibration.is_some() {
                    println!(
                        "note: confidence.calibration names a labelled calibration, which is used instead"
                    );
                } else if config.confidence.self_calibration.mode
                    == grace::config::SelfCalibrationMode::Off
                {
                    println!(
                        "note: confidence.self_calibration.mode is off: this fit is used once it is auto"
                    );
                }
            }
        }
        Outcome::TooSmall { usable, min } => {
            if json {
                print_json(&serde_json::json!({
                    "fitted": false,
                    "usable_sections": usable,
                    "min_sections": min,
                }));
            } else {
                println!(
                    "too small to self-calibrate: {usable} sections to ask about, fewer than confidence.self_calibration.min_sections ({min}); the configured weights are kept"
                );
            }
        }
    }
}

/// One line on stderr after an ingest that fitted the knowledge base again.
pub fn self_calibration_note(outcome: &grace::selfcal::Outcome, quiet: bool) {
    use grace::selfcal::Outcome;
    if quiet {
        return;
    }
    match outcome {
        Outcome::Fitted {
            calibration, path, ..
        } => eprintln!(
            "grace: self-calibrated on {} of its own questions (out of fold: ECE {}, AUROC {}) in {:.0} s -> {}",
            calibration.fitted_on.questions,
            num(calibration.cross_validated.ece),
            num(calibration.cross_validated.auroc),
            calibration
                .self_calibration
                .as_ref()
                .map_or(0.0, |s| s.seconds),
            path.display()
        ),
        Outcome::TooSmall { usable, min } => eprintln!(
            "grace: too small to self-calibrate ({usable} sections, fewer than {min}); the configured confidence weights are kept"
        ),
    }
}

pub fn calibration(c: &Calibration, path: &std::path::Path, json: bool) {
    calibration_figures(c, json);
    if !json {
        println!(
            "wrote {}; to use it set `confidence.calibration: {}` in grace_config.yml (or GRACE_CONFIDENCE__CALIBRATION={})",
            path.display(),
            path.display(),
            path.display()
        );
    }
}

/// A calibration's provenance, folds and weights.
fn calibration_figures(c: &Calibration, json: bool) {
    if json {
        print_json(c);
        return;
    }
    let on = &c.fitted_on;
    if let Some(s) = &c.self_calibration {
        println!(
            "self-calibration: {} sections, seed {}; {} answerable questions ({} headings that are questions, {} made from headings, {} from text{}), {} with their section withheld, {} general; {:.0} s",
            s.sections,
            s.seed,
            s.answerable,
            s.from_heading_question,
            s.from_heading,
            s.from_text,
            if s.from_model > 0 {
                format!(", {} written by the model", s.from_model)
            } else {
                String::new()
            },
            s.in_domain,
            s.out_of_domain,
            s.seconds
        );
    }
    println!(
        "fitted on {}: {} questions, {} documents, collection `{}`, model `{}`, generator `{}`",
        on.set.display(),
        on.questions,
        on.sources.len(),
        on.collection,
        on.embedding_model,
        on.generator
    );
    println!(
        "cross-validation: {} stratified folds, L2 {} (lowest held-out log loss)",
        c.folds, c.l2
    );
    println!(
        "  {:<6} {:>4} {:>5} {:>6} {:>6} {:>6}",
        "fold", "n", "right", "ECE", "Brier", "AUROC"
    );
    for (i, f) in c.fold_figures.iter().enumerate() {
        println!(
            "  {:<6} {:>4} {:>5} {:>6} {:>6} {:>6}",
            i + 1,
            f.n,
            f.right,
            num(f.ece),
            num(f.brier),
            num(f.auroc)
        );
    }
    for (name, f) in [
        ("fitted, out of fold", &c.cross_validated),
        ("configured weights", &c.hand_set),
    ] {
        println!(
            "{name}: ECE {}, Brier {}, AUROC {}, log loss {}",
            num(f.ece),
            num(f.brier),
            num(f.auroc),
            num(f.log_loss)
        );
    }
    let w = &c.weights;
    println!("fitted weights: bias {:.3}", w.bias);
    for factor in grace::confidence::Factor::ALL {
        let weight = factor.weight(w);
        if weight.abs() >= 5e-4 {
            println!("  {:<18} {weight:>8.3}", format!("{factor:?}"));
        }
    }
}

/// The run as JSON, with the review queue's id when it was escalated.
pub fn run_report_with_review(r: &RunReport, review_id: Option<i64>) {
    let mut value = serde_json::to_value(r).unwrap_or(serde_json::Value::Null);
    if let (Some(id), Some(map)) = (review_id, value.as_object_mut()) {
        map.insert("review_id".into(), id.into());
    }
    print_json(&value);
}

pub fn run_report(r: &RunReport, trace: bool, json: bool) {
    if json {
        print_json(r);
        return;
    }
    let level = format!("{:?}", r.level).to_lowercase();
    // GRACE's own words in the asker's language.
    let texts = grace::lang::Lang::of(&r.question).texts();
    let confidence = format!("{:.2}", r.confidence);
    let with_confidence = |t: &str| grace::lang::fill(t, &[("confidence", &confidence)]);
    match r.decision {
        Decision::Answer | Decision::Caveat => {
            if r.decision == Decision::Caveat {
                println!("{}\n", with_confidence(texts.caveat));
            }
            if let Some(a) = &r.answer {
                println!("{}", a.text);
                print_citations(a);
            }
        }
        Decision::NeedsInput => {
            if let Some(req) = &r.clarification {
                println!("{}{}", texts.needs_input, req.question);
                println!("{}{}", texts.why, req.reason);
                for (i, o) in req.options.iter().enumerate() {
                    println!("  {}. {o}", i + 1);
                }
            }
        }
        Decision::Escalate => {
            println!("{}", with_confidence(texts.escalated));
            if let Some(req) = &r.escalation {
                println!("\n{}{}", texts.question_for_reviewer, req.question);
                println!("{}{}", texts.reason, req.reason);
                for (i, o) in req.options.iter().enumerate() {
                    println!("  {}. {o}", i + 1);
                }
            }
        }
        Decision::Decline => match r.steps.iter().find(|s| !s.result.success) {
            Some(failed) => println!(
                "{}",
                grace::lang::fill(
                    texts.failed,
                    &[
                        ("step", &failed.id),
                        (
                            "error",
                            failed.result.error.as_deref().unwrap_or("unknown error")
                        ),
                    ]
                )
            ),
            None => println!("{}", with_confidence(texts.declined)),
        },
    }
    println!(
        "\nconfidence {:.2} ({level}) -> {}{}",
        r.confidence,
        format!("{:?}", r.decision).to_lowercase(),
        if r.recovered {
            " (after a wider search)"
        } else {
            ""
        }
    );
    if trace {
        println!("\ntrace:");
        if let Some(rw) = &r.rewrite {
            let by = match rw.by {
                grace::followup::RewriteBy::Model => "by the model",
                grace::followup::RewriteBy::Rule => {
                    "by the rule: the previous question's key terms"
                }
            };
            println!("  follow-up read as: {:?} ({by})", rw.question);
        }
        match &r.plan {
            PlanOrigin::Default => println!("  plan: default (search, then answer)"),
            PlanOrigin::Llm { generator, usage } => println!(
                "  plan: by {generator} ({} input + {} output tokens)",
                usage.input_tokens, usage.output_tokens
            ),
            PlanOrigin::Fallback { generator, reason } => {
                println!("  plan: default, because {generator}'s plan could not be used: {reason}")
            }
            PlanOrigin::Hint { hint } => {
                println!("  plan: search, a second search for the reviewer's hint {hint:?}, answer")
            }
            PlanOrigin::Agent { generator } => {
                println!(
                    "  plan: none; the agent ({generator}) chose each step after reading the last"
                )
            }
        }
        if let Some(a) = &r.agent {
            agent_trace(a);
        }
        if r.recovered {
            println!("  (the steps below are the recovery run: the same question, more passages)");
        }
        for s in &r.steps {
            let how = match s.confidence.model {
                grace::config::ConfidenceModel::Logistic => format!(
                    "logit {:.2} = bias {:.2} + terms",
                    s.confidence.logit, s.confidence.bias
                ),
                grace::config::ConfidenceModel::GraceV1 => {
                    "grace_v1: the sum of the terms, a weighted mean".to_string()
                }
            };
            println!(
                "  {} ({}): {} in {:.0} ms, {} attempt(s), step confidence {:.3} ({how})",
                s.id,
                s.action,
                if s.result.success { "ok" } else { "failed" },
                s.result.duration.as_secs_f64() * 1000.0,
                s.result.attempts,
                s.confidence.score,
            );
            if let Some(e) = &s.result.error {
                println!("      error: {e}");
            }
            if let grace::tools::ToolOutput::Passages(ps) = &s.result.output {
                for (i, p) in ps.iter().enumerate() {
                    let reader = p
                        .reader_score
                        .map(|r| format!("reader {r:.3}"))
                        .unwrap_or_else(|| "reader -".into());
                    let rank = |r: Option<usize>| r.map_or("-".to_string(), |r| format!("#{r}"));
                    println!(
                        "      [{}] {reader}  cosine {:.3}  dense {} lexical {}{}  {}",
                        i + 1,
                        p.score,
                        rank(p.dense_rank),
                        rank(p.lexical_rank),
                        if p.pinned { "  identifier match" } else { "" },
                        display_path(&p.source)
                    );
                }
            }
            if let grace::tools::ToolOutput::Answer(a) = &s.result.output
                && a.usage.input_tokens + a.usage.output_tokens > 0
            {
                println!(
                    "      {}: {} input + {} output tokens",
                    a.generator, a.usage.input_tokens, a.usage.output_tokens
                );
            }
            for c in &s.confidence.contributions {
                println!(
                    "      {:<18} value {:>7.3}  feature {:>7.3}  x weight {:>6.2} = {:>7.3}",
                    format!("{:?}", c.factor),
                    c.value,
                    c.feature,
                    c.weight,
                    c.term
                );
            }
        }
    }
}

fn print_citations(a: &grace::tools::Answer) {
    if a.citations.is_empty() {
        return;
    }
    // In the answer's language (a Japanese answer: 出典).
    println!("\n{}", grace::lang::Lang::of(&a.text).texts().sources);
    for c in &a.citations {
        let source = c
            .source
            .as_deref()
            .map(display_path)
            .unwrap_or_else(|| "(unnamed)".into());
        let page = c.page.map(|n| format!(" p. {n}")).unwrap_or_default();
        match &c.section {
            Some(sec) => println!("  [{}] {source}{page} § {sec}", c.number),
            None => println!("  [{}] {source}{page}", c.number),
        }
    }
}

/// The agent's turns: thought, calls and what came of them, the answer,
/// and why it stopped.
fn agent_trace(a: &grace::agent::AgentTrace) {
    for t in &a.turns {
        println!(
            "  turn {} ({} + {} tokens, stop {:?}):",
            t.turn, t.usage.input_tokens, t.usage.output_tokens, t.stop_reason
        );
        if let Some(thought) = &t.thought {
            println!("    think: {thought}");
        }
        for c in &t.calls {
            println!("    act:   {} {}", c.call.name, c.call.arguments);
            println!("    observe: {}", c.summary);
        }
        if let Some(answer) = &t.answer {
            println!("    answer: {answer}");
        }
    }
    let stop = match &a.stop {
        grace::agent::AgentStop::ModelFailed(e) => format!("model failed: {e}"),
        other => format!("{other:?}").to_lowercase(),
    };
    println!(
        "  agent stopped: {stop} after {} turn(s), {} + {} tokens, {:.1} s",
        a.turns.len(),
        a.usage.input_tokens,
        a.usage.output_tokens,
        a.seconds
    );
}

/// What a human's reply made of an escalated run.
pub fn human_decision(r: &RunReport) {
    let who = r.decided_by.as_deref().unwrap_or("a human");
    match (r.decision, &r.answer) {
        (Decision::Answer, Some(a)) => {
            println!("\nAnswer (decided by {who}):\n{}", a.text);
            print_citations(a);
        }
        (Decision::Decline, _) => {
            println!("\nRecorded (by {who}): the knowledge base does not answer this.")
        }
        _ => println!("\nLeft escalated."),
    }
}

/// Prints `value` as JSON with `--json`, else runs `text`.
pub fn json_or<T: Serialize>(json: bool, value: &T, text: impl FnOnce()) {
    if json {
        print_json(value);
    } else {
        text();
    }
}

fn when(t: &chrono::DateTime<chrono::Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%S UTC").to_string()
}

/// A table of escalations.
pub fn escalations(list: &[Escalation], json: bool) {
    json_or(json, &list, || {
        if list.is_empty() {
            println!("no escalations");
            return;
        }
        println!(
            "{:>5}  {:<9}  {:<10}  {:>5}  {:<20}  question",
            "id", "status", "claimed", "conf", "expires"
        );
        for e in list {
            println!(
                "{:>5}  {:<9}  {:<10}  {:>5.2}  {:<20}  {}",
                e.id,
                e.status.as_str(),
                e.claimed_by.as_deref().unwrap_or("-"),
                e.run.confidence,
                e.expires_at.format("%Y-%m-%d %H:%M"),
                snippet(&e.question, 60)
            );
        }
    });
}

/// One escalation with what a reviewer needs to answer it.
pub fn escalation(e: &Escalation, json: bool) {
    json_or(json, e, || {
        println!(
            "Escalation #{} ({}), asked by {} in `{}`",
            e.id, e.status, e.asker, e.collection
        );
        println!("Question: {}", e.question);
        println!("Why: {}", e.reason);
        if let Some(c) = &e.claimed_by {
            println!("Claimed by: {c}");
        }
        if let Some(allowed) = &e.allowed {
            println!("Restricted to: {}", allowed.join(", "));
        }
        println!(
            "Created {}, expires {}",
            when(&e.created_at),
            when(&e.expires_at)
        );
        if let Some(step) = e
            .run
            .steps
            .iter()
            .rev()
            .find(|s| !s.confidence.contributions.is_empty())
        {
            println!(
                "\nConfidence {:.2}; factors of step `{}`:",
                e.run.confidence, step.id
            );
            for c in &step.confidence.contributions {
                println!(
                    "  {:<18} {:>7.3} (weight {:>6.2})",
                    format!("{:?}", c.factor),
                    c.value,
                    c.weight
                );
            }
        }
        let passages: Vec<&Passage> = e
            .run
            .steps
            .iter()
            .filter_map(|s| match &s.result.output {
                grace::tools::ToolOutput::Passages(p) => Some(p),
                _ => None,
            })
            .flatten()
            .collect();
        if !passages.is_empty() {
            println!("\nSources GRACE found:");
            for (i, p) in passages.iter().enumerate().take(5) {
                println!(
                    "  [{}] {:.3} {} § {}\n      {}",
                    i + 1,
                    p.score,
                    display_path(&p.source),
                    p.section,
                    snippet(&p.text, 160)
                );
            }
        }
        println!("\nOptions:");
        for (i, o) in e.request.options.iter().enumerate() {
            println!("  {}. {o}", i + 1);
        }
        if let Some(r) = &e.resolution {
            println!(
                "\nSettled: {:?} by {} at {}",
                r.outcome,
                r.decided_by,
                when(&r.at)
            );
            if let Some(n) = &r.note {
                println!("Note: {n}");
            }
        }
    });
}

/// The audit log of an escalation.
pub fn audit(entries: &[AuditEntry], json: bool) {
    json_or(json, &entries, || {
        for a in entries {
            let change = match (a.from, a.to) {
                (Some(f), Some(t)) if f != t => format!("{f} -> {t}"),
                (None, Some(t)) => format!("-> {t}"),
                _ => String::new(),
            };
            println!(
                "{}  {:<10} {:<10} {:<22} {}",
                when(&a.at),
                a.actor,
                a.action,
                change,
                a.detail
            );
        }
    });
}

/// A reviewer's messages.
pub fn messages(list: &[Message], json: bool) {
    json_or(json, &list, || {
        if list.is_empty() {
            println!("no messages");
        }
        for m in list {
            println!(
                "{:>5}  {:<8}  {}  from {}{}: {}\n       {}",
                m.id,
                format!("{:?}", m.status).to_lowercase(),
                when(&m.created_at),
                m.sender,
                if m.recipient.is_none() {
                    " (to all)"
                } else {
                    ""
                },
                m.subject,
                snippet(&m.body, 200)
            );
        }
    });
}

/// The asker's view of an escalation: the answer once there is one.
pub fn asker_view(e: &Escalation, json: bool) {
    if json {
        print_json(&serde_json::json!({
            "id": e.id,
            "status": e.status,
            "question": e.question,
            "resolution": e.resolution,
        }));
        return;
    }
    let Some(r) = &e.resolution else {
        println!(
            "Escalation #{} is {}{}; no answer yet (expires {}).",
            e.id,
            e.status,
            e.claimed_by
                .as_deref()
                .map(|c| format!(" by {c}"))
                .unwrap_or_default(),
            when(&e.expires_at)
        );
        return;
    };
    match (&r.outcome, &r.report) {
        (Outcome::Answered, Some(report)) | (Outcome::ProceededUnreviewed, Some(report)) => {
            if let Some(n) = &r.note {
                println!("Note: {n}\n");
            }
            if let Some(a) = &report.answer {
                println!("{}", a.text);
                print_citations(a);
            }
            println!(
                "\nconfidence {:.2} -> {}, decided by {}",
                report.confidence,
                format!("{:?}", report.decision).to_lowercase(),
                r.decided_by
            );
            if let Some(p) = &r.promoted {
                println!("promoted to the knowledge base as {}", display_path(p));
            }
        }
        _ => println!(
            "Escalation #{} was {} by {}: {}",
            e.id,
            e.status,
            r.decided_by,
            r.note.as_deref().unwrap_or("no reason given")
        ),
    }
}
