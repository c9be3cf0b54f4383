//! The reviewer web page in headless Chromium, end to end: `grace serve`
//! runs, a browser (Debian's `chromium`, driven over WebDriver by
//! `chromedriver`; `scripts/setup` installs both) opens the page, sees an
//! escalation arrive without reloading, answers it, and the asker's
//! `grace answer ID` returns the reviewer's answer.

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use common::{grace, grace_cmd, output_text as text};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
/// The W3C WebDriver key of an element reference.
const ELEMENT_KEY: &str = "element-6066-11e4-a52e-4f735466cecf";

/// Escalates a question through `grace ask`; returns the escalation id.
fn escalate(dir: &Path, question: &str) -> i64 {
    let out = grace(dir, &["ask", question, "--json"]);
    assert_eq!(out.status.code(), Some(4), "{}", text(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["review_id"]
        .as_i64()
        .unwrap_or_else(|| panic!("not escalated: {v}"))
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A child process killed when the test ends, pass or fail.
struct Killed(Child);
impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn wait_until_up(http: &reqwest::Client, url: &str, what: &str) {
    let started = Instant::now();
    while http.get(url).send().await.is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{what} did not start"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The few W3C WebDriver commands the test needs.
struct Browser {
    http: reqwest::Client,
    session: String,
}

impl Browser {
    async fn cmd(&self, method: &str, path: &str, body: Value) -> Value {
        let url = format!("{}{path}", self.session);
        let req = self.http.request(method.parse().unwrap(), url);
        let req = if method == "GET" || method == "DELETE" {
            req
        } else {
            req.json(&body)
        };
        let v: Value = req.send().await.unwrap().json().await.unwrap();
        v["value"].clone()
    }

    async fn find(&self, css: &str, timeout: Duration) -> Option<String> {
        let started = Instant::now();
        loop {
            let v = self
                .cmd(
                    "POST",
                    "/element",
                    json!({"using": "css selector", "value": css}),
                )
                .await;
            // A found element is {"element-6066-…": id}; an error is
            // {"error": …, "message": …}.
            if let Some(id) = v[ELEMENT_KEY].as_str() {
                return Some(id.to_string());
            }
            if started.elapsed() > timeout {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    async fn must_find(&self, css: &str) -> String {
        match self.find(css, Duration::from_secs(20)).await {
            Some(id) => id,
            None => {
                let page = self.cmd("GET", "/source", Value::Null).await;
                panic!("no element {css} on the page:\n{page}")
            }
        }
    }

    async fn type_into(&self, element: &str, keys: &str) {
        self.cmd(
            "POST",
            &format!("/element/{element}/value"),
            json!({"text": keys}),
        )
        .await;
    }

    async fn click(&self, element: &str) {
        self.cmd("POST", &format!("/element/{element}/click"), json!({}))
            .await;
    }

    /// The rendered text of the first element matching `css` (found again
    /// if the page re-rendered it in between).
    async fn text_of(&self, css: &str) -> String {
        for _ in 0..20 {
            let e = self.must_find(css).await;
            let v = self
                .cmd("GET", &format!("/element/{e}/text"), Value::Null)
                .await;
            match v.as_str() {
                Some(t) => return t.to_string(),
                None => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
        panic!("cannot read the text of {css}")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reviewer_answers_in_the_browser_and_the_asker_receives_it() {
    assert!(
        Path::new(CHROMIUM).exists() && Path::new(CHROMEDRIVER).exists(),
        "this test needs Debian's chromium and chromium-driver: run scripts/setup (it installs them)"
    );
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
    let _server = Killed(
        grace_cmd(d, &["serve", "--bind", &format!("127.0.0.1:{port}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let base = format!("http://127.0.0.1:{port}");
    wait_until_up(&http, &format!("{base}/health"), "grace serve").await;

    let driver_port = free_port();
    let _driver = Killed(
        Command::new(CHROMEDRIVER)
            .arg(format!("--port={driver_port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let driver = format!("http://127.0.0.1:{driver_port}");
    wait_until_up(&http, &format!("{driver}/status"), "chromedriver").await;
    let profile = tempfile::tempdir().unwrap();
    let args = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
    ]
    .map(String::from)
    .into_iter()
    .chain([format!("--user-data-dir={}", profile.path().display())])
    .collect::<Vec<_>>();
    let created: Value = http
        .post(format!("{driver}/session"))
        .json(&json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": CHROMIUM, "args": args}
        }}}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let session = created["value"]["sessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("no browser session: {created}"))
        .to_string();
    let browser = Browser {
        http: http.clone(),
        session: format!("{driver}/session/{session}"),
    };

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
    browser.cmd("DELETE", "", Value::Null).await;

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
