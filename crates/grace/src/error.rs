//! The library's top-level error: one variant per layer, each layer's own
//! `thiserror` enum inside. [`Error::exit_code`] maps them to the CLI's exit
//! codes (DESIGN.md): 2 bad input or config, 3 not found, 1 anything else.

use crate::config::ConfigError;
use crate::embed::EmbedError;
use crate::evalset::EvalError;
use crate::ingest::IngestError;
use crate::lexical::LexicalError;
use crate::review::ReviewError;
use crate::store::StoreError;

/// Result of library operations.
pub type Result<T> = std::result::Result<T, Error>;

/// Any error GRACE's library returns.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Loading or validating the configuration failed.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The embedding model failed.
    #[error(transparent)]
    Embed(#[from] EmbedError),
    /// The vector store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Ingesting documents failed.
    #[error(transparent)]
    Ingest(#[from] IngestError),
    /// The lexical (BM25) encoder could not be built.
    #[error(transparent)]
    Lexical(#[from] LexicalError),
    /// An evaluation set could not be read.
    #[error(transparent)]
    Eval(#[from] EvalError),
    /// A run stopped: its plan was invalid, or it was cancelled.
    #[error(transparent)]
    Exec(#[from] crate::exec::ExecError),
    /// A tool call failed.
    #[error(transparent)]
    Tool(#[from] crate::tools::ToolError),
    /// The generator (language model) failed.
    #[error(transparent)]
    Llm(#[from] crate::llm::LlmError),
    /// The review queue failed.
    #[error(transparent)]
    Review(#[from] crate::review::ReviewError),
    /// The state database (PostgreSQL) failed outside a store's own call.
    #[error(transparent)]
    State(#[from] crate::state::StateError),
    /// A conversation session failed (not found, too many, database).
    #[error(transparent)]
    Session(#[from] crate::session::SessionError),
    /// A rating or verdict failed (no such answer, malformed, too many, database).
    #[error(transparent)]
    Feedback(#[from] crate::feedback::FeedbackError),
    /// A principal or key failed (unknown, malformed, database).
    #[error(transparent)]
    Auth(#[from] crate::auth::AuthError),
    /// The answerability reader failed (with `confidence.reader: on`).
    #[error(transparent)]
    Reader(#[from] crate::reader::ReaderError),
    /// A calibration file could not be read or written.
    #[error(transparent)]
    Calibration(#[from] crate::confidence::calibration::CalibrationError),
    /// Watching folders failed (`grace ingest --watch`, `server.watch`).
    #[error(transparent)]
    Watch(#[from] crate::watch::WatchError),
    /// The HTTP server could not start or stopped with an error.
    #[error("server: {0}")]
    Server(String),
    /// The collection's vectors come from another embedding model.
    #[error(
        "collection `{collection}` was embedded with {stored}, but embedding.model_dir gives {configured}: \
         set embedding.model_dir back, or ingest into a new collection (collection.name) with this model"
    )]
    ModelMismatch {
        /// The collection.
        collection: String,
        /// The model its manifest records.
        stored: String,
        /// The configured model.
        configured: String,
    },
    /// A request the caller can fix (an empty query, a zero limit).
    #[error("{0}")]
    InvalidInput(String),
    /// The data folder cannot be written (read-only, no permission).
    #[error(
        "the data folder {path} cannot be written ({source}): GRACE keeps its index, review queue and \
         sessions there. Make it writable, or set storage.data_dir (GRACE_STORAGE__DATA_DIR) to a folder that is"
    )]
    DataDirReadOnly {
        /// `storage.data_dir`.
        path: std::path::PathBuf,
        /// What the write probe got.
        #[source]
        source: std::io::Error,
    },
    /// No knowledge base has this name (or, over HTTP and MCP, none the
    /// caller may ask: the same error, so existence does not leak).
    #[error("no knowledge base `{0}` you may ask (`grace kb list` names them)")]
    UnknownKb(String),
    /// A setting needs a part of GRACE this build was compiled without
    /// (the crate's features: `Cargo.toml`, "What a library user chooses").
    #[error(
        "{key} needs GRACE's `{feature}` feature, which this build was compiled without: \
         depend on grace with features = [\"{feature}\"] (the `grace` command has them all), or change {key}"
    )]
    FeatureOff {
        /// The setting, as the configuration file names it.
        key: &'static str,
        /// The crate feature it needs.
        feature: &'static str,
    },
}

impl From<crate::search::SearchError> for Error {
    fn from(e: crate::search::SearchError) -> Self {
        match e {
            crate::search::SearchError::InvalidInput(m) => Error::InvalidInput(m),
            crate::search::SearchError::Embed(e) => Error::Embed(e),
            crate::search::SearchError::Store(e) => Error::Store(e),
        }
    }
}

/// Exit code: bad input or configuration.
pub const EXIT_BAD_INPUT: u8 = 2;
/// Exit code: something named does not exist (a path, the knowledge base, the model).
pub const EXIT_NOT_FOUND: u8 = 3;
/// Exit code: the question was escalated or declined, not answered.
pub const EXIT_NOT_ANSWERED: u8 = 4;
/// Exit code: the agent asked the asker a question the run cannot go on
/// without, and nobody could answer it (no terminal, `--no-input`).
pub const EXIT_NEEDS_INPUT: u8 = 5;
/// Exit code: any other failure.
pub const EXIT_FAILURE: u8 = 1;

/// Exit code: the output stopped being read (128 + SIGPIPE, what a shell
/// reports for a tool killed by it).
pub const EXIT_BROKEN_PIPE: u8 = 141;

/// Every exit status of `grace`, with what it means: the manual's
/// reference (`grace reference exit-codes`) is made from this.
pub const EXIT_CODES: &[(u8, &str)] = &[
    (0, "success; `grace ask` and `grace answer`: answered"),
    (
        EXIT_FAILURE,
        "a failure of GRACE or of what it uses (a store, a database, a model, a generator's server); `grace doctor`: something is wrong",
    ),
    (
        EXIT_BAD_INPUT,
        "bad input or configuration: a wrong flag, key or value, a file outside the allowed roots, a knowledge base embedded with another model, a data folder that cannot be written, a generator without its key",
    ),
    (
        EXIT_NOT_FOUND,
        "something named does not exist: a path, the collection, the knowledge base, the model's files, an escalation",
    ),
    (
        EXIT_NOT_ANSWERED,
        "not answered: `grace ask` escalated or declined the question; `grace answer`: no reviewer answer yet",
    ),
    (
        EXIT_NEEDS_INPUT,
        "the agent asked a question the run cannot go on without, and nobody could answer it (no terminal, `--no-input`)",
    ),
    (
        EXIT_BROKEN_PIPE,
        "the output stopped being read (`grace search … | head -1`): GRACE stops quietly, as a tool killed by SIGPIPE",
    ),
];

impl Error {
    /// The state database's error under this one, whichever store it
    /// came from (PostgreSQL unreachable is a 503, not a fault).
    pub fn state(&self) -> Option<&crate::state::StateError> {
        match self {
            Error::State(e)
            | Error::Review(ReviewError::State(e))
            | Error::Session(crate::session::SessionError::State(e))
            | Error::Feedback(crate::feedback::FeedbackError::State(e))
            | Error::Auth(crate::auth::AuthError::State(e))
            | Error::Ingest(IngestError::State(e))
            | Error::Calibration(crate::confidence::calibration::CalibrationError::State(e)) => {
                Some(e)
            }
            _ => None,
        }
    }

    /// Whether a disk GRACE writes to is full: the embedded store's
    /// (`storage.min_free_mb`), a state database's, or the manifest's.
    /// Nothing was written.
    pub fn is_disk_full(&self) -> bool {
        use std::io::ErrorKind::{QuotaExceeded, StorageFull};
        match self {
            Error::Store(StoreError::DiskFull { .. })
            | Error::Ingest(IngestError::Store(StoreError::DiskFull { .. })) => true,
            Error::Ingest(IngestError::Io { source, .. }) => {
                matches!(source.kind(), StorageFull | QuotaExceeded)
            }
            e => e.state().is_some_and(|s| s.is_disk_full()),
        }
    }

    /// The process exit code for this error.
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Config(_)
            | Error::InvalidInput(_)
            | Error::ModelMismatch { .. }
            | Error::DataDirReadOnly { .. }
            | Error::FeatureOff { .. } => EXIT_BAD_INPUT,
            Error::Embed(e) => embed_code(e),
            Error::Store(e) => store_code(e),
            Error::Ingest(e) => match e {
                IngestError::PathNotFound { .. } => EXIT_NOT_FOUND,
                IngestError::BadGlob { .. }
                | IngestError::Config(_)
                | IngestError::NotAllowed { .. }
                | IngestError::RemotePathsOff
                | IngestError::TooManyFiles { .. } => EXIT_BAD_INPUT,
                IngestError::Store(s) => store_code(s),
                IngestError::Embed(m) => embed_code(m),
                IngestError::Manifest { .. }
                | IngestError::Io { .. }
                | IngestError::State(_)
                | IngestError::Cancelled { .. } => EXIT_FAILURE,
            },
            Error::Lexical(_) | Error::Server(_) | Error::State(_) => EXIT_FAILURE,
            Error::UnknownKb(_) => EXIT_NOT_FOUND,
            Error::Watch(crate::watch::WatchError::Watch { .. }) => EXIT_NOT_FOUND,
            Error::Watch(crate::watch::WatchError::Stopped(_)) => EXIT_FAILURE,
            Error::Calibration(crate::confidence::calibration::CalibrationError::Invalid {
                ..
            }) => EXIT_BAD_INPUT,
            Error::Calibration(_) => EXIT_FAILURE,
            Error::Reader(crate::reader::ReaderError::ModelMissing { .. }) => EXIT_NOT_FOUND,
            Error::Reader(_) => EXIT_FAILURE,
            Error::Exec(crate::exec::ExecError::Cancelled) => EXIT_FAILURE,
            Error::Exec(_) => EXIT_BAD_INPUT,
            Error::Tool(e) => match e.kind {
                crate::tools::ToolErrorKind::Unknown => EXIT_BAD_INPUT,
                _ => EXIT_FAILURE,
            },
            // A generator that is not set up (no API key) is configuration.
            Error::Llm(crate::llm::LlmError::Setup { .. }) => EXIT_BAD_INPUT,
            Error::Llm(_) => EXIT_FAILURE,
            Error::Review(e) => match e {
                ReviewError::NotFound { .. } => EXIT_NOT_FOUND,
                ReviewError::Invalid(_)
                | ReviewError::Conflict { .. }
                | ReviewError::AlreadyRegistered(_)
                | ReviewError::WrongState(_) => EXIT_BAD_INPUT,
                ReviewError::WaitTimedOut { .. } => EXIT_NOT_ANSWERED,
                ReviewError::State(_) | ReviewError::Corrupt { .. } | ReviewError::Io { .. } => {
                    EXIT_FAILURE
                }
            },
            Error::Session(e) => match e {
                crate::session::SessionError::NotFound { .. }
                | crate::session::SessionError::RunNotFound { .. } => EXIT_NOT_FOUND,
                _ => EXIT_FAILURE,
            },
            Error::Feedback(e) => match e {
                crate::feedback::FeedbackError::NotFound { .. } => EXIT_NOT_FOUND,
                crate::feedback::FeedbackError::NotAnswered { .. }
                | crate::feedback::FeedbackError::Invalid(_)
                | crate::feedback::FeedbackError::TooLong { .. }
                | crate::feedback::FeedbackError::RateLimited { .. }
                | crate::feedback::FeedbackError::Disabled => EXIT_BAD_INPUT,
                crate::feedback::FeedbackError::State(_)
                | crate::feedback::FeedbackError::Corrupt { .. }
                | crate::feedback::FeedbackError::Io { .. } => EXIT_FAILURE,
            },
            Error::Auth(e) => match e {
                crate::auth::AuthError::NotFound { .. } => EXIT_NOT_FOUND,
                crate::auth::AuthError::Invalid(_) => EXIT_BAD_INPUT,
                crate::auth::AuthError::State(_) | crate::auth::AuthError::Io { .. } => {
                    EXIT_FAILURE
                }
            },
            Error::Eval(e) => match e {
                EvalError::NotASet { .. } | EvalError::Missing { .. } => EXIT_NOT_FOUND,
                EvalError::BadQuestion { .. } => EXIT_BAD_INPUT,
                EvalError::Io { .. } => EXIT_FAILURE,
            },
        }
    }
}

fn embed_code(e: &EmbedError) -> u8 {
    match e {
        EmbedError::ModelMissing { .. } | EmbedError::RuntimeMissing { .. } => EXIT_NOT_FOUND,
        _ => EXIT_FAILURE,
    }
}

fn store_code(e: &StoreError) -> u8 {
    match e {
        StoreError::NotFound { .. } | StoreError::CollectionNotFound { .. } => EXIT_NOT_FOUND,
        StoreError::DimensionMismatch { .. }
        | StoreError::Unauthorized { .. }
        | StoreError::Incompatible { .. }
        | StoreError::ParametersDiffer { .. } => EXIT_BAD_INPUT,
        _ => EXIT_FAILURE,
    }
}
