//! Self-calibration as a user meets it: GRACE builds its own questions from
//! the knowledge base (never from an evaluation set's `questions.jsonl`),
//! withholds a section to ask what it cannot answer, fits, keeps the fit in
//! the data folder, uses it, reports it in `grace status` and fits again
//! when enough of the knowledge base changed. A confident wrong answer is
//! the worst outcome: these questions are how GRACE learns, on the user's
//! own documents, how often its confident answers are wrong.

use crate::support;
use crate::support::common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::{grace_cmd, output_text};
use grace::selfcal::questions::Origin;
use grace::selfcal::questions::{content_words, from_heading};
use grace::selfcal::sections::read_sections;
use grace::selfcal::{Kind, out_of_domain_questions, plan, plan_with};
use grace::tools::{RagSearch, Tool, ToolOutput, Withheld};
use grace::{KnowledgeBase, OpenMode};
use support::mock_llm::{Mode, Provider, ScriptedModel, Turn};

/// The debian-faq set's corpus alone, copied into `dir`: what self-calibration
/// may see. Its `questions.jsonl` stays behind.
fn corpus_copy(dir: &Path, first: usize, count: usize) -> PathBuf {
    let from = common::eval_sets().join("debian-faq/corpus");
    let mut names: Vec<PathBuf> = std::fs::read_dir(&from)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    let to = dir.join("corpus");
    std::fs::create_dir_all(&to).unwrap();
    for path in names.iter().skip(first).take(count) {
        std::fs::copy(path, to.join(path.file_name().unwrap())).unwrap();
    }
    to
}

fn small_fit_config(data: &Path) -> grace::Config {
    let mut config = common::config(data);
    let sc = &mut config.confidence.self_calibration;
    sc.min_sections = 10;
    sc.questions = 30;
    config
}

fn ingested(data: &Path, corpus: &Path) -> Arc<KnowledgeBase> {
    let kb =
        KnowledgeBase::with_embedder(small_fit_config(data), common::embedder(), OpenMode::Create)
            .unwrap();
    kb.ingest(&[corpus.to_path_buf()], &Default::default(), &mut |_| {})
        .unwrap();
    Arc::new(kb)
}

/// The whole sample corpus copied under `dir` and ingested into
/// `dir/data`.
fn whole_corpus(dir: &Path) -> Arc<KnowledgeBase> {
    let corpus = corpus_copy(dir, 0, usize::MAX);
    ingested(&dir.join("data"), &corpus)
}

#[test]
fn questions_are_built_from_the_corpus_never_read_from_the_question_set() {
    let dir = tempfile::tempdir().unwrap();
    let kb = whole_corpus(dir.path());
    let (plan, enough) = plan(&kb).unwrap();
    assert!(enough, "{} usable sections", plan.usable);

    let sections = read_sections(kb.store()).unwrap();
    let general = out_of_domain_questions();
    let mut from_text_count = 0;
    for item in &plan.items {
        match item.kind {
            Kind::Answerable | Kind::InDomain => {
                // Reproducible from its own section's heading or text.
                let (source, heading) = &item.gold[0];
                let s = sections
                    .iter()
                    .find(|s| &s.source == source && &s.section == heading)
                    .expect("the gold section is in the collection");
                let by_heading = from_heading(&s.section).map(|q| q.0);
                // A question from the text is made of that text's words.
                let words = content_words(&s.text, &[]);
                let asked = content_words(&item.question, &[]);
                let from_its_text = asked.len() >= 3 && asked.iter().all(|w| words.contains(w));
                assert!(
                    by_heading.as_deref() == Some(item.question.as_str()) || from_its_text,
                    "{:?} is not built from {source} > {heading}",
                    item.question
                );
                if from_its_text {
                    from_text_count += 1;
                }
            }
            Kind::OutOfDomain => assert!(general.contains(&item.question.as_str())),
        }
    }
    assert!(
        from_text_count > 0,
        "some questions come from the sections' text, which no question set holds"
    );

    // The same seed gives the same questions; another seed others.
    assert_eq!(grace::selfcal::plan(&kb).unwrap().0, plan);
}

#[test]
fn in_domain_negatives_withhold_their_section_and_its_near_duplicates() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = corpus_copy(dir.path(), 0, 40);
    let kb = ingested(&dir.path().join("data"), &corpus);
    let (plan, _) = plan(&kb).unwrap();
    let negatives: Vec<_> = plan
        .items
        .iter()
        .filter(|i| i.kind == Kind::InDomain)
        .collect();
    assert!(!negatives.is_empty());
    let withheld = Withheld::default();
    let tool = RagSearch::withholding(kb.clone(), 10, withheld.clone());
    let mut found_when_present = 0;
    for item in &negatives {
        let is_gold = |p: &grace::Passage| {
            item.gold
                .iter()
                .any(|(s, h)| *s == p.source && *h == p.section)
        };
        let passages = |tool: &RagSearch| -> Vec<grace::Passage> {
            match tool
                .execute(
                    &serde_json::json!({ "query": item.question }),
                    &grace::access::ReadScope::All,
                )
                .unwrap()
                .output
            {
                ToolOutput::Passages(p) => p,
                other => panic!("{other:?}"),
            }
        };
        withheld.set(Vec::new());
        if passages(&tool).iter().any(is_gold) {
            found_when_present += 1;
        }
        withheld.set(item.withheld.clone());
        let hits = passages(&tool);
        assert!(!hits.is_empty(), "the rest of the collection still answers");
        assert!(
            !hits.iter().any(is_gold),
            "{:?}: its section came back while withheld",
            item.question
        );
        assert!(hits.iter().all(|p| !item.withheld.contains(&p.id)));
    }
    assert!(
        found_when_present * 2 >= negatives.len(),
        "present, most sections are found by their own question ({found_when_present} of {})",
        negatives.len()
    );
}

fn grace(data: &Path, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = grace_cmd(data.parent().unwrap(), args);
    cmd.env("GRACE_STORAGE__DATA_DIR", data)
        .env("GRACE_CONFIDENCE__SELF_CALIBRATION__MODE", "auto")
        .env("GRACE_CONFIDENCE__SELF_CALIBRATION__MIN_SECTIONS", "10")
        .env("GRACE_CONFIDENCE__SELF_CALIBRATION__QUESTIONS", "20")
        // One embedding thread: the same factors, to the last bit, on every run.
        .env("GRACE_EMBEDDING__THREADS", "1");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", output_text(&out));
    out
}

fn status(data: &Path, env: &[(&str, &str)]) -> serde_json::Value {
    let out = grace(data, &["status", "--json"], env);
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    status["confidence"].clone()
}

fn fit_file(data: &Path) -> PathBuf {
    data.join("self-calibration/grace.json")
}

#[test]
fn a_fit_is_made_used_reported_kept_fresh_and_reproducible() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let all = corpus_copy(&dir.path().join("all"), 0, usize::MAX);
    let mut names: Vec<PathBuf> = std::fs::read_dir(&all)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    let folder = |range: std::ops::Range<usize>, name: &str| -> String {
        let to = dir.path().join(name);
        std::fs::create_dir_all(&to).unwrap();
        for p in &names[range] {
            std::fs::copy(p, to.join(p.file_name().unwrap())).unwrap();
        }
        to.to_string_lossy().into_owned()
    };

    // A first ingest of 30 documents fits (auto).
    let out = grace(&data, &["ingest", &folder(0..30, "a")], &[]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("self-calibrated on"),
        "{}",
        output_text(&out)
    );
    let first = std::fs::read_to_string(fit_file(&data)).unwrap();
    let c = status(&data, &[]);
    assert_eq!(c["weights"], "self", "{c}");
    assert_eq!(c["fit"]["changed_share"], 0.0);
    assert_eq!(c["fit"]["stale"], false);

    // Fitting again with the same seed gives the same file, but for when
    // it was made and how long it took.
    let without_time = |text: &str| {
        let mut v: serde_json::Value = serde_json::from_str(text).unwrap();
        v["created"] = serde_json::Value::Null;
        v["self_calibration"]["seconds"] = serde_json::Value::Null;
        v
    };
    grace(&data, &["calibrate", "--self", "--json"], &[]);
    let again = std::fs::read_to_string(fit_file(&data)).unwrap();
    assert_eq!(without_time(&again), without_time(&first));

    // A small ingest (2 of 32 documents) does not fit again ...
    grace(&data, &["ingest", &folder(30..32, "b")], &[]);
    assert_eq!(std::fs::read_to_string(fit_file(&data)).unwrap(), again);
    let c = status(&data, &[]);
    assert_eq!(c["fit"]["changed_share"], 2.0 / 32.0);
    assert_eq!(c["fit"]["stale"], false);

    // ... a large one (14 of 46) does.
    let out = grace(&data, &["ingest", &folder(32..46, "c")], &[]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("self-calibrated on"),
        "{}",
        output_text(&out)
    );
    assert_ne!(std::fs::read_to_string(fit_file(&data)).unwrap(), again);
    assert_eq!(status(&data, &[])["fit"]["changed_share"], 0.0);

    // Changed past the refit share without a refit (one allowed to lag):
    // status says the fit is stale.
    grace(
        &data,
        &["ingest", &folder(46..60, "d")],
        &[("GRACE_CONFIDENCE__SELF_CALIBRATION__REFIT_SHARE", "1.0")],
    );
    let c = status(&data, &[]);
    assert_eq!(c["fit"]["stale"], true, "{c}");
    let out = grace(&data, &["status"], &[]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("stale"),
        "{}",
        output_text(&out)
    );

    // With self-calibration off (the default), the configured weights
    // score, and nothing is fitted on ingest.
    let off = [("GRACE_CONFIDENCE__SELF_CALIBRATION__MODE", "off")];
    assert_eq!(status(&data, &off)["weights"], "configured");
    let before = std::fs::read_to_string(fit_file(&data)).unwrap();
    let out = grace(&data, &["ingest", &folder(60..75, "e")], &off);
    assert!(!String::from_utf8_lossy(&out.stderr).contains("self-calibrat"));
    assert_eq!(std::fs::read_to_string(fit_file(&data)).unwrap(), before);
}

#[test]
fn a_corrupt_fit_is_a_warning_and_the_configured_weights() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let corpus = corpus_copy(dir.path(), 0, 12);
    grace(
        &data,
        &["ingest", corpus.to_str().unwrap()],
        &[("GRACE_CONFIDENCE__SELF_CALIBRATION__MODE", "off")],
    );
    std::fs::create_dir_all(fit_file(&data).parent().unwrap()).unwrap();
    std::fs::write(fit_file(&data), "{ not json").unwrap();

    let c = status(&data, &[]);
    assert_eq!(c["weights"], "configured");
    let note = c["note"].as_str().unwrap();
    assert!(
        note.contains("grace.json") && note.contains("not valid"),
        "{note}"
    );

    let out = grace_cmd(dir.path(), &["ask", "What is Debian?", "--json"])
        .env("GRACE_STORAGE__DATA_DIR", &data)
        .env("GRACE_CONFIDENCE__SELF_CALIBRATION__MODE", "auto")
        .output()
        .unwrap();
    // Answered (0) or not (4), but scored.
    assert!(
        matches!(out.status.code(), Some(0 | 4)),
        "{}",
        output_text(&out)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("not valid"), "{stderr}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(report["confidence"].as_f64().is_some());

    // A labelled calibration that is broken is an error naming the key.
    let out = grace_cmd(dir.path(), &["ask", "What is Debian?"])
        .env("GRACE_STORAGE__DATA_DIR", &data)
        .env("GRACE_CONFIDENCE__CALIBRATION", fit_file(&data))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", output_text(&out));
    assert!(output_text(&out).contains("confidence.calibration"));
}

#[test]
fn a_knowledge_base_too_small_keeps_the_defaults_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let sample = common::repo().join("examples/kb");
    let out = grace_cmd(dir.path(), &["ingest", sample.to_str().unwrap()])
        .env("GRACE_STORAGE__DATA_DIR", &data)
        .env("GRACE_CONFIDENCE__SELF_CALIBRATION__MODE", "auto")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", output_text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("too small to self-calibrate"),
        "{}",
        output_text(&out)
    );
    let out = grace_cmd(dir.path(), &["calibrate", "--self"])
        .env("GRACE_STORAGE__DATA_DIR", &data)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", output_text(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("too small") && text.contains("min_sections"),
        "{text}"
    );
    assert!(!fit_file(&data).exists());
}

#[test]
fn a_language_model_writes_the_questions_and_unusable_replies_keep_the_patterns() {
    let dir = tempfile::tempdir().unwrap();
    let kb = whole_corpus(dir.path());
    let (patterns, enough) = plan(&kb).unwrap();
    assert!(enough);
    let sampled = patterns
        .items
        .iter()
        .filter(|i| i.kind == Kind::Answerable)
        .count();
    // One reply in three is a question in a user's words; the others are
    // prose (no question) and a safety stop: those sections keep the
    // question the patterns built. Spare turns in case a sampled section
    // had no pattern question.
    let script: Vec<Turn> = (0..sampled + 10)
        .map(|i| match i % 3 {
            0 => Turn::raw(&format!("1. \"How would I fix problem {i}?\"")),
            1 => Turn::raw("Sure, here is a question about the section."),
            _ => Turn::Safety,
        })
        .collect();
    let model = ScriptedModel::start(Provider::Gemini, Mode::Native, script);
    let llm = model.client();
    let (written, enough) = plan_with(&kb, Some(llm.as_ref())).unwrap();
    assert!(enough);

    let answerable: Vec<_> = written
        .items
        .iter()
        .filter(|i| i.kind == Kind::Answerable)
        .collect();
    assert_eq!(answerable.len(), sampled, "the same sections are sampled");
    let mut by_model = 0;
    for (i, (item, pattern)) in answerable
        .iter()
        .zip(patterns.items.iter().filter(|i| i.kind == Kind::Answerable))
        .enumerate()
    {
        assert_eq!(item.gold, pattern.gold, "question {i}: the same section");
        if i % 3 == 0 {
            assert_eq!(item.question, format!("How would I fix problem {i}?"));
            assert_eq!(item.origin, Some(Origin::Model));
            by_model += 1;
        } else {
            assert_eq!(item.question, pattern.question, "question {i} fell back");
            assert_ne!(item.origin, Some(Origin::Model));
        }
    }
    assert!(by_model >= 10, "{by_model} written by the model");
    // The withheld-section questions are the written ones again.
    let in_domain: Vec<_> = written
        .items
        .iter()
        .filter(|i| i.kind == Kind::InDomain)
        .collect();
    assert_eq!(in_domain[0].question, answerable[0].question);

    // The model read the section it was asked about, and the rules.
    let sections = read_sections(kb.store()).unwrap();
    let first = &answerable[0].gold[0];
    let section = sections
        .iter()
        .find(|s| s.source == first.0 && s.section == first.1)
        .unwrap();
    let prompt = model.turn_text(0, 0);
    assert!(prompt.contains("Write the question in English"), "{prompt}");
    let opening: String = section.text.chars().take(40).collect();
    assert!(prompt.contains(&opening), "{prompt}");
    assert!(model.system_text(0).contains("ONE question"));
}
