//! Writing a group of prepared files, and removing sources, in the
//! manifest's pending → store → committed order, with store retries.

use std::time::Instant;

use super::manifest::{self, EntryState, FileStat, SourceEntry};
use super::prepare::Labels;
use super::{FileStatus, IngestEvent, IngestReport, Ingestor, Result, Run};
use crate::embed::EmbedError;
use crate::store::retry::{RetryPolicy, with_retries};
use crate::store::{ChunkPayload, ChunkPoint, point_id};

/// Chunks embedded per call to the embedder (and per progress event).
const PROGRESS_STEP: usize = 64;

impl Ingestor<'_> {
    /// Deletes the points of `sources` and drops their entries, with the
    /// same pending → flush → commit order as writing.
    pub(super) fn remove_sources(&self, run: &mut Run, sources: &[String]) -> Result<()> {
        for source in sources {
            if let Some(entry) = run.manifest.sources.get_mut(source) {
                entry.state = EntryState::Pending;
            }
        }
        self.manifest.save(&run.manifest)?;
        for source in sources {
            self.retrying(&mut run.report, &mut |_| {}, || {
                self.store.delete_by_source(source)
            })?;
        }
        self.store.flush()?;
        for source in sources {
            run.manifest.sources.remove(source);
        }
        self.manifest.save(&run.manifest)?;
        run.changed_store = true;
        Ok(())
    }

    /// Gives the chunks of `source`, whose text is unchanged, new readers:
    /// the manifest entry is pending while the store is written, as for
    /// any write, so a crash between leaves it to be written again.
    pub(super) fn relabel(
        &self,
        run: &mut Run,
        source: &str,
        labels: &Labels,
        stat: Option<FileStat>,
    ) -> Result<()> {
        let Some(entry) = run.manifest.sources.get_mut(source) else {
            return Ok(());
        };
        entry.state = EntryState::Pending;
        self.manifest.save(&run.manifest)?;
        self.retrying(&mut run.report, &mut |_| {}, || {
            self.store.set_readers(source, labels.readers.as_slice())
        })?;
        self.store.flush()?;
        if let Some(entry) = run.manifest.sources.get_mut(source) {
            entry.state = EntryState::Committed;
            entry.readers = labels.readers.as_slice().to_vec();
            entry.pinned = labels.pinned;
            entry.from_document = labels.from_document;
            entry.stat = stat;
            entry.updated_at = manifest::now();
        }
        self.manifest.save(&run.manifest)?;
        run.report.relabelled += 1;
        Ok(())
    }

    /// Writes the prepared files waiting in `run.group` (see the module
    /// docs for the order); does nothing when there are none.
    pub(super) fn commit_group(
        &self,
        run: &mut Run,
        on_event: &mut dyn FnMut(IngestEvent<'_>),
    ) -> Result<()> {
        if run.group.is_empty() {
            return Ok(());
        }
        let group = std::mem::take(&mut run.group);
        run.group_chunks = 0;
        run.changed_store = true;
        let now = manifest::now();
        let (manifest, report) = (&mut run.manifest, &mut run.report);
        for p in group.iter() {
            let entry = manifest
                .sources
                .entry(p.source.clone())
                .or_insert_with(|| SourceEntry {
                    content_hash: p.hash.clone(),
                    point_ids: Vec::new(),
                    state: EntryState::Pending,
                    updated_at: now,
                    readers: Vec::new(),
                    pinned: false,
                    from_document: false,
                    stat: None,
                });
            entry.state = EntryState::Pending;
        }
        self.manifest.save(manifest)?;

        let texts: Vec<String> = group
            .iter()
            .flat_map(|p| {
                p.chunks
                    .iter()
                    .map(|c| c.embedding_text(p.title.as_deref()))
            })
            .collect();
        // Each chunk stands for an equal share of its file's bytes.
        let shares: Vec<f64> = group
            .iter()
            .flat_map(|p| {
                let share = p.bytes as f64 / p.chunks.len().max(1) as f64;
                std::iter::repeat_n(share, p.chunks.len())
            })
            .collect();
        let mut vectors = Vec::with_capacity(texts.len());
        let (mut done, mut reported) = (0.0, 0.0);
        for (batch, batch_shares) in texts
            .chunks(PROGRESS_STEP)
            .zip(shares.chunks(PROGRESS_STEP))
        {
            let t = Instant::now();
            vectors.extend(self.embedder.embed(batch)?);
            run.embed_time += t.elapsed();
            done += batch_shares.iter().sum::<f64>();
            let bytes = (done - reported).floor();
            reported += bytes;
            on_event(IngestEvent::Advanced {
                bytes: bytes as u64,
            });
        }

        let mut vectors = vectors.into_iter();
        let mut texts = texts.into_iter();
        let mut points = Vec::with_capacity(texts.len());
        let mut ids_per_file = Vec::with_capacity(group.len());
        for p in group.iter() {
            let mut ids = Vec::with_capacity(p.chunks.len());
            for (i, c) in p.chunks.iter().enumerate() {
                let (Some(dense), Some(text)) = (vectors.next(), texts.next()) else {
                    return Err(EmbedError::Model("fewer vectors than texts".into()).into());
                };
                let id = point_id(&p.source, i, &p.hash);
                ids.push(id);
                points.push(ChunkPoint {
                    id,
                    dense,
                    lexical: self.lexical.encode_document(&text),
                    payload: ChunkPayload {
                        source: p.source.clone(),
                        section: c.section.clone(),
                        chunk_index: i,
                        text: c.text.clone(),
                        content_hash: p.hash.clone(),
                        page: c.page,
                        readers: p.labels.readers.as_slice().to_vec(),
                    },
                });
            }
            ids_per_file.push(ids);
        }
        // Before the first delete: a store that cannot take the new points
        // (a full disk) must not lose the old ones.
        self.store.ensure_space(&points)?;
        for p in group.iter() {
            self.retrying(report, on_event, || self.store.delete_by_source(&p.source))?;
        }
        report.chunks_written += points.len();
        // Upserts are idempotent (deterministic ids): sending the batch
        // again after a timeout that was in fact applied duplicates nothing.
        self.retrying(report, on_event, || self.store.upsert(points.clone()))?;
        self.store.flush()?;

        for (p, ids) in group.iter().zip(ids_per_file) {
            let n = ids.len();
            manifest.sources.insert(
                p.source.clone(),
                SourceEntry {
                    content_hash: p.hash.clone(),
                    point_ids: ids,
                    state: EntryState::Committed,
                    updated_at: now,
                    readers: p.labels.readers.as_slice().to_vec(),
                    pinned: p.labels.pinned,
                    from_document: p.labels.from_document,
                    stat: p.stat,
                },
            );
            let status = if p.existed {
                report.updated += 1;
                FileStatus::Updated
            } else {
                report.added += 1;
                FileStatus::Added
            };
            on_event(IngestEvent::File {
                path: &p.path,
                status: &status,
                chunks: n,
            });
        }
        self.manifest.save(manifest)?;
        Ok(())
    }

    /// Runs a store write under `ingest.store_retries`, telling `on_event`
    /// of each retry and counting them in the report.
    fn retrying<T>(
        &self,
        report: &mut IngestReport,
        on_event: &mut dyn FnMut(IngestEvent<'_>),
        write: impl FnMut() -> crate::store::Result<T>,
    ) -> crate::store::Result<T> {
        let policy = RetryPolicy::new(self.config.store_retries, self.config.store_retry_seconds);
        with_retries(
            policy,
            &mut |r| {
                report.store_retries += 1;
                on_event(IngestEvent::StoreRetry {
                    attempt: r.attempt,
                    of: r.of,
                    wait_secs: r.wait.as_secs_f64(),
                    error: &r.error.to_string(),
                });
            },
            write,
        )
    }
}
