//! A run's report: the decision, confidence, answer and citations of
//! `grace ask`/`grace chat`, with the plan and the agent's trace on request.

use grace::config::AnswerFormat;
use grace::exec::{Decision, RunReport};
use grace::plan::PlanOrigin;

use super::{counted, display_path, print_json};

/// The format answers are shown in at the terminal: `answer.format`,
/// text unless it says Markdown.
pub fn terminal_format(config: &grace::Config) -> AnswerFormat {
    config.answer.format.unwrap_or(AnswerFormat::Text)
}

/// The run as JSON, with the review queue's id when it was escalated.
pub fn run_report_with_ids(
    r: &RunReport,
    review_id: Option<i64>,
    answer_id: Option<&str>,
    while_waiting: Option<&grace::service::WhileWaiting>,
    format: AnswerFormat,
) {
    let r = &r.formatted(format);
    let mut value = serde_json::to_value(r).unwrap_or(serde_json::Value::Null);
    if let Some(map) = value.as_object_mut() {
        if let Some(id) = review_id {
            map.insert("review_id".into(), id.into());
        }
        if let Some(w) = while_waiting {
            map.insert(
                "while_waiting".into(),
                serde_json::to_value(w).unwrap_or_default(),
            );
        }
        if let Some(id) = answer_id {
            map.insert("answer_id".into(), id.into());
        }
    }
    print_json(&value);
}

pub fn run_report(r: &RunReport, trace: bool, json: bool, format: AnswerFormat) {
    let r = &r.formatted(format);
    if json {
        print_json(r);
        return;
    }
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
                    // A draft's list or term goes on lines of its own.
                    println!("  {}. {}", i + 1, o.replace('\n', "\n     "));
                }
            }
        }
        Decision::Escalate => {
            // The asker's view: the reviewer's question and options (the
            // draft to confirm) are the reviewer's, shown with --trace.
            println!("{}", with_confidence(texts.escalated));
            if let (true, Some(req)) = (trace, &r.escalation) {
                println!("\n{}{}", texts.question_for_reviewer, req.question);
                println!("{}{}", texts.reason, req.reason);
                for (i, o) in req.options.iter().enumerate() {
                    // A draft's list or term goes on lines of its own.
                    println!("  {}. {}", i + 1, o.replace('\n', "\n     "));
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
        "\nconfidence {:.2} -> {}{}",
        r.confidence,
        r.decision.as_str(),
        if r.recovered {
            " (after a wider search)"
        } else {
            ""
        }
    );
    if trace || r.decision != Decision::Answer {
        why(r, texts);
    }
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

/// Why the run's confidence is what it is, in the asker's words: where
/// every answer starts, then each factor's effect, largest first (what was
/// missing first for a declined question); what is listed adds up to the
/// logit.
fn why(r: &RunReport, texts: &grace::lang::Texts) {
    let Some(score) = r
        .steps
        .iter()
        .rev()
        .map(|s| &s.confidence)
        .find(|c| !c.contributions.is_empty())
    else {
        return;
    };
    let Some(e) = grace::confidence::explain(score) else {
        return;
    };
    println!(
        "  {}",
        grace::lang::fill(
            texts.starts_at,
            &[("value", &format!("{:+.2}", e.baseline))]
        )
    );
    let raised = (texts.raised, &e.raised);
    let lowered = match r.decision {
        Decision::Decline => (texts.missing, &e.lowered),
        _ => (texts.lowered, &e.lowered),
    };
    let order = match r.decision {
        Decision::Decline => [lowered, raised],
        _ => [raised, lowered],
    };
    for (title, terms) in order {
        if terms.is_empty() {
            continue;
        }
        println!("  {title}");
        for c in terms.iter() {
            println!("    {:+6.2}  {}", c.term, c.factor.in_words(texts, c));
        }
    }
    let total = grace::lang::fill(
        texts.total,
        &[
            ("logit", &format!("{:+.2}", e.logit)),
            ("score", &format!("{:.2}", score.score)),
        ],
    );
    if (score.score - r.confidence).abs() < 0.005 {
        println!("  {total}");
    } else {
        let combined = grace::lang::fill(
            texts.combined,
            &[("confidence", &format!("{:.2}", r.confidence))],
        );
        println!("  {total} {combined}");
    }
}

/// While a person checks: the passages GRACE found, marked as possibly
/// relevant (never as an answer), and how long reviews usually take here.
pub fn while_waiting(w: &grace::service::WhileWaiting) {
    if !w.possibly_relevant.is_empty() {
        println!("Possibly relevant while a person checks (not an answer):");
        for p in &w.possibly_relevant {
            let page = p.page.map(|n| format!(" p. {n}")).unwrap_or_default();
            let section = if p.section.is_empty() {
                String::new()
            } else {
                format!(" § {}", p.section)
            };
            println!("  - {}{page}{section}", display_path(&p.source));
            println!("    {}", super::snippet(&p.text, 200));
        }
        println!();
    }
    match w.typical_review_seconds {
        Some(s) => println!(
            "A person usually answers here within {}.",
            grace::text::duration_words(s)
        ),
        None => println!("No question has been answered by a person here yet."),
    }
}

pub fn print_citations(a: &grace::tools::Answer) {
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

/// `/sources` in `grace chat`: what the last answer cites, a line each.
pub fn cited_sources(r: &RunReport) {
    let cited = r
        .answer
        .as_ref()
        .filter(|a| !a.abstained)
        .map(|a| a.citations.as_slice())
        .unwrap_or_default();
    if cited.is_empty() {
        println!("The last answer cites no sources.");
        return;
    }
    for c in cited {
        println!(
            "[{}] {}{}",
            c.number,
            c.source
                .as_deref()
                .map(display_path)
                .unwrap_or_else(|| "(no source)".into()),
            c.section
                .as_deref()
                .map(|s| format!(" — {s}"))
                .unwrap_or_default()
        );
    }
}

/// The line that tells the asker where an escalated question went.
pub fn queued_for_review(id: i64) {
    println!(
        "Queued for review as escalation #{id}: `grace answer {id}` shows the answer once a reviewer gives it."
    );
}

/// How to rate an answered run, under its answer.
pub fn how_to_rate(answer_id: &str) {
    println!("(rate this answer: grace feedback {answer_id} up|down)");
}

/// A rating as stored.
pub fn rated(stored: &grace::feedback::StoredRating, json: bool) {
    if json {
        print_json(stored);
        return;
    }
    let verb = if stored.replaced {
        "Changed your rating of"
    } else {
        "Rated"
    };
    let reason = stored
        .rating
        .reason
        .map(|r| format!(" ({})", r.as_str().replace('_', " ")))
        .unwrap_or_default();
    println!(
        "{verb} {}: {}{reason}.",
        stored.answer_id,
        stored.rating.vote.as_str()
    );
    if let Some(e) = &stored.escalation {
        println!(
            "A person will check it: escalation #{} (`grace answer {}` shows their answer).",
            e.review_id, e.review_id
        );
    }
}

/// The gap report: each group with its count, reasons, trend and examples.
pub fn gaps(report: &grace::gaps::GapReport, json: bool) {
    if json {
        print_json(report);
        return;
    }
    let days = (report.until - report.since).num_days();
    if report.groups.is_empty() {
        println!(
            "No unanswered questions in the last {days} days: nothing declined, escalated or rated down."
        );
        return;
    }
    println!(
        "What the knowledge base is missing: {} people did not get an answer to in the last {days} days, in {}{}.",
        counted(report.questions, "question"),
        counted(report.total_groups, "group"),
        if report.total_groups > report.groups.len() {
            format!(" (the {} most asked shown)", report.groups.len())
        } else {
            String::new()
        }
    );
    for (n, g) in report.groups.iter().enumerate() {
        let reasons: Vec<String> = [
            (g.declined, "declined"),
            (g.escalated, "escalated"),
            (g.rated_down, "rated down"),
        ]
        .iter()
        .filter(|(k, _)| *k > 0)
        .map(|(k, what)| format!("{k} {what}"))
        .collect();
        let trend = match g.recent.cmp(&g.earlier) {
            std::cmp::Ordering::Greater => "rising",
            std::cmp::Ordering::Less => "falling",
            std::cmp::Ordering::Equal => "steady",
        };
        println!();
        println!("{}. \"{}\"", n + 1, g.label);
        let times = match g.count {
            1 => "once".to_string(),
            n => format!("{n} times"),
        };
        println!(
            "   asked {times} ({}); {trend}: {} in the last {} days, {} before",
            reasons.join(", "),
            g.recent,
            days / 2,
            g.earlier
        );
        for e in &g.examples {
            println!("   - {e}");
        }
    }
}
