//! Identifiers decide: on a knowledge base with one page per error code, a
//! question naming a code gets that code's page first (exact matches are
//! pinned above pages that only resemble the question), and a question
//! naming a code that has no page is not answered confidently. Answering a
//! question about E0399 from E0392's page would be a confident wrong
//! answer, the worst outcome GRACE can produce.

use crate::support::common;

use std::path::Path;
use std::sync::Arc;

use grace::confidence::Factor;
use grace::exec::{Decision, Executor, RunReport};
use grace::tools::ToolRegistry;
use grace::{Config, KnowledgeBase};

fn error_index(data: &Path, pin: bool) -> Arc<KnowledgeBase> {
    let mut config = common::config(data);
    config.search.pin_identifiers = pin;
    let kb = common::open(config);
    kb.ingest(
        &[common::repo().join("tests/fixtures/error-index")],
        &grace::ingest::IngestOptions::default(),
        &mut |_| {},
    )
    .unwrap();
    Arc::new(kb)
}

fn file_name(source: &str) -> String {
    Path::new(source)
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

fn ask(kb: &Arc<KnowledgeBase>, config: &Config, q: &str) -> RunReport {
    let registry = ToolRegistry::from_config(config, kb.clone()).unwrap();
    Executor::new(&registry, config, kb.scorer(), 5)
        .ask(q, &mut |_| {})
        .unwrap()
}

#[test]
fn the_page_of_the_asked_code_comes_first() {
    let data = tempfile::tempdir().unwrap();
    let kb = error_index(data.path(), true);
    for code in ["E0390", "E0392", "E0393", "E0395"] {
        let passages = kb
            .search(&format!("Why does the compiler report {code}?"), None, None)
            .unwrap();
        assert_eq!(
            file_name(&passages[0].source),
            format!("{code}.md"),
            "{code}: {:?}",
            passages.iter().map(|p| &p.source).collect::<Vec<_>>()
        );
        assert!(passages[0].pinned);
        assert!(passages[1..].iter().all(|p| !p.pinned));
    }
}

#[test]
fn an_exact_identifier_match_stays_first_in_users_words() {
    // Asked the way people ask, with their own numbers and flags around
    // the code: the code's page still comes first, and the asker's "3am"
    // or "-j8" pin nothing.
    let data = tempfile::tempdir().unwrap();
    let kb = error_index(data.path(), true);
    for (code, q) in [
        (
            "E0392",
            "my nightly build at 3am broke with E0392 after I added a generic param to a struct, what now?",
        ),
        (
            "E0390",
            "cargo build -j8 keeps failing on E0390 when I write an impl block for a primitive type",
        ),
    ] {
        let passages = kb.search(q, None, None).unwrap();
        assert_eq!(
            file_name(&passages[0].source),
            format!("{code}.md"),
            "{q}: {:?}",
            passages.iter().map(|p| &p.source).collect::<Vec<_>>()
        );
        assert!(passages[0].pinned, "{q}");
        assert!(passages[1..].iter().all(|p| !p.pinned), "{q}");
    }
}

#[test]
fn pinning_can_be_turned_off() {
    let data = tempfile::tempdir().unwrap();
    let kb = error_index(data.path(), false);
    let passages = kb
        .search("Why does the compiler report E0392?", None, None)
        .unwrap();
    assert!(passages.iter().all(|p| !p.pinned));
}

#[test]
fn an_answer_resting_on_a_page_without_the_asked_code_is_not_confident() {
    let data = tempfile::tempdir().unwrap();
    let kb = error_index(data.path(), true);
    let config = kb.config().clone();

    let known = ask(&kb, &config, "Why does the compiler report E0392?");
    let search = &known.steps[0].result.factors;
    assert_eq!(search.get(Factor::IdentifierCoverage), Some(1.0));

    // No page for E0399: whatever passage comes first does not say E0399.
    let unknown = ask(&kb, &config, "Why does the compiler report E0399?");
    let search = &unknown.steps[0].result.factors;
    assert_eq!(search.get(Factor::IdentifierCoverage), Some(0.0));
    assert_ne!(
        unknown.decision,
        Decision::Answer,
        "a confident answer to a question about a code the knowledge base does not have: {unknown:#?}"
    );
    assert!(
        unknown.confidence < known.confidence,
        "unknown code {} vs known code {}",
        unknown.confidence,
        known.confidence
    );
    assert!(unknown.confidence < config.confidence.thresholds.notify);
}

#[test]
fn hostile_text_in_documents_and_questions_is_searched_not_crashed_on() {
    // Before the fix, `é.()` in a document killed ingest half way (after
    // the file's old points were deleted) and in a question made search
    // answer 500; pinning and identifier coverage read both texts.
    let data = tempfile::tempdir().unwrap();
    let docs = tempfile::tempdir().unwrap();
    std::fs::write(
        docs.path().join("unicode.md"),
        "# Ünïcödé\n\nCall résumé.() or naïve.init() before E0392. 日本語のテキスト e\u{301}.() \
         שלום עולם مرحبا 😀👍🏽 and ǅ.x() with --flag-ü.\n",
    )
    .unwrap();
    let kb = common::open(common::config(data.path()));
    let report = kb
        .ingest(
            &[docs.path().to_path_buf()],
            &grace::ingest::IngestOptions::default(),
            &mut |_| {},
        )
        .unwrap();
    assert_eq!(report.points_total, 1, "{report:?}");
    let kb = Arc::new(kb);
    for q in [
        "What does résumé.() do?",
        "é.() E0392 日本.() 😀 --flag-ü",
        "שלום e\u{301}.() ǅ.x()",
        "\u{0}\u{200f}(.()",
    ] {
        let passages = kb.search(q, None, None).unwrap();
        assert!(!passages.is_empty(), "{q}");
        let r = ask(&kb, kb.config(), q);
        assert!(r.steps[0].result.success, "{q}: {r:#?}");
    }
    // The document names E0392, so a question about it pins the document.
    let passages = kb.search("What is é.() E0392?", None, None).unwrap();
    assert!(passages[0].pinned);
}

#[test]
fn a_huge_result_count_is_refused_not_allocated() {
    let data = tempfile::tempdir().unwrap();
    let kb = error_index(data.path(), true);
    // 10^12 passages used to reach an allocation of 176 TB and abort.
    let err = kb
        .search("Why E0392?", Some(1_000_000_000_000), None)
        .unwrap_err();
    assert!(matches!(err, grace::Error::InvalidInput(_)), "{err}");
    assert!(err.to_string().contains("1..=1000"), "{err}");
    assert_eq!(err.exit_code(), grace::EXIT_BAD_INPUT);
    assert_eq!(kb.search("Why E0392?", Some(1000), None).unwrap().len(), 6);
    // The CLI says so and exits 2.
    drop(kb);
    let dir = data.path().to_str().unwrap();
    let out = common::grace(
        data.path(),
        &["--data-dir", dir, "search", "-k", "1000000000000", "E0392"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", common::output_text(&out));
    assert!(common::output_text(&out).contains("1..=1000"));
}
