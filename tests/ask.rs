//! Answering end to end on the sample knowledge base: plan, tools, the
//! extractive generator, confidence and the decision. A confident wrong
//! answer is the worst outcome: questions the knowledge base does not
//! answer must never come back as a plain answer.

mod common;

use std::sync::Arc;

use grace::exec::{Decision, Event, Executor, RunReport};
use grace::tools::ToolRegistry;

fn ask(
    kb: &Arc<grace::KnowledgeBase>,
    config: &grace::Config,
    q: &str,
) -> (RunReport, Vec<String>) {
    let registry = ToolRegistry::from_config(config, kb.clone()).unwrap();
    let executor = Executor::new(&registry, config, 5);
    let mut events = Vec::new();
    let report = executor
        .ask(q, &mut |e| {
            events.push(match e {
                Event::StepStarted { step } => format!("start {}", step.id),
                Event::StepFinished { record } => format!("finish {}", record.id),
                Event::Recovering { .. } => "recovering".into(),
                Event::Escalated { .. } => "escalated".into(),
                Event::Answered { .. } => "answered".into(),
            })
        })
        .unwrap();
    (report, events)
}

#[test]
fn an_answerable_question_is_answered_with_citations() {
    let data = tempfile::tempdir().unwrap();
    let kb = common::open_sample(data.path());
    let (r, events) = ask(&kb, kb.config(), "How do I rotate an API key?");
    assert!(
        matches!(r.decision, Decision::Answer | Decision::Caveat),
        "{r:#?}"
    );
    let answer = r.answer.as_ref().unwrap();
    assert!(!answer.abstained && answer.text.contains("[1]"));
    assert!(
        answer.citations[0]
            .source
            .as_deref()
            .unwrap()
            .ends_with("secrets.html")
    );
    assert!(r.confidence >= kb.config().confidence.thresholds.notify);
    assert_eq!(
        events[..4],
        [
            "start search",
            "finish search",
            "start answer",
            "finish answer"
        ]
    );
    assert_eq!(events.last().unwrap(), "answered");
    // The answer step is explained: its factors include the retrieval's.
    let step = &r.steps[1];
    let factors: Vec<_> = step
        .confidence
        .contributions
        .iter()
        .map(|c| c.factor)
        .collect();
    assert!(factors.contains(&grace::confidence::Factor::MaxScore));
    assert!(factors.contains(&grace::confidence::Factor::Groundedness));
}

#[test]
fn unanswerable_questions_are_never_answered_confidently() {
    let data = tempfile::tempdir().unwrap();
    let kb = common::open_sample(data.path());
    for q in [
        "Who won the 1998 football world cup?",
        "Can I deploy on Fridays?",
        "What is the capital of Australia?",
        "How do I reset my laptop password?",
    ] {
        let (r, events) = ask(&kb, kb.config(), q);
        assert!(
            matches!(r.decision, Decision::Escalate | Decision::Decline),
            "{q}: {:?} at {:.2}: {:?}",
            r.decision,
            r.confidence,
            r.answer
        );
        assert!(
            events.contains(&"recovering".to_string()),
            "{q}: no recovery tried: {events:?}"
        );
        if r.decision == Decision::Escalate {
            let req = r.escalation.as_ref().unwrap();
            assert!(req.awaiting_response);
            assert!(req.reason.contains("below"));
            assert!(req.options.iter().any(|o| o.contains("does not answer")));
        }
    }
}

#[test]
fn without_ask_user_an_unconfident_run_declines() {
    let data = tempfile::tempdir().unwrap();
    let kb = common::open_sample(data.path());
    let mut config = kb.config().clone();
    config.tools.enabled = vec!["rag_search".into(), "reasoning".into()];
    let (r, _) = ask(&kb, &config, "Can I deploy on Fridays?");
    assert_eq!(r.decision, Decision::Decline);
    assert!(r.escalation.is_none());
}

#[test]
fn a_plan_needing_a_disabled_tool_is_refused() {
    let data = tempfile::tempdir().unwrap();
    let kb = common::open_sample(data.path());
    let mut config = kb.config().clone();
    config.tools.enabled = vec!["rag_search".into()];
    let registry = ToolRegistry::from_config(&config, kb.clone()).unwrap();
    let executor = Executor::new(&registry, &config, 5);
    let err = executor.ask("q?", &mut |_| {}).unwrap_err();
    assert!(err.to_string().contains("reasoning"), "{err}");
}
