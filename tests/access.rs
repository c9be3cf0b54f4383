//! Who may read what: readers from `.grace-access.yml`, front matter and the
//! ingest request, enforced inside the search (the real embedded store and
//! model), through the library, HTTP with principals' keys and the CLI.
//!
//! The canaries below sit only in restricted documents: no principal who
//! may not read them ever sees one, in a passage, an answer or a source.

use crate::support::common;

use std::path::{Path, PathBuf};

use grace::access::{Principal, ReadScope};
use grace::auth::Principals;
use grace::ingest::{FileStatus, IngestOptions};
use grace::store::PayloadFilter;
use grace::{AskOptions, KnowledgeBase};
use serde_json::{Value, json};

/// In the finance folder only (`read: [group:finance]`).
const FINANCE_CANARY: &str = "CANARY7F3A";
/// In one document readable by `user:cy` alone (front matter).
const CY_CANARY: &str = "CANARY91C2";

/// Two public documents, a finance folder labelled once by its
/// `.grace-access.yml`, and a document whose front matter names its reader.
/// The rare word `quasar` is in a public document once and in the finance
/// one many times: its rarity must not move what others see.
fn knowledge_base(root: &Path) -> PathBuf {
    let kb = root.join("kb");
    let write = |rel: &str, text: &str| {
        let path = kb.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(
        "deploys.md",
        "# Deploys\n\nDeploys run on Tuesdays and Thursdays after the change review. \
         Roll a bad release back with `orbit rollback`; the previous build is kept for a week.\n\n\
         ## Freezes\n\nNo deploys run during the December freeze, except security fixes.\n",
    );
    write(
        "telescope.md",
        "# The lobby telescope\n\nThe telescope in the lobby is aimed at a quasar on clear nights. \
         Visitors may look through it when the front desk is open.\n",
    );
    write(
        "finance/.grace-access.yml",
        "# Only finance reads this folder.\nread: [group:finance]\n",
    );
    write(
        "finance/bluebird.md",
        &format!(
            "# Project Bluebird budget\n\nProject Bluebird has a budget ceiling of 4.2 million euros \
             ({FINANCE_CANARY}). The quasar quasar quasar funding line is approved by the CFO \
             every quarter; spending over the ceiling needs the board.\n"
        ),
    );
    write(
        "people/salaries.md",
        &format!(
            "---\ntitle: Salary bands\naccess: [user:cy]\n---\n# Salary bands\n\n\
             Salary bands are reviewed every April ({CY_CANARY}); a raise outside the band \
             needs the head of people.\n"
        ),
    );
    kb
}

fn principal(name: &str, groups: &[&str]) -> ReadScope {
    ReadScope::Principal(Principal::new(
        name,
        &groups.iter().map(|g| g.to_string()).collect::<Vec<_>>(),
    ))
}

fn search(kb: &KnowledgeBase, query: &str, k: usize, scope: &ReadScope) -> Vec<grace::Passage> {
    let filter = PayloadFilter::readable_by(scope.tokens());
    kb.search(query, Some(k), filter.as_ref()).unwrap()
}

fn shows(passages: &[grace::Passage], needle: &str) -> bool {
    passages
        .iter()
        .any(|p| p.text.contains(needle) || p.source.contains(needle) || p.section.contains(needle))
}

#[test]
fn readers_come_from_the_nearest_label_and_are_enforced_inside_the_search() {
    let tmp = tempfile::tempdir().unwrap();
    let root = knowledge_base(tmp.path());
    let kb = common::open(common::config(&tmp.path().join("data")));
    let report = kb
        .ingest(
            std::slice::from_ref(&root),
            &IngestOptions::default(),
            &mut |_| {},
        )
        .unwrap();
    assert_eq!(report.added, 4, "{report:?}");

    let ann = principal("ann", &["finance"]);
    let bo = principal("bo", &[]);
    let cy = principal("cy", &["hr"]);
    let budget = "What is the budget ceiling of Project Bluebird?";
    assert!(shows(&search(&kb, budget, 5, &ann), FINANCE_CANARY));
    assert!(shows(
        &search(&kb, budget, 5, &ReadScope::All),
        FINANCE_CANARY
    ));
    for (who, scope) in [("bo", &bo), ("cy", &cy)] {
        let found = search(&kb, budget, 5, scope);
        assert!(!shows(&found, FINANCE_CANARY), "{who}: {found:?}");
        assert!(!shows(&found, "finance"), "{who} sees the restricted path");
        assert!(
            !shows(&found, "Bluebird"),
            "{who} sees the restricted heading"
        );
    }
    let bands = "When are salary bands reviewed?";
    assert!(shows(&search(&kb, bands, 5, &cy), CY_CANARY));
    assert!(!shows(&search(&kb, bands, 5, &ann), CY_CANARY));
    assert!(!shows(&search(&kb, bands, 5, &bo), CY_CANARY));
    // A full top k of what the principal may read, never hits dropped
    // after ranking: bo may read 3 of the 5 documents' chunks.
    let readable = search(&kb, "budget", 100, &bo);
    assert_eq!(
        readable.len(),
        kb.store()
            .count(PayloadFilter::readable_by(bo.tokens()).as_ref())
            .unwrap()
    );
    assert!(!readable.is_empty());
}

/// What a principal sees of a knowledge base with documents it may not
/// read is exactly what it would see if they had never been ingested: the
/// same passages, the same scores (the lexical ranking's term statistics
/// are counted over what it may read), the same answer, decision and
/// confidence. So a decline reveals nothing, and a rare word of a
/// restricted document moves no one else's scores.
#[test]
fn a_principal_sees_exactly_the_knowledge_base_without_what_it_may_not_read() {
    let tmp = tempfile::tempdir().unwrap();
    let root = knowledge_base(tmp.path());
    let public = [root.join("deploys.md"), root.join("telescope.md")];
    let whole = common::open(common::config(&tmp.path().join("whole")));
    whole
        .ingest(
            std::slice::from_ref(&root),
            &IngestOptions::default(),
            &mut |_| {},
        )
        .unwrap();
    let open = common::open(common::config(&tmp.path().join("open")));
    open.ingest(&public, &IngestOptions::default(), &mut |_| {})
        .unwrap();
    let bo = principal("bo", &[]);
    for query in [
        "quasar",
        "What is the budget ceiling of Project Bluebird?",
        "How do I roll back a deploy?",
        "quasar funding approved by the CFO",
    ] {
        let seen = search(&whole, query, 10, &bo);
        let without = search(&open, query, 10, &ReadScope::All);
        assert_eq!(seen.len(), without.len(), "{query}");
        for (a, b) in seen.iter().zip(&without) {
            assert_eq!((&a.source, &a.text), (&b.source, &b.text), "{query}");
            assert!(
                (a.score - b.score).abs() < 1e-5 && (a.fused_score - b.fused_score).abs() < 1e-5,
                "{query}: {a:?} vs {b:?}"
            );
        }
    }
    // The whole run, answer and decision included.
    let ask = |kb: KnowledgeBase, scope: ReadScope| {
        let config = kb.config().clone();
        drop(kb); // the store is one process's at a time
        let grace = common::service(config);
        let options = AskOptions {
            scope,
            queue: false,
            ..AskOptions::default()
        };
        grace
            .ask_blocking(
                "What is the budget ceiling of Project Bluebird?",
                &options,
                Default::default(),
                &mut |_| {},
            )
            .unwrap()
            .report
    };
    let seen = ask(whole, bo);
    let without = ask(open, ReadScope::All);
    assert_eq!(seen.decision, without.decision);
    assert_eq!(seen.answer, without.answer);
    assert!((seen.confidence - without.confidence).abs() < 1e-9);
    let text = serde_json::to_string(&seen).unwrap();
    for hidden in [FINANCE_CANARY, "Bluebird budget", "finance/", "4.2 million"] {
        assert!(!text.contains(hidden), "{hidden} in {text}");
    }
}

#[test]
fn relabelling_a_folder_changes_readers_without_embedding_again() {
    let tmp = tempfile::tempdir().unwrap();
    let root = knowledge_base(tmp.path());
    let kb = common::open(common::config(&tmp.path().join("data")));
    let ingest = |kb: &KnowledgeBase| {
        let mut statuses = Vec::new();
        let report = kb
            .ingest(
                std::slice::from_ref(&root),
                &IngestOptions::default(),
                &mut |e| {
                    if let grace::ingest::IngestEvent::File { path, status, .. } = e {
                        statuses.push((path.to_path_buf(), status.clone()));
                    }
                },
            )
            .unwrap();
        (report, statuses)
    };
    ingest(&kb);
    std::fs::write(root.join("finance/.grace-access.yml"), "read: [group:hr]\n").unwrap();
    let (report, statuses) = ingest(&kb);
    assert_eq!(
        (report.relabelled, report.chunks_written),
        (1, 0),
        "{report:?}"
    );
    assert!(
        statuses
            .iter()
            .any(|(p, s)| p.ends_with("bluebird.md") && *s == FileStatus::Relabelled)
    );
    let budget = "What is the budget ceiling of Project Bluebird?";
    assert!(!shows(
        &search(&kb, budget, 5, &principal("ann", &["finance"])),
        FINANCE_CANARY
    ));
    assert!(shows(
        &search(&kb, budget, 5, &principal("cy", &["hr"])),
        FINANCE_CANARY
    ));
    let entry = common::manifest(kb.config())
        .sources
        .into_iter()
        .find(|(s, _)| s.ends_with("bluebird.md"))
        .unwrap()
        .1;
    assert_eq!(entry.readers, ["group:hr"]);

    // The request's access comes first.
    let report = kb
        .ingest(
            std::slice::from_ref(&root),
            &IngestOptions {
                access: Some(grace::access::Readers::parse(&["user:dee"]).unwrap()),
                ..IngestOptions::default()
            },
            &mut |_| {},
        )
        .unwrap();
    assert_eq!(report.relabelled, 4, "{report:?}");
    assert!(search(&kb, "deploys", 5, &principal("bo", &[])).is_empty());
    assert!(!search(&kb, "deploys", 5, &principal("dee", &[])).is_empty());
    // And stays: a later ingest without it (a watch, a parent folder)
    // does not widen them again.
    let report = kb
        .ingest(
            std::slice::from_ref(&root),
            &IngestOptions::default(),
            &mut |_| {},
        )
        .unwrap();
    assert_eq!((report.relabelled, report.unchanged), (0, 4), "{report:?}");
    assert!(search(&kb, "deploys", 5, &principal("bo", &[])).is_empty());
}

#[test]
fn a_malformed_access_file_names_its_line_and_nothing_under_it_is_public() {
    let tmp = tempfile::tempdir().unwrap();
    let root = knowledge_base(tmp.path());
    let kb = common::open(common::config(&tmp.path().join("data")));
    kb.ingest(
        std::slice::from_ref(&root),
        &IngestOptions::default(),
        &mut |_| {},
    )
    .unwrap();
    std::fs::write(
        root.join("finance/.grace-access.yml"),
        "# who reads\nread: [group:finance\n",
    )
    .unwrap();
    let report = kb
        .ingest(
            std::slice::from_ref(&root),
            &IngestOptions::default(),
            &mut |_| {},
        )
        .unwrap();
    let skipped = report
        .skipped
        .iter()
        .find(|s| s.path.ends_with("bluebird.md"))
        .unwrap_or_else(|| panic!("{report:?}"));
    assert!(
        skipped.reason.contains(".grace-access.yml line 3")
            && skipped.reason.contains("flow sequence at line 2"),
        "{}",
        skipped.reason
    );
    // The document is out of the store for everyone, not served as public.
    let budget = "What is the budget ceiling of Project Bluebird?";
    assert!(!shows(
        &search(&kb, budget, 10, &ReadScope::All),
        FINANCE_CANARY
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_principals_key_opens_only_its_documents_over_http() {
    let tmp = tempfile::tempdir().unwrap();
    let root = knowledge_base(tmp.path());
    let data = tmp.path().join("data");
    let mut config = common::config(&data);
    config.server.api_key = "service-key".into();
    let grace = common::service(config);
    grace.ingest(vec![root], Default::default()).await.unwrap();
    let principals = Principals::open(&common::config(&data)).unwrap();
    let ann = principals.add_key("ann", &["finance".into()]).unwrap();
    let bo = principals.add_key("bo", &[]).unwrap();
    // Two reviewers: cy is also a principal of the hr group, dee is no
    // principal (a reviewer from before principals: reads everything).
    let cy_token = common::reviewer(grace.escalations(), "cy", "Cy");
    let dee_token = common::reviewer(grace.escalations(), "dee", "Dee");
    principals.add_key("cy", &["hr".into()]).unwrap();
    let server = common::serve(grace).await;
    let client = reqwest::Client::new();
    let post = |path: &str, key: &str, body: Value| {
        client
            .post(format!("{}{path}", server.base))
            .bearer_auth(key)
            .json(&body)
            .send()
    };
    let budget = "What is the budget ceiling of Project Bluebird?";
    for (key, may) in [
        (&ann.key, true),
        (&bo.key, false),
        (&"service-key".to_string(), true),
    ] {
        let found = post("/v1/search", key, json!({"query": budget, "limit": 5}))
            .await
            .unwrap();
        assert_eq!(found.status(), 200);
        let text = found.text().await.unwrap();
        assert_eq!(text.contains(FINANCE_CANARY), may, "{text}");
        let asked = post("/v1/ask", key, json!({"question": budget, "queue": false}))
            .await
            .unwrap();
        assert_eq!(asked.status(), 200);
        let text = asked.text().await.unwrap();
        assert_eq!(text.contains("4.2 million"), may, "{text}");
        if !may {
            assert!(
                !text.contains("Bluebird budget") && !text.contains("finance/"),
                "{text}"
            );
        }
        // The event stream too.
        let streamed = post(
            "/v1/ask",
            key,
            json!({"question": budget, "queue": false, "stream": true}),
        )
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
        assert_eq!(streamed.contains(FINANCE_CANARY), may, "{streamed}");
    }
    // A session is its principal's: another principal gets 404, as for
    // one that never was; a continued question too.
    let created: Value = post("/v1/sessions", &ann.key, json!({}))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let session = created["id"].as_str().unwrap().to_string();
    let asked = post(
        "/v1/ask",
        &ann.key,
        json!({"question": budget, "session_id": session, "queue": false}),
    )
    .await
    .unwrap();
    assert_eq!(asked.status(), 200);
    let url = format!("{}/v1/sessions/{session}", server.base);
    let read = |key: String| client.get(&url).bearer_auth(key).send();
    assert_eq!(read(ann.key.clone()).await.unwrap().status(), 200);
    let theirs = read(bo.key.clone()).await.unwrap();
    assert_eq!(theirs.status(), 404);
    assert!(!theirs.text().await.unwrap().contains(FINANCE_CANARY));
    let follow = post(
        "/v1/ask",
        &bo.key,
        json!({"question": "and for staging?", "session_id": session, "queue": false}),
    )
    .await
    .unwrap();
    assert_eq!(follow.status(), 404);
    let gone = client
        .delete(&url)
        .bearer_auth(&bo.key)
        .send()
        .await
        .unwrap();
    assert_eq!(gone.status(), 404);
    assert_eq!(read("service-key".into()).await.unwrap().status(), 200);
    // ann's question put to a person: the reviewer who may not read the
    // finance folder gets the escalation without what comes from it.
    let escalated: Value = post(
        "/v1/ask",
        &ann.key,
        json!({"question": budget, "escalate": true}),
    )
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    let id = escalated["review_id"]
        .as_i64()
        .unwrap_or_else(|| panic!("{escalated}"));
    // bo puts the same question to a person: it does not join ann's (an
    // answer drawn from the finance folder would reach bo).
    let theirs: Value = post(
        "/v1/ask",
        &bo.key,
        json!({"question": budget, "escalate": true}),
    )
    .await
    .unwrap()
    .json()
    .await
    .unwrap();

    let view = |token: String| {
        client
            .get(format!("{}/v1/review/escalations/{id}", server.base))
            .bearer_auth(token)
            .send()
    };
    let cy_view = view(cy_token.clone()).await.unwrap().text().await.unwrap();
    assert!(
        !cy_view.contains(FINANCE_CANARY) && !cy_view.contains("4.2 million"),
        "{cy_view}"
    );
    let cy_json: Value = serde_json::from_str(&cy_view).unwrap();
    assert!(cy_json["withheld"].as_u64().unwrap() > 0, "{cy_json}");
    let dee_view = view(dee_token.clone()).await.unwrap().text().await.unwrap();
    let bo_id = theirs["review_id"]
        .as_i64()
        .unwrap_or_else(|| panic!("{theirs}"));
    let bos: Value = client
        .get(format!("{}/v1/review/escalations/{bo_id}", server.base))
        .bearer_auth(&dee_token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(bos.get("joined_to").is_none(), "{bos}");
    assert!(dee_view.contains(FINANCE_CANARY), "{dee_view}");
    let listed = client
        .get(format!("{}/v1/review/escalations", server.base))
        .bearer_auth(&cy_token)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!listed.contains(FINANCE_CANARY), "{listed}");
    // The knowledge bases a principal may ask.
    let kbs: Value = client
        .get(format!("{}/v1/kbs", server.base))
        .bearer_auth(&bo.key)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(kbs, json!({"kbs": [{"name": "default", "review": false}]}));
    // A principal asks and searches; it does not ingest.
    let refused = post("/v1/ingest", &bo.key, json!({"paths": ["/tmp"]}))
        .await
        .unwrap();
    assert_eq!(refused.status(), 403);
    // Revoked, unknown, forged or huge: 401, never read as no key.
    Principals::open(&common::config(&data))
        .unwrap()
        .revoke("bo")
        .unwrap();
    // ann's key with its last digit changed.
    let last = if ann.key.ends_with('0') { '1' } else { '0' };
    let forged = format!("{}{last}", &ann.key[..ann.key.len() - 1]);
    for key in [bo.key.clone(), forged, format!("gk_{}", "f".repeat(64))] {
        let r = post("/v1/search", &key, json!({"query": "deploys"}))
            .await
            .unwrap();
        assert_eq!(r.status(), 401, "{key}");
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["error"]["type"], "unknown_key", "{body}");
    }
    let huge = format!("gk_{}", "a".repeat(10 << 20));
    // A key of 100 KB is no key (401); a header of 10 MB never reaches
    // GRACE: the HTTP layer refuses it whole (431) before anything reads it.
    let long = format!("gk_{}", "a".repeat(100 << 10));
    let r = post("/v1/search", &long, json!({"query": "deploys"}))
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    match post("/v1/search", &huge, json!({"query": "deploys"})).await {
        Ok(r) => assert_eq!(r.status(), 431),
        // Or it closes the connection while the header is still coming.
        Err(e) => assert!(e.is_request() || e.is_body(), "{e}"),
    }
    // The page's examples are made of public headings only.
    let examples = client
        .get(format!("{}/v1/examples", server.base))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        !examples.contains("Bluebird") && !examples.contains("Salary"),
        "{examples}"
    );
    // /metrics names no document and no principal.
    let metrics = client
        .get(format!("{}/metrics", server.base))
        .bearer_auth("service-key")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(metrics.contains("grace_"), "{metrics}");
    for named in [
        "bluebird", "finance", "salaries", "=\"ann\"", "=\"bo\"", "user:", "group:",
    ] {
        assert!(!metrics.contains(named), "{named} in /metrics");
    }
    // ... and is not a principal's to read.
    let refused = client
        .get(format!("{}/metrics", server.base))
        .bearer_auth(&ann.key)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 403);
    server.stop().await;
    // The audit log: who asked and searched, which documents, no text.
    let log = grace::audit::AuditLog::open(&common::config(&data)).unwrap();
    let anns = log.read(&|r| r.principal == "ann").unwrap();
    assert!(anns.iter().any(|r| {
        r.action == grace::audit::Action::Ask
            && r.documents
                .iter()
                .any(|d| d.contains("finance/bluebird.md"))
    }));
    assert!(
        anns.iter()
            .any(|r| r.action == grace::audit::Action::Search)
    );
    let views = log.read(&|r| r.principal == "reviewer:cy").unwrap();
    assert!(
        views
            .iter()
            .any(|r| r.action == grace::audit::Action::EscalationView && r.escalation == Some(id))
    );
    let text = std::fs::read_to_string(data.join("audit.log")).unwrap();
    assert!(
        !text.contains("budget ceiling") && !text.contains(FINANCE_CANARY),
        "{text}"
    );
}

#[test]
fn the_cli_issues_keys_once_and_answers_as_a_principal() {
    let tmp = tempfile::tempdir().unwrap();
    let root = knowledge_base(tmp.path());
    let dir = tmp.path();
    let run = |args: &[&str]| {
        let mut all = vec!["--data-dir", "data"];
        all.extend_from_slice(args);
        common::grace(dir, &all)
    };
    let ingested = run(&["ingest", root.to_str().unwrap()]);
    assert!(
        ingested.status.success(),
        "{}",
        common::output_text(&ingested)
    );
    // A group no principal is in: a warning, and nobody gains access.
    let text = common::output_text(&ingested);
    assert!(text.contains("no principal is in group finance"), "{text}");
    let added = run(&[
        "auth",
        "add-key",
        "ann",
        "--groups",
        "finance,audit",
        "--json",
    ]);
    assert!(added.status.success(), "{}", common::output_text(&added));
    let issued: Value = serde_json::from_slice(&added.stdout).unwrap();
    assert_eq!(issued["name"], "ann");
    assert_eq!(issued["groups"], json!(["audit", "finance"]));
    let key = issued["key"].as_str().unwrap();
    assert!(key.starts_with("gk_"));
    let listed = run(&["auth", "list"]);
    let listed = common::output_text(&listed);
    assert!(listed.contains("ann") && !listed.contains(key), "{listed}");
    assert!(run(&["auth", "add-key", "bo"]).status.success());

    let budget = "What is the budget ceiling of Project Bluebird?";
    let as_ann = run(&["search", budget, "--as", "ann"]);
    assert!(common::output_text(&as_ann).contains(FINANCE_CANARY));
    let as_bo = run(&["search", budget, "--as", "bo"]);
    assert!(as_bo.status.success());
    assert!(!common::output_text(&as_bo).contains(FINANCE_CANARY));
    let asked = run(&["ask", budget, "--as", "bo", "--no-input"]);
    let text = common::output_text(&asked);
    assert!(
        !text.contains("4.2 million") && !text.contains("Bluebird budget"),
        "{text}"
    );
    // The operator, without --as, reads everything.
    assert!(common::output_text(&run(&["search", budget])).contains(FINANCE_CANARY));
    // A name no principal has is an error, never everything.
    let nobody = run(&["search", budget, "--as", "nobody"]);
    assert_eq!(nobody.status.code(), Some(grace::EXIT_NOT_FOUND as i32));
    assert!(!common::output_text(&nobody).contains(FINANCE_CANARY));
    let revoked = run(&["auth", "revoke", "ann", "--json"]);
    let revoked: Value = serde_json::from_slice(&revoked.stdout).unwrap();
    assert_eq!(revoked["revoked"], 1);
    // Bad readers on the command line are refused before any work.
    let bad = run(&["ingest", root.to_str().unwrap(), "--access", "everyone"]);
    assert_eq!(bad.status.code(), Some(grace::EXIT_BAD_INPUT as i32));
}

/// `grace mcp` acts as `GRACE_PRINCIPAL`: what it may read, no ingest; a
/// name no principal has stops it before it serves anything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grace_mcp_acts_as_the_principal_it_is_started_for() {
    use rmcp::ServiceExt;
    use rmcp::model::CallToolRequestParams;
    use rmcp::transport::TokioChildProcess;
    let tmp = tempfile::tempdir().unwrap();
    let root = knowledge_base(tmp.path());
    let dir = tmp.path();
    let ingested = common::grace(
        dir,
        &["--data-dir", "data", "ingest", root.to_str().unwrap()],
    );
    assert!(
        ingested.status.success(),
        "{}",
        common::output_text(&ingested)
    );
    Principals::open(&common::config(&dir.join("data")))
        .unwrap()
        .add_key("bo", &[])
        .unwrap();

    let mut nobody = common::grace_cmd(dir, &["--data-dir", "data", "mcp"]);
    nobody.env("GRACE_PRINCIPAL", "nobody");
    let refused = common::with_input(nobody, "");
    assert_eq!(refused.status.code(), Some(grace::EXIT_NOT_FOUND as i32));
    assert!(common::output_text(&refused).contains("no principal `nobody`"));

    let mut cmd = common::grace_cmd(dir, &["--data-dir", "data", "mcp"]);
    cmd.env("GRACE_PRINCIPAL", "bo")
        .stderr(std::process::Stdio::null());
    let client =
        ().serve(TokioChildProcess::new(tokio::process::Command::from(cmd)).unwrap())
            .await
            .unwrap();
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert!(
        names.contains(&"ask") && !names.contains(&"ingest"),
        "{names:?}"
    );
    let budget = "What is the budget ceiling of Project Bluebird?";
    for (tool, args) in [
        ("ask", json!({"question": budget})),
        ("rag_search", json!({"query": budget, "limit": 10})),
    ] {
        let params = CallToolRequestParams::new(tool.to_string())
            .with_arguments(args.as_object().unwrap().clone());
        let r = client.call_tool(params).await.unwrap();
        let seen = serde_json::to_string(&r).unwrap();
        assert!(
            !seen.contains(FINANCE_CANARY) && !seen.contains("Bluebird budget"),
            "{tool}: {seen}"
        );
    }
    client.cancel().await.unwrap();
}

/// An identity provider's token (RS256 here; every algorithm and every
/// refusal is checked in `auth::jwt`'s unit tests) acts as the principal
/// it names, with its groups; a bad one is a 401 with its reason, never
/// anonymous.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jwt_acts_as_the_principal_it_names() {
    use jsonwebtoken::{Algorithm, EncodingKey, Header, encode};
    let tmp = tempfile::tempdir().unwrap();
    let root = knowledge_base(tmp.path());
    let mut config = common::config(&tmp.path().join("data"));
    config.server.api_key = "service-key".into();
    config.auth.jwt.issuer = "https://id.example".into();
    config.auth.jwt.audience = "grace".into();
    config.auth.jwt.jwks_file = common::repo().join("tests/fixtures/jwt/jwks.json");
    // rita reviews (a token's principal with the review role); every
    // answer escalates, for the review queue below.
    config.kbs.insert(
        "default".into(),
        grace::config::KbConfig {
            roles: grace::config::Roles {
                review: vec!["user:rita".into()],
                ..Default::default()
            },
            ..Default::default()
        },
    );
    config.confidence.thresholds.silent = 0.9995;
    config.confidence.thresholds.notify = 0.999;
    config.confidence.thresholds.confirm = 0.001;
    let grace = common::service(config);
    grace.ingest(vec![root], Default::default()).await.unwrap();
    let server = common::serve(grace).await;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let pem = std::fs::read(common::repo().join("tests/fixtures/jwt/rs256.pem")).unwrap();
    let key = EncodingKey::from_rsa_pem(&pem).unwrap();
    let token = |sub: &str, groups: &[&str], exp: u64| {
        let mut header = Header::new(Algorithm::RS256);
        header.kid = Some("rsa-1".into());
        let claims = json!({"iss": "https://id.example", "aud": "grace", "sub": sub,
                            "groups": groups, "exp": exp});
        encode(&header, &claims, &key).unwrap()
    };
    let client = reqwest::Client::new();
    let search = |token: String| {
        client
            .post(format!("{}/v1/search", server.base))
            .bearer_auth(token)
            .json(&json!({"query": "What is the budget ceiling of Project Bluebird?"}))
            .send()
    };
    let ann = search(token("ann", &["finance"], now + 600)).await.unwrap();
    assert_eq!(ann.status(), 200);
    assert!(ann.text().await.unwrap().contains(FINANCE_CANARY));
    let bo = search(token("bo", &[], now + 600)).await.unwrap();
    assert_eq!(bo.status(), 200);
    assert!(!bo.text().await.unwrap().contains(FINANCE_CANARY));
    let expired = search(token("ann", &["finance"], now - 3600))
        .await
        .unwrap();
    assert_eq!(expired.status(), 401);
    let body: Value = expired.json().await.unwrap();
    assert_eq!(body["error"]["type"], "expired", "{body}");

    // A token's principal reviewing reads escalations as that principal:
    // rita outside finance gets the question and a count of what is
    // withheld, inside finance the draft; bo, who does not review, a 404.
    let asked: Value = client
        .post(format!("{}/v1/ask", server.base))
        .bearer_auth("service-key")
        .json(&json!({"question": "What is the budget ceiling of Project Bluebird?"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(asked["review_id"].is_i64(), "{asked}");
    let queue = |token: String| {
        client
            .get(format!("{}/v1/review/escalations", server.base))
            .bearer_auth(token)
            .send()
    };
    let outside = queue(token("rita", &[], now + 600)).await.unwrap();
    assert_eq!(outside.status(), 200);
    let outside = outside.text().await.unwrap();
    assert!(
        outside.contains("Bluebird") && !outside.contains(FINANCE_CANARY),
        "{outside}"
    );
    assert!(outside.contains("\"withheld\""), "{outside}");
    let inside = queue(token("rita", &["finance"], now + 600)).await.unwrap();
    assert!(inside.text().await.unwrap().contains(FINANCE_CANARY));
    let me: Value = client
        .get(format!("{}/v1/review/me", server.base))
        .bearer_auth(token("rita", &[], now + 600))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(me["reviewer"], "rita", "{me}");
    let bo = queue(token("bo", &[], now + 600)).await.unwrap();
    assert_eq!(bo.status(), 404);
    server.stop().await;
}
