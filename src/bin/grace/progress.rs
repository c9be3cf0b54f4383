//! Progress bars on stderr, hidden when asked (`--quiet`, `--json`) or
//! when stderr is not a terminal. Imports no command, so every command
//! may use it.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A progress bar drawn with `template`, or a hidden one when `hidden` or
/// when stderr is not a terminal.
pub fn bar(hidden: bool, template: &str) -> ProgressBar {
    if hidden || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
    bar.enable_steady_tick(std::time::Duration::from_millis(200));
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

/// A progress bar counting bytes, with a message.
pub fn progress_bar(hidden: bool) -> ProgressBar {
    bar(
        hidden,
        "{spinner} [{bar:30}] {binary_bytes}/{binary_total_bytes} ({eta})  {wide_msg}",
    )
}

/// A progress bar counting items (questions), with a message.
pub fn count_bar(hidden: bool, message: &'static str) -> ProgressBar {
    let bar = bar(hidden, "{spinner} [{bar:30}] {pos}/{len} ({eta})  {msg}");
    bar.set_message(message);
    bar
}
