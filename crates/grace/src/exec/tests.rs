use super::*;
use crate::tools::{Answer, Urgency};

#[test]
fn a_decision_reads_as_the_api_spells_it() {
    for d in [
        Decision::Answer,
        Decision::Caveat,
        Decision::Escalate,
        Decision::Decline,
        Decision::NeedsInput,
    ] {
        assert_eq!(serde_json::to_value(d).unwrap(), d.as_str());
    }
}

fn escalated() -> RunReport {
    RunReport {
        question: "q?".into(),
        rewrite: None,
        answer: Some(Answer {
            text: "draft [1]".into(),
            citations: Vec::new(),
            abstained: false,
            self_confidence: None,
            usage: Default::default(),
            generator: "extractive".into(),
        }),
        confidence: 0.5,
        level: Level::Confirm,
        decision: Decision::Escalate,
        plan: PlanOrigin::Default,
        escalation: Some(UserRequest {
            question: "q?".into(),
            reason: "r".into(),
            options: vec![
                format!("{CONFIRM_OPTION_PREFIX}draft [1]"),
                NOT_ANSWERED_OPTION.into(),
            ],
            urgency: Urgency::Blocking,
            awaiting_response: true,
        }),
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

#[test]
fn human_replies_decide_an_escalated_run() {
    let mut r = escalated();
    r.apply_reply(&HumanReply::Option(1), "user").unwrap();
    assert_eq!(
        (r.decision, r.decided_by.as_deref()),
        (Decision::Answer, Some("user"))
    );
    assert_eq!(r.answer.as_ref().unwrap().text, "draft [1]");

    let mut r = escalated();
    r.apply_reply(&HumanReply::Option(2), "user").unwrap();
    assert_eq!(r.decision, Decision::Decline);

    let mut r = escalated();
    r.apply_reply(&HumanReply::Text("  Use orbit rollback.  ".into()), "alice")
        .unwrap();
    let a = r.answer.as_ref().unwrap();
    assert_eq!(
        (a.text.as_str(), a.generator.as_str()),
        ("Use orbit rollback.", "human:alice")
    );
    assert_eq!(r.decision, Decision::Answer);

    let mut r = escalated();
    r.apply_reply(&HumanReply::Skip, "user").unwrap();
    assert_eq!(
        (r.decision, r.decided_by.clone()),
        (Decision::Escalate, None)
    );
    assert!(r.apply_reply(&HumanReply::Option(3), "user").is_err());
    assert!(
        r.apply_reply(&HumanReply::Text(" ".into()), "user")
            .is_err()
    );
    r.escalation = None;
    assert!(r.apply_reply(&HumanReply::Option(1), "user").is_err());
}
