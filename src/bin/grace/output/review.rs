//! The review queue as people read it: escalations, their audit log, the
//! reviewers' messages and what the asker sees.

use grace::Passage;
use grace::review::{AuditEntry, Escalation, Message, Outcome, Reviewer};

use super::run::print_citations;
use super::{display_path, json_or, print_json, snippet, when};

/// A table of escalations.
pub fn escalations(list: &[Escalation], json: bool) {
    json_or(json, &list, || {
        if list.is_empty() {
            println!("no escalations");
            return;
        }
        println!(
            "{:>5}  {:<9}  {:<10}  {:>5}  {:>6}  {:<20}  question",
            "id", "status", "claimed", "conf", "askers", "expires"
        );
        for e in list {
            println!(
                "{:>5}  {:<9}  {:<10}  {:>5.2}  {:>6}  {:<20}  {}",
                e.id,
                e.status.as_str(),
                e.claimed_by.as_deref().unwrap_or("-"),
                e.run.confidence,
                1 + e.also_asked.len(),
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
        if let Some(lead) = e.joined_to {
            println!(
                "Joined #{lead}: answered with it (`grace review detach {}` if it asks something else)",
                e.id
            );
        }
        if !e.also_asked.is_empty() {
            println!(
                "Also asked, answered with this one ({} more):",
                e.also_asked.len()
            );
            for a in &e.also_asked {
                println!("  #{} {}: {}", a.id, a.asker, a.question);
            }
        }
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
            if let Some(q) = &r.for_question {
                println!("Answered for a question like yours: \"{q}\"\n");
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

/// A freshly issued token, with how to hand it over.
pub fn reviewer_token(id: &str, token: &str) {
    println!("token for {id} (shown only now; GRACE keeps only its hash):\n  {token}");
    println!(
        "give it to {id} over a private channel: it signs in on the reviewer page and is sent as `Authorization: Bearer <token>`"
    );
}

/// `grace review reviewers`: a line each.
pub fn reviewers(list: &[Reviewer], json: bool) {
    json_or(json, &list, || {
        for r in list {
            println!("{:<16} {:<24} {}", r.id, r.name, r.description);
        }
    });
}

/// The new draft after a reviewer's hint, and how to answer it.
pub fn redraft(e: &Escalation, reviewer: &str, json: bool) {
    json_or(json, e, || {
        println!(
            "GRACE searched again with your hint (confidence {:.2}). New options:",
            e.run.confidence
        );
        for (i, o) in e.request.options.iter().enumerate() {
            println!("  {}. {o}", i + 1);
        }
        println!(
            "\nAnswer with: grace review --as {reviewer} answer {} --option N (or --text …)",
            e.id
        );
    });
}

/// `grace answer --wait` when no reviewer answered in time and
/// `review.auto_proceed_on_timeout` lets GRACE's own draft through.
pub fn not_reviewed(e: &Escalation, draft: &grace::tools::Answer, waited: std::time::Duration) {
    println!(
        "Not reviewed: no reviewer answered within {:.0} s. GRACE's own low-confidence answer (the question stays open for reviewers until {}):\n\n{}",
        waited.as_secs_f64(),
        e.expires_at.format("%Y-%m-%d %H:%M UTC"),
        draft.text
    );
}
