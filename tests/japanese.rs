//! Japanese end to end on the real embedded store and model: a
//! small Japanese knowledge base (`tests/fixtures/ja`) is ingested, searched
//! by its character bigrams, and answered with Japanese sentences that cite
//! their file; GRACE's own words follow the question's language. A
//! confident wrong answer is the worst outcome: a question the knowledge
//! base does not answer is never answered silently, in either language.

use crate::support::common;

use common::{grace, output_text, repo};
use serde_json::Value;

fn json(o: &std::process::Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", output_text(o)))
}

fn ingested() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let corpus = repo().join("tests/fixtures/ja");
    let o = grace(dir.path(), &["--quiet", "ingest", corpus.to_str().unwrap()]);
    assert!(o.status.success(), "{}", output_text(&o));
    dir
}

#[test]
fn japanese_passages_are_found_by_their_words_without_spaces() {
    let dir = ingested();
    for (question, file) in [
        ("設定ファイルごとパッケージを削除したい", "apt.md"),
        ("バックアップの保存期間は？", "backup.md"),
        ("固定IPアドレスの設定場所", "network.md"),
        // An identifier inside a Japanese sentence still counts.
        ("/etc/resolv.confには何を書く？", "network.md"),
    ] {
        let o = grace(dir.path(), &["--json", "search", question]);
        assert!(o.status.success(), "{}", output_text(&o));
        let hits = json(&o);
        let top = hits[0]["source"]
            .as_str()
            .unwrap_or_else(|| panic!("no passages: {hits}"));
        assert!(top.ends_with(file), "{question}: {top} first, not {file}");
    }
}

#[test]
fn a_japanese_question_gets_japanese_words_and_a_cited_japanese_sentence() {
    let dir = ingested();
    let o = grace(
        dir.path(),
        &["--json", "ask", "バックアップは何日分残りますか？"],
    );
    let run = json(&o);
    let answer = run["answer"]["text"].as_str().unwrap_or_default();
    assert!(
        answer.contains("バックアップ") && answer.contains("[1]"),
        "{run}"
    );
    let cited = run["answer"]["citations"][0]["source"]
        .as_str()
        .unwrap_or("");
    assert!(cited.ends_with("backup.md"), "{run}");

    // GRACE's own words to the asker (the first line: a caveat, an
    // escalation or a decline) in the asker's language, whatever it
    // decides. What goes to the reviewer and the closing status line stay
    // in English.
    let o = grace(dir.path(), &["ask", "美味しいカレーの作り方を教えて"]);
    let text = output_text(&o);
    let first = text.lines().next().unwrap_or_default();
    assert!(first.contains("確信度"), "{text}");
    let o = grace(dir.path(), &["ask", "How do I cook a good curry?"]);
    let text = output_text(&o);
    let first = text.lines().next().unwrap_or_default();
    assert!(
        first.contains("confidence") && !text.contains("確信度"),
        "{text}"
    );
}

#[test]
fn questions_the_japanese_knowledge_base_does_not_answer_are_never_answered_silently() {
    let dir = ingested();
    for question in [
        "美味しいカレーの作り方を教えて",
        "江戸幕府を開いたのは誰？",
        "Kubernetes のポッドを再起動するには？",
    ] {
        let run = json(&grace(dir.path(), &["--json", "ask", question]));
        assert_ne!(
            run["decision"], "answer",
            "{question}: answered silently at {}: {}",
            run["confidence"], run["answer"]["text"]
        );
    }
}
