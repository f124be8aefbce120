"""Reciprocal-rank fusion: the arithmetic on hand-made rankings, and the retriever over any
retrievers (stand-ins that record what they were asked, and the real sparse + dense pair)."""

from __future__ import annotations

from pathlib import Path

import pytest

from searchers.corpus import read_passages
from searchers.dense_faiss import DenseConfig, FaissDenseIndex
from searchers.hybrid import HybridRetriever, reciprocal_rank_fusion
from searchers.passages import Hit, Passage
from searchers.retrieval import Retriever
from searchers.sparse_tantivy import TantivySparseIndex
from tests.locations import TESTS

DATA = TESTS / "data"


def _p(pid: str) -> Passage:
    return Passage(id=pid, title=pid.upper(), text=f"text of {pid}")


def _hits(name: str, ids: list[str]) -> list[Hit]:
    return [Hit(_p(pid), score=10.0 - i, retriever=name) for i, pid in enumerate(ids)]


class StaticRetriever:
    """A stand-in returning a fixed ranking and recording the k it was asked for."""

    def __init__(self, name: str, ids: list[str]) -> None:
        self.name = name
        self.ids = ids
        self.asked: list[int] = []

    def retrieve(self, query: str, k: int = 10) -> list[Hit]:
        self.asked.append(k)
        return _hits(self.name, self.ids[:k])

    def get(self, passage_id: str) -> Passage | None:
        return _p(passage_id) if passage_id in self.ids else None

    def __len__(self) -> int:
        return len(self.ids)


def test_rrf_scores_are_the_reciprocal_rank_sums() -> None:
    fused = reciprocal_rank_fusion(
        [("sparse", _hits("sparse", ["a", "b", "c"])), ("dense", _hits("dense", ["c", "a", "d"]))]
    )
    assert [f.passage.id for f in fused] == ["a", "c", "b", "d"]
    scores = {f.passage.id: f.score for f in fused}
    assert scores["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert scores["c"] == pytest.approx(1 / 63 + 1 / 61)
    assert scores["b"] == pytest.approx(1 / 62)
    assert scores["d"] == pytest.approx(1 / 63)
    assert fused[0].ranks == {"sparse": 1, "dense": 2}
    assert fused[3].ranks == {"dense": 3}


def test_rrf_k_weights_and_ties() -> None:
    rankings = [("x", _hits("x", ["a", "b"])), ("y", _hits("y", ["b", "a"]))]
    # a and b tie exactly; the tie breaks on best single rank (both 1), then first appearance
    assert [f.passage.id for f in reciprocal_rank_fusion(rankings)] == ["a", "b"]
    weighted = reciprocal_rank_fusion(rankings, rrf_k=0, weights=[1.0, 3.0])
    assert [f.passage.id for f in weighted] == ["b", "a"]
    assert weighted[0].score == pytest.approx(1 / 2 + 3 / 1)
    with pytest.raises(ValueError, match="weights"):
        reciprocal_rank_fusion(rankings, weights=[1.0])


def test_rrf_counts_a_repeated_id_once_at_its_best_rank() -> None:
    fused = reciprocal_rank_fusion([("x", _hits("x", ["a", "b", "a"]))], rrf_k=0)
    assert {f.passage.id: f.score for f in fused} == {"a": 1.0, "b": 0.5}


def test_same_named_retrievers_keep_separate_ranks() -> None:
    fused = reciprocal_rank_fusion([("s", _hits("s", ["a"])), ("s", _hits("s", ["a"]))])
    assert fused[0].ranks == {"s": 1, "s#1": 1}


def test_hybrid_asks_each_retriever_for_more_than_k_and_dedupes() -> None:
    one = StaticRetriever("sparse", ["a", "b", "c", "d", "e", "f"])
    two = StaticRetriever("dense", ["f", "e", "a", "x", "y", "z"])
    hybrid = HybridRetriever([one, two])
    assert isinstance(hybrid, Retriever)
    hits = hybrid.retrieve("q", k=2)
    assert one.asked == [4] and two.asked == [4]  # 2k by default
    assert [h.id for h in hits] == ["a", "f"]
    assert all(h.retriever == "hybrid" for h in hits)
    assert hits[0].score == pytest.approx(1 / 61 + 1 / 63)
    assert hits[0].passage.metadata["rrf_ranks"] == {"sparse": 1, "dense": 3}
    deep = HybridRetriever([one, two], depth=50)
    assert len(deep.retrieve("q", k=20)) == 9  # every distinct id once
    assert one.asked[-1] == 50
    assert hybrid.get("x") == _p("x")
    assert hybrid.get("nope") is None
    assert len(hybrid) == 6
    assert hybrid.retrieve("  ", 5) == []


def test_hybrid_over_real_sparse_and_dense(tmp_path: Path, embeddings) -> None:
    passages = list(read_passages(DATA / "passages.jsonl"))
    sparse = TantivySparseIndex.create(tmp_path / "sparse")
    sparse.add(passages)
    dense = FaissDenseIndex(DenseConfig(dimension=384), embeddings)
    dense.add(passages)
    hybrid = HybridRetriever([sparse, dense])
    query = "Which river flows through Budapest?"
    hits = hybrid.retrieve(query, k=3)
    assert hits[0].id == "danube"
    sparse_ids = [h.id for h in sparse.retrieve(query, 6)]
    dense_ids = [h.id for h in dense.retrieve(query, 6)]
    assert "danube" in sparse_ids[:2] and "danube" in dense_ids[:2]
    for hit in hits:
        ranks = hit.passage.metadata["rrf_ranks"]
        expected = {}
        if hit.id in sparse_ids:
            expected["sparse"] = sparse_ids.index(hit.id) + 1
        if hit.id in dense_ids:
            expected["dense"] = dense_ids.index(hit.id) + 1
        assert ranks == expected
        assert hit.score == pytest.approx(sum(1 / (60 + r) for r in expected.values()))
