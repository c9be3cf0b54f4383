//! The `grace` command: parses arguments, loads the configuration, calls the
//! library and renders the result for people (or as JSON with `--json`).
//!
//! `cli` defines the commands; `main` loads the configuration and sends each
//! to its module (`ask`, `ingest`, `evaluate`, `chat`, `review`, `tools`,
//! `migrate`), which print through `output` (which imports none of them).

mod ask;
mod asker;
mod audit;
mod auth;
mod chat;
mod cli;
mod doctor;
mod evaluate;
mod feedback;
mod gaps;
mod ingest;
mod kb;
mod migrate;
mod output;
mod progress;
mod reference;
mod review;
mod tools;
mod tools_runtime;

use std::process::ExitCode;

use clap::Parser;
use grace::config::Config;
use grace::{KnowledgeBase, OpenMode};
use tracing_subscriber::EnvFilter;

use crate::cli::{Cli, Command};

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

/// `grace search … | head -1`: when the reader of GRACE's output goes
/// away, `println!` panics ("failed printing to stdout: Broken pipe").
/// That is not a bug to report with a backtrace but the end of the
/// command: exit quietly with [`grace::EXIT_BROKEN_PIPE`]. (Restoring SIGPIPE's
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
            std::process::exit(i32::from(grace::EXIT_BROKEN_PIPE));
        }
        default(info);
    }));
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

/// The configuration as loaded (every knowledge base), with `--data-dir`.
fn load_base(cli: &Cli) -> grace::Result<Config> {
    let mut config = Config::load(cli.config.as_deref())?;
    if let Some(dir) = &cli.data_dir {
        config.storage.data_dir = dir.clone();
    }
    Ok(config)
}

/// Runs the command; the exit code on success is 0, or
/// [`grace::EXIT_NOT_ANSWERED`] when `ask` escalated or declined.
fn run(cli: &Cli) -> grace::Result<u8> {
    // Made from the code alone: no configuration needed.
    if let Command::Reference { topic } = &cli.command {
        print!("{}", reference::page(*topic));
        return Ok(0);
    }
    let base = load_base(cli)?;
    // The knowledge base `--kb` names; a missing or broken calibration file
    // is a configuration error now, whatever the command.
    let config = grace::service::kbs::kb_config(&base, &cli.kb)?;
    match &cli.command {
        Command::Ingest {
            paths,
            prune,
            watch,
            access,
        } => {
            let access = match access.is_empty() {
                true => None,
                false => Some(
                    grace::access::Readers::parse(access)
                        .map_err(|m| grace::Error::InvalidInput(format!("--access: {m}")))?,
                ),
            };
            ingest::run(cli, config, paths, *prune, *watch, access)?
        }
        Command::Search {
            query,
            limit,
            source,
            as_principal,
        } => {
            let scope = auth::scope(&config, as_principal.as_deref())?;
            let log = grace::audit::AuditLog::open(&config)?;
            let kb_name = config.kb_name().to_string();
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
            let filter = grace::store::PayloadFilter {
                readers: scope.tokens(),
                ..filter.unwrap_or_default()
            };
            let filter = (!filter.is_empty()).then_some(filter);
            let passages = kb.search(query, *limit, filter.as_ref())?;
            log.record(&audit::searched(scope.label(), &kb_name, &passages));
            output::passages(&passages, cli.json);
        }
        Command::Ask(args) => return ask::run(cli, config, args),
        Command::Chat {
            session,
            limit,
            asker,
            as_principal,
        } => {
            let args = chat::ChatArgs {
                session: session.as_deref(),
                limit: *limit,
                json: cli.json,
                asker,
                scope: auth::scope(&config, as_principal.as_deref())?,
            };
            return chat::run(config, &args);
        }
        Command::Feedback(args) => feedback::run(cli, &config, args)?,
        Command::Gaps(args) => gaps::run(cli, &config, args)?,
        Command::Answer {
            id,
            wait,
            timeout,
            cancel,
        } => {
            let wait = match wait {
                true => Some(ask::wait_for(
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
            // `--watch` folders belong to the knowledge base `--kb` names.
            let mut base = base;
            let watched = ingest::watched(watch)?;
            match base.kbs.get_mut(&cli.kb) {
                Some(entry) => entry.watch.extend(watched),
                None => base.server.watch.extend(watched),
            }
            let bind = match bind {
                Some(b) => *b,
                None => base.server.bind.parse().map_err(|_| {
                    grace::Error::InvalidInput(format!(
                        "server.bind {:?} is not an address",
                        base.server.bind
                    ))
                })?,
            };
            grace_serve::serve(base, bind)?
        }
        Command::Mcp => {
            let mut base = base;
            // stdio carries no credentials: the process says whom it serves.
            if let Ok(name) = std::env::var("GRACE_PRINCIPAL") {
                // Set but empty is a mistake (an unset shell variable), not
                // the operator: never everything by accident.
                if name.trim().is_empty() {
                    return Err(grace::Error::InvalidInput(
                        "GRACE_PRINCIPAL is set but empty: name a principal (`grace auth list`), or unset it for the local operator".into(),
                    ));
                }
                base.mcp.principal = name;
            }
            grace_mcp::serve_stdio(base, &cli.kb)?
        }
        Command::Auth { command } => auth::run(&config, command, cli.json)?,
        Command::Kb { command } => kb::run(&base, command, cli.json)?,
        Command::Audit {
            since,
            principal,
            limit,
        } => audit::run(
            &config,
            since.as_deref(),
            principal.as_deref(),
            *limit,
            cli.json,
        )?,
        Command::Status => {
            let usage = match config.tool_stats_path().exists() {
                true => tools::open_stats(&config)?.all()?,
                false => Vec::new(),
            };
            let learning = match grace::feedback::FeedbackStore::open_existing(&config)? {
                Some(store) => Some(grace::learn::auto::FeedbackCalibration::of(
                    &config,
                    &store,
                    &grace::review::ReviewQueue::open(&config)?,
                )?),
                None => None,
            };
            output::status(
                &grace::status(&config)?,
                &usage,
                learning.as_ref(),
                cli.json,
            )
        }
        Command::Tools { command } => return tools::run(config, command, cli.json),
        Command::Migrate(args) => migrate::run(config, args, cli.quiet, cli.json)?,
        Command::Doctor { repair } => return doctor::run(&config, *repair, cli.json),
        Command::Eval {
            dir,
            limit,
            plot,
            self_calibrate,
            conversations,
            one_session,
            feedback,
            seed,
            feedback_noise,
            feedback_flood,
            document_boost,
        } => evaluate::eval(
            cli,
            &config,
            &evaluate::EvalArgs {
                dir,
                limit: *limit,
                plot: plot.as_deref(),
                self_calibrate: *self_calibrate,
                conversations: conversations.as_deref(),
                one_session: *one_session,
                feedback: feedback.map(|ratings| grace_eval::FeedbackSim {
                    ratings,
                    seed: *seed,
                    noise: *feedback_noise,
                    flood: *feedback_flood,
                    document_boost: *document_boost,
                }),
            },
        )?,
        Command::Calibrate {
            from_feedback: true,
            out,
            ..
        } => evaluate::calibrate_from_feedback(cli, config, out)?,
        Command::Calibrate {
            self_fit: true,
            questions_out,
            ..
        } => evaluate::calibrate_self(cli, config, questions_out.as_deref())?,
        Command::Calibrate {
            dir,
            out,
            folds,
            limit,
            ..
        } => evaluate::calibrate(cli, &config, dir.as_ref(), out, *folds, *limit)?,
        Command::Config => output::config(&config, cli.json)?,
        // Answered above, before the configuration is read.
        Command::Reference { topic } => print!("{}", reference::page(*topic)),
    }
    Ok(0)
}
