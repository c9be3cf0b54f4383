//! Progress bars on stderr, hidden with `--quiet`, `--json` or when stderr
//! is not a terminal.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::cli::Cli;

/// A progress bar counting bytes, with a message.
pub fn progress_bar(cli: &Cli) -> ProgressBar {
    if cli.quiet || cli.json || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
    bar.enable_steady_tick(std::time::Duration::from_millis(200));
    if let Ok(style) = ProgressStyle::with_template(
        "{spinner} [{bar:30}] {binary_bytes}/{binary_total_bytes} ({eta})  {wide_msg}",
    ) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

/// A progress bar counting items (questions), with a message.
pub fn count_bar(cli: &Cli, message: &'static str) -> ProgressBar {
    if cli.quiet || cli.json || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
    bar.enable_steady_tick(std::time::Duration::from_millis(200));
    if let Ok(style) =
        ProgressStyle::with_template("{spinner} [{bar:30}] {pos}/{len} ({eta})  {msg}")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_message(message);
    bar
}
