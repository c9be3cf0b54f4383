//! A plan's run: its steps through the registry, each scored, and the
//! wider-search recovery of a weak run.

use std::sync::atomic::Ordering;

use serde_json::{Value, json};

use super::Result;
use super::decision::decide;
use super::report::{Decision, RunReport};
use super::{Attempt, Event, Executor};
use crate::confidence::{Factors, Level, aggregate, failed_score, level};
use crate::config::MAX_RAG_SEARCH_LIMIT;
use crate::plan::{Plan, PlanOrigin, default_plan, step_ref};
use crate::tools::RagSearch;
use crate::tools::{StepRecord, ToolOutput};

impl Executor<'_> {
    /// Runs `plan`, then, as `recovery` says, one wider search when its
    /// confidence is below `notify`, keeping the better run.
    pub(super) fn execute(
        &self,
        question: &str,
        plan: Plan,
        origin: PlanOrigin,
        recovery: Recovery<'_>,
        on_event: &mut dyn FnMut(Event<'_>),
    ) -> Result<RunReport> {
        // A plan may name what the planner and agent are offered.
        let offered: Vec<String> = self
            .registry
            .catalogue(crate::config::Caller::Agent)
            .into_iter()
            .map(|t| t.name)
            .collect();
        let enabled: Vec<&str> = offered.iter().map(String::as_str).collect();
        plan.validate(&enabled)?;
        let mut best = self.run(&plan, on_event);
        self.cancelled()?;
        let mut recovered = false;
        if let (Recovery::Wider { focus }, true) = (recovery, best.level < Level::Notify) {
            on_event(Event::Recovering {
                confidence: best.confidence,
            });
            // Twice the passages, at least 10, never past what a search may return.
            let mut wider = default_plan(
                question,
                self.limit.saturating_mul(2).clamp(10, MAX_RAG_SEARCH_LIMIT),
            );
            if let Some(focus) = focus {
                wider = with_focus(wider, focus);
            }
            wider.validate(&enabled)?;
            let second = self.run(&wider, on_event);
            self.cancelled()?;
            if second.confidence > best.confidence {
                best = second;
                recovered = true;
            }
        }

        let answer = best
            .steps
            .iter()
            .rev()
            .find_map(|s| match &s.result.output {
                ToolOutput::Answer(a) => Some(a.clone()),
                _ => None,
            });
        let abstained = answer.as_ref().is_none_or(|a| a.abstained);
        let failed = best.steps.iter().any(|s| !s.result.success);
        let mut decision = decide(best.level, abstained, failed);
        let mut escalation = None;
        if decision == Decision::Escalate {
            match self.escalate(question, &best, answer.as_ref()) {
                Some(request) => {
                    on_event(Event::Escalated { request: &request });
                    escalation = Some(request);
                }
                None => decision = Decision::Decline,
            }
        }
        let report = RunReport {
            question: question.to_string(),
            rewrite: None,
            answer,
            confidence: best.confidence,
            level: best.level,
            decision,
            escalation,
            plan: origin,
            recovered,
            decided_by: None,
            steps: best.steps,
            agent: None,
            clarification: None,
            parked: None,
            conversation: Vec::new(),
            scope: self.scope.clone(),
        };
        on_event(Event::Answered { report: &report });
        Ok(report)
    }

    fn run(&self, plan: &Plan, on_event: &mut dyn FnMut(Event<'_>)) -> Attempt {
        let mut steps: Vec<StepRecord> = Vec::new();
        for step in &plan.steps {
            if self.cancel.load(Ordering::Relaxed) {
                break;
            }
            on_event(Event::StepStarted { step });
            let input = resolve(&step.input, &steps);
            // A plan's timeout (a model may write 1e20) is clamped by the
            // registry to the tool's own; here it only must not overflow.
            let timeout = step.timeout.map(|t| {
                std::time::Duration::try_from_secs_f64(t).unwrap_or(std::time::Duration::MAX)
            });
            let mut result =
                self.registry
                    .call_until(&step.action, &input, timeout, &self.cancel, &self.scope);
            if let (false, Some(fallback)) = (result.success, &step.fallback) {
                tracing::info!(step = %step.id, %fallback, error = ?result.error, "step failed; trying its fallback");
                let first_error = result.error.clone();
                // The fallback is another tool: its own policy applies.
                result =
                    self.registry
                        .call_until(fallback, &input, None, &self.cancel, &self.scope);
                result.suggestions.push(format!(
                    "`{}` failed ({}); this is the result of its fallback `{fallback}`",
                    step.action,
                    first_error.as_deref().unwrap_or("unknown error")
                ));
            }
            // An answer is scored together with what it was drawn from.
            let mut factors = Factors::default();
            for dep in &step.depends_on {
                if let Some(d) = steps.iter().find(|s| &s.id == dep) {
                    factors.merge(&d.result.factors);
                }
            }
            factors.merge(&result.factors);
            if matches!(&result.output, ToolOutput::Answer(a) if !a.abstained) {
                self.with_history(&mut factors, &result.sources);
            }
            let confidence = if result.success {
                self.scorer.score(&factors)
            } else {
                failed_score()
            };
            steps.push(StepRecord {
                id: step.id.clone(),
                action: step.action.clone(),
                input,
                result,
                factors,
                confidence,
            });
            if let Some(record) = steps.last() {
                on_event(Event::StepFinished { record });
            }
            if steps.last().is_some_and(|s| !s.result.success) {
                break;
            }
        }
        // The run's confidence is that of its answers: an answer step is
        // scored with the evidence of the steps it used, so counting those
        // steps again would only dilute it.
        let scores: Vec<f64> = steps
            .iter()
            .filter(|s| matches!(s.result.output, ToolOutput::Answer(_)))
            .map(|s| s.confidence.score)
            .collect();
        let complete = steps.len() == plan.steps.len()
            && steps.iter().all(|s| s.result.success)
            && !scores.is_empty();
        let confidence = if complete {
            aggregate(&scores, self.confidence.aggregation)
        } else {
            0.0
        };
        Attempt {
            steps,
            confidence,
            level: level(confidence, &self.confidence.thresholds),
        }
    }
}

/// Whether a weak run gets a second, wider search.
#[derive(Debug, Clone, Copy)]
pub(super) enum Recovery<'a> {
    /// No (a reviewer's hint: a wider search would drop it).
    None,
    /// Twice the passages; `focus` is the follow-up as typed when the
    /// question is its rewrite (the wider search carries it too).
    Wider { focus: Option<&'a str> },
}

/// `plan` with `focus` (a follow-up as typed) on each of its searches, so
/// that they report how much of the follow-up's own words they found.
pub(super) fn with_focus(mut plan: Plan, focus: &str) -> Plan {
    for step in plan
        .steps
        .iter_mut()
        .filter(|s| s.action == RagSearch::NAME)
    {
        if let Value::Object(input) = &mut step.input {
            input.insert("focus".into(), json!(focus));
        }
    }
    plan
}

/// Replaces every `{"$from": id}` in `input` by the output of step `id`.
fn resolve(input: &Value, done: &[StepRecord]) -> Value {
    if let Some(id) = step_ref(input) {
        return done
            .iter()
            .find(|s| s.id == id)
            .map(|s| output_value(&s.result.output))
            .unwrap_or(Value::Null);
    }
    match input {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), resolve(v, done)))
                .collect(),
        ),
        // A list of references concatenates their outputs (the passages of
        // several searches become one list of sources, each once).
        Value::Array(items) => {
            let mut out: Vec<Value> = Vec::new();
            for item in items {
                match (step_ref(item), resolve(item, done)) {
                    (Some(_), Value::Array(parts)) => {
                        for p in parts {
                            if !out.iter().any(|q| same_passage(q, &p)) {
                                out.push(p);
                            }
                        }
                    }
                    (_, v) => out.push(v),
                }
            }
            Value::Array(out)
        }
        other => other.clone(),
    }
}

/// Whether two sources are the same passage: equal but for the search
/// score (two searches may find one passage with different scores).
fn same_passage(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            let keys = |m: &serde_json::Map<String, Value>| -> Vec<String> {
                m.keys().filter(|k| *k != "score").cloned().collect()
            };
            keys(a) == keys(b) && keys(a).iter().all(|k| a.get(k) == b.get(k))
        }
        _ => a == b,
    }
}

/// A step's output as the next step's input: passages as `reasoning`
/// sources (with the search's score, which the answer is scored on),
/// anything else as its JSON.
fn output_value(output: &ToolOutput) -> Value {
    match output {
        ToolOutput::Passages(passages) => Value::Array(
            passages
                .iter()
                .map(|p| {
                    let mut v = json!({"text": p.text, "source": p.source, "section": p.section, "score": p.score});
                    if let Some(page) = p.page {
                        v["page"] = json!(page);
                    }
                    v
                })
                .collect(),
        ),
        ToolOutput::Answer(a) => json!({"text": a.text, "abstained": a.abstained}),
        other => serde_json::to_value(other).unwrap_or(Value::Null),
    }
}
