"""Collapsed-tree and traversal retrieval on a hand-made tree, plus one built with real
embeddings; the token budget and its skip-and-continue rule."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest
from langchain_core.embeddings import Embeddings

from searchers.passages import Hit
from searchers.retrieval import RetrievalError, Retriever
from tests.scripted_chat import ScriptedChatModel
from tests.tree.test_store import AXES, hand_tree
from tree.build import TreeBuilder, TreeConfig
from tree.documents import SourceDocument
from tree.retrieval import TreeRetriever, pack_by_budget
from tree.store import save_tree


class AxisEmbeddings(Embeddings):
    """Queries point along the axes of the words they contain (cats, ships, bread, misc)."""

    model_name = "fake-4d"

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        rows = []
        for text in texts:
            row = [0.0] * 4
            for word, axis in AXES.items():
                if word in text.lower():
                    row[axis] = 1.0
            rows.append(row if any(row) else [0.0, 0.0, 0.0, 1.0])
        return rows

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


def ids(hits: list[Hit]) -> list[str]:
    return [h.id for h in hits]


@pytest.fixture
def retriever() -> TreeRetriever:
    return TreeRetriever(hand_tree(), AxisEmbeddings())


def test_is_a_retriever(retriever: TreeRetriever) -> None:
    assert isinstance(retriever, Retriever)
    assert retriever.name == "tree" and len(retriever) == 7
    passage = retriever.get("s-mix")
    assert passage is not None and passage.metadata["layer"] == 1
    assert retriever.get("nope") is None


def test_collapsed_ranks_every_layer_together(retriever: TreeRetriever) -> None:
    hits = retriever.collapsed("ships")
    assert ids(hits)[:3] == ["b0", "s-mix", "root"]  # a leaf, a summary and the root
    assert [h.passage.metadata["layer"] for h in hits[:3]] == [0, 1, 2]
    assert hits[0].score == pytest.approx(1.0)
    assert all(h.retriever == "tree" for h in hits)
    meta = hits[1].passage.metadata
    assert meta["children"] == ["b0", "b1"] and meta["source_ids"] == ["B"]
    assert hits[1].title == "Ships and bread"
    assert hits[2].title == "Cats (+1 more)"  # the root spans both documents


def test_budget_skips_a_node_that_would_overflow_and_continues(retriever: TreeRetriever) -> None:
    # b0 (40 tokens) fits; s-mix (30) would overflow 65 - 40 = 25, so it is skipped;
    # root (20) still fits; nothing left fits into the remaining 5 tokens
    hits = retriever.collapsed("ships", token_budget=65)
    assert ids(hits) == ["b0", "root"]
    assert sum(h.passage.metadata["tokens"] for h in hits) <= 65


@pytest.mark.parametrize("budget", [0, 19, 20, 50, 90, 150, 300, 2000])
def test_token_budget_is_respected(retriever: TreeRetriever, budget: int) -> None:
    hits = retriever.collapsed("cats and ships", token_budget=budget)
    assert sum(h.passage.metadata["tokens"] for h in hits) <= budget
    if budget >= 300:  # the whole tree is 300 tokens
        assert len(hits) == 7


def test_pack_rule() -> None:
    tokens = [50, 30, 10, 100, 5]
    ranked = [(0, 0.9), (1, 0.8), (3, 0.7), (2, 0.6), (4, 0.5)]
    assert pack_by_budget(ranked, tokens, 90) == [(0, 0.9), (1, 0.8), (2, 0.6)]
    assert pack_by_budget(ranked, tokens, 90, max_nodes=2) == [(0, 0.9), (1, 0.8)]
    assert pack_by_budget(ranked, tokens, None, max_nodes=1) == [(0, 0.9)]
    assert pack_by_budget(ranked, tokens, 4) == []


def test_traversal_follows_one_branch_collapsed_reaches_both(retriever: TreeRetriever) -> None:
    query = "cats and ships"
    walked = retriever.traverse(query, top_k=1)
    assert ids(walked) == ["root", "s-cats", "a0"]  # top layer first, then down the best branch
    collapsed = ids(retriever.collapsed(query, token_budget=150))
    assert "b0" in collapsed and "a0" in collapsed  # both branches, which traversal cannot do
    assert collapsed[0] == "root"  # the root is most similar to a mixed query
    wide = retriever.traverse(query, top_k=2)
    assert ids(wide) == ["root", "s-cats", "s-mix", "a0", "b0"]


def test_retrieve_uses_the_configured_mode(retriever: TreeRetriever) -> None:
    assert ids(retriever.retrieve("ships", k=2)) == ["b0", "s-mix"]
    traversal = TreeRetriever(hand_tree(), AxisEmbeddings(), mode="traversal", traversal_k=1)
    assert ids(traversal.retrieve("ships", k=10)) == ["root", "s-mix", "b0"]
    assert ids(traversal.retrieve("ships", k=2)) == ["root", "s-mix"]


def test_document_filter(retriever: TreeRetriever) -> None:
    hits = retriever.collapsed("ships", documents=["A"])
    assert hits and all("A" in h.passage.metadata["source_ids"] for h in hits)
    assert "b0" not in ids(hits)


def test_layer_filter_gives_plain_leaf_retrieval(retriever: TreeRetriever) -> None:
    leaves = retriever.collapsed("cats and ships", layers=[0], token_budget=100)
    assert {h.passage.metadata["layer"] for h in leaves} == {0}
    assert sorted(ids(leaves)) == ["a0", "b0"]  # tied; 50 + 40 tokens, a1 (60) no longer fits
    assert ids(retriever.collapsed("ships", layers=[1, 2]))[:2] == ["s-mix", "root"]


def test_open_from_disk_and_model_mismatch(tmp_path: Path) -> None:
    save_tree(hand_tree(), tmp_path / "tree")
    opened = TreeRetriever.open(tmp_path / "tree", AxisEmbeddings())
    assert ids(opened.retrieve("bread", k=1)) == ["b1"]
    with pytest.raises(RetrievalError, match="no tree"):
        TreeRetriever.open(tmp_path / "elsewhere", AxisEmbeddings())

    class Other(AxisEmbeddings):
        model_name = "another-model"

    with pytest.raises(RetrievalError, match="embedded with"):
        TreeRetriever(hand_tree(), Other())

    class Wide(AxisEmbeddings):
        model_name = ""

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [[1.0] * 8 for _ in texts]

    with pytest.raises(RetrievalError, match="dimensions"):
        TreeRetriever(hand_tree(), Wide()).retrieve("cats")


def test_pluggable_ranker_hook(retriever: TreeRetriever) -> None:
    class Reversed:
        def rank(self, query: str, limit: int) -> list[tuple[int, float]]:
            return [(row, float(-row)) for row in reversed(range(limit))]

    hybrid = TreeRetriever(hand_tree(), AxisEmbeddings(), ranker=Reversed())
    assert ids(hybrid.collapsed("anything", max_nodes=2)) == ["root", "s-mix"]


def test_collapsed_tree_over_a_built_tree_with_real_embeddings(embeddings) -> None:
    from tests.tree.test_build import ASTRONOMY, BAKING, reply

    documents = [
        SourceDocument(id="stars", title="Stars", text=" ".join(ASTRONOMY)),
        SourceDocument(id="bread", title="Bread", text=" ".join(BAKING)),
    ]
    chat = ScriptedChatModel(replies=[reply] * 100)
    builder = TreeBuilder(chat, embeddings, TreeConfig(clustering="leiden", chunk_tokens=20))
    tree = asyncio.run(builder.build(documents))
    retriever = TreeRetriever(tree, embeddings, token_budget=120)
    hits = retriever.retrieve("How long should bread dough rise?", k=50)
    assert hits[0].passage.metadata["source_ids"] == ["bread"]
    assert sum(h.passage.metadata["tokens"] for h in hits) <= 120
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    assert np.isclose(
        scores[0],
        float(
            np.max(
                tree.embeddings
                @ np.array(
                    embeddings.embed_query("How long should bread dough rise?"), dtype=np.float32
                )
            )
        ),
        atol=1e-4,
    )
