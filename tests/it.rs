//! GRACE's integration tests, one binary: each module below was a test
//! binary of its own, and each linked the whole crate and the store (56
//! links, and 56 binaries run one after another). Run one module with a
//! filter: `cargo test --test it crash::`. `tests/metrics.rs` alone is a
//! binary of its own: it counts what the process's one metrics recorder
//! sees, which the other modules' questions would move too.
//!
//! The tests run on the real embedded store and the real local model
//! (`scripts/setup`). Their helpers are in `support`: `common` (a
//! configuration on the real model, a sample knowledge base, the `grace`
//! binary) and the servers and fakes some modules start (Qdrant,
//! PostgreSQL, HAProxy, a browser, a scripted LLM).

mod support;

mod access;
mod agent;
mod api_http;
mod ask;
mod ask_page;
mod book;
mod book_examples;
mod calibrate;
mod cjk_properties;
mod cli;
mod cluster;
mod conversations;
mod crash;
mod document_formats;
mod embedder;
mod faults;
mod feedback;
mod fuzz_corpus;
mod hostile_answers;
mod hostile_documents;
mod hostile_identity;
mod hostile_ingest;
mod hostile_leaks;
mod hostile_limits;
mod hostile_scripts;
mod hostile_unicode;
mod hostile_waits;
mod hostile_web;
mod identifiers;
mod ingest;
mod japanese;
mod kbs;
mod layering;
mod llm_remote;
mod llm_tools;
mod mcp;
mod mcp_client;
mod multilingual_model;
mod qdrant_cluster;
mod qdrant_end_to_end;
mod reader;
mod recall;
mod reference;
mod review;
mod review_http;
mod review_page;
mod self_calibration;
mod state_postgres;
mod store_index;
mod store_suite;
mod tools;
mod tools_registry;
mod tools_runtime;
mod tools_web;
mod watch;
