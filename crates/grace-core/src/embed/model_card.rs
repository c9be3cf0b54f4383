//! A model folder's `grace-model.yml`: how its model is used (prefixes,
//! longest input, languages, pooling, the map of its cosines onto
//! GRACE's similarity scale).

use std::path::Path;

use super::files::read;
use super::{EmbedError, Result, SimilarityScale};

/// The optional file of a model folder that says how to use the model
/// (`scripts/e5_convert.py` writes one for multilingual-e5-small); without
/// it, a folder is used as MiniLM is (mean pooling, no prefixes).
pub const MODEL_CARD_FILE: &str = "grace-model.yml";

/// The longest model card read.
const MAX_MODEL_CARD_BYTES: u64 = 64 * 1024;

/// How a model folder's model is used (`grace-model.yml`).
#[derive(Debug, Clone, Default, serde::Deserialize)]
pub struct ModelCard {
    /// The model's name (`multilingual-e5-small`).
    #[serde(default)]
    pub name: Option<String>,
    /// Put before a question (`"query: "`).
    #[serde(default)]
    pub query_prefix: String,
    /// Put before a passage (`"passage: "`).
    #[serde(default)]
    pub passage_prefix: String,
    /// The model's longest input in tokens (caps `embedding.max_length`).
    #[serde(default)]
    pub max_length: Option<usize>,
    /// The languages it reads (`multilingual`, or a list in words).
    #[serde(default)]
    pub languages: Option<String>,
    /// The pooling it was trained with; only `mean` is supported.
    #[serde(default)]
    pub pooling: Option<String>,
    /// How its cosines map onto GRACE's similarity scale; absent: as they
    /// are (MiniLM's).
    #[serde(default)]
    pub similarity: Option<SimilarityScale>,
}

impl ModelCard {
    /// The card of the model folder `dir`, or the default (MiniLM's way)
    /// when there is none.
    pub fn of(dir: &Path) -> Result<Self> {
        let path = dir.join(MODEL_CARD_FILE);
        let Ok(meta) = std::fs::metadata(&path) else {
            return Ok(Self::default());
        };
        let bad = |message: String| EmbedError::ModelFile {
            path: path.clone(),
            message,
        };
        if meta.len() > MAX_MODEL_CARD_BYTES {
            return Err(bad(format!(
                "{} bytes, more than the {MAX_MODEL_CARD_BYTES} a model card may have",
                meta.len()
            )));
        }
        let card: ModelCard = serde_yaml::from_slice(&read(&path)?)
            .map_err(|e| bad(format!("not a model card: {e}")))?;
        if let Some(p) = card.pooling.as_deref().filter(|p| *p != "mean") {
            return Err(bad(format!("pooling `{p}` is not supported (only `mean`)")));
        }
        if card.query_prefix.chars().count() > 64 || card.passage_prefix.chars().count() > 64 {
            return Err(bad("a prefix longer than 64 characters".into()));
        }
        if let Some(scale) = &card.similarity {
            scale.check().map_err(bad)?;
        }
        Ok(card)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn card(text: &[u8]) -> Result<ModelCard> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(MODEL_CARD_FILE), text).unwrap();
        ModelCard::of(dir.path())
    }

    #[test]
    fn a_model_card_is_read_and_a_bad_one_is_an_error_naming_the_file() {
        let none = ModelCard::of(Path::new("/nonexistent")).unwrap();
        assert!(none.query_prefix.is_empty() && none.name.is_none());
        let ok = card(b"name: e5\nquery_prefix: \"query: \"\npassage_prefix: \"passage: \"\nmax_length: 512\nlanguages: multilingual\npooling: mean\nextra: ignored\n").unwrap();
        assert_eq!(ok.query_prefix, "query: ");
        assert_eq!(ok.max_length, Some(512));
        assert_eq!(ok.similarity, None, "no map: cosines as they are");
        let scaled = card(b"similarity:\n  query: {scale: 7.36, shift: -5.93}\n  passage: {scale: 5.79, shift: -4.61}\n").unwrap();
        let map = scaled.similarity.expect("the map is read");
        assert!((map.query.apply(0.9) - (7.36 * 0.9 - 5.93)).abs() < 1e-5);
        assert!((map.passage.apply(0.9) - (5.79 * 0.9 - 4.61)).abs() < 1e-5);
        for (bad, says) in [
            (
                b"similarity:\n  query: {scale: 0, shift: 0}\n  passage: {scale: 1, shift: 0}\n"
                    .to_vec(),
                "similarity.query.scale must be in (0, 100]",
            ),
            (
                b"similarity:\n  query: {scale: 1, shift: 0}\n  passage: {scale: -2, shift: 0}\n"
                    .to_vec(),
                "similarity.passage.scale",
            ),
            (
                b"similarity:\n  query: {scale: 1, shift: .nan}\n  passage: {scale: 1, shift: 0}\n"
                    .to_vec(),
                "similarity.query.shift must be in -100..=100",
            ),
            (
                b"similarity:\n  query: {scale: 1, shift: 0}\n".to_vec(),
                "not a model card",
            ),
            (
                b"similarity:\n  query: {scale: 1, shift: 0, tilt: 2}\n  passage: {scale: 1, shift: 0}\n"
                    .to_vec(),
                "not a model card",
            ),
            // Numbers beyond f32 and nesting beyond the parser's depth.
            (
                b"similarity:\n  query: {scale: 1e300, shift: 0}\n  passage: {scale: 1, shift: 0}\n"
                    .to_vec(),
                "similarity.query.scale",
            ),
            (
                b"similarity:\n  query: {scale: 1, shift: -1e40}\n  passage: {scale: 1, shift: 0}\n"
                    .to_vec(),
                "similarity.query.shift",
            ),
            (
                [b"similarity: ".to_vec(), vec![b'['; 60_000]].concat(),
                "not a model card",
            ),
            (b"pooling: cls\n".to_vec(), "pooling `cls`"),
            (b"query_prefix: [1, 2\n".to_vec(), "not a model card"),
            (
                format!("query_prefix: \"{}\"\n", "x".repeat(65)).into_bytes(),
                "longer than 64",
            ),
            (vec![b'#'; 70_000], "bytes, more than"),
            (vec![0xff, 0xfe, 0x00], "not a model card"),
        ] {
            let e = card(&bad).unwrap_err().to_string();
            assert!(e.contains(MODEL_CARD_FILE) && e.contains(says), "{e}");
        }
    }
}
