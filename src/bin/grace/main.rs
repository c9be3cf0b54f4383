//! The `grace` command: parses arguments, loads the configuration, calls the
//! library and renders the result for people (or as JSON with `--json`).

mod chat;
mod migrate;
mod output;
mod review;
mod tools;
mod tools_runtime;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use grace::ingest::{IngestEvent, IngestOptions};
use grace::{Config, KnowledgeBase, OpenMode};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use tracing_subscriber::EnvFilter;

/// GRACE: knowledge-base question answering that knows when it does not know.
#[derive(Debug, Parser)]
#[command(name = "grace", version, about, long_about = None)]
struct Cli {
    /// Configuration file [default: ./grace_config.yml when present]
    #[arg(long, global = true, env = "GRACE_CONFIG", value_name = "PATH")]
    config: Option<PathBuf>,
    /// Data folder (overrides storage.data_dir)
    #[arg(long, global = true, value_name = "DIR")]
    data_dir: Option<PathBuf>,
    /// Print machine-readable JSON on stdout
    #[arg(long, global = true)]
    json: bool,
    /// More log output (-v info, -vv debug); RUST_LOG overrides
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    /// Print only errors (and --json output)
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Add or update documents (Markdown, text, reStructuredText, HTML,
    /// PDF, DOCX, ODT, EPUB, man pages, Q&A tables)
    Ingest {
        /// Files, folders or quoted glob patterns
        #[arg(required = true, value_name = "PATHS")]
        paths: Vec<PathBuf>,
        /// Remove chunks of files that are gone from the given folders
        #[arg(long)]
        prune: bool,
        /// Then keep following the files and folders: a moment after they
        /// change (ingest.watch_debounce_seconds), ingest again, with
        /// --prune; Ctrl-C stops
        #[arg(long)]
        watch: bool,
    },
    /// Find the passages that best match a query
    Search {
        /// What to look for
        query: String,
        /// Number of passages [default: qdrant.search_limit]
        #[arg(short = 'k', long = "limit", value_name = "N")]
        limit: Option<usize>,
        /// Only passages of this source file
        #[arg(long, value_name = "PATH")]
        source: Option<PathBuf>,
    },
    /// Answer a question from the knowledge base, with citations and a
    /// confidence that decides: answer, caveat, escalate or decline
    /// (exit 4 when not answered)
    Ask {
        /// The question
        question: String,
        /// Passages retrieved [default: tools.rag_search.limit]
        #[arg(short = 'k', long = "limit", value_name = "N")]
        limit: Option<usize>,
        /// Show every step with its confidence factors and weights
        #[arg(long)]
        trace: bool,
        /// Never prompt: an escalation is printed and the exit code is 4
        /// (the default when stdin or stdout is not a terminal, or with --json)
        #[arg(long)]
        no_input: bool,
        /// When escalated, wait for a reviewer's answer (see `grace review`)
        #[arg(long)]
        wait: bool,
        /// Seconds to wait with --wait [default: review.asker_wait_seconds]
        #[arg(long, value_name = "SECONDS", requires = "wait")]
        timeout: Option<f64>,
        /// Only these reviewers may see the escalation (comma-separated ids)
        #[arg(long, value_delimiter = ',', value_name = "IDS")]
        reviewers: Vec<String>,
        /// Your name, shown to reviewers
        #[arg(long, env = "USER", default_value = "user", hide_env_values = true)]
        asker: String,
    },
    /// A conversation: one question a line in one session, so follow-ups
    /// ("and on sparc?") are read against the turns before. At a terminal
    /// it prompts; from a pipe it answers each line. /sources, /trace,
    /// /new, /quit
    Chat {
        /// Continue this session (an id `grace chat` or the API printed)
        #[arg(long, value_name = "ID")]
        session: Option<String>,
        /// Passages retrieved [default: tools.rag_search.limit]
        #[arg(short = 'k', long = "limit", value_name = "N")]
        limit: Option<usize>,
        /// Your name, shown to reviewers
        #[arg(long, env = "USER", default_value = "user", hide_env_values = true)]
        asker: String,
    },
    /// The answer to an escalated question, once a reviewer gave it
    /// (exit 0 answered, 4 not answered yet or not at all)
    Answer {
        /// The escalation id `grace ask` printed
        id: i64,
        /// Wait until it is settled
        #[arg(long)]
        wait: bool,
        /// Seconds to wait with --wait [default: review.asker_wait_seconds]
        #[arg(long, value_name = "SECONDS", requires = "wait")]
        timeout: Option<f64>,
        /// Withdraw the question
        #[arg(long, conflicts_with = "wait")]
        cancel: bool,
    },
    /// Review escalated questions: list, claim, answer, reject, watch
    Review {
        /// Your reviewer id
        #[arg(long = "as", env = "GRACE_REVIEWER", value_name = "REVIEWER")]
        reviewer: Option<String>,
        #[command(subcommand)]
        command: review::ReviewCommand,
    },
    /// Serve the HTTP API (ask, search, ingest, status, review; reference
    /// at /openapi.json) and the reviewer page at /review
    Serve {
        /// Address to listen on [default: server.bind]; beyond loopback
        /// only with server.api_key set
        #[arg(long, value_name = "ADDR")]
        bind: Option<std::net::SocketAddr>,
        /// Keep the knowledge base in step with this folder or file while
        /// serving (repeatable; added to server.watch)
        #[arg(long, value_name = "PATH")]
        watch: Vec<PathBuf>,
    },
    /// Serve GRACE's tools to an MCP client over stdin/stdout
    Mcp,
    /// Show the collection, its size, the model and tool usage
    Status,
    /// The tools: list (schema, policy, origin, statistics), stats,
    /// reflect (unreliable, slow, unused), enable; run-time tools (rt.NAME):
    /// create, delete, history, run
    Tools {
        #[command(subcommand)]
        command: tools::ToolsCommand,
    },
    /// Copy the embedded collection to a Qdrant server without embedding again
    Migrate(migrate::MigrateArgs),
    /// Evaluate retrieval and confidence on a question set (DIR holds
    /// corpus/ and questions.jsonl); uses a temporary store
    Eval {
        /// The evaluation set folder
        dir: PathBuf,
        /// Passages retrieved per question
        #[arg(short = 'k', long = "limit", value_name = "N", default_value_t = 5)]
        limit: usize,
        /// Also draw the confidence models' coverage/risk curves to this PNG
        #[arg(long, value_name = "FILE", conflicts_with = "conversations")]
        plot: Option<PathBuf>,
        /// Self-calibrate on the ingested corpus first (never reading the
        /// set's questions), then ask the questions with the fitted weights
        #[arg(long, conflicts_with = "conversations")]
        self_calibrate: bool,
        /// Instead of the set's questions, ask these conversations (one JSON
        /// line each: {"id", "turns": [{"question", "answerable",
        /// "gold_sources"}]}) over its corpus, and report follow-up recall
        /// with and without the history
        #[arg(long, value_name = "FILE")]
        conversations: Option<PathBuf>,
    },
    /// Fit the confidence weights to a question set (DIR as for eval) and
    /// write them to a calibration file for `confidence.calibration`; or,
    /// with --self, to questions built from the knowledge base itself
    Calibrate {
        /// The evaluation set folder (labelled questions)
        #[arg(required_unless_present = "self_fit", conflicts_with = "self_fit")]
        dir: Option<PathBuf>,
        /// Calibrate on questions built from the knowledge base itself (no
        /// question set); the fit is kept in the data folder and used for
        /// this collection
        #[arg(long = "self", id = "self_fit")]
        self_fit: bool,
        /// With --self: also write every question asked, its kind, outcome
        /// and factors, one JSON line each, to this file
        #[arg(long, value_name = "FILE", requires = "self_fit")]
        questions_out: Option<PathBuf>,
        /// The calibration file to write (with a question set)
        #[arg(
            long,
            value_name = "FILE",
            default_value = "calibration.json",
            conflicts_with = "self_fit"
        )]
        out: PathBuf,
        /// Cross-validation folds
        #[arg(long, value_name = "N", default_value_t = 5)]
        folds: usize,
        /// Passages retrieved per question
        #[arg(short = 'k', long = "limit", value_name = "N", default_value_t = 5)]
        limit: usize,
    },
    /// Print the effective configuration (defaults + file + environment)
    Config,
}

fn main() -> ExitCode {
    quiet_on_broken_pipe();
    let cli = Cli::parse();
    init_logging(&cli);
    match run(&cli) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            output::error(&e, cli.json);
            ExitCode::from(e.exit_code())
        }
    }
}

/// Exit status of a command whose output stopped being read (128 +
/// SIGPIPE, what a shell reports for a tool killed by it).
const BROKEN_PIPE_EXIT: i32 = 141;

/// `grace search … | head -1`: when the reader of GRACE's output goes
/// away, `println!` panics ("failed printing to stdout: Broken pipe").
/// That is not a bug to report with a backtrace but the end of the
/// command: exit quietly with [`BROKEN_PIPE_EXIT`]. (Restoring SIGPIPE's
/// default action instead would also kill GRACE when an MCP server it
/// started as a tool closes its input.) Every other panic goes to the
/// default hook.
fn quiet_on_broken_pipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if message.starts_with("failed printing to std") && message.contains("Broken pipe") {
            std::process::exit(BROKEN_PIPE_EXIT);
        }
        default(info);
    }));
}

/// Ingests `paths` with a progress bar, prints the report (with `--json`,
/// on one line when `lines`: the first of `--watch`'s JSON lines), and
/// fits the confidence again when `confidence.self_calibration.mode:
/// auto` says the knowledge base changed enough.
fn ingest(
    cli: &Cli,
    kb: &std::sync::Arc<KnowledgeBase>,
    paths: &[PathBuf],
    prune: bool,
    lines: bool,
) -> grace::Result<()> {
    let bar = progress_bar(cli);
    let (mut files, mut done) = (0, 0);
    let report = kb.ingest(
        paths,
        &IngestOptions {
            prune,
            ..Default::default()
        },
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
        output::ingest_report(&report, &kb.config().qdrant.collection, cli.json);
    }
    // With `confidence.self_calibration.mode: auto`, a knowledge
    // base that changed enough is fitted again.
    let bar = count_bar(cli, "self-calibration: asking its own questions");
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

/// The paths `--watch` follows, canonical: files and folders that exist
/// (a glob pattern cannot be followed).
fn watched(paths: &[PathBuf]) -> grace::Result<Vec<PathBuf>> {
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
    kb: &std::sync::Arc<KnowledgeBase>,
    roots: &[PathBuf],
    watch: &grace::watch::Watch,
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
        let report = kb.ingest(
            roots,
            &IngestOptions {
                prune: true,
                ..Default::default()
            },
            &mut |_| {},
        );
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

fn init_logging(cli: &Cli) {
    // qdrant-edge logs start-up warnings meant for the Qdrant server
    // ("Feature flags not initialized!"); its errors still show. pdf_oxide
    // warns of every oddity it reads past in a PDF (most PDFs have some);
    // a PDF it cannot read is reported by the ingest itself.
    let default = if cli.quiet {
        "error"
    } else {
        match cli.verbose {
            0 => "warn,qdrant_edge=error,pdf_oxide=off",
            1 => "info,qdrant_edge=error,pdf_oxide=off",
            _ => "debug",
        }
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .init();
}

fn load_config(cli: &Cli) -> grace::Result<Config> {
    let mut config = Config::load(cli.config.as_deref())?;
    // A missing or broken calibration file is a configuration error now,
    // whatever the command.
    grace::confidence::calibration::apply(&mut config)?;
    if let Some(dir) = &cli.data_dir {
        config.storage.data_dir = dir.clone();
    }
    Ok(config)
}

/// Runs the command; the exit code on success is 0, or
/// [`grace::EXIT_NOT_ANSWERED`] when `ask` escalated or declined.
fn run(cli: &Cli) -> grace::Result<u8> {
    let config = load_config(cli)?;
    match &cli.command {
        Command::Ingest {
            paths,
            prune,
            watch,
        } => {
            // Patterns cannot be followed: refused before any work.
            let roots = if *watch { Some(watched(paths)?) } else { None };
            let kb = std::sync::Arc::new(KnowledgeBase::open(config, OpenMode::Create)?);
            // Watching from before the first ingest: what changes while it
            // runs is the first batch, not lost.
            let watcher = match &roots {
                Some(roots) => Some(grace::watch::Watch::start(
                    roots,
                    &grace::watch::WatchOptions::for_config(kb.config()),
                )?),
                None => None,
            };
            ingest(cli, &kb, paths, *prune || *watch, *watch)?;
            if let (Some(roots), Some(watcher)) = (roots, watcher) {
                follow(cli, &kb, &roots, &watcher)?;
            }
        }
        Command::Search {
            query,
            limit,
            source,
        } => {
            let kb = KnowledgeBase::open(config, OpenMode::Existing)?;
            let filter = match source {
                Some(p) => {
                    let canonical = std::fs::canonicalize(p).unwrap_or_else(|_| p.clone());
                    Some(grace::store::PayloadFilter::source(
                        &canonical.to_string_lossy(),
                    ))
                }
                None => None,
            };
            let passages = kb.search(query, *limit, filter.as_ref())?;
            output::passages(&passages, cli.json);
        }
        Command::Ask {
            question,
            limit,
            trace,
            no_input,
            wait,
            timeout,
            reviewers,
            asker,
        } => {
            if question.trim().is_empty() {
                return Err(grace::Error::InvalidInput("the question is empty".into()));
            }
            if let Some(k) = *limit {
                grace::service::check_ask_limit(k)?;
            }
            let limit = limit.unwrap_or(config.tools.rag_search.limit);
            let kb = std::sync::Arc::new(KnowledgeBase::open(config, OpenMode::Existing)?);
            let registry = grace::tools::ToolRegistry::from_config(kb.config(), kb.clone())?;
            let interactive = !*no_input
                && !cli.json
                && std::io::stdin().is_terminal()
                && std::io::stdout().is_terminal();
            let mut executor = grace::exec::Executor::new(&registry, kb.config(), limit);
            if interactive {
                executor = executor.with_clarifier(&clarify);
            }
            let mut report = executor.ask(question, &mut |_| {})?;
            if report.decision == grace::exec::Decision::NeedsInput {
                output::run_report(&report, *trace, cli.json);
                if !cli.json {
                    println!(
                        "\n(no terminal to answer at: ask again with the answer in the question, or use `grace chat`)"
                    );
                }
                return Ok(grace::EXIT_NEEDS_INPUT);
            }
            if !cli.json {
                output::run_report(&report, *trace, false);
            }
            if interactive && report.decision == grace::exec::Decision::Escalate {
                prompt_for_reply(&mut report);
            }
            // Still escalated: a durable request for the reviewers.
            let review_id = if report.decision == grace::exec::Decision::Escalate {
                Some(review::enqueue(kb.config(), &report, reviewers, asker)?)
            } else {
                None
            };
            if cli.json {
                output::run_report_with_review(&report, review_id);
            } else if let Some(id) = review_id {
                println!(
                    "\nQueued for review as escalation #{id}: `grace answer {id}` shows the answer once a reviewer gives it."
                );
            }
            if let (Some(id), true) = (review_id, *wait) {
                let seconds = timeout.unwrap_or(kb.config().review.asker_wait_seconds);
                let config = kb.config().clone();
                drop(executor);
                drop(registry);
                drop(kb);
                if !cli.json {
                    println!("Waiting up to {seconds:.0} s for a reviewer…");
                }
                return review::answer(&config, id, Some(wait_for(seconds)?), false, cli.json);
            }
            if matches!(
                report.decision,
                grace::exec::Decision::Escalate | grace::exec::Decision::Decline
            ) {
                return Ok(grace::EXIT_NOT_ANSWERED);
            }
        }
        Command::Chat {
            session,
            limit,
            asker,
        } => {
            let args = chat::ChatArgs {
                session: session.as_deref(),
                limit: *limit,
                json: cli.json,
                asker,
            };
            return chat::run(config, &args);
        }
        Command::Answer {
            id,
            wait,
            timeout,
            cancel,
        } => {
            let wait = match wait {
                true => Some(wait_for(
                    timeout.unwrap_or(config.review.asker_wait_seconds),
                )?),
                false => None,
            };
            return review::answer(&config, *id, wait, *cancel, cli.json);
        }
        Command::Review { reviewer, command } => {
            return review::run(&config, reviewer.as_deref(), command, cli.json);
        }
        Command::Serve { bind, watch } => {
            let mut config = config;
            config.server.watch.extend(watched(watch)?);
            let bind = match bind {
                Some(b) => *b,
                None => config.server.bind.parse().map_err(|_| {
                    grace::Error::InvalidInput(format!(
                        "server.bind {:?} is not an address",
                        config.server.bind
                    ))
                })?,
            };
            grace::serve::serve(config, bind)?
        }
        Command::Mcp => grace::mcp::serve_stdio(config)?,
        Command::Status => {
            let usage = match config.tool_stats_path().exists() {
                true => tools::open_stats(&config)?.all()?,
                false => Vec::new(),
            };
            output::status(&grace::status(&config)?, &usage, cli.json)
        }
        Command::Tools { command } => return tools::run(config, command, cli.json),
        Command::Migrate(args) => migrate::run(config, args, cli.quiet, cli.json)?,
        Command::Eval {
            dir,
            limit,
            plot,
            self_calibrate,
            conversations,
        } => {
            if *limit == 0 {
                return Err(grace::Error::InvalidInput("-k must be at least 1".into()));
            }
            if let Some(file) = conversations {
                let embedder =
                    std::sync::Arc::new(grace::embed::FastEmbedder::new(&config.embedding)?);
                let report = grace::eval::conversations::run(&config, embedder, dir, file, *limit)?;
                output::conversation_report(&report, cli.json);
                return Ok(0);
            }
            // Say so before the evaluation runs, not after.
            if let Some(folder) = plot
                .as_deref()
                .and_then(|p| p.parent())
                .filter(|f| !f.as_os_str().is_empty() && !f.is_dir())
            {
                return Err(grace::Error::InvalidInput(format!(
                    "--plot: folder {} does not exist",
                    folder.display()
                )));
            }
            let embedder = std::sync::Arc::new(grace::embed::FastEmbedder::new(&config.embedding)?);
            let report = grace::eval::run(&config, embedder, dir, *limit, *self_calibrate)?;
            if let Some(path) = plot {
                let title = format!("coverage vs risk: {}", dir.display());
                grace::eval::plot::coverage_risk_png(path, &title, &report.models)
                    .map_err(|e| grace::Error::InvalidInput(e.to_string()))?;
            }
            output::eval_report(&report, cli.json);
            if let (Some(path), false) = (plot, cli.quiet || cli.json) {
                println!("coverage/risk plot: {}", path.display());
            }
        }
        Command::Calibrate {
            self_fit: true,
            questions_out,
            ..
        } => {
            let kb = std::sync::Arc::new(KnowledgeBase::open(config, OpenMode::Existing)?);
            let outcome = self_calibrate(&kb, cli)?;
            if let (Some(file), grace::selfcal::Outcome::Fitted { asked, .. }) =
                (questions_out, &outcome)
            {
                write_jsonl(file, asked)?;
            }
            output::self_calibration(&outcome, kb.config(), cli.json);
        }
        Command::Calibrate {
            dir,
            out,
            folds,
            limit,
            ..
        } => {
            let Some(dir) = dir else {
                return Err(grace::Error::InvalidInput(
                    "name a question set, or calibrate on the knowledge base with --self".into(),
                ));
            };
            if *limit == 0 || *folds < 2 {
                return Err(grace::Error::InvalidInput(
                    "-k must be at least 1 and --folds at least 2".into(),
                ));
            }
            let embedder = std::sync::Arc::new(grace::embed::FastEmbedder::new(&config.embedding)?);
            let calibration =
                grace::eval::calibrate::calibrate(&config, embedder, dir, *limit, *folds)?;
            calibration
                .save(out)
                .map_err(|e| grace::Error::InvalidInput(e.to_string()))?;
            output::calibration(&calibration, out, cli.json);
        }
        Command::Config => output::config(&config, cli.json)?,
    }
    Ok(0)
}

/// A wait of `seconds`, checked.
fn wait_for(seconds: f64) -> grace::Result<std::time::Duration> {
    std::time::Duration::try_from_secs_f64(seconds).map_err(|_| {
        grace::Error::InvalidInput(format!("--timeout {seconds} is not a number of seconds"))
    })
}

fn progress_bar(cli: &Cli) -> ProgressBar {
    if cli.quiet || cli.json || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
    bar.enable_steady_tick(std::time::Duration::from_millis(200));
    if let Ok(style) = ProgressStyle::with_template(
        "{spinner} [{bar:30}] {binary_bytes}/{binary_total_bytes} ({eta})  {wide_msg}",
    ) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

/// Writes `items` to `file`, one JSON line each.
fn write_jsonl<T: serde::Serialize>(file: &std::path::Path, items: &[T]) -> grace::Result<()> {
    let mut text = String::new();
    for item in items {
        let line = serde_json::to_string(item)
            .map_err(|e| grace::Error::InvalidInput(format!("cannot serialise: {e}")))?;
        text.push_str(&line);
        text.push('\n');
    }
    std::fs::write(file, text)
        .map_err(|e| grace::Error::InvalidInput(format!("cannot write {}: {e}", file.display())))
}

/// A progress bar counting items (questions), with a message.
fn count_bar(cli: &Cli, message: &'static str) -> ProgressBar {
    if cli.quiet || cli.json || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
    bar.enable_steady_tick(std::time::Duration::from_millis(200));
    if let Ok(style) =
        ProgressStyle::with_template("{spinner} [{bar:30}] {pos}/{len} ({eta})  {msg}")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_message(message);
    bar
}

/// `grace calibrate --self` with a progress bar.
fn self_calibrate(
    kb: &std::sync::Arc<KnowledgeBase>,
    cli: &Cli,
) -> grace::Result<grace::selfcal::Outcome> {
    let bar = count_bar(cli, "asking the knowledge base's own questions");
    let outcome = grace::selfcal::self_calibrate(kb, &mut |p| {
        bar.set_length(p.total as u64);
        bar.set_position(p.done as u64);
    });
    bar.finish_and_clear();
    outcome
}

/// Asks the person at the terminal to settle an escalated run: a number
/// picks an offered option, other text is their own answer, an empty line
/// leaves the run escalated.
/// The agent's question to the asker, at the terminal: a number picks an
/// option, other text is the reply, Enter gives none (the agent proceeds on
/// its best assumption).
fn clarify(request: &grace::tools::UserRequest) -> Option<String> {
    use std::io::{BufRead, Write};
    let texts = grace::lang::Lang::of(&request.question).texts();
    println!("\n{}{}", texts.asks, request.question);
    if !request.reason.trim().is_empty() {
        println!("({})", request.reason);
    }
    for (i, o) in request.options.iter().enumerate() {
        println!("  {}. {o}", i + 1);
    }
    print!("{}", texts.your_answer);
    let _ = std::io::stdout().flush();
    let mut line = String::new();
    if std::io::stdin().lock().read_line(&mut line).unwrap_or(0) == 0 {
        return None;
    }
    let line = line.trim();
    if line.is_empty() {
        return None;
    }
    Some(output::chosen(&request.options, line))
}

fn prompt_for_reply(report: &mut grace::exec::RunReport) {
    use std::io::{BufRead, Write};
    let options = report
        .escalation
        .as_ref()
        .map(|r| r.options.len())
        .unwrap_or(0);
    let stdin = std::io::stdin();
    for _ in 0..3 {
        print!(
            "\nYour choice (1-{options}), an answer in your own words, or Enter to leave it escalated: "
        );
        let _ = std::io::stdout().flush();
        let mut line = String::new();
        if stdin.lock().read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let line = line.trim();
        let reply = if line.is_empty() {
            grace::exec::HumanReply::Skip
        } else if let Ok(n) = line.parse::<usize>() {
            grace::exec::HumanReply::Option(n)
        } else {
            grace::exec::HumanReply::Text(line.to_string())
        };
        match report.apply_reply(&reply, "user") {
            Ok(()) => {
                output::human_decision(report);
                return;
            }
            Err(e) => println!("{e}"),
        }
    }
}
