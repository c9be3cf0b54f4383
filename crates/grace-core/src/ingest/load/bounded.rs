//! Decompression with limits: a gzip stream and the entries of a ZIP
//! archive (DOCX, ODT, EPUB) are read only up to `ingest.max_file_bytes`
//! and `ingest.max_compression_ratio` times their compressed size, so a
//! small bomb cannot fill the memory.

use std::io::{Cursor, Read};

use super::{Limits, LoadError};

/// Reads `reader` to the end, failing once it yields more than `cap` bytes
/// (`on_cap` says which limit that is).
fn read_capped(
    mut reader: impl Read,
    cap: u64,
    on_cap: impl Fn() -> LoadError,
    format: &'static str,
) -> Result<Vec<u8>, LoadError> {
    let mut out = Vec::new();
    let read = reader
        .by_ref()
        .take(cap.saturating_add(1))
        .read_to_end(&mut out)
        .map_err(|e| LoadError::Malformed {
            format,
            message: e.to_string(),
        })?;
    if read as u64 > cap {
        return Err(on_cap());
    }
    Ok(out)
}

/// The cap for a stream of `compressed` bytes: the smaller of the two
/// limits, and whichever it is names the error.
fn cap_for(compressed: u64, what: &str, limits: &Limits) -> (u64, impl Fn() -> LoadError) {
    let by_ratio = compressed.max(1).saturating_mul(limits.max_ratio);
    let ratio_binds = by_ratio < limits.max_bytes;
    let (what, limit, max_bytes) = (what.to_string(), limits.max_ratio, limits.max_bytes);
    let on_cap = move || {
        if ratio_binds {
            LoadError::Ratio {
                what: what.clone(),
                limit,
            }
        } else {
            LoadError::TooLarge { limit: max_bytes }
        }
    };
    (by_ratio.min(limits.max_bytes), on_cap)
}

/// Decompresses a gzip file (all members).
pub(super) fn gunzip(bytes: &[u8], limits: &Limits) -> Result<Vec<u8>, LoadError> {
    let (cap, on_cap) = cap_for(bytes.len() as u64, "the gzip stream", limits);
    read_capped(
        flate2::read::MultiGzDecoder::new(bytes),
        cap,
        on_cap,
        "gzip",
    )
}

/// A ZIP archive whose entries are read within the limits.
pub(super) struct Archive<'a> {
    zip: zip::ZipArchive<Cursor<&'a [u8]>>,
    format: &'static str,
    limits: &'a Limits,
    /// Bytes read from entries so far (bounded by `max_bytes` in all).
    read: u64,
}

impl<'a> Archive<'a> {
    /// Opens `bytes` as a ZIP archive of `format`, refusing one with more
    /// than `ingest.max_archive_entries` entries.
    pub(super) fn open(
        bytes: &'a [u8],
        format: &'static str,
        limits: &'a Limits,
    ) -> Result<Self, LoadError> {
        let zip = zip::ZipArchive::new(Cursor::new(bytes)).map_err(|e| LoadError::Malformed {
            format,
            message: format!("not a ZIP archive ({e})"),
        })?;
        if zip.len() > limits.max_entries {
            return Err(LoadError::TooMany {
                what: "ZIP entries",
                limit: limits.max_entries,
                key: "ingest.max_archive_entries",
            });
        }
        Ok(Self {
            zip,
            format,
            limits,
            read: 0,
        })
    }

    /// The entry `name`, decompressed; `Ok(None)` when there is none.
    pub(super) fn read(&mut self, name: &str) -> Result<Option<Vec<u8>>, LoadError> {
        let format = self.format;
        let mut entry = match self.zip.by_name(name) {
            Ok(entry) => entry,
            Err(zip::result::ZipError::FileNotFound) => return Ok(None),
            Err(e) => {
                return Err(LoadError::Malformed {
                    format,
                    message: format!("{name}: {e}"),
                });
            }
        };
        let left = self.limits.max_bytes.saturating_sub(self.read);
        let (cap, on_cap) = cap_for(entry.compressed_size(), name, self.limits);
        let bytes = read_capped(&mut entry, cap.min(left), on_cap, format)?;
        self.read += bytes.len() as u64;
        Ok(Some(bytes))
    }

    /// The entry `name` as UTF-8 text, which the format requires.
    pub(super) fn required_text(&mut self, name: &str) -> Result<String, LoadError> {
        let format = self.format;
        self.read_text(name)?.ok_or_else(|| LoadError::Malformed {
            format,
            message: format!("no {name} in the archive"),
        })
    }

    /// The entry `name` as UTF-8 text; `Ok(None)` when there is none.
    pub(super) fn read_text(&mut self, name: &str) -> Result<Option<String>, LoadError> {
        let format = self.format;
        match self.read(name)? {
            None => Ok(None),
            Some(bytes) => String::from_utf8(bytes)
                .map(Some)
                .map_err(|e| LoadError::Malformed {
                    format,
                    message: format!("{name} is not UTF-8 ({e})"),
                }),
        }
    }
}

/// A ZIP archive of `entries`, deflated (for the loaders' tests).
#[cfg(test)]
pub(super) fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
    use std::io::Write;
    let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for (name, data) in entries {
        w.start_file(*name, options).unwrap();
        w.write_all(data).unwrap();
    }
    w.finish().unwrap().into_inner()
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn gunzip_reads_a_small_file() {
        let limits = Limits::default();
        assert_eq!(gunzip(&gzip(b"hello"), &limits).unwrap(), b"hello");
    }

    #[test]
    fn a_gzip_bomb_is_refused_by_ratio_and_by_size() {
        // 50 MB of zeros compress to about 50 KB: 1,000 times.
        let bomb = gzip(&vec![0u8; 50_000_000]);
        let err = gunzip(&bomb, &Limits::default()).unwrap_err();
        assert!(matches!(err, LoadError::Ratio { limit: 100, .. }), "{err}");
        let loose = Limits {
            max_ratio: 1_000_000,
            max_bytes: 1_000_000,
            ..Limits::default()
        };
        let err = gunzip(&bomb, &loose).unwrap_err();
        assert_eq!(err, LoadError::TooLarge { limit: 1_000_000 });
        assert!(err.to_string().contains("ingest.max_file_bytes"));
    }

    #[test]
    fn a_truncated_gzip_is_malformed_not_a_panic() {
        let g = gzip(b"some text that is long enough to matter");
        let err = gunzip(&g[..g.len() / 2], &Limits::default()).unwrap_err();
        assert!(matches!(err, LoadError::Malformed { .. }), "{err}");
    }

    #[test]
    fn zip_entries_are_capped_in_count_ratio_and_total() {
        let many: Vec<(String, Vec<u8>)> = (0..20).map(|i| (format!("f{i}"), vec![b'a'])).collect();
        let refs: Vec<(&str, &[u8])> = many
            .iter()
            .map(|(n, d)| (n.as_str(), d.as_slice()))
            .collect();
        let bytes = zip_of(&refs);
        let few = Limits {
            max_entries: 10,
            ..Limits::default()
        };
        let err = Archive::open(&bytes, "DOCX", &few).err().unwrap();
        assert!(
            err.to_string().contains("ingest.max_archive_entries"),
            "{err}"
        );

        let zeros = vec![0u8; 5_000_000];
        let bomb = zip_of(&[("word/document.xml", &zeros)]);
        let limits = Limits::default();
        let mut archive = Archive::open(&bomb, "DOCX", &limits).unwrap();
        let err = archive.read("word/document.xml").unwrap_err();
        assert!(matches!(err, LoadError::Ratio { .. }), "{err}");

        // Two entries that fit alone but not together.
        let text = b"0123456789".repeat(60);
        let pair = zip_of(&[("a", &text), ("b", &text)]);
        let small = Limits {
            max_bytes: 1_000,
            ..Limits::default()
        };
        let mut archive = Archive::open(&pair, "DOCX", &small).unwrap();
        assert_eq!(archive.read("a").unwrap().unwrap().len(), 600);
        assert!(archive.read("b").is_err());
        assert!(archive.read("missing").unwrap().is_none());
    }
}
