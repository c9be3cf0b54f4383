//! `grace migrate --to qdrant|edge`: copies the embedded collection to a
//! Qdrant server, or back (the work is [`grace::migrate::migrate`]); this
//! file only parses the arguments, draws the progress bar and prints the
//! report.

use clap::{Args, ValueEnum};
use grace::Config;
use grace::config::Backend;
use grace::migrate::{MigrateEvent, MigrateOptions, MigrateReport, migrate};

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
        match serde_json::to_string_pretty(&report) {
            Ok(s) => println!("{s}"),
            Err(e) => eprintln!("error: cannot render JSON: {e}"),
        }
    } else if !quiet {
        print_report(&report);
    }
    Ok(())
}

fn print_report(r: &MigrateReport) {
    println!(
        "Copied {} chunks ({} sources, {}-d vectors) from {} to {} in {:.1} s{}.",
        r.points,
        r.sources,
        r.dimension,
        r.from,
        r.to,
        r.seconds,
        if r.replaced {
            " (the old collection was deleted first)"
        } else {
            ""
        }
    );
    if r.retries > 0 {
        println!(
            "{} write(s) failed for a moment and were tried again (writes are idempotent: nothing duplicated).",
            r.retries
        );
    }
    match &r.manifest {
        Some(m) => println!("Manifest copied to {}.", m.display()),
        None => {
            println!("The source had no manifest: the next ingest writes every file once more.")
        }
    }
    match r.to_backend {
        "qdrant" => {
            let url = r.to.split("/collections/").next().unwrap_or(&r.to);
            println!(
                "To use it: set storage.backend: qdrant and qdrant.url: {url} (or GRACE_STORAGE__BACKEND=qdrant GRACE_QDRANT__URL={url})."
            );
        }
        _ => println!("To use it: set storage.backend: edge (the default)."),
    }
}
