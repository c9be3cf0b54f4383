//! The queue's transitions, refusals, expiry, messages and context, on a
//! real SQLite database in a temporary folder. The shared fixtures are
//! here; the tests, by topic, in the files beside this one.

mod expiry;
mod groups;
mod listing;
mod messages;
mod transitions;

use std::time::Duration;

use super::*;
use crate::confidence::Level;
use crate::config::Config;
use crate::exec::{CONFIRM_OPTION_PREFIX, Decision, HumanReply, NOT_ANSWERED_OPTION, RunReport};
use crate::plan::PlanOrigin;
use crate::tools::{Answer, Citation, Urgency, UserRequest};

fn escalated_run(question: &str) -> RunReport {
    RunReport {
        question: question.into(),
        rewrite: None,
        answer: Some(Answer {
            text: "Run orbit rollback [1].".into(),
            citations: vec![Citation {
                number: 1,
                source: Some("/kb/troubleshooting.md".into()),
                section: Some("Rollback".into()),
                page: None,
            }],
            abstained: false,
            self_confidence: None,
            usage: Default::default(),
            generator: "extractive".into(),
        }),
        confidence: 0.31,
        level: Level::Escalate,
        decision: Decision::Escalate,
        escalation: Some(UserRequest {
            question: question.into(),
            reason: "confidence 0.31 is below 0.70 (notify)".into(),
            options: vec![
                format!("{CONFIRM_OPTION_PREFIX}Run orbit rollback [1]."),
                NOT_ANSWERED_OPTION.into(),
            ],
            urgency: Urgency::Blocking,
            awaiting_response: true,
        }),
        plan: PlanOrigin::Default,
        recovered: false,
        decided_by: None,
        steps: Vec::new(),
        agent: None,
        clarification: None,
        parked: None,
        conversation: Vec::new(),
        scope: Default::default(),
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    config: Config,
    queue: ReviewQueue,
}

fn fixture(auto_proceed: bool) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config::default();
    config.storage.data_dir = dir.path().to_path_buf();
    config.review.auto_proceed_on_timeout = auto_proceed;
    let queue = ReviewQueue::open(&config).unwrap();
    for id in ["alice", "bob", "carol"] {
        queue
            .register_reviewer(&Reviewer {
                id: id.into(),
                name: id.to_uppercase(),
                description: String::new(),
            })
            .unwrap();
    }
    Fixture {
        _dir: dir,
        config,
        queue,
    }
}

fn escalate(q: &ReviewQueue, allowed: Option<&[&str]>, timeout: Option<Duration>) -> Escalation {
    let run = escalated_run("How do I roll back?");
    q.escalate(NewEscalation {
        report: &run,
        collection: "grace",
        asker: "user",
        allowed: allowed.map(|a| a.iter().map(|s| s.to_string()).collect()),
        timeout,
        vector: None,
    })
    .unwrap()
}

fn text(t: &str) -> ReviewAnswer {
    ReviewAnswer {
        reply: HumanReply::Text(t.into()),
        sources: Vec::new(),
        confidence: None,
        verdict: None,
    }
}

fn actions(q: &ReviewQueue, id: i64) -> Vec<String> {
    q.log(id, Viewer::Asker)
        .unwrap()
        .into_iter()
        .map(|a| a.action)
        .collect()
}

#[test]
fn the_queue_survives_reopening() {
    let f = fixture(false);
    let e = escalate(&f.queue, None, None);
    drop(f.queue);
    let queue = ReviewQueue::open(&f.config).unwrap();
    let seen = queue.get(e.id, Viewer::Asker).unwrap();
    assert_eq!(seen.run, e.run);
    assert_eq!(seen.status, Status::Pending);
}
