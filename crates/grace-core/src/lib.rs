//! GRACE's lower layers (ARCHITECTURE.md, layers 0 to 4): the
//! configuration, text helpers, embedding, the lexical encoder, where state
//! is kept, the vector stores, the generator clients, ingest, hybrid
//! search, plans, follow-up rewriting and the confidence model.
//!
//! Most users depend on `grace`, which re-exports every module here under
//! the same name (`grace::config`, `grace::search`, ...) and adds the
//! knowledge base, the tools, the agent, the review queue and the service.

#![warn(missing_docs)]

pub mod access;
pub mod audit;
pub mod auth;
pub mod confidence;
pub mod config;
pub mod display;
pub mod durable;
pub mod embed;
pub mod evalset;
pub mod followup;
pub mod ingest;
pub mod lang;
pub mod lexical;
pub mod llm;
pub mod plan;
pub mod reader;
pub mod rng;
pub mod search;
pub mod state;
pub mod store;
pub mod telemetry;
pub mod text;
pub mod watch;
