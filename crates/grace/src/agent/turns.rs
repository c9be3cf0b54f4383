//! The loop proper: model turns (think, then act or answer) until a stop,
//! within the budgets.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::act::{Acted, refused};
use super::{Agent, AgentCall, AgentEvent, AgentState, AgentStop, AgentTurn};
use crate::llm::{GenerateRequest, LlmError, Message, StopReason, Usage};
use crate::text::ellipsized as bounded;

/// Characters of thought or text kept per turn in the trace.
const MAX_TRACE_CHARS: usize = 4_000;
/// Tool calls one model turn may make; more are refused in the observation.
const MAX_CALLS_PER_TURN: usize = 4;

impl Agent<'_> {
    /// The loop proper: turns until a stop.
    pub(super) fn drive(
        &self,
        state: &mut AgentState,
        on_event: &mut dyn FnMut(AgentEvent<'_>),
    ) -> AgentStop {
        let started = Instant::now();
        let before = Duration::from_millis(state.elapsed_ms);
        let elapsed = |started: &Instant| before + started.elapsed();
        let tools = self.catalogue();
        let stop = loop {
            if self.cancel.load(Ordering::Relaxed) {
                break AgentStop::Cancelled;
            }
            if state.turns.len() >= self.budget.max_steps {
                break AgentStop::MaxSteps;
            }
            if total(state.usage) >= self.budget.max_tokens {
                break AgentStop::MaxTokens;
            }
            if elapsed(&started).as_secs_f64() >= self.budget.max_seconds {
                break AgentStop::MaxSeconds;
            }
            let request = GenerateRequest {
                messages: state.messages.clone(),
                tools: tools.clone(),
                ..GenerateRequest::default()
            };
            let generation = match self.generate(&request) {
                Ok(g) => g,
                Err(e) => break AgentStop::ModelFailed(e.to_string()),
            };
            state.usage.input_tokens += generation.usage.input_tokens;
            state.usage.output_tokens += generation.usage.output_tokens;
            let mut turn = AgentTurn {
                turn: state.turns.len() + 1,
                thought: generation
                    .thought
                    .as_deref()
                    .filter(|t| !crate::text::is_blank(t))
                    .map(|t| bounded(t, MAX_TRACE_CHARS)),
                calls: Vec::new(),
                answer: None,
                stop_reason: generation.stop_reason,
                usage: generation.usage,
            };
            if let Some(t) = &turn.thought {
                on_event(AgentEvent::Think { text: t });
            }
            match generation.stop_reason {
                StopReason::Safety => {
                    state.turns.push(turn);
                    break AgentStop::Safety;
                }
                StopReason::MaxTokens => {
                    turn.answer = Some(bounded(&generation.text, MAX_TRACE_CHARS));
                    state.turns.push(turn);
                    if state.continued {
                        break AgentStop::Length;
                    }
                    // Continue once: the cut-off text back, and a request
                    // to finish more briefly.
                    state.continued = true;
                    state.messages.push(Message::assistant(generation.text));
                    state.messages.push(Message::user(
                        "Your reply was cut off by the length limit. Give your reply again, \
                         shorter: call a tool, or give the final answer in a few sentences.",
                    ));
                    continue;
                }
                _ => {}
            }
            if generation.tool_calls.is_empty() {
                let text = generation.text.trim().to_string();
                if text.is_empty() {
                    state.turns.push(turn);
                    break AgentStop::ModelFailed(
                        "the model gave neither a tool call nor an answer".into(),
                    );
                }
                on_event(AgentEvent::Answer { text: &text });
                turn.answer = Some(bounded(&text, MAX_TRACE_CHARS));
                state.turns.push(turn);
                state.messages.push(Message::assistant(text));
                break AgentStop::Final;
            }
            state.messages.push(Message::assistant_calls(
                generation.thought.clone().unwrap_or_default(),
                generation.tool_calls.clone(),
            ));
            let mut blocked = None;
            for (i, call) in generation.tool_calls.iter().enumerate() {
                on_event(AgentEvent::ToolCall { call });
                let left = self.left(state, elapsed(&started));
                let (observation, record) = if i >= MAX_CALLS_PER_TURN {
                    refused(
                        call,
                        format!("at most {MAX_CALLS_PER_TURN} tool calls a turn"),
                    )
                } else {
                    match self.act(state, call, &tools) {
                        Acted::Observed(observation, record) => (observation, record),
                        Acted::NeedsInput(request) => {
                            let record = AgentCall {
                                call: call.clone(),
                                success: true,
                                summary: format!("asked the asker: {}", request.question),
                                confidence: None,
                            };
                            on_event(AgentEvent::Observation { call: &record });
                            turn.calls.push(record);
                            blocked = Some((call.clone(), request));
                            continue;
                        }
                    }
                };
                let mut observation = observation;
                observation["budget_left"] = left;
                on_event(AgentEvent::Observation { call: &record });
                turn.calls.push(record);
                state
                    .messages
                    .push(Message::tool_result(call, &observation));
            }
            state.turns.push(turn);
            if let Some((call, request)) = blocked {
                state.pending = Some(call);
                state.clarification = Some(request);
                break AgentStop::NeedsInput;
            }
        };
        state.elapsed_ms = u64::try_from(elapsed(&started).as_millis()).unwrap_or(u64::MAX);
        stop
    }

    /// One generation, with one more try after a transient error.
    fn generate(&self, request: &GenerateRequest) -> crate::llm::Result<crate::llm::Generation> {
        let answering = std::time::Instant::now();
        let generation = self.generate_once_more_if_transient(request);
        crate::telemetry::phase(crate::telemetry::Phase::Answer, answering.elapsed());
        generation
    }

    fn generate_once_more_if_transient(
        &self,
        request: &GenerateRequest,
    ) -> crate::llm::Result<crate::llm::Generation> {
        match self.llm.generate(request) {
            Err(LlmError::Transient { .. } | LlmError::Timeout { .. })
                if !self.cancel.load(Ordering::Relaxed) =>
            {
                self.llm.generate(request)
            }
            other => other,
        }
    }

    fn left(&self, state: &AgentState, elapsed: Duration) -> Value {
        json!({
            "turns": self.budget.max_steps.saturating_sub(state.turns.len() + 1),
            "tokens": self.budget.max_tokens.saturating_sub(total(state.usage)),
            "seconds": (self.budget.max_seconds - elapsed.as_secs_f64()).max(0.0).round(),
        })
    }
}

fn total(u: Usage) -> u64 {
    u.input_tokens.saturating_add(u.output_tokens)
}
