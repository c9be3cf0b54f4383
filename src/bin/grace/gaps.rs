//! `grace gaps`: what the knowledge base is missing, from the questions
//! people did not get an answer to.

use grace::config::Config;
use grace::feedback::FeedbackStore;

use crate::cli::{Cli, GapsArgs};
use crate::output;

/// Prints the gap report of the data folder's feedback; a folder where
/// nothing was recorded yet has an empty report (and is not created).
pub fn run(cli: &Cli, config: &Config, args: &GapsArgs) -> grace::Result<()> {
    let store = FeedbackStore::open_existing(config)?;
    let report = grace::gaps::read(store.as_ref(), config, args.days, args.limit)?;
    output::gaps(&report, cli.json);
    Ok(())
}
