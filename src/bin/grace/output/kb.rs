//! What the knowledge base holds and finds: ingest reports (one-off and
//! `--watch` batches), search results, `grace status`, `grace config` and
//! `grace migrate`'s report.

use grace::config::Quantization;
use grace::ingest::IngestReport;
use grace::migrate::MigrateReport;
use grace::tools::stats::ToolUsage;
use grace::{Config, Passage, Status};
use serde::Serialize;

use super::tools::{UsageLine, figures, usage_lines};
use super::{display_path, num, print_json, print_json_line, snippet};

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

pub fn status(
    s: &Status,
    tools: &[(String, ToolUsage)],
    learning: Option<&grace::learn::auto::FeedbackCalibration>,
    json: bool,
) {
    if json {
        #[derive(Serialize)]
        struct View<'a> {
            #[serde(flatten)]
            status: &'a Status,
            tools: Vec<UsageLine<'a>>,
            #[serde(skip_serializing_if = "Option::is_none")]
            feedback_calibration: Option<&'a grace::learn::auto::FeedbackCalibration>,
        }
        print_json(&View {
            status: s,
            tools: usage_lines(tools),
            feedback_calibration: learning,
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
    if let Some(l) = learning {
        println!("{}", learning_line(l));
    }
    for (name, usage) in tools {
        println!("tool         {name}: {}", figures(usage));
    }
}

/// How GRACE learns from feedback, in a line: the labels, the next refit,
/// the last one and whether it was kept.
fn learning_line(l: &grace::learn::auto::FeedbackCalibration) -> String {
    use grace::config::FeedbackCalibrationMode;
    let mut line = match l.mode {
        FeedbackCalibrationMode::Off => format!(
            "learning     off (confidence.feedback_calibration): {} labels kept for `grace calibrate --from-feedback`",
            l.labels
        ),
        FeedbackCalibrationMode::Auto => format!(
            "learning     {} labels from people; the next refit at {}",
            l.labels, l.next_refit_at
        ),
    };
    if let Some(last) = l.history.last() {
        line.push_str(&format!(
            "; last refit {} on {} labels: {} ({})",
            last.at.format("%Y-%m-%d %H:%M"),
            last.labels,
            if last.kept { "kept" } else { "not kept" },
            last.why
        ));
    }
    line
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

/// What `grace migrate` copied, and how to use the copy.
pub fn migrate_report(r: &MigrateReport) {
    println!(
        "Copied {} chunks ({} sources, {}-d vectors) from {} to {} in {:.1} s{}.",
        r.points,
        r.sources,
        r.dimension,
        r.from,
        r.to,
        r.seconds,
        if r.replaced {
            " (the old collection was deleted first)"
        } else {
            ""
        }
    );
    if r.retries > 0 {
        println!(
            "{} write(s) failed for a moment and were tried again (writes are idempotent: nothing duplicated).",
            r.retries
        );
    }
    match &r.manifest {
        Some(m) => println!("Manifest copied to {}.", m.display()),
        None => {
            println!("The source had no manifest: the next ingest writes every file once more.")
        }
    }
    match r.to_backend {
        "qdrant" => {
            let url = r.to.split("/collections/").next().unwrap_or(&r.to);
            println!(
                "To use it: set storage.backend: qdrant and qdrant.url: {url} (or GRACE_STORAGE__BACKEND=qdrant GRACE_QDRANT__URL={url})."
            );
        }
        _ => println!("To use it: set storage.backend: edge (the default)."),
    }
}
