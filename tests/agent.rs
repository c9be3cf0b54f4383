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

use crate::support;
use crate::support::common;

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use grace::agent::AgentStop;
use grace::config::{Config, Strategy};
use grace::exec::Decision;
use grace::{AskOptions, AskOutcome, Grace};
use serde_json::{Value, json};
use support::mock_llm::{GROUNDED, Mode, Provider, ScriptedModel, Turn, clarifying_script};

struct Run {
    _dir: tempfile::TempDir,
    grace: Grace,
}

fn start(model: &ScriptedModel, tweak: impl FnOnce(&mut Config)) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let mut config = common::config(dir.path());
    config.planner.strategy = Strategy::Agent;
    // These tests are about the loop, not the calibration: a grounded
    // answer on the sample knowledge base must pass `notify`.
    config.confidence.weights = common::hand_set_weights();
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
    assert!(common::first_cited(&answer.citations).ends_with("troubleshooting.md"));
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
    let model = ScriptedModel::start(provider, mode, clarifying_script());
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
    // The resumed run goes on from the steps before the question: they are
    // in its report, and no step id is used twice.
    let ids: Vec<&str> = resumed.report.steps.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(resumed.report.steps[0].action, "ask_user", "{ids:?}");
    let unique: std::collections::BTreeSet<&&str> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "{ids:?}");
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

#[test]
fn http_needs_input_then_reply_then_answer_and_expiry() {
    let model = ScriptedModel::start(Provider::Gemini, Mode::Native, clarifying_script());
    let run = start(&model, |c| c.agent.reply_timeout_seconds = 2.0);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let server = common::serve(run.grace.clone()).await;
        let http = reqwest::Client::new();
        let post = |path: String, body: Value| {
            let http = http.clone();
            let url = format!("{}{path}", server.base);
            async move {
                let r = http.post(url).json(&body).send().await.unwrap();
                let status = r.status();
                (status, r.json::<Value>().await.unwrap_or(Value::Null))
            }
        };
        let (status, first) = post(
            "/v1/ask".into(),
            json!({"question": "Why did my deployment fail?", "queue": false}),
        )
        .await;
        assert_eq!(status, 200, "{first}");
        assert_eq!(first["decision"], "needs_input");
        assert_eq!(first["status"], "needs_input");
        assert_eq!(
            first["clarification"]["question"],
            "Which error code do you see?"
        );
        assert_eq!(first["clarification"]["options"][1], "ORB-2001");
        let run_id = first["run_id"].as_str().unwrap().to_string();
        // Hostile replies: too long (for JSON or a stream), wrong type,
        // unknown field; and a bad id.
        for stream in [false, true] {
            let (status, _) = post(
                format!("/v1/runs/{run_id}/reply"),
                json!({"reply": "x".repeat(5_000), "stream": stream}),
            )
            .await;
            assert_eq!(status, 400, "stream: {stream}");
        }
        let (status, _) = post(format!("/v1/runs/{run_id}/reply"), json!({"reply": 7})).await;
        assert!(status.is_client_error());
        let (status, _) = post(
            format!("/v1/runs/{run_id}/reply"),
            json!({"reply": "a", "as": "admin"}),
        )
        .await;
        assert!(status.is_client_error());
        let (status, _) = post("/v1/runs/run_nope/reply".into(), json!({"reply": "a"})).await;
        assert_eq!(status, 404);

        let (status, done) = post(
            format!("/v1/runs/{run_id}/reply"),
            json!({"reply": "ORB-2001"}),
        )
        .await;
        assert_eq!(status, 200, "{done}");
        assert!(
            done["decision"] == "answer" || done["decision"] == "caveat",
            "{done}"
        );
        assert_eq!(done["question"], "Why did my deployment fail?");
        // Sources are shown relative, as on /v1/ask.
        let source = done["answer"]["citations"][0]["source"].as_str().unwrap();
        assert!(!source.starts_with('/'), "{source}");
        // Continued once: a second reply is 404.
        let (status, _) = post(format!("/v1/runs/{run_id}/reply"), json!({"reply": "x"})).await;
        assert_eq!(status, 404);
        server.stop().await;
    });
    drop(rt);

    // A run nobody continues within agent.reply_timeout_seconds expires.
    let model = ScriptedModel::start(Provider::Gemini, Mode::Native, clarifying_script());
    let run = start(&model, |c| c.agent.reply_timeout_seconds = 0.5);
    let outcome = ask(&run, "Why did my deployment fail?");
    let run_id = outcome.run_id.unwrap();
    std::thread::sleep(std::time::Duration::from_millis(700));
    let late = run.grace.reply_blocking(
        &run_id,
        Some("ORB-2001"),
        Arc::new(AtomicBool::new(false)),
        &mut |_| {},
    );
    let e = late.unwrap_err();
    assert_eq!(e.exit_code(), grace::EXIT_NOT_FOUND);
    assert!(e.to_string().contains("agent.reply_timeout_seconds"), "{e}");
}

/// `grace` with the scripted Gemini as its model and the agent loop on.
fn agent_cmd(model: &ScriptedModel, dir: &std::path::Path, args: &[&str]) -> std::process::Command {
    let mut cmd = common::grace_cmd(dir, args);
    cmd.env("GRACE_LLM__PROVIDER", "gemini")
        .env(
            "GRACE_LLM__GEMINI__BASE_URL",
            format!("{}/v1beta/", model.uri()),
        )
        .env("GRACE_LLM__GEMINI__MODEL", "gemini-test")
        .env("GRACE_LLM__TOOL_MODE", "native")
        .env("GRACE_PLANNER__STRATEGY", "agent")
        .env("GEMINI_API_KEY", "test-key")
        .envs(common::hand_set_weight_env());
    cmd
}

fn ingested() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let kb = common::repo().join("examples/kb");
    let out = common::grace(dir.path(), &["ingest", kb.to_str().unwrap(), "-q"]);
    assert!(out.status.success(), "{}", common::output_text(&out));
    dir
}

#[test]
fn cli_ask_without_a_terminal_ends_as_needs_input_with_exit_5() {
    let dir = ingested();
    let model = ScriptedModel::start(Provider::Gemini, Mode::Native, clarifying_script());
    let out = agent_cmd(
        &model,
        dir.path(),
        &["ask", "Why did my deployment fail?", "--json"],
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(5), "{}", common::output_text(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["decision"], "needs_input");
    assert_eq!(report["clarification"]["urgency"], "blocking");

    // An optional question without a terminal: the run goes on, on the
    // model's assumption, which the observation asks it to state.
    let mut script = clarifying_script();
    script[0] = Turn::call(
        "ask_user",
        json!({"question": "Staging or production?", "reason": "r", "urgency": "optional"}),
    );
    let model = ScriptedModel::start(Provider::Gemini, Mode::Native, script);
    let out = agent_cmd(
        &model,
        dir.path(),
        &["ask", "Why did my deployment fail?", "--json"],
    )
    .output()
    .unwrap();
    assert!(
        matches!(out.status.code(), Some(0) | Some(4)),
        "{}",
        common::output_text(&out)
    );
    assert!(
        sent(&model, 1).contains("best assumption"),
        "{}",
        sent(&model, 1)
    );
}

#[test]
fn cli_ask_at_a_terminal_puts_the_question_and_goes_on() {
    let dir = ingested();
    let model = ScriptedModel::start(Provider::Gemini, Mode::Native, clarifying_script());
    let cmd = agent_cmd(&model, dir.path(), &["ask", "Why did my deployment fail?"]);
    // Option 2 is "ORB-2001".
    let out = common::at_a_terminal(&cmd, "2\n");
    let text = common::output_text(&out);
    assert!(
        text.contains("GRACE asks: Which error code do you see?"),
        "{text}"
    );
    assert!(text.contains("rolls back automatically"), "{text}");
    assert!(sent(&model, 1).contains("ORB-2001"), "{}", sent(&model, 1));
}

#[test]
fn chat_takes_the_next_line_as_the_reply() {
    let dir = ingested();
    let model = ScriptedModel::start(Provider::Gemini, Mode::Native, clarifying_script());
    let out = common::with_input(
        agent_cmd(&model, dir.path(), &["chat"]),
        "Why did my deployment fail?\n2\n/quit\n",
    );
    let text = common::output_text(&out);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("GRACE needs to know more: Which error code do you see?"),
        "{text}"
    );
    assert!(text.contains("rolls back automatically"), "{text}");
    assert!(
        sent(&model, 1).contains("ORB-2001"),
        "the number picked the option"
    );
}

mod mcp {
    use super::*;
    use rmcp::ServiceExt;
    use rmcp::model::{
        CallToolRequestParams, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
        ElicitationAction, Implementation,
    };
    use rmcp::service::{RequestContext, RoleClient};
    use rmcp::transport::TokioChildProcess;

    /// An MCP client whose user answers every elicitation with `reply`.
    struct Answering {
        reply: &'static str,
        asked: Arc<std::sync::Mutex<Vec<String>>>,
    }

    impl rmcp::ClientHandler for Answering {
        fn get_info(&self) -> ClientConfig {
            ClientConfig::new(
                ClientCapabilities::builder().enable_elicitation().build(),
                Implementation::new("answering-test-client", "0.0.0"),
            )
        }

        async fn create_elicitation(
            &self,
            request: ElicitRequestParams,
            _context: RequestContext<RoleClient>,
        ) -> Result<ElicitResult, rmcp::ErrorData> {
            if let ElicitRequestParams::FormElicitationParams { message, .. } = request {
                self.asked.lock().unwrap().push(message);
            }
            Ok(ElicitResult::new(ElicitationAction::Accept)
                .with_content(json!({"reply": self.reply})))
        }
    }

    fn args(v: Value) -> serde_json::Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_clarifying_question_goes_through_elicitation_or_comes_back_with_a_run_id() {
        let dir = tokio::task::spawn_blocking(ingested).await.unwrap();
        let (model, plain) = tokio::task::spawn_blocking(|| {
            (
                ScriptedModel::start(Provider::Gemini, Mode::Native, clarifying_script()),
                ScriptedModel::start(Provider::Gemini, Mode::Native, clarifying_script()),
            )
        })
        .await
        .unwrap();

        // A client that supports elicitation: its user is asked, the run goes on.
        let mut cmd = tokio::process::Command::from(agent_cmd(&model, dir.path(), &["mcp"]));
        cmd.stderr(std::process::Stdio::null());
        let asked = Arc::new(std::sync::Mutex::new(Vec::new()));
        let client = Answering {
            reply: "ORB-2001",
            asked: asked.clone(),
        }
        .serve(TokioChildProcess::new(cmd).unwrap())
        .await
        .unwrap();
        let result = client
            .call_tool(
                CallToolRequestParams::new("ask")
                    .with_arguments(args(json!({"question": "Why did my deployment fail?"}))),
            )
            .await
            .unwrap();
        let body = result.structured_content.unwrap();
        let decision = body["data"]["decision"].as_str().unwrap().to_string();
        assert!(decision == "answer" || decision == "caveat", "{body}");
        assert!(asked.lock().unwrap()[0].contains("Which error code do you see?"));
        client.cancel().await.unwrap();

        // A client without elicitation: the question and a run_id come
        // back, and `ask` with run_id and reply continues the run.
        let mut cmd = tokio::process::Command::from(agent_cmd(&plain, dir.path(), &["mcp"]));
        cmd.stderr(std::process::Stdio::null());
        let client = ().serve(TokioChildProcess::new(cmd).unwrap()).await.unwrap();
        let result = client
            .call_tool(
                CallToolRequestParams::new("ask")
                    .with_arguments(args(json!({"question": "Why did my deployment fail?"}))),
            )
            .await
            .unwrap();
        let body = result.structured_content.unwrap();
        assert_eq!(body["data"]["decision"], "needs_input", "{body}");
        let run_id = body["data"]["run_id"].as_str().unwrap().to_string();
        let result = client
            .call_tool(
                CallToolRequestParams::new("ask")
                    .with_arguments(args(json!({"run_id": run_id, "reply": "ORB-2001"}))),
            )
            .await
            .unwrap();
        let body = result.structured_content.unwrap();
        let decision = body["data"]["decision"].as_str().unwrap().to_string();
        assert!(decision == "answer" || decision == "caveat", "{body}");
        client.cancel().await.unwrap();
        tokio::task::spawn_blocking(move || drop((model, plain)))
            .await
            .unwrap();
    }
}
