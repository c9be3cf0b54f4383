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
    let asker = Asker::named(&args.asker)?;
    // A "wrong" rating may put the question to a person: that asks it
    // again, so it needs the whole service (the model loaded); any other
    // rating is one row in the feedback store.
    let stored = if rating.asks_for_a_person(&config.feedback) {
        grace::Grace::open(config.clone())?.rate_blocking(&args.id, &asker, &rating)?
    } else {
        FeedbackStore::open(config)?.rate(&args.id, &asker, &rating)?
    };
    output::rated(&stored, cli.json);
    Ok(())
}
