//! Headless Chromium over W3C WebDriver, for the pages' tests: Debian's
//! `chromium` driven by `chromedriver` (`scripts/setup --browser` installs
//! both). Only the few commands the tests need: open a page, find, type,
//! click, read text, run a script, resize the viewport, take a screenshot.

use super::free_port;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::skip;

pub const CHROMIUM: &str = "/usr/bin/chromium";
pub const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
/// The W3C WebDriver key of an element reference.
const ELEMENT_KEY: &str = "element-6066-11e4-a52e-4f735466cecf";
/// How long `must_find` and the `wait_*` helpers wait.
pub const PATIENCE: Duration = Duration::from_secs(30);

/// The pinned axe-core `scripts/setup --browser` installs.
fn axe_path() -> PathBuf {
    let home = std::env::var_os("HOME").unwrap_or_default();
    PathBuf::from(home).join(".cache/grace/axe/node_modules/axe-core/axe.min.js")
}

/// Whether Chromium, its driver and axe-core are there; when not, a test
/// calling this first returns at once, skipped and said so (`skip.rs`).
pub fn available() -> bool {
    [
        PathBuf::from(CHROMIUM),
        PathBuf::from(CHROMEDRIVER),
        axe_path(),
    ]
    .iter()
    .all(|p| p.exists())
        || skip::skipped(
            "Chromium, chromedriver and axe-core",
            "run scripts/setup --browser (Debian's chromium and chromium-driver, axe-core from npm)",
            "GRACE_REQUIRE_BROWSER",
        )
}

/// A child process, and what it started, killed when the test ends, pass
/// or fail (chromedriver's browser too: it runs in the driver's process
/// group).
pub struct Killed(Child);

impl Killed {
    /// Starts `command` in a process group of its own, output discarded.
    pub fn spawn(mut command: Command) -> Killed {
        use std::os::unix::process::CommandExt as _;
        let child = command
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {command:?}: {e}"));
        Killed(child)
    }
}

impl Drop for Killed {
    fn drop(&mut self) {
        // The whole group: a browser outlives its driver otherwise.
        if let Ok(group) = libc::pid_t::try_from(self.0.id()) {
            // SAFETY: killpg only sends a signal; the group is the child's
            // own (`process_group(0)`), never this test's.
            unsafe { libc::killpg(group, libc::SIGKILL) };
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub async fn wait_until_up(http: &reqwest::Client, url: &str, what: &str) {
    let started = Instant::now();
    while http.get(url).send().await.is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{what} did not start"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A browser session; the driver and the profile live as long as it.
pub struct Browser {
    http: reqwest::Client,
    session: String,
    _driver: Killed,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Starts chromedriver and a headless Chromium session.
    pub async fn start() -> Browser {
        assert!(
            Path::new(CHROMIUM).exists() && Path::new(CHROMEDRIVER).exists(),
            "this test needs Debian's chromium and chromium-driver: run scripts/setup --browser (it installs them)"
        );
        let http = reqwest::Client::new();
        let driver_port = free_port();
        let mut command = Command::new(CHROMEDRIVER);
        command.arg(format!("--port={driver_port}"));
        let driver = Killed::spawn(command);
        let base = format!("http://127.0.0.1:{driver_port}");
        wait_until_up(&http, &format!("{base}/status"), "chromedriver").await;
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
            "--hide-scrollbars",
            "--lang=en-US",
        ]
        .map(String::from)
        .into_iter()
        .chain([format!("--user-data-dir={}", profile.path().display())])
        .collect::<Vec<_>>();
        let created: Value = http
            .post(format!("{base}/session"))
            .json(&json!({"capabilities": {"alwaysMatch": {
                "browserName": "chrome",
                "goog:chromeOptions": {
                    "binary": CHROMIUM,
                    "args": args,
                    "prefs": {"intl.accept_languages": "en-US,en"}
                }
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
        Browser {
            http,
            session: format!("{base}/session/{session}"),
            _driver: driver,
            _profile: profile,
        }
    }

    /// One WebDriver command; its `value`.
    pub async fn cmd(&self, method: &str, path: &str, body: Value) -> Value {
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

    pub async fn open(&self, url: &str) {
        self.cmd("POST", "/url", json!({ "url": url })).await;
    }

    /// The page's HTML (for failure messages).
    pub async fn source(&self) -> String {
        self.cmd("GET", "/source", Value::Null)
            .await
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    pub async fn find(&self, css: &str, timeout: Duration) -> Option<String> {
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

    pub async fn must_find(&self, css: &str) -> String {
        match self.find(css, PATIENCE).await {
            Some(id) => id,
            None => panic!("no element {css} on the page:\n{}", self.source().await),
        }
    }

    /// How many elements match `css` now.
    pub async fn count(&self, css: &str) -> usize {
        let v = self
            .cmd(
                "POST",
                "/elements",
                json!({"using": "css selector", "value": css}),
            )
            .await;
        v.as_array().map_or(0, Vec::len)
    }

    pub async fn type_into(&self, element: &str, keys: &str) {
        self.cmd(
            "POST",
            &format!("/element/{element}/value"),
            json!({ "text": keys }),
        )
        .await;
    }

    /// Clicks `element` as a user would; fails when something covers it.
    pub async fn click(&self, element: &str) {
        let v = self
            .cmd("POST", &format!("/element/{element}/click"), json!({}))
            .await;
        assert!(v.get("error").is_none(), "the click failed: {v}");
    }

    /// The rendered text of the first element matching `css` (found again
    /// if the page re-rendered it in between).
    pub async fn text_of(&self, css: &str) -> String {
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

    /// Waits until the text of `css` satisfies `ok`; returns it.
    pub async fn wait_text(&self, css: &str, what: &str, ok: impl Fn(&str) -> bool) -> String {
        let started = Instant::now();
        loop {
            let text = self.text_of(css).await;
            if ok(&text) {
                return text;
            }
            if started.elapsed() > PATIENCE {
                panic!("{what}: {css} reads {text:?}\n{}", self.source().await);
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Runs `script` (a function body) in the page with `args`; its return.
    pub async fn run(&self, script: &str, args: Value) -> Value {
        self.cmd(
            "POST",
            "/execute/sync",
            json!({ "script": script, "args": args }),
        )
        .await
    }

    /// Runs `script`, which calls its last argument with the result.
    pub async fn run_async(&self, script: &str, args: Value) -> Value {
        self.cmd(
            "POST",
            "/execute/async",
            json!({ "script": script, "args": args }),
        )
        .await
    }

    /// Lays the page out as a screen `width` × `height` CSS pixels wide.
    pub async fn viewport(&self, width: u32, height: u32) {
        let path = format!("{}/goog/cdp/execute", self.session);
        let body = json!({"cmd": "Emulation.setDeviceMetricsOverride", "params": {
            "width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600
        }});
        let r: Value = self
            .http
            .post(path)
            .json(&body)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert!(r["value"].get("error").is_none(), "cannot resize: {r}");
    }

    /// Saves the viewport as a PNG.
    pub async fn screenshot(&self, path: &Path) {
        use base64::Engine as _;
        let v = self.cmd("GET", "/screenshot", Value::Null).await;
        let png = base64::engine::general_purpose::STANDARD
            .decode(v.as_str().expect("a screenshot"))
            .unwrap();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, png).unwrap();
    }

    pub async fn quit(&self) {
        self.cmd("DELETE", "", Value::Null).await;
    }
}

/// axe-core (the pinned copy `scripts/setup --browser` installs), run in
/// `b`'s page on the WCAG 2 A and AA rules and axe's best practices: every
/// violation, of any impact (minor, moderate, serious, critical), each as
/// "id (impact): help, at targets" (the first three elements it found).
pub async fn axe_violations(b: &Browser) -> Vec<String> {
    let axe = axe_path();
    let source = std::fs::read_to_string(&axe).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (run scripts/setup --browser: it installs axe-core)",
            axe.display()
        )
    });
    let loaded = b
        .run(&format!("{source}\n;return typeof axe;"), json!([]))
        .await;
    assert_eq!(loaded, "object", "axe-core did not load: {loaded}");
    let result = b
        .run_async(
            "const done = arguments[arguments.length - 1];
             axe.run(document, {runOnly: ['wcag2a', 'wcag2aa', 'wcag21aa', 'best-practice']})
               .then(r => done(r.violations.map(v => ({id: v.id, impact: v.impact, nodes: v.nodes.length,
                  help: v.help, targets: v.nodes.slice(0, 3).map(n => n.target.join(' '))}))))
               .catch(e => done({error: String(e)}));",
            json!([]),
        )
        .await;
    let violations = result
        .as_array()
        .unwrap_or_else(|| panic!("axe-core failed: {result}"));
    violations
        .iter()
        .map(|v| {
            let said = format!(
                "{} ({}): {}, at {} ({} elements)",
                v["id"].as_str().unwrap_or("?"),
                v["impact"].as_str().unwrap_or("?"),
                v["help"].as_str().unwrap_or("?"),
                v["targets"],
                v["nodes"]
            );
            eprintln!("axe: {said}");
            said
        })
        .collect()
}
