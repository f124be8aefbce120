from __future__ import annotations

import numpy as np
import pytest

from agent.runtime.embeddings import EmbeddingModelError, SentenceTransformerEmbeddings


def test_shape_and_unit_norm(embeddings: SentenceTransformerEmbeddings) -> None:
    texts = [f"Passage {i} about rivers and cities." for i in range(130)]  # > one batch
    vectors = embeddings.embed_array(texts)
    assert vectors.shape == (130, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert embeddings.embed_array([]).shape == (0, 384)


def test_related_pair_scores_above_unrelated(embeddings: SentenceTransformerEmbeddings) -> None:
    query = embeddings.embed_query("Who painted the Mona Lisa?")
    related = embeddings.embed_query("Leonardo da Vinci painted the Mona Lisa in Florence.")
    unrelated = embeddings.embed_query("The stock market closed lower on Tuesday.")
    assert float(np.dot(query, related)) > float(np.dot(query, unrelated)) + 0.2


def test_langchain_interface_matches_array_form(embeddings: SentenceTransformerEmbeddings) -> None:
    docs = embeddings.embed_documents(["alpha", "beta"])
    assert len(docs) == 2 and len(docs[0]) == embeddings.dimension == 384
    np.testing.assert_allclose(docs, embeddings.embed_array(["alpha", "beta"]), atol=1e-6)


async def test_async_interface(embeddings: SentenceTransformerEmbeddings) -> None:
    vector = await embeddings.aembed_query("alpha")
    np.testing.assert_allclose(vector, embeddings.embed_query("alpha"), atol=1e-6)


def test_unknown_model_is_never_downloaded() -> None:
    with pytest.raises(EmbeddingModelError, match="never downloaded"):
        SentenceTransformerEmbeddings("sentence-transformers/some-hub-only-model")
