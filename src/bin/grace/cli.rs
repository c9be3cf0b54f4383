//! The command line: global flags and one variant per command, with the
//! help text clap prints.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// GRACE: knowledge-base question answering that knows when it does not know.
#[derive(Debug, Parser)]
#[command(name = "grace", version, about, long_about = None)]
pub struct Cli {
    /// Configuration file [default: ./grace_config.yml when present]
    #[arg(long, global = true, env = "GRACE_CONFIG", value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// Data folder (overrides storage.data_dir)
    #[arg(long, global = true, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// The knowledge base to act on (`kbs:` in the configuration names
    /// them; `grace kb list`)
    #[arg(
        long,
        global = true,
        env = "GRACE_KB",
        value_name = "NAME",
        default_value = "default"
    )]
    pub kb: String,
    /// Print machine-readable JSON on stdout
    #[arg(long, global = true)]
    pub json: bool,
    /// More log output (-v info, -vv debug); RUST_LOG overrides
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Print only errors (and --json output)
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Add or update documents (Markdown, text, reStructuredText, HTML,
    /// PDF, DOCX, ODT, EPUB, man pages, Q&A tables)
    Ingest {
        /// Files, folders or quoted glob patterns
        #[arg(required = true, value_name = "PATHS")]
        paths: Vec<PathBuf>,
        /// Remove chunks of files that are gone from the given folders
        #[arg(long)]
        prune: bool,
        /// Then keep following the files and folders: a moment after they
        /// change (ingest.watch_debounce_seconds), ingest again, with
        /// --prune; Ctrl-C stops
        #[arg(long)]
        watch: bool,
        /// Who may read these documents, before what they say themselves
        /// (front matter `access:`, .grace-access.yml): comma-separated
        /// `public`, `group:NAME`, `user:NAME`
        #[arg(long, value_delimiter = ',', value_name = "READERS")]
        access: Vec<String>,
    },
    /// Find the passages that best match a query
    Search {
        /// What to look for
        query: String,
        /// Number of passages [default: search.limit]
        #[arg(short = 'k', long = "limit", value_name = "N")]
        limit: Option<usize>,
        /// Only passages of this source file
        #[arg(long, value_name = "PATH")]
        source: Option<PathBuf>,
        /// See what this principal may read (`grace auth list`), not
        /// everything, as the local operator does
        #[arg(long = "as", value_name = "NAME")]
        as_principal: Option<String>,
    },
    /// Answer a question from the knowledge base, with citations and a
    /// confidence that decides: answer, caveat, escalate or decline
    /// (exit 4 when not answered)
    Ask(AskArgs),
    /// A conversation: one question a line in one session, so follow-ups
    /// ("and on sparc?") are read against the turns before. At a terminal
    /// it prompts; from a pipe it answers each line. /sources, /trace,
    /// /new, /quit
    Chat {
        /// Continue this session (an id `grace chat` or the API printed)
        #[arg(long, value_name = "ID")]
        session: Option<String>,
        /// Passages retrieved [default: tools.rag_search.limit]
        #[arg(short = 'k', long = "limit", value_name = "N")]
        limit: Option<usize>,
        /// Your name, shown to reviewers
        #[arg(long, env = "USER", default_value = "user", hide_env_values = true)]
        asker: String,
        /// See what this principal may read (`grace auth list`), not
        /// everything, as the local operator does
        #[arg(long = "as", value_name = "NAME")]
        as_principal: Option<String>,
    },
    /// Rate an answer: up or down, with a reason (the id `grace ask`
    /// printed; one rating per asker per answer, a second replaces it)
    Feedback(FeedbackArgs),
    /// What the knowledge base is missing: the questions people did not
    /// get an answer to (declined, escalated, rated down), grouped by
    /// meaning, most asked first
    Gaps(GapsArgs),
    /// The answer to an escalated question, once a reviewer gave it
    /// (exit 0 answered, 4 not answered yet or not at all)
    Answer {
        /// The escalation id `grace ask` printed
        id: i64,
        /// Wait until it is settled
        #[arg(long)]
        wait: bool,
        /// Seconds to wait with --wait [default: review.asker_wait_seconds]
        #[arg(long, value_name = "SECONDS", requires = "wait")]
        timeout: Option<f64>,
        /// Withdraw the question
        #[arg(long, conflicts_with = "wait")]
        cancel: bool,
    },
    /// Review escalated questions: list, claim, answer, reject, watch
    Review {
        /// Your reviewer id
        #[arg(long = "as", env = "GRACE_REVIEWER", value_name = "REVIEWER")]
        reviewer: Option<String>,
        #[command(subcommand)]
        command: crate::review::ReviewCommand,
    },
    /// Serve the HTTP API (ask, search, ingest, status, review; reference
    /// at /openapi.json) and the reviewer page at /review
    Serve {
        /// Address to listen on [default: server.bind]; beyond loopback
        /// only with server.api_key set
        #[arg(long, value_name = "ADDR")]
        bind: Option<std::net::SocketAddr>,
        /// Keep the knowledge base in step with this folder or file while
        /// serving (repeatable; added to server.watch)
        #[arg(long, value_name = "PATH")]
        watch: Vec<PathBuf>,
    },
    /// Serve GRACE's tools to an MCP client over stdin/stdout
    Mcp,
    /// The knowledge bases: list, create, drop
    Kb {
        #[command(subcommand)]
        command: crate::kb::KbCommand,
    },
    /// Principals and their API keys: add-key (prints the key once),
    /// list, revoke
    Auth {
        #[command(subcommand)]
        command: crate::auth::AuthCommand,
    },
    /// The audit log: who asked, searched, viewed or reviewed what, and
    /// which documents (never any text), oldest first
    Audit {
        /// From this date (2026-11-29) or time (RFC 3339) on
        #[arg(long, value_name = "WHEN")]
        since: Option<String>,
        /// Only this principal's (`-`: the operator, services, the
        /// administrator; `reviewer:ID`: a reviewer)
        #[arg(long, value_name = "NAME")]
        principal: Option<String>,
        /// The newest N records at most
        #[arg(long, value_name = "N", default_value_t = 100)]
        limit: usize,
    },
    /// Show the collection, its size, the model and tool usage
    Status,
    /// The tools: list (schema, policy, origin, statistics), stats,
    /// reflect (unreliable, slow, unused), enable; run-time tools (rt.NAME):
    /// create, delete, history, run
    Tools {
        #[command(subcommand)]
        command: crate::tools::ToolsCommand,
    },
    /// Copy the embedded collection to a Qdrant server without embedding again
    Migrate(crate::migrate::MigrateArgs),
    /// Check the knowledge base's files (data folder, state files, manifest
    /// against the store) and say what is wrong; exit status 1 when something is
    Doctor {
        /// Mend what can be mended: rebuild the manifest from the store,
        /// move a damaged state file aside (GRACE starts an empty one)
        #[arg(long)]
        repair: bool,
    },
    /// Evaluate retrieval and confidence on a question set (DIR holds
    /// corpus/ and questions.jsonl); uses a temporary store
    Eval {
        /// The evaluation set folder
        dir: PathBuf,
        /// Passages retrieved per question
        #[arg(short = 'k', long = "limit", value_name = "N", default_value_t = 5)]
        limit: usize,
        /// Also draw the confidence models' coverage/risk curves to this PNG
        #[arg(long, value_name = "FILE", conflicts_with = "conversations")]
        plot: Option<PathBuf>,
        /// Self-calibrate on the ingested corpus first (never reading the
        /// set's questions), then ask the questions with the fitted weights
        #[arg(long, conflicts_with = "conversations")]
        self_calibrate: bool,
        /// Instead of the set's questions, ask these conversations (one JSON
        /// line each: {"id", "turns": [{"question", "answerable",
        /// "gold_sources"}]}) over its corpus, and report follow-up recall
        /// with and without the history
        #[arg(long, value_name = "FILE")]
        conversations: Option<PathBuf>,
        /// Instead, ask the set's first N questions one after another in
        /// one session (each stands on its own) and report how many were
        /// taken for follow-ups and rewritten
        #[arg(long, value_name = "N", conflicts_with_all = ["conversations", "plot", "self_calibrate", "feedback"])]
        one_session: Option<usize>,
        /// Simulate N ratings: a seeded sample of N questions rated from
        /// their labels, the weights refitted on the first 0, 25, 50, 100
        /// and 200, each fit scored on the other questions
        #[arg(long, value_name = "N", conflicts_with = "conversations")]
        feedback: Option<usize>,
        /// The sample's seed, with --feedback
        #[arg(long, value_name = "S", default_value_t = 1, requires = "feedback")]
        seed: u64,
        /// Share of the simulated ratings flipped (0 to 1), with --feedback
        #[arg(long, value_name = "P", default_value_t = 0.0, requires = "feedback")]
        feedback_noise: f64,
        /// With --feedback: one more asker gives this many false ratings
        /// (what the per-asker cap must hold)
        #[arg(long, value_name = "K", default_value_t = 0, requires = "feedback")]
        feedback_flood: usize,
        /// With --feedback: measure feedback.document_boost B on the
        /// ranking (the sample's answers rated, the other questions
        /// searched without and with the boosts)
        #[arg(long, value_name = "B", requires = "feedback")]
        document_boost: Option<f64>,
    },
    /// Fit the confidence weights to a question set (DIR as for eval) and
    /// write them to a calibration file for `confidence.calibration`; or,
    /// with --self, to questions built from the knowledge base itself
    Calibrate {
        /// The evaluation set folder (labelled questions)
        #[arg(
            required_unless_present_any = ["self_fit", "from_feedback"],
            conflicts_with_all = ["self_fit", "from_feedback"]
        )]
        dir: Option<PathBuf>,
        /// Fit on what people said: askers' ratings and reviewers' verdicts
        /// (feedback.sqlite3 and the review queue in the data folder),
        /// starting from the weights in use; written to --out
        #[arg(long, conflicts_with = "self_fit")]
        from_feedback: bool,
        /// Calibrate on questions built from the knowledge base itself (no
        /// question set); the fit is kept in the data folder and used for
        /// this collection
        #[arg(long = "self", id = "self_fit")]
        self_fit: bool,
        /// With --self: also write every question asked, its kind, outcome
        /// and factors, one JSON line each, to this file
        #[arg(long, value_name = "FILE", requires = "self_fit")]
        questions_out: Option<PathBuf>,
        /// The calibration file to write (with a question set)
        #[arg(
            long,
            value_name = "FILE",
            default_value = "calibration.json",
            conflicts_with = "self_fit"
        )]
        out: PathBuf,
        /// Cross-validation folds
        #[arg(long, value_name = "N", default_value_t = 5)]
        folds: usize,
        /// Passages retrieved per question
        #[arg(short = 'k', long = "limit", value_name = "N", default_value_t = 5)]
        limit: usize,
    },
    /// Print the effective configuration (defaults + file + environment)
    Config,
    /// Print a reference page of the manual made from the code (Markdown)
    #[command(hide = true)]
    Reference {
        /// The page
        #[arg(value_enum)]
        topic: Topic,
    },
}

/// A reference page `grace reference` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Topic {
    /// Commands and flags.
    Cli,
    /// Exit statuses.
    ExitCodes,
    /// HTTP routes and their statuses.
    Http,
}

/// `grace ask`'s arguments (the command's help is on `Command::Ask`).
#[derive(Debug, Args)]
pub struct AskArgs {
    /// The question
    pub question: String,
    /// Passages retrieved [default: tools.rag_search.limit]
    #[arg(short = 'k', long = "limit", value_name = "N")]
    pub limit: Option<usize>,
    /// Show every step with its confidence factors and weights
    #[arg(long)]
    pub trace: bool,
    /// Never prompt: an escalation is printed and the exit code is 4
    /// (the default when stdin or stdout is not a terminal, or with --json)
    #[arg(long)]
    pub no_input: bool,
    /// When escalated, wait for a reviewer's answer (see `grace review`)
    #[arg(long)]
    pub wait: bool,
    /// Seconds to wait with --wait [default: review.asker_wait_seconds]
    #[arg(long, value_name = "SECONDS", requires = "wait")]
    pub timeout: Option<f64>,
    /// Only these reviewers may see the escalation (comma-separated ids)
    #[arg(long, value_delimiter = ',', value_name = "IDS")]
    pub reviewers: Vec<String>,
    /// Your name, shown to reviewers
    #[arg(long, env = "USER", default_value = "user", hide_env_values = true)]
    pub asker: String,
    /// Answer as this principal would be answered (`grace auth list`):
    /// only what it may read, not everything, as the local operator
    #[arg(long = "as", value_name = "NAME")]
    pub as_principal: Option<String>,
}

/// `grace gaps`.
#[derive(Debug, Args)]
pub struct GapsArgs {
    /// Days of questions to read [default: feedback.gap_days]
    #[arg(long, value_name = "N")]
    pub days: Option<u32>,
    /// Groups shown, most asked first
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub limit: usize,
}

/// `grace feedback`.
#[derive(Debug, Args)]
pub struct FeedbackArgs {
    /// The answer's id (`ans_…`, printed under the answer)
    pub id: String,
    /// up or down
    #[arg(value_parser = ["up", "down"])]
    pub vote: String,
    /// Why, with down: wrong, incomplete, not_what_i_asked, outdated, other
    #[arg(long, value_parser = ["wrong", "incomplete", "not_what_i_asked", "outdated", "other"])]
    pub reason: Option<String>,
    /// Your words, with --reason other (at most 500 characters)
    #[arg(long, requires = "reason")]
    pub text: Option<String>,
    /// Who asked, as given to `grace ask --asker`
    #[arg(long, env = "USER", default_value = "user", hide_env_values = true)]
    pub asker: String,
}
