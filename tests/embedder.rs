//! The local embedder's sessions: a call's texts split between parallel
//! single-threaded sessions (`embedding.threads: 0`) come back as one
//! session gives them, in the order asked, with MiniLM and with the
//! multilingual model; the vectors do not depend on how they were split,
//! on the threads of the session a lone text runs on, nor on whether the
//! model was prepared; and they are bit for bit what fastembed gave.

use crate::support::common;

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

#[test]
fn a_lone_text_runs_on_every_core_with_the_same_vectors_as_one_thread() {
    let config = common::config(std::path::Path::new("unused")).embedding;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let default = FastEmbedder::new(&config).unwrap();
    assert_eq!(default.single_text_threads(), cores);
    let mut one = config.clone();
    one.threads = 1;
    let one = FastEmbedder::new(&one).unwrap();
    assert_eq!(one.single_text_threads(), 1);
    for text in texts() {
        assert_eq!(
            default.embed_query(&text).unwrap(),
            one.embed_query(&text).unwrap(),
            "{text:.40}"
        );
    }
    // A batch on the single-threaded sessions agrees with the lone texts.
    let batch = default.embed(&texts()).unwrap();
    for (text, vector) in texts().iter().zip(&batch) {
        assert_eq!(
            &default.embed(std::slice::from_ref(text)).unwrap()[0],
            vector
        );
    }
}

/// Three questions' vectors as fastembed 7.5 computed them.
fn known() -> (Vec<String>, Vec<Vec<f32>>) {
    #[derive(serde::Deserialize)]
    struct Known {
        texts: Vec<String>,
        vectors: Vec<Vec<f32>>,
    }
    let path = common::repo().join("tests/fixtures/minilm-known-vectors.json");
    let known: Known = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    (known.texts, known.vectors)
}

#[test]
fn the_prepared_model_gives_fastembeds_vectors_bit_for_bit_and_a_damaged_one_is_made_again() {
    let config = common::config(std::path::Path::new("unused")).embedding;
    let cache = tempfile::tempdir().unwrap();
    let (texts, want) = known();
    let prepared = FastEmbedder::new(&config)
        .unwrap()
        .with_cache(Some(cache.path().to_path_buf()));
    let as_it_is = FastEmbedder::new(&config).unwrap().with_cache(None);
    for embedder in [&prepared, &as_it_is] {
        for (text, vector) in texts.iter().zip(&want) {
            assert_eq!(&embedder.embed_query(text).unwrap(), vector, "{text}");
        }
        // The batch sessions (the prepared model's table given whole).
        assert_eq!(embedder.embed(&texts).unwrap(), want);
    }
    let folders: Vec<_> = std::fs::read_dir(cache.path().join("models"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(
        folders.len(),
        1,
        "one prepared model, no temporary left: {folders:?}"
    );
    let folder = &folders[0];
    for file in ["model.onnx", "model.data", "MANIFEST"] {
        assert!(folder.join(file).is_file(), "{file}");
    }
    // A flipped byte in the weights: found by the checksum, prepared again,
    // the same vectors.
    let data = folder.join("model.data");
    let mut bytes = std::fs::read(&data).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x40;
    std::fs::write(&data, &bytes).unwrap();
    let again = FastEmbedder::new(&config)
        .unwrap()
        .with_cache(Some(cache.path().to_path_buf()));
    assert_eq!(again.embed(&texts).unwrap(), want);
    assert_ne!(std::fs::read(&data).unwrap(), bytes, "made again");
    // A cache folder that cannot be written: the model as it is.
    let file = cache.path().join("a-file");
    std::fs::write(&file, b"not a folder").unwrap();
    let unwritable = FastEmbedder::new(&config).unwrap().with_cache(Some(file));
    assert_eq!(unwritable.embed_query(&texts[0]).unwrap(), want[0]);
}
