//! `grace feedback`: an asker's rating of an answer `grace ask` gave.

use grace::config::Config;
use grace::feedback::{Asker, FeedbackStore, Rating, Reason, Vote};

use crate::cli::{Cli, FeedbackArgs};
use crate::output;

/// Rates answer `args.id` as `args.asker`.
pub fn run(cli: &Cli, config: &Config, args: &FeedbackArgs) -> grace::Result<()> {
    let rating = Rating {
        vote: if args.vote == "up" {
            Vote::Up
        } else {
            Vote::Down
        },
        reason: args.reason.as_deref().and_then(Reason::parse),
        text: args.text.clone(),
    };
    let store = FeedbackStore::open(&config.storage.data_dir, &config.feedback)?;
    let stored = store.rate(&args.id, &Asker::named(&args.asker)?, &rating)?;
    output::rated(&stored, cli.json);
    Ok(())
}
