//! Shared helpers for the integration tests: a configuration that uses the
//! real local model (installed by `scripts/setup`) and a temporary data dir.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use grace::embed::{Embedder, FastEmbedder};
use grace::{Config, KnowledgeBase, OpenMode};

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Defaults, with the model from the repository's `models/` and the data in `data_dir`.
pub fn config(data_dir: &Path) -> Config {
    let mut c = Config::default();
    c.storage.data_dir = data_dir.to_path_buf();
    c.embedding.model_dir = repo().join("models/minilm");
    c.embedding.runtime_path = repo().join("models/libonnxruntime.so");
    c
}

/// One embedder for all tests of a binary (the model loads once).
pub fn embedder() -> Arc<dyn Embedder> {
    static E: OnceLock<Arc<dyn Embedder>> = OnceLock::new();
    E.get_or_init(|| {
        let c = config(Path::new("unused"));
        Arc::new(FastEmbedder::new(&c.embedding).unwrap_or_else(|e| {
            panic!("{e}\n(the integration tests need the real model: run scripts/setup)")
        }))
    })
    .clone()
}

pub fn open(config: Config) -> KnowledgeBase {
    KnowledgeBase::with_embedder(config, embedder(), OpenMode::Create).unwrap()
}

pub fn shared_eval() -> PathBuf {
    repo().join("../shared/eval")
}

/// A knowledge base in `data` holding the bundled sample (`examples/kb`).
pub fn open_sample(data: &Path) -> Arc<KnowledgeBase> {
    let kb = open(config(data));
    kb.ingest(
        &[repo().join("examples/kb")],
        &grace::ingest::IngestOptions::default(),
        &mut |_| {},
    )
    .unwrap();
    Arc::new(kb)
}
