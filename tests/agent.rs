//! The agent loop (`planner.strategy: agent`) end to end on the sample
//! knowledge base, with the real store and model, driven by a scripted
//! language model behind a mock server that speaks Gemini's or Ollama's
//! REST shape, natively and in JSON mode (tests/support/mock_llm.rs). The
//! same conversations run on all four: a second search chosen after
//! reading the first; a tool error observed and recovered from; a
//! clarifying question answered, then continued; the budget running out
//! (escalated with what was found); a length stop (continued once, then a
//! clear failure); malformed JSON retried once, then failing cleanly (JSON
//! mode); a safety stop (Gemini). A confident wrong answer is the worst
//! outcome: the last test checks that an answer citing nothing, or citing
//! a passage that does not say it, is not answered confidently.

mod common;
mod support {
    pub mod mock_llm;
}

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use grace::agent::AgentStop;
use grace::config::{Config, Strategy};
use grace::exec::Decision;
use grace::{AskOptions, AskOutcome, Grace};
use serde_json::{Value, json};
use support::mock_llm::{Mode, Provider, ScriptedModel, Turn};

/// The passage of troubleshooting.md on ORB-2001, nearly verbatim: grounded
/// in the passage the first search for "ORB-2001" ranks first.
const GROUNDED: &str = "The new pods started but did not become healthy within the rollout \
                        timeout (300 seconds by default), and Orbit rolls back automatically [1].";

struct Run {
    _dir: tempfile::TempDir,
    grace: Grace,
}

fn start(model: &ScriptedModel, tweak: impl FnOnce(&mut Config)) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let mut config = common::config(dir.path());
    config.planner.strategy = Strategy::Agent;
    tweak(&mut config);
    let grace = Grace::builder(config)
        .embedder(common::embedder())
        .generator(model.client())
        .build()
        .unwrap();
    grace
        .ingest_blocking(
            &[common::repo().join("examples/kb")],
            &Default::default(),
            &mut |_| {},
        )
        .unwrap();
    Run { _dir: dir, grace }
}

fn ask(run: &Run, question: &str) -> AskOutcome {
    let options = AskOptions {
        queue: false,
        ..AskOptions::default()
    };
    run.grace
        .ask_blocking(
            question,
            &options,
            Arc::new(AtomicBool::new(false)),
            &mut |_| {},
        )
        .unwrap()
}

fn answered(o: &AskOutcome) -> bool {
    matches!(o.report.decision, Decision::Answer | Decision::Caveat)
}

fn stop(o: &AskOutcome) -> AgentStop {
    o.report
        .agent
        .as_ref()
        .expect("an agent trace")
        .stop
        .clone()
}

/// Everything the model was sent in request `i`, as text.
fn sent(model: &ScriptedModel, i: usize) -> String {
    model.request(i).to_string()
}

fn two_searches_the_second_chosen_after_reading_the_first(provider: Provider, mode: Mode) {
    let model = ScriptedModel::start(
        provider,
        mode,
        vec![
            Turn::call("rag_search", json!({"query": "ORB-2001"})),
            Turn::call_thinking(
                "rag_search",
                json!({"query": "rollout timeout orbit.yml"}),
                "The first passage names the error; check how the timeout is set.",
            ),
            Turn::answer(GROUNDED),
        ],
    );
    let run = start(&model, |_| {});
    let mut events = Vec::new();
    let outcome = run
        .grace
        .ask_blocking(
            "What does error ORB-2001 mean?",
            &AskOptions {
                queue: false,
                ..Default::default()
            },
            Arc::new(AtomicBool::new(false)),
            &mut |e| events.push(e.name()),
        )
        .unwrap();
    assert_eq!(stop(&outcome), AgentStop::Final);
    assert!(answered(&outcome), "{:?}", outcome.report);
    let searches: Vec<&str> = outcome
        .report
        .steps
        .iter()
        .filter(|s| s.action == "rag_search")
        .map(|s| s.input["query"].as_str().unwrap())
        .collect();
    // The model's two searches, then the check of the evidence for the
    // question itself that the answer is scored on.
    assert_eq!(
        searches,
        [
            "ORB-2001",
            "rollout timeout orbit.yml",
            "What does error ORB-2001 mean?"
        ]
    );
    // The second request carried the first search's passages and their
    // confidence back as the tool's response.
    let second = sent(&model, 1);
    assert!(
        second.contains("Error ORB-2001") && second.contains("confidence"),
        "{second}"
    );
    let answer = outcome.report.answer.as_ref().unwrap();
    assert_eq!(answer.citations[0].number, 1);
    assert!(
        answer.citations[0]
            .source
            .as_deref()
            .unwrap()
            .ends_with("troubleshooting.md")
    );
    // Every step is an event.
    for name in ["tool_call", "observation", "answer"] {
        assert!(events.contains(&name), "{name} in {events:?}");
    }
    assert_eq!(outcome.report.agent.as_ref().unwrap().turns.len(), 3);
}

fn a_tool_error_is_observed_and_recovered_from(provider: Provider, mode: Mode) {
    let model = ScriptedModel::start(
        provider,
        mode,
        vec![
            Turn::call("rag_search", json!({"query": "   "})),
            Turn::call("rag_search", json!({"query": "ORB-2001"})),
            Turn::answer(GROUNDED),
        ],
    );
    let run = start(&model, |_| {});
    let outcome = ask(&run, "What does error ORB-2001 mean?");
    let trace = outcome.report.agent.as_ref().unwrap();
    let first = &trace.turns[0].calls[0];
    assert!(
        !first.success && first.summary.contains("failed"),
        "{first:?}"
    );
    // The model read the error as the tool's response.
    assert!(sent(&model, 1).contains("error"), "{}", sent(&model, 1));
    assert!(answered(&outcome), "{:?}", outcome.report);
}

fn a_clarifying_question_is_answered_then_the_run_goes_on(provider: Provider, mode: Mode) {
    let model = ScriptedModel::start(
        provider,
        mode,
        vec![
            Turn::call(
                "ask_user",
                json!({
                    "question": "Which error code do you see?",
                    "reason": "Several errors can stop a deployment.",
                    "options": ["ORB-1042", "ORB-2001"],
                    "urgency": "blocking"
                }),
            ),
            Turn::call("rag_search", json!({"query": "ORB-2001"})),
            Turn::answer(GROUNDED),
        ],
    );
    let run = start(&model, |_| {});
    let outcome = ask(&run, "Why did my deployment fail?");
    assert_eq!(outcome.report.decision, Decision::NeedsInput);
    assert_eq!(stop(&outcome), AgentStop::NeedsInput);
    let question = outcome.report.clarification.as_ref().unwrap();
    assert_eq!(question.question, "Which error code do you see?");
    let run_id = outcome.run_id.clone().expect("a run id");
    let resumed = run
        .grace
        .reply_blocking(
            &run_id,
            Some("ORB-2001"),
            Arc::new(AtomicBool::new(false)),
            &mut |_| {},
        )
        .unwrap();
    assert!(answered(&resumed), "{:?}", resumed.report);
    assert_eq!(resumed.report.question, "Why did my deployment fail?");
    // The reply went back to the model as ask_user's response.
    assert!(sent(&model, 1).contains("ORB-2001"), "{}", sent(&model, 1));
    // Once only: the run is gone after its reply.
    let again = run.grace.reply_blocking(
        &run_id,
        Some("x"),
        Arc::new(AtomicBool::new(false)),
        &mut |_| {},
    );
    assert_eq!(again.unwrap_err().exit_code(), grace::EXIT_NOT_FOUND);
}

fn the_budget_running_out_escalates_with_what_was_found(provider: Provider, mode: Mode) {
    let model = ScriptedModel::start(
        provider,
        mode,
        vec![
            Turn::call("rag_search", json!({"query": "rollback"})),
            Turn::call("rag_search", json!({"query": "roll back a release"})),
            Turn::call("rag_search", json!({"query": "undo a deployment"})),
        ],
    );
    let run = start(&model, |c| c.agent.max_steps = 2);
    let outcome = ask(&run, "How do I roll back?");
    assert_eq!(stop(&outcome), AgentStop::MaxSteps);
    assert_eq!(outcome.report.decision, Decision::Escalate);
    let reason = &outcome.report.escalation.as_ref().unwrap().reason;
    assert!(
        reason.contains("agent.max_steps") && reason.contains("2 search(es)"),
        "{reason}"
    );
    // What was found stays in the report for the reviewer.
    assert_eq!(
        outcome
            .report
            .steps
            .iter()
            .filter(|s| s.action == "rag_search")
            .count(),
        2,
        "no evidence check without an answer"
    );
    assert_eq!(model.requests().len(), 2, "no third turn past the budget");
}

fn a_length_stop_continues_once_then_fails_clearly(provider: Provider, mode: Mode) {
    let model = ScriptedModel::start(
        provider,
        mode,
        vec![
            Turn::Length("The new pods started but did not".into()),
            Turn::Length("The new pods".into()),
        ],
    );
    let run = start(&model, |_| {});
    let outcome = ask(&run, "What does error ORB-2001 mean?");
    assert_eq!(stop(&outcome), AgentStop::Length);
    assert!(sent(&model, 1).contains("cut off by the length limit"));
    assert_eq!(outcome.report.decision, Decision::Escalate);
    let failed = outcome
        .report
        .steps
        .iter()
        .find(|s| !s.result.success)
        .unwrap();
    assert!(
        failed
            .result
            .error
            .as_deref()
            .unwrap()
            .contains("max_output_tokens"),
        "{failed:?}"
    );
    assert!(
        outcome.report.answer.is_none(),
        "a cut-off text is never an answer"
    );
}

fn malformed_json_is_retried_once_then_fails_cleanly(provider: Provider) {
    let model = ScriptedModel::start(
        provider,
        Mode::Json,
        vec![
            Turn::raw("I think I should search."),
            Turn::raw("{\"thought\": \"oops\""),
        ],
    );
    let run = start(&model, |_| {});
    let outcome = ask(&run, "What does error ORB-2001 mean?");
    match stop(&outcome) {
        AgentStop::ModelFailed(e) => assert!(e.contains("not valid") || e.contains("JSON"), "{e}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(model.requests().len(), 2, "one retry, no more");
    assert!(
        sent(&model, 1).contains("not valid"),
        "the error was quoted back"
    );
    assert_eq!(outcome.report.decision, Decision::Escalate);
}

macro_rules! for_each_provider_and_mode {
    ($($name:ident: $provider:expr, $mode:expr;)*) => {$(
        mod $name {
            use super::*;
            #[test]
            fn two_searches() {
                two_searches_the_second_chosen_after_reading_the_first($provider, $mode);
            }
            #[test]
            fn tool_error_recovered() {
                a_tool_error_is_observed_and_recovered_from($provider, $mode);
            }
            #[test]
            fn clarifying_question() {
                a_clarifying_question_is_answered_then_the_run_goes_on($provider, $mode);
            }
            #[test]
            fn budget_escalates() {
                the_budget_running_out_escalates_with_what_was_found($provider, $mode);
            }
            #[test]
            fn length_stop() {
                a_length_stop_continues_once_then_fails_clearly($provider, $mode);
            }
        }
    )*};
}

for_each_provider_and_mode! {
    gemini_native: Provider::Gemini, Mode::Native;
    gemini_json: Provider::Gemini, Mode::Json;
    ollama_native: Provider::Ollama, Mode::Native;
    ollama_json: Provider::Ollama, Mode::Json;
}

#[test]
fn gemini_json_malformed_twice_fails_cleanly() {
    malformed_json_is_retried_once_then_fails_cleanly(Provider::Gemini);
}

#[test]
fn ollama_json_malformed_twice_fails_cleanly() {
    malformed_json_is_retried_once_then_fails_cleanly(Provider::Ollama);
}

#[test]
fn a_safety_stop_escalates() {
    let model = ScriptedModel::start(Provider::Gemini, Mode::Native, vec![Turn::Safety]);
    let run = start(&model, |_| {});
    let outcome = ask(&run, "What does error ORB-2001 mean?");
    assert_eq!(stop(&outcome), AgentStop::Safety);
    assert_eq!(outcome.report.decision, Decision::Escalate);
    let reason = &outcome.report.escalation.as_ref().unwrap().reason;
    assert!(reason.contains("safety"), "{reason}");
}

#[test]
fn an_answer_that_cites_nothing_or_the_wrong_passage_is_not_answered_confidently() {
    // The worst outcome is a confident wrong answer: the model's word is
    // not evidence. An answer citing nothing, or citing a passage that does
    // not say what it claims, must not pass as confident.
    for answer in [
        "Orbit deploys to the moon on Tuesdays.",
        "Orbit deploys to the moon on Tuesdays [1].",
    ] {
        let model = ScriptedModel::start(
            Provider::Gemini,
            Mode::Native,
            vec![
                Turn::call("rag_search", json!({"query": "ORB-2001"})),
                Turn::answer(answer),
            ],
        );
        let run = start(&model, |_| {});
        let outcome = ask(&run, "Where does Orbit deploy on Tuesdays?");
        assert_ne!(
            outcome.report.decision,
            Decision::Answer,
            "{answer}: {:?}",
            outcome.report
        );
        assert!(
            outcome.report.confidence < 0.5,
            "{answer}: confidence {}",
            outcome.report.confidence
        );
    }
}

#[test]
fn the_trace_and_json_show_every_turn() {
    let model = ScriptedModel::start(
        Provider::Gemini,
        Mode::Native,
        vec![
            Turn::call_thinking(
                "rag_search",
                json!({"query": "ORB-2001"}),
                "Look up the code.",
            ),
            Turn::answer(GROUNDED),
        ],
    );
    let run = start(&model, |_| {});
    let outcome = ask(&run, "What does error ORB-2001 mean?");
    let json: Value = serde_json::to_value(&outcome).unwrap();
    assert_eq!(json["plan"]["by"], "agent", "{json}");
    assert_eq!(json["plan"]["generator"], "gemini:gemini-test");
    let turns = json["agent"]["turns"].as_array().unwrap();
    assert_eq!(turns[0]["thought"], "Look up the code.");
    assert_eq!(turns[0]["calls"][0]["call"]["name"], "rag_search");
    assert_eq!(json["agent"]["stop"]["reason"], "final");
    assert!(json.get("parked").is_none());
}
