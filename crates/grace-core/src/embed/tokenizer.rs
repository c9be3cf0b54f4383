//! The embedding model's tokenizer, built from a model folder's four
//! tokenizer files exactly as fastembed 7.5 builds it (`load_tokenizer`,
//! which it does not export): the same truncation, padding and special
//! tokens give the same token ids, so vectors stay what they were.

use tokenizers::{AddedToken, PaddingParams, PaddingStrategy, Tokenizer, TruncationParams};

use super::files::TOKENIZER_FILES;

/// The tokenizer of the files `files` (in [`TOKENIZER_FILES`] order:
/// `tokenizer.json`, `config.json`, `special_tokens_map.json`,
/// `tokenizer_config.json`), truncating to `max_length` tokens (or the
/// model's own limit, if lower) and padding a batch to its longest text.
/// The error names the file at fault.
pub(super) fn load(
    files: &fastembed::TokenizerFiles,
    max_length: usize,
) -> Result<Tokenizer, String> {
    let json = |bytes: &[u8], name: &str| -> Result<serde_json::Value, String> {
        serde_json::from_slice(bytes).map_err(|e| format!("{name}: {e}"))
    };
    let config = json(&files.config_file, TOKENIZER_FILES[1])?;
    let special_tokens_map = json(&files.special_tokens_map_file, TOKENIZER_FILES[2])?;
    let tokenizer_config = json(&files.tokenizer_config_file, TOKENIZER_FILES[3])?;
    let tokenizer = Tokenizer::from_bytes(&files.tokenizer_file)
        .map_err(|e| format!("{}: {e}", TOKENIZER_FILES[0]))?;

    // Some models write a huge `model_max_length` (1e30): it fits an f64.
    let model_max_length = tokenizer_config["model_max_length"]
        .as_f64()
        .ok_or_else(|| format!("{}: no numeric `model_max_length`", TOKENIZER_FILES[3]))?
        as f32;
    let max_length = max_length.min(model_max_length as usize);
    let pad = &tokenizer_config["pad_token"];
    let pad_token: String = pad
        .as_str()
        .or_else(|| pad["content"].as_str())
        .ok_or_else(|| format!("{}: no string `pad_token`", TOKENIZER_FILES[3]))?
        .into();
    let pad_id = config["pad_token_id"]
        .as_u64()
        .map(|id| id as u32)
        .or_else(|| tokenizer.token_to_id(&pad_token))
        .unwrap_or(0);

    let mut tokenizer = tokenizer;
    tokenizer.with_padding(Some(PaddingParams {
        strategy: PaddingStrategy::BatchLongest,
        pad_token,
        pad_id,
        ..Default::default()
    }));
    tokenizer
        .with_truncation(Some(TruncationParams {
            max_length,
            ..Default::default()
        }))
        .map_err(|e| format!("{}: {e}", TOKENIZER_FILES[0]))?;
    if let serde_json::Value::Object(tokens) = special_tokens_map {
        for value in tokens.values() {
            let token = if let Some(content) = value.as_str() {
                Some(AddedToken {
                    content: content.into(),
                    special: true,
                    ..Default::default()
                })
            } else if let (
                Some(content),
                Some(single_word),
                Some(lstrip),
                Some(rstrip),
                Some(normalized),
            ) = (
                value["content"].as_str(),
                value["single_word"].as_bool(),
                value["lstrip"].as_bool(),
                value["rstrip"].as_bool(),
                value["normalized"].as_bool(),
            ) {
                Some(AddedToken {
                    content: content.into(),
                    special: true,
                    single_word,
                    lstrip,
                    rstrip,
                    normalized,
                })
            } else {
                None
            };
            if let Some(token) = token {
                tokenizer
                    .add_special_tokens([token])
                    .map_err(|e| format!("{}: {e}", TOKENIZER_FILES[2]))?;
            }
        }
    }
    Ok(tokenizer)
}
