//! The [`Planner`]: asks a language model for a plan in JSON, checks it,
//! and falls back to the default plan when it cannot be used.

use std::sync::Arc;

use serde_json::{Value, json};

use super::{MAX_STEPS, Plan, PlanOrigin, Planned, default_plan};
use crate::llm::ToolSpec;
use crate::llm::{GenerateRequest, LlmClient, Message, Usage};

const PLANNER_INSTRUCTION: &str = "You plan how to answer a question from a knowledge base. \
You do not answer it. Reply with a JSON object {\"steps\": [...]}; each step has an `id`, an \
`action` (one of the tools listed), an `input` following that tool's `parameters` schema, and \
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
    for step in plan
        .steps
        .iter_mut()
        .filter(|s| s.action == crate::config::REASONING)
    {
        if let Value::Object(input) = &mut step.input {
            input.insert("query".into(), Value::String(question.to_string()));
        }
    }
    Ok((plan, generation.usage))
}
