//! `grace chat`: a conversation with the knowledge base. Each line is a
//! question in one session, so a follow-up ("and on sparc?") is read
//! against the turns before it. At a terminal it prompts; from a pipe it
//! reads one question a line and answers each in turn. Commands:
//! `/sources`, `/trace`, `/good` and `/bad [reason]` (rate the last
//! answer), `/new`, `/help`, `/quit` (or end of input).

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use grace::exec::RunReport;
use grace::{AskOptions, Config, Grace};

use crate::asker::{self, Choice, Read, read_line};
use crate::output;

const HELP: &str = "Ask a question, or: /sources (of the last answer), /trace (its steps and \
                    factors), /good or /bad [wrong|incomplete|not_what_i_asked|outdated] (rate \
                    the last answer), /new (start a new conversation), /skip (leave GRACE's \
                    question unanswered), /quit";

/// Options of `grace chat`.
pub struct ChatArgs<'a> {
    /// Continue this session instead of starting one.
    pub session: Option<&'a str>,
    /// Passages retrieved per question.
    pub limit: Option<usize>,
    /// Print each turn as one JSON line.
    pub json: bool,
    /// Who asks, shown to reviewers.
    pub asker: &'a str,
    /// What the asker may read (`--as`).
    pub scope: grace::access::ReadScope,
}

/// Runs the conversation until `/quit` or the end of input.
pub fn run(config: Config, args: &ChatArgs<'_>) -> grace::Result<u8> {
    if let Some(k) = args.limit {
        grace::service::check_ask_limit(k)?;
    }
    // A missing knowledge base is an error now, not an empty answer later.
    let format = output::terminal_format(&config);
    let grace = Grace::builder(config).existing().build()?;
    let mut session = match args.session {
        Some(id) => grace.session_as(id, &args.scope)?.id,
        None => grace.create_session_as(&args.scope)?.id,
    };
    let terminal = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    if terminal && !args.json {
        println!("GRACE chat (session {session}). {HELP}");
    }
    let mut last: Option<RunReport> = None;
    // The last answer's id, to rate it (with the session it was asked in).
    let mut last_answer: Option<(String, String)> = None;
    // A run waiting for the answer to GRACE's question: the next line.
    let mut waiting: Option<String> = None;
    // At a terminal, an escalated question waits for its asker's choice
    // (see the draft, rephrase, ask a person) before anyone is asked.
    let choosing = terminal && !args.json;
    let mut pending: Option<Escalated> = None;
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    loop {
        if terminal && !args.json {
            print!("\n> ");
            let _ = std::io::stdout().flush();
        }
        let line = match read_line(&mut input)? {
            Read::Line(line) => line,
            Read::TooLong => continue,
            Read::End => break,
        };
        let line = line.trim();
        if !line.starts_with('/')
            && let Some(escalated) = pending.take()
        {
            match choice(&grace, escalated, line)? {
                Chosen::Done => continue,
                Chosen::Still(escalated) => {
                    pending = Some(escalated);
                    continue;
                }
                Chosen::NewQuestion => {}
            }
        }
        match line {
            "" => continue,
            "/quit" | "/exit" | "/q" => break,
            "/help" | "/?" => println!("{HELP}"),
            "/new" => {
                leave(&grace, pending.take())?;
                session = grace.create_session_as(&args.scope)?.id;
                last = None;
                last_answer = None;
                waiting = None;
                if !args.json {
                    println!("New conversation (session {session}).");
                }
            }
            "/sources" => match &last {
                Some(r) => output::cited_sources(r),
                None => println!("No answer yet."),
            },
            "/trace" => match &last {
                Some(r) => output::run_report(r, true, args.json, format),
                None => println!("No answer yet."),
            },
            "/skip" if waiting.is_none() => println!("GRACE asked nothing."),
            command if command == "/good" || command.starts_with("/bad") => {
                match rate(&grace, last_answer.as_ref(), command) {
                    Ok(stored) => output::rated(&stored, args.json),
                    Err(e) => output::error(&e, args.json),
                }
            }
            command if command.starts_with('/') && command != "/skip" => {
                println!("Unknown command {command:?}. {HELP}");
            }
            // "yes" where GRACE asked nothing: no question to run.
            line if waiting.is_none() && grace::lang::is_bare_reply(line) => {
                let texts = grace::lang::Lang::of(line).texts();
                let why = grace::lang::fill(texts.nothing_asked, &[("reply", line)]);
                output::error(&grace::Error::InvalidInput(why), args.json);
            }
            line => {
                let cancel = Arc::new(AtomicBool::new(false));
                let result = match waiting.take() {
                    // The answer to GRACE's question continues its run.
                    Some(run_id) => {
                        let options = last
                            .as_ref()
                            .and_then(|r| r.clarification.as_ref())
                            .map(|c| c.options.as_slice())
                            .unwrap_or_default();
                        let reply = (line != "/skip").then(|| output::chosen(options, line));
                        grace.reply_blocking_as(
                            &run_id,
                            reply.as_deref(),
                            &args.scope,
                            cancel,
                            &mut |_| {},
                        )
                    }
                    None => {
                        let options = AskOptions {
                            limit: args.limit,
                            asker: args.asker.to_string(),
                            session_id: Some(session.clone()),
                            queue: !choosing,
                            scope: args.scope.clone(),
                            ..AskOptions::default()
                        };
                        grace.ask_blocking(line, &options, cancel, &mut |_| {})
                    }
                };
                let outcome = match result {
                    Ok(o) => o,
                    // One bad question does not end the conversation.
                    Err(e) if e.exit_code() == grace::EXIT_BAD_INPUT => {
                        output::error(&e, args.json);
                        continue;
                    }
                    Err(e) => return Err(e),
                };
                if args.json {
                    let mut shown = outcome.clone();
                    shown.report = outcome.report.formatted(format);
                    output::print_json_line(&shown);
                } else {
                    if !terminal {
                        // From a pipe: a transcript, each answer under its question.
                        println!("\n> {line}");
                    }
                    if let Some(rw) = &outcome.report.rewrite {
                        println!("(read as: {})", rw.question);
                    }
                    output::run_report(&outcome.report, false, false, format);
                    if outcome.run_id.is_some() {
                        println!(
                            "(answer on the next line: a number picks an option; /skip lets GRACE assume)"
                        );
                    }
                    if let (Some(id), Some(w)) = (outcome.review_id, &outcome.while_waiting) {
                        println!();
                        output::while_waiting(w);
                        output::queued_for_review(id);
                    }
                }
                if choosing
                    && outcome.report.decision == grace::exec::Decision::Escalate
                    && outcome.review_id.is_none()
                {
                    offer(&outcome.report);
                    let options = AskOptions {
                        limit: args.limit,
                        asker: args.asker.to_string(),
                        session_id: Some(session.clone()),
                        scope: args.scope.clone(),
                        ..AskOptions::default()
                    };
                    pending = Some(Box::new((
                        outcome.report.clone(),
                        options,
                        outcome.answer_id.clone(),
                    )));
                }
                waiting = outcome.run_id.clone();
                last_answer = outcome
                    .answer_id
                    .clone()
                    .filter(|_| outcome.status == grace::service::RunStatus::Answered)
                    .map(|id| (id, session.clone()));
                last = Some(outcome.report);
            }
        }
    }
    // Leaving with a question waiting for a choice: Enter's default.
    leave(&grace, pending.take())?;
    grace.flush()?;
    Ok(0)
}

/// `/good` or `/bad [reason]`: the asker's rating of the last answer.
fn rate(
    grace: &Grace,
    last: Option<&(String, String)>,
    command: &str,
) -> grace::Result<grace::feedback::StoredRating> {
    use grace::feedback::{Asker, Rating, Reason, Vote};
    let Some((id, session)) = last else {
        return Err(grace::Error::InvalidInput("no answer to rate yet".into()));
    };
    let (vote, reason) = match command.strip_prefix("/bad") {
        None => (Vote::Up, None),
        Some(rest) => match rest.trim() {
            "" => (Vote::Down, None),
            word => match Reason::parse(word).filter(|r| *r != Reason::Other) {
                Some(reason) => (Vote::Down, Some(reason)),
                None => {
                    return Err(grace::Error::InvalidInput(format!(
                        "unknown reason {word:?}: /bad wrong, incomplete, not_what_i_asked or outdated"
                    )));
                }
            },
        },
    };
    let rating = Rating {
        vote,
        reason,
        text: None,
    };
    grace.rate_blocking(id, &Asker::session(session), &rating)
}

/// An escalated question waiting for its asker's choice: the run, the
/// options it was asked with, its recorded answer id.
type Escalated = Box<(RunReport, AskOptions, Option<String>)>;

/// What the asker's line did to an escalated question waiting for their
/// choice.
enum Chosen {
    /// Settled: a person was asked, or the asker will rephrase.
    Done,
    /// Still waiting (the draft was shown, or the line was no option).
    Still(Escalated),
    /// The line is a new question (the escalated one goes to no one).
    NewQuestion,
}

/// The options for an escalated question, and how to pick one here.
fn offer(report: &RunReport) {
    let texts = grace::lang::Lang::of(&report.question).texts();
    asker::show_options(texts);
    println!("{}", texts.chat_choice);
}

/// `line` read against the options offered for `escalated`.
fn choice(grace: &Grace, escalated: Escalated, line: &str) -> grace::Result<Chosen> {
    let (report, _, _) = &*escalated;
    let texts = grace::lang::Lang::of(&report.question).texts();
    Ok(match Choice::of(line) {
        Choice::Draft => {
            asker::show_draft(report, texts);
            offer(report);
            Chosen::Still(escalated)
        }
        Choice::Rephrase => {
            println!("{}", texts.rephrase.trim_end().trim_end_matches(':'));
            Chosen::Done
        }
        Choice::Person => {
            ask_a_person(grace, &escalated)?;
            Chosen::Done
        }
        Choice::NotAnOption(reply) => {
            println!("{}", asker::not_an_option(&reply, texts));
            Chosen::Still(escalated)
        }
        Choice::Question(_) => {
            println!("{}", texts.not_sent);
            Chosen::NewQuestion
        }
    })
}

/// Queues `escalated` for the reviewers, and says what the asker has
/// meanwhile.
fn ask_a_person(grace: &Grace, escalated: &Escalated) -> grace::Result<()> {
    let (report, options, answer_id) = &**escalated;
    let (id, waiting) = grace.queue_escalation_blocking(report, options, answer_id.as_deref())?;
    println!();
    output::while_waiting(&waiting);
    output::queued_for_review(id);
    Ok(())
}

/// Leaving a conversation (or starting a new one) with a question waiting
/// for its asker's choice sends it to a person, as Enter would have.
fn leave(grace: &Grace, pending: Option<Escalated>) -> grace::Result<()> {
    if let Some(escalated) = pending {
        let texts = grace::lang::Lang::of(&escalated.0.question).texts();
        println!("{}", texts.sent_on_leaving);
        ask_a_person(grace, &escalated)?;
    }
    Ok(())
}
