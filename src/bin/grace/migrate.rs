//! `grace migrate --to qdrant|edge`: copies the embedded collection to a
//! Qdrant server, or back (the work is [`grace::migrate::migrate`]); this
//! file only parses the arguments and draws the progress bar (the report
//! is printed by `output`).

use clap::{Args, ValueEnum};
use grace::Config;
use grace::config::Backend;
use grace::migrate::{MigrateEvent, MigrateOptions, migrate};

/// Where `grace migrate` copies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Target {
    /// From the embedded store to a Qdrant server or cluster (qdrant.url)
    Qdrant,
    /// From the Qdrant server back to the embedded store (storage.data_dir)
    Edge,
}

/// Arguments of `grace migrate`.
#[derive(Debug, Args)]
pub struct MigrateArgs {
    /// The backend to copy the collection to (from the other one)
    #[arg(long, value_enum)]
    to: Target,
    /// The server's gRPC URL [default: qdrant.url]
    #[arg(long, value_name = "URL")]
    url: Option<String>,
    /// Delete the target collection first if it exists
    #[arg(long)]
    replace: bool,
    /// Points copied per request
    #[arg(long, value_name = "N", default_value_t = 256)]
    batch_size: usize,
}

/// Runs `grace migrate`.
pub fn run(mut config: Config, args: &MigrateArgs, quiet: bool, json: bool) -> grace::Result<()> {
    let to = match args.to {
        Target::Qdrant => Backend::Qdrant,
        Target::Edge => Backend::Edge,
    };
    if let Some(url) = &args.url {
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(grace::Error::InvalidInput(format!(
                "--url {url:?} is not an http(s) URL such as http://localhost:6334"
            )));
        }
        config.qdrant.url = url.clone();
    }
    let options = MigrateOptions {
        batch_size: args.batch_size,
        replace: args.replace,
    };
    let bar = crate::progress::bar(
        quiet || json,
        "{spinner} [{bar:30}] {pos}/{len} chunks ({eta})  {wide_msg}",
    );
    bar.set_message(format!("copying to {}", to.as_str()));
    let report = migrate(&config, to, &options, &mut |event| match event {
        MigrateEvent::Started { points } => bar.set_length(points as u64),
        MigrateEvent::Copied { copied } => bar.set_position(copied as u64),
        MigrateEvent::Verifying => bar.set_message("counting the copied points"),
    });
    bar.finish_and_clear();
    let report = report?;
    if json {
        crate::output::print_json(&report);
    } else if !quiet {
        crate::output::migrate_report(&report);
    }
    Ok(())
}
