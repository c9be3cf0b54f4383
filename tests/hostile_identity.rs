//! Security review: reviewer identity was a header (`X-Grace-Reviewer:
//! alice` made anyone alice, with one token shared by all reviewers), any
//! caller could register or overwrite a reviewer, a reviewer token without
//! an API key left every endpoint open while looking protected, and
//! `grace mcp` offered `list_escalations` and `answer_escalation` by
//! default, which take any reviewer's name. Now each reviewer has a token
//! of their own that alone names them (only its hash is stored),
//! registration and rotation are the administrator's, and the service key
//! does not open the review endpoints.
//! Finding 7: any service client could read any escalation's question and
//! answer by its id (a counter); now the asker gets an unguessable handle
//! and `GET /v1/escalations/{id}` needs it (tests/api_http.rs and
//! tests/review_http.rs check the route).

use crate::support::common;

use grace::Config;
use serde_json::{Value, json};

const SERVICE_KEY: &str = "service-key-0123456789";
const ADMIN_KEY: &str = "admin-key-0123456789ab";

/// A keyed server over the sample, alice and bob registered with tokens,
/// one escalation open to all and one restricted to bob.
struct Keyed {
    _dir: tempfile::TempDir,
    server: common::TestServer,
    http: reqwest::Client,
    alice: String,
    bob: String,
    public: i64,
    bobs: i64,
}

impl Keyed {
    async fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let mut config = common::config(dir.path());
        config.server.api_key = SERVICE_KEY.into();
        config.server.admin_api_key = ADMIN_KEY.into();
        let grace = common::sample_service(config).await;
        let queue = grace.escalations().clone();
        let mut tokens = Vec::new();
        for id in ["alice", "bob"] {
            tokens.push(common::reviewer(&queue, id, id));
        }
        let ask = |reviewers: Vec<String>| grace::AskOptions {
            reviewers,
            ..Default::default()
        };
        let public = grace
            .ask("Can I deploy on Fridays?", ask(Vec::new()))
            .await
            .unwrap()
            .review_id
            .expect("escalated");
        let bobs = grace
            .ask("Can I deploy on Fridays?", ask(vec!["bob".into()]))
            .await
            .unwrap()
            .review_id
            .expect("escalated");
        let server = common::serve(grace).await;
        Self {
            _dir: dir,
            server,
            http: reqwest::Client::new(),
            bob: tokens.pop().unwrap(),
            alice: tokens.pop().unwrap(),
            public,
            bobs,
        }
    }

    async fn call(
        &self,
        method: &str,
        path: &str,
        token: &str,
        extra: &[(&str, &str)],
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut req = self
            .http
            .request(
                method.parse().unwrap(),
                format!("{}{path}", self.server.base),
            )
            .bearer_auth(token);
        for (k, v) in extra {
            req = req.header(*k, *v);
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        let res = req.send().await.unwrap();
        let code = res.status().as_u16();
        (code, res.json().await.unwrap_or(Value::Null))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reviewer_header_cannot_make_alice_into_bob() {
    let k = Keyed::start().await;
    let bob_header = [("X-Grace-Reviewer", "bob")];
    // Alice naming herself bob still sees only what alice sees.
    let (code, list) = k
        .call("GET", "/v1/review/escalations", &k.alice, &bob_header, None)
        .await;
    assert_eq!(code, 200);
    let ids: Vec<i64> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids, [k.public], "alice must not see bob's escalation");
    let bobs = format!("/v1/review/escalations/{}", k.bobs);
    let (code, _) = k.call("GET", &bobs, &k.alice, &bob_header, None).await;
    assert_eq!(code, 404, "alice read bob's restricted escalation");
    // Her claim is hers, whatever the header says.
    let claim = format!("/v1/review/escalations/{}/claim", k.public);
    let (code, e) = k.call("POST", &claim, &k.alice, &bob_header, None).await;
    assert_eq!(
        (code, e["claimed_by"].as_str()),
        (200, Some("alice")),
        "{e}"
    );
    // Bob cannot answer or release alice's claim.
    let answer = format!("/v1/review/escalations/{}/answer", k.public);
    let (code, _) = k
        .call("POST", &answer, &k.bob, &[], Some(json!({"text": "Yes."})))
        .await;
    assert_eq!(code, 409);
    let release = format!("/v1/review/escalations/{}/release", k.public);
    let (code, _) = k.call("POST", &release, &k.bob, &[], None).await;
    assert_eq!(code, 409);
    // Messages and shared context are the token's reviewer's.
    let (code, _) = k
        .call(
            "PUT",
            "/v1/review/context/bobs-notes",
            &k.bob,
            &[],
            Some(json!({"value": "private", "allowed": []})),
        )
        .await;
    assert_eq!(code, 200);
    let (code, _) = k
        .call(
            "GET",
            "/v1/review/context/bobs-notes",
            &k.alice,
            &bob_header,
            None,
        )
        .await;
    assert_eq!(code, 404, "alice read bob's restricted context");
    let (_, me) = k
        .call("GET", "/v1/review/me", &k.alice, &bob_header, None)
        .await;
    assert_eq!(me["reviewer"], "alice");
    k.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_administrator_registers_reviewers_and_rotates_tokens() {
    let k = Keyed::start().await;
    let carol = json!({"id": "carol", "name": "Carol", "description": "docs"});
    // A reviewer, and a service, may not register anyone.
    let (code, e) = k
        .call(
            "POST",
            "/v1/review/reviewers",
            &k.alice,
            &[],
            Some(carol.clone()),
        )
        .await;
    assert_eq!(
        (code, e["error"]["type"].as_str()),
        (403, Some("forbidden"))
    );
    let (code, _) = k
        .call(
            "POST",
            "/v1/review/reviewers",
            SERVICE_KEY,
            &[],
            Some(carol.clone()),
        )
        .await;
    assert_eq!(code, 401);
    // Nor overwrite one: registering alice again is a conflict, and she
    // keeps her name and her token.
    let (code, _) = k
        .call(
            "POST",
            "/v1/review/reviewers",
            ADMIN_KEY,
            &[],
            Some(json!({"id": "alice", "name": "Mallory", "description": ""})),
        )
        .await;
    assert_eq!(code, 409);
    let (_, list) = k
        .call("GET", "/v1/review/reviewers", &k.alice, &[], None)
        .await;
    assert_eq!(list[0]["name"], "alice");
    // The administrator registers carol; her token comes back once.
    let (code, v) = k
        .call("POST", "/v1/review/reviewers", ADMIN_KEY, &[], Some(carol))
        .await;
    assert_eq!(code, 200, "{v}");
    let carol_token = v["token"].as_str().unwrap().to_string();
    let (_, me) = k
        .call("GET", "/v1/review/me", &carol_token, &[], None)
        .await;
    assert_eq!(me["reviewer"], "carol");
    // Rotation: a reviewer cannot rotate anyone's token (not even bob's
    // into one alice knows); the administrator can, and the old one dies.
    let rotate = "/v1/review/reviewers/bob/token";
    let (code, _) = k.call("POST", rotate, &k.alice, &[], None).await;
    assert_eq!(code, 403);
    let (code, v) = k.call("POST", rotate, ADMIN_KEY, &[], None).await;
    assert_eq!(code, 200);
    let new_bob = v["token"].as_str().unwrap();
    let (code, _) = k.call("GET", "/v1/review/me", &k.bob, &[], None).await;
    assert_eq!(code, 401, "the old token still works after rotation");
    let (_, me) = k.call("GET", "/v1/review/me", new_bob, &[], None).await;
    assert_eq!(me["reviewer"], "bob");
    // The administrator reads every escalation but answers as nobody.
    let (_, list) = k
        .call("GET", "/v1/review/escalations", ADMIN_KEY, &[], None)
        .await;
    assert_eq!(list.as_array().unwrap().len(), 2);
    let claim = format!("/v1/review/escalations/{}/claim", k.public);
    let (code, _) = k
        .call(
            "POST",
            &claim,
            ADMIN_KEY,
            &[("X-Grace-Reviewer", "alice")],
            None,
        )
        .await;
    assert_eq!(code, 403);
    // The service key opens no review endpoint: a service cannot read
    // the askers' escalations by id.
    let (code, _) = k
        .call(
            "GET",
            &format!("/v1/review/escalations/{}", k.bobs),
            SERVICE_KEY,
            &[],
            None,
        )
        .await;
    assert_eq!(code, 401);
    k.server.stop().await;
}

#[test]
fn the_cli_prints_a_new_reviewers_token_once_and_rotates_it() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_str().unwrap().to_string();
    let run = |args: &[&str]| {
        let mut all = vec!["--json", "--data-dir", data.as_str()];
        all.extend_from_slice(args);
        let out = common::grace(dir.path(), &all);
        assert!(out.status.success(), "{}", common::output_text(&out));
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    let first = run(&["review", "register", "dana", "--name", "Dana"]);
    let token = first["token"].as_str().unwrap().to_string();
    assert!(token.starts_with("grv_"));
    // Registering again updates the name and keeps the token (not shown).
    let again = run(&["review", "register", "dana", "--name", "Dana D."]);
    assert!(again["token"].is_null(), "{again}");
    // Without --name the name registered before stays; a new reviewer's
    // name is their id.
    let kept = run(&["review", "register", "dana"]);
    assert_eq!(kept["name"], "Dana D.", "{kept}");
    let described = run(&[
        "review",
        "register",
        "dana",
        "--description",
        "release team",
    ]);
    assert_eq!(described["name"], "Dana D.");
    let again = run(&["review", "register", "dana"]);
    assert_eq!(again["description"], "release team", "{again}");
    let plain = run(&["review", "register", "erin"]);
    assert_eq!(plain["name"], "erin", "{plain}");
    assert!(plain["token"].as_str().unwrap().starts_with("grv_"));
    let rotated = run(&["review", "rotate", "dana"]);
    let new = rotated["token"].as_str().unwrap();
    assert_ne!(new, token);
    let config = common::config(dir.path());
    let queue = grace::review::ReviewQueue::open(&config).unwrap();
    assert_eq!(queue.reviewer_for_token(&token).unwrap(), None);
    assert_eq!(
        queue.reviewer_for_token(new).unwrap().as_deref(),
        Some("dana")
    );
}

#[test]
fn an_admin_key_without_an_api_key_is_a_config_error_naming_both() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("grace.yml");
    std::fs::write(&file, "server:\n  admin_api_key: admin-key-0123456789\n").unwrap();
    let err = Config::load(Some(&file)).unwrap_err().to_string();
    assert!(
        err.contains("server.admin_api_key") && err.contains("server.api_key"),
        "{err}"
    );
    // The CLI says so and exits 2 before serving anything.
    let out = common::grace(dir.path(), &["--config", file.to_str().unwrap(), "status"]);
    assert_eq!(out.status.code(), Some(2), "{}", common::output_text(&out));
    // With the API key too, it loads.
    std::fs::write(
        &file,
        "server:\n  api_key: service-key-0123456789\n  admin_api_key: service-key-0123456789\n",
    )
    .unwrap();
    // The same value for both would make every service the administrator.
    let err = Config::load(Some(&file)).unwrap_err().to_string();
    assert!(err.contains("server.admin_api_key"), "{err}");
    std::fs::write(
        &file,
        "server:\n  api_key: service-key-0123456789\n  admin_api_key: admin-key-0123456789\n",
    )
    .unwrap();
    Config::load(Some(&file)).unwrap();
}

#[test]
fn mcp_offers_no_tool_that_acts_as_a_reviewer_by_default() {
    let tools = Config::default().mcp.tools;
    assert_eq!(tools, ["ask", "rag_search", "ingest", "feedback"]);
    let shipped = Config::load(Some(&common::repo().join("grace_config.yml"))).unwrap();
    assert!(
        !shipped
            .mcp
            .tools
            .iter()
            .any(|t| t == "answer_escalation" || t == "list_escalations"),
        "{:?}",
        shipped.mcp.tools
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_escalated_ask_gives_the_asker_a_handle_that_no_other_id_shares() {
    let dir = tempfile::tempdir().unwrap();
    let grace = common::sample_service(common::config(dir.path())).await;
    let outcome = grace
        .ask("Can I deploy on Fridays?", grace::AskOptions::default())
        .await
        .unwrap();
    let id = outcome.review_id.expect("escalated and queued");
    let handle = outcome.review_handle.expect("a handle for the asker");
    assert_eq!(handle.len(), 32);
    let queue = grace.escalations();
    queue.check_asker_handle(id, &handle).unwrap();
    for wrong in ["", "0", &"0".repeat(32), &queue.asker_handle(id + 1)] {
        let err = queue.check_asker_handle(id, wrong).unwrap_err();
        assert!(err.to_string().contains("not found"), "{err}");
    }
    // The JSON a client receives carries it.
    let json = serde_json::to_value(grace::AskOutcome {
        review_handle: Some(handle.clone()),
        ..outcome
    })
    .unwrap();
    assert_eq!(json["review_handle"], handle.as_str());
}

/// The gap report and the fit on feedback read every asker's questions and
/// ratings: only reviewers and the administrator get them, never the
/// service key, no token or a forged one; their queries refuse numbers
/// past their bounds, negative ones and ones that overflow.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_reviewers_read_what_people_did_not_get_and_how_sure_grace_was() {
    let k = Keyed::start().await;
    for path in ["/v1/review/gaps", "/v1/review/calibration"] {
        for (who, token) in [
            ("the service key", SERVICE_KEY),
            (
                "a forged token",
                "grv_0000000000000000000000000000000000000000",
            ),
            ("no token", ""),
        ] {
            let (code, body) = k.call("GET", path, token, &[], None).await;
            assert_eq!(code, 401, "{path} with {who}: {body}");
        }
        let (code, body) = k.call("GET", path, &k.alice, &[], None).await;
        assert_eq!(code, 200, "{path} as alice: {body}");
        let (code, _) = k.call("GET", path, ADMIN_KEY, &[], None).await;
        assert_eq!(code, 200, "{path} as the administrator");
    }
    // The two escalated questions are there, their text intact.
    let (_, report) = k.call("GET", "/v1/review/gaps", &k.alice, &[], None).await;
    assert_eq!(report["questions"], 2, "{report}");
    assert_eq!(report["groups"][0]["label"], "Can I deploy on Fridays?");
    // Numbers that do not parse are a 400; out of range, a 422.
    let unparsable = [
        "days=4294967296",
        "days=99999999999999999999999999",
        "days=-1",
        "limit=18446744073709551616",
        "limit=-5",
        "days=%E5%8D%81",
    ];
    let out_of_range = ["days=3651", "limit=1001", "limit=0"];
    let cases = unparsable
        .iter()
        .map(|q| (q, 400))
        .chain(out_of_range.iter().map(|q| (q, 422)));
    for (query, want) in cases {
        let path = format!("/v1/review/gaps?{query}");
        let (code, body) = k.call("GET", &path, &k.alice, &[], None).await;
        assert_eq!(code, want, "{query}: {body}");
    }
}
