//! The vector cache's file: what [`super::CachedEmbedder`] saves so that a
//! restarted server answers at full speed at once instead of embedding
//! every passage sentence again.
//!
//! Layout, little-endian: [`MAGIC`]; the model id (`u32` length, UTF-8);
//! the dimension (`u32`); the number of entries (`u32`); per entry its
//! kind (`u8`: 0 a document text, 1 a query), its text (`u32` length,
//! UTF-8) and `dimension` `f32`s; then the SHA-256 of everything before
//! it. The file comes from GRACE's own data folder, but it is read as
//! untrusted all the same: every length is bounded before anything is
//! allocated, every value must be finite, and a file that is damaged,
//! from another model or has bytes after its digest is refused whole.

use std::io::Read;
use std::sync::Arc;

use sha2::{Digest, Sha256};

use super::Kind;

/// The first bytes of a vector cache file (the format's version is its
/// last digit).
pub(super) const MAGIC: &[u8; 8] = b"GRACEVC1";

/// The longest text kept in the file, in bytes; a longer one (a very long
/// sentence) is embedded again after a restart.
pub const MAX_TEXT_BYTES: usize = 16 * 1024;

/// The longest model id read back (a real one is a few dozen bytes).
const MAX_MODEL_ID_BYTES: usize = 1024;

/// The longest vector read back: far above any sentence model's.
const MAX_DIMENSION: usize = 8192;

/// The text an entry may take on average: a file is at most this much text
/// per vector the cache keeps (most sentences are a few hundred bytes), so
/// that its size is bounded by the cache's, not by [`MAX_TEXT_BYTES`].
const AVERAGE_TEXT_BYTES: usize = 2048;

/// The largest file a cache of `max_entries` vectors of `dimension` writes
/// or reads.
pub(super) fn max_file_bytes(max_entries: usize, dimension: usize) -> u64 {
    let header = MAGIC.len() + 4 + MAX_MODEL_ID_BYTES + 4 + 4 + 32;
    let entry = 1 + 4 + AVERAGE_TEXT_BYTES + 4 * dimension;
    (header as u64).saturating_add((max_entries as u64).saturating_mul(entry as u64))
}

/// One cached vector.
pub(super) struct Entry {
    pub kind: Kind,
    pub text: String,
    pub vector: Arc<[f32]>,
}

fn kind_byte(kind: Kind) -> u8 {
    match kind {
        Kind::Document => 0,
        Kind::Query => 1,
    }
}

/// The file's bytes for `entries` (oldest first) of a `dimension`-long
/// model `model_id`, in their order; texts over [`MAX_TEXT_BYTES`] and
/// vectors of another length are left out, and the oldest entries too
/// when the file would be over [`max_file_bytes`] for `max_entries`.
pub(super) fn encode(
    model_id: &str,
    dimension: usize,
    entries: &[Entry],
    max_entries: usize,
) -> Vec<u8> {
    let budget = max_file_bytes(max_entries, dimension);
    let mut size = (MAGIC.len() + 4 + model_id.len() + 4 + 4 + 32) as u64;
    let mut kept: Vec<&Entry> = entries
        .iter()
        .rev()
        .filter(|e| e.text.len() <= MAX_TEXT_BYTES && e.vector.len() == dimension)
        .take(max_entries)
        .take_while(|e| {
            size += (1 + 4 + e.text.len() + 4 * dimension) as u64;
            size <= budget
        })
        .collect();
    kept.reverse();
    let mut out = Vec::with_capacity(64 + kept.len() * (dimension * 4 + 64));
    out.extend_from_slice(MAGIC);
    put_bytes(&mut out, model_id.as_bytes());
    put_u32(&mut out, dimension);
    put_u32(&mut out, kept.len());
    for e in kept {
        out.push(kind_byte(e.kind));
        put_bytes(&mut out, e.text.as_bytes());
        for x in e.vector.iter() {
            out.extend_from_slice(&x.to_le_bytes());
        }
    }
    let digest = Sha256::digest(&out);
    out.extend_from_slice(&digest);
    out
}

fn put_u32(out: &mut Vec<u8>, n: usize) {
    // Every length written is bounded far below u32::MAX (texts by
    // MAX_TEXT_BYTES, counts by the cache's bound of two million).
    let n = u32::try_from(n).unwrap_or(u32::MAX);
    out.extend_from_slice(&n.to_le_bytes());
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put_u32(out, bytes.len());
    out.extend_from_slice(bytes);
}

/// Reads a file [`encode`] wrote for this `model_id` and `dimension`,
/// holding at most `max_entries` vectors. The error says what is wrong,
/// for a warning.
pub(super) fn decode(
    reader: impl Read,
    model_id: &str,
    dimension: usize,
    max_entries: usize,
) -> Result<Vec<Entry>, String> {
    let mut r = Hashing {
        inner: reader,
        hasher: Sha256::new(),
    };
    let mut magic = [0u8; 8];
    r.fill(&mut magic)?;
    if &magic != MAGIC {
        return Err("it is not a GRACE vector cache file (or one of another version)".into());
    }
    let id = r.text(MAX_MODEL_ID_BYTES, "model id")?;
    if id != model_id {
        return Err(format!(
            "it holds vectors of model {id:?}, not of {model_id:?}"
        ));
    }
    let dim = r.u32()?;
    if dim > MAX_DIMENSION {
        return Err(format!(
            "its vectors are {dim} long, over the {MAX_DIMENSION} allowed"
        ));
    }
    if dim != dimension {
        return Err(format!(
            "it holds {dim}-long vectors, not {dimension}-long ones"
        ));
    }
    let count = r.u32()?;
    if count > max_entries {
        return Err(format!(
            "it holds {count} vectors, more than the {max_entries} the cache keeps (twice embedding.cache_size)"
        ));
    }
    // Grown as entries are read, not sized by the file's word.
    let mut entries = Vec::with_capacity(count.min(4096));
    let mut raw = vec![0u8; dimension * 4];
    for i in 0..count {
        let mut kind = [0u8; 1];
        r.fill(&mut kind)?;
        let kind = match kind[0] {
            0 => Kind::Document,
            1 => Kind::Query,
            other => return Err(format!("entry {i} has an unknown kind {other}")),
        };
        let text = r.text(MAX_TEXT_BYTES, "text")?;
        r.fill(&mut raw)?;
        let vector: Vec<f32> = raw
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        if vector.iter().any(|x| !x.is_finite()) {
            return Err(format!("entry {i} has a value that is not a number"));
        }
        entries.push(Entry {
            kind,
            text,
            vector: Arc::from(vector),
        });
    }
    let computed = r.hasher.finalize();
    let mut stored = [0u8; 32];
    r.inner
        .read_exact(&mut stored)
        .map_err(|_| "it ends before its digest (cut short)".to_string())?;
    if computed.as_slice() != stored {
        return Err("its digest does not match its contents (damaged)".into());
    }
    let mut extra = [0u8; 1];
    match r.inner.read(&mut extra) {
        Ok(0) => Ok(entries),
        Ok(_) => Err("it has bytes after its digest".into()),
        Err(e) => Err(format!("cannot read it: {e}")),
    }
}

/// A reader that hashes what it reads.
struct Hashing<R> {
    inner: R,
    hasher: Sha256,
}

impl<R: Read> Hashing<R> {
    fn fill(&mut self, buf: &mut [u8]) -> Result<(), String> {
        self.inner.read_exact(buf).map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => "it is cut short".to_string(),
            _ => format!("cannot read it: {e}"),
        })?;
        self.hasher.update(&*buf);
        Ok(())
    }

    fn u32(&mut self) -> Result<usize, String> {
        let mut b = [0u8; 4];
        self.fill(&mut b)?;
        usize::try_from(u32::from_le_bytes(b)).map_err(|_| "a length is out of range".to_string())
    }

    fn text(&mut self, max: usize, what: &str) -> Result<String, String> {
        let len = self.u32()?;
        if len > max {
            return Err(format!(
                "a {what} is {len} bytes long, over the {max} allowed"
            ));
        }
        let mut bytes = vec![0u8; len];
        self.fill(&mut bytes)?;
        String::from_utf8(bytes).map_err(|_| format!("a {what} is not UTF-8"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(kind: Kind, text: &str, vector: &[f32]) -> Entry {
        Entry {
            kind,
            text: text.into(),
            vector: Arc::from(vector),
        }
    }

    fn sample() -> Vec<u8> {
        encode(
            "m",
            2,
            &[
                entry(Kind::Document, "a sentence", &[0.6, 0.8]),
                entry(Kind::Query, "a question?", &[1.0, 0.0]),
                entry(Kind::Document, "日本語の文。", &[0.0, 1.0]),
            ],
            10,
        )
    }

    /// `bytes` with its digest made right again after a change, so that
    /// the checks behind the digest are reached.
    fn redigest(mut bytes: Vec<u8>) -> Vec<u8> {
        let body = bytes.len() - 32;
        let digest = Sha256::digest(&bytes[..body]);
        bytes[body..].copy_from_slice(&digest);
        bytes
    }

    #[test]
    fn reads_back_what_it_wrote_in_order() {
        let entries = decode(sample().as_slice(), "m", 2, 10).unwrap();
        let got: Vec<(Kind, &str, Vec<f32>)> = entries
            .iter()
            .map(|e| (e.kind, e.text.as_str(), e.vector.to_vec()))
            .collect();
        assert_eq!(
            got,
            vec![
                (Kind::Document, "a sentence", vec![0.6, 0.8]),
                (Kind::Query, "a question?", vec![1.0, 0.0]),
                (Kind::Document, "日本語の文。", vec![0.0, 1.0]),
            ]
        );
    }

    #[test]
    fn leaves_out_texts_too_long_to_keep() {
        let long = "x".repeat(MAX_TEXT_BYTES + 1);
        let bytes = encode(
            "m",
            2,
            &[
                entry(Kind::Document, &long, &[1.0, 0.0]),
                entry(Kind::Document, "kept", &[0.0, 1.0]),
            ],
            10,
        );
        let entries = decode(bytes.as_slice(), "m", 2, 10).unwrap();
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].text, "kept");
    }

    #[test]
    fn keeps_the_newest_entries_within_the_files_bound() {
        let long = "x".repeat(AVERAGE_TEXT_BYTES * 3);
        let entries: Vec<Entry> = (0..4)
            .map(|i| entry(Kind::Document, &format!("{i}{long}"), &[1.0, 0.0]))
            .collect();
        // Room for two entries' vectors but not for four texts this long.
        let bytes = encode("m", 2, &entries, 4);
        assert!(bytes.len() as u64 <= max_file_bytes(4, 2));
        let kept = decode(bytes.as_slice(), "m", 2, 4).unwrap();
        assert!(!kept.is_empty() && kept.len() < 4);
        assert!(
            kept.last().unwrap().text.starts_with('3'),
            "the newest is kept"
        );
    }

    #[test]
    fn refuses_another_model_dimension_or_too_many_entries() {
        let bytes = sample();
        let other_model = decode(bytes.as_slice(), "other", 2, 10).err().unwrap();
        assert!(other_model.contains("model \"m\""), "{other_model}");
        let other_dim = decode(bytes.as_slice(), "m", 3, 10).err().unwrap();
        assert!(other_dim.contains("2-long"), "{other_dim}");
        let too_many = decode(bytes.as_slice(), "m", 2, 2).err().unwrap();
        assert!(too_many.contains("holds 3 vectors"), "{too_many}");
    }

    #[test]
    fn refuses_every_kind_of_damage() {
        let good = sample();
        let header = MAGIC.len() + 4 + 1 + 4 + 4; // magic, id "m", dim, count
        let mut cases: Vec<(&str, Vec<u8>, &str)> = Vec::new();
        cases.push(("empty", Vec::new(), "cut short"));
        cases.push(("cut short", good[..good.len() / 2].to_vec(), "cut short"));
        cases.push((
            "no digest",
            good[..good.len() - 32].to_vec(),
            "before its digest",
        ));
        let mut flipped = good.clone();
        flipped[header + 20] ^= 0x40;
        cases.push(("a flipped bit", flipped, "digest does not match"));
        let mut trailing = good.clone();
        trailing.push(0);
        cases.push(("trailing bytes", trailing, "after its digest"));
        let mut magic = good.clone();
        magic[0] = b'X';
        cases.push(("another file", magic, "not a GRACE vector cache"));
        // A count of four billion must be refused before anything is
        // allocated for it.
        let mut count = good.clone();
        count[header - 4..header].copy_from_slice(&u32::MAX.to_le_bytes());
        cases.push(("a huge count", redigest(count), "more than the"));
        // A text length of four billion, likewise.
        let mut text_len = good.clone();
        text_len[header + 1..header + 5].copy_from_slice(&u32::MAX.to_le_bytes());
        cases.push(("a huge text", redigest(text_len), "over the"));
        let mut kind = good.clone();
        kind[header] = 7;
        cases.push(("an unknown kind", redigest(kind), "unknown kind"));
        let mut not_utf8 = good.clone();
        not_utf8[header + 5] = 0xff;
        cases.push(("a text not UTF-8", redigest(not_utf8), "not UTF-8"));
        let mut nan = good.clone();
        let first_value = header + 1 + 4 + "a sentence".len();
        nan[first_value..first_value + 4].copy_from_slice(&f32::NAN.to_le_bytes());
        cases.push(("a NaN", redigest(nan), "not a number"));
        for (name, bytes, expected) in cases {
            let err = decode(bytes.as_slice(), "m", 2, 10)
                .err()
                .unwrap_or_else(|| panic!("{name} was accepted"));
            assert!(err.contains(expected), "{name}: {err}");
        }
    }
}
