//! Several knowledge bases on one server (`kbs:`): each with its own
//! collection, state and embedding model (MiniLM for `default`,
//! multilingual-e5 for `hr`), served at `/v1/kbs/{kb}/…`, chosen with
//! `--kb` and MCP's `kb` argument, and asked only by those its roles
//! name. A knowledge base that does not exist and one the caller may not
//! ask get the same 404, so existence does not leak.

use crate::support::common;

use std::path::Path;

use grace::auth::Principals;
use grace::config::Config;
use grace::service::kbs::Kbs;
use serde_json::{Value, json};

/// Only in `hr`'s one document.
const HR_CANARY: &str = "ZEBRAFINCH7";

/// `server.api_key`: holds every role on every knowledge base.
const SERVICE_KEY: &str = "service-key-0123456789";

const LEAVE: &str = "How many weeks of parental leave do employees get?";

/// A configuration file for two knowledge bases: `default` (the top
/// level) and `hr`, with the multilingual model, asked by group `hr`
/// and reviewed by `rita`.
const CONFIG: &str = "\
kbs:
  hr:
    embedding:
      model_dir: MODELS/e5
    roles:
      ask: [\"group:hr\"]
      review: [\"user:rita\"]
";

fn config_text() -> String {
    CONFIG.replace("MODELS", &common::repo().join("models").to_string_lossy())
}

/// The `hr` folder: one document with the canary.
fn hr_docs(root: &Path) -> std::path::PathBuf {
    let dir = root.join("hr-docs");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("leave.md"),
        format!(
            "# Parental leave\n\nEmployees get sixteen weeks of paid parental leave \
             ({HR_CANARY}). Apply through the HR portal at least four weeks before the \
             leave starts.\n"
        ),
    )
    .unwrap();
    dir
}

fn base_config(data: &Path) -> Config {
    let mut base: Config = Config::from_yaml(&config_text()).unwrap();
    let defaults = common::config(data);
    base.storage = defaults.storage;
    base.embedding = defaults.embedding;
    base.reader = defaults.reader;
    base.server.api_key = SERVICE_KEY.into();
    base
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_knowledge_base_is_served_to_those_who_may_ask_it() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let base = base_config(&data);
    // `default` with the shared MiniLM, `hr` with its own model.
    let kbs = Kbs::open_with(&base, |c| match c.kb_name() {
        "hr" => grace::Grace::open(c),
        _ => Ok(common::service(c)),
    })
    .unwrap();
    let kbs_default = kbs.default_kb().clone();
    kbs.default_kb()
        .ingest(vec![common::repo().join("examples/kb")], Default::default())
        .await
        .unwrap();
    let hr = kbs.get("hr").unwrap().clone();
    hr.ingest(vec![hr_docs(tmp.path())], Default::default())
        .await
        .unwrap();
    let principals = Principals::open(&common::config(&data)).unwrap();
    let ann = principals.add_key("ann", &["hr".into()]).unwrap().key;
    let bo = principals.add_key("bo", &[]).unwrap().key;
    let rita = principals.add_key("rita", &[]).unwrap().key;
    let server = common::serve_state(grace_serve::AppState::serving(kbs).unwrap()).await;
    let client = reqwest::Client::new();
    let post = |path: &str, key: &str, body: Value| {
        client
            .post(format!("{}{path}", server.base))
            .bearer_auth(key)
            .json(&body)
            .send()
    };
    let get = |path: &str, key: &str| {
        client
            .get(format!("{}{path}", server.base))
            .bearer_auth(key)
            .send()
    };

    // Each caller lists what it may ask.
    for (key, want) in [
        (&ann, vec!["default", "hr"]),
        (&bo, vec!["default"]),
        (&rita, vec!["default", "hr"]),
        (&SERVICE_KEY.to_string(), vec!["default", "hr"]),
    ] {
        let listed: Value = get("/v1/kbs", key).await.unwrap().json().await.unwrap();
        let names: Vec<&str> = listed["kbs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, want, "{listed}");
    }

    // hr's documents through hr's routes, for those who may ask it.
    let search = json!({"query": LEAVE, "limit": 3});
    for key in [&ann, &SERVICE_KEY.to_string()] {
        let found = post("/v1/kbs/hr/search", key, search.clone())
            .await
            .unwrap();
        assert_eq!(found.status(), 200);
        assert!(found.text().await.unwrap().contains(HR_CANARY));
        let asked = post(
            "/v1/kbs/hr/ask",
            key,
            json!({"question": LEAVE, "queue": false}),
        )
        .await
        .unwrap();
        assert_eq!(asked.status(), 200);
        let asked: Value = asked.json().await.unwrap();
        assert!(
            asked["answer"]["citations"]
                .to_string()
                .contains("leave.md"),
            "{asked}"
        );
    }
    // `default`'s routes never reach hr's collection.
    let found = post("/v1/search", &ann, search.clone()).await.unwrap();
    assert!(!found.text().await.unwrap().contains(HR_CANARY));

    // Not allowed and not there: the same 404, body and all.
    let forbidden = post("/v1/kbs/hr/search", &bo, search.clone())
        .await
        .unwrap();
    assert_eq!(forbidden.status(), 404);
    let forbidden: Value = forbidden.json().await.unwrap();
    let missing = post("/v1/kbs/hq/search", &bo, search.clone())
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
    let missing: Value = missing.json().await.unwrap();
    assert_eq!(forbidden["error"]["type"], "unknown_kb", "{forbidden}");
    assert_eq!(forbidden["error"]["type"], missing["error"]["type"]);
    assert_eq!(
        forbidden["error"]["message"]
            .as_str()
            .unwrap()
            .replace("`hr`", "`hq`"),
        missing["error"]["message"].as_str().unwrap()
    );
    assert!(!forbidden.to_string().contains(HR_CANARY));
    for path in ["/v1/kbs/hr/status", "/v1/kbs/hr/sessions"] {
        let r = match path.ends_with("sessions") {
            true => post(path, &bo, json!({})).await.unwrap(),
            false => get(path, &bo).await.unwrap(),
        };
        assert_eq!(r.status(), 404, "{path}");
    }
    // Hostile names: never a path outside the data folder, never a 500.
    let long = "k".repeat(10_000);
    // (A literal `..` segment is resolved by the client before it is sent.)
    for kb in [
        "..%2F..%2Fetc",
        "%00",
        "default%2F..",
        "DEFAULT",
        "%E4%BA%BA%E4%BA%8B", // 人事
        "hr%20",
        "%EF%BD%88%EF%BD%92", // ｈｒ, full width
        long.as_str(),
    ] {
        let r = post(&format!("/v1/kbs/{kb}/search"), &bo, search.clone())
            .await
            .unwrap();
        assert_eq!(r.status(), 404, "{kb}");
    }
    // Nor through a knowledge base's own `kbs` path, nor its review
    // routes, whatever the token: the same answer for hr as for hq.
    let same = |a: reqwest::Response, b: reqwest::Response| async move {
        let (sa, sb) = (a.status(), b.status());
        let (ta, tb) = (a.text().await.unwrap(), b.text().await.unwrap());
        assert_eq!(sa, sb, "{ta} / {tb}");
        assert_eq!(ta.replace("`hr`", "`hq`"), tb);
        sa
    };
    for tail in ["kbs", "kbs/x"] {
        let status = same(
            get(&format!("/v1/kbs/hr/{tail}"), &bo).await.unwrap(),
            get(&format!("/v1/kbs/hq/{tail}"), &bo).await.unwrap(),
        )
        .await;
        assert_eq!(status, 404, "{tail}");
    }
    let other_kbs_reviewer = common::reviewer(kbs_default.escalations(), "dee", "Dee");
    // A forged principal's key, a made-up token, a key without the role,
    // another knowledge base's reviewer: each the same for hr as for hq.
    for key in [
        "not-a-token",
        "gk_forged0000000000000000000000000000",
        bo.as_str(),
        other_kbs_reviewer.as_str(),
    ] {
        same(
            get("/v1/kbs/hr/review/escalations", key).await.unwrap(),
            get("/v1/kbs/hq/review/escalations", key).await.unwrap(),
        )
        .await;
    }
    // Without a token, existence does not leak either: 401 for both.
    for kb in ["hr", "hq"] {
        let r = client
            .post(format!("{}/v1/kbs/{kb}/search", server.base))
            .json(&search)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 401, "{kb}");
    }

    // Two models at once: each knowledge base reports its own.
    let status = |path: &'static str| {
        let get = &get;
        async move {
            let s: Value = get(path, SERVICE_KEY).await.unwrap().json().await.unwrap();
            s["knowledge_base"]["model"].to_string()
        }
    };
    let (default_model, hr_model) = (
        status("/v1/status").await,
        status("/v1/kbs/hr/status").await,
    );
    assert!(default_model.contains("minilm"), "{default_model}");
    assert!(hr_model.contains("e5"), "{hr_model}");

    // A session belongs to its knowledge base (and its principal).
    let created: Value = post("/v1/kbs/hr/sessions", &ann, json!({}))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = created["id"].as_str().unwrap();
    assert_eq!(
        get(&format!("/v1/kbs/hr/sessions/{id}"), &ann)
            .await
            .unwrap()
            .status(),
        200
    );
    assert_eq!(
        get(&format!("/v1/sessions/{id}"), &ann)
            .await
            .unwrap()
            .status(),
        404
    );

    // The review role: rita reviews hr (as the reviewer `rita`), not
    // `default`; bo reviews nothing.
    let queue = "/review/escalations";
    assert_eq!(
        get(&format!("/v1/kbs/hr{queue}"), &rita)
            .await
            .unwrap()
            .status(),
        200
    );
    for (path, key) in [
        (format!("/v1{queue}"), &rita),
        (format!("/v1/kbs/hr{queue}"), &bo),
        (format!("/v1/kbs/hr{queue}"), &ann),
    ] {
        assert_eq!(get(&path, key).await.unwrap().status(), 404, "{path}");
    }
    // Ingesting is the admin role's: a principal who may only ask may not.
    let ingest = post("/v1/kbs/hr/ingest", &ann, json!({"paths": ["x"]}))
        .await
        .unwrap();
    assert_eq!(ingest.status(), 403);

    // The audit log names the knowledge base.
    let log = std::fs::read_to_string(data.join("audit.log")).unwrap();
    assert!(
        log.lines()
            .any(|l| l.contains("\"kb\":\"hr\"") && l.contains("\"principal\":\"ann\"")),
        "{log}"
    );
    assert!(!log.contains(HR_CANARY));
    server.stop().await;
}

#[test]
fn the_cli_acts_on_the_knowledge_base_kb_names() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("grace_config.yml"), config_text()).unwrap();
    let docs = hr_docs(dir);
    let run = |args: &[&str]| common::grace(dir, args);
    let ingested = run(&["--kb", "hr", "ingest", docs.to_str().unwrap()]);
    assert!(
        ingested.status.success(),
        "{}",
        common::output_text(&ingested)
    );
    let found = run(&["--kb", "hr", "search", LEAVE]);
    assert!(common::output_text(&found).contains(HR_CANARY));
    // `default` is another collection: empty here.
    let elsewhere = run(&["search", LEAVE]);
    assert!(!common::output_text(&elsewhere).contains(HR_CANARY));

    let listed = run(&["kb", "list", "--json"]);
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(listed[0]["name"], "default");
    assert_eq!(listed[1]["name"], "hr");
    assert_eq!(listed[1]["chunks"], 1);
    assert_eq!(listed[1]["collection"], "grace-hr");
    assert_eq!(listed[1]["roles"]["ask"], json!(["group:hr"]));

    // `--as` a principal who may not ask hr: the error of a name not
    // served, as the server's 404; one in group hr is answered.
    assert!(run(&["auth", "add-key", "bo"]).status.success());
    assert!(
        run(&["auth", "add-key", "ann", "--groups", "hr"])
            .status
            .success()
    );
    let refused = run(&["--kb", "hr", "search", LEAVE, "--as", "bo"]);
    assert_eq!(refused.status.code(), Some(grace::EXIT_NOT_FOUND as i32));
    let text = common::output_text(&refused);
    assert!(
        text.contains("no knowledge base `hr`") && !text.contains(HR_CANARY),
        "{text}"
    );
    let allowed = run(&["--kb", "hr", "search", LEAVE, "--as", "ann"]);
    assert!(common::output_text(&allowed).contains(HR_CANARY));
    // A name not configured: not found, for every command.
    for args in [
        vec!["--kb", "hq", "search", LEAVE],
        vec!["--kb", "hq", "status"],
        vec!["kb", "drop", "hq", "--yes"],
    ] {
        let r = run(&args);
        assert_eq!(
            r.status.code(),
            Some(grace::EXIT_NOT_FOUND as i32),
            "{args:?}"
        );
        assert!(common::output_text(&r).contains("no knowledge base `hq`"));
    }
    // Hostile names on the command line: not found, and nothing made.
    let long = "k".repeat(10_000);
    for name in ["../../etc", "ｈｒ", "hr/..", "", long.as_str()] {
        let r = run(&["--kb", name, "search", LEAVE]);
        assert_eq!(
            r.status.code(),
            Some(grace::EXIT_NOT_FOUND as i32),
            "{name:.20}"
        );
    }
    let made: Vec<_> = std::fs::read_dir(dir.join(".grace/kbs"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(made, ["hr"]);
    // Dropping asks first: without a terminal, it needs --yes.
    let unsure = common::with_input(common::grace_cmd(dir, &["kb", "drop", "hr"]), "");
    assert_eq!(unsure.status.code(), Some(grace::EXIT_BAD_INPUT as i32));
    assert!(common::output_text(&unsure).contains("--yes"));
    assert!(dir.join(".grace/kbs/hr").is_dir());
    let dropped = run(&["kb", "drop", "hr", "--yes"]);
    assert!(
        dropped.status.success(),
        "{}",
        common::output_text(&dropped)
    );
    assert!(!dir.join(".grace/kbs/hr").exists());
    // `default` holds the principals: never dropped this way.
    let refused = run(&["kb", "drop", "default", "--yes"]);
    assert_eq!(refused.status.code(), Some(grace::EXIT_BAD_INPUT as i32));
    // Created again, empty, before any ingest.
    let created = run(&["kb", "create", "hr"]);
    assert!(
        created.status.success(),
        "{}",
        common::output_text(&created)
    );
    let listed = run(&["kb", "list", "--json"]);
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(listed[1]["chunks"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_offers_only_the_knowledge_bases_its_principal_may_ask() {
    use rmcp::ServiceExt;
    use rmcp::model::CallToolRequestParams;
    use rmcp::transport::TokioChildProcess;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("grace_config.yml"), config_text()).unwrap();
    let docs = hr_docs(dir);
    let ingested = common::grace(dir, &["--kb", "hr", "ingest", docs.to_str().unwrap()]);
    assert!(
        ingested.status.success(),
        "{}",
        common::output_text(&ingested)
    );
    let principals = Principals::open(&common::config(&dir.join(".grace"))).unwrap();
    principals.add_key("ann", &["hr".into()]).unwrap();
    principals.add_key("bo", &[]).unwrap();

    // bo may not ask hr: `--kb hr` is the same error as a name not served.
    let mut refused = common::grace_cmd(dir, &["--kb", "hr", "mcp"]);
    refused.env("GRACE_PRINCIPAL", "bo");
    let refused = common::with_input(refused, "");
    assert_eq!(refused.status.code(), Some(grace::EXIT_NOT_FOUND as i32));
    assert!(common::output_text(&refused).contains("no knowledge base `hr`"));

    for (who, kbs) in [
        ("ann", json!(["default", "hr"])),
        ("bo", json!(["default"])),
    ] {
        let mut cmd = common::grace_cmd(dir, &["mcp"]);
        cmd.env("GRACE_PRINCIPAL", who)
            .stderr(std::process::Stdio::null());
        let client =
            ().serve(TokioChildProcess::new(tokio::process::Command::from(cmd)).unwrap())
                .await
                .unwrap();
        let tools = client.list_all_tools().await.unwrap();
        for t in &tools {
            assert_eq!(
                t.input_schema["properties"]["kb"]["enum"], kbs,
                "{}",
                t.name
            );
        }
        let call = |kb: &str| {
            CallToolRequestParams::new("rag_search".to_string()).with_arguments(
                json!({"query": LEAVE, "limit": 3, "kb": kb})
                    .as_object()
                    .unwrap()
                    .clone(),
            )
        };
        let r = client.call_tool(call("hr")).await;
        let seen = format!("{r:?}");
        assert_eq!(seen.contains(HR_CANARY), who == "ann", "{who}: {seen}");
        // Not a name, a huge one, another script's: refused, no crash.
        for kb in [
            json!(7),
            json!({"a": {"b": []}}),
            json!("k".repeat(100_000)),
            json!("人事"),
        ] {
            let params = CallToolRequestParams::new("rag_search".to_string()).with_arguments(
                json!({"query": LEAVE, "kb": kb})
                    .as_object()
                    .unwrap()
                    .clone(),
            );
            assert!(client.call_tool(params).await.is_err(), "{who}: {kb:.30}");
        }
        if who == "bo" {
            // Refused as a name not served is.
            let missing = format!("{:?}", client.call_tool(call("hq")).await);
            assert_eq!(
                seen.replace("`hr`", "`hq`").len(),
                missing.len(),
                "{seen}\n{missing}"
            );
        }
        client.cancel().await.unwrap();
    }
}
