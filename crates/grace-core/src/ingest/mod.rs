//! Ingest: files → sections → chunks → vectors → store, recorded in a
//! manifest so that re-ingesting is idempotent.
//!
//! [`Ingestor::run`] walks the paths, skips files whose size and
//! modification time, or else content hash, the manifest already has
//! (see `prepare.rs`), and writes changed files in groups of about
//! `ingest.commit_chunks` chunks: mark pending → delete the source's old points →
//! embed → upsert → flush → mark committed. A crash anywhere leaves pending
//! entries that the next run rebuilds, so the store ends with exactly the
//! chunks of the files, none twice (see [`manifest`]).

pub mod chunk;
pub mod load;
pub mod manifest;
pub mod walk;

mod commit;
mod prepare;

pub use self::prepare::{Inspected, inspect};

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;

use self::chunk::Chunk;
use self::manifest::{EntryState, Manifest};
use self::prepare::{Access, Outcome};
use crate::access::Readers;
use crate::access::file::AccessFiles;
use crate::config::IngestConfig;
use crate::embed::{EmbedError, Embedder};
use crate::lexical::LexicalEncoder;
use crate::store::{StoreError, VectorStore};

/// Version of how text becomes chunks and sparse vectors; part of the
/// pipeline fingerprint, bumped when loaders, chunker or lexical encoding
/// change their output.
const PIPELINE_VERSION: &str = "chunks-v2+lexical-v2";

/// The embedding model's id in a pipeline fingerprint
/// ([`Ingestor::pipeline_id`]).
pub fn pipeline_model(pipeline: &str) -> &str {
    pipeline.split('|').next().unwrap_or_default()
}

/// The pipeline fingerprint of chunks made with `config` and embedded by
/// the model `model_id` (the model first: [`pipeline_model`]).
pub fn pipeline_id(model_id: &str, config: &IngestConfig) -> String {
    format!(
        "{model_id}|chunk{}/{}|{PIPELINE_VERSION}",
        config.chunk_size, config.chunk_overlap
    )
}

/// The loaders' limits from the ingest settings.
pub fn limits(config: &IngestConfig) -> load::Limits {
    load::Limits {
        max_bytes: config.max_file_bytes,
        max_ratio: config.max_compression_ratio,
        max_entries: config.max_archive_entries,
        max_pages: config.max_pages,
        qa_question: config.qa_question_column.clone(),
        qa_answer: config.qa_answer_column.clone(),
    }
}

/// Result of ingest operations.
pub type Result<T> = std::result::Result<T, IngestError>;

/// Errors that stop an ingest. (Problems with single files do not: they
/// are reported in [`IngestReport::skipped`].)
#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    /// A path given to ingest does not exist (or a glob pattern matched no file).
    #[error("{path}: no such file or folder")]
    PathNotFound {
        /// The path or pattern as given.
        path: PathBuf,
    },
    /// A remote caller named a path that is not an existing file or folder
    /// inside `ingest.allowed_roots` (which of the two is not said).
    #[error(
        "{path}: not a file or folder inside ingest.allowed_roots (remote callers may name only those; upload the files instead)"
    )]
    NotAllowed {
        /// The path or pattern as given.
        path: PathBuf,
    },
    /// A remote caller named server paths, and no `ingest.allowed_roots`
    /// is configured.
    #[error(
        "naming files on the server is off: set ingest.allowed_roots to the folders remote callers may ingest from, or upload the files"
    )]
    RemotePathsOff,
    /// The run was cancelled ([`IngestOptions::cancel`]) between files.
    #[error("the ingest was cancelled after {done} of {total} files (those are committed)")]
    Cancelled {
        /// Files handled before the cancellation.
        done: usize,
        /// Files found.
        total: usize,
    },
    /// The walk found more files than `ingest.max_files`.
    #[error("more than {limit} files to ingest (ingest.max_files); name fewer or narrower folders")]
    TooManyFiles {
        /// `ingest.max_files`.
        limit: usize,
    },
    /// An include/exclude pattern or a glob argument is not a valid glob.
    #[error("invalid glob pattern `{pattern}`: {message}")]
    BadGlob {
        /// The pattern (the whole list when the set failed to build).
        pattern: String,
        /// The glob parser's message.
        message: String,
    },
    #[error(
        "manifest {path} is unreadable ({message}); `grace doctor --repair` rebuilds it from the store \
         (or move it away to ingest everything again)"
    )]
    /// The manifest cannot be read or written as JSON, or has another format
    /// version.
    Manifest {
        /// The manifest file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// Reading or writing the manifest failed.
    #[error("cannot {action} {path}: {source}")]
    Io {
        /// What was being done (`read the manifest`, `write`, `replace`, …).
        action: &'static str,
        /// The file or folder it was done to.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The configuration names no valid readers (`ingest.default_access`).
    #[error("{0}")]
    Config(String),
    /// The vector store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The embedding model failed.
    #[error(transparent)]
    Embed(#[from] EmbedError),
    /// PostgreSQL, which keeps the manifest of a shared collection, failed.
    #[error(transparent)]
    State(#[from] crate::state::StateError),
}

/// Options of one ingest run.
#[derive(Debug, Clone, Default)]
pub struct IngestOptions {
    /// Remove the chunks of files that were ingested from the walked folders
    /// before and are gone (deleted, or now excluded).
    pub prune: bool,
    /// Read only inside these canonical folders (`ingest.allowed_roots`, for
    /// remote callers); `None`: anywhere (the CLI).
    pub roots: Option<Vec<PathBuf>>,
    /// Set from another thread to stop between files (a request that timed
    /// out, a client that went away): what was ingested so far is
    /// committed, and the run ends with [`IngestError::Cancelled`].
    pub cancel: Option<Arc<AtomicBool>>,
    /// Who may read every document of this run, before anything the
    /// documents say (front matter, `.grace-access.yml`); `None`: what
    /// they say, else `ingest.default_access`.
    pub access: Option<Readers>,
}

/// What happened to one file.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "status", content = "reason")]
pub enum FileStatus {
    /// Ingested for the first time.
    Added,
    /// Ingested again: its content changed, an interrupted run left it pending,
    /// or the pipeline changed.
    Updated,
    /// Already in the store with the same content; not touched.
    Unchanged,
    /// The same content for other readers: its chunks were re-labelled,
    /// not embedded again.
    Relabelled,
    /// Not ingested, with the reason.
    Skipped(String),
}

/// Progress of a run, for a progress bar or a log. Progress is measured in
/// bytes of the files found: an unchanged or skipped file counts at once, a
/// file being written counts as its chunks are embedded.
#[derive(Debug)]
pub enum IngestEvent<'a> {
    /// The walk found this many files, of this many bytes in all.
    Found {
        /// Files found.
        files: usize,
        /// Their total size in bytes.
        bytes: u64,
    },
    /// This many more bytes of the files are done.
    Advanced {
        /// Bytes newly done.
        bytes: u64,
    },
    /// A file is done.
    File {
        /// The file's canonical path.
        path: &'a Path,
        /// What happened to it.
        status: &'a FileStatus,
        /// Its chunks in the store (0 when skipped).
        chunks: usize,
    },
    /// Index building started (can take a while on large collections).
    Optimizing,
    /// A store write failed for a moment and is about to be tried again
    /// (`ingest.store_retries`).
    StoreRetry {
        /// Which retry, from 1.
        attempt: u32,
        /// Retries allowed.
        of: u32,
        /// Seconds it waits first.
        wait_secs: f64,
        /// The error that made it necessary.
        error: &'a str,
    },
}

/// A file that was not ingested.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct SkippedFile {
    /// The path as walked (canonical when it could be resolved).
    #[schema(value_type = String)]
    pub path: PathBuf,
    /// Why it was not ingested (too large, unreadable, unsupported type, …).
    pub reason: String,
}

/// Summary of a run.
#[derive(Debug, Clone, Default, Serialize, utoipa::ToSchema)]
pub struct IngestReport {
    /// Files the walk found (files passed over during the walk are in
    /// `skipped` only).
    pub files_seen: usize,
    /// Files ingested for the first time.
    pub added: usize,
    /// Files ingested again because they changed (or were left pending, or
    /// the pipeline changed).
    pub updated: usize,
    /// Files already in the store with the same content.
    pub unchanged: usize,
    /// Files whose bytes were read (to hash, and to chunk when changed);
    /// the others were taken as unchanged from their size and times.
    pub read: usize,
    /// Files with the same content whose readers changed: their chunks
    /// were re-labelled without embedding them again.
    pub relabelled: usize,
    /// Files not ingested, and why.
    pub skipped: Vec<SkippedFile>,
    /// Sources whose chunks were removed (pruned, or left pending by an
    /// interrupted run and no longer present).
    pub removed: Vec<String>,
    /// Chunks embedded and written by this run.
    pub chunks_written: usize,
    /// Points in the collection after the run.
    pub points_total: usize,
    /// Whether index building rebuilt anything.
    pub optimized: bool,
    /// Wall-clock seconds of the whole run.
    pub elapsed_secs: f64,
    /// Time spent inside the embedding model.
    pub embed_secs: f64,
    /// Store writes that failed for a moment and succeeded when tried
    /// again (a Qdrant server restarting, a cluster losing a node).
    pub store_retries: usize,
}

/// Everything an ingest run works with.
pub struct Ingestor<'a> {
    /// The collection written to.
    pub store: &'a dyn VectorStore,
    /// The model that embeds the chunks.
    pub embedder: &'a dyn Embedder,
    /// Encodes chunks as lexical (sparse) vectors.
    pub lexical: &'a LexicalEncoder,
    /// Chunking, file filters and group size (`ingest`).
    pub config: &'a IngestConfig,
    /// Where the collection's manifest is kept.
    pub manifest: &'a manifest::ManifestStore,
}

/// The state of one run: the manifest as it is being updated, the report,
/// and the prepared files waiting to be committed.
struct Run {
    manifest: Manifest,
    report: IngestReport,
    embed_time: Duration,
    /// Whether the store was written (then indexes may need building).
    changed_store: bool,
    /// Whether only files' stats changed in the manifest (then it is saved
    /// once at the end).
    changed_stats: bool,
    group: Vec<Prepared>,
    group_chunks: usize,
}

/// A file read, hashed and chunked, waiting for its group to be written.
struct Prepared {
    source: String,
    path: PathBuf,
    hash: String,
    chunks: Vec<Chunk>,
    title: Option<String>,
    /// Who may read it, and where that came from.
    labels: prepare::Labels,
    /// Its settled stat when it was read.
    stat: Option<manifest::FileStat>,
    existed: bool,
    /// Size of the file, for progress.
    bytes: u64,
}

impl Ingestor<'_> {
    /// Identifies the model and the text pipeline; stored in the manifest
    /// (the model first: [`pipeline_model`]).
    pub fn pipeline_id(&self) -> String {
        pipeline_id(self.embedder.model_id(), self.config)
    }

    /// Ingests `paths`, reporting progress through `on_event`.
    pub fn run(
        &self,
        paths: &[PathBuf],
        options: &IngestOptions,
        on_event: &mut dyn FnMut(IngestEvent<'_>),
    ) -> Result<IngestReport> {
        let started = Instant::now();
        let filters = walk::Filters::new(&self.config.include, &self.config.exclude)?;
        let found = walk::walk(
            paths,
            &filters,
            options.roots.as_deref(),
            self.config.max_files,
        )?;
        // Taken before any file is read: a file modified after its stat
        // changes its time, and is read again by the next run.
        let now = std::time::SystemTime::now();
        let (sizes, stats): (Vec<u64>, Vec<Option<manifest::FileStat>>) = found
            .files
            .iter()
            .map(|c| match std::fs::metadata(&c.path) {
                Ok(m) => (m.len(), manifest::FileStat::settled(&m, now)),
                Err(_) => (0, None),
            })
            .unzip();
        on_event(IngestEvent::Found {
            files: found.files.len(),
            bytes: sizes.iter().sum(),
        });

        let pipeline = self.pipeline_id();
        let loaded = self.manifest.load()?;
        let had_manifest = loaded.is_some();
        let mut manifest = loaded.unwrap_or_else(|| Manifest::new(&pipeline));
        let pipeline_changed = manifest.pipeline != pipeline;
        if pipeline_changed {
            tracing::warn!(
                old = %manifest.pipeline,
                new = %pipeline,
                "the embedding model or chunking changed: every file is re-ingested"
            );
            manifest.pipeline = pipeline.clone();
        }
        let default = Readers::parse(&self.config.default_access)
            .map_err(|m| IngestError::Config(format!("ingest.default_access: {m}")))?;
        let mut access = Access {
            request: options.access.clone(),
            files: AccessFiles::default(),
            default,
        };
        let mut run = Run {
            manifest,
            report: IngestReport {
                files_seen: found.files.len(),
                ..Default::default()
            },
            embed_time: Duration::ZERO,
            changed_store: false,
            changed_stats: false,
            group: Vec::new(),
            group_chunks: 0,
        };
        for p in &found.problems {
            run.report.skipped.push(SkippedFile {
                path: p.path.clone(),
                reason: p.reason.clone(),
            });
        }

        // Sources an interrupted run left pending and this run will not
        // rewrite: their store state is unknown, so their points go and the
        // entry is dropped (the next ingest of that file adds it again).
        let walked: HashSet<String> = found.files.iter().map(|c| source_key(&c.path)).collect();
        let stale: Vec<String> = run
            .manifest
            .sources
            .iter()
            .filter(|(s, e)| e.state == EntryState::Pending && !walked.contains(*s))
            .map(|(s, _)| s.clone())
            .collect();
        if !stale.is_empty() {
            tracing::info!(
                count = stale.len(),
                "removing files an interrupted ingest left half-written"
            );
            self.remove_sources(&mut run, &stale)?;
            run.report.removed.extend(stale);
        }

        for (done, ((candidate, &bytes), &stat)) in
            found.files.iter().zip(&sizes).zip(&stats).enumerate()
        {
            if options
                .cancel
                .as_ref()
                .is_some_and(|c| c.load(Ordering::Relaxed))
            {
                // What was read so far is committed like a finished run's.
                self.commit_group(&mut run, on_event)?;
                tracing::info!(done, total = found.files.len(), "ingest cancelled");
                return Err(IngestError::Cancelled {
                    done,
                    total: found.files.len(),
                });
            }
            let source = source_key(&candidate.path);
            let previous = run.manifest.sources.get(&source);
            let prepared = self.prepare(
                candidate,
                stat,
                &source,
                previous,
                pipeline_changed,
                &mut access,
            );
            run.report.read += usize::from(!matches!(prepared, Ok((_, false))));
            match prepared.map(|(outcome, _)| outcome) {
                Ok(Outcome::Unchanged {
                    stat,
                    from_document,
                }) => {
                    run.report.unchanged += 1;
                    let mut chunks = 0;
                    if let Some(entry) = run.manifest.sources.get_mut(&source) {
                        chunks = entry.point_ids.len();
                        if entry.stat != stat || entry.from_document != from_document {
                            entry.stat = stat;
                            entry.from_document = from_document;
                            run.changed_stats = true;
                        }
                    }
                    on_event(IngestEvent::Advanced { bytes });
                    on_event(IngestEvent::File {
                        path: &candidate.path,
                        status: &FileStatus::Unchanged,
                        chunks,
                    });
                }
                Ok(Outcome::Relabel { labels, stat }) => {
                    self.relabel(&mut run, &source, &labels, stat)?;
                    let chunks = run
                        .manifest
                        .sources
                        .get(&source)
                        .map(|e| e.point_ids.len())
                        .unwrap_or_default();
                    on_event(IngestEvent::Advanced { bytes });
                    on_event(IngestEvent::File {
                        path: &candidate.path,
                        status: &FileStatus::Relabelled,
                        chunks,
                    });
                }
                Ok(Outcome::Changed(mut prepared)) => {
                    prepared.bytes = bytes;
                    run.group_chunks += prepared.chunks.len();
                    run.group.push(prepared);
                    if run.group_chunks >= self.config.commit_chunks {
                        self.commit_group(&mut run, on_event)?;
                    }
                }
                Err(reason) => {
                    // A file that can no longer be loaded must not keep serving old text.
                    if run.manifest.sources.contains_key(&source) {
                        self.remove_sources(&mut run, std::slice::from_ref(&source))?;
                    }
                    on_event(IngestEvent::Advanced { bytes });
                    on_event(IngestEvent::File {
                        path: &candidate.path,
                        status: &FileStatus::Skipped(reason.clone()),
                        chunks: 0,
                    });
                    run.report.skipped.push(SkippedFile {
                        path: candidate.path.clone(),
                        reason,
                    });
                }
            }
        }
        self.commit_group(&mut run, on_event)?;

        if options.prune {
            let gone: Vec<String> = run
                .manifest
                .sources
                .keys()
                .filter(|s| {
                    !walked.contains(*s) && found.roots.iter().any(|r| Path::new(s).starts_with(r))
                })
                .cloned()
                .collect();
            if !gone.is_empty() {
                self.remove_sources(&mut run, &gone)?;
                run.report.removed.extend(gone);
            }
        }
        if run.changed_stats || (!run.changed_store && (pipeline_changed || !had_manifest)) {
            self.manifest.save(&run.manifest)?;
        }
        if run.changed_store {
            on_event(IngestEvent::Optimizing);
            run.report.optimized = match self.store.optimize() {
                Ok(built) => built,
                // Everything is written; only the index waits for space
                // (the next write builds it).
                Err(e @ StoreError::DiskFull { .. }) => {
                    tracing::warn!(error = %e, "the chunks are written; the index waits for space");
                    false
                }
                Err(e) => return Err(e.into()),
            };
        }
        let mut report = run.report;
        report.points_total = self.store.count(None)?;
        report.elapsed_secs = started.elapsed().as_secs_f64();
        report.embed_secs = run.embed_time.as_secs_f64();
        Ok(report)
    }
}

/// The `source` of a file: its canonical path as text.
pub fn source_key(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}
