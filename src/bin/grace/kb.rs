//! `grace kb list|create|drop`: the knowledge bases the configuration
//! names (`kbs:`), their collections and sizes.

use std::io::{BufRead, IsTerminal, Read, Write};

use clap::Subcommand;
use grace::config::Config;
use grace::service::kbs;

use crate::output;

/// `grace kb …`.
#[derive(Debug, Subcommand)]
pub enum KbCommand {
    /// Every knowledge base: its collection, state folder, model, size
    /// and roles
    List,
    /// Create a configured knowledge base's empty collection, so a server
    /// serves it before its first ingest (add it under `kbs:` first)
    Create {
        /// Its name, as `kbs:` in the configuration names it
        name: String,
    },
    /// Delete everything a knowledge base holds (collection, manifest,
    /// review queue, sessions, feedback); asks first
    Drop {
        /// Its name
        name: String,
        /// Do not ask
        #[arg(long)]
        yes: bool,
    },
}

/// Runs `grace kb …` on the configuration `base` (before `--kb`).
pub fn run(base: &Config, command: &KbCommand, json: bool) -> grace::Result<()> {
    match command {
        KbCommand::List => output::kbs(&kbs::summaries(base)?, json),
        KbCommand::Create { name } => {
            let config = kbs::kb_config(base, name)?;
            let location = config.collection_location();
            kbs::create(config)?;
            output::kb_done("created", name, &location, json);
        }
        KbCommand::Drop { name, yes } => {
            let config = kbs::kb_config(base, name)?;
            let location = config.collection_location();
            if !yes && !confirm(name, &config)? {
                return Err(grace::Error::InvalidInput(format!(
                    "not dropped: knowledge base `{name}` is as it was"
                )));
            }
            kbs::drop_kb(&config)?;
            output::kb_done("dropped", name, &location, json);
        }
    }
    Ok(())
}

/// Asks on the terminal whether to drop `name`; without a terminal, the
/// answer is no and the error says to pass `--yes`.
fn confirm(name: &str, config: &Config) -> grace::Result<bool> {
    if !std::io::stdin().is_terminal() {
        return Err(grace::Error::InvalidInput(format!(
            "dropping knowledge base `{name}` deletes its documents, review queue, sessions and feedback: pass --yes to confirm"
        )));
    }
    eprint!(
        "Delete knowledge base `{name}` ({} and {})? Type its name to confirm: ",
        config.collection_location().display(),
        config.kb_dir().display()
    );
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .take(1024)
        .read_line(&mut line)
        .map_err(|e| grace::Error::InvalidInput(format!("cannot read the answer: {e}")))?;
    Ok(line.trim() == name)
}
