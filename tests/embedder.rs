//! The local embedder's sessions: a call's texts split between parallel
//! single-threaded sessions (`embedding.threads: 0`) come back as one
//! session gives them, in the order asked, with MiniLM and with the
//! multilingual model; and the vectors do not depend on how they were
//! split.

mod common;

use grace::embed::{Embedder, FastEmbedder};

fn texts() -> Vec<String> {
    let mut texts: Vec<String> = [
        "How do I keep my system up to date?",
        "apt-get upgrade installs the newest versions of the installed packages.",
        "パッケージを最新の状態に保つには、apt-get upgrade を実行します。",
        "A package is removed with apt-get remove; its configuration files stay.",
        "x",
        "dpkg --configure -a finishes interrupted installations.",
        "The cafeteria serves lunch from noon to two.",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    texts.push("long ".repeat(300));
    texts
}

fn same_vectors(model_dir: &str) {
    let mut config = common::config(std::path::Path::new("unused")).embedding;
    config.model_dir = common::repo().join(model_dir);
    config.threads = 1;
    let one = FastEmbedder::new(&config).unwrap();
    assert_eq!(one.sessions(), 1);
    let want = one.embed(&texts()).unwrap();
    for sessions in [2, 3] {
        let split = FastEmbedder::with_sessions(&config, sessions).unwrap();
        assert_eq!(split.sessions(), sessions);
        let got = split.embed(&texts()).unwrap();
        assert_eq!(got.len(), want.len());
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            // One thread per session: the same arithmetic, the same bits.
            assert_eq!(g, w, "{model_dir}, {sessions} sessions, text {i}");
        }
        // One text at a time, and a question, agree too.
        assert_eq!(split.embed(&texts()[2..3]).unwrap()[0], want[2]);
        assert_eq!(
            split
                .embed_query("How do I keep my system up to date?")
                .unwrap(),
            one.embed_query("How do I keep my system up to date?")
                .unwrap()
        );
        assert!(split.embed(&[]).unwrap().is_empty());
    }
}

#[test]
fn minilm_split_between_sessions_gives_one_sessions_vectors_in_order() {
    same_vectors("models/minilm");
}

#[test]
fn e5_split_between_sessions_gives_one_sessions_vectors_in_order() {
    same_vectors("models/e5");
}

#[test]
fn threads_zero_opens_one_session_per_core_within_the_bound() {
    let config = common::config(std::path::Path::new("unused")).embedding;
    assert_eq!(config.threads, 0, "the default");
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let embedder = FastEmbedder::new(&config).unwrap();
    assert_eq!(embedder.sessions(), cores.min(grace::embed::MAX_SESSIONS));
}
