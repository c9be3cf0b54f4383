//! `grace ingest`: add or update documents with a progress bar, then, with
//! `--watch`, keep following the files and ingest each batch of changes.

use std::path::PathBuf;
use std::sync::Arc;

use grace::access::Readers;
use grace::config::Config;
use grace::ingest::{IngestEvent, IngestOptions};
use grace::{KnowledgeBase, OpenMode};

use crate::cli::Cli;
use crate::output;
use crate::progress::{count_bar, progress_bar};

/// Runs `grace ingest PATHS [--prune] [--watch]`.
pub fn run(
    cli: &Cli,
    config: Config,
    paths: &[PathBuf],
    prune: bool,
    watch: bool,
    access: Option<Readers>,
) -> grace::Result<()> {
    // Patterns cannot be followed: refused before any work.
    let roots = if watch { Some(watched(paths)?) } else { None };
    let kb = Arc::new(KnowledgeBase::open(config, OpenMode::Create)?);
    // Watching from before the first ingest: what changes while it
    // runs is the first batch, not lost.
    let watcher = match &roots {
        Some(roots) => Some(grace::watch::Watch::start(
            roots,
            &grace::watch::WatchOptions::for_config(kb.config()),
        )?),
        None => None,
    };
    let options = IngestOptions {
        prune: prune || watch,
        access,
        ..Default::default()
    };
    ingest(cli, &kb, paths, &options, watch)?;
    if let (Some(roots), Some(watcher)) = (roots, watcher) {
        follow(cli, &kb, &roots, &watcher, &options)?;
    }
    Ok(())
}

/// Ingests `paths` with a progress bar, prints the report (with `--json`,
/// on one line when `lines`: the first of `--watch`'s JSON lines), and
/// fits the confidence again when `confidence.self_calibration.mode:
/// auto` says the knowledge base changed enough.
fn ingest(
    cli: &Cli,
    kb: &Arc<KnowledgeBase>,
    paths: &[PathBuf],
    options: &IngestOptions,
    lines: bool,
) -> grace::Result<()> {
    let bar = progress_bar(cli.quiet || cli.json);
    let (mut files, mut done) = (0, 0);
    let report = kb.ingest(
        paths,
        options,
        &mut |event| match event {
            IngestEvent::Found { files: n, bytes } => {
                files = n;
                bar.set_length(bytes);
            }
            IngestEvent::Advanced { bytes } => bar.inc(bytes),
            IngestEvent::File { path, .. } => {
                done += 1;
                let name = output::display_path(&path.to_string_lossy());
                bar.set_message(format!("{done}/{files} files  {name}"));
            }
            IngestEvent::Optimizing => bar.set_message("building the search index"),
            IngestEvent::StoreRetry {
                attempt,
                of,
                wait_secs,
                error,
            } => bar.suspend(|| {
                if !cli.quiet {
                    eprintln!(
                        "grace: a store write failed ({error}); trying again in {wait_secs:.0} s ({attempt}/{of})"
                    );
                }
            }),
        },
    );
    bar.finish_and_clear();
    let report = report?;
    if cli.json && lines {
        output::print_json_line(&report);
    } else if !cli.quiet || cli.json {
        output::ingest_report(&report, &kb.config().collection.name, cli.json);
    }
    warn_of_unknown_groups(cli, kb)?;
    // With `confidence.self_calibration.mode: auto`, a knowledge
    // base that changed enough is fitted again.
    let bar = count_bar(
        cli.quiet || cli.json,
        "self-calibration: asking its own questions",
    );
    let refit = grace::selfcal::after_ingest(kb, &mut |p| {
        bar.set_length(p.total as u64);
        bar.set_position(p.done as u64);
    });
    bar.finish_and_clear();
    if let Some(outcome) = refit? {
        output::self_calibration_note(&outcome, cli.quiet);
    }
    Ok(())
}

/// Warns of groups the documents' readers name that no principal with a
/// key is in: nobody may read what only they may read (a group is never a
/// way in by itself). Without `auth.jwt`, where tokens may carry groups
/// no key has.
fn warn_of_unknown_groups(cli: &Cli, kb: &KnowledgeBase) -> grace::Result<()> {
    if cli.quiet || !kb.config().auth.jwt.issuer.is_empty() {
        return Ok(());
    }
    let named = kb.reader_groups()?;
    if named.is_empty() {
        return Ok(());
    }
    let unknown = match grace::auth::Principals::open_existing(kb.config())? {
        Some(store) => store.unknown_groups(&named)?,
        None => named,
    };
    if !unknown.is_empty() {
        eprintln!(
            "grace: no principal is in group {}: only the operator reads their documents until \
             `grace auth add-key NAME --groups {}` gives someone a key",
            unknown.join(", "),
            unknown.join(",")
        );
    }
    Ok(())
}

/// The paths `--watch` follows, canonical: files and folders that exist
/// (a glob pattern cannot be followed).
pub fn watched(paths: &[PathBuf]) -> grace::Result<Vec<PathBuf>> {
    paths
        .iter()
        .map(|p| {
            std::fs::canonicalize(p).map_err(|_| {
                grace::Error::InvalidInput(format!(
                    "--watch follows files and folders, not patterns: {} is neither",
                    p.display()
                ))
            })
        })
        .collect()
}

/// `grace ingest --watch`: after the first ingest, follows `paths` and
/// ingests them again (with pruning) after each batch of changes, until
/// Ctrl-C. An ingest that fails is reported and tried again at the next
/// change; a kill in the middle is repaired by the next start's ingest.
fn follow(
    cli: &Cli,
    kb: &Arc<KnowledgeBase>,
    roots: &[PathBuf],
    watch: &grace::watch::Watch,
    options: &IngestOptions,
) -> grace::Result<()> {
    let config = kb.config();
    if !cli.quiet {
        eprintln!(
            "grace: following {} path(s); changes are ingested {} s after they settle (Ctrl-C stops)",
            roots.len(),
            config.ingest.watch_debounce_seconds
        );
    }
    let stop = std::sync::atomic::AtomicBool::new(false);
    watch.run(&stop, &mut |batch| {
        let started = std::time::Instant::now();
        let report = kb.ingest(roots, options, &mut |_| {});
        match report {
            Ok(report) => {
                output::watch_batch(batch, &report, started.elapsed(), cli.json, cli.quiet);
                match grace::selfcal::after_ingest(kb, &mut |_| {}) {
                    Ok(Some(outcome)) => output::self_calibration_note(&outcome, cli.quiet),
                    Ok(None) => {}
                    Err(e) => eprintln!("grace: self-calibration failed: {e}"),
                }
            }
            Err(e) => eprintln!("grace: {e}; the next change tries again"),
        }
    })?;
    Ok(())
}
