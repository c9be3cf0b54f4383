//! The fuzz targets: each takes arbitrary bytes to one parser or text
//! function that outside input reaches, and must return without panicking,
//! aborting or hanging. Shared by the AFL++ harness (`fuzz/main.rs`, run by
//! `scripts/fuzz`) and the regression test that replays the committed
//! corpus (`tests/fuzz_corpus.rs`).

use std::sync::{Arc, OnceLock};

use grace::ingest::chunk::{ChunkParams, chunk_sections, chunk_text, sentences};
use grace::ingest::load::{Format, Limits, load};
use grace::lexical::{LexicalEncoder, distinct_identifiers, identifiers, identifiers_found};
use grace::llm::{GenerateRequest, Generation, LlmClient, StopReason, ToolSpec};
use grace::plan::Planner;
use grace::tools::{Reasoning, Tool};
use grace_serve::api::{AskBody, IngestBody, SearchBody};
use serde_json::json;

/// Every target, by the name `scripts/fuzz` and the corpus folders use.
pub const TARGETS: &[&str] = &[
    "config", "markdown", "html", "rst", "text", "chunker", "lexical", "plan", "answer", "http",
    "pdf", "docx", "odt", "epub", "man", "qa",
];

/// Runs target `name` on `data`; `false` for an unknown name.
pub fn run(name: &str, data: &[u8]) -> bool {
    match name {
        "config" => config(data),
        "markdown" => loader(data, Format::Markdown),
        "html" => loader(data, Format::Html),
        "rst" => loader(data, Format::ReStructuredText),
        "text" => loader(data, Format::Text),
        "pdf" => loader(data, Format::Pdf),
        "docx" => archive(data, Format::Docx, "word/document.xml", &[]),
        "odt" => archive(data, Format::Odt, "content.xml", &[]),
        "epub" => archive(data, Format::Epub, "c.opf", EPUB_PARTS),
        "man" => loader(data, Format::Man),
        // One byte picks CSV or JSON lines.
        "qa" => match data.split_first() {
            Some((b, rest)) if b % 2 == 0 => loader(rest, Format::QaCsv),
            Some((_, rest)) => loader(rest, Format::QaJsonl),
            None => {}
        },
        "chunker" => chunker(data),
        "lexical" => lexical(data),
        "plan" => plan(data),
        "answer" => answer(data),
        "http" => http(data),
        _ => return false,
    }
    true
}

/// A configuration file, then (after a NUL byte) `GRACE_…=value` lines as
/// environment overrides: loaded, overridden and validated like
/// `Config::load` does.
fn config(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let (yaml, env) = text.split_once('\0').unwrap_or((&text, ""));
    let vars: Vec<(String, String)> = env
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    static FILE: OnceLock<std::path::PathBuf> = OnceLock::new();
    let file = FILE.get_or_init(|| {
        std::env::temp_dir().join(format!("grace-fuzz-config-{}.yml", std::process::id()))
    });
    if std::fs::write(file, yaml).is_ok() {
        let _ = grace::Config::load_with_env(Some(file), &vars);
    }
    let _ = grace::Config::from_yaml(yaml);
}

/// One loader, then the chunker over what it read.
fn loader(data: &[u8], format: Format) {
    if let Ok(doc) = load(data, format, &Limits::default()) {
        let _ = chunk_sections(
            &doc.sections,
            ChunkParams {
                size: 40,
                overlap: 8,
            },
        );
    }
}

/// The fixed parts of an EPUB whose package file (`c.opf`) is fuzzed.
const EPUB_PARTS: &[(&str, &[u8])] = &[
    (
        "META-INF/container.xml",
        b"<container><rootfiles><rootfile full-path=\"c.opf\"/></rootfiles></container>",
    ),
    (
        "a.xhtml",
        b"<html><body><h1>C</h1><p>text</p></body></html>",
    ),
];

/// A ZIP-based format. The first byte picks: even, the rest is the file;
/// odd, the rest is the XML of `entry`, zipped here with `parts`
/// (mutations of a compressed, checksummed archive rarely reach the XML).
fn archive(data: &[u8], format: Format, entry: &str, parts: &[(&str, &[u8])]) {
    match data.split_first() {
        Some((b, rest)) if b % 2 == 1 => {
            use std::io::Write;
            let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
            let stored = zip::write::SimpleFileOptions::default()
                .compression_method(zip::CompressionMethod::Stored);
            for (name, bytes) in parts.iter().copied().chain([(entry, rest)]) {
                if w.start_file(name, stored).is_err() || w.write_all(bytes).is_err() {
                    return;
                }
            }
            if let Ok(c) = w.finish() {
                loader(&c.into_inner(), format);
            }
        }
        Some((_, rest)) => loader(rest, format),
        None => {}
    }
}

/// The chunker and sentence splitter; the first two bytes pick the chunk
/// size and overlap.
fn chunker(data: &[u8]) {
    let (size, overlap, rest) = match data {
        [a, b, rest @ ..] => (usize::from(*a), usize::from(*b), rest),
        _ => (8, 2, data),
    };
    let text = String::from_utf8_lossy(rest);
    let _ = chunk_text(&text, ChunkParams { size, overlap });
    for paragraph in text.split("\n\n") {
        let _ = sentences(paragraph);
    }
}

/// The lexical encoder and identifier matching.
fn lexical(data: &[u8]) {
    static ENCODER: OnceLock<LexicalEncoder> = OnceLock::new();
    let encoder = ENCODER.get_or_init(|| LexicalEncoder::new().expect("the lexical encoder"));
    let text = String::from_utf8_lossy(data);
    let _ = encoder.encode_document(&text);
    let _ = encoder.encode_query(&text);
    let _ = identifiers(&text);
    let wanted = distinct_identifiers(&text);
    let _ = identifiers_found(&wanted, &text);
    let _ = grace::confidence::citation_markers(&text);
}

/// A language model that replies with the fuzz input.
struct Replies(String);

impl LlmClient for Replies {
    fn name(&self) -> &str {
        "fuzz"
    }
    fn can_plan(&self) -> bool {
        true
    }
    fn generate(&self, _: &GenerateRequest) -> grace::llm::Result<Generation> {
        Ok(Generation::plain(
            self.0.clone(),
            StopReason::Complete,
            Default::default(),
        ))
    }
}

/// A plan a language model wrote: parsed and validated by the planner.
fn plan(data: &[u8]) {
    let tools: Vec<ToolSpec> = ["rag_search", "reasoning", "ask_user"]
        .iter()
        .map(|n| ToolSpec {
            name: (*n).to_string(),
            description: String::new(),
            parameters: json!({"type": "object"}),
        })
        .collect();
    let llm = Arc::new(Replies(String::from_utf8_lossy(data).into_owned()));
    let _ = Planner::new(Some(llm)).plan("How do I roll back?", 5, &tools);
}

/// An answer a language model wrote: parsed, its citations checked and
/// scored against two sources by the `reasoning` tool.
fn answer(data: &[u8]) {
    let llm = Arc::new(Replies(String::from_utf8_lossy(data).into_owned()));
    let Ok(tool) = Reasoning::new(llm) else {
        return;
    };
    let input = json!({
        "query": "How do I roll back?",
        "sources": [
            {"text": "Run orbit rollback [1] to restore the last release.", "source": "/kb/a.md"},
            {"text": "Deploys are frozen in December.", "source": "/kb/b.md"},
        ],
    });
    let _ = tool.execute(&input, &grace::access::ReadScope::All);
}

/// The JSON bodies of `/v1/ask`, `/v1/search` and `/v1/ingest`, parsed as
/// the server parses them (the first byte picks which) and checked.
fn http(data: &[u8]) {
    let Some((which, body)) = data.split_first() else {
        return;
    };
    match which % 3 {
        0 => {
            if let Ok(b) = serde_json::from_slice::<AskBody>(body) {
                let options = b.options(grace::access::ReadScope::All);
                if let Some(limit) = options.limit {
                    let _ = grace::service::check_ask_limit(limit);
                }
            }
        }
        1 => {
            if let Ok(b) = serde_json::from_slice::<SearchBody>(body)
                && let Some(limit) = b.limit
            {
                let _ = (1..=grace::config::MAX_SEARCH_LIMIT).contains(&limit);
            }
        }
        _ => {
            let _ = serde_json::from_slice::<IngestBody>(body);
        }
    }
}
