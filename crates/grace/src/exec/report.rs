//! What a run comes to: its report, its decision, and a human's reply to
//! an escalated one.

use crate::access::ReadScope;
use crate::config::AnswerFormat;
use crate::text::blocks::to_text;
use serde::{Deserialize, Serialize};

use crate::agent::{AgentState, AgentTrace};
use crate::confidence::{Factors, Level};
use crate::followup::Rewrite;
use crate::plan::PlanOrigin;
use crate::tools::{Answer, StepRecord, ToolOutput, UserRequest};

/// The option that confirms the drafted answer starts with this.
pub const CONFIRM_OPTION_PREFIX: &str = "Confirm this answer: ";
/// The option saying the knowledge base does not answer the question.
pub const NOT_ANSWERED_OPTION: &str = "The knowledge base does not answer this";

/// A human's reply to an escalation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HumanReply {
    /// The 1-based number of one of the offered options.
    Option(usize),
    /// An answer in the human's own words.
    Text(String),
    /// No reply: the run stays escalated.
    Skip,
}

/// What the run does with its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Confident: the answer stands.
    Answer,
    /// Fairly confident: the answer, with a caveat.
    Caveat,
    /// Not confident: a human must answer or confirm (see `escalation`).
    Escalate,
    /// Nothing to answer with, or nobody to ask.
    Decline,
    /// The agent asked the asker a question the run cannot go on without
    /// (`clarification`); the reply continues it.
    NeedsInput,
}

impl Decision {
    /// The decision as the API spells it (`needs_input`).
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Answer => "answer",
            Decision::Caveat => "caveat",
            Decision::Escalate => "escalate",
            Decision::Decline => "decline",
            Decision::NeedsInput => "needs_input",
        }
    }
}

impl RunReport {
    /// The report as shown in `format`: GRACE writes its answers in
    /// Markdown; [`AnswerFormat::Text`] drops the marks from the answer
    /// and from the draft offered to a reviewer.
    pub fn formatted(&self, format: AnswerFormat) -> RunReport {
        let mut report = self.clone();
        if format == AnswerFormat::Text {
            if let Some(answer) = &mut report.answer {
                answer.text = to_text(&answer.text);
            }
            if let Some(request) = &mut report.escalation {
                for option in &mut request.options {
                    *option = to_text(option);
                }
            }
        }
        report
    }

    /// The question as it was run: its rewrite for a follow-up, else as
    /// asked (what was searched, and what a near repeat is compared on).
    pub fn question_as_run(&self) -> &str {
        self.rewrite
            .as_ref()
            .map_or(self.question.as_str(), |r| r.question.as_str())
    }

    /// The first `limit` passages of the run's first search (none when it
    /// searched nothing): what it found, whatever it decided.
    pub fn passages_found(&self, limit: usize) -> Vec<crate::search::Passage> {
        self.steps
            .iter()
            .find_map(|s| match &s.result.output {
                crate::tools::ToolOutput::Passages(p) => {
                    Some(p.iter().take(limit).cloned().collect())
                }
                _ => None,
            })
            .unwrap_or_default()
    }

    /// The distinct sources the answer cites, in the order it cites them
    /// (none when it abstained or there is no answer).
    pub fn cited_sources(&self) -> Vec<String> {
        let mut sources: Vec<String> = Vec::new();
        let answer = self.answer.as_ref().filter(|a| !a.abstained);
        for c in answer.map(|a| a.citations.as_slice()).unwrap_or_default() {
            if let Some(source) = c.source.as_ref().filter(|s| !sources.contains(s)) {
                sources.push(source.clone());
            }
        }
        sources
    }

    /// The factors the run's last answer was scored on (`None` when no
    /// answer step finished): what calibration fits.
    pub fn answer_factors(&self) -> Option<&Factors> {
        self.steps
            .iter()
            .rev()
            .find(|s| s.result.success && matches!(s.result.output, ToolOutput::Answer(_)))
            .map(|s| &s.factors)
    }
}

/// The outcome of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RunReport {
    /// The question as asked.
    pub question: String,
    /// The question as run, when it was a follow-up rewritten to stand
    /// alone (see [`crate::followup`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rewrite: Option<Rewrite>,
    /// The answer (also when escalated: the draft a human may confirm).
    pub answer: Option<Answer>,
    /// The run's confidence in [0, 1]: its answer steps' scores aggregated
    /// (0 when a step failed or the plan did not finish).
    pub confidence: f64,
    /// The level of `confidence` under `confidence.thresholds`.
    pub level: Level,
    /// What the run does with its answer.
    pub decision: Decision,
    /// The question put to a human, when escalated.
    pub escalation: Option<UserRequest>,
    /// How the plan was made (default, the language model's, or the
    /// default after the model's failed).
    pub plan: PlanOrigin,
    /// Whether the recovery run was used.
    pub recovered: bool,
    /// Who made the final decision when a human did (`user`, a reviewer id).
    pub decided_by: Option<String>,
    /// The executed steps, in order (the recovery run's, when it was used).
    pub steps: Vec<StepRecord>,
    /// The agent loop's turns and why it stopped (`planner.strategy: agent`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<AgentTrace>,
    /// The question the agent put to the asker, when the run needs input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clarification: Option<UserRequest>,
    /// What a `needs_input` run goes on from (kept by the service, never
    /// sent).
    #[serde(skip)]
    pub parked: Option<Box<AgentState>>,
    /// The conversation an escalated question was asked in, oldest turn
    /// first: what a reviewer reads a follow-up against. Empty for a
    /// question asked alone, and for a run that was not escalated.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conversation: Vec<EarlierTurn>,
    /// Who asked, as what they may read: kept with an escalation, so that
    /// a reviewer's redraft searches no more than the asker could, the
    /// asker reads the resolution within it, and only escalations of the
    /// same scope join. Absent for the operator and services (everything).
    #[serde(default, skip_serializing_if = "ReadScope::is_all")]
    #[schema(value_type = Option<Object>)]
    pub scope: ReadScope,
}

/// A turn of the conversation before the question (see
/// [`RunReport::conversation`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct EarlierTurn {
    /// The question as asked.
    pub question: String,
    /// GRACE's answer to it, when it gave one.
    pub answer: Option<String>,
}

impl RunReport {
    /// Applies a human's reply to an escalated run: confirming the draft
    /// answers with it, "not answered" declines, free text becomes the
    /// answer (with no citation: the human is the source). Returns an error
    /// message for a reply that does not fit (no escalation, bad number).
    pub fn apply_reply(
        &mut self,
        reply: &HumanReply,
        who: &str,
    ) -> std::result::Result<(), String> {
        let Some(request) = &self.escalation else {
            return Err("this run was not escalated".into());
        };
        match reply {
            HumanReply::Skip => return Ok(()),
            HumanReply::Option(n) => {
                let option = n
                    .checked_sub(1)
                    .and_then(|i| request.options.get(i))
                    .ok_or_else(|| {
                        format!("choose a number from 1 to {}", request.options.len())
                    })?;
                if option.starts_with(CONFIRM_OPTION_PREFIX) {
                    self.decision = Decision::Answer;
                } else if option == NOT_ANSWERED_OPTION {
                    self.decision = Decision::Decline;
                } else {
                    return Err(format!("option {n} is not one GRACE can act on"));
                }
            }
            HumanReply::Text(text) => {
                let text = text.trim();
                if crate::text::is_blank(text) {
                    return Err("the answer is empty".into());
                }
                self.answer = Some(Answer {
                    text: text.to_string(),
                    citations: Vec::new(),
                    abstained: false,
                    self_confidence: None,
                    usage: Default::default(),
                    generator: format!("human:{who}"),
                });
                self.decision = Decision::Answer;
            }
        }
        self.decided_by = Some(who.to_string());
        Ok(())
    }
}
