//! Plans: the steps a run takes, validated before anything runs.
//!
//! A step's input is JSON; a value `{"$from": "<step id>"}` is replaced by
//! that earlier step's output when the step runs (passages become
//! `reasoning` sources). Today every run uses [`default_plan`]
//! (`rag_search → reasoning`); an LLM planner comes with the Gemini and
//! Ollama clients.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// One step of a plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    pub id: String,
    /// The tool to call.
    pub action: String,
    pub input: Value,
    /// Steps whose outputs this one uses; they must come earlier.
    #[serde(default)]
    pub depends_on: Vec<String>,
}

/// The steps of a run, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub steps: Vec<Step>,
}

/// Why a plan cannot run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlanError {
    #[error("the plan has no steps")]
    Empty,
    #[error("step `{step}`: unknown or disabled action `{action}` (enabled: {enabled})")]
    UnknownAction {
        step: String,
        action: String,
        enabled: String,
    },
    #[error("step id `{0}` is used twice")]
    DuplicateId(String),
    #[error("step `{step}` depends on `{on}`, which is not an earlier step")]
    BadDependency { step: String, on: String },
    #[error("the last answer-producing step must be `reasoning` (it is `{0}`)")]
    NoAnswerStep(String),
}

/// The plan for a question: search, then answer from what was found.
pub fn default_plan(question: &str, limit: usize) -> Plan {
    Plan {
        steps: vec![
            Step {
                id: "search".into(),
                action: "rag_search".into(),
                input: json!({"query": question, "limit": limit}),
                depends_on: Vec::new(),
            },
            Step {
                id: "answer".into(),
                action: "reasoning".into(),
                input: json!({"query": question, "sources": {"$from": "search"}}),
                depends_on: vec!["search".into()],
            },
        ],
    }
}

impl Plan {
    /// Checks actions against the enabled tools, ids, dependencies (earlier
    /// steps only, `$from` references included) and that the plan ends in
    /// an answer (`reasoning`, possibly followed by `ask_user`).
    pub fn validate(&self, enabled: &[&str]) -> Result<(), PlanError> {
        if self.steps.is_empty() {
            return Err(PlanError::Empty);
        }
        let mut seen: Vec<&str> = Vec::new();
        for step in &self.steps {
            if !enabled.contains(&step.action.as_str()) {
                return Err(PlanError::UnknownAction {
                    step: step.id.clone(),
                    action: step.action.clone(),
                    enabled: enabled.join(", "),
                });
            }
            if seen.contains(&step.id.as_str()) {
                return Err(PlanError::DuplicateId(step.id.clone()));
            }
            let mut refs = step.depends_on.clone();
            collect_refs(&step.input, &mut refs);
            for on in refs {
                if !seen.contains(&on.as_str()) {
                    return Err(PlanError::BadDependency {
                        step: step.id.clone(),
                        on,
                    });
                }
            }
            seen.push(&step.id);
        }
        let last_answer = self
            .steps
            .iter()
            .rev()
            .find(|s| s.action != "ask_user")
            .map(|s| s.action.as_str())
            .unwrap_or("ask_user");
        if last_answer != "reasoning" {
            return Err(PlanError::NoAnswerStep(last_answer.to_string()));
        }
        Ok(())
    }
}

/// The step ids referenced with `{"$from": id}` anywhere in `value`.
pub fn collect_refs(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if let (1, Some(Value::String(id))) = (map.len(), map.get("$from")) {
                out.push(id.clone());
                return;
            }
            map.values().for_each(|v| collect_refs(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| collect_refs(v, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ENABLED: &[&str] = &["rag_search", "reasoning", "ask_user"];

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
        });
        p.validate(ENABLED).unwrap();
    }
}
