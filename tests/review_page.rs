//! The reviewer web page in headless Chromium, end to end: `grace serve`
//! runs, a browser (Debian's `chromium`, driven over WebDriver by
//! `chromedriver`; `scripts/setup` installs both) opens the page and:
//!
//! - signed out, on a server without keys, reads the escalations but is
//!   offered no answer to send; a wrong token is said and keeps it signed
//!   out;
//! - signs in with the button, sees GRACE's draft as Markdown (its command
//!   as code) and the passage the draft cites with the sentence it rests on
//!   marked;
//! - sees an escalation arrive without reloading, and answers it with the
//!   keyboard only (j, c, a, Ctrl+Enter); the asker's `grace answer ID`
//!   returns the reviewer's answer; focus moves on to the next card, where
//!   a digit picks an option;
//! - shows the gap report and the reliability diagram of people's labels
//!   in its other tabs;
//! - has no axe-core violation signed out, signed in with escalations
//!   listed, and on the gap report.
//!
//! It saves screenshots (signed out, an escalation; at 1280 and 360 px,
//! neither scrolling sideways) under `$GRACE_SCREENSHOTS` (default: the
//! build's temporary folder).

use crate::support;
use crate::support::common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use common::{grace, grace_cmd, output_text as text};
use support::browser::{Browser, Killed, wait_until_up};
use support::free_port;

/// WebDriver's Control, Enter and "release the modifiers" keys.
const CONTROL: &str = "\u{E009}";
const ENTER: &str = "\u{E007}";
const RELEASE: &str = "\u{E000}";

/// Escalates a question through `grace ask`; returns the escalation id.
fn escalate(dir: &Path, question: &str) -> i64 {
    let out = grace(dir, &["ask", question, "--json"]);
    assert_eq!(out.status.code(), Some(4), "{}", text(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["review_id"]
        .as_i64()
        .unwrap_or_else(|| panic!("not escalated: {v}"))
}

/// Where the screenshots go: `$GRACE_SCREENSHOTS`, else the build's
/// temporary folder.
fn screenshots() -> PathBuf {
    std::env::var_os("GRACE_SCREENSHOTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_TARGET_TMPDIR")).join("review-page-screenshots"))
}

/// Screenshots of the page's top as it is now, at 1280 and 360 px wide
/// (`review-{name}-{width}.png`); at neither does the page scroll sideways.
async fn shoot(b: &Browser, name: &str) {
    for (width, height) in [(1280, 860), (360, 780)] {
        b.viewport(width, height).await;
        b.run("window.scrollTo(0, 0);", json!([])).await;
        tokio::time::sleep(Duration::from_millis(150)).await;
        let wide = b
            .run("return document.documentElement.scrollWidth;", json!([]))
            .await;
        assert!(
            wide.as_u64().unwrap() <= u64::from(width),
            "{name} at {width} px scrolls sideways to {wide}"
        );
        b.screenshot(&screenshots().join(format!("review-{name}-{width}.png")))
            .await;
    }
    b.viewport(1280, 860).await;
}

/// axe-core finds nothing on the page as it is now (`state` names it).
async fn accessible(b: &Browser, state: &str) {
    let violations = support::browser::axe_violations(b).await;
    assert!(violations.is_empty(), "{state}: {violations:#?}");
}

/// Waits until `script` (a function body) returns true in the page.
async fn wait_until(b: &Browser, what: &str, script: &str) {
    let started = Instant::now();
    while b.run(script, json!([])).await != json!(true) {
        if started.elapsed() > Duration::from_secs(20) {
            panic!("{what}: not so after 20 s\n{}", b.source().await);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Presses and releases `key` wherever the focus is, as a person would
/// (WebDriver actions: nothing is focused first).
async fn press(b: &Browser, key: &str) {
    let keys = [
        json!({"type": "keyDown", "value": key}),
        json!({"type": "keyUp", "value": key}),
    ];
    let v = b
        .cmd(
            "POST",
            "/actions",
            json!({"actions": [{"type": "key", "id": "keyboard", "actions": keys}]}),
        )
        .await;
    assert!(v.get("error").is_none(), "pressing {key:?} failed: {v}");
}

/// The id of the escalation card that holds the focus (or holds what
/// does), if any.
async fn focused_card(b: &Browser) -> Option<i64> {
    b.run(
        "const c = document.activeElement && document.activeElement.closest('section.escalation');
         return c ? Number(c.dataset.id) : null;",
        json!([]),
    )
    .await
    .as_i64()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reviewer_answers_in_the_browser_and_the_asker_receives_it() {
    if !support::browser::available() {
        return;
    }
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
    browser.viewport(1280, 860).await;
    browser.open(&format!("{base}/review")).await;
    let first_card = format!("section.escalation[data-id='{first}']");

    // --- Signed out, on a server without keys: every escalation to read,
    // nothing to answer with.
    wait_until(
        &browser,
        "signed out",
        "return document.body.dataset.role === 'signed-out';",
    )
    .await;
    browser
        .wait_text("#whoami", "the signed-out state", |t| {
            t.starts_with("Signed out. This server needs no key")
        })
        .await;
    browser.must_find(&first_card).await;
    for control in [
        "button.answer",
        "button.claim",
        "textarea.answer-text",
        "input.option",
    ] {
        assert_eq!(
            browser.count(control).await,
            0,
            "{control} offered signed out"
        );
    }
    accessible(&browser, "signed out").await;
    shoot(&browser, "signed-out").await;

    // A wrong token (sent with Enter) is said, and the page stays signed
    // out.
    let field = browser.must_find("#token").await;
    browser
        .type_into(&field, &format!("not-a-token{ENTER}"))
        .await;
    browser
        .wait_text("#notice", "a wrong token", |t| t.contains("not accepted"))
        .await;
    assert_eq!(
        browser
            .run("return [document.body.dataset.role, document.getElementById('token').getAttribute('aria-invalid')];", json!([]))
            .await,
        json!(["signed-out", "true"])
    );
    assert_eq!(browser.count("button.answer").await, 0);

    // Alice's token and the button sign her in: the token alone names the
    // reviewer.
    browser
        .run("document.getElementById('token').value = '';", json!([]))
        .await;
    browser.type_into(&field, &token).await;
    let sign_in = browser.must_find("#sign-in-button").await;
    browser.click(&sign_in).await;
    browser
        .wait_text("#whoami", "signed in", |t| t == "signed in as alice")
        .await;
    wait_until(
        &browser,
        "the reviewer's controls",
        "return document.body.dataset.role === 'reviewer'
           && document.querySelectorAll('section.escalation button.answer').length > 0;",
    )
    .await;
    // GRACE's draft is Markdown: its command shows as code, not in
    // backticks.
    let code = format!("{first_card} .draft code");
    browser.must_find(&code).await;
    assert_eq!(browser.text_of(&code).await, "--change CR-1234");
    let draft = browser.text_of(&format!("{first_card} .draft")).await;
    assert!(!draft.contains('`'), "{draft}");
    // The passage the draft cites, in full, the sentence it rests on
    // marked.
    let mark = browser
        .text_of(&format!("{first_card} .cited-passages .passage-text mark"))
        .await;
    assert!(!mark.trim().is_empty(), "an empty mark");

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
    accessible(&browser, "signed in, two escalations listed").await;
    shoot(&browser, "escalation").await;

    // --- The keyboard only: j to the new card, c claims it (focus stays
    // on the card), a to its answer, Ctrl+Enter sends.
    let mut on = None;
    for _ in 0..4 {
        press(&browser, "j").await;
        on = focused_card(&browser).await;
        if on == Some(second) {
            break;
        }
    }
    assert_eq!(on, Some(second), "j never reached the new card");
    press(&browser, "c").await;
    browser
        .wait_text("#notice", "claimed with c", |t| {
            t == format!("Escalation #{second}: claimed.")
        })
        .await;
    wait_until(
        &browser,
        "the claimed card, focused",
        &format!(
            "const c = document.querySelector(\"{card}\");
             return !!c && c.querySelector('.status').textContent === 'claimed by you'
               && document.activeElement === c;"
        ),
    )
    .await;
    press(&browser, "a").await;
    let typing = browser
        .run(
            "return document.activeElement.matches(arguments[0]);",
            json!([format!("{card} textarea.answer-text")]),
        )
        .await;
    assert_eq!(typing, true, "a goes to the answer");
    let answer = "Yes: from December 20 to January 5, production deploys need an exception.";
    let textarea = browser
        .must_find(&format!("{card} textarea.answer-text"))
        .await;
    browser
        .type_into(&textarea, &format!("{answer}{CONTROL}{ENTER}{RELEASE}"))
        .await;
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
    // Focus moves on to the next card, where 1 picks the first option
    // (and sends nothing).
    wait_until(
        &browser,
        "focus on the next card",
        &format!("return document.activeElement === document.querySelector(\"{first_card}\");"),
    )
    .await;
    press(&browser, "1").await;
    let picked = browser
        .run(
            "return document.querySelector(arguments[0]).checked;",
            json!([format!("{first_card} input.option[value='1']")]),
        )
        .await;
    assert_eq!(picked, true, "1 picks the first option");

    // A follow-up escalated in a conversation: its card shows the
    // conversation and the question as GRACE read it.
    let session: Value = http
        .post(format!("{base}/v1/sessions"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let session = session["id"].as_str().unwrap().to_string();
    let mut follow_up = None;
    for question in ["How do I roll back a deployment?", "and on staging?"] {
        let asked: Value = http
            .post(format!("{base}/v1/ask"))
            .json(&json!({"question": question, "session_id": session}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        follow_up = asked["review_id"].as_i64();
    }
    let follow_up = follow_up.expect("the follow-up was escalated");
    let card = format!("section.escalation[data-id='{follow_up}']");
    browser.must_find(&format!("{card} .conversation")).await;
    let conversation = browser.text_of(&format!("{card} .conversation")).await;
    assert!(
        conversation.contains("How do I roll back a deployment?"),
        "{conversation}"
    );
    let read_as = browser.text_of(&format!("{card} .rewrite")).await;
    assert!(read_as.contains("roll back"), "{read_as}");
    accessible(&browser, "a follow-up with its conversation").await;

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
    accessible(&browser, "the gap report").await;
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

/// The reviewer page for a reviewer who may not read every document: a
/// principal (`grace auth add-key cy`) holding the review role reviews
/// with its own key, and of an escalation drafted from the finance folder
/// (`read: [group:finance]`) sees the question and a note of what is
/// withheld, never the passage, its source or its heading. Signed out, on
/// a server with keys, it sees nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reviewer_who_may_not_read_a_document_never_sees_it_on_the_page() {
    if !support::browser::available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Every answer escalates (a confidence between confirm and notify),
    // the server needs keys, and cy reviews.
    std::fs::write(
        d.join("grace_config.yml"),
        "confidence:\n  thresholds: {silent: 0.9995, notify: 0.999, confirm: 0.001}\n\
         server:\n  api_key: service-key-0123456789\n\
         kbs:\n  default:\n    roles: {review: [\"user:cy\"]}\n",
    )
    .unwrap();
    let kb = common::repo().join("examples/kb");
    let ingested = grace(d, &["ingest", kb.to_str().unwrap(), "-q"]);
    assert!(ingested.status.success(), "{}", text(&ingested));
    let added = grace(d, &["--json", "auth", "add-key", "cy"]);
    assert!(added.status.success(), "{}", text(&added));
    let added: Value = serde_json::from_slice(&added.stdout).unwrap();
    let key = added["key"].as_str().unwrap().to_string();
    let id = escalate(d, "Who gets the alert when a budget is 80% spent?");
    // The operator's draft cites the finance document.
    let shown = grace(d, &["--json", "review", "show", &id.to_string()]);
    assert!(text(&shown).contains("finance partner"), "{}", text(&shown));

    let http = reqwest::Client::new();
    let port = free_port();
    let _server = Killed::spawn(grace_cmd(
        d,
        &["serve", "--bind", &format!("127.0.0.1:{port}")],
    ));
    let base = format!("http://127.0.0.1:{port}");
    wait_until_up(&http, &format!("{base}/health"), "grace serve").await;
    let browser = Browser::start().await;
    browser.viewport(1280, 860).await;
    browser.open(&format!("{base}/review")).await;
    let field = browser.must_find("#token").await;
    browser.type_into(&field, &key).await;
    let sign_in = browser.must_find("#sign-in-button").await;
    browser.click(&sign_in).await;
    browser
        .wait_text("#whoami", "signed in", |t| t == "signed in as cy")
        .await;
    let card = format!("section.escalation[data-id='{id}']");
    browser.must_find(&card).await;
    browser
        .wait_text(&format!("{card} .withheld"), "the withheld note", |t| {
            t.contains("withheld")
        })
        .await;
    let page = browser
        .run("return document.documentElement.outerHTML;", json!([]))
        .await
        .as_str()
        .unwrap()
        .to_string();
    assert!(page.contains("80% spent"), "the question is shown");
    for hidden in [
        "finance partner",
        "budgets.md",
        "Orbit cloud budgets",
        "Budget alerts",
    ] {
        assert!(!page.contains(hidden), "{hidden} on cy's page");
    }
    accessible(&browser, "a reviewer with passages withheld").await;
    browser.quit().await;
}
