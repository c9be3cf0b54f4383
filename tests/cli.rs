//! The `grace` command as a user runs it: exit codes, messages, `--json`.

use crate::support::common;

use std::path::Path;
use std::process::{Command, Output};

fn grace(dir: &Path, args: &[&str]) -> Output {
    grace_with(dir, args, &[])
}

/// `grace ARGS` in `dir` with these environment variables set too.
fn grace_with(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let repo = common::repo();
    Command::new(env!("CARGO_BIN_EXE_grace"))
        .args(args)
        .current_dir(dir)
        .env_remove("GRACE_CONFIG")
        .env("GRACE_EMBEDDING__MODEL_DIR", repo.join("models/minilm"))
        .env(
            "GRACE_EMBEDDING__RUNTIME_PATH",
            repo.join("models/libonnxruntime.so"),
        )
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&o.stdout)))
}

#[test]
fn ingest_search_status_round_trip_with_json() {
    let dir = tempfile::tempdir().unwrap();
    let kb = common::repo().join("examples/kb");
    let kb = kb.to_str().unwrap();

    let out = grace(dir.path(), &["ingest", kb, "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = json(&out);
    assert_eq!(report["added"], 10);
    assert_eq!(report["skipped"].as_array().unwrap().len(), 0);
    assert!(dir.path().join(".grace/collections/grace").is_dir());

    // An error code is found by its exact identifier.
    let out = grace(
        dir.path(),
        &["search", "what does ORB-2001 mean", "-k", "3", "--json"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let passages = json(&out);
    let top = &passages[0];
    assert!(
        top["source"]
            .as_str()
            .unwrap()
            .ends_with("troubleshooting.md"),
        "{top}"
    );
    assert!(
        top["section"].as_str().unwrap().contains("ORB-2001"),
        "{top}"
    );
    assert!(top["score"].as_f64().unwrap() > 0.0);

    let out = grace(dir.path(), &["search", "How do I rotate an API key?"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("1. ["), "{text}");
    assert!(
        text.lines().next().unwrap().contains("secrets.html"),
        "{text}"
    );

    let out = grace(dir.path(), &["status", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let status = json(&out);
    assert_eq!(status["sources"], 10);
    assert!(status["store"]["points"].as_u64().unwrap() >= 6);
    assert_eq!(status["store"]["dimension"], 384);
    assert!(status["model"].as_str().is_some());

    // Status still answers when the model is missing, and says why.
    let out = Command::new(env!("CARGO_BIN_EXE_grace"))
        .args(["status", "--json"])
        .current_dir(dir.path())
        .env_remove("GRACE_CONFIG")
        .env("GRACE_EMBEDDING__MODEL_DIR", dir.path().join("no-model"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let status = json(&out);
    assert!(status["model"].is_null());
    assert!(
        status["model_error"]
            .as_str()
            .unwrap()
            .contains("scripts/setup")
    );
    assert_eq!(status["sources"], 10);

    // Unchanged re-ingest writes nothing.
    let out = grace(dir.path(), &["ingest", kb, "--json"]);
    let report = json(&out);
    assert_eq!(
        (
            report["unchanged"].as_u64(),
            report["chunks_written"].as_u64()
        ),
        (Some(10), Some(0))
    );
}

/// `grace status` says how the embedded index was built, and when the
/// configuration asks for other settings, that the next ingest applies them
/// (a read-only command never rebuilds).
#[test]
fn status_shows_the_index_settings_and_when_a_change_applies() {
    let dir = tempfile::tempdir().unwrap();
    let kb = common::repo().join("examples/kb");
    let kb = kb.to_str().unwrap();
    let out = grace(dir.path(), &["ingest", kb, "-q"]);
    assert!(out.status.success(), "{}", stderr(&out));

    let index = |env: &[(&str, &str)]| {
        let out = grace_with(dir.path(), &["status", "--json"], env);
        assert!(out.status.success(), "{}", stderr(&out));
        json(&out)["index"].clone()
    };
    let built = index(&[]);
    assert_eq!(built["quantization"], "int8", "{built}");
    assert_eq!(built["hnsw_m"], 16, "{built}");
    assert_eq!(built["segment_points"], 50_000, "{built}");
    assert_eq!(built["rebuild_pending"], false, "{built}");

    let binary = [("GRACE_STORAGE__QUANTIZATION", "binary")];
    let pending = index(&binary);
    assert_eq!(pending["quantization"], "int8", "still as built: {pending}");
    assert_eq!(pending["rebuild_pending"], true, "{pending}");
    let out = grace_with(dir.path(), &["status"], &binary);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("index        int8 vectors in memory"),
        "{text}"
    );
    assert!(
        text.contains("the next `grace ingest` rebuilds the index"),
        "{text}"
    );

    // Nothing to write, but the write-open applies the settings.
    let out = grace_with(dir.path(), &["ingest", kb, "-q"], &binary);
    assert!(out.status.success(), "{}", stderr(&out));
    let rebuilt = index(&binary);
    assert_eq!(rebuilt["quantization"], "binary", "{rebuilt}");
    assert_eq!(rebuilt["rebuild_pending"], false, "{rebuilt}");
}

#[test]
fn search_before_any_ingest_says_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let out = grace(dir.path(), &["search", "anything"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(stderr(&out).contains("grace ingest"), "{}", stderr(&out));
}

#[test]
fn missing_path_exits_3_and_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = grace(dir.path(), &["ingest", "no/such/folder"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(stderr(&out).contains("no/such/folder"), "{}", stderr(&out));
}

#[test]
fn bad_config_exits_2_naming_key_and_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("grace_config.yml"), "search:\n  limit: 0\n").unwrap();
    let out = grace(dir.path(), &["status"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("grace_config.yml:2:") && err.contains("search.limit"),
        "{err}"
    );

    let out = Command::new(env!("CARGO_BIN_EXE_grace"))
        .args(["config"])
        .current_dir(tempfile::tempdir().unwrap().path())
        .env("GRACE_SEARCH__HYBRID", "sometimes")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("GRACE_SEARCH__HYBRID"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn empty_query_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let doc = dir.path().join("a.md");
    std::fs::write(&doc, "# A\n\nSome text.").unwrap();
    assert!(
        grace(dir.path(), &["ingest", "a.md", "-q"])
            .status
            .success()
    );
    let out = grace(dir.path(), &["search", "  "]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn missing_model_exits_3_and_says_run_setup() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.md"), "# A\n\nSome text.").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_grace"))
        .args(["ingest", "a.md"])
        .current_dir(dir.path())
        .env_remove("GRACE_CONFIG")
        .env_remove("GRACE_EMBEDDING__MODEL_DIR")
        .env_remove("GRACE_EMBEDDING__RUNTIME_PATH")
        // The per-user folder, where the models would be: empty.
        .env("GRACE_HOME", dir.path().join("home"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let e = stderr(&out);
    assert!(e.contains("scripts/setup"), "{e}");
    let missing = dir.path().join("home/models");
    assert!(e.contains(&missing.display().to_string()), "{e}");
}

#[test]
fn missing_or_broken_runtime_is_a_clear_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.md"), "# A\n\nSome text.").unwrap();
    let run = |runtime: &Path| {
        Command::new(env!("CARGO_BIN_EXE_grace"))
            .args(["ingest", "a.md"])
            .current_dir(dir.path())
            .env_remove("GRACE_CONFIG")
            .env(
                "GRACE_EMBEDDING__MODEL_DIR",
                common::repo().join("models/minilm"),
            )
            .env("GRACE_EMBEDDING__RUNTIME_PATH", runtime)
            .output()
            .unwrap()
    };
    let out = run(&dir.path().join("nowhere/libonnxruntime.so"));
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("ONNX Runtime library"),
        "{}",
        stderr(&out)
    );

    let fake = dir.path().join("libonnxruntime.so");
    std::fs::write(&fake, "this is not a shared library").unwrap();
    let out = run(&fake);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("cannot be used") && !err.contains("panicked"),
        "{err}"
    );
}

#[test]
fn eval_reports_recall_and_separation_as_json() {
    let dir = tempfile::tempdir().unwrap();
    let set = common::repo().join("tests/fixtures/eval-mini");
    let out = grace(dir.path(), &["eval", set.to_str().unwrap(), "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let r = json(&out);
    assert_eq!(r["questions"], 5);
    assert_eq!(r["answerable"], 3);
    assert_eq!(r["unanswerable_in_domain"], 1);
    assert_eq!(r["unanswerable_out_of_domain"], 1);
    assert_eq!(r["recall_at_k"], 1.0);
    let auroc = r["top1_cosine"]["auroc"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&auroc));
    assert!(r["ece"].as_f64().is_some() && r["latency_p50_ms"].as_f64().is_some());
    let answered = r["answered"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&answered));
    assert!(r["answer_confidence"]["auroc"].as_f64().is_some());
    // The out-of-domain question must not be answered.
    assert_eq!(r["unanswerable_answered_out_of_domain"], 0, "{r}");
    assert!(r["unanswerable_answered"].as_f64().unwrap() <= 0.5, "{r}");
    // The temporary store is gone and the user's data folder untouched.
    assert!(!dir.path().join(".grace").exists());

    let out = grace(dir.path(), &["eval", "no-such-set"]);
    assert_eq!(out.status.code(), Some(3));
    let bad = dir.path().join("bad");
    std::fs::create_dir_all(bad.join("corpus")).unwrap();
    std::fs::write(bad.join("questions.jsonl"), "{\"id\": 1}\n").unwrap();
    let out = grace(dir.path(), &["eval", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("questions.jsonl:1:"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn ask_answers_or_exits_4() {
    let dir = ingested_sample();

    let out = grace(
        dir.path(),
        &["ask", "How do I rotate an API key?", "--trace"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("[1]") && text.contains("secrets.html"),
        "{text}"
    );
    assert!(
        text.contains("trace:") && text.contains("Groundedness"),
        "{text}"
    );

    let out = grace(
        dir.path(),
        &["ask", "Who won the 1998 football world cup?", "--json"],
    );
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    let r = json(&out);
    assert!(
        r["decision"] == "decline" || r["decision"] == "escalate",
        "{r}"
    );
    assert!(r["steps"].as_array().unwrap().len() >= 2);

    let out = grace(dir.path(), &["ask", " "]);
    assert_eq!(out.status.code(), Some(2));
}

/// A folder with the sample knowledge base ingested.
fn ingested_sample() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let kb = common::repo().join("examples/kb");
    assert!(
        grace(dir.path(), &["ingest", kb.to_str().unwrap(), "-q"])
            .status
            .success()
    );
    dir
}

/// The escalations `grace review list` shows in `dir`.
fn open_escalations(dir: &Path) -> usize {
    let out = grace(dir, &["--json", "review", "list"]);
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    list.as_array().map_or(0, Vec::len)
}

/// `grace ARGS` in `dir` at a terminal (a pseudo-terminal from util-linux
/// `script`), `input` typed in: its exit code and what it printed.
fn in_pty(dir: &Path, args: &str, input: &str) -> (Option<i32>, String) {
    use std::io::Write;
    let repo = common::repo();
    let command = format!("{} {args}", env!("CARGO_BIN_EXE_grace"));
    let mut child = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .current_dir(dir)
        .env_remove("GRACE_CONFIG")
        .env("GRACE_EMBEDDING__MODEL_DIR", repo.join("models/minilm"))
        .env(
            "GRACE_EMBEDDING__RUNTIME_PATH",
            repo.join("models/libonnxruntime.so"),
        )
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("util-linux `script` runs the command in a pseudo-terminal");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// `grace ask` at a terminal (a pseudo-terminal from util-linux `script`)
/// offers the asker of an escalated question what an asker can decide:
/// see the draft (marked unconfirmed), rephrase, or ask a person. They are
/// never asked to confirm an answer to their own question: a confident
/// wrong answer is the worst outcome, and the asker cannot judge it.
#[test]
fn ask_at_a_terminal_offers_the_draft_a_rephrase_or_a_person() {
    let dir = ingested_sample();
    let run_in_pty = |reply: &str| in_pty(dir.path(), "ask 'Can I deploy on Fridays?'", reply);

    let open = || open_escalations(dir.path());

    // 1 shows the draft, marked; 3 asks a person (queued, exit 4).
    let (code, text) = run_in_pty("1\n3\n");
    assert!(
        text.contains("Your choice (1-3; Enter asks a person)"),
        "{text}"
    );
    assert!(text.contains("GRACE's draft, UNCONFIRMED"), "{text}");
    assert!(!text.contains("Confirm this answer"), "{text}");
    assert!(
        text.contains("Queued for review as escalation #1"),
        "{text}"
    );
    assert!(
        text.contains("Possibly relevant while a person checks"),
        "{text}"
    );
    assert_eq!(code, Some(4), "{text}");
    assert_eq!(open(), 1);

    // A number or "yes" that is no option is said so, not taken as a
    // question or a confirmation; Enter then asks a person.
    let (code, text) = run_in_pty("7\nyes\n\n");
    assert!(text.contains("\"7\" is not one of the options"), "{text}");
    assert!(text.contains("\"yes\" is not one of the options"), "{text}");
    assert_eq!(code, Some(4), "{text}");

    // 2 asks again in other words: answered, and nobody else is asked.
    let before = open();
    let (code, text) = run_in_pty("2\nhow do I rotate an api key for my service\n");
    assert!(text.contains("Your question in other words"), "{text}");
    assert!(text.contains("orbit secrets set"), "{text}");
    assert_eq!(code, Some(0), "{text}");
    assert_eq!(
        open(),
        before,
        "a rephrased question that was answered queued nothing"
    );
}

/// `grace chat` at a terminal: an escalated question waits for its
/// asker's choice; a number is read against the options, a number or
/// "yes" where GRACE asked nothing is refused, and leaving with a question
/// waiting sends it to a person, as Enter would.
#[test]
fn chat_at_a_terminal_offers_the_same_choice() {
    let dir = ingested_sample();
    let chat = |lines: &str| in_pty(dir.path(), "chat", lines).1;
    let open = || open_escalations(dir.path());

    // 1 shows the draft, 7 is no option, 3 asks a person; then "1" and
    // "yes" with nothing asked are refused, not asked.
    let text = chat("Can I deploy on Fridays?\n1\n7\n3\n1\nyes\n/quit\n");
    assert!(text.contains("What would you like to do?"), "{text}");
    assert!(text.contains("GRACE's draft, UNCONFIRMED"), "{text}");
    assert!(text.contains("\"7\" is not one of the options"), "{text}");
    assert!(
        text.contains("Queued for review as escalation #1"),
        "{text}"
    );
    assert!(text.contains("\"1\" has no words"), "{text}");
    assert!(
        text.contains("\"yes\" answers a question, and GRACE asked none"),
        "{text}"
    );
    assert_eq!(open(), 1);

    // A new question leaves the escalated one with no one.
    let text =
        chat("Is there a deploy freeze in December?\nHow long are nightly backups kept?\n/quit\n");
    assert!(text.contains("not sent to a person"), "{text}");
    assert!(text.contains("35 days"), "{text}");
    assert_eq!(open(), 1);

    // Leaving with a question waiting sends it, as Enter would.
    let text = chat("Is there a deploy freeze in December?\n/quit\n");
    assert!(text.contains("goes to a person"), "{text}");
    // Its own escalation (#2), whether it stands alone or joins #1.
    assert!(
        text.contains("Queued for review as escalation #2"),
        "{text}"
    );
}

/// `grace search … | head -1`: the reader goes away before GRACE writes.
/// GRACE stops quietly with 141 (as a tool killed by SIGPIPE), with no
/// panic or backtrace on stderr.
#[test]
fn output_to_a_closed_pipe_ends_quietly_not_with_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let kb = common::repo().join("examples/kb");
    let out = grace(dir.path(), &["ingest", kb.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", stderr(&out));
    for args in [
        &["search", "how do I install the CLI", "-k", "5"][..],
        &["--json", "search", "how do I install the CLI"][..],
        &["ask", "How do I install the CLI?"][..],
    ] {
        let mut child = common::grace_cmd(dir.path(), args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Close the reading end before GRACE has loaded its model.
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(141), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(!err.contains("stack backtrace"), "{args:?}: {err}");
    }
}

/// The terminal says why in plain words, in both directions, from where
/// every answer starts; what it lists adds up to the total it shows; the
/// decision line never contradicts itself; a declined question leads with
/// what was missing.
#[test]
fn the_terminal_explains_each_confidence_in_plain_words_that_add_up() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let kb = common::repo().join("examples/kb");
    assert!(
        grace(d, &["ingest", kb.to_str().unwrap(), "-q"])
            .status
            .success()
    );
    for (question, decision) in [
        ("How do I roll back a production deployment?", "caveat"),
        ("Can I deploy on Fridays?", "escalate"),
        ("What is the boiling point of mercury?", "decline"),
    ] {
        let out = grace(d, &["ask", "--no-input", question]);
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            text.contains(&format!("-> {decision}")),
            "{question}: {text}"
        );
        assert!(!text.contains("(escalate) ->"), "{text}");
        for internal in [
            "MaxScore",
            "Margin ",
            "NeighbourScore",
            "FollowUpCoverage",
            "weight ",
        ] {
            assert!(!text.contains(internal), "{question}: {internal} in {text}");
        }
        let start = text.find("Every answer starts at ").expect("a baseline");
        // The why ends at its total line.
        let end = text[start..]
            .find("\n  = ")
            .map(|i| start + i + text[start + i + 1..].find('\n').unwrap_or(0) + 1)
            .unwrap_or(text.len());
        let why = &text[start..end];
        let number = |s: &str| s.trim().parse::<f64>().unwrap();
        let baseline = number(
            why["Every answer starts at ".len()..]
                .split(';')
                .next()
                .unwrap(),
        );
        let terms: Vec<f64> = why
            .lines()
            .filter_map(|l| {
                let l = l.trim_start();
                (l.starts_with('+') || l.starts_with('-'))
                    .then(|| number(l.split_whitespace().next().unwrap()))
            })
            .collect();
        let total_line = why
            .lines()
            .find(|l| l.trim_start().starts_with("= "))
            .unwrap();
        let total = number(total_line.trim_start()[2..].split(':').next().unwrap());
        let shown = baseline + terms.iter().sum::<f64>();
        assert!(
            (shown - total).abs() <= 0.005 * (terms.len() + 2) as f64,
            "{question}: {baseline} + {terms:?} = {shown}, shown as {total}"
        );
        if decision == "escalate" {
            // No dead end: what GRACE found while a person checks.
            assert!(
                text.contains("Possibly relevant while a person checks (not an answer):"),
                "{text}"
            );
            assert!(
                text.contains("No question has been answered by a person here yet."),
                "{text}"
            );
        }
        if decision == "decline" {
            let missing = why.find("What was missing:").expect("what was missing");
            let raised = why.find("What raised it:").unwrap_or(usize::MAX);
            assert!(missing < raised, "{why}");
        } else {
            assert!(why.contains("What raised it:"), "{why}");
        }
    }
}
