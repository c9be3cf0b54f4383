//! Configuration: typed sections, built-in defaults, YAML loading,
//! `GRACE_<SECTION>__<KEY>` environment overrides and validation.
//!
//! Load order (later wins): [`Config::default()`] → the YAML file (`--config
//! PATH`, else `./grace_config.yml` when present) → environment variables.
//! `grace_config.yml` at the repository root documents every key and equals
//! `Config::default()` (a test proves it).
//!
//! Relative paths in a config file are resolved against the file's folder;
//! the model paths the file does not set (`embedding.model_dir`,
//! `embedding.runtime_path`, `reader.model_dir`) against GRACE's per-user
//! folder ([`grace_home`]), so a `grace` run from any directory finds the
//! models `scripts/setup` put there; other defaults and environment values
//! against the current directory.

mod env;
mod error;
mod home;
mod tools;
mod validate;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use self::error::{ConfigError, Result};
pub use self::home::{HOME_VAR, grace_home};
pub use self::tools::*;

/// The file looked for in the current directory when no `--config` is given.
pub const DEFAULT_CONFIG_FILE: &str = "grace_config.yml";

/// The whole configuration. Every section has defaults, so an empty file is
/// a valid configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Where and how the knowledge base is stored (`storage`).
    pub storage: StorageConfig,
    /// The local embedding model (`embedding`).
    pub embedding: EmbeddingConfig,
    /// How documents are found and chunked (`ingest`).
    pub ingest: IngestConfig,
    /// The collection, how it is searched, and the Qdrant server (`qdrant`).
    pub qdrant: QdrantConfig,
    /// What happens to the fused ranking: identifier pinning, reranking (`search`).
    pub search: SearchConfig,
    /// The answerability reader, a cross-encoder (`reader`).
    pub reader: ReaderConfig,
    /// How confidence is scored and levelled (`confidence`).
    pub confidence: ConfidenceConfig,
    /// The tools a run may use and their policies (`tools`).
    pub tools: ToolsConfig,
    /// The generator that writes answers (`llm`).
    pub llm: LlmConfig,
    /// Human review of escalations (`review`).
    pub review: ReviewConfig,
    /// The HTTP API of `grace serve` (`server`).
    pub server: ServerConfig,
    /// The MCP tool server of `grace mcp` (`mcp`).
    pub mcp: McpConfig,
    /// Conversations: how long they live and how much they hold (`sessions`).
    pub sessions: SessionsConfig,
    /// How a question is worked through: a fixed plan, a model's plan, or
    /// the agent loop (`planner`).
    pub planner: PlannerConfig,
    /// The agent loop's budgets (`agent`).
    pub agent: AgentConfig,
}

/// How a question is worked through (`planner`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct PlannerConfig {
    /// `default`, `plan` or `agent`.
    pub strategy: Strategy,
}

/// The planner strategies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// Always the default plan: search, then answer.
    Default,
    /// With a language model, the model writes the plan up front (JSON);
    /// any failure falls back to the default plan. Without one, the default.
    #[default]
    Plan,
    /// With a language model that calls tools: think, act, observe until a
    /// final answer or a budget (`agent.*`) runs out. Without one, the
    /// default plan.
    Agent,
}

/// The agent loop's budgets (`agent`), and how long a question back to
/// the asker waits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AgentConfig {
    /// Model turns at most (each may call tools).
    pub max_steps: usize,
    /// Model tokens at most, input and output, over the whole run.
    pub max_tokens: u64,
    /// Seconds at most for the whole run (waiting on the asker excluded).
    pub max_seconds: f64,
    /// Seconds a run that asked the asker a question (`needs_input`)
    /// waits for the reply before it expires.
    pub reply_timeout_seconds: f64,
}

impl Default for AgentConfig {
    fn default() -> Self {
        Self {
            max_steps: 8,
            max_tokens: 32_000,
            max_seconds: 90.0,
            reply_timeout_seconds: 300.0,
        }
    }
}

/// Where and how the knowledge base is stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StorageConfig {
    /// Folder holding the vector store and the ingest manifest.
    pub data_dir: PathBuf,
    /// Vector store backend. `edge`: embedded qdrant-edge, on disk, in
    /// process; `qdrant`: a Qdrant server (or cluster) at `qdrant.url`.
    pub backend: Backend,
    /// Threads the embedded store uses to search its segments in parallel
    /// within one query; `0`: one per CPU. 1 searches on the caller's
    /// thread: lowest latency on a small machine, and concurrent requests
    /// already run in parallel with each other.
    pub search_threads: usize,
    /// How the embedded store keeps the dense vectors it searches in
    /// memory: `int8` (a quarter of the size), `binary` (a thirty-second)
    /// or `none` (the full vectors). Quantised candidates are scored again
    /// with the full vectors, so scores stay exact cosines.
    pub quantization: Quantization,
    /// With quantisation, the candidates taken from the quantised vectors
    /// per result wanted (≥ 1), then scored again with the full vectors.
    pub oversampling: f64,
    /// Keep the full dense vectors on disk (memory-mapped, read when
    /// needed) instead of loaded in memory. Meant with quantisation: the
    /// search runs on the quantised copy in memory.
    pub vectors_on_disk: bool,
    /// Keep the lexical (BM25) index on disk (memory-mapped) instead of
    /// loaded in memory.
    pub lexical_on_disk: bool,
    /// Links per point in the dense index graph (HNSW `m`): more is more
    /// accurate, bigger and slower to build.
    pub hnsw_m: usize,
    /// Candidates considered per point while building the graph (HNSW
    /// `ef_construct`): more is more accurate and slower to build.
    pub hnsw_ef_construct: usize,
    /// Candidates a dense search keeps while walking the graph (HNSW `ef`);
    /// at least the candidates asked for. More is more accurate and slower.
    pub hnsw_ef: usize,
    /// Points per segment at most. Writing indexes what it has every this
    /// many points, so a large ingest never holds more than one segment's
    /// worth unindexed, and the indexed segments are merged up to this size.
    pub segment_points: usize,
}

/// How the embedded store compresses the dense vectors it keeps in memory
/// (`storage.quantization`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Quantization {
    /// The full 32-bit vectors.
    None,
    /// One byte per dimension (scalar quantisation).
    Int8,
    /// One bit per dimension.
    Binary,
}

/// The vector store implementations GRACE can use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Backend {
    /// Embedded qdrant-edge shard in `storage.data_dir`.
    Edge,
    /// A Qdrant server or cluster over gRPC (`qdrant.url`); the ingest
    /// manifest stays in `storage.data_dir`.
    Qdrant,
}

impl Backend {
    /// The name used in the configuration (`edge`, `qdrant`).
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Edge => "edge",
            Backend::Qdrant => "qdrant",
        }
    }
}

impl Default for StorageConfig {
    fn default() -> Self {
        Self {
            data_dir: PathBuf::from(".grace"),
            backend: Backend::Edge,
            search_threads: 1,
            quantization: Quantization::Int8,
            oversampling: 2.0,
            vectors_on_disk: true,
            lexical_on_disk: true,
            hnsw_m: 16,
            hnsw_ef_construct: 100,
            hnsw_ef: 128,
            segment_points: 50_000,
        }
    }
}

/// The local sentence-embedding model (installed by `scripts/setup`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EmbeddingConfig {
    /// Folder with `model.onnx`, `tokenizer.json`, `config.json`,
    /// `special_tokens_map.json` and `tokenizer_config.json`.
    pub model_dir: PathBuf,
    /// The ONNX Runtime shared library (version 1.24 or newer).
    pub runtime_path: PathBuf,
    /// Longest input in model tokens; longer text is truncated.
    pub max_length: usize,
    /// Texts embedded per call to the model.
    pub batch_size: usize,
    /// 0: one single-threaded model session per core (at most 4), a call's
    /// texts split between them; N: one session with N intra-op threads.
    pub threads: usize,
    /// Vectors of recently embedded questions and passage sentences kept
    /// for answering (one generation; at most twice this many are held,
    /// about 1.6 KiB each with MiniLM); 0 turns the cache off.
    pub cache_size: usize,
}

impl Default for EmbeddingConfig {
    fn default() -> Self {
        Self {
            model_dir: PathBuf::from("models/minilm"),
            runtime_path: PathBuf::from("models/libonnxruntime.so"),
            max_length: 256,
            batch_size: 1,
            threads: 0,
            cache_size: 8192,
        }
    }
}

/// How documents are found, split and chunked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IngestConfig {
    /// Target chunk length in words.
    pub chunk_size: usize,
    /// Words repeated from the end of one chunk at the start of the next.
    pub chunk_overlap: usize,
    /// Glob patterns (relative to the folder given to `grace ingest`) of the
    /// files to load; a file named explicitly on the command line is always
    /// loaded.
    pub include: Vec<String>,
    /// Glob patterns of files and folders to skip.
    pub exclude: Vec<String>,
    /// Files larger than this many bytes are reported and skipped; also the
    /// most a file may expand to (a gzipped man page, a DOCX's XML, a
    /// PDF's text).
    pub max_file_bytes: u64,
    /// Most times a compressed stream (gzip, a ZIP entry) may expand; more
    /// is taken for a decompression bomb and the file is skipped.
    pub max_compression_ratio: u64,
    /// Most entries a ZIP-based file (DOCX, ODT, EPUB) may list.
    pub max_archive_entries: usize,
    /// Most pages of a PDF, chapters of an EPUB or rows of a Q&A table.
    pub max_pages: usize,
    /// The column (CSV) or key (JSONL) of a Q&A table that holds the
    /// question; it becomes the passage's heading.
    pub qa_question_column: String,
    /// The column or key of a Q&A table that holds the answer.
    pub qa_answer_column: String,
    /// Chunks embedded and committed together (store flush + manifest
    /// save). Smaller loses less work to a crash; larger is faster.
    pub commit_chunks: usize,
    /// Most files one ingest may walk; past it the ingest is refused.
    pub max_files: usize,
    /// Times a store write (upsert, delete) that failed for a moment (a
    /// Qdrant server unreachable or timing out) is tried again before the
    /// ingest stops. Writes are idempotent, so a retry never duplicates.
    pub store_retries: u32,
    /// Seconds before the first retry; each next wait doubles (at most 30).
    pub store_retry_seconds: f64,
    /// Folders that remote callers (HTTP `/v1/ingest`, MCP `ingest`) may
    /// name files and folders in; empty: they may only upload. Symbolic
    /// links that lead out of them are not followed. The CLI is not bound
    /// by it.
    pub allowed_roots: Vec<PathBuf>,
    /// Seconds without a file-system event that end a batch of changes
    /// (`grace ingest --watch`, `server.watch`); the batch is then
    /// ingested.
    pub watch_debounce_seconds: f64,
}

impl Default for IngestConfig {
    fn default() -> Self {
        Self {
            chunk_size: 200,
            chunk_overlap: 30,
            include: [
                "**/*.md",
                "**/*.markdown",
                "**/*.txt",
                "**/*.rst",
                "**/*.html",
                "**/*.htm",
                "**/*.pdf",
                "**/*.pdf.gz",
                "**/*.docx",
                "**/*.odt",
                "**/*.epub",
                "**/*.[1-9]",
                "**/*.[1-9].gz",
                "**/*.csv",
                "**/*.jsonl",
            ]
            .map(String::from)
            .to_vec(),
            exclude: ["**/.git/**", "**/node_modules/**", "**/target/**"]
                .map(String::from)
                .to_vec(),
            max_file_bytes: 10_000_000,
            max_compression_ratio: 100,
            max_archive_entries: 10_000,
            max_pages: 5_000,
            qa_question_column: "question".into(),
            qa_answer_column: "answer".into(),
            commit_chunks: 256,
            max_files: 100_000,
            store_retries: 5,
            store_retry_seconds: 1.0,
            allowed_roots: Vec::new(),
            watch_debounce_seconds: 0.5,
        }
    }
}

/// The collection, how it is searched, and the Qdrant server it lives on
/// when `storage.backend` is `qdrant`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct QdrantConfig {
    /// Collection name; the embedded store keeps it in
    /// `<data_dir>/collections/<collection>`.
    pub collection: String,
    /// gRPC URL of the Qdrant server (`storage.backend: qdrant`): `http://`
    /// or `https://` (TLS), port 6334 by default (6333 is its REST port).
    pub url: String,
    /// API key sent to the Qdrant server; empty: none. Best set through
    /// `GRACE_QDRANT__API_KEY` rather than in a file.
    pub api_key: String,
    /// Seconds one request to the Qdrant server may take (also the
    /// connection timeout).
    pub timeout_seconds: f64,
    /// Passages returned by a search when `-k` is not given.
    pub search_limit: usize,
    /// Passages whose dense cosine similarity is below this are dropped.
    pub score_threshold: f32,
    /// Fuse a lexical (BM25 + exact identifier) ranking with the dense one.
    pub hybrid: bool,
    /// The lexical ranking's bonus in the fusion, in cosine units: a
    /// passage scores its dense cosine plus `lexical_weight · BM25 / best
    /// BM25` for queries in plain words.
    pub lexical_weight: f32,
    /// The same for queries that name an identifier (`E0382`, `--purge`,
    /// `foo_bar()`, `1.24.4`), which dense embeddings match poorly and the
    /// lexical ranking matches exactly.
    pub identifier_weight: f32,
    /// Candidates taken from each ranking before fusion.
    pub candidates: usize,
    /// Shards of a collection GRACE creates on a server; 0: the server's
    /// default (one per node). Fixed at creation: a collection that exists
    /// with another number is an error.
    pub shard_number: u32,
    /// Copies of each shard kept on different nodes; 0: the server's
    /// default (1). With 2 or more, a cluster keeps serving and writing
    /// when a node is lost.
    pub replication_factor: u32,
    /// Replicas that must apply a write before it counts as done; 0: the
    /// server's default (1). At most `replication_factor`.
    pub write_consistency_factor: u32,
}

impl Default for QdrantConfig {
    fn default() -> Self {
        Self {
            collection: "grace".to_string(),
            url: "http://localhost:6334".to_string(),
            api_key: String::new(),
            timeout_seconds: 10.0,
            search_limit: 5,
            score_threshold: 0.0,
            hybrid: true,
            lexical_weight: 0.15,
            identifier_weight: 0.3,
            candidates: 40,
            shard_number: 0,
            replication_factor: 0,
            write_consistency_factor: 0,
        }
    }
}

/// What happens to the fused ranking before passages are returned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SearchConfig {
    /// Put passages that contain the question's identifiers (`E0392`,
    /// `--purge`, `core.autocrlf`) verbatim above those that only resemble
    /// it: an exact identifier match is stronger evidence than similarity.
    pub pin_identifiers: bool,
    /// How the fused passages are reordered: `reader` by the answerability
    /// reader's probability (when the reader is available), `none` keeps
    /// the fused order.
    pub rerank: Rerank,
    /// Fused passages the reader reads per search; the best `limit` of them
    /// are returned. Below the search limit, the limit is used.
    pub rerank_depth: usize,
}

impl Default for SearchConfig {
    fn default() -> Self {
        Self {
            pin_identifiers: true,
            rerank: Rerank::None,
            rerank_depth: 5,
        }
    }
}

/// How fused passages are reordered (`search.rerank`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rerank {
    /// By the reader's probability that the passage answers the question.
    Reader,
    /// Keep the fused (and pinned) order.
    None,
}

/// The answerability reader: a cross-encoder that reads the question and a
/// passage together and gives the probability that the passage answers it
/// (GRACE's own, `scripts/train-reader`; see `models/reader/MODEL_CARD.md`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReaderConfig {
    /// Folder with `model.onnx` and the tokenizer files (`tokenizer.json`,
    /// `config.json`, `special_tokens_map.json`, `tokenizer_config.json`).
    pub model_dir: PathBuf,
    /// Longest question + passage in model tokens; longer passages are
    /// truncated.
    pub max_length: usize,
    /// ONNX Runtime intra-op threads; 0 uses every core.
    pub threads: usize,
}

impl Default for ReaderConfig {
    fn default() -> Self {
        Self {
            model_dir: PathBuf::from("models/reader"),
            max_length: 64,
            threads: 0,
        }
    }
}

/// Whether the reader is used (`confidence.reader`). Off by default: the
/// shipped reader does not yet improve GRACE's figures (README, Evaluation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ReaderMode {
    /// Used when its files load; otherwise a warning, and GRACE scores
    /// without it.
    Auto,
    /// Required: a missing or broken model is an error.
    On,
    /// Never loaded: no reranking by it, no `reader` factor.
    #[default]
    Off,
}

/// The generator that writes answers (see [`crate::llm`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LlmConfig {
    /// Which generator writes answers: `extractive`, `gemini` or `ollama`.
    pub provider: LlmProvider,
    /// How a language model is offered tools (`llm.tool_mode`): `auto`,
    /// `native` or `json`.
    pub tool_mode: ToolMode,
    /// Settings of the extractive answerer (`llm.extractive`).
    pub extractive: ExtractiveConfig,
    /// Google Gemini settings (`llm.gemini`), used when `provider` is `gemini`.
    pub gemini: RemoteLlmConfig,
    /// Ollama settings (`llm.ollama`), used when `provider` is `ollama`.
    pub ollama: RemoteLlmConfig,
}

impl Default for LlmConfig {
    fn default() -> Self {
        Self {
            provider: LlmProvider::default(),
            tool_mode: ToolMode::default(),
            extractive: ExtractiveConfig::default(),
            gemini: RemoteLlmConfig {
                model: "gemini-2.5-flash".into(),
                base_url: "https://generativelanguage.googleapis.com/v1beta/".into(),
                timeout_seconds: 25.0,
                temperature: 0.0,
                max_output_tokens: 1024,
            },
            ollama: RemoteLlmConfig {
                model: "llama3.1:8b".into(),
                base_url: String::new(),
                timeout_seconds: 25.0,
                temperature: 0.0,
                max_output_tokens: 1024,
            },
        }
    }
}

/// The generators GRACE has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum LlmProvider {
    /// Offline sentence selection with citations (no model beyond the embedder).
    #[default]
    Extractive,
    /// Google Gemini (needs `GEMINI_API_KEY`).
    Gemini,
    /// An Ollama server (`base_url`, else `OLLAMA_BASE_URL`, else localhost).
    Ollama,
}

impl LlmProvider {
    /// The name used in the configuration (`extractive`, `gemini`, `ollama`).
    pub fn as_str(self) -> &'static str {
        match self {
            LlmProvider::Extractive => "extractive",
            LlmProvider::Gemini => "gemini",
            LlmProvider::Ollama => "ollama",
        }
    }
}

/// How a language model is offered tools (`llm.tool_mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ToolMode {
    /// Native tool calling; if the provider answers that the model does
    /// not support tools, JSON mode from then on (with a warning).
    #[default]
    Auto,
    /// The provider's native tool calling (Gemini function declarations,
    /// Ollama `tools`).
    Native,
    /// No native tools: the catalogue and a JSON reply protocol go into the
    /// instruction, and the model answers with one JSON object per turn, for
    /// models without native tool calling.
    Json,
}

/// A language model behind an HTTP API.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RemoteLlmConfig {
    /// Model name sent to the provider (e.g. `gemini-2.5-flash`, `llama3.1:8b`).
    pub model: String,
    /// The API's base URL; empty means the provider's default (Ollama:
    /// `OLLAMA_BASE_URL`, else `http://localhost:11434`).
    pub base_url: String,
    /// Give up on one request after this long (the tool's own timeout and
    /// retries apply on top).
    pub timeout_seconds: f64,
    /// Sampling temperature sent with each request.
    pub temperature: f64,
    /// Most tokens the model may generate in one reply.
    pub max_output_tokens: u32,
}

impl Default for RemoteLlmConfig {
    fn default() -> Self {
        LlmConfig::default().gemini
    }
}

/// The extractive answerer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ExtractiveConfig {
    /// Sentences in an answer at most.
    pub max_sentences: usize,
    /// Abstain when no source sentence has at least this cosine similarity
    /// to the question.
    pub min_similarity: f32,
}

impl Default for ExtractiveConfig {
    fn default() -> Self {
        Self {
            max_sentences: 3,
            min_similarity: 0.35,
        }
    }
}

/// Human review of escalated questions (see [`crate::review`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReviewConfig {
    /// Seconds an escalation stays in the queue for a reviewer before it
    /// expires (a queue that people work through: hours, not minutes).
    pub escalation_ttl_seconds: f64,
    /// Seconds an asker waits for a reviewer by default (`grace ask
    /// --wait`, `grace answer --wait`): the interactive wait, separate
    /// from the escalation's life in the queue.
    pub asker_wait_seconds: f64,
    /// When the asker's wait ends, or the escalation expires, unanswered:
    /// `true` gives the asker the best low-confidence answer, marked as
    /// not reviewed; `false` gives no answer.
    pub auto_proceed_on_timeout: bool,
    /// Confidence recorded for a reviewer's answer when the reviewer gives
    /// none.
    pub reviewer_confidence: f64,
    /// Feedback whose first word is one of these asks GRACE to search again
    /// with the rest of the feedback as a hint, instead of answering.
    pub replan_words: Vec<String>,
}

impl Default for ReviewConfig {
    fn default() -> Self {
        Self {
            escalation_ttl_seconds: 86_400.0,
            asker_wait_seconds: 300.0,
            auto_proceed_on_timeout: false,
            reviewer_confidence: 1.0,
            replan_words: ["modify", "redo", "replan", "retry"]
                .map(String::from)
                .to_vec(),
        }
    }
}

/// Conversations (`grace chat`, `session_id` over HTTP and MCP), stored in
/// `sessions.sqlite3` in the data folder.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SessionsConfig {
    /// Seconds a session lives after its last turn.
    pub ttl_seconds: f64,
    /// Turns a session keeps; older ones are dropped.
    pub max_turns: usize,
    /// Bytes of turns (questions, answers, sources) a session keeps; the
    /// oldest turns are dropped past it.
    pub max_bytes: usize,
    /// Sessions open at once; creating one more is refused.
    pub max_sessions: usize,
}

impl Default for SessionsConfig {
    fn default() -> Self {
        Self {
            ttl_seconds: 86_400.0,
            max_turns: 50,
            max_bytes: 262_144,
            max_sessions: 10_000,
        }
    }
}

/// `grace serve`: the HTTP API (see [`crate::serve`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerConfig {
    /// Address to listen on when `--bind` is not given.
    pub bind: String,
    /// Bearer token every endpoint but `/health`, `/openapi.json` and the
    /// reviewer page requires; empty: no authentication, and the server
    /// refuses to bind beyond loopback. Best set through
    /// `GRACE_SERVER__API_KEY` rather than in a file.
    pub api_key: String,
    /// The administrator's token: registers reviewers and rotates their
    /// tokens over HTTP, reads every escalation, and opens the service
    /// endpoints too. Empty: only the CLI administers reviewers. Reviewers
    /// use their own tokens (`grace review register`), never this one.
    pub admin_api_key: String,
    /// Largest request body in bytes (uploads included); larger gets 413.
    pub max_body_bytes: usize,
    /// Seconds a request may take (`?wait=` on an escalation excepted);
    /// longer gets 504 and its run is cancelled.
    pub request_timeout: f64,
    /// Asks, searches and ingests served at once; more get 429.
    pub max_concurrency: usize,
    /// Seconds a shutdown (Ctrl-C, SIGTERM) waits for the requests in
    /// flight; those still running then are cancelled, and the store is
    /// flushed.
    pub shutdown_grace_seconds: f64,
    /// Sources under this folder are shown to HTTP and MCP clients
    /// relative to it; empty: relative to `ingest.allowed_roots`, the
    /// uploads and reviewed folders, else by file name (see
    /// [`crate::display`]).
    pub display_root: PathBuf,
    /// Folders (or files) `grace serve` keeps the knowledge base in step
    /// with: ingested at start, then re-ingested (changed files written
    /// again, deleted ones pruned) a moment after they change.
    pub watch: Vec<PathBuf>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            bind: "127.0.0.1:8080".to_string(),
            api_key: String::new(),
            admin_api_key: String::new(),
            max_body_bytes: 10 * 1024 * 1024,
            request_timeout: 60.0,
            max_concurrency: 16,
            shutdown_grace_seconds: 30.0,
            display_root: PathBuf::new(),
            watch: Vec::new(),
        }
    }
}

/// `grace mcp`: the MCP tool server (see [`crate::mcp`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpConfig {
    /// Tools offered to MCP clients; a registry tool (`rag_search`,
    /// `reasoning`, `ask_user`) also needs to be in `tools.enabled` and
    /// `mcp` in its `callers`. Other registry tools (`mcp.<server>.<tool>`,
    /// `web_*`, `rt.<name>`) are offered by their `callers` alone.
    pub tools: Vec<String>,
    /// Seconds an `ask` or `ingest` call may take (registry tools keep
    /// their own `tools.<name>.timeout_seconds`).
    pub timeout_seconds: f64,
}

impl Default for McpConfig {
    fn default() -> Self {
        Self {
            // Not `list_escalations` nor `answer_escalation`: they take any
            // reviewer's name, so an MCP client that has them can act as any
            // reviewer. Offer them only to a client trusted with that.
            tools: ["ask", "rag_search", "ingest"].map(String::from).to_vec(),
            timeout_seconds: 120.0,
        }
    }
}

/// How confidence is computed from the factors steps report (see
/// [`crate::confidence`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct ConfidenceConfig {
    /// Which formula scores a step (`confidence.model`).
    pub model: ConfidenceModel,
    /// Whether the answerability reader is used (`auto`, `on`, `off`).
    pub reader: ReaderMode,
    /// Bias and per-factor weights (`confidence.weights`), hand-set.
    pub weights: Weights,
    /// A calibration file written by `grace calibrate`
    /// (`confidence.calibration`): its fitted weights replace `weights`.
    pub calibration: Option<PathBuf>,
    /// Calibration on questions GRACE builds from the knowledge base itself
    /// (`confidence.self_calibration`; `grace calibrate --self`).
    pub self_calibration: SelfCalibrationConfig,
    /// Weights of the original GRACE formula (`confidence.grace_v1`), used
    /// when `model` is `grace_v1`.
    pub grace_v1: V1Weights,
    /// Score thresholds of the levels (`confidence.thresholds`).
    pub thresholds: Thresholds,
    /// How a run's step scores combine into its score.
    pub aggregation: Aggregation,
    /// The weights of the calibration file named by `calibration`, once it
    /// has been read (`confidence::calibration::apply`; not a config key).
    #[serde(skip)]
    pub fitted_weights: Option<Weights>,
}

impl ConfidenceConfig {
    /// The weights steps are scored with: the calibration's when one is
    /// loaded, else the hand-set `weights`.
    pub fn effective_weights(&self) -> &Weights {
        self.fitted_weights.as_ref().unwrap_or(&self.weights)
    }
}

/// Self-calibration: GRACE asks questions it builds from the knowledge
/// base's own sections, with each section present (answerable), withheld
/// (in-domain unanswerable) and general questions (out-of-domain), and fits
/// the confidence weights to how its answers fared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SelfCalibrationConfig {
    /// `auto`: score with the knowledge base's own fit, and fit again after
    /// an ingest that changed more than `refit_share` of the documents;
    /// `off`: the configured weights only.
    pub mode: SelfCalibrationMode,
    /// Sections sampled, one answerable question each (fewer in a smaller
    /// knowledge base).
    pub questions: usize,
    /// Share of answerable questions among those asked; the rest are
    /// unanswerable, half in-domain and half out-of-domain. The fitted
    /// scores assume this mix of questions.
    pub answerable_share: f64,
    /// Seed of the sampling: the same seed and knowledge base give the
    /// same questions and the same file.
    pub seed: u64,
    /// Share of documents added, changed or removed since the fit above
    /// which `auto` fits again after an ingest.
    pub refit_share: f64,
    /// Fewest sections a knowledge base needs to be fitted; below it the
    /// configured weights stay.
    pub min_sections: usize,
    /// Cosine similarity at or above which another chunk counts as a
    /// near-duplicate of a withheld section, and is withheld with it.
    pub near_duplicate: f64,
    /// Ask the configured language model (`llm.provider` `gemini` or
    /// `ollama`) to write each answerable question the way a user would
    /// ask it, falling back to the fixed patterns when its reply is
    /// unusable. Off by default; needs a model.
    pub model_questions: bool,
}

impl Default for SelfCalibrationConfig {
    fn default() -> Self {
        Self {
            mode: SelfCalibrationMode::Off,
            questions: 400,
            answerable_share: 0.6,
            seed: 1,
            refit_share: 0.2,
            min_sections: 50,
            near_duplicate: 0.95,
            model_questions: false,
        }
    }
}

/// Whether GRACE calibrates itself on its knowledge base.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum SelfCalibrationMode {
    /// Use the knowledge base's own fit and refit after large ingests.
    Auto,
    /// Never fit on its own nor use a self-calibration (the default: on
    /// the evaluation sets a self-calibration is not yet better than the
    /// shipped weights; README, "Self-calibration").
    #[default]
    Off,
}

impl SelfCalibrationMode {
    /// As written in the configuration.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Off => "off",
        }
    }
}

/// The formula that turns a step's factors into a score.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ConfidenceModel {
    /// `sigmoid(bias + Σ weight·feature)` with `confidence.weights` (or the
    /// calibration's).
    #[default]
    Logistic,
    /// The original GRACE's formula, as a baseline: a search quality from
    /// the passage similarities, then the weighted mean of the factors
    /// present (`confidence.grace_v1`).
    GraceV1,
}

/// Weights of the original GRACE formula's weighted mean.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct V1Weights {
    /// Weight of the search quality (from the passage similarities).
    pub search_quality: f64,
    /// Weight of the generator's own confidence, where it gives one.
    pub self_assessment: f64,
    /// Weight of the share of valid citations.
    pub citation_validity: f64,
}

impl Default for V1Weights {
    fn default() -> Self {
        Self {
            search_quality: 0.5,
            self_assessment: 0.3,
            citation_validity: 0.2,
        }
    }
}

/// Bias and per-factor weights of `score = sigmoid(bias + Σ weight·feature)`.
/// The defaults were fitted on GRACE's own training questions in users'
/// words, some held at hand-set values (`grace_config.yml` says which and
/// why); `grace calibrate` fits them to a knowledge base's own questions.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Weights {
    /// Constant added to the logit before the weighted features.
    pub bias: f64,
    /// Weight of the result count (feature: `min(count / 10, 1)`).
    pub result_count: f64,
    /// Weight of the highest passage cosine similarity.
    pub max_score: f64,
    /// Weight of the mean passage cosine similarity.
    pub mean_score: f64,
    /// Weight of the variance of the passage similarities.
    pub score_variance: f64,
    /// Weight of the lowest passage cosine similarity.
    pub min_score: f64,
    /// Weight of the top-1 minus top-2 similarity margin.
    pub margin: f64,
    /// Weight of the top passage's neighbour score (feature:
    /// `max(0, value - 0.5)`); negative, so a generic passage lowers confidence.
    pub neighbour_score: f64,
    /// Weight of the share of query terms found in the passages (0..1).
    pub query_coverage: f64,
    /// Weight of the share of answer sentences supported by their cited source.
    pub groundedness: f64,
    /// Weight of the share of citations that point at a real source.
    pub citation_validity: f64,
    /// Weight of the generator's own confidence, where it gives one.
    pub self_assessment: f64,
    /// Weight of the abstention flag (1 when the generator declined to answer).
    pub abstained: f64,
    /// Weight of the reader's probability that the top passage answers the
    /// question (feature: `value - 0.5`).
    pub reader: f64,
    /// Weight of the reader's top probability minus its second.
    pub reader_margin: f64,
    /// Weight of the share of the question's identifiers found verbatim in
    /// the top passage (feature: `value - 1`, so a missing identifier
    /// lowers confidence and a found one adds nothing).
    pub identifier_coverage: f64,
    /// Weight of the share of a follow-up's own terms found in the
    /// passages (feature: `value - 1`): inherited terms find the
    /// conversation's subject, so what the follow-up adds must be found
    /// too.
    pub follow_up_coverage: f64,
}

impl Default for Weights {
    fn default() -> Self {
        Self {
            bias: -12.0,
            result_count: 0.5,
            max_score: 7.73,
            mean_score: 0.0,
            score_variance: 0.0,
            min_score: 0.0,
            margin: 3.15,
            neighbour_score: -6.63,
            query_coverage: 1.38,
            groundedness: 6.0,
            citation_validity: 1.0,
            self_assessment: 1.0,
            abstained: -0.27,
            reader: 3.98,
            reader_margin: 0.59,
            identifier_coverage: 8.0,
            follow_up_coverage: 10.0,
        }
    }
}

/// Score thresholds of the levels: `silent ≥ silent`, `notify ≥ notify`,
/// `confirm ≥ confirm`, else escalate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Thresholds {
    /// Lowest score answered as is (`silent`).
    pub silent: f64,
    /// Lowest score answered with a caveat (`notify`).
    pub notify: f64,
    /// Lowest score answered with a request to confirm; below it, escalate.
    pub confirm: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Self {
            silent: 0.9,
            notify: 0.7,
            confirm: 0.4,
        }
    }
}

/// How step scores combine into a run's score.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Aggregation {
    /// Step `i` (from 1) weighs `i`: later steps (the answer) count most.
    #[default]
    Weighted,
    /// The weakest step.
    Min,
    /// All steps alike.
    Mean,
}

impl Config {
    /// Loads the configuration: defaults, then `path` (or `./grace_config.yml`
    /// if `path` is `None` and that file exists), then the process
    /// environment; validates the result.
    pub fn load(path: Option<&Path>) -> Result<Self> {
        let vars: Vec<(String, String)> = std::env::vars().collect();
        Self::load_with_env(path, &vars)
    }

    /// Like [`Config::load`], with the environment given explicitly (tests).
    pub fn load_with_env(path: Option<&Path>, vars: &[(String, String)]) -> Result<Self> {
        let file = match path {
            Some(p) => Some(p.to_path_buf()),
            None => {
                let p = PathBuf::from(DEFAULT_CONFIG_FILE);
                p.is_file().then_some(p)
            }
        };
        let (mut config, text) = match &file {
            Some(p) => {
                let text = std::fs::read_to_string(p).map_err(|source| ConfigError::Read {
                    path: p.clone(),
                    source,
                })?;
                let config = Self::from_yaml(&text).map_err(|e| e.in_file(p))?;
                (config, Some(text))
            }
            None => (Self::default(), None),
        };
        let parsed: Option<serde_yaml::Value> =
            text.as_deref().and_then(|t| serde_yaml::from_str(t).ok());
        let set_in_file = |section: &str, key: &str| {
            parsed
                .as_ref()
                .and_then(|v| v.get(section))
                .and_then(|v| v.get(key))
                .is_some_and(|v| !v.is_null())
        };
        let base = file.as_deref().and_then(Path::parent);
        config.resolve_paths(base, grace_home(vars).as_deref(), &set_in_file);
        let from_env = env::apply_overrides(&mut config, vars)?;
        let source = file.as_deref().zip(text.as_deref());
        validate::validate(&config).map_err(|e| e.locate(source, &from_env))?;
        Ok(config)
    }

    /// Parses YAML text over the defaults (missing keys keep their default)
    /// without validating ranges.
    pub fn from_yaml(text: &str) -> Result<Self> {
        if text.trim().is_empty() {
            return Ok(Self::default());
        }
        serde_yaml::from_str(text).map_err(ConfigError::from_yaml)
    }

    /// The YAML form of this configuration.
    pub fn to_yaml(&self) -> Result<String> {
        serde_yaml::to_string(self).map_err(ConfigError::from_yaml)
    }

    /// Makes relative paths absolute: those a config file sets, and the
    /// defaults of the data folder, display root and calibration file,
    /// against the file's folder `base`; the model paths the file does not
    /// set against GRACE's per-user folder `home`, where `scripts/setup`
    /// installs the models. An unknown root leaves a path as it is (the
    /// current directory).
    fn resolve_paths(
        &mut self,
        base: Option<&Path>,
        home: Option<&Path>,
        set_in_file: &dyn Fn(&str, &str) -> bool,
    ) {
        let join = |p: &mut PathBuf, root: Option<&Path>| {
            if let Some(root) = root.filter(|r| !r.as_os_str().is_empty())
                && p.is_relative()
                && !p.as_os_str().is_empty()
            {
                *p = root.join(&*p);
            }
        };
        for p in [&mut self.storage.data_dir, &mut self.server.display_root]
            .into_iter()
            .chain(self.server.watch.iter_mut())
            .chain(self.confidence.calibration.as_mut())
        {
            join(p, base);
        }
        for (section, key, p) in [
            ("embedding", "model_dir", &mut self.embedding.model_dir),
            (
                "embedding",
                "runtime_path",
                &mut self.embedding.runtime_path,
            ),
            ("reader", "model_dir", &mut self.reader.model_dir),
        ] {
            join(
                p,
                if set_in_file(section, key) {
                    base
                } else {
                    home
                },
            );
        }
    }

    /// Folder of the configured collection in the embedded store.
    pub fn collection_dir(&self) -> PathBuf {
        self.storage
            .data_dir
            .join("collections")
            .join(&self.qdrant.collection)
    }

    /// The review queue's SQLite database (escalations, reviewers,
    /// messages, shared context, audit), shared by every collection.
    pub fn review_db_path(&self) -> PathBuf {
        self.storage.data_dir.join("review.sqlite3")
    }

    /// Usage statistics and health of every tool, shared by every collection.
    pub fn tool_stats_path(&self) -> PathBuf {
        self.storage.data_dir.join("tool_stats.sqlite3")
    }

    /// Tools created at run time (scripts, their versions and audit log),
    /// shared by every collection.
    pub fn runtime_tools_path(&self) -> PathBuf {
        self.storage.data_dir.join("runtime_tools.sqlite3")
    }

    /// Folder of reviewed answers promoted to knowledge (one Markdown file
    /// per answer), ingested like any other document.
    pub fn reviewed_dir(&self) -> PathBuf {
        self.storage
            .data_dir
            .join("reviewed")
            .join(&self.qdrant.collection)
    }

    /// Path of the ingest manifest of the configured collection: what the
    /// store holds, per source. Each backend has its own (a Qdrant
    /// server's per server URL), because each holds its own points:
    /// `manifests/<collection>.json` for `edge`,
    /// `manifests/qdrant/<host>_<port>/<collection>.json` for `qdrant`.
    pub fn manifest_path(&self) -> PathBuf {
        self.per_collection("manifests")
    }

    /// The collection's self-calibration (`grace calibrate --self`), kept
    /// beside its manifest: `<data_dir>/self-calibration/…/<collection>.json`.
    pub fn self_calibration_path(&self) -> PathBuf {
        self.per_collection("self-calibration")
    }

    /// `<data_dir>/<folder>/<collection>.json`, under `qdrant/<server>/`
    /// for a collection on a Qdrant server.
    fn per_collection(&self, folder: &str) -> PathBuf {
        let manifests = self.storage.data_dir.join(folder);
        let file = format!("{}.json", self.qdrant.collection);
        match self.storage.backend {
            Backend::Edge => manifests.join(file),
            Backend::Qdrant => manifests
                .join("qdrant")
                .join(server_folder_name(&self.qdrant.url))
                .join(file),
        }
    }

    /// Where the configured collection lives, for people: the embedded
    /// store's folder, or `<url>/collections/<collection>` on a server.
    pub fn collection_location(&self) -> PathBuf {
        match self.storage.backend {
            Backend::Edge => self.collection_dir(),
            Backend::Qdrant => PathBuf::from(format!(
                "{}/collections/{}",
                self.qdrant.url.trim_end_matches('/'),
                self.qdrant.collection
            )),
        }
    }
}

/// A folder name for a server URL: `http://db.example:6334/` →
/// `db.example_6334` (scheme dropped, every other character that is not a
/// letter, digit, `.` or `-` replaced by `_`).
fn server_folder_name(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let name: String = rest
        .trim_end_matches('/')
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if name.is_empty() {
        "server".to_string()
    } else {
        name
    }
}

#[cfg(test)]
mod tests;
