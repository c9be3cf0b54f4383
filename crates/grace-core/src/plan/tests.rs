//! Plans checked, made by a scripted language model, and the fallback
//! to the default plan.

use std::sync::Arc;

use super::*;
use crate::llm::{GenerateRequest, LlmClient, ToolSpec};

const ENABLED: &[&str] = &["rag_search", "reasoning", "ask_user"];

/// A language model that replies with fixed text (or fails).
struct Scripted(Result<String, crate::llm::LlmError>);

impl LlmClient for Scripted {
    fn name(&self) -> &str {
        "scripted"
    }
    fn can_plan(&self) -> bool {
        true
    }
    fn generate(&self, request: &GenerateRequest) -> crate::llm::Result<crate::llm::Generation> {
        assert!(request.json_schema.is_some(), "plans are asked for as JSON");
        self.0.clone().map(|text| {
            crate::llm::Generation::plain(
                text,
                crate::llm::StopReason::Complete,
                Usage {
                    input_tokens: 100,
                    output_tokens: 20,
                },
            )
        })
    }
}

fn specs() -> Vec<ToolSpec> {
    ["rag_search", "reasoning"]
        .into_iter()
        .map(|n| ToolSpec {
            name: n.into(),
            description: String::new(),
            parameters: json!({"type": "object"}),
        })
        .collect()
}

fn planner(reply: Result<&str, crate::llm::LlmError>) -> Planner {
    Planner::new(Some(Arc::new(Scripted(reply.map(str::to_string)))))
}

#[test]
fn a_valid_llm_plan_is_used_and_answers_the_question_as_asked() {
    let reply = r#"{"steps": [
        {"id": "a", "action": "rag_search", "input": {"query": "apt pinning"}},
        {"id": "b", "action": "rag_search", "input": {"query": "apt preferences file"}},
        {"id": "answer", "action": "reasoning", "depends_on": ["a", "b"],
         "input": {"query": "something else", "sources": [{"$from": "a"}, {"$from": "b"}]}}
    ]}"#;
    let planned = planner(Ok(reply)).plan("How do I pin a package?", 5, &specs());
    assert!(matches!(planned.origin, PlanOrigin::Llm { usage, .. } if usage.input_tokens == 100));
    assert_eq!(planned.plan.steps.len(), 3);
    assert_eq!(
        planned.plan.steps[2].input["query"],
        "How do I pin a package?"
    );
}

#[test]
fn any_planner_failure_falls_back_to_the_default_plan() {
    let cases: Vec<(Result<&str, crate::llm::LlmError>, &str)> = vec![
        (Ok("not json"), "not valid JSON"),
        (Ok(r#"{"steps": []}"#), "no steps"),
        (
            Ok(r#"{"steps": [{"id": "s", "action": "web_search", "input": {}}]}"#),
            "unknown or disabled action",
        ),
        (
            Ok(r#"{"steps": [{"id": "s", "action": "rag_search", "input": {"query": "q"}}]}"#),
            "must be `reasoning`",
        ),
        (
            Err(crate::llm::LlmError::Transient {
                generator: "scripted".into(),
                message: "HTTP 503".into(),
            }),
            "HTTP 503",
        ),
    ];
    for (reply, why) in cases {
        let planned = planner(reply).plan("q?", 5, &specs());
        assert_eq!(planned.plan, default_plan("q?", 5));
        match planned.origin {
            PlanOrigin::Fallback { reason, .. } => assert!(reason.contains(why), "{reason}"),
            other => panic!("expected a fallback, got {other:?}"),
        }
    }
}

#[test]
fn without_a_language_model_the_default_plan_is_used_without_asking() {
    struct CannotPlan;
    impl LlmClient for CannotPlan {
        fn name(&self) -> &str {
            "extractive"
        }
        fn generate(&self, _: &GenerateRequest) -> crate::llm::Result<crate::llm::Generation> {
            panic!("a generator that cannot plan is never asked to");
        }
    }
    for p in [Planner::default(), Planner::new(Some(Arc::new(CannotPlan)))] {
        assert!(!p.uses_llm());
        let planned = p.plan("q?", 5, &specs());
        assert_eq!(
            (planned.plan, planned.origin),
            (default_plan("q?", 5), PlanOrigin::Default)
        );
    }
}

#[test]
fn fallbacks_and_timeouts_are_checked() {
    let mut p = default_plan("q", 5);
    p.steps[0].fallback = Some("web_search".into());
    assert!(matches!(
        p.validate(ENABLED),
        Err(PlanError::UnknownFallback { .. })
    ));
    p.steps[0].fallback = Some("rag_search".into());
    p.steps[0].timeout = Some(0.0);
    assert!(matches!(
        p.validate(ENABLED),
        Err(PlanError::BadTimeout { .. })
    ));
    p.steps[0].timeout = Some(2.5);
    p.validate(ENABLED).unwrap();
}

#[test]
fn the_default_plan_is_valid() {
    let p = default_plan("q?", 5);
    p.validate(ENABLED).unwrap();
    assert_eq!(p.steps[1].input["sources"], json!({"$from": "search"}));
}

#[test]
fn invalid_plans_are_rejected_with_the_reason() {
    let mut p = default_plan("q", 5);
    assert!(matches!(
        p.validate(&["rag_search", "ask_user"]),
        Err(PlanError::UnknownAction { .. })
    ));

    p.steps.swap(0, 1);
    assert!(matches!(
        p.validate(ENABLED),
        Err(PlanError::BadDependency { .. })
    ));

    let mut p = default_plan("q", 5);
    p.steps[1].id = "search".into();
    assert_eq!(
        p.validate(ENABLED),
        Err(PlanError::DuplicateId("search".into()))
    );

    let mut p = default_plan("q", 5);
    p.steps.pop();
    assert_eq!(
        p.validate(ENABLED),
        Err(PlanError::NoAnswerStep("rag_search".into()))
    );

    assert_eq!(
        Plan { steps: vec![] }.validate(ENABLED),
        Err(PlanError::Empty)
    );

    // A `$from` reference counts as a dependency even when depends_on omits it.
    let mut p = default_plan("q", 5);
    p.steps[1].depends_on.clear();
    p.steps[1].input = json!({"query": "q", "sources": {"$from": "nowhere"}});
    assert!(matches!(
        p.validate(ENABLED),
        Err(PlanError::BadDependency { .. })
    ));
}

#[test]
fn ask_user_may_follow_the_answer() {
    let mut p = default_plan("q", 5);
    p.steps.push(Step {
        id: "confirm".into(),
        action: "ask_user".into(),
        input: json!({"question": "ok?", "reason": "r", "urgency": "optional"}),
        depends_on: vec!["answer".into()],
        fallback: None,
        timeout: None,
    });
    p.validate(ENABLED).unwrap();
}
