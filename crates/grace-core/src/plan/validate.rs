//! A plan's check before anything runs: enabled actions and fallbacks,
//! unique ids, dependencies on earlier steps only (`$from` references
//! included), evidence drawn from searches, and an answer at the end.

use serde_json::Value;

use super::{MAX_STEPS, Plan, PlanError, Step};
use crate::config::{ASK_USER, REASONING};

impl Plan {
    /// Checks actions against the enabled tools, ids, dependencies (earlier
    /// steps only, `$from` references included) and that the plan ends in
    /// an answer (`reasoning`, possibly followed by `ask_user`).
    pub fn validate(&self, enabled: &[&str]) -> Result<(), PlanError> {
        if self.steps.is_empty() {
            return Err(PlanError::Empty);
        }
        if self.steps.len() > MAX_STEPS {
            return Err(PlanError::TooLong(self.steps.len()));
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
            if let Some(f) = &step.fallback
                && !enabled.contains(&f.as_str())
            {
                return Err(PlanError::UnknownFallback {
                    step: step.id.clone(),
                    fallback: f.clone(),
                });
            }
            if let Some(t) = step.timeout
                && !(t.is_finite() && t > 0.0)
            {
                return Err(PlanError::BadTimeout {
                    step: step.id.clone(),
                    timeout: t,
                });
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
            if step.action == REASONING {
                self.check_grounded(step)?;
            }
            seen.push(&step.id);
        }
        let last_answer = self
            .steps
            .iter()
            .rev()
            .find(|s| s.action != ASK_USER)
            .map(|s| s.action.as_str())
            .unwrap_or(ASK_USER);
        if last_answer != REASONING {
            return Err(PlanError::NoAnswerStep(last_answer.to_string()));
        }
        Ok(())
    }
}

/// The step id when `value` is a reference `{"$from": id}`.
pub fn step_ref(value: &Value) -> Option<&str> {
    match value {
        Value::Object(map) if map.len() == 1 => map.get("$from")?.as_str(),
        _ => None,
    }
}

impl Plan {
    /// A `reasoning` step's `sources` is one `$from` reference or an array
    /// of them, each to a step that retrieves (not `reasoning` or
    /// `ask_user`, whose output is model text), and it has no `context`.
    fn check_grounded(&self, step: &Step) -> Result<(), PlanError> {
        let retrieves = |v: &Value| {
            step_ref(v).is_some_and(|id| {
                self.steps
                    .iter()
                    .any(|s| s.id == id && s.action != REASONING && s.action != ASK_USER)
            })
        };
        let ungrounded = |field| PlanError::UngroundedEvidence {
            step: step.id.clone(),
            field,
        };
        match step.input.get("sources") {
            Some(Value::Array(items)) if !items.is_empty() && items.iter().all(retrieves) => {}
            Some(v) if retrieves(v) => {}
            _ => return Err(ungrounded("sources")),
        }
        // `context` is for a caller that holds context (a conversation), not
        // for a plan: whatever a plan wrote there would be read as evidence.
        match step.input.get("context") {
            None | Some(Value::Null) => Ok(()),
            Some(_) => Err(ungrounded("context")),
        }
    }
}

/// The step ids referenced with `{"$from": id}` anywhere in `value`.
pub fn collect_refs(value: &Value, out: &mut Vec<String>) {
    if let Some(id) = step_ref(value) {
        out.push(id.to_string());
        return;
    }
    match value {
        Value::Object(map) => map.values().for_each(|v| collect_refs(v, out)),
        Value::Array(items) => items.iter().for_each(|v| collect_refs(v, out)),
        _ => {}
    }
}
