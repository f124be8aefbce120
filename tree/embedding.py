"""Embedding texts into the unit-vector matrix every part of the tree works on.

Cosine similarity is the tree's only notion of closeness (segmentation, clustering, retrieval), so
vectors are L2-normalized here once, whatever the injected model returns. A model with a fast
``embed_array`` (hoptree's sentence-transformers wrapper) is used directly; any other langchain
``Embeddings`` goes through ``embed_documents``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from langchain_core.embeddings import Embeddings


def normalize_rows(vectors: np.ndarray) -> np.ndarray:
    """float32 rows of unit length; zero rows stay zero instead of becoming NaN."""
    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.ndim != 2:
        raise ValueError(f"expected a 2-d matrix of vectors, got shape {matrix.shape}")
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(matrix / norms, dtype=np.float32)


def embed_texts(embeddings: Embeddings, texts: Sequence[str], dim: int | None = None) -> np.ndarray:
    """(len(texts), dim) float32 unit vectors; ``dim`` is only needed for an empty input."""
    if not texts:
        return np.zeros((0, dim or 0), dtype=np.float32)
    fast = getattr(embeddings, "embed_array", None)
    raw = fast(list(texts)) if callable(fast) else embeddings.embed_documents(list(texts))
    matrix = normalize_rows(np.asarray(raw, dtype=np.float32))
    if matrix.shape[0] != len(texts):
        raise ValueError(f"embedding model returned {matrix.shape[0]} vectors for {len(texts)}")
    return matrix
