//! `grace review …` (the reviewer's side), `grace answer ID` (the asker's
//! side) and queueing an escalated `grace ask`.

use std::time::Duration;

use clap::Subcommand;
use grace::exec::{HumanReply, RunReport};
use grace::review::{
    MessageStatus, NewEscalation, Outcome, ReviewAnswer, ReviewQueue, Reviewer, Status, Viewer,
};
use grace::tools::Citation;
use grace::{Config, KnowledgeBase, OpenMode};

use crate::output;

#[derive(Debug, Subcommand)]
pub enum ReviewCommand {
    /// Register a reviewer (or update their name and description) and
    /// print their token for the HTTP API and the reviewer page, once
    Register {
        /// The reviewer's id (no spaces), used with --as
        id: String,
        /// The name shown to askers and on the reviewer page (default: the
        /// name registered before, else the id)
        #[arg(long)]
        name: Option<String>,
        /// What they review (default: the description registered before,
        /// else none)
        #[arg(long)]
        description: Option<String>,
    },
    /// Issue a new token for a reviewer and print it, once; the old one
    /// stops working at once
    Rotate {
        /// The reviewer's id
        id: String,
    },
    /// List registered reviewers
    Reviewers,
    /// List escalations (open ones unless --status or --all)
    List {
        #[arg(long, value_name = "STATUS")]
        status: Option<Status>,
        /// Every status
        #[arg(long, conflicts_with = "status")]
        all: bool,
    },
    /// Show an escalation: question, reason, factors, sources, options
    Show { id: i64 },
    /// Take an escalation so that no other reviewer answers it
    Claim { id: i64 },
    /// Give a claimed escalation back to the pool
    Release { id: i64 },
    /// Take an escalation out of the one it joined (a near repeat answered
    /// with it): its asker asks something else, and it stands alone
    Detach { id: i64 },
    /// Answer an escalation; feedback starting with a replan word
    /// (review.replan_words: "redo: look under rollback") makes GRACE
    /// search again with the hint instead
    Answer {
        id: i64,
        /// The answer in your own words
        #[arg(long, conflicts_with = "option", required_unless_present = "option")]
        text: Option<String>,
        /// The number of an offered option
        #[arg(long)]
        option: Option<usize>,
        /// A corrected source to cite (PATH or PATH#SECTION; repeatable)
        #[arg(long = "source", value_name = "PATH[#SECTION]")]
        sources: Vec<String>,
        /// Your confidence in the answer [default: review.reviewer_confidence]
        #[arg(long)]
        confidence: Option<f64>,
        /// Add the question and answer to the knowledge base, citing you
        #[arg(long)]
        promote: bool,
        /// What GRACE's draft was: right, partly_right or wrong [default:
        /// implied by your answer: the draft confirmed or kept is right]
        #[arg(long, value_parser = ["right", "partly_right", "wrong"])]
        verdict: Option<String>,
    },
    /// Decline to answer, saying why (the asker gets the reason)
    Reject {
        id: i64,
        #[arg(long)]
        why: String,
    },
    /// Remove a promoted answer from the knowledge base
    Retract { id: i64 },
    /// Every recorded transition of an escalation
    Log { id: i64 },
    /// Your messages (new escalations arrive as messages too)
    Messages {
        #[arg(long, value_name = "pending|read|archived")]
        status: Option<String>,
    },
    /// Mark a message as read
    Read { message: i64 },
    /// Show escalations as they arrive and answer them at the prompt
    Watch {
        /// Seconds between looks at the queue
        #[arg(long, default_value_t = 2.0)]
        interval: f64,
    },
}

/// Runs `grace review …` as reviewer `who` (from --as or GRACE_REVIEWER).
pub fn run(
    config: &Config,
    who: Option<&str>,
    command: &ReviewCommand,
    json: bool,
) -> grace::Result<u8> {
    let queue = ReviewQueue::open(config)?;
    let viewer = who.map_or(Viewer::Anyone, Viewer::Reviewer);
    let me = || {
        who.ok_or_else(|| {
            grace::Error::InvalidInput(
                "say who you are: grace review --as REVIEWER_ID … (or set GRACE_REVIEWER)".into(),
            )
        })
    };
    match command {
        ReviewCommand::Register {
            id,
            name,
            description,
        } => {
            let before = queue.reviewers()?.into_iter().find(|r| &r.id == id);
            let name = name
                .clone()
                .or_else(|| before.as_ref().map(|r| r.name.clone()))
                .unwrap_or_else(|| id.clone());
            let description = description
                .clone()
                .or_else(|| before.as_ref().map(|r| r.description.clone()))
                .unwrap_or_default();
            let r = Reviewer {
                id: id.clone(),
                name: name.clone(),
                description: description.clone(),
            };
            queue.register_reviewer(&r)?;
            // A reviewer that has a token keeps it (rotate to replace it).
            let token = if queue.has_token(id)? {
                None
            } else {
                Some(queue.issue_token(id)?)
            };
            let out = serde_json::json!({
                "id": r.id, "name": r.name, "description": r.description, "token": token,
            });
            output::json_or(json, &out, || {
                println!("registered reviewer {id} ({name})");
                match &token {
                    Some(t) => output::reviewer_token(id, t),
                    None => println!(
                        "{id} keeps their token; `grace review rotate {id}` issues a new one"
                    ),
                }
            });
        }
        ReviewCommand::Rotate { id } => {
            let token = queue.issue_token(id)?;
            let out = serde_json::json!({"id": id, "token": token});
            output::json_or(json, &out, || output::reviewer_token(id, &token));
        }
        ReviewCommand::Reviewers => {
            let list = queue.reviewers()?;
            output::reviewers(&list, json);
        }
        ReviewCommand::List { status, all } => {
            let mut list = queue.list(viewer, *status)?;
            if status.is_none() && !all {
                list.retain(|e| e.status.is_open());
            }
            withhold(config, who, &mut list)?;
            output::escalations(&list, json);
        }
        ReviewCommand::Show { id } => {
            let mut e = [queue.get(*id, viewer)?];
            withhold(config, who, &mut e)?;
            output::escalation(&e[0], json)
        }
        ReviewCommand::Claim { id } => {
            let e = queue.claim(*id, me()?)?;
            output::json_or(json, &e, || {
                println!("escalation {id} is claimed by {}", me().unwrap_or_default())
            });
        }
        ReviewCommand::Release { id } => {
            let e = queue.release(*id, me()?)?;
            output::json_or(json, &e, || println!("escalation {id} is pending again"));
        }
        ReviewCommand::Detach { id } => {
            let e = queue.detach(*id, me()?)?;
            output::json_or(json, &e, || {
                println!("escalation {id} stands alone now ({})", e.status)
            });
        }
        ReviewCommand::Answer {
            id,
            text,
            option,
            sources,
            confidence,
            promote,
            verdict,
        } => {
            let reviewer = me()?;
            if let Some(hint) = text
                .as_deref()
                .and_then(|t| grace::review::replan::hint(t, &config.review.replan_words))
            {
                return redraft(config, &queue, *id, reviewer, &hint, json);
            }
            let reply = match (text, option) {
                (Some(t), _) => HumanReply::Text(t.clone()),
                (None, Some(n)) => HumanReply::Option(*n),
                (None, None) => {
                    return Err(grace::Error::InvalidInput("give --text or --option".into()));
                }
            };
            let answer = ReviewAnswer {
                reply,
                sources: sources
                    .iter()
                    .enumerate()
                    .map(|(i, s)| citation(i, s))
                    .collect(),
                confidence: *confidence,
                verdict: verdict.as_deref().and_then(grace::review::Verdict::parse),
            };
            let resolution = queue.answer(*id, reviewer, &answer)?;
            let mut promoted = None;
            if *promote && resolution.outcome == Outcome::Answered {
                let kb = KnowledgeBase::open(config.clone(), OpenMode::Create)?;
                promoted = Some(grace::review::promote::promote(&kb, &queue, *id, reviewer)?);
            }
            let e = queue.get(*id, Viewer::Asker)?;
            output::json_or(json, &e, || {
                println!("escalation {id}: {} by {reviewer}", e.status);
                if let Some(p) = &promoted {
                    println!(
                        "promoted to the knowledge base as {}",
                        output::display_path(&p.to_string_lossy())
                    );
                }
            });
        }
        ReviewCommand::Reject { id, why } => {
            let r = queue.reject(*id, me()?, why)?;
            output::json_or(json, &r, || {
                println!("escalation {id} rejected: {}", why.trim())
            });
        }
        ReviewCommand::Retract { id } => {
            let kb = KnowledgeBase::open(config.clone(), OpenMode::Existing)?;
            grace::review::promote::retract(&kb, &queue, *id, who.unwrap_or("operator"))?;
            let e = queue.get(*id, Viewer::Asker)?;
            output::json_or(json, &e, || {
                println!("escalation {id}: promoted answer removed from the knowledge base")
            });
        }
        ReviewCommand::Log { id } => output::audit(&queue.log(*id, viewer)?, json),
        ReviewCommand::Messages { status } => {
            let status = status.as_deref().map(parse_message_status).transpose()?;
            output::messages(&queue.messages(me()?, status)?, json);
        }
        ReviewCommand::Read { message } => {
            let s = queue.mark_as_read(*message, me()?)?;
            output::json_or(
                json,
                &serde_json::json!({"message": message, "status": s}),
                || println!("message {message} is read"),
            );
        }
        ReviewCommand::Watch { interval } => watch(config, &queue, me()?, *interval)?,
    }
    Ok(0)
}

fn parse_message_status(s: &str) -> grace::Result<MessageStatus> {
    serde_json::from_value(serde_json::Value::String(s.to_string())).map_err(|_| {
        grace::Error::InvalidInput(format!(
            "unknown message status {s:?}: use pending, read or archived"
        ))
    })
}

/// What reviewer `--as ID` may not read, taken out of `escalations` when
/// the reviewer is also a principal (as the review endpoints do); the
/// operator, without `--as`, reads everything.
fn withhold(
    config: &Config,
    reviewer: Option<&str>,
    escalations: &mut [grace::review::Escalation],
) -> grace::Result<()> {
    let Some(id) = reviewer else { return Ok(()) };
    let Some(principals) = grace::auth::Principals::open_existing(config)? else {
        return Ok(());
    };
    let scope = grace::auth::reviewer_scope(&principals, id)?;
    let manifest = grace::ingest::manifest::Manifest::load_for(config)?;
    grace::review::withhold::for_scope(escalations, &scope, manifest.as_ref());
    Ok(())
}

/// `PATH` or `PATH#SECTION` as a citation (the path made canonical when it exists).
fn citation(index: usize, spec: &str) -> Citation {
    let (path, section) = match spec.split_once('#') {
        Some((p, s)) => (p, Some(s.to_string())),
        None => (spec, None),
    };
    let source = std::fs::canonicalize(path)
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|_| path.to_string());
    Citation {
        number: index + 1,
        source: Some(source),
        section,
        page: None,
    }
}

/// Runs the question again with the reviewer's hint as a second search and
/// puts the new draft back to the reviewer.
fn redraft(
    config: &Config,
    queue: &ReviewQueue,
    id: i64,
    reviewer: &str,
    hint: &str,
    json: bool,
) -> grace::Result<u8> {
    let e = grace::review::replan::redraft(config, queue, id, reviewer, hint)?;
    output::redraft(&e, reviewer, json);
    Ok(0)
}

/// Puts an escalated run in the queue (joining an open escalation of a
/// near repeat, compared by `vector`, the question as run embedded);
/// returns its id.
pub fn enqueue(
    config: &Config,
    report: &RunReport,
    reviewers: &[String],
    asker: &str,
    vector: Option<&[f32]>,
) -> grace::Result<i64> {
    let queue = ReviewQueue::open(config)?;
    let e = queue.escalate(NewEscalation {
        report,
        collection: &config.collection.name,
        asker,
        allowed: (!reviewers.is_empty()).then(|| reviewers.to_vec()),
        timeout: None,
        vector,
    })?;
    Ok(e.id)
}

/// `grace answer ID`: the asker's view; waits with `wait`. Exit 0 when
/// there is an answer, 4 when not (yet).
pub fn answer(
    config: &Config,
    id: i64,
    wait: Option<Duration>,
    cancel: bool,
    json: bool,
) -> grace::Result<u8> {
    let queue = ReviewQueue::open(config)?;
    if cancel {
        queue.cancel(id, "asker")?;
    }
    let e = match wait {
        Some(timeout) => match queue.wait_blocking(id, timeout) {
            Ok(e) => e,
            Err(grace::review::ReviewError::WaitTimedOut { .. }) => {
                let e = queue.get(id, Viewer::Asker)?;
                // The asker's wait is over, not the escalation: it stays
                // in the queue for reviewers until it expires.
                let draft = e.run.answer.as_ref().filter(|a| !a.abstained);
                if let (true, Some(draft), true) =
                    (config.review.auto_proceed_on_timeout, draft, json)
                {
                    // The asker's view: never the other askers who joined it.
                    output::print_json_line(&serde_json::json!({
                        "not_reviewed": true,
                        "answer": draft,
                        "escalation": {
                            "id": e.id, "status": e.status, "question": e.question,
                            "resolution": e.resolution,
                        },
                    }));
                    return Ok(0);
                }
                if let (true, Some(draft)) = (config.review.auto_proceed_on_timeout, draft) {
                    output::not_reviewed(&e, draft, timeout);
                    return Ok(0);
                }
                e
            }
            Err(other) => return Err(other.into()),
        },
        None => queue.get(id, Viewer::Asker)?,
    };
    output::asker_view(&e, json);
    let answered = e
        .resolution
        .as_ref()
        .is_some_and(|r| matches!(r.outcome, Outcome::Answered | Outcome::ProceededUnreviewed));
    Ok(if answered {
        0
    } else {
        grace::EXIT_NOT_ANSWERED
    })
}

/// `grace review watch`: prints new escalations as they arrive and takes
/// an answer for each at the prompt (a number, your own words, `s` to skip,
/// `r REASON` to reject, `q` to quit).
fn watch(config: &Config, queue: &ReviewQueue, me: &str, interval: f64) -> grace::Result<()> {
    use std::io::{BufRead, Write};
    if !(interval.is_finite() && interval > 0.0) {
        return Err(grace::Error::InvalidInput(
            "--interval must be above 0".into(),
        ));
    }
    let mut skipped: Vec<i64> = Vec::new();
    let stdin = std::io::stdin();
    println!("Watching for escalations as {me} (q to quit)…");
    loop {
        let next = queue
            .list(Viewer::Reviewer(me), None)?
            .into_iter()
            .rev()
            .find(|e| {
                !skipped.contains(&e.id)
                    && (e.status == Status::Pending || e.claimed_by.as_deref() == Some(me))
            });
        let Some(e) = next else {
            std::thread::sleep(Duration::from_secs_f64(interval));
            continue;
        };
        println!();
        output::escalation(&e, false);
        print!(
            "\nAnswer #{} (number, your words, s skip, r REASON reject, q quit): ",
            e.id
        );
        let _ = std::io::stdout().flush();
        let mut line = String::new();
        if stdin.lock().read_line(&mut line).unwrap_or(0) == 0 {
            return Ok(());
        }
        let line = line.trim();
        let result = match line {
            "q" => return Ok(()),
            "" | "s" => {
                skipped.push(e.id);
                continue;
            }
            _ if line.starts_with("r ") => queue.reject(e.id, me, &line[2..]).map(|_| ()),
            _ => {
                if let Some(hint) = grace::review::replan::hint(line, &config.review.replan_words) {
                    redraft(config, queue, e.id, me, &hint, false).map(|_| ())?;
                    continue;
                }
                let reply = match line.parse::<usize>() {
                    Ok(n) => HumanReply::Option(n),
                    Err(_) => HumanReply::Text(line.to_string()),
                };
                queue
                    .answer(
                        e.id,
                        me,
                        &ReviewAnswer {
                            reply,
                            sources: Vec::new(),
                            confidence: None,
                            verdict: None,
                        },
                    )
                    .map(|_| ())
            }
        };
        match result {
            Ok(()) => println!("escalation {} settled", e.id),
            Err(err) => println!("not recorded: {err}"),
        }
    }
}
