"""The FAISS dense retriever with the real embedding model."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from langchain_core.embeddings import Embeddings

from searchers.corpus import read_passages
from searchers.dense_faiss import DenseConfig, FaissDenseIndex, passage_embedding_text
from searchers.passages import Passage
from searchers.retrieval import RetrievalError, Retriever
from tests.locations import REPO, TESTS

DATA = TESTS / "data"
SHARED = REPO.parent / "shared" / "data"


@pytest.fixture(scope="module")
def fixture_passages() -> list[Passage]:
    return list(read_passages(DATA / "passages.jsonl"))


class ListOnlyEmbeddings(Embeddings):
    """Delegates to the real model through the plain langchain interface (no embed_array), to
    exercise the path other Embeddings implementations take."""

    def __init__(self, inner: Embeddings) -> None:
        self.inner = inner

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.inner.embed_query(text)


def _index(embeddings, passages, kind="flat", **kw) -> FaissDenseIndex:
    index = FaissDenseIndex(DenseConfig(dimension=384, kind=kind, **kw), embeddings)
    index.add(passages)
    return index


def test_retrieves_by_meaning_with_cosine_scores(embeddings, fixture_passages) -> None:
    index = _index(embeddings, fixture_passages)
    assert isinstance(index, Retriever)
    hits = index.retrieve("Which river runs through the French capital?", k=3)
    assert hits[0].id == "seine"
    assert all(h.retriever == "dense" for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    # the score is the cosine of the query and the embedded title+text; the passage was
    # embedded in a batch, and int8 inference scales activations per batch, so embedding it
    # alone gives a vector a few thousandths away
    q = np.asarray(embeddings.embed_query("Which river runs through the French capital?"))
    d = np.asarray(embeddings.embed_query(passage_embedding_text(fixture_passages[0])))
    cosine = float(q @ d / np.linalg.norm(q) / np.linalg.norm(d))
    assert hits[0].score == pytest.approx(cosine, abs=5e-3)
    tolkien = index.retrieve("author of The Lord of the Rings", k=1)
    assert tolkien[0].id == "tolkien"


def test_add_is_idempotent_and_reports_progress(embeddings, fixture_passages) -> None:
    index = FaissDenseIndex(DenseConfig(dimension=384), embeddings)
    steps: list[int] = []
    assert index.add(fixture_passages, progress=steps.append, batch_size=4) == 6
    assert steps == [4, 6]
    assert index.add(fixture_passages + fixture_passages[:2]) == 0
    assert len(index) == 6
    assert index.ids() == [p.id for p in fixture_passages]
    assert index.get("paris") == fixture_passages[1]
    assert index.get("nope") is None


def test_save_load_and_append(tmp_path: Path, embeddings, fixture_passages) -> None:
    index = _index(embeddings, fixture_passages[:4])
    before = index.retrieve("river in Vienna", k=4)
    index.save(tmp_path / "dense")
    store = {p.id: p for p in fixture_passages[:4]}
    reopened = FaissDenseIndex.load(tmp_path / "dense", embeddings, store)
    after = reopened.retrieve("river in Vienna", k=4)
    assert [(h.id, round(h.score, 5)) for h in after] == [(h.id, round(h.score, 5)) for h in before]
    assert reopened.add(fixture_passages) == 2  # the two new ones only
    assert set(store) == {p.id for p in fixture_passages}  # new passages reach the store
    assert reopened.retrieve("Who wrote The Hobbit?", k=1)[0].id in {"tolkien", "hobbit"}


def test_load_rejects_missing_or_inconsistent_files(tmp_path: Path, embeddings) -> None:
    with pytest.raises(RetrievalError, match="cannot open dense index"):
        FaissDenseIndex.load(tmp_path / "nothing", embeddings)


def test_dimension_mismatch_is_an_error(embeddings, fixture_passages) -> None:
    index = FaissDenseIndex(DenseConfig(dimension=128), embeddings)
    with pytest.raises(RetrievalError, match=r"384-dimensional.*128-dimensional"):
        index.add(fixture_passages)


def test_plain_embeddings_interface_gives_the_same_ranking(embeddings, fixture_passages) -> None:
    fast = _index(embeddings, fixture_passages)
    plain = _index(ListOnlyEmbeddings(embeddings), fixture_passages)
    query = "capital city of France"
    assert [h.id for h in plain.retrieve(query, 6)] == [h.id for h in fast.retrieve(query, 6)]


def test_edge_cases(embeddings, fixture_passages) -> None:
    empty = FaissDenseIndex(DenseConfig(dimension=384), embeddings)
    assert empty.retrieve("anything", 5) == []
    index = _index(embeddings, fixture_passages)
    assert index.retrieve("   ", 5) == []
    assert index.retrieve("river", 0) == []
    assert len(index.retrieve("river", 100)) == 6  # k above the corpus size


def test_precomputed_vectors_match_embedding(embeddings, fixture_passages) -> None:
    vectors = embeddings.embed_array([passage_embedding_text(p) for p in fixture_passages])
    cached = FaissDenseIndex(DenseConfig(dimension=384), embeddings)
    cached.add(fixture_passages, vectors=vectors)
    live = _index(embeddings, fixture_passages)
    query = "English writer and philologist"
    got = [(h.id, round(h.score, 4)) for h in cached.retrieve(query, 6)]
    assert got == [(h.id, round(h.score, 4)) for h in live.retrieve(query, 6)]


@pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/data not present")
def test_exact_and_hnsw_agree_on_a_small_real_corpus(embeddings) -> None:
    passages = list(
        itertools.islice(read_passages(SHARED / "hotpotqa" / "dev_hard_300_a.jsonl"), 400)
    )
    vectors = embeddings.embed_array([passage_embedding_text(p) for p in passages])
    flat = FaissDenseIndex(DenseConfig(dimension=384, kind="flat"), embeddings)
    hnsw = FaissDenseIndex(DenseConfig(dimension=384, kind="hnsw", hnsw_m=16), embeddings)
    flat.add(passages, vectors=vectors)
    hnsw.add(passages, vectors=vectors)
    queries = [p.title for p in passages[::20]]
    overlap = []
    for query in queries:
        exact = flat.retrieve(query, 10)
        approx = hnsw.retrieve(query, 10)
        assert approx[0].id == exact[0].id
        assert approx[0].score == pytest.approx(exact[0].score, abs=1e-5)
        overlap.append(len({h.id for h in exact} & {h.id for h in approx}) / 10)
        # searching as wide as the corpus makes the graph search exhaustive in practice
        wide = hnsw.retrieve_vector(np.asarray(embeddings.embed_query(query)), 10, ef_search=400)
        assert [h.id for h in wide] == [h.id for h in exact]
    assert sum(overlap) / len(overlap) >= 0.95
