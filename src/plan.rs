//! Plans: the steps a run takes, validated before anything runs.
//!
//! A step's input is JSON; a value `{"$from": "<step id>"}` is replaced by
//! that earlier step's output when the step runs (passages become
//! `reasoning` sources; a list of references is concatenated). The
//! [`Planner`] asks a language model for a plan when one is configured and
//! falls back to [`default_plan`] (`rag_search → reasoning`) on any
//! failure: no answer, malformed JSON, or a plan that does not validate.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::llm::{GenerateRequest, LlmClient, Message, Usage};

/// One step of a plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// Unique id in the plan, referenced by `depends_on` and `$from`.
    pub id: String,
    /// The tool to call.
    pub action: String,
    /// The tool's input (JSON); a `{"$from": "<step id>"}` value is replaced by
    /// that earlier step's output when the step runs.
    pub input: Value,
    /// Steps whose outputs this one uses; they must come earlier.
    #[serde(default)]
    pub depends_on: Vec<String>,
    /// A tool to call with the same input when this step fails (under that
    /// tool's own timeout and retries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
    /// Seconds this step may take, instead of the tool's `timeout_seconds`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<f64>,
}

/// The steps of a run, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// The steps, run in this order.
    pub steps: Vec<Step>,
}

/// Why a plan cannot run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlanError {
    /// The plan has no steps.
    #[error("the plan has no steps")]
    Empty,
    /// A `reasoning` step's `sources` is not made only of `{"$from": step}`
    /// references to retrieval steps, or it has a `context`: a plan may not
    /// hand the answerer evidence of its own making.
    #[error(
        "step `{step}`: reasoning's `{field}` must come from search steps ({{\"$from\": id}}), not text the plan wrote"
    )]
    UngroundedEvidence {
        /// The step's id.
        step: String,
        /// `sources` or `context`.
        field: &'static str,
    },
    /// A step's action is not an enabled tool.
    #[error("step `{step}`: unknown or disabled action `{action}` (enabled: {enabled})")]
    UnknownAction {
        /// The step's id.
        step: String,
        /// The action it names.
        action: String,
        /// The enabled tools, comma-separated.
        enabled: String,
    },
    /// Two steps share this id.
    #[error("step id `{0}` is used twice")]
    DuplicateId(String),
    /// A step depends on (or references with `$from`) a step that is not
    /// earlier in the plan.
    #[error("step `{step}` depends on `{on}`, which is not an earlier step")]
    BadDependency {
        /// The step's id.
        step: String,
        /// The id it depends on.
        on: String,
    },
    /// The last step other than `ask_user` is not `reasoning`; holds its action.
    #[error("the last answer-producing step must be `reasoning` (it is `{0}`)")]
    NoAnswerStep(String),
    /// A step's fallback is not an enabled tool.
    #[error("step `{step}`: unknown or disabled fallback `{fallback}`")]
    UnknownFallback {
        /// The step's id.
        step: String,
        /// The fallback it names.
        fallback: String,
    },
    /// A step's timeout is not a positive, finite number of seconds.
    #[error("step `{step}`: timeout {timeout} is not a positive number of seconds")]
    BadTimeout {
        /// The step's id.
        step: String,
        /// The timeout given.
        timeout: f64,
    },
    /// The plan has more than [`MAX_STEPS`] steps; holds its length.
    #[error("the plan has {0} steps; at most {MAX_STEPS} are allowed")]
    TooLong(usize),
    /// Not a fault of the plan: the run was stopped from outside (its
    /// client went away, or the request ran out of time).
    #[error("the run was cancelled")]
    Cancelled,
    /// A run that asked the asker a question was continued by an executor
    /// that does not run the agent loop (`planner.strategy` is not `agent`,
    /// or the generator calls no tools).
    #[error(
        "this run can only be continued by the agent loop (planner.strategy: agent with a language model that calls tools)"
    )]
    NotAnAgent,
}

/// Steps a plan may have at most.
pub const MAX_STEPS: usize = 8;

/// The plan for a question: search, then answer from what was found.
pub fn default_plan(question: &str, limit: usize) -> Plan {
    Plan {
        steps: vec![
            Step {
                id: "search".into(),
                action: "rag_search".into(),
                input: json!({"query": question, "limit": limit}),
                depends_on: Vec::new(),
                fallback: None,
                timeout: None,
            },
            Step {
                id: "answer".into(),
                action: "reasoning".into(),
                input: json!({"query": question, "sources": {"$from": "search"}}),
                depends_on: vec!["search".into()],
                fallback: None,
                timeout: None,
            },
        ],
    }
}

/// The plan for a question a reviewer sent back with a hint: the question's
/// search, a search for the hint, and an answer drawn from both.
pub fn hint_plan(question: &str, hint: &str, limit: usize) -> Plan {
    let mut plan = default_plan(question, limit);
    plan.steps.insert(
        1,
        Step {
            id: "hint".into(),
            action: "rag_search".into(),
            input: json!({"query": hint, "limit": limit}),
            depends_on: Vec::new(),
            fallback: None,
            timeout: None,
        },
    );
    if let Some(answer) = plan.steps.last_mut() {
        answer.input = json!({
            "query": question,
            "sources": [{"$from": "search"}, {"$from": "hint"}],
        });
        answer.depends_on = vec!["search".into(), "hint".into()];
    }
    plan
}

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
            if step.action == "reasoning" {
                self.check_grounded(step)?;
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
                    .any(|s| s.id == id && s.action != "reasoning" && s.action != "ask_user")
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

/// A tool as the planner describes it to a language model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolSpec {
    /// The tool's name, as a step's `action`.
    pub name: String,
    /// What the tool does, for the language model.
    pub description: String,
    /// JSON schema of the tool's input.
    pub input_schema: Value,
}

/// How a run's plan was made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(tag = "by", rename_all = "snake_case")]
pub enum PlanOrigin {
    /// The default plan; no planner is configured.
    Default,
    /// The language model's plan, validated.
    Llm {
        /// The language model that made the plan ([`LlmClient::name`]).
        generator: String,
        /// Tokens the planning request used.
        usage: Usage,
    },
    /// The default plan, because the language model's could not be used.
    Fallback {
        /// The language model whose plan could not be used.
        generator: String,
        /// Why it could not be used (the generator failed, the JSON is malformed,
        /// or the plan does not validate).
        reason: String,
    },
    /// A reviewer's hint added a search (see [`hint_plan`]).
    Hint {
        /// The reviewer's hint, searched for beside the question.
        hint: String,
    },
    /// No plan: the agent loop chose each step after reading the last
    /// (`planner.strategy: agent`; its turns are in the report's `agent`).
    Agent {
        /// The model that ran the loop.
        generator: String,
    },
}

/// A plan and how it was made.
#[derive(Debug, Clone, PartialEq)]
pub struct Planned {
    /// The plan to run.
    pub plan: Plan,
    /// How it was made.
    pub origin: PlanOrigin,
}

const PLANNER_INSTRUCTION: &str = "You plan how to answer a question from a knowledge base. \
You do not answer it. Reply with a JSON object {\"steps\": [...]}; each step has an `id`, an \
`action` (one of the tools listed), an `input` following that tool's input schema, and \
`depends_on` (ids of earlier steps whose output it uses). To pass an earlier step's output, \
write {\"$from\": \"<step id>\"} as the value; a list of such references is concatenated. \
The last step must be `reasoning` with the question exactly as asked as its `query` and the \
search results as its `sources`. Use one search for a simple question; use several searches \
(then one `reasoning` step over all their results) only when the question has several parts. \
Keep plans short: at most 4 steps.";

/// Makes plans: asks a language model when one is configured (and can
/// plan), else uses the default plan.
#[derive(Clone, Default)]
pub struct Planner {
    llm: Option<Arc<dyn LlmClient>>,
}

impl std::fmt::Debug for Planner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Planner")
            .field("llm", &self.llm.as_ref().map(|l| l.name().to_string()))
            .finish()
    }
}

impl Planner {
    /// A planner that asks `llm` when it can plan; otherwise (the
    /// extractive answerer) the default plan is used without asking.
    pub fn new(llm: Option<Arc<dyn LlmClient>>) -> Self {
        Self {
            llm: llm.filter(|l| l.can_plan()),
        }
    }

    /// Whether a language model is asked for plans.
    pub fn uses_llm(&self) -> bool {
        self.llm.is_some()
    }

    /// The plan for `question`. `tools` are the actions a plan may use
    /// (escalation stays the executor's decision, so leave out `ask_user`).
    pub fn plan(&self, question: &str, limit: usize, tools: &[ToolSpec]) -> Planned {
        let default = || default_plan(question, limit);
        let Some(llm) = &self.llm else {
            return Planned {
                plan: default(),
                origin: PlanOrigin::Default,
            };
        };
        match llm_plan(llm.as_ref(), question, tools) {
            Ok((plan, usage)) => Planned {
                plan,
                origin: PlanOrigin::Llm {
                    generator: llm.name().to_string(),
                    usage,
                },
            },
            Err(reason) => {
                tracing::warn!(generator = llm.name(), %reason, "planner failed; using the default plan");
                Planned {
                    plan: default(),
                    origin: PlanOrigin::Fallback {
                        generator: llm.name().to_string(),
                        reason,
                    },
                }
            }
        }
    }
}

/// The JSON a plan comes back in.
pub fn plan_schema(actions: &[&str]) -> Value {
    json!({
        "type": "object",
        "properties": {
            "steps": {
                "type": "array",
                "minItems": 1,
                "maxItems": MAX_STEPS,
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string"},
                        "action": {"type": "string", "enum": actions},
                        "input": {"type": "object"},
                        "depends_on": {"type": "array", "items": {"type": "string"}}
                    },
                    "required": ["id", "action", "input"]
                }
            }
        },
        "required": ["steps"]
    })
}

/// Asks `llm` for a plan and checks it; the error is why it cannot be used.
fn llm_plan(
    llm: &dyn LlmClient,
    question: &str,
    tools: &[ToolSpec],
) -> Result<(Plan, Usage), String> {
    let actions: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    let catalogue = serde_json::to_string_pretty(tools).map_err(|e| e.to_string())?;
    let request = GenerateRequest {
        messages: vec![
            Message::system(PLANNER_INSTRUCTION),
            Message::user(format!("Tools:\n{catalogue}\n\nQuestion: {question}")),
        ],
        json_schema: Some(plan_schema(&actions)),
        ..Default::default()
    };
    let generation = llm.generate(&request).map_err(|e| e.to_string())?;
    let mut plan: Plan = serde_json::from_str(&generation.text)
        .map_err(|e| format!("the plan is not valid JSON in the plan shape ({e})"))?;
    plan.validate(&actions).map_err(|e| e.to_string())?;
    // The answer is to the question as asked, whatever the searches look for.
    for step in plan.steps.iter_mut().filter(|s| s.action == "reasoning") {
        if let Value::Object(input) = &mut step.input {
            input.insert("query".into(), Value::String(question.to_string()));
        }
    }
    Ok((plan, generation.usage))
}

#[cfg(test)]
mod tests {
    use super::*;

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
        fn generate(
            &self,
            request: &GenerateRequest,
        ) -> crate::llm::Result<crate::llm::Generation> {
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
                input_schema: json!({"type": "object"}),
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
        assert!(
            matches!(planned.origin, PlanOrigin::Llm { usage, .. } if usage.input_tokens == 100)
        );
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
}
