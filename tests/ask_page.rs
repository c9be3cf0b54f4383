//! The asker's page (`/`) in headless Chromium, end to end on the sample
//! knowledge base with the real store and model (`tests/support/browser.rs`
//! drives Debian's chromium over WebDriver):
//!
//! - the empty page offers up to five example questions from the knowledge
//!   base, and one asked with a click is answered; a server without a key
//!   shows no key field;
//! - a question asked with the keyboard streams its steps, then an answer
//!   whose citation opens the passage it cites, with the confidence and its
//!   "why"; "Copy" copies it and says "Copied";
//! - a follow-up in the conversation shows the question GRACE understood,
//!   and a reload shows the same conversation;
//! - an off-topic question is declined, and "Ask a person" queues it;
//! - an escalation waits on the page while a reviewer claims and answers it
//!   through the API, then the reviewer's answer appears; the link with the
//!   handle shows it anywhere;
//! - an answer rated No with a reason, stored as the asker's one rating;
//!   "wrong" puts it to a person, and the card follows that escalation;
//! - a question or a passage holding HTML is shown as text, never run;
//! - a question too long or without words: the server's message on the
//!   page, the question kept in the box;
//! - commands and code shown as code, a long line scrolling in its block;
//! - the page's texts in Japanese;
//! - axe-core, run in the page, finds no violation of any impact, on the
//!   empty page and on one holding every kind of reply, at 1280 and at
//!   360 px wide;
//! - a clarifying question answered with a button (a scripted model);
//! - the key field, shown once the server asks for a key; a wrong service
//!   key, said on the page.
//!
//! The tests save screenshots (the empty page, an answer, a caveat, a
//! waiting escalation and its answer, at 1280 and 360 px) under
//! `$GRACE_SCREENSHOTS` (default: the build's temporary folder); the book
//! shows those of `docs/src/screenshots`.
//!
//! A confident wrong answer is the worst outcome: the page never shows an
//! escalated run's draft as an answer, only a reviewer's.

use crate::support;
use crate::support::common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use grace::Grace;
use grace::config::Config;
use serde_json::{Value, json};
use support::browser::{Browser, axe_violations};
use support::mock_llm::{Mode, Provider, ScriptedModel, clarifying_script};

/// WebDriver's Enter, Shift and "release the modifiers" keys.
const ENTER: &str = "\u{E007}";
const SHIFT: &str = "\u{E008}";
const RELEASE: &str = "\u{E000}";

/// A passage that holds markup: the page must show it as text.
const HOSTILE: &str = "Widget colours\n\nThe widget colour is teal <img src=x id=pwned-passage> \
     <script>document.title='pwned'</script> and never changes.\n";

fn screenshots() -> PathBuf {
    std::env::var_os("GRACE_SCREENSHOTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_TARGET_TMPDIR")).join("ask-page-screenshots"))
}

/// The sample knowledge base and one hostile file, copied to `dir/kb`.
fn knowledge_base(dir: &Path) -> PathBuf {
    let kb = dir.join("kb");
    common::copy_tree(&common::repo().join("examples/kb"), &kb);
    std::fs::write(kb.join("widgets.txt"), HOSTILE).unwrap();
    kb
}

/// A served GRACE over the sample knowledge base; sources shown relative to
/// `dir` (`kb/handbook.pdf`).
fn grace_for(dir: &Path, tweak: impl FnOnce(&mut Config), model: Option<&ScriptedModel>) -> Grace {
    let kb = knowledge_base(dir);
    let mut config = common::config(&dir.join("data"));
    config.server.display_root = dir.to_path_buf();
    tweak(&mut config);
    let mut builder = Grace::builder(config).embedder(common::embedder());
    if let Some(model) = model {
        builder = builder.generator(model.client());
    }
    let grace = builder.build().unwrap();
    grace
        .ingest_blocking(&[kb], &Default::default(), &mut |_| {})
        .unwrap();
    grace
}

/// Types `question` into the page's box and sends it with Enter.
async fn ask(b: &Browser, question: &str) {
    let field = b.must_find("#question").await;
    b.type_into(&field, &format!("{question}{ENTER}")).await;
}

/// The reply card of turn `n` (from 1), once it is there.
async fn reply_of(b: &Browser, n: usize) -> String {
    let css = format!("#conversation > li:nth-child({n}) section.reply[data-decision]");
    b.must_find(&css).await;
    b.run(
        "return document.querySelector(arguments[0]).dataset.decision;",
        json!([css]),
    )
    .await
    .as_str()
    .unwrap()
    .to_string()
}

async fn new_conversation(b: &Browser) {
    let button = b.must_find("#new-conversation").await;
    b.click(&button).await;
    b.wait_text("#notice", "new conversation", |t| {
        t.contains("new conversation")
    })
    .await;
    assert_eq!(b.count("#conversation > li").await, 0);
}

/// What the page keeps in the tab's session storage (its session, its turns).
async fn stored(b: &Browser) -> Value {
    b.run(
        "return JSON.parse(sessionStorage.getItem('grace-ask'));",
        json!([]),
    )
    .await
}

async fn get_json(http: &reqwest::Client, url: String) -> Value {
    http.get(url).send().await.unwrap().json().await.unwrap()
}

/// Both screenshots of the page as it is now.
async fn shoot(b: &Browser, name: &str) {
    for (width, height) in [(1280, 860), (360, 780)] {
        b.viewport(width, height).await;
        b.run("window.scrollTo(0, document.body.scrollHeight);", json!([]))
            .await;
        tokio::time::sleep(Duration::from_millis(150)).await;
        b.screenshot(&screenshots().join(format!("{name}-{width}.png")))
            .await;
    }
    b.viewport(1280, 860).await;
}

/// No axe-core violation of any impact, and nothing wider than the
/// screen, at 1280 and at 360 px wide.
async fn check_accessible(b: &Browser, what: &str) {
    for width in [1280, 360] {
        b.viewport(width, 800).await;
        let violations = axe_violations(b).await;
        assert!(
            violations.is_empty(),
            "{what} at {width} px: {violations:?}"
        );
        // Usable at 360 px: nothing wider than the screen.
        let wide = b
            .run("return document.documentElement.scrollWidth;", json!([]))
            .await;
        assert!(
            wide.as_u64().unwrap() <= u64::from(width),
            "{what} at {width} px: scrolls sideways to {wide}"
        );
    }
    b.viewport(1280, 860).await;
}

/// Whether the first element matching `css` is laid out (there, and not
/// hidden).
async fn is_shown(b: &Browser, css: &str) -> bool {
    b.run(
        "const e = document.querySelector(arguments[0]); return !!e && e.getClientRects().length > 0;",
        json!([css]),
    )
    .await
        == true
}

/// What the server says when it refuses `question` (a 400's message).
async fn refusal(http: &reqwest::Client, base: &str, question: &str) -> String {
    let refused = http
        .post(format!("{base}/v1/ask"))
        .json(&json!({ "question": question }))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 400, "{question:?} was not refused");
    let body: Value = refused.json().await.unwrap();
    body["error"]["message"].as_str().unwrap().to_string()
}

#[test]
fn an_asker_gets_answers_caveats_a_decline_and_a_person_in_the_browser() {
    if !support::browser::available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let grace = grace_for(dir.path(), |_| {}, None);
    let alice = common::reviewer(grace.escalations(), "alice", "Alice");
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let server = common::serve(grace.clone()).await;
        let base = server.base.clone();
        let http = reqwest::Client::new();
        let b = Browser::start().await;
        b.viewport(1280, 860).await;
        b.open(&format!("{base}/")).await;
        b.must_find("#question").await;

        // --- The empty page: example questions from the knowledge base's
        // sections, and no key field (this server has no key).
        b.must_find("#examples button.example").await;
        let examples = b.count("#examples button.example").await;
        assert!((1..=5).contains(&examples), "{examples} example questions");
        assert!(is_shown(&b, "#examples button.example").await, "the examples are hidden");
        assert!(!is_shown(&b, "#key").await, "a key field on a server without a key");
        shoot(&b, "empty").await;
        check_accessible(&b, "the empty page").await;

        // Records every rendering of a turn: the steps must show before
        // the answer does.
        b.run(
            "window.renderings = [];
             new MutationObserver(records => { for (const r of records) for (const n of r.addedNodes) {
               if (n.matches && n.matches('li.turn')) window.renderings.push([
                 n.querySelectorAll('.steps li').length, n.querySelectorAll('section.reply').length]);
             }}).observe(document.getElementById('conversation'), {childList: true, subtree: true});",
            json!([]),
        )
        .await;

        // --- Keyboard: Shift+Enter adds a line, Enter sends.
        let field = b.must_find("#question").await;
        b.type_into(&field, &format!("How long are nightly{SHIFT}{ENTER}{RELEASE}"))
            .await;
        let typed = b
            .run("return document.getElementById('question').value;", json!([]))
            .await;
        assert_eq!(typed, "How long are nightly\n", "Shift+Enter adds a line");
        assert_eq!(b.count("#conversation > li").await, 0, "nothing sent yet");
        b.run("document.getElementById('question').value = '';", json!([]))
            .await;
        ask(&b, "How long are nightly backups kept?").await;
        assert_eq!(reply_of(&b, 1).await, "answer");
        let renderings = b.run("return window.renderings;", json!([])).await;
        let streamed = renderings
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r[0].as_u64() > Some(0) && r[1] == 0);
        assert!(streamed, "no step shown before the answer: {renderings}");
        let steps = b.text_of("#conversation > li:nth-child(1) .steps").await;
        assert!(
            steps.contains("Searched the knowledge base") && steps.contains("Answer written"),
            "{steps}"
        );
        let card = "#conversation > li:nth-child(1) section.reply";
        let text = b.text_of(&format!("{card} .text")).await;
        assert!(text.contains("35 days"), "{text}");
        assert!(!is_shown(&b, "#examples-box").await, "examples beside a conversation");
        // "Copy" copies the answer: "Copied" for a moment, then "Copy" again.
        let copy_css = format!("{card} button.copy");
        let copy = b.must_find(&copy_css).await;
        let name = b
            .run(
                "return document.querySelector(arguments[0]).getAttribute('aria-label');",
                json!([copy_css]),
            )
            .await;
        assert_eq!(name, "Copy the answer");
        assert_eq!(b.text_of(&copy_css).await, "Copy");
        b.click(&copy).await;
        b.wait_text(&copy_css, "the copy done", |t| t == "Copied").await;
        let notice = b.text_of("#notice").await;
        assert_eq!(notice, "The answer is on the clipboard.");
        b.wait_text(&copy_css, "the button as it was", |t| t == "Copy").await;
        let badge = b.text_of(&format!("{card} .badge")).await;
        assert_eq!(badge, "Confident answer");
        let percent = b.text_of(&format!("{card} .percent")).await;
        assert!(percent.starts_with("Confidence ") && percent.ends_with('%'), "{percent}");
        // The why: plain-language factors that raised and lowered it.
        let summary = b.must_find(&format!("{card} details.why summary")).await;
        b.click(&summary).await;
        let why = b.text_of(&format!("{card} details.why")).await;
        assert!(why.contains("What raised it"), "{why}");
        assert!(b.count(&format!("{card} details.why li.raised")).await >= 1);
        assert!(!why.contains("max_score"), "factor names are put in words: {why}");
        // Where every answer starts, then each factor's effect: what is
        // shown adds up to the total shown (to the rounding of each).
        let number = |s: &str| s.replace('−', "-").parse::<f64>().unwrap();
        let after = |text: &str, marker: &str| {
            let rest = &text[text.find(marker).unwrap_or_else(|| panic!("{marker}: {text}")) + marker.len()..];
            number(rest.split([';', ':', ')', ' ']).next().unwrap())
        };
        let baseline = after(&why, "Every answer starts at ");
        let effects: Vec<f64> = why
            .split("(effect ")
            .skip(1)
            .map(|s| number(s.split(')').next().unwrap()))
            .collect();
        let total = after(&why, "Together ");
        assert!(baseline < 0.0, "{why}");
        let shown = baseline + effects.iter().sum::<f64>();
        assert!(
            (shown - total).abs() <= 0.005 * (effects.len() + 2) as f64,
            "{baseline} + {effects:?} = {shown}, shown as {total}: {why}"
        );
        // A citation opens the passage it cites, its source shown relative.
        let cite = b.must_find(&format!("{card} ol.citations a.cite")).await;
        let label = b
            .cmd("GET", &format!("/element/{cite}/text"), Value::Null)
            .await;
        let label = label.as_str().unwrap();
        assert!(label.starts_with("kb/handbook.pdf · p. 2"), "{label}");
        b.click(&cite).await;
        let passage = b
            .wait_text("#passage-text", "the cited passage", |t| t.contains("35 days"))
            .await;
        // The whole passage, not only the answer's sentence.
        assert!(passage.contains("first day of each month"), "{passage}");
        assert_eq!(b.text_of("#passage-title").await, "kb/handbook.pdf");
        let open = b
            .run("return document.getElementById('passage').open;", json!([]))
            .await;
        assert_eq!(open, true);
        let close = b.must_find("#passage-close").await;
        b.click(&close).await;
        let focused = b
            .run("return document.activeElement.classList.contains('cite');", json!([]))
            .await;
        assert_eq!(focused, true, "focus goes back to the citation");
        shoot(&b, "answer").await;

        // --- A caveat, then a follow-up in the same conversation.
        new_conversation(&b).await;
        ask(&b, "How do I roll back a production deployment?").await;
        assert_eq!(reply_of(&b, 1).await, "caveat");
        let note = b
            .text_of("#conversation > li:nth-child(1) .caveat-note")
            .await;
        assert!(note.contains("Check the passages"), "{note}");
        shoot(&b, "caveat").await;
        // The asker rates it: No, then why; stored as their one rating.
        let card = "#conversation > li:nth-child(1) section.reply";
        let no = b.must_find(&format!("{card} .rating button.rate-down")).await;
        b.click(&no).await;
        // Stored, then the card is drawn again with the reasons.
        b.must_find(&format!("{card} .rating button.rate-down[aria-pressed='true']"))
            .await;
        let wrong = b.must_find(&format!("{card} .rating button.reason-wrong")).await;
        b.click(&wrong).await;
        b.must_find(&format!("{card} .rating button.reason-wrong[aria-pressed='true']"))
            .await;
        let said = b.text_of(&format!("{card} .rating .rated")).await;
        assert!(said.contains("did not help"), "{said}");
        // "Wrong" puts the answer to a person: the card follows that escalation.
        b.must_find(&format!("{card} .escalation .status-line")).await;
        let labelled = grace.feedback().labelled().unwrap();
        assert_eq!(labelled.len(), 1, "one rating, the reason replacing the bare No");
        let rating = labelled[0].rating.as_ref().unwrap();
        assert_eq!(rating.vote, grace::feedback::Vote::Down);
        assert_eq!(rating.reason, Some(grace::feedback::Reason::Wrong));
        assert_eq!(labelled[0].run.question, "How do I roll back a production deployment?");
        ask(&b, "and on staging?").await;
        reply_of(&b, 2).await;
        let understood = b
            .text_of("#conversation > li:nth-child(2) .understood")
            .await;
        assert!(
            understood.starts_with("Understood as: and on staging?") && understood.contains("roll back"),
            "{understood}"
        );
        let session = stored(&b).await["sessionId"].clone();
        let session = session.as_str().unwrap();
        let turns = get_json(&http, format!("{base}/v1/sessions/{session}")).await;
        assert_eq!(turns["turns"].as_array().unwrap().len(), 2, "{turns}");
        assert_eq!(turns["turns"][1]["question"], "and on staging?");
        // A reload shows the same conversation.
        b.cmd("POST", "/refresh", json!({})).await;
        reply_of(&b, 2).await;
        assert_eq!(b.count("#conversation > li").await, 2);
        assert!(b
            .text_of("#conversation > li:nth-child(2) .understood")
            .await
            .contains("roll back"));

        // --- Off the knowledge base: declined, then put to a person.
        new_conversation(&b).await;
        ask(&b, "What is the boiling point of mercury?").await;
        assert_eq!(reply_of(&b, 1).await, "decline");
        let said = b.text_of("#conversation > li:nth-child(1) section.reply").await;
        assert!(said.contains("does not cover"), "{said}");
        let button = b.must_find("#conversation button.ask-person").await;
        b.click(&button).await;
        b.must_find("#conversation section.reply[data-decision='escalate'] .status-line")
            .await;
        let queued = get_json(&http, format!("{base}/v1/review/escalations")).await;
        assert!(
            queued.as_array().unwrap().iter().any(|e| e["question"]
                == "What is the boiling point of mercury?"
                && e["reason"].as_str().unwrap().contains("asked for a person")),
            "{queued}"
        );

        // --- An escalation: the page waits while a reviewer answers.
        new_conversation(&b).await;
        ask(&b, "Can I deploy on Fridays?").await;
        assert_eq!(reply_of(&b, 1).await, "escalate");
        let card = "#conversation > li:nth-child(1) section.reply[data-decision='escalate']";
        let status = b.text_of(&format!("{card} .status-line")).await;
        assert!(status.contains("Waiting for a reviewer"), "{status}");
        // No draft is shown as an answer: only a reviewer's will be.
        assert_eq!(b.count(&format!("{card} .text ~ ol.citations")).await, 0);
        // No dead end: what GRACE found, marked as possibly relevant, and
        // how long people take here (nobody has answered yet).
        let waiting = b.text_of(&format!("{card} .while-waiting")).await;
        assert!(waiting.contains("Possibly relevant while a person checks"), "{waiting}");
        assert!(b.count(&format!("{card} .possibly-relevant li")).await >= 1);
        assert!(waiting.contains("No question has been answered"), "{waiting}");
        let escalation = stored(&b).await["entries"][0]["escalation"].clone();
        let id = escalation["id"].as_i64().unwrap();
        let handle = escalation["handle"].as_str().unwrap().to_string();
        shoot(&b, "escalation-waiting").await;
        // A reload keeps waiting.
        b.cmd("POST", "/refresh", json!({})).await;
        let status = b.text_of(&format!("{card} .status-line")).await;
        assert!(status.contains("Waiting for a reviewer"), "{status}");
        let reviewer = |path: String| http.post(format!("{base}{path}")).bearer_auth(&alice);
        let claimed = reviewer(format!("/v1/review/escalations/{id}/claim"))
            .send()
            .await
            .unwrap();
        assert_eq!(claimed.status(), 200);
        b.wait_text(&format!("{card} .status-line"), "claimed", |t| {
            t.contains("A reviewer is working on it")
        })
        .await;
        let answer = "Yes, but only before 15:00, and never during a freeze.";
        let answered = reviewer(format!("/v1/review/escalations/{id}/answer"))
            .json(&json!({ "text": answer }))
            .send()
            .await
            .unwrap();
        assert_eq!(answered.status(), 200);
        let from_reviewer = b
            .wait_text("#conversation section.reply.reviewer", "the reviewer's answer", |t| {
                t.contains(answer)
            })
            .await;
        assert!(from_reviewer.starts_with("Answer from a reviewer (alice)"), "{from_reviewer}");
        assert_eq!(b.count("#conversation section.reply.reviewer button.copy").await, 1);
        let status = b.text_of(&format!("{card} .status-line")).await;
        assert!(status.contains("A reviewer answered"), "{status}");
        shoot(&b, "escalation-answered").await;
        // The link with the handle shows it in a fresh tab's state.
        new_conversation(&b).await;
        b.open(&format!("{base}/#escalation={id}&handle={handle}"))
            .await;
        let linked = b
            .wait_text("#conversation section.reply.reviewer", "the linked answer", |t| {
                t.contains(answer)
            })
            .await;
        assert!(linked.contains(answer));
        assert!(b
            .text_of("#conversation .status-line")
            .await
            .contains("A reviewer answered"));
        // A wrong handle reads as unknown.
        new_conversation(&b).await;
        b.open(&format!("{base}/#escalation={id}&handle=wrong")).await;
        b.wait_text("#conversation section.reply.failed", "a wrong handle", |t| {
            t.contains("not known here")
        })
        .await;

        // --- Hostile input: markup in a question and in a passage is text.
        new_conversation(&b).await;
        let question = "<b id=pwned-question>What</b> colour is the widget? <img src=x id=pwned-img>";
        ask(&b, question).await;
        reply_of(&b, 1).await;
        let asked = b
            .text_of("#conversation > li:nth-child(1) .asked .question-text")
            .await;
        assert_eq!(asked, question);
        // The passage's markup is shown as written, in the answer and in
        // the passage its citation opens.
        let written = b.text_of("#conversation > li:nth-child(1) section.reply .text").await;
        let markup = "teal <img src=x id=pwned-passage> <script>document.title='pwned'</script>";
        assert!(written.contains(markup), "{written}");
        let cite = b.must_find("#conversation a.cite").await;
        b.click(&cite).await;
        b.wait_text("#passage-text", "the hostile passage", |t| t.contains(markup))
            .await;
        let close = b.must_find("#passage-close").await;
        b.click(&close).await;
        let injected = b
            .run(
                "return document.querySelectorAll('#pwned-question, #pwned-img, #pwned-passage, #conversation script, #passage script').length;",
                json!([]),
            )
            .await;
        assert_eq!(injected, 0, "markup from a question or passage became elements");
        let title = b.run("return document.title;", json!([])).await;
        assert_eq!(title, "GRACE");

        // --- An example question, asked with a click; a new conversation
        // offers the examples again.
        new_conversation(&b).await;
        assert!(is_shown(&b, "#examples button.example").await, "no examples after a new conversation");
        let first = "#examples li:first-child button.example";
        let example = b.text_of(first).await;
        let button = b.must_find(first).await;
        b.click(&button).await;
        reply_of(&b, 1).await;
        let asked = b
            .text_of("#conversation > li:nth-child(1) .asked .question-text")
            .await;
        assert_eq!(asked, example);
        assert!(!is_shown(&b, "#examples-box").await, "examples beside a conversation");

        // --- Refused questions (a pasted log, signs without words): the
        // server's own message, the question left in the box to mend.
        new_conversation(&b).await;
        let log: String = "deploy failed: connection refused (ORB-2001) "
            .chars()
            .cycle()
            .take(4_999)
            .chain(['.'])
            .collect();
        for question in [log.as_str(), "?!…"] {
            let said = refusal(&http, &base, question).await;
            b.run(
                "document.getElementById('question').value = arguments[0];",
                json!([question]),
            )
            .await;
            let send = b.must_find("#send").await;
            b.click(&send).await;
            b.wait_text("#notice", "the server's message", |t| t == said)
                .await;
            let state = b
                .run(
                    "const q = document.getElementById('question');
                     return [document.getElementById('notice').className, q.value, q.hasAttribute('maxlength'),
                             document.querySelectorAll('#conversation > li').length];",
                    json!([]),
                )
                .await;
            assert_eq!(
                state,
                json!(["error", question, false, 0]),
                "said as an error, the question kept whole, nothing asked"
            );
        }

        // --- Accessibility, on a page holding every kind of reply.
        new_conversation(&b).await;
        ask(&b, "How long are nightly backups kept?").await;
        reply_of(&b, 1).await;
        ask(&b, "How do I roll back a production deployment?").await;
        reply_of(&b, 2).await;
        ask(&b, "What is the boiling point of mercury?").await;
        reply_of(&b, 3).await;
        b.open(&format!("{base}/#escalation={id}&handle={handle}"))
            .await;
        b.must_find("#conversation section.reply.reviewer").await;
        let summary = b.must_find("#conversation details.why summary").await;
        b.click(&summary).await;
        // Commands and code as code (markdown.js, as answers are drawn):
        // inline and fenced, monospace, a long line scrolling in its block.
        let code = b
            .run(
                "const box = document.createElement('div');
                 document.querySelector('#conversation > li:nth-child(1) section.reply .text').append(box);
                 markdownInto(box, 'Run `grace serve`, then:\\n\\n```sh\\ncurl -s 127.0.0.1:8080/v1/status'
                   + ' --verbose'.repeat(40) + '\\n\\n# done\\n```', null);
                 const pre = box.querySelector('pre');
                 return [box.querySelector('p code').textContent, pre.querySelector('code').textContent.split('\\n').length,
                         getComputedStyle(pre.querySelector('code')).fontFamily.includes('monospace'),
                         getComputedStyle(pre).overflowX, pre.scrollWidth > pre.clientWidth];",
                json!([]),
            )
            .await;
        assert_eq!(code, json!(["grace serve", 3, true, "auto", true]));
        check_accessible(&b, "every kind of reply").await;

        // --- Japanese: the page's own texts follow the chosen language.
        b.run(
            "const s = document.getElementById('language'); s.value = 'ja'; s.dispatchEvent(new Event('change'));",
            json!([]),
        )
        .await;
        assert_eq!(b.text_of("#send").await, "質問する");
        assert_eq!(
            b.run("return document.documentElement.lang;", json!([])).await,
            "ja"
        );
        let badge = b.text_of("#conversation > li:nth-child(1) .badge").await;
        assert_eq!(badge, "確かな回答");
        assert_eq!(b.text_of("#conversation > li:nth-child(1) button.copy").await, "コピー");
        let heading = b
            .run("return document.getElementById('examples-title').textContent;", json!([]))
            .await;
        assert_eq!(heading, "質問の例");
        b.open(&format!("{base}/?lang=en")).await;
        assert_eq!(b.text_of("#send").await, "Ask");

        b.quit().await;
        server.stop().await;
    });
}

#[test]
fn a_clarifying_question_is_answered_with_a_button() {
    if !support::browser::available() {
        return;
    }
    let model = ScriptedModel::start(Provider::Gemini, Mode::Native, clarifying_script());
    let dir = tempfile::tempdir().unwrap();
    let grace = grace_for(
        dir.path(),
        |c| {
            c.planner.strategy = grace::config::Strategy::Agent;
            c.confidence.weights = common::hand_set_weights();
        },
        Some(&model),
    );
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let server = common::serve(grace.clone()).await;
        let b = Browser::start().await;
        b.open(&format!("{}/", server.base)).await;
        ask(&b, "Why did my deployment fail?").await;
        assert_eq!(reply_of(&b, 1).await, "needs_input");
        let question = b.text_of("#conversation .clarify-question").await;
        assert_eq!(question, "Which error code do you see?");
        // Focus moves to the first option.
        let focused = b
            .run("return document.activeElement.textContent;", json!([]))
            .await;
        assert_eq!(focused, "ORB-1042");
        let options = b
            .run(
                "return [...document.querySelectorAll('#conversation button.option')].map(b => b.textContent);",
                json!([]),
            )
            .await;
        assert_eq!(options, json!(["ORB-1042", "ORB-2001"]));
        let second = b
            .must_find("#conversation button.option:nth-of-type(2)")
            .await;
        b.click(&second).await;
        let decision = {
            let started = Instant::now();
            loop {
                let d = b
                    .run(
                        "const r = document.querySelectorAll('#conversation > li:nth-child(1) section.reply[data-decision]');
                         return r.length ? r[r.length - 1].dataset.decision : null;",
                        json!([]),
                    )
                    .await;
                if d != "needs_input" && !d.is_null() {
                    break d;
                }
                if started.elapsed() > Duration::from_secs(30) {
                    let turn = b.text_of("#conversation").await;
                    let notice = b.text_of("#notice").await;
                    let stored = b
                        .run("return sessionStorage.getItem('grace-ask');", json!([]))
                        .await;
                    panic!("no answer after the reply:\n{turn}\nnotice: {notice}\n{stored}");
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        };
        assert!(decision == "answer" || decision == "caveat", "{decision}");
        let replied = b.text_of("#conversation .replied").await;
        assert_eq!(replied, "You replied: ORB-2001");
        let text = b
            .text_of("#conversation > li:nth-child(1) section.reply:last-of-type .text")
            .await;
        assert!(text.contains("rolls back automatically"), "{text}");
        b.quit().await;
        server.stop().await;
    });
}

#[test]
fn a_wrong_key_is_said_on_the_page_and_the_right_one_works() {
    if !support::browser::available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let grace = grace_for(
        dir.path(),
        |c| c.server.api_key = "the-right-key".into(),
        None,
    );
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let server = common::serve(grace.clone()).await;
        let b = Browser::start().await;
        b.open(&format!("{}/", server.base)).await;
        // The key field is not on the page as served; the server's first
        // 401 (the page asks for its example questions) shows it.
        let served = b
            .run_async(
                "const done = arguments[arguments.length - 1];
                 fetch('/').then(r => r.text())
                   .then(html => done(new DOMParser().parseFromString(html, 'text/html').getElementById('key-field').hidden))
                   .catch(e => done(String(e)));",
                json!([]),
            )
            .await;
        assert_eq!(served, true, "the key field is hidden until a key is asked for");
        b.wait_text("#notice", "the first 401", |t| t.contains("needs a service key"))
            .await;
        assert!(is_shown(&b, "#key").await, "no key field after a 401");
        assert!(!is_shown(&b, "#examples-box").await, "examples without a key");
        // No key: asking, the page says one is needed (the notice emptied
        // first, so that what it says is the ask's answer).
        b.run("document.getElementById('notice').textContent = '';", json!([]))
            .await;
        ask(&b, "How long are nightly backups kept?").await;
        b.wait_text("#notice", "no key", |t| t.contains("needs a service key"))
            .await;
        let key = b.must_find("#key").await;
        b.type_into(&key, "a-wrong-key").await;
        let send = b.must_find("#send").await;
        b.click(&send).await;
        b.wait_text("#notice", "a wrong key", |t| t.contains("was not accepted"))
            .await;
        let state = b
            .run(
                "return [document.activeElement.id, document.getElementById('key').getAttribute('aria-invalid'),
                         document.getElementById('question').value, document.querySelectorAll('#conversation > li').length];",
                json!([]),
            )
            .await;
        assert_eq!(
            state,
            json!(["key", "true", "How long are nightly backups kept?", 0]),
            "focus on the key, the question kept, nothing asked"
        );
        // The right key: the same question is answered.
        b.run("document.getElementById('key').value = '';", json!([]))
            .await;
        b.type_into(&key, "the-right-key").await;
        b.click(&send).await;
        assert_eq!(reply_of(&b, 1).await, "answer");
        let invalid = b
            .run("return document.getElementById('key').getAttribute('aria-invalid');", json!([]))
            .await;
        assert!(invalid.is_null());
        // With the key, a new conversation offers the example questions.
        new_conversation(&b).await;
        b.must_find("#examples button.example").await;
        assert!(is_shown(&b, "#examples button.example").await);
        assert!(is_shown(&b, "#key").await, "the key field stays");
        b.quit().await;
        server.stop().await;
    });
}

/// The page with a principal's key answers as that principal: the finance
/// folder of the sample (`read: [group:finance]`) answers Ann, and for Bo
/// it does not exist: the ordinary decline, no trace of it on the page.
#[test]
fn a_principals_key_on_the_page_reads_only_what_the_principal_may() {
    if !support::browser::available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let grace = grace_for(
        dir.path(),
        |c| c.server.api_key = "service-key".into(),
        None,
    );
    let principals =
        grace::auth::Principals::open(&common::config(&dir.path().join("data"))).unwrap();
    let ann = principals.add_key("ann", &["finance".into()]).unwrap();
    let bo = principals.add_key("bo", &[]).unwrap();
    let question = "Who gets the alert when a budget is 80% spent?";
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let server = common::serve(grace.clone()).await;
        let b = Browser::start().await;
        b.open(&format!("{}/", server.base)).await;
        b.wait_text("#notice", "the first 401", |t| {
            t.contains("needs a service key")
        })
        .await;
        let key = b.must_find("#key").await;
        b.type_into(&key, &bo.key).await;
        ask(&b, question).await;
        assert_eq!(reply_of(&b, 1).await, "decline");
        let page = b
            .run("return document.body.innerText;", json!([]))
            .await
            .as_str()
            .unwrap()
            .to_string();
        for hidden in [
            "finance partner",
            "budgets.md",
            "Orbit cloud budgets",
            "18,000",
        ] {
            assert!(!page.contains(hidden), "{hidden} on Bo's page: {page}");
        }
        // The same page with Ann's key.
        b.run("document.getElementById('key').value = '';", json!([]))
            .await;
        b.type_into(&key, &ann.key).await;
        new_conversation(&b).await;
        ask(&b, question).await;
        assert_eq!(reply_of(&b, 1).await, "answer");
        let page = b.run("return document.body.innerText;", json!([])).await;
        assert!(page.as_str().unwrap().contains("finance partner"), "{page}");
        b.quit().await;
        server.stop().await;
    });
}

/// The page at `/?kb=NAME` asks knowledge base NAME (`/v1/kbs/NAME/…`):
/// an hr document answers there for a principal of group hr, and is not
/// on the page of the server's `default` knowledge base.
#[test]
fn the_page_asks_the_knowledge_base_its_address_names() {
    if !support::browser::available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let hr_docs = dir.path().join("hr-docs");
    std::fs::create_dir_all(&hr_docs).unwrap();
    std::fs::write(
        hr_docs.join("leave.md"),
        "# Parental leave\n\nEmployees get sixteen weeks of paid parental leave. \
         Apply through the HR portal at least four weeks before the leave starts.\n",
    )
    .unwrap();
    let mut base = common::config(&dir.path().join("data"));
    base.server.api_key = "service-key-0123456789".into();
    base.kbs.insert(
        "hr".into(),
        grace::config::KbConfig {
            roles: grace::config::Roles {
                ask: vec!["group:hr".into()],
                ..Default::default()
            },
            ..Default::default()
        },
    );
    let kbs = grace::service::kbs::Kbs::open_with(&base, |c| {
        Grace::builder(c).embedder(common::embedder()).build()
    })
    .unwrap();
    kbs.get("hr")
        .unwrap()
        .ingest_blocking(&[hr_docs], &Default::default(), &mut |_| {})
        .unwrap();
    let principals =
        grace::auth::Principals::open(&common::config(&dir.path().join("data"))).unwrap();
    let ann = principals.add_key("ann", &["hr".into()]).unwrap();
    let question = "How many weeks of parental leave do employees get?";
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let server = common::serve_state(grace_serve::AppState::serving(kbs).unwrap()).await;
        let b = Browser::start().await;
        for (address, answered) in [("/?kb=hr", true), ("/", false)] {
            b.open(&format!("{}{address}", server.base)).await;
            let key = b.must_find("#key").await;
            b.run("document.getElementById('key').value = '';", json!([]))
                .await;
            b.type_into(&key, &ann.key).await;
            new_conversation(&b).await;
            ask(&b, question).await;
            let decision = reply_of(&b, 1).await;
            let page = b.run("return document.body.innerText;", json!([])).await;
            let page = page.as_str().unwrap();
            assert_eq!(
                page.contains("sixteen weeks"),
                answered,
                "{address}: {decision}: {page}"
            );
        }
        b.quit().await;
        server.stop().await;
    });
}
