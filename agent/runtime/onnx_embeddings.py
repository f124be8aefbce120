"""The same sentence vectors as sentence-transformers, through ONNX Runtime (fp32 or int8).

Why: on a 2-core machine PyTorch embeds ~23 passages/s, which makes a 100k-passage index an
hour's work and every query pay ~6 ms. ONNX Runtime runs the exported graph (see
``agent.runtime.onnx_export``) without importing torch at all, and int8 weights halve the work
again. Texts are tokenized with the model's own ``tokenizer.json`` (the ``tokenizers`` library, what
sentence-transformers uses underneath) and embedded in batches of similar length, so a batch
pads to its own longest text rather than to the corpus's.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np

from agent.runtime.array_embeddings import ArrayEmbeddings
from agent.runtime.onnx_export import INPUT_NAMES, ModelLayout, OnnxExportError, ensure_export


class OnnxEmbeddings(ArrayEmbeddings):
    """``Embeddings`` over an exported model; the export and the session happen on first use,
    so building an agent that never embeds costs nothing."""

    def __init__(
        self,
        model_path: Path,
        export_root: Path,
        *,
        variant: str = "onnx-int8",
        batch_size: int = 8,
        threads: int = 0,
        model_name: str | None = None,
        onnx_file: Path | None = None,
    ) -> None:
        """``onnx_file``: a graph to load instead of the export (a variant a benchmark made);
        the tokenizer and dimension still come from ``model_path``."""
        self.model_name = model_name or str(model_path)
        self.backend = variant
        self.batch_size = batch_size
        self.threads = threads
        self.export_root = Path(export_root)
        self.layout = ModelLayout.read(Path(model_path))
        self.onnx_file = onnx_file
        self._session: Any = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()

    @property
    def dimension(self) -> int:
        return self.layout.dimension

    def _ready(self) -> tuple[Any, Any]:
        with self._lock:
            if self._session is None:
                import onnxruntime as ort
                from tokenizers import Tokenizer

                onnx_path = self.onnx_file or ensure_export(
                    self.layout, self.export_root, self.backend
                )
                options = ort.SessionOptions()
                options.intra_op_num_threads = self.threads  # 0: one per physical core
                options.inter_op_num_threads = 1
                options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
                try:
                    session = ort.InferenceSession(
                        str(onnx_path), options, providers=["CPUExecutionProvider"]
                    )
                except Exception as exc:  # onnxruntime raises its own untyped errors
                    raise OnnxExportError(f"cannot load {onnx_path}: {exc}") from exc
                tokenizer = Tokenizer.from_file(str(self.layout.path / "tokenizer.json"))
                tokenizer.no_padding()  # we pad per batch, to the batch's own longest text
                tokenizer.enable_truncation(max_length=self.layout.max_seq_length)
                self._tokenizer, self._session = tokenizer, session
            return self._session, self._tokenizer

    def embed_array(self, texts: list[str], *, show_progress: bool = False) -> np.ndarray:
        """float32 matrix (n, dim) of unit vectors, rows in the order of ``texts``."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        session, tokenizer = self._ready()
        encodings = tokenizer.encode_batch(list(texts))
        order = sorted(range(len(encodings)), key=lambda i: len(encodings[i].ids))
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(order), max(1, self.batch_size)):
            rows = order[start : start + self.batch_size]
            width = max(len(encodings[i].ids) for i in rows)
            ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            types = np.zeros((len(rows), width), dtype=np.int64)
            for r, i in enumerate(rows):
                enc = encodings[i]
                n = len(enc.ids)
                ids[r, :n] = enc.ids
                mask[r, :n] = 1
                types[r, :n] = enc.type_ids
            feeds = dict(zip(INPUT_NAMES, (ids, mask, types), strict=True))
            out[rows] = session.run(None, feeds)[0]
        return out
