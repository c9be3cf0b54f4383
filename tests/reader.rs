//! The answerability reader on the shipped model (`models/reader/`): it
//! loads, reads an answer as more answering than a passage that is merely
//! about the same thing, reorders a search when it disagrees with the
//! fusion, and a missing or corrupt model is an error when it is required
//! and a warning and reader-free scoring when it is `auto`.

use crate::support::common;

use std::path::Path;
use std::sync::Arc;

use grace::confidence::Factor;
use grace::config::{ReaderMode, Rerank};
use grace::exec::{Decision, Executor};
use grace::reader::{Reader, ReaderError};
use grace::tools::ToolRegistry;
use grace::{Config, KnowledgeBase};

fn shipped(mode: ReaderMode) -> Reader {
    let c = common::config(Path::new("unused"));
    Reader::new(mode, &c.reader, &c.embedding.runtime_path)
}

const QUESTION: &str = "How do I remove a package together with its configuration files?";
const ANSWER: &str = "To remove a package and also delete its configuration files, use \
    `apt purge NAME` (or `dpkg --purge NAME`). A plain `apt remove` leaves the \
    configuration files in /etc behind, so that reinstalling the package later keeps your settings.";
const NEIGHBOUR: &str = "Packages are installed with `apt install NAME`, which downloads the \
    package and the packages it depends on and unpacks their files. Configuration files of a \
    package are installed under /etc and are marked as conffiles.";
const UNRELATED: &str = "The office printers are on the second floor. To add a printer, open \
    the system settings and select the printer by its room number.";

#[test]
fn the_shipped_reader_reads_an_answer_above_a_neighbour_and_an_unrelated_passage() {
    let reader = shipped(ReaderMode::On);
    let p = reader
        .probabilities(QUESTION, &[ANSWER, NEIGHBOUR, UNRELATED])
        .unwrap()
        .expect("the reader is on");
    assert_eq!(p.len(), 3);
    assert!(p.iter().all(|p| (0.0..=1.0).contains(p)), "{p:?}");
    assert!(p[0] > p[1], "answer {} vs neighbour {}", p[0], p[1]);
    assert!(
        p[1] > p[2] || p[2] < 0.5,
        "unrelated passage read as answering: {p:?}"
    );
    assert!(p[0] > 0.5, "the answer is not read as answering: {p:?}");
    assert!(
        p[2] < 0.5,
        "an unrelated passage is read as answering: {p:?}"
    );
    // Same input, same output: the model is deterministic.
    let again = reader
        .probabilities(QUESTION, &[ANSWER, NEIGHBOUR, UNRELATED])
        .unwrap()
        .unwrap();
    assert_eq!(p, again);
}

/// A copy of the shipped model folder with `model.onnx` replaced by bytes
/// that are not a model.
fn corrupt_copy(dir: &Path) -> std::path::PathBuf {
    let src = common::repo().join("models/reader");
    let dst = dir.join("reader");
    std::fs::create_dir_all(&dst).unwrap();
    for entry in std::fs::read_dir(&src).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), dst.join(entry.file_name())).unwrap();
    }
    std::fs::write(dst.join("model.onnx"), b"not an ONNX model at all").unwrap();
    dst
}

#[test]
fn a_corrupt_model_is_an_error_when_on_and_reader_free_scoring_when_auto() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = common::config(dir.path());
    config.reader.model_dir = corrupt_copy(dir.path());

    let on = Reader::new(
        ReaderMode::On,
        &config.reader,
        &config.embedding.runtime_path,
    );
    let err = on.probabilities(QUESTION, &[ANSWER]).unwrap_err();
    assert!(matches!(err, ReaderError::Model { .. }), "{err:?}");
    assert!(err.to_string().contains("reader"), "{err}");

    // auto: the knowledge base answers without the reader.
    config.confidence.reader = ReaderMode::Auto;
    let kb = common::open(config.clone());
    kb.ingest(
        &[common::repo().join("examples/kb")],
        &Default::default(),
        &mut |_| {},
    )
    .unwrap();
    let kb = Arc::new(kb);
    let registry = ToolRegistry::from_config(&config, kb.clone()).unwrap();
    let report = Executor::new(&registry, &config, kb.scorer(), 5)
        .ask("How do I rotate an API key?", &mut |_| {})
        .unwrap();
    assert!(
        matches!(report.decision, Decision::Answer | Decision::Caveat),
        "{report:#?}"
    );
    let factors = &report.steps[0].result.factors;
    assert_eq!(factors.get(Factor::Reader), None);
    assert!(factors.get(Factor::MaxScore).is_some());

    // on: the same knowledge base refuses to search without its reader.
    config.confidence.reader = ReaderMode::On;
    drop(registry);
    drop(kb);
    let kb = common::open(config);
    let err = kb
        .search("How do I rotate an API key?", None, None)
        .unwrap_err();
    assert!(matches!(err, grace::Error::Reader(_)), "{err}");
}

#[test]
fn a_missing_model_file_is_named_and_exits_3() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = common::config(dir.path());
    config.reader.model_dir = dir.path().join("no-reader-here");
    let reader = Reader::new(
        ReaderMode::On,
        &config.reader,
        &config.embedding.runtime_path,
    );
    let err = grace::Error::from(reader.probabilities(QUESTION, &[ANSWER]).unwrap_err());
    assert!(err.to_string().contains("no-reader-here"), "{err}");
    assert_eq!(err.exit_code(), grace::EXIT_NOT_FOUND);
}

fn fixture_kb(data: &Path, rerank: Rerank) -> KnowledgeBase {
    let mut config: Config = common::config(data);
    config.confidence.reader = ReaderMode::On;
    config.search.rerank = rerank;
    // The reader reads exactly the passages returned (the tests ask for 4).
    config.search.rerank_depth = 4;
    let kb = common::open(config);
    kb.ingest(
        &[
            common::repo().join("tests/fixtures/reader"),
            common::repo().join("examples/kb"),
        ],
        &Default::default(),
        &mut |_| {},
    )
    .unwrap();
    kb
}

fn names(passages: &[grace::Passage]) -> Vec<String> {
    passages
        .iter()
        .map(|p| {
            Path::new(&p.source)
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect()
}

#[test]
fn reranking_changes_the_order_when_the_reader_disagrees_with_the_fusion() {
    let question = "How long are backups kept?";
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let fused = fixture_kb(a.path(), Rerank::None)
        .search(question, Some(4), None)
        .unwrap();
    let reranked = fixture_kb(b.path(), Rerank::Reader)
        .search(question, Some(4), None)
        .unwrap();
    // Without reranking the reader still reads (for confidence), and the
    // fused order stays; here it disagrees with the reader.
    let fused_scores: Vec<f32> = fused.iter().map(|p| p.reader_score.unwrap()).collect();
    assert!(
        fused_scores.windows(2).any(|w| w[0] < w[1]),
        "the fusion already agrees with the reader: {fused_scores:?}"
    );
    // Reranked: the same passages, by the reader's probability.
    let scores: Vec<f32> = reranked.iter().map(|p| p.reader_score.unwrap()).collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");
    assert_ne!(names(&fused), names(&reranked));
    let mut sorted = names(&fused);
    sorted.sort();
    let mut again = names(&reranked);
    again.sort();
    assert_eq!(sorted, again);
    // Whether the reader's order is the better one is measured, not
    // asserted here: with the fusion fitted on users' own words the page that says how
    // long snapshots are kept is already first, and the small reader
    // GRACE ships (off by default) puts the overview above it
    // (models/reader/MODEL_CARD.md).
}

#[test]
fn a_passage_gets_the_same_reader_score_whatever_passages_are_beside_it() {
    let reader = shipped(ReaderMode::On);
    let alone = reader.probabilities(QUESTION, &[ANSWER]).unwrap().unwrap();
    let beside = reader
        .probabilities(QUESTION, &[UNRELATED, ANSWER, NEIGHBOUR])
        .unwrap()
        .unwrap();
    assert_eq!(alone[0], beside[1]);
}

/// `models/reader/decision.json`, written by `scripts/reader-decision`.
#[derive(serde::Deserialize)]
struct Decided {
    model_sha256: String,
    sets: Vec<SetDecided>,
    keep_on: bool,
}

#[derive(serde::Deserialize)]
struct SetDecided {
    set: String,
    off: Measured,
    on: Measured,
    passes: bool,
}

#[derive(serde::Deserialize)]
struct Measured {
    auroc_in_domain: f64,
    answered_right: f64,
}

#[test]
fn the_readers_default_follows_the_measured_rule() {
    // Measured in users' own words (debian-faq-paraphrased, and GRACE's own
    // dev split beside it) by scripts/reader-decision for the model that
    // ships: on by default only if, on every set, it raises the in-domain
    // AUROC by at least 0.03 and does not lower the share of right answers.
    let dir = common::repo().join("models/reader");
    let text = std::fs::read_to_string(dir.join("decision.json")).unwrap();
    let d: Decided = serde_json::from_str(&text).unwrap();
    let model = std::fs::read(dir.join("model.onnx")).unwrap();
    assert_eq!(
        d.model_sha256,
        grace::durable::hex(&<sha2::Sha256 as sha2::Digest>::digest(&model)),
        "decision.json was measured on another model: run scripts/reader-decision"
    );
    assert!(
        d.sets
            .iter()
            .any(|s| s.set.ends_with("debian-faq-paraphrased")),
        "the rule is measured on debian-faq-paraphrased"
    );
    let mut why = Vec::new();
    for s in &d.sets {
        let gain = s.on.auroc_in_domain - s.off.auroc_in_domain;
        // The script rounds the gain to 4 places before comparing.
        let passes =
            (gain * 1e4).round() / 1e4 >= 0.03 && s.on.answered_right >= s.off.answered_right;
        assert_eq!(
            s.passes, passes,
            "{}: decision.json contradicts its figures",
            s.set
        );
        why.push(format!(
            "{}: in-domain AUROC {:.3} -> {:.3}, right answers {:.3} -> {:.3}",
            s.set,
            s.off.auroc_in_domain,
            s.on.auroc_in_domain,
            s.off.answered_right,
            s.on.answered_right
        ));
    }
    let earns_its_place = d.sets.iter().all(|s| s.passes);
    assert_eq!(
        d.keep_on, earns_its_place,
        "decision.json contradicts its own figures"
    );
    let default = Config::default();
    if earns_its_place {
        assert_ne!(default.confidence.reader, ReaderMode::Off);
    } else {
        assert_eq!(
            default.confidence.reader,
            ReaderMode::Off,
            "the reader is on by default though it did not earn it: {}",
            why.join("; ")
        );
        assert_eq!(default.search.rerank, Rerank::None);
    }
}

/// The number of passages asked for is checked before the depth to rerank
/// replaces it: 0 (which the depth would hide) and one past the most are
/// refused, reranked or not.
#[test]
fn a_search_for_no_passages_or_too_many_is_refused_reranked_or_not() {
    for rerank in [Rerank::None, Rerank::Reader] {
        let dir = tempfile::tempdir().unwrap();
        let kb = fixture_kb(dir.path(), rerank);
        for limit in [0, grace::config::MAX_SEARCH_LIMIT + 1] {
            let err = kb
                .search("How long are backups kept?", Some(limit), None)
                .unwrap_err();
            assert!(
                matches!(err, grace::Error::InvalidInput(_)),
                "{rerank:?}, {limit}: {err}"
            );
            assert!(err.to_string().contains("1..=1000"), "{err}");
        }
    }
}
