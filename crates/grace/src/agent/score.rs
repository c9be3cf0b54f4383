//! The final answer scored as a plan's answer is (groundedness and
//! citations against the passages it cites, with the evidence of a
//! search), and the trace of the run.

use std::collections::BTreeMap;

use serde_json::json;

use super::act::record;
use super::{
    Agent, AgentOutcome, AgentState, AgentStop, AgentTrace, NOT_FOUND_REPLY, ScoredAnswer,
};
use crate::confidence::{Factor, Factors, answer_factors};
use crate::lexical::LexicalEncoder;
use crate::llm::{AnswerDraft, SourceText, ToolCall};
use crate::tools::RagSearch;
use crate::tools::{Answer, Citation, StepRecord};

impl Agent<'_> {
    /// Scores the final answer, if any, and builds the trace.
    pub(super) fn finish(&self, mut state: AgentState, stop: AgentStop) -> AgentOutcome {
        let answer = match (&stop, state.turns.last().and_then(|t| t.answer.as_ref())) {
            (AgentStop::Final, Some(_)) => self.score_final(&mut state),
            _ => None,
        };
        let trace = AgentTrace {
            model: self.llm.name().to_string(),
            turns: state.turns.clone(),
            stop,
            usage: state.usage,
            seconds: state.elapsed_ms as f64 / 1000.0,
        };
        AgentOutcome {
            state,
            answer,
            trace,
        }
    }

    /// Scores the final answer as a plan's answer is scored: on the
    /// factors of a search for the question itself (how well the knowledge
    /// base matches what was asked, whatever words the model searched
    /// with), with the answer's groundedness and citations against the
    /// passages it cites.
    fn score_final(&self, state: &mut AgentState) -> Option<ScoredAnswer> {
        // The full text (the trace keeps a bounded copy).
        let text = state.messages.last().map(|m| m.content.clone())?;
        let abstained = text.trim().starts_with(NOT_FOUND_REPLY) || state.passages.is_empty();
        let cited = crate::confidence::citation_markers(&text);
        let sources: Vec<SourceText> = state
            .passages
            .iter()
            .map(|p| SourceText {
                number: p.number,
                label: p.source.clone(),
                text: p.text.clone(),
                heading: (!p.section.is_empty()).then(|| p.section.clone()),
            })
            .collect();
        let draft = AnswerDraft {
            answer: if abstained {
                crate::lang::Lang::of(&state.question)
                    .texts()
                    .not_in_sources
                    .to_string()
            } else {
                text
            },
            citations: Vec::new(),
            // The model does not get to vouch for itself here.
            confidence: None,
            abstained,
        };
        let lexical = LexicalEncoder::new().ok()?;
        let mut factors = self.evidence_factors(state, &cited);
        factors.merge(&answer_factors(&lexical, &draft, &sources));
        if !abstained && cited.is_empty() {
            // An answer that cites nothing rests on nothing.
            factors.set(Factor::Groundedness, 0.0);
        }
        let score = self.scorer.score(&factors);
        let mut citations: Vec<Citation> = Vec::new();
        for n in cited {
            if citations.iter().any(|c| c.number == n) {
                continue;
            }
            if let Some(p) = state.passages.iter().find(|p| p.number == n) {
                citations.push(Citation {
                    number: n,
                    source: Some(p.source.clone()),
                    section: Some(p.section.clone()).filter(|s| !s.is_empty()),
                    page: p.page,
                });
            }
        }
        Some(ScoredAnswer {
            answer: Answer {
                text: draft.answer,
                citations,
                abstained,
                self_confidence: None,
                usage: state.usage,
                generator: self.llm.name().to_string(),
            }
            .renumbered(),
            factors,
            score,
        })
    }

    /// The retrieval factors the answer is scored with. When most cited
    /// passages come from outside the knowledge base (a web page, another
    /// server's search), those of the step that found them: its passages
    /// were scored against the asker's question by GRACE's own embedder
    /// (`tools::outside`). Otherwise a search of the knowledge base for the
    /// question (recorded as step `evidence`); if that fails, those of the
    /// agent's search that found most of the cited passages.
    fn evidence_factors(&self, state: &mut AgentState, cited: &[usize]) -> Factors {
        if let Some(step) = self.cited_step(state, cited)
            && step.action != RagSearch::NAME
        {
            return step.result.factors.clone();
        }
        let mut input = json!({"query": state.question, "limit": self.limit});
        if let Some(focus) = &state.focus {
            input["focus"] = json!(focus);
        }
        let check =
            self.registry
                .call_until(RagSearch::NAME, &input, None, self.cancel, self.scope);
        if check.success {
            let factors = check.factors.clone();
            let score = self.scorer.score(&factors);
            let call = ToolCall {
                id: "evidence".into(),
                name: RagSearch::NAME.into(),
                arguments: input.clone(),
            };
            state
                .steps
                .push(record("evidence".into(), &call, input, check, Some(score)));
            return factors;
        }
        self.cited_step(state, cited)
            .or_else(|| {
                state
                    .steps
                    .iter()
                    .rev()
                    .find(|s| s.action == RagSearch::NAME && s.result.success)
            })
            .map(|s| s.result.factors.clone())
            .unwrap_or_default()
    }

    /// The step that found most of the cited passages.
    fn cited_step<'s>(&self, state: &'s AgentState, cited: &[usize]) -> Option<&'s StepRecord> {
        let mut by_step: BTreeMap<&str, usize> = BTreeMap::new();
        for n in cited {
            if let Some(p) = state.passages.iter().find(|p| p.number == *n) {
                *by_step.entry(p.step.as_str()).or_default() += 1;
            }
        }
        let id = by_step.iter().max_by_key(|(_, count)| **count)?.0;
        state.steps.iter().find(|s| s.id == *id)
    }
}
