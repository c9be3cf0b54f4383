//! Every example output in README.md and the book is what `grace` prints
//! today on the sample knowledge base (`examples/kb`).
//!
//! An example is a fenced block whose first line is a command (`$ grace …`,
//! `$ printf '…' | grace chat`, `NAME=value` first if it sets the
//! environment); the lines after a command, up to the next, are its
//! output. Each document's examples run in order in a fresh folder holding
//! a copy of the sample (ingested first unless the first example ingests
//! it), so one example may build on the last.
//!
//! A command that names `GRACE_LLM__PROVIDER=gemini` runs against the
//! scripted model the other tests use (`tests/support/mock_llm.rs`, a
//! local server in Gemini's REST shape; [`scripted_model`] holds its
//! turns): nothing reaches the network.
//!
//! Compared line by line, with what changes from run to run set aside: an
//! answer id (`ans_…`, the one shown is used by later commands), an API
//! key (`gk_…`), a duration
//! (`0.8 s`, `12 ms`) and a time stamp. A line `…` in the book stands for
//! any lines the book leaves out. `GRACE_BLESS=1 cargo test --test
//! it book_examples::` writes what `grace` prints into the blocks that differ
//! (shorten them again by hand with `…`).

use crate::support;
use crate::support::common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The documents whose examples run, relative to the repository.
const DOCUMENTS: &[&str] = &["README.md", "docs/src/cli.md", "docs/src/tools.md"];

/// Documents whose examples are measurements on other data, dated in
/// their text, and why they cannot run on the sample.
const MEASURED: &[(&str, &str)] = &[(
    "docs/src/calibration.md",
    "`grace calibrate --self` on debian-faq's corpus (eval/): the sample has about 30 \
     sections, fewer than self-calibration's 50",
)];

/// A line standing for any lines the book leaves out.
const ELISION: &str = "…";

/// One command of an example and the output the book shows for it.
#[derive(Debug)]
struct Step {
    command: String,
    expected: Vec<String>,
}

/// An example block: where it is in its document, its indent, its steps.
#[derive(Debug)]
struct Example {
    /// Index of the block's first line after the opening fence.
    first: usize,
    /// Index of its closing fence.
    end: usize,
    indent: usize,
    steps: Vec<Step>,
}

/// The example blocks of `text`.
fn examples(text: &str) -> Vec<Example> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let indent = line.len() - line.trim_start().len();
        if !line.trim_start().starts_with("```") {
            i += 1;
            continue;
        }
        let first = i + 1;
        let mut end = first;
        while end < lines.len() && lines[end].trim() != "```" {
            end += 1;
        }
        let body: Vec<&str> = lines[first..end]
            .iter()
            .map(|l| l.get(indent..).unwrap_or(l.trim_start()))
            .collect();
        if body.first().is_some_and(|l| is_command(l)) {
            let mut steps: Vec<Step> = Vec::new();
            for l in body {
                match l.strip_prefix("$ ").filter(|_| is_command(l)) {
                    Some(command) => steps.push(Step {
                        command: command.to_string(),
                        expected: Vec::new(),
                    }),
                    None => steps
                        .last_mut()
                        .expect("a command comes first")
                        .expected
                        .push(l.to_string()),
                }
            }
            out.push(Example {
                first,
                end,
                indent,
                steps,
            });
        }
        i = end + 1;
    }
    out
}

/// Whether a block line is a command of grace's.
fn is_command(line: &str) -> bool {
    line.starts_with("$ ") && line.contains("grace ")
}

/// `command` split as a shell would: words, `'…'` and `"…"` quoting.
fn words(command: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut started = false;
    for c in command.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                started = true;
            }
            (None, c) if c.is_whitespace() => {
                if started {
                    out.push(std::mem::take(&mut word));
                    started = false;
                }
            }
            (None, c) => {
                word.push(c);
                started = true;
            }
        }
    }
    if started {
        out.push(word);
    }
    out
}

/// Runs one example command in `dir`: its stdout, as lines.
fn run(dir: &Path, command: &str) -> Vec<String> {
    // A comment after the command is the book's, not the shell's.
    let command = command.split(" # ").next().unwrap_or(command).trim();
    let (input, command) = match command.split_once(" | ") {
        Some((printf, rest)) => {
            let text = words(printf);
            assert_eq!(
                text[0], "printf",
                "only `printf '…' |` feeds a command: {command}"
            );
            (Some(text[1].replace("\\n", "\n")), rest)
        }
        None => (None, command),
    };
    let mut words = words(command);
    let mut env = Vec::new();
    while words
        .first()
        .is_some_and(|w| w.contains('=') && !w.starts_with('-'))
    {
        let w = words.remove(0);
        let (k, v) = w.split_once('=').unwrap();
        env.push((k.to_string(), v.to_string()));
    }
    assert_eq!(words[0], "grace", "an example runs grace: {command}");
    let args: Vec<&str> = words[1..].iter().map(String::as_str).collect();
    let mut cmd = common::grace_cmd(dir, &args);
    let model = env
        .iter()
        .any(|(k, v)| k == "GRACE_LLM__PROVIDER" && v == "gemini")
        .then(scripted_model);
    if let Some(model) = &model {
        cmd.env(
            "GRACE_LLM__GEMINI__BASE_URL",
            format!("{}/v1beta/", model.uri()),
        )
        .env("GRACE_LLM__GEMINI__MODEL", support::mock_llm::GEMINI_MODEL)
        .env("GRACE_LLM__TOOL_MODE", "native")
        .env("GEMINI_API_KEY", "test-key");
    }
    cmd.envs(env)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    {
        use std::io::Write as _;
        let mut stdin = child.stdin.take().unwrap();
        if let Some(text) = input {
            stdin.write_all(text.as_bytes()).unwrap();
        }
    }
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut lines: Vec<String> = stdout.lines().map(str::to_string).collect();
    while lines.last().is_some_and(|l| l.trim().is_empty()) {
        lines.pop();
    }
    assert!(
        !lines.is_empty() || out.status.success(),
        "`{command}` printed nothing and failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    lines
}

/// The model behind the book's agent example (docs/src/cli.md): it
/// searches for the failure, then for the error code it names, then
/// answers from the passages.
fn scripted_model() -> support::mock_llm::ScriptedModel {
    use serde_json::json;
    use support::mock_llm::{Mode, Provider, ScriptedModel, Turn};
    ScriptedModel::start(
        Provider::Gemini,
        Mode::Native,
        vec![
            Turn::call_thinking(
                "rag_search",
                json!({"query": "deployment failed health check"}),
                "Search for the failure first.",
            ),
            Turn::call_thinking(
                "rag_search",
                json!({"query": "ORB-2001"}),
                "The passages name ORB-2001 as the health-check failure; look it up exactly.",
            ),
            Turn::answer(&format!(
                "{} If the service needs longer to start, raise rollout.timeout_seconds in \
                 orbit.yml [1].",
                support::mock_llm::GROUNDED
            )),
        ],
    )
}

/// The answer ids in `lines`, in order.
fn answer_ids(lines: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for line in lines {
        let mut rest = line.as_str();
        while let Some(at) = rest.find("ans_") {
            let id: String = rest[at..].chars().take(36).collect();
            if id.len() == 36 && id[4..].chars().all(|c| c.is_ascii_hexdigit()) {
                out.push(id);
            }
            rest = &rest[at + 4..];
        }
    }
    out
}

/// `line` with what changes from run to run set aside: answer ids,
/// durations (a number before `s` or `ms`), time stamps.
fn steady(line: &str) -> String {
    let chars: Vec<char> = line.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        let rest: String = chars[i..].iter().take(36).collect();
        if rest.starts_with("ans_") && answer_ids(std::slice::from_ref(&rest)).len() == 1 {
            out.push_str("ans_<id>");
            i += 36;
            continue;
        }
        // An API key (`grace auth add-key`): gk_ and 64 hex digits, which
        // the book writes `gk_…`.
        if rest.starts_with("gk_…") {
            out.push_str("gk_<key>");
            i += 4;
            continue;
        }
        let key: String = chars[i..].iter().take(67).collect();
        if key.len() == 67
            && key.starts_with("gk_")
            && key[3..].chars().all(|c| c.is_ascii_hexdigit())
        {
            out.push_str("gk_<key>");
            i += 67;
            continue;
        }
        // A time stamp: 2026-11-24T21:55:03.473+00:00.
        if chars[i].is_ascii_digit() && rest.len() > 19 && rest.as_bytes()[10] == b'T' {
            let mut j = i;
            while j < chars.len() && !chars[j].is_whitespace() && chars[j] != ',' {
                j += 1;
            }
            out.push_str("<time>");
            i = j;
            continue;
        }
        let starts_number = chars[i].is_ascii_digit()
            && (i == 0 || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '.'));
        if starts_number {
            let mut j = i;
            while j < chars.len() && (chars[j].is_ascii_digit() || chars[j] == '.') {
                j += 1;
            }
            let unit: String = chars[j..].iter().take(4).collect();
            let duration = [" ms", " s", "ms", "s"].into_iter().find(|u| {
                unit.starts_with(u)
                    && unit[u.len()..]
                        .chars()
                        .next()
                        .is_none_or(|c| !c.is_alphanumeric())
            });
            if let Some(u) = duration {
                out.push_str("<t>");
                i = j + u.chars().count();
                continue;
            }
            out.extend(&chars[i..j]);
            i = j;
            continue;
        }
        out.push(chars[i]);
        i += 1;
    }
    out.trim_end().to_string()
}

/// Whether `actual` matches `expected`, a `…` line standing for any lines.
fn matches(expected: &[String], actual: &[String]) -> bool {
    match expected.split_first() {
        None => actual.is_empty(),
        Some((first, rest)) if first.trim() == ELISION => {
            (0..=actual.len()).any(|skip| matches(rest, &actual[skip..]))
        }
        Some((first, rest)) => actual
            .split_first()
            .is_some_and(|(a, more)| steady(first) == steady(a) && matches(rest, more)),
    }
}

/// Runs every example of `document`; the differences, and the document
/// as `grace` would have it.
fn check(document: &Path) -> (Vec<String>, String) {
    let text = std::fs::read_to_string(document).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let dir = tempfile::tempdir().unwrap();
    common::copy_tree(
        &common::repo().join("examples/kb"),
        &dir.path().join("examples/kb"),
    );
    let found = examples(&text);
    let ingests_first = found
        .first()
        .and_then(|e| e.steps.first())
        .is_some_and(|s| s.command.starts_with("grace ingest examples/kb"));
    if !ingests_first {
        run(dir.path(), "grace ingest examples/kb -q");
    }
    // The book's answer ids, and the ones this run printed in their place.
    let mut ids: HashMap<String, String> = HashMap::new();
    let mut differences = Vec::new();
    // Blocks rewritten from the last up, so earlier line numbers hold.
    let mut rewritten: Vec<(usize, usize, Vec<String>)> = Vec::new();
    for example in &found {
        let mut block = Vec::new();
        let mut same = true;
        for step in &example.steps {
            let mut command = step.command.clone();
            for (book, real) in &ids {
                command = command.replace(book, real);
            }
            let actual = run(dir.path(), &command);
            for (book, real) in answer_ids(&step.expected)
                .into_iter()
                .zip(answer_ids(&actual))
            {
                ids.insert(book, real);
            }
            if !matches(&step.expected, &actual) {
                same = false;
                differences.push(format!(
                    "{}, line {}: `{}` prints\n{}\n-- the book shows --\n{}",
                    document.display(),
                    example.first,
                    step.command,
                    actual.join("\n"),
                    step.expected.join("\n")
                ));
            }
            block.push(format!("$ {command}"));
            block.extend(actual);
        }
        if !same {
            let pad = " ".repeat(example.indent);
            let block = block
                .into_iter()
                .map(|l| if l.is_empty() { l } else { format!("{pad}{l}") })
                .collect();
            rewritten.push((example.first, example.end, block));
        }
    }
    for (first, end, block) in rewritten.into_iter().rev() {
        lines.splice(first..end, block);
    }
    (differences, lines.join("\n") + "\n")
}

#[test]
fn every_example_output_is_what_grace_prints_on_the_sample() {
    let bless = std::env::var_os("GRACE_BLESS").is_some();
    let mut differences = Vec::new();
    for document in DOCUMENTS {
        let path: PathBuf = common::repo().join(document);
        assert!(
            !examples(&std::fs::read_to_string(&path).unwrap()).is_empty(),
            "{document} has no example"
        );
        let (found, blessed) = check(&path);
        if bless && !found.is_empty() {
            std::fs::write(&path, blessed).unwrap();
        } else {
            differences.extend(found);
        }
    }
    assert!(
        differences.is_empty(),
        "examples differ from what grace prints (GRACE_BLESS=1 cargo test --test it book_examples:: rewrites them):\n\n{}",
        differences.join("\n\n")
    );
}

#[test]
fn every_document_with_an_example_is_run_or_said_to_be_a_measurement() {
    let mut documents = vec![common::repo().join("README.md")];
    for entry in std::fs::read_dir(common::repo().join("docs/src")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            documents.push(path);
        }
    }
    for path in documents {
        let text = std::fs::read_to_string(&path).unwrap();
        if examples(&text).is_empty() {
            continue;
        }
        let name = path
            .strip_prefix(common::repo())
            .unwrap()
            .to_string_lossy()
            .into_owned();
        assert!(
            DOCUMENTS.contains(&name.as_str()) || MEASURED.iter().any(|(d, _)| *d == name),
            "{name} has example output that no test runs: add it to DOCUMENTS"
        );
    }
}

#[test]
fn what_changes_from_run_to_run_is_set_aside() {
    assert_eq!(
        steady("36 chunks written in 0.8 s, embedding 12 ms; p95 281ms"),
        "36 chunks written in <t>, embedding <t>; p95 <t>"
    );
    assert_eq!(
        steady("kept for 35 days; 300 seconds"),
        "kept for 35 days; 300 seconds"
    );
    assert_eq!(
        steady("grace feedback ans_5ab0b864979c86b817f036aa97f8ee41 up"),
        "grace feedback ans_<id> up"
    );
    assert_eq!(steady("last 2026-11-24T21:55:03.473+00:00"), "last <time>");
    assert_eq!(
        steady("confidence 0.79 -> caveat"),
        "confidence 0.79 -> caveat"
    );
    let lines = |s: &str| s.lines().map(str::to_string).collect::<Vec<_>>();
    assert!(matches(&lines("a\n…\nd"), &lines("a\nb\nc\nd")));
    assert!(matches(&lines("a\n  …\nd"), &lines("a\nd")));
    assert!(!matches(&lines("a\nd"), &lines("a\nb\nd")));
    assert_eq!(
        words(r#"GRACE_X=1 grace ask "How do I? it's" -k 2"#),
        ["GRACE_X=1", "grace", "ask", "How do I? it's", "-k", "2"]
    );
}
