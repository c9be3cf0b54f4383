//! Opens a knowledge base in a folder of its own, ingests a documents
//! folder and asks one question through `grace::Grace`, the way a service
//! backend does: the decision, the confidence, the answer and where it
//! comes from, or the escalation a reviewer will answer.
//!
//! ```sh
//! cargo run -p ask-service -- examples/kb "How long are nightly backups kept?"
//! ```
//!
//! The configuration is GRACE's own: `grace_config.yml` in the current
//! folder (or `GRACE_CONFIG`) and `GRACE_<SECTION>__<KEY>` variables; the
//! models come from GRACE's per-user folder that `scripts/setup` fills.

use std::process::ExitCode;

use grace::exec::Decision;
use grace::{AskOptions, Config, Grace};

#[tokio::main]
async fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let (Some(docs), Some(question)) = (args.next(), args.next()) else {
        eprintln!("usage: ask-service DOCS_FOLDER QUESTION");
        return ExitCode::from(2);
    };
    match run(&docs, &question).await {
        Ok(answered) if answered => ExitCode::SUCCESS,
        Ok(_) => ExitCode::from(3),
        Err(e) => {
            eprintln!("ask-service: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Whether GRACE answered (with or without a caveat).
async fn run(docs: &str, question: &str) -> grace::Result<bool> {
    let mut config = Config::load(None)?;
    // The knowledge base lives in a folder of the service's own.
    let data = std::env::temp_dir().join(format!("ask-service-{}", std::process::id()));
    config.storage.data_dir = data.clone();
    let grace = Grace::open(config)?;
    let report = grace.ingest(vec![docs.into()], Default::default()).await?;
    println!(
        "ingested {} files ({} chunks)",
        report.added + report.updated + report.unchanged,
        report.chunks_written
    );
    let outcome = grace.ask(question, AskOptions::default()).await?;
    let run = &outcome.report;
    println!("{:?} at {:.2}", run.decision, run.confidence);
    if let Some(answer) = &run.answer {
        println!("{}", answer.text);
        for c in &answer.citations {
            let page = c.page.map(|p| format!(" p. {p}")).unwrap_or_default();
            let source = c.source.as_deref().unwrap_or("?");
            println!("  [{}] {source}{page}", c.number);
        }
    }
    if let Some(id) = outcome.review_id {
        println!("escalated to the reviewers as #{id}");
    }
    drop(grace);
    let _ = std::fs::remove_dir_all(&data);
    Ok(matches!(run.decision, Decision::Answer | Decision::Caveat))
}
