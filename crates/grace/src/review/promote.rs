//! Reviewed answers as knowledge: an answered escalation, on request,
//! becomes a Markdown document (`<data_dir>/reviewed/<collection>/
//! escalation-<id>.md`: the question as its heading, the answer, the
//! reviewer and the date) ingested like any other file, so that the same
//! or a paraphrased question is answered from it with a citation to the
//! review. Retracting deletes the file and prunes its chunks.

use std::path::PathBuf;

use super::ReviewError;
use super::queue::{Outcome, ReviewQueue, Viewer};
use crate::access::Readers;
use crate::ingest::IngestOptions;
use crate::ingest::manifest::Manifest;
use crate::kb::KnowledgeBase;

/// Promotes the answer of escalation `id`; returns the document's path.
pub fn promote(
    kb: &KnowledgeBase,
    queue: &ReviewQueue,
    id: i64,
    who: &str,
) -> crate::error::Result<PathBuf> {
    let e = queue.get(id, Viewer::Asker)?;
    let resolution = e
        .resolution
        .as_ref()
        .filter(|r| r.outcome == Outcome::Answered)
        .ok_or_else(|| ReviewError::Conflict {
            id,
            message: format!(
                "is {}: only an answered escalation can be promoted",
                e.status
            ),
        })?;
    let answer = resolution
        .report
        .as_ref()
        .and_then(|r| r.answer.as_ref())
        .ok_or_else(|| ReviewError::Conflict {
            id,
            message: "has no answer text to promote".into(),
        })?;
    let reviewer = resolution
        .decided_by
        .strip_prefix("reviewer:")
        .unwrap_or(&resolution.decided_by);
    let name = queue
        .reviewers()?
        .into_iter()
        .find(|r| r.id == reviewer)
        .map(|r| format!("{} ({})", r.name, r.id))
        .unwrap_or_else(|| reviewer.to_string());
    // Readable by whoever may read every document it cites: what a
    // reviewer confirmed from a restricted document stays restricted.
    let cited: Vec<&str> = answer
        .citations
        .iter()
        .filter_map(|c| c.source.as_deref())
        .collect();
    let access = match cited_readers(kb, &cited)? {
        Some(readers) => format!("---\naccess: [{}]\n---\n", readers.as_slice().join(", ")),
        None => String::new(),
    };
    let mut doc = format!(
        "{access}# {}\n\n{}\n\nReviewed answer by {name} on {}, escalation #{id}.\n",
        one_line(&e.question),
        as_written(answer),
        resolution.at.format("%Y-%m-%d"),
    );
    let sources: Vec<String> = answer
        .citations
        .iter()
        .filter_map(|c| {
            let s = c.source.as_deref()?;
            let page = c.page.map(|n| format!(" p. {n}")).unwrap_or_default();
            let s = format!("{s}{page}");
            Some(match &c.section {
                Some(sec) if !sec.is_empty() => format!("- {s} § {sec}"),
                _ => format!("- {s}"),
            })
        })
        .collect();
    if !sources.is_empty() {
        doc.push_str(&format!(
            "\nSources the reviewer confirmed:\n\n{}\n",
            sources.join("\n")
        ));
    }

    let dir = kb.config().reviewed_dir();
    std::fs::create_dir_all(&dir).map_err(|source| ReviewError::Io {
        action: "create the folder",
        path: dir.clone(),
        source,
    })?;
    let path = dir.join(format!("escalation-{id}.md"));
    write_atomically(&path, &doc)?;
    // This file alone, without pruning: with several servers sharing the
    // collection, the answers another server promoted are not on this
    // server's disk, and pruning the folder would remove them.
    kb.ingest(
        std::slice::from_ref(&path),
        &IngestOptions::default(),
        &mut |_| {},
    )?;
    let source = crate::ingest::source_key(&path);
    queue.set_promoted(id, who, Some(&source))?;
    tracing::info!(id, %source, "reviewed answer promoted to the knowledge base");
    Ok(path)
}

/// The readers of a document citing `sources`: those every one of them
/// names (`public` names everyone); `None` when they are all public or
/// none is cited (then `ingest.default_access` applies). Readers are
/// alternatives, so where the cited documents share none no list says
/// "readers of all of them": promoting is refused rather than widened.
fn cited_readers(kb: &KnowledgeBase, sources: &[&str]) -> crate::error::Result<Option<Readers>> {
    let manifest = Manifest::load_for(kb.config())?;
    let mut common: Option<Vec<String>> = None;
    // A source as stored, or as a client shows it (relative to a root):
    // every document it may name counts.
    let named = |source: &str| -> Vec<Readers> {
        let Some(m) = &manifest else {
            return Vec::new();
        };
        if let Some(e) = m.sources.get(source) {
            return vec![Readers::stored(&e.readers)];
        }
        let tail = format!("/{}", source.trim_start_matches("./"));
        m.sources
            .iter()
            .filter(|(s, _)| s.ends_with(&tail))
            .map(|(_, e)| Readers::stored(&e.readers))
            .collect()
    };
    for readers in sources.iter().flat_map(|s| named(s)) {
        if readers.is_public() {
            continue;
        }
        common = Some(match common {
            None => readers.as_slice().to_vec(),
            Some(mut c) => {
                c.retain(|r| readers.as_slice().contains(r));
                c
            }
        });
    }
    match common {
        None => Ok(None),
        Some(c) => Readers::parse(&c).map(Some).map_err(|_| {
            crate::error::Error::InvalidInput(
                "the documents this answer cites have no reader in common, so no one list of \
                 readers fits the promoted answer: answer without promoting, or cite fewer \
                 documents"
                    .into(),
            )
        }),
    }
}

/// Removes a promoted answer from the knowledge base.
pub fn retract(
    kb: &KnowledgeBase,
    queue: &ReviewQueue,
    id: i64,
    who: &str,
) -> crate::error::Result<()> {
    if crate::state::shares_collection(kb.config()) {
        // Pruning this server's folder would remove what the others
        // promoted (their files are on their disks).
        return Err(crate::error::Error::InvalidInput(
            "retracting a promoted answer is not supported yet while several servers share the collection (storage.state: postgres with a Qdrant server)".into(),
        ));
    }
    let e = queue.get(id, Viewer::Asker)?;
    if e.resolution
        .as_ref()
        .and_then(|r| r.promoted.as_ref())
        .is_none()
    {
        return Err(ReviewError::Conflict {
            id,
            message: "was not promoted".into(),
        }
        .into());
    }
    let dir = kb.config().reviewed_dir();
    let path = dir.join(format!("escalation-{id}.md"));
    match std::fs::remove_file(&path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(source) => {
            return Err(ReviewError::Io {
                action: "remove",
                path,
                source,
            }
            .into());
        }
    }
    kb.ingest(
        std::slice::from_ref(&dir),
        &IngestOptions {
            prune: true,
            ..Default::default()
        },
        &mut |_| {},
    )?;
    queue.set_promoted(id, who, None)?;
    Ok(())
}

/// Writes through a synced temporary file renamed into place, so a crash
/// never leaves half a document nor loses one that was reported written.
fn write_atomically(path: &std::path::Path, text: &str) -> Result<(), ReviewError> {
    crate::durable::replace_file(path, &path.with_extension("md.tmp"), text.as_bytes()).map_err(
        |e| ReviewError::Io {
            action: e.action,
            path: e.path,
            source: e.source,
        },
    )
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The answer's text as the document keeps it: a reviewer's own words
/// exactly as they wrote them; GRACE's draft without its `[n]` markers
/// (its sources are listed under it).
fn as_written(answer: &crate::tools::Answer) -> String {
    if answer.generator.starts_with("human:") {
        answer.text.clone()
    } else {
        strip_markers(&answer.text)
    }
}

/// `text` without its `[n]` / `[n, m]` citation markers (they point into
/// the draft's sources, which the promoted document does not carry);
/// brackets that hold anything else, and everything in a code span, are
/// kept.
fn strip_markers(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find('[') {
        let after = &rest[start + 1..];
        let in_code = (out.matches('`').count() + rest[..start].matches('`').count()) % 2 == 1;
        match after.find(']') {
            Some(end)
                if !in_code
                    && end > 0
                    && after[..end]
                        .bytes()
                        .all(|b| b.is_ascii_digit() || b == b',' || b == b' ') =>
            {
                out.push_str(rest[..start].trim_end_matches(' '));
                rest = &after[end + 1..];
            }
            _ => {
                out.push_str(&rest[..=start]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out.trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn citation_markers_are_dropped_and_brackets_kept() {
        assert_eq!(
            strip_markers("Run orbit rollback [1]. See [the guide] [2, 3]."),
            "Run orbit rollback. See [the guide]."
        );
        assert_eq!(strip_markers("[] and [x1]"), "[] and [x1]");
        assert_eq!(strip_markers("Read `a[0]` [1]."), "Read `a[0]`.");
    }

    #[test]
    fn a_reviewers_text_is_kept_exactly() {
        let mut answer = crate::tools::Answer {
            text: "Use `orbit keys rotate` [1], then check  `items[0]`.\n\n  - done".into(),
            citations: Vec::new(),
            abstained: false,
            self_confidence: None,
            usage: Default::default(),
            generator: "human:reviewer:alice".into(),
        };
        assert_eq!(as_written(&answer), answer.text);
        answer.generator = "extractive".into();
        assert_eq!(
            as_written(&answer),
            "Use `orbit keys rotate`, then check  `items[0]`.\n\n  - done"
        );
    }
}
