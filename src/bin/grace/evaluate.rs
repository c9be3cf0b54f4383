//! `grace eval` and `grace calibrate`: measure retrieval and confidence on
//! a question set, and fit the confidence weights (to a set, or `--self` to
//! questions built from the knowledge base).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use grace::config::Config;
use grace::{KnowledgeBase, OpenMode};

use crate::cli::Cli;
use crate::output;
use crate::progress::count_bar;

/// What `grace eval` was asked to do.
pub struct EvalArgs<'a> {
    /// The set's folder.
    pub dir: &'a Path,
    /// Passages retrieved per question.
    pub limit: usize,
    /// Where to draw the coverage/risk curves.
    pub plot: Option<&'a Path>,
    /// Self-calibrate first.
    pub self_calibrate: bool,
    /// Ask these conversations instead.
    pub conversations: Option<&'a Path>,
    /// Ask the set's first N questions in one session instead.
    pub one_session: Option<usize>,
    /// Simulate ratings and report the learning curve.
    pub feedback: Option<grace_eval::FeedbackSim>,
}

/// Runs `grace eval DIR` (or its `--conversations FILE` form).
pub fn eval(cli: &Cli, config: &Config, args: &EvalArgs<'_>) -> grace::Result<()> {
    let EvalArgs {
        dir,
        limit,
        plot,
        self_calibrate,
        conversations,
        one_session,
        feedback,
    } = *args;
    if limit == 0 {
        return Err(grace::Error::InvalidInput("-k must be at least 1".into()));
    }
    if let Some(file) = conversations {
        let embedder = Arc::new(grace::embed::FastEmbedder::new(&config.embedding)?);
        let report = grace_eval::conversations::run(config, embedder, dir, file, limit)?;
        output::conversation_report(&report, cli.json);
        return Ok(());
    }
    if let Some(n) = one_session {
        let embedder = Arc::new(grace::embed::FastEmbedder::new(&config.embedding)?);
        let report = grace_eval::one_session::run(config, embedder, dir, n, limit)?;
        output::one_session_report(&report, cli.json);
        return Ok(());
    }
    // Say so before the evaluation runs, not after.
    if let Some(folder) = plot
        .and_then(|p| p.parent())
        .filter(|f| !f.as_os_str().is_empty() && !f.is_dir())
    {
        return Err(grace::Error::InvalidInput(format!(
            "--plot: folder {} does not exist",
            folder.display()
        )));
    }
    let embedder = Arc::new(grace::embed::FastEmbedder::new(&config.embedding)?);
    let report = grace_eval::run_with(config, embedder, dir, limit, self_calibrate, feedback)?;
    if let Some(path) = plot {
        let title = format!("coverage vs risk: {}", dir.display());
        grace_eval::plot::coverage_risk_png(path, &title, &report.models)
            .map_err(|e| grace::Error::InvalidInput(e.to_string()))?;
    }
    output::eval_report(&report, cli.json);
    if let (Some(path), false) = (plot, cli.quiet || cli.json) {
        println!("coverage/risk plot: {}", path.display());
    }
    Ok(())
}

/// Runs `grace calibrate --self [--questions-out FILE]`.
pub fn calibrate_self(
    cli: &Cli,
    config: Config,
    questions_out: Option<&Path>,
) -> grace::Result<()> {
    let kb = Arc::new(KnowledgeBase::open(config, OpenMode::Existing)?);
    let outcome = self_calibrate(&kb, cli)?;
    if let (Some(file), grace::selfcal::Outcome::Fitted { asked, .. }) = (questions_out, &outcome) {
        write_jsonl(file, asked)?;
    }
    output::self_calibration(&outcome, kb.config(), cli.json);
    Ok(())
}

/// Runs `grace calibrate DIR --out FILE`.
pub fn calibrate(
    cli: &Cli,
    config: &Config,
    dir: Option<&PathBuf>,
    out: &Path,
    folds: usize,
    limit: usize,
) -> grace::Result<()> {
    let Some(dir) = dir else {
        return Err(grace::Error::InvalidInput(
            "name a question set, or calibrate on the knowledge base with --self".into(),
        ));
    };
    if limit == 0 || folds < 2 {
        return Err(grace::Error::InvalidInput(
            "-k must be at least 1 and --folds at least 2".into(),
        ));
    }
    let embedder = Arc::new(grace::embed::FastEmbedder::new(&config.embedding)?);
    let calibration = grace_eval::calibrate::calibrate(config, embedder, dir, limit, folds)?;
    calibration
        .save(out)
        .map_err(|e| grace::Error::InvalidInput(e.to_string()))?;
    output::calibration(&calibration, out, cli.json);
    Ok(())
}

/// Runs `grace calibrate --from-feedback --out FILE`: the weights in use
/// refitted on askers' ratings and reviewers' verdicts.
pub fn calibrate_from_feedback(cli: &Cli, config: Config, out: &Path) -> grace::Result<()> {
    let kb = KnowledgeBase::open(config, OpenMode::Existing)?;
    let config = kb.config();
    let feedback = grace::feedback::FeedbackStore::open(config)?;
    let queue = grace::review::ReviewQueue::open(config)?;
    let labels = grace::learn::labels(&feedback, &queue)?;
    if labels.is_empty() {
        return Err(grace::Error::InvalidInput(format!(
            "no labels in {} yet: rate answers (grace feedback) or answer escalations first",
            feedback.place()
        )));
    }
    let min = grace::learn::auto::MIN_LABELS;
    let right = labels.iter().filter(|l| l.y).count();
    let wrong = labels.len() - right;
    if right < min || wrong < min {
        return Err(grace::Error::InvalidInput(format!(
            "{} labels in {} ({right} right, {wrong} not): a fit needs at least {min} of each; rate more answers (grace feedback) or answer escalations first",
            labels.len(),
            feedback.place()
        )));
    }
    let learned = grace::learn::fit(&labels, kb.scorer().weights());
    let calibration = grace::learn::calibration(
        &learned,
        config,
        kb.embedder().model_id(),
        std::path::Path::new(feedback.place()),
    );
    calibration
        .save(out)
        .map_err(|e| grace::Error::InvalidInput(e.to_string()))?;
    output::learned(&learned, out, cli.json);
    Ok(())
}

/// `grace calibrate --self` with a progress bar.
fn self_calibrate(kb: &Arc<KnowledgeBase>, cli: &Cli) -> grace::Result<grace::selfcal::Outcome> {
    let bar = count_bar(
        cli.quiet || cli.json,
        "asking the knowledge base's own questions",
    );
    let outcome = grace::selfcal::self_calibrate(kb, &mut |p| {
        bar.set_length(p.total as u64);
        bar.set_position(p.done as u64);
    });
    bar.finish_and_clear();
    outcome
}

/// Writes `items` to `file`, one JSON line each.
fn write_jsonl<T: serde::Serialize>(file: &Path, items: &[T]) -> grace::Result<()> {
    let mut text = String::new();
    for item in items {
        let line = serde_json::to_string(item)
            .map_err(|e| grace::Error::InvalidInput(format!("cannot serialise: {e}")))?;
        text.push_str(&line);
        text.push('\n');
    }
    std::fs::write(file, text)
        .map_err(|e| grace::Error::InvalidInput(format!("cannot write {}: {e}", file.display())))
}
