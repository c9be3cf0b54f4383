"""The pipeline a user would otherwise assemble, for scripts/bench: LlamaIndex
(llama-index-core) with the same all-MiniLM-L6-v2 int8 ONNX model GRACE uses
(through a custom embedding class on onnxruntime and the model's own
tokenizer, mean pooling, L2-normalised, 256 tokens, batches of 32) and
Qdrant's Python client in local mode (on disk, in process).

    bench_peer.py raw CORPUS            embed the peer's chunks, nothing else
    bench_peer.py ingest CORPUS STORE   read, chunk, embed, store
    bench_peer.py query STORE QUESTIONS retrieval only (top 5), per question

Each prints one JSON line. Run inside the virtualenv scripts/bench makes.
"""

import json
import os
import sys
import time
from pathlib import Path
from typing import List

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

from llama_index.core import Settings, SimpleDirectoryReader, StorageContext, VectorStoreIndex
from llama_index.core.embeddings import BaseEmbedding
from llama_index.core.node_parser import SentenceSplitter
from llama_index.vector_stores.qdrant import QdrantVectorStore
from qdrant_client import QdrantClient

MODEL_DIR = Path(os.environ.get("GRACE_MODEL_DIR", "models/minilm"))
COLLECTION = "peer"
# LlamaIndex's default embed_batch_size: what a user of it gets.
BATCH = 10
MAX_LENGTH = 256
# About GRACE's 200-word chunks with 30 words of overlap.
CHUNK_TOKENS = 256
OVERLAP_TOKENS = 40


class MiniLM(BaseEmbedding):
    """all-MiniLM-L6-v2 from GRACE's model folder on onnxruntime."""

    _session: ort.InferenceSession = None
    _tokenizer: Tokenizer = None

    def __init__(self, **kwargs):
        super().__init__(model_name="all-MiniLM-L6-v2-int8", embed_batch_size=BATCH, **kwargs)
        options = ort.SessionOptions()
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = ort.InferenceSession(str(MODEL_DIR / "model.onnx"), options)
        tokenizer = Tokenizer.from_file(str(MODEL_DIR / "tokenizer.json"))
        tokenizer.enable_truncation(MAX_LENGTH)
        tokenizer.enable_padding()
        self._tokenizer = tokenizer

    def _embed(self, texts: List[str]) -> List[List[float]]:
        out = []
        for i in range(0, len(texts), BATCH):
            encodings = self._tokenizer.encode_batch(texts[i : i + BATCH])
            ids = np.array([e.ids for e in encodings], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
            types = np.zeros_like(ids)
            hidden = self._session.run(
                None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
            )[0]
            m = mask[:, :, None].astype(np.float32)
            pooled = (hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
            pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
            out.extend(pooled.tolist())
        return out

    def _get_query_embedding(self, query: str) -> List[float]:
        return self._embed([query])[0]

    async def _aget_query_embedding(self, query: str) -> List[float]:
        return self._get_query_embedding(query)

    def _get_text_embedding(self, text: str) -> List[float]:
        return self._embed([text])[0]

    def _get_text_embeddings(self, texts: List[str]) -> List[List[float]]:
        return self._embed(texts)


def nodes(corpus: str):
    # exclude_hidden=False: the corpus may live under a hidden folder (~/.cache).
    documents = SimpleDirectoryReader(corpus, recursive=True, exclude_hidden=False).load_data()
    splitter = SentenceSplitter(chunk_size=CHUNK_TOKENS, chunk_overlap=OVERLAP_TOKENS)
    return splitter.get_nodes_from_documents(documents)


def main() -> None:
    command = sys.argv[1]
    Settings.llm = None
    embed = MiniLM()
    Settings.embed_model = embed
    if command == "raw":
        texts = [n.get_content(metadata_mode="embed") for n in nodes(sys.argv[2])]
        embed._embed(["warm-up"])
        started = time.perf_counter()
        embed._embed(texts)
        seconds = time.perf_counter() - started
        print(json.dumps({"chunks": len(texts), "seconds": seconds}))
    elif command == "ingest":
        corpus, store = sys.argv[2], sys.argv[3]
        embed._embed(["warm-up"])
        started = time.perf_counter()
        chunks = nodes(corpus)
        client = QdrantClient(path=store)
        vector_store = QdrantVectorStore(client=client, collection_name=COLLECTION)
        context = StorageContext.from_defaults(vector_store=vector_store)
        VectorStoreIndex(chunks, storage_context=context, embed_model=embed)
        seconds = time.perf_counter() - started
        client.close()
        print(json.dumps({"chunks": len(chunks), "seconds": seconds}))
    elif command == "query":
        store, questions = sys.argv[2], sys.argv[3]
        asked = [json.loads(line)["question"] for line in open(questions) if line.strip()]
        client = QdrantClient(path=store)
        vector_store = QdrantVectorStore(client=client, collection_name=COLLECTION)
        index = VectorStoreIndex.from_vector_store(vector_store, embed_model=embed)
        retriever = index.as_retriever(similarity_top_k=5)
        retriever.retrieve(asked[0])  # warm-up
        latencies, embed_only = [], []
        for q in asked:
            started = time.perf_counter()
            retriever.retrieve(q)
            latencies.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            embed._embed([q])
            embed_only.append((time.perf_counter() - started) * 1000)
        client.close()
        print(json.dumps({"questions": len(asked), "latencies_ms": latencies, "embed_ms": embed_only}))
    else:
        sys.exit(f"unknown command {command}")


if __name__ == "__main__":
    main()
