//! The gap report's two goals, measured.
//!
//! ```text
//! cargo run --release --example gap_study -- missing SET_DIR PREFIX [--others N]
//! cargo run --release --example gap_study -- timing SET_DIR... [--questions N] [--unrelated]
//! ```
//!
//! `missing`: the set's corpus is ingested without the documents whose
//! names start with PREFIX (one section of the knowledge base), then up to
//! 30 questions whose gold source is in that section and N others (200;
//! a seeded sample) are asked through the service as people would, in a
//! seeded order. An answer that cites no gold source is rated down, as its
//! asker would; then the gap report is made. Printed: how many of the
//! section's questions the top group holds (goal: at least 80%), and the
//! top groups.
//!
//! `timing`: N (5,000) escalated runs are recorded with real question
//! embeddings (the sets' questions, repeated with a little noise to reach
//! N; with `--unrelated`, random directions instead: the worst case, no
//! two alike), and the report over them is timed (median of 5; goal:
//! under 5 s).
//! The report reads only the feedback store, never the knowledge base, so
//! its size does not enter.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use grace::config::Config;
use grace::embed::{Embedder, FastEmbedder};
use grace::exec::Decision;
use grace::feedback::{Asker, FeedbackStore, Rating, RecordedRun, Vote};
use grace::service::AskOptions;
use grace_eval::load_questions;

type Error = Box<dyn std::error::Error>;

fn config(data: &Path) -> Config {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut config = Config::default();
    config.storage.data_dir = data.to_path_buf();
    config.embedding.model_dir = repo.join("models/minilm");
    config.embedding.runtime_path = repo.join("models/libonnxruntime.so");
    config.feedback.max_ratings_per_hour = 1_000_000;
    config
}

/// A seeded shuffle (xorshift), so that runs are repeatable.
fn shuffle<T>(items: &mut [T], mut seed: u64) {
    for i in (1..items.len()).rev() {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        items.swap(i, (seed % (i as u64 + 1)) as usize);
    }
}

fn flag(args: &[String], name: &str, default: usize) -> Result<usize, Error> {
    match args.iter().position(|a| a == name) {
        Some(i) => Ok(args.get(i + 1).ok_or("a flag needs a value")?.parse()?),
        None => Ok(default),
    }
}

fn missing(args: &[String]) -> Result<(), Error> {
    let dir = PathBuf::from(args.first().ok_or("missing SET_DIR PREFIX")?);
    let prefix = args.get(1).ok_or("missing SET_DIR PREFIX")?;
    let others = flag(args, "--others", 200)?;
    let work = tempfile::tempdir()?;
    let corpus = work.path().join("corpus");
    std::fs::create_dir_all(&corpus)?;
    let mut removed = 0;
    for entry in std::fs::read_dir(dir.join("corpus"))? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().to_string();
        if name.starts_with(prefix.as_str()) {
            removed += 1;
        } else {
            std::fs::copy(entry.path(), corpus.join(&name))?;
        }
    }
    let questions = load_questions(&dir.join("questions.jsonl"))?;
    let in_section = |q: &grace_eval::Question| {
        q.gold_sources
            .iter()
            .any(|g| g.starts_with(prefix.as_str()))
    };
    let mut target: Vec<_> = questions.iter().filter(|q| in_section(q)).collect();
    let mut rest: Vec<_> = questions.iter().filter(|q| !in_section(q)).collect();
    shuffle(&mut target, 7);
    shuffle(&mut rest, 11);
    target.truncate(30);
    rest.truncate(others);
    let mut asked: Vec<(&grace_eval::Question, bool)> = target
        .iter()
        .map(|q| (*q, true))
        .chain(rest.iter().map(|q| (*q, false)))
        .collect();
    shuffle(&mut asked, 13);
    println!(
        "{}: {removed} documents starting with {prefix:?} removed; {} of their questions among {} others",
        dir.display(),
        target.len(),
        rest.len()
    );

    let grace = grace::Grace::open(config(&work.path().join("data")))?;
    grace.ingest_blocking(&[corpus], &Default::default(), &mut |_| {})?;
    let mut section_unmet = 0;
    for (n, (q, _)) in asked.iter().enumerate() {
        let options = AskOptions {
            asker: format!("asker{n}"),
            ..AskOptions::default()
        };
        let outcome = grace.ask_blocking(
            &q.question,
            &options,
            Arc::new(AtomicBool::new(false)),
            &mut |_| {},
        )?;
        let report = &outcome.report;
        let answered = matches!(report.decision, Decision::Answer | Decision::Caveat);
        let right = report
            .cited_sources()
            .iter()
            .any(|s| q.gold_sources.iter().any(|g| s.ends_with(g.as_str())));
        if answered
            && !right
            && let Some(id) = &outcome.answer_id
        {
            let down = Rating {
                vote: Vote::Down,
                reason: None,
                text: None,
            };
            grace.rate_blocking(id, &Asker::named(&options.asker)?, &down)?;
        }
        if asked[n].1 && !(answered && right) {
            section_unmet += 1;
        }
    }
    let started = Instant::now();
    let report = grace.gaps_blocking(None, 10)?;
    let took = started.elapsed();
    let section: Vec<&str> = target.iter().map(|q| q.question.as_str()).collect();
    // Which group each question went to, as the report groups them.
    let unmet = grace.feedback().unmet(
        chrono::Utc::now() - chrono::Duration::days(1),
        grace::gaps::MAX_QUESTIONS,
    )?;
    let place = grace::gaps::membership(&unmet, grace::gaps::thresholds(grace.config())?);
    let in_top = unmet
        .iter()
        .zip(&place)
        .filter(|(u, p)| **p == 0 && section.contains(&u.question.as_str()))
        .count();
    println!(
        "report: {} questions not answered (declined, escalated, rated down), {} groups, in {:.3} s; {section_unmet} of the section's {} among them",
        report.questions,
        report.total_groups,
        took.as_secs_f64(),
        section.len()
    );
    println!(
        "the top group holds {in_top} of the section's {} questions ({:.0}%; goal at least 80%)",
        section.len(),
        100.0 * in_top as f64 / section.len().max(1) as f64
    );
    for (u, p) in unmet.iter().zip(&place) {
        if *p != 0 && section.contains(&u.question.as_str()) {
            println!(
                "  outside the top group (in group {}): {:?}",
                p + 1,
                u.question
            );
        }
    }
    for (i, g) in report.groups.iter().take(5).enumerate() {
        let members = unmet.iter().zip(&place).filter(|(_, p)| **p == i);
        let from_section = members
            .filter(|(u, _)| section.contains(&u.question.as_str()))
            .count();
        println!(
            "  {}. {} questions ({} declined, {} escalated, {} rated down), {from_section} from the section: {:?}",
            i + 1,
            g.count,
            g.declined,
            g.escalated,
            g.rated_down,
            g.label
        );
    }
    Ok(())
}

fn timing(args: &[String]) -> Result<(), Error> {
    let n = flag(args, "--questions", 5_000)?;
    let unrelated = args.iter().any(|a| a == "--unrelated");
    let sets: Vec<&String> = args.iter().take_while(|a| !a.starts_with("--")).collect();
    if sets.is_empty() {
        return Err("timing SET_DIR... [--questions N]".into());
    }
    let mut texts = Vec::new();
    for set in sets {
        texts.extend(
            load_questions(&Path::new(set).join("questions.jsonl"))?
                .into_iter()
                .map(|q| q.question),
        );
    }
    let work = tempfile::tempdir()?;
    let config = config(work.path());
    let embedder = FastEmbedder::new(&config.embedding)?;
    let started = Instant::now();
    let vectors = embedder.embed(&texts)?;
    println!(
        "{} distinct questions embedded in {:.1} s",
        texts.len(),
        started.elapsed().as_secs_f64()
    );
    let store = FeedbackStore::open(&config)?;
    let asker = Asker::named("study")?;
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let started = Instant::now();
    for k in 0..n {
        let i = k % texts.len();
        let mut v = vectors[i].clone();
        if unrelated {
            // The worst case: no two questions alike.
            for x in v.iter_mut() {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                *x = (seed % 2001) as f32 / 1000.0 - 1.0;
            }
        } else if k >= texts.len() {
            for x in v.iter_mut() {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                *x += ((seed % 1000) as f32 / 1000.0 - 0.5) * 0.02;
            }
        }
        let run = RecordedRun {
            question: texts[i].clone(),
            standalone: None,
            answer: None,
            decision: Decision::Escalate,
            confidence: 0.3,
            factors: None,
            weights_version: String::new(),
            collection: "study".into(),
            sources: Vec::new(),
        };
        store.record_asked(&run, &asker, None, Some(&v))?;
    }
    println!(
        "{n} runs recorded in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let started = Instant::now();
    let unmet = store.unmet(
        chrono::Utc::now() - chrono::Duration::days(30),
        grace::gaps::MAX_QUESTIONS,
    )?;
    println!(
        "reading the {} questions alone: {:.3} s",
        unmet.len(),
        started.elapsed().as_secs_f64()
    );
    let mut times = Vec::new();
    let mut groups = 0;
    for _ in 0..5 {
        let started = Instant::now();
        let report = grace::gaps::read(Some(&store), &config, None, 20)?;
        times.push(started.elapsed().as_secs_f64());
        groups = report.total_groups;
    }
    times.sort_by(f64::total_cmp);
    println!(
        "gap report over {n} questions: {groups} groups, median {:.3} s (min {:.3}, max {:.3}); goal under 5 s: {}",
        times[2],
        times[0],
        times[4],
        if times[2] < 5.0 { "met" } else { "missed" }
    );
    Ok(())
}

fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("missing") => missing(&args[1..]),
        Some("timing") => timing(&args[1..]),
        _ => Err("usage: gap_study missing SET_DIR PREFIX [--others N] | timing SET_DIR... [--questions N]".into()),
    }
}
