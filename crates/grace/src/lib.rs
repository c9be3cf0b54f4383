//! GRACE: knowledge-base question answering that knows when it does not know.
//!
//! This crate is the library behind the `grace` command: ingest and search
//! over an embedded vector store, and questions answered with a confidence
//! that decides whether to answer, escalate or decline:
//!
//! ```no_run
//! use grace::{Config, KnowledgeBase, OpenMode};
//! use grace::ingest::IngestOptions;
//!
//! # fn main() -> grace::Result<()> {
//! let config = Config::load(None)?;
//! let kb = KnowledgeBase::open(config, OpenMode::Create)?;
//! kb.ingest(&["examples/kb".into()], &IngestOptions::default(), &mut |_| {})?;
//! for passage in kb.search("How do I rotate the keys?", Some(3), None)? {
//!     println!("{:.3} {} {}", passage.score, passage.source, passage.section);
//! }
//!
//! let kb = std::sync::Arc::new(kb);
//! let registry = grace::tools::ToolRegistry::from_config(kb.config(), kb.clone())?;
//! let executor = grace::exec::Executor::new(&registry, kb.config(), kb.scorer(), 5);
//! let report = executor.ask("How do I rotate the keys?", &mut |_event| {})?;
//! println!("{:?} at {:.2}: {:?}", report.decision, report.confidence, report.answer);
//! # Ok(())
//! # }
//! ```
//!
//! An escalated run can be queued for human reviewers with
//! [`review::ReviewQueue`]; their answer completes it (see [`review`]).
//!
//! See `ARCHITECTURE.md` for how the modules fit together.

#![warn(missing_docs)]

pub use grace_core::access;
pub mod agent;
pub use grace_core::audit;
pub use grace_core::auth;
pub use grace_core::confidence;
pub use grace_core::config;
pub use grace_core::display;
pub mod doctor;
pub use grace_core::durable;
pub use grace_core::embed;
mod error;
pub use grace_core::evalset;
pub mod exec;
pub mod feedback;
pub use grace_core::followup;
pub mod gaps;
pub use grace_core::ingest;
mod kb;
pub use grace_core::lang;
pub mod learn;
pub use grace_core::lexical;
pub use grace_core::llm;
pub mod migrate;
pub use grace_core::plan;
pub use grace_core::reader;
pub mod review;
pub use grace_core::rng;
pub use grace_core::search;
pub mod selfcal;
pub mod service;
pub mod session;
pub use grace_core::state;
pub use grace_core::store;
pub use grace_core::telemetry;
pub use grace_core::text;
pub mod tools;
pub use grace_core::watch;

pub use config::Config;
pub use error::{
    EXIT_BAD_INPUT, EXIT_BROKEN_PIPE, EXIT_CODES, EXIT_FAILURE, EXIT_NEEDS_INPUT,
    EXIT_NOT_ANSWERED, EXIT_NOT_FOUND, Error, Result,
};
pub use kb::{IndexStatus, KnowledgeBase, OpenMode, Status, drop_server_collection, status};
pub use search::Passage;
pub use service::{AskOptions, AskOutcome, Grace, GraceBuilder, RunCounts, RunEvent, RunStream};
