//! The reviewer web page in headless Chromium, end to end: `grace serve`
//! runs, a browser (Debian's `chromium`, driven over WebDriver by
//! `chromedriver`; `scripts/setup` installs both) opens the page, sees an
//! escalation arrive without reloading, answers it, and the asker's
//! `grace answer ID` returns the reviewer's answer (GRACE's draft shown
//! as Markdown, its command as code); its other tabs show
//! the gap report and the reliability diagram of people's labels.

mod common;
mod support {
    pub mod browser;
}

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use common::{grace, grace_cmd, output_text as text};
use support::browser::{Browser, Killed, free_port, wait_until_up};

/// Escalates a question through `grace ask`; returns the escalation id.
fn escalate(dir: &Path, question: &str) -> i64 {
    let out = grace(dir, &["ask", question, "--json"]);
    assert_eq!(out.status.code(), Some(4), "{}", text(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["review_id"]
        .as_i64()
        .unwrap_or_else(|| panic!("not escalated: {v}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reviewer_answers_in_the_browser_and_the_asker_receives_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let kb = common::repo().join("examples/kb");
    assert!(
        grace(d, &["ingest", kb.to_str().unwrap(), "-q"])
            .status
            .success()
    );
    let registered = grace(
        d,
        &["--json", "review", "register", "alice", "--name", "Alice"],
    );
    assert!(registered.status.success(), "{}", text(&registered));
    let registered: Value = serde_json::from_slice(&registered.stdout).unwrap();
    let token = registered["token"].as_str().unwrap().to_string();
    let first = escalate(d, "Can I deploy on Fridays?");

    let http = reqwest::Client::new();
    let port = free_port();
    let _server = Killed::spawn(grace_cmd(
        d,
        &["serve", "--bind", &format!("127.0.0.1:{port}")],
    ));
    let base = format!("http://127.0.0.1:{port}");
    wait_until_up(&http, &format!("{base}/health"), "grace serve").await;

    let browser = Browser::start().await;

    browser
        .cmd("POST", "/url", json!({"url": format!("{base}/review")}))
        .await;
    let field = browser.must_find("#token").await;
    // Typing alice's token and leaving the field (Tab) signs her in and
    // reloads the list: the token alone names the reviewer.
    browser.type_into(&field, &format!("{token}\u{E004}")).await;
    let started = Instant::now();
    loop {
        let who = browser.text_of("#whoami").await;
        if who == "signed in as alice" {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "{who:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    browser
        .must_find(&format!("section.escalation[data-id='{first}']"))
        .await;
    // GRACE's draft is Markdown: its command shows as code, not in
    // backticks.
    let code = format!("section.escalation[data-id='{first}'] .draft code");
    browser.must_find(&code).await;
    assert_eq!(browser.text_of(&code).await, "--change CR-1234");
    let draft = browser
        .text_of(&format!("section.escalation[data-id='{first}'] .draft"))
        .await;
    assert!(!draft.contains('`'), "{draft}");

    // A new escalation, asked through the server's API (which holds the
    // knowledge base now), appears without reloading the page.
    let asked: Value = http
        .post(format!("{base}/v1/ask"))
        .json(&json!({"question": "Is there a deploy freeze in December?"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let second = asked["review_id"]
        .as_i64()
        .unwrap_or_else(|| panic!("not escalated: {asked}"));
    let card = format!("section.escalation[data-id='{second}']");
    browser.must_find(&card).await;
    let question = browser.text_of(&format!("{card} h2")).await;
    assert!(question.contains("freeze in December"), "{question}");

    let answer = "Yes: from December 20 to January 5, production deploys need an exception.";
    let textarea = browser
        .must_find(&format!("{card} textarea.answer-text"))
        .await;
    browser.type_into(&textarea, answer).await;
    let button = browser.must_find(&format!("{card} button.answer")).await;
    browser.click(&button).await;
    let started = Instant::now();
    loop {
        let notice = browser.text_of("#notice").await;
        if notice == format!("Escalation #{second}: answered.") {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "no confirmation on the page: {notice:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Settled escalations leave the page's list.
    let gone = browser.find(&card, Duration::from_millis(0)).await;
    let started = Instant::now();
    let mut gone = gone.is_none();
    while !gone && started.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(300)).await;
        gone = browser
            .find(&card, Duration::from_millis(0))
            .await
            .is_none();
    }
    if !gone {
        let page = browser.cmd("GET", "/source", Value::Null).await;
        panic!("the answered escalation is still listed:\n{page}");
    }

    // The second tab: what the knowledge base is missing (both escalated
    // questions are unanswered by it).
    let tab = browser.must_find("#tab-gaps").await;
    browser.click(&tab).await;
    browser.must_find("#gaps section.gap").await;
    let gaps = browser.text_of("#gap-list").await;
    assert!(
        gaps.contains("Fridays") || gaps.contains("December"),
        "{gaps}"
    );
    // The third: the reliability diagram of the one verdict alice gave.
    let tab = browser.must_find("#tab-fit").await;
    browser.click(&tab).await;
    browser.must_find("#fit-view svg circle.bin").await;
    let learning = browser.text_of("#fit-view .learning").await;
    assert!(
        learning.contains("1 labels") || learning.contains("labels from people"),
        "{learning}"
    );
    assert!(
        browser
            .find("#list", Duration::from_millis(0))
            .await
            .is_some()
    );
    browser.quit().await;

    // The asker receives it.
    let out = grace(d, &["answer", &second.to_string(), "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(got["status"], "answered");
    assert_eq!(got["resolution"]["report"]["answer"]["text"], answer);
    assert_eq!(got["resolution"]["report"]["decided_by"], "reviewer:alice");
    // The first one is untouched.
    let out = grace(d, &["answer", &first.to_string()]);
    assert_eq!(out.status.code(), Some(4), "{}", text(&out));
}
