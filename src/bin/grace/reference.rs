//! `grace reference TOPIC` (hidden from the help): reference pages of the
//! manual made from the code itself, as Markdown. `tests/reference.rs`
//! fails when `docs/src/reference/` differs from them (`GRACE_BLESS=1`
//! writes them again).
//!
//! - `cli`: every command and flag, with its default and variable, from
//!   clap's own description of the command line;
//! - `exit-codes`: [`grace::EXIT_CODES`];
//! - `http`: every route's method and statuses, from the OpenAPI document
//!   the server publishes.

use std::fmt::Write;

use clap::{Arg, CommandFactory, ValueEnum};

use crate::cli::{Cli, Topic};

/// The page, as Markdown.
pub fn page(topic: Topic) -> String {
    let (title, body) = match topic {
        Topic::Cli => ("Commands and flags", cli()),
        Topic::ExitCodes => ("Exit statuses", exit_codes()),
        Topic::Http => ("HTTP routes and statuses", http()),
    };
    let name = topic
        .to_possible_value()
        .map(|v| v.get_name().to_string())
        .unwrap_or_default();
    format!(
        "# {title}\n\n<!-- Made by `grace reference {name}`; tests/reference.rs checks it (GRACE_BLESS=1 writes it again). -->\n\n{body}"
    )
}

/// A help text on one line, safe in a table cell.
fn cell(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace('|', "\\|")
}

/// How an argument is written: `<PATHS>...`, `-k, --limit <K>`, `--prune`.
fn spelling(arg: &Arg) -> String {
    let values = arg
        .get_value_names()
        .map(|names| {
            names
                .iter()
                .map(|n| format!("<{n}>"))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_else(|| format!("<{}>", arg.get_id().as_str().to_uppercase()));
    let many = arg.get_num_args().is_some_and(|r| r.max_values() > 1);
    if arg.is_positional() {
        return format!("{values}{}", if many { "..." } else { "" });
    }
    let mut out = String::new();
    if let Some(short) = arg.get_short() {
        let _ = write!(out, "-{short}, ");
    }
    if let Some(long) = arg.get_long() {
        let _ = write!(out, "--{long}");
    }
    if arg.get_action().takes_values() {
        let _ = write!(out, " {values}");
    }
    out
}

/// One table row per argument: spelling, what it does, default, variable.
fn arg_rows(args: Vec<&Arg>) -> String {
    let mut out = String::from(
        "| argument | what it does | default | variable |\n| --- | --- | --- | --- |\n",
    );
    for arg in args {
        let mut help = arg
            .get_long_help()
            .or(arg.get_help())
            .map(|h| h.to_string())
            .unwrap_or_default();
        let choices: Vec<String> = arg
            .get_possible_values()
            .iter()
            .filter(|v| !v.is_hide_set())
            .map(|v| format!("`{}`", v.get_name()))
            .collect();
        if arg.get_action().takes_values() && !choices.is_empty() {
            let _ = write!(help, " (one of {})", choices.join(", "));
        }
        let default = match arg.get_action().takes_values() {
            true => arg
                .get_default_values()
                .iter()
                .map(|v| format!("`{}`", v.to_string_lossy()))
                .collect::<Vec<_>>()
                .join(", "),
            false => String::new(),
        };
        let env = arg
            .get_env()
            .map(|e| format!("`{}`", e.to_string_lossy()))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "| `{}` | {} | {default} | {env} |",
            spelling(arg),
            cell(&help)
        );
    }
    out
}

fn shown(arg: &&Arg) -> bool {
    !arg.is_hide_set() && !matches!(arg.get_id().as_str(), "help" | "version")
}

fn cli() -> String {
    let mut root = Cli::command();
    root.build();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}\n\nThese options work with every command:\n",
        cell(&root.get_about().map(|a| a.to_string()).unwrap_or_default())
    );
    out.push_str(&arg_rows(
        root.get_arguments()
            .filter(shown)
            .filter(|a| a.is_global_set())
            .collect(),
    ));
    // Depth first, in the help's order, without recursion's stack: the
    // commands to write, each with its full name.
    let mut todo: Vec<(String, &clap::Command)> = root
        .get_subcommands()
        .map(|c| (format!("grace {}", c.get_name()), c))
        .collect();
    todo.reverse();
    while let Some((name, command)) = todo.pop() {
        if command.is_hide_set() || command.get_name() == "help" {
            continue;
        }
        let about = command
            .get_long_about()
            .or(command.get_about())
            .map(|a| a.to_string())
            .unwrap_or_default();
        let usage = command.clone().render_usage().to_string();
        let usage = usage.trim_start_matches("Usage: ").trim();
        let _ = writeln!(
            out,
            "\n## `{name}`\n\n{}\n\n```text\n{usage}\n```\n",
            cell(&about)
        );
        let args: Vec<&Arg> = command
            .get_arguments()
            .filter(shown)
            .filter(|a| !a.is_global_set())
            .collect();
        if !args.is_empty() {
            out.push_str(&arg_rows(args));
        }
        let mut subs: Vec<(String, &clap::Command)> = command
            .get_subcommands()
            .map(|c| (format!("{name} {}", c.get_name()), c))
            .collect();
        subs.reverse();
        todo.extend(subs);
    }
    out
}

fn exit_codes() -> String {
    let mut out = String::from(
        "What `grace` exits with. Scripts can tell an answer (0) from a question a person must take (4).\n\n| status | meaning |\n| --- | --- |\n",
    );
    for (code, meaning) in grace::EXIT_CODES {
        let _ = writeln!(out, "| {code} | {} |", cell(meaning));
    }
    out
}

fn http() -> String {
    use utoipa::OpenApi;
    let doc = grace_serve::openapi::ApiDoc::openapi();
    let mut out = String::from(
        "Every route the server answers and the statuses it can return, from the OpenAPI document it publishes at `/openapi.json` (which has the bodies). Errors carry `{\"error\": {\"type\", \"message\"}}`; the types are in [HTTP error types](http-errors.md).\n\n| method | route | statuses |\n| --- | --- | --- |\n",
    );
    for (path, item) in &doc.paths.paths {
        let operations = [
            ("GET", &item.get),
            ("POST", &item.post),
            ("PUT", &item.put),
            ("PATCH", &item.patch),
            ("DELETE", &item.delete),
        ];
        for (method, operation) in operations {
            let Some(operation) = operation else { continue };
            let statuses: Vec<String> = operation
                .responses
                .responses
                .keys()
                .map(|s| s.to_string())
                .collect();
            let _ = writeln!(
                out,
                "| {method} | `{}` | {} |",
                path.replace('|', "\\|"),
                statuses.join(", ")
            );
        }
    }
    out
}
