//! `grace ask`: one question, answered with citations and a confidence,
//! escalated to a person or declined; at a terminal GRACE asks back when
//! the agent needs input, and the asker of an escalated question chooses
//! first (see the draft, rephrase, ask a person: [`crate::asker`]).

use std::io::IsTerminal;

use grace::config::Config;
use grace::{EXIT_NEEDS_INPUT, EXIT_NOT_ANSWERED};
use grace::{KnowledgeBase, OpenMode};

use crate::cli::{AskArgs, Cli};
use crate::output;

/// Runs `grace ask`; the exit code (4 when escalated or declined, 3 when
/// the agent's question found no one to answer it).
pub fn run(cli: &Cli, config: Config, args: &AskArgs) -> grace::Result<u8> {
    grace::service::check_question(&args.question)?;
    if let Some(k) = args.limit {
        grace::service::check_ask_limit(k)?;
    }
    let limit = args.limit.unwrap_or(config.tools.rag_search.limit);
    let scope = crate::auth::scope(&config, args.as_principal.as_deref())?;
    let audit = grace::audit::AuditLog::open(&config)?;
    let who = scope.label().to_string();
    let format = output::terminal_format(&config);
    let kb = std::sync::Arc::new(KnowledgeBase::open(config, OpenMode::Existing)?);
    let registry = grace::tools::ToolRegistry::from_config(kb.config(), kb.clone())?;
    let interactive = !args.no_input
        && !cli.json
        && std::io::stdin().is_terminal()
        && std::io::stdout().is_terminal();
    let mut executor = grace::exec::Executor::new(&registry, kb.config(), kb.scorer(), limit)
        .with_scope(scope)
        .with_document_history(std::sync::Arc::new(document_history(kb.config())));
    if interactive {
        executor = executor.with_clarifier(&clarify);
    }
    let mut report = executor.ask(&args.question, &mut |_| {})?;
    audit.record(&crate::audit::asked(&who, kb.config().kb_name(), &report));
    if !cli.json {
        output::run_report(&report, args.trace, false, format);
    }
    if interactive && report.decision == grace::exec::Decision::Escalate {
        choose(&executor, &mut report, format)?;
    }
    if report.decision == grace::exec::Decision::NeedsInput {
        if cli.json {
            output::run_report(&report, args.trace, true, format);
        } else {
            println!(
                "\n(no terminal to answer at: ask again with the answer in the question, or use `grace chat`)"
            );
        }
        return Ok(EXIT_NEEDS_INPUT);
    }
    // Still escalated: a durable request for the reviewers.
    let review_id = if report.decision == grace::exec::Decision::Escalate {
        let vector = kb.embedder().embed_query(report.question_as_run()).ok();
        Some(crate::review::enqueue(
            kb.config(),
            &report,
            &args.reviewers,
            &args.asker,
            vector.as_deref(),
        )?)
    } else {
        None
    };
    let answer_id = record(&kb, &report, &args.asker, review_id);
    // What the asker has while a person checks: what GRACE found, and how
    // long people usually take here.
    let while_waiting = review_id.map(|_| {
        let typical = grace::review::ReviewQueue::open(kb.config()).and_then(|q| q.typical_wait());
        grace::service::WhileWaiting::of(&report, typical)
    });
    if cli.json {
        output::run_report_with_ids(
            &report,
            review_id,
            answer_id.as_deref(),
            while_waiting.as_ref(),
            format,
        );
    } else if let (Some(id), Some(waiting)) = (review_id, &while_waiting) {
        println!();
        output::while_waiting(waiting);
        output::queued_for_review(id);
    } else if let (Some(id), grace::exec::Decision::Answer | grace::exec::Decision::Caveat) =
        (&answer_id, report.decision)
    {
        println!();
        output::how_to_rate(id);
    }
    if let (Some(id), true) = (review_id, args.wait) {
        let seconds = args
            .timeout
            .unwrap_or(kb.config().review.asker_wait_seconds);
        let config = kb.config().clone();
        drop(executor);
        drop(registry);
        drop(kb);
        if !cli.json {
            println!("Waiting up to {seconds:.0} s for a reviewer…");
        }
        return crate::review::answer(&config, id, Some(wait_for(seconds)?), false, cli.json);
    }
    if matches!(
        report.decision,
        grace::exec::Decision::Escalate | grace::exec::Decision::Decline
    ) {
        return Ok(EXIT_NOT_ANSWERED);
    }
    Ok(0)
}

/// The documents' rating history the answer is scored with, as the
/// server would (none before the first rating). A store that cannot be
/// read scores without it, with a warning: the question is still answered.
fn document_history(config: &Config) -> std::collections::HashMap<String, f32> {
    use grace::feedback::FeedbackStore;
    FeedbackStore::open_existing(config)
        .and_then(|store| store.map_or(Ok(Default::default()), |s| s.document_history()))
        .unwrap_or_else(|e| {
            tracing::warn!(error = %e, "the documents' ratings could not be read; answering without their history");
            Default::default()
        })
}

/// Records the finished run so that `asker` can rate it; its id. A run
/// that cannot be recorded was still answered: the failure is logged.
fn record(
    kb: &KnowledgeBase,
    report: &grace::exec::RunReport,
    asker: &str,
    review_id: Option<i64>,
) -> Option<String> {
    use grace::feedback::{Asker, FeedbackStore};
    let config = kb.config();
    let recorded = FeedbackStore::open(config).and_then(|store| {
        store.record_run(
            report,
            config,
            kb.scorer(),
            &Asker::named(asker)?,
            review_id,
            kb.embedder(),
        )
    });
    recorded.unwrap_or_else(|e| {
        tracing::warn!(error = %e, "the answer could not be recorded for feedback; it cannot be rated");
        None
    })
}

/// A wait of `seconds`, checked.
pub fn wait_for(seconds: f64) -> grace::Result<std::time::Duration> {
    std::time::Duration::try_from_secs_f64(seconds).map_err(|_| {
        grace::Error::InvalidInput(format!("--timeout {seconds} is not a number of seconds"))
    })
}

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

/// The most choices read on one question: a terminal left to a script
/// stops asking.
const MAX_CHOICES: usize = 20;

/// What the asker of escalated `report` does, at the terminal: see the
/// draft (marked unconfirmed), or ask again in other words after 2
/// (`report` is then the new run's, and shown), until they ask a person
/// (3, Enter, or the end of input) or a rephrased question is answered.
/// Other text is no option: it is said so, never run as a question.
fn choose(
    executor: &grace::exec::Executor<'_>,
    report: &mut grace::exec::RunReport,
    format: grace::config::AnswerFormat,
) -> grace::Result<()> {
    use crate::asker::{self, Choice, Read};
    use std::io::Write;
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let prompt = |text: &str| {
        print!("{text}");
        let _ = std::io::stdout().flush();
    };
    for _ in 0..MAX_CHOICES {
        if report.decision != grace::exec::Decision::Escalate {
            return Ok(());
        }
        let texts = grace::lang::Lang::of(&report.question).texts();
        asker::show_options(texts);
        prompt(texts.asker_prompt);
        let line = match asker::read_line(&mut input)? {
            Read::Line(line) => line,
            Read::TooLong => continue,
            Read::End => return Ok(()),
        };
        let question = match Choice::of(&line) {
            Choice::Person => return Ok(()),
            Choice::Draft => {
                asker::show_draft(report, texts);
                continue;
            }
            Choice::NotAnOption(reply) | Choice::Question(reply) => {
                println!("{}", asker::not_an_option(&reply, texts));
                continue;
            }
            Choice::Rephrase => {
                prompt(texts.rephrase);
                match asker::read_line(&mut input)? {
                    Read::Line(q) => q,
                    Read::TooLong => continue,
                    Read::End => return Ok(()),
                }
            }
        };
        if let Err(e) = grace::service::check_question(&question) {
            println!("{e}");
            continue;
        }
        *report = executor.ask(question.trim(), &mut |_| {})?;
        println!();
        output::run_report(report, false, false, format);
    }
    Ok(())
}
