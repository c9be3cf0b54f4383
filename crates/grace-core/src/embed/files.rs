//! The files of a model folder (the embedder's and the reader's) and how
//! they are read.

use std::path::{Path, PathBuf};

use fastembed::TokenizerFiles;

use super::{EmbedError, Result};

/// The ONNX file of a model folder (the embedder's and the reader's).
pub(crate) const MODEL_FILE: &str = "model.onnx";
/// The tokenizer files beside it, in [`TokenizerFiles`] field order.
pub(crate) const TOKENIZER_FILES: [&str; 4] = [
    "tokenizer.json",
    "config.json",
    "special_tokens_map.json",
    "tokenizer_config.json",
];

/// Reads the tokenizer files of the model folder `dir` with `read`.
pub(crate) fn tokenizer_files<E>(
    dir: &Path,
    read: impl Fn(&Path) -> std::result::Result<Vec<u8>, E>,
) -> std::result::Result<TokenizerFiles, E> {
    Ok(TokenizerFiles {
        tokenizer_file: read(&dir.join(TOKENIZER_FILES[0]))?,
        config_file: read(&dir.join(TOKENIZER_FILES[1]))?,
        special_tokens_map_file: read(&dir.join(TOKENIZER_FILES[2]))?,
        tokenizer_config_file: read(&dir.join(TOKENIZER_FILES[3]))?,
    })
}

pub(super) fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| EmbedError::ModelFile {
        path: PathBuf::from(path),
        message: e.to_string(),
    })
}
