//! The prepared model's float weights, read once and handed to every
//! session as shared initializers.
//!
//! ONNX Runtime shares packed weights between sessions only for
//! initializers the caller gives it ("caching pre-packed weights is limited
//! to shared initializers", `session_state.cc`); weights it reads from the
//! model itself are packed again by every session. So the weights stored
//! outside the prepared graph (`model.data`) are read here, once, into
//! tensors all sessions of the embedder use.
//!
//! Reading them needs each weight's name, type, shape and place in
//! `model.data`, which only the graph file (ONNX, protobuf) says: this is a
//! minimal protobuf walk over `ModelProto.graph.initializer`, bounded like
//! any input read from disk (the file's size, every length checked against
//! what is left, no recursion).

use std::path::Path;
use std::sync::Arc;

use ort::value::{DynValue, Tensor};

/// The largest graph file read (MiniLM's prepared graph is 55 KB).
const MAX_GRAPH_BYTES: u64 = 16 * 1024 * 1024;
/// The largest weights file read (multilingual-e5-small's floats are
/// about 470 MB).
const MAX_WEIGHTS_BYTES: u64 = 4 * 1024 * 1024 * 1024;
/// The most dimensions a weight may have.
const MAX_DIMS: usize = 8;

/// ONNX's `TensorProto.DataType.FLOAT`.
const FLOAT: u64 = 1;

/// The operators whose weights ONNX Runtime packs on the CPU.
const PACKED_OPS: [&str; 2] = ["MatMul", "Gemm"];

/// Weights given to sessions by name.
pub(super) type Shared = Vec<(String, Arc<DynValue>)>;

/// Which of the weights stored outside the graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Part {
    /// The weights of matrix multiplies: the ones ONNX Runtime packs.
    Packed,
    /// The others (the token embedding table, the largest).
    Rest,
}

/// One initializer stored outside the graph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct External {
    pub name: String,
    /// Whether it is a matrix multiply's weight ([`Part::Packed`]).
    pub packed: bool,
    pub data_type: u64,
    pub dims: Vec<i64>,
    pub location: String,
    pub offset: u64,
    pub length: u64,
}

/// The float weights of the graph `graph` stored in the file beside it,
/// the `part` of them, as tensors to give sessions
/// (`SessionBuilder::with_initializer`).
pub(super) fn shared(graph: &Path, part: Part) -> Result<Shared, String> {
    floats(graph, part)?
        .into_iter()
        .map(|(weight, values)| {
            let tensor = Tensor::from_array((weight.dims, values))
                .map_err(|e| format!("weight {}: {e}", weight.name))?;
            Ok((weight.name, Arc::new(tensor.into_dyn())))
        })
        .collect()
}

/// The float weights of `graph` stored outside it, each read from their
/// file straight into its tensor's floats (no second copy is held).
fn floats(graph: &Path, part: Part) -> Result<Vec<(External, Vec<f32>)>, String> {
    use std::io::{Read, Seek, SeekFrom};
    let bytes = crate::durable::read_capped(graph, MAX_GRAPH_BYTES)
        .map_err(|e| format!("{}: {e}", graph.display()))?;
    let externals = externals(&bytes).map_err(|e| format!("{}: {e}", graph.display()))?;
    let folder = graph.parent().unwrap_or(Path::new("."));
    let mut read = Vec::new();
    // However the graph lists them, the weights read never add up to more
    // than their file, and none is read twice.
    let mut total = 0u64;
    let mut names = std::collections::HashSet::new();
    // The weights' file, opened once (the prepared model has one).
    let mut open: Option<(String, std::fs::File, u64)> = None;
    let wanted = |w: &External| w.data_type == FLOAT && w.packed == (part == Part::Packed);
    for weight in externals.into_iter().filter(wanted) {
        // The prepared model keeps its weights in a file beside the graph;
        // any other location is refused (it could name any file).
        if weight.location.is_empty()
            || weight.location.contains('/')
            || weight.location.contains("..")
        {
            return Err(format!(
                "{}: weight {} is stored in {:?}, not a file beside the graph",
                graph.display(),
                weight.name,
                weight.location
            ));
        }
        let path = folder.join(&weight.location);
        let fail = |e: String| format!("{}: weight {}: {e}", path.display(), weight.name);
        if open
            .as_ref()
            .is_none_or(|(at, _, _)| *at != weight.location)
        {
            let file = std::fs::File::open(&path).map_err(|e| fail(e.to_string()))?;
            let size = file.metadata().map_err(|e| fail(e.to_string()))?.len();
            open = Some((weight.location.clone(), file, size));
        }
        let Some((_, file, size)) = open.as_mut() else {
            continue;
        };
        let size = *size;
        let count = weight
            .dims
            .iter()
            .try_fold(1u64, |n, &d| {
                u64::try_from(d).ok().and_then(|d| n.checked_mul(d))
            })
            .ok_or_else(|| fail(format!("bad shape {:?}", weight.dims)))?;
        let fits = weight
            .offset
            .checked_add(weight.length)
            .is_some_and(|end| end <= size && size <= MAX_WEIGHTS_BYTES);
        if !fits || count.checked_mul(4) != Some(weight.length) {
            return Err(fail(format!(
                "{} bytes at {} do not hold {count} floats in a file of {size} bytes",
                weight.length, weight.offset
            )));
        }
        total = total.saturating_add(weight.length);
        if total > size || !names.insert(weight.name.clone()) {
            return Err(fail(format!(
                "the weights listed overlap or repeat ({total} bytes from a file of {size})"
            )));
        }
        file.seek(SeekFrom::Start(weight.offset))
            .map_err(|e| fail(e.to_string()))?;
        // Straight into the floats' own memory: no per-float work (a
        // conversion loop was a sixth of the tests' CPU time, every `grace`
        // process loading its model in an unoptimised build).
        let mut values = vec![0f32; count as usize];
        file.read_exact(bytemuck::cast_slice_mut(&mut values))
            .map_err(|e| fail(e.to_string()))?;
        // The file holds little-endian floats.
        #[cfg(target_endian = "big")]
        for v in &mut values {
            *v = f32::from_bits(u32::from_le(v.to_bits()));
        }
        read.push((weight, values));
    }
    Ok(read)
}

/// The initializers of the ONNX model `bytes` that are stored outside it,
/// each marked whether it is the weight (second input) of a matrix
/// multiply.
pub(super) fn externals(bytes: &[u8]) -> Result<Vec<External>, String> {
    let mut found = Vec::new();
    let mut multiplied = std::collections::HashSet::new();
    // ModelProto.graph = 7; GraphProto.node = 1, .initializer = 5;
    // NodeProto.input = 1, .op_type = 4.
    for (field, value) in fields(bytes)? {
        let (7, Value::Bytes(graph)) = (field, value) else {
            continue;
        };
        for (field, value) in fields(graph)? {
            match (field, value) {
                (1, Value::Bytes(node)) => {
                    let (mut op, mut inputs) = (String::new(), Vec::new());
                    for (field, value) in fields(node)? {
                        match (field, value) {
                            (1, Value::Bytes(input)) => inputs.push(text(input)?),
                            (4, Value::Bytes(op_type)) => op = text(op_type)?,
                            _ => {}
                        }
                    }
                    if PACKED_OPS.contains(&op.as_str()) {
                        multiplied.extend(inputs.into_iter().skip(1));
                    }
                }
                (5, Value::Bytes(tensor)) => {
                    if let Some(external) = external(tensor)? {
                        found.push(external);
                    }
                }
                _ => {}
            }
        }
    }
    for weight in &mut found {
        weight.packed = multiplied.contains(&weight.name);
    }
    Ok(found)
}

/// A `TensorProto` stored outside the graph, or `None`.
fn external(tensor: &[u8]) -> Result<Option<External>, String> {
    let mut w = External {
        name: String::new(),
        packed: false,
        data_type: 0,
        dims: Vec::new(),
        location: String::new(),
        offset: 0,
        length: 0,
    };
    let mut outside = false;
    for (field, value) in fields(tensor)? {
        match (field, value) {
            (1, Value::Varint(d)) => w.dims.push(d as i64),
            (1, Value::Bytes(packed)) => {
                let mut rest = packed;
                while !rest.is_empty() && w.dims.len() <= MAX_DIMS {
                    let (d, next) = varint(rest)?;
                    w.dims.push(d as i64);
                    rest = next;
                }
            }
            (2, Value::Varint(t)) => w.data_type = t,
            (8, Value::Bytes(name)) => w.name = text(name)?,
            (13, Value::Bytes(entry)) => {
                let (mut key, mut value) = (String::new(), String::new());
                for (field, v) in fields(entry)? {
                    match (field, v) {
                        (1, Value::Bytes(k)) => key = text(k)?,
                        (2, Value::Bytes(v)) => value = text(v)?,
                        _ => {}
                    }
                }
                let number = || {
                    value
                        .parse::<u64>()
                        .map_err(|_| format!("external data {key} {value:?} is not a number"))
                };
                match key.as_str() {
                    "location" => w.location = value.clone(),
                    "offset" => w.offset = number()?,
                    "length" => w.length = number()?,
                    _ => {}
                }
            }
            (14, Value::Varint(1)) => outside = true,
            _ => {}
        }
        if w.dims.len() > MAX_DIMS {
            return Err(format!("a weight with more than {MAX_DIMS} dimensions"));
        }
    }
    Ok(outside.then_some(w))
}

fn text(bytes: &[u8]) -> Result<String, String> {
    String::from_utf8(bytes.to_vec()).map_err(|_| "a name that is not UTF-8".to_string())
}

/// A protobuf field's value (groups and fixed-size values are skipped).
enum Value<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    Skipped,
}

/// The fields of one protobuf message, in order.
fn fields(mut bytes: &[u8]) -> Result<Vec<(u64, Value<'_>)>, String> {
    let mut out = Vec::new();
    while !bytes.is_empty() {
        let (key, rest) = varint(bytes)?;
        let (field, wire) = (key >> 3, key & 7);
        let (value, rest) = match wire {
            0 => {
                let (v, rest) = varint(rest)?;
                (Value::Varint(v), rest)
            }
            1 => (Value::Skipped, rest.get(8..).ok_or("a fixed64 cut short")?),
            2 => {
                let (len, rest) = varint(rest)?;
                let len = usize::try_from(len).map_err(|_| "a length beyond memory")?;
                if len > rest.len() {
                    return Err(format!("a field of {len} bytes with {} left", rest.len()));
                }
                let (value, rest) = rest.split_at(len);
                (Value::Bytes(value), rest)
            }
            5 => (Value::Skipped, rest.get(4..).ok_or("a fixed32 cut short")?),
            other => return Err(format!("wire type {other} (not an ONNX model)")),
        };
        out.push((field, value));
        bytes = rest;
    }
    Ok(out)
}

/// A varint and what follows it.
fn varint(bytes: &[u8]) -> Result<(u64, &[u8]), String> {
    let mut value = 0u64;
    for (i, &b) in bytes.iter().enumerate().take(10) {
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Ok((value, &bytes[i + 1..]));
        }
    }
    Err("a varint cut short or longer than 10 bytes".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn varint_bytes(mut v: u64) -> Vec<u8> {
        let mut out = Vec::new();
        loop {
            let b = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(b);
                return out;
            }
            out.push(b | 0x80);
        }
    }

    fn field(number: u64, bytes: &[u8]) -> Vec<u8> {
        let mut out = varint_bytes(number << 3 | 2);
        out.extend(varint_bytes(bytes.len() as u64));
        out.extend_from_slice(bytes);
        out
    }

    fn number(number: u64, v: u64) -> Vec<u8> {
        let mut out = varint_bytes(number << 3);
        out.extend(varint_bytes(v));
        out
    }

    fn entry(key: &str, value: &str) -> Vec<u8> {
        field(
            13,
            &[field(1, key.as_bytes()), field(2, value.as_bytes())].concat(),
        )
    }

    /// A model whose graph multiplies by `w` and gathers from `table`.
    fn model(tensors: &[Vec<u8>]) -> Vec<u8> {
        let matmul = [field(1, b"x"), field(1, b"w"), field(4, b"MatMul")].concat();
        let gather = [field(1, b"table"), field(1, b"ids"), field(4, b"Gather")].concat();
        let graph: Vec<u8> = [field(1, &matmul), field(1, &gather)]
            .into_iter()
            .flatten()
            .chain(tensors.iter().flat_map(|t| field(5, t)))
            .collect();
        [number(1, 8), field(7, &graph)].concat()
    }

    #[test]
    fn weights_stored_outside_are_found_marked_whether_multiplied_and_inline_ones_are_not() {
        let outside = [
            field(1, &[varint_bytes(2), varint_bytes(3)].concat()),
            number(2, FLOAT),
            field(8, b"w"),
            entry("location", "model.data"),
            entry("offset", "64"),
            entry("length", "24"),
            number(14, 1),
        ]
        .concat();
        let inline = [
            number(1, 4),
            number(2, 7),
            field(8, b"shape"),
            field(9, &[0; 32]),
        ]
        .concat();
        let table = [
            number(2, FLOAT),
            field(8, b"table"),
            entry("location", "model.data"),
            number(14, 1),
        ]
        .concat();
        let found = externals(&model(&[outside, inline, table])).unwrap();
        assert_eq!(
            found[..1],
            [External {
                name: "w".into(),
                packed: true,
                data_type: FLOAT,
                dims: vec![2, 3],
                location: "model.data".into(),
                offset: 64,
                length: 24,
            }]
        );
        let names: Vec<(&str, bool)> = found.iter().map(|w| (w.name.as_str(), w.packed)).collect();
        assert_eq!(
            names,
            [("w", true), ("table", false)],
            "the inline one is not listed"
        );
    }

    #[test]
    fn a_damaged_graph_is_an_error_not_a_panic() {
        let good = model(&[[field(8, b"w"), number(14, 1)].concat()]);
        // Every cut of a good file, and lengths far beyond the data.
        for end in 0..good.len() {
            let _ = externals(&good[..end]);
        }
        let huge = [varint_bytes(7 << 3 | 2), varint_bytes(u64::MAX >> 1)].concat();
        assert!(externals(&huge).unwrap_err().contains("bytes with"));
        assert!(externals(&[0xff; 11]).is_err(), "a varint of 11 bytes");
        assert!(externals(&[0x0b]).unwrap_err().contains("wire type 3"));
        let many_dims: Vec<u8> = (0..9)
            .flat_map(|_| number(1, 1))
            .chain(number(14, 1))
            .collect();
        // (the shape is checked before the name is known to be a weight)
        assert!(
            externals(&model(&[many_dims]))
                .unwrap_err()
                .contains("dimensions")
        );
        let bad_offset = [entry("offset", "-1"), number(14, 1)].concat();
        assert!(
            externals(&model(&[bad_offset]))
                .unwrap_err()
                .contains("not a number")
        );
    }

    #[test]
    fn weights_outside_their_folder_or_beyond_the_file_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let graph = dir.path().join("model.onnx");
        let tensor = |location: &str, length: &str| {
            [
                number(1, 2),
                number(2, FLOAT),
                field(8, b"w"),
                entry("location", location),
                entry("offset", "0"),
                entry("length", length),
                number(14, 1),
            ]
            .concat()
        };
        std::fs::write(
            dir.path().join("model.data"),
            1.5f32.to_le_bytes().repeat(2),
        )
        .unwrap();
        std::fs::write(&graph, model(&[tensor("model.data", "8")])).unwrap();
        let weights = floats(&graph, Part::Packed).unwrap();
        assert_eq!(weights.len(), 1);
        assert_eq!(
            (&weights[0].0.dims, &weights[0].1),
            (&vec![2i64], &vec![1.5f32, 1.5])
        );
        std::fs::write(&graph, model(&[tensor("model.data", "12")])).unwrap();
        assert!(
            floats(&graph, Part::Packed)
                .unwrap_err()
                .contains("do not hold 2 floats")
        );
        std::fs::write(
            &graph,
            model(&[tensor("model.data", "18446744073709551615")]),
        )
        .unwrap();
        assert!(
            floats(&graph, Part::Packed)
                .unwrap_err()
                .contains("do not hold 2 floats")
        );
        let twice = [tensor("model.data", "8"), tensor("model.data", "8")];
        std::fs::write(&graph, model(&twice)).unwrap();
        assert!(
            floats(&graph, Part::Packed)
                .unwrap_err()
                .contains("overlap or repeat")
        );
        for outside in ["../etc/passwd", "/etc/passwd", ""] {
            std::fs::write(&graph, model(&[tensor(outside, "8")])).unwrap();
            let e = floats(&graph, Part::Packed).unwrap_err();
            assert!(e.contains("not a file beside the graph"), "{e}");
        }
    }
}
