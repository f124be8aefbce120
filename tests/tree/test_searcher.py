"""The registered `tree` searcher over a hand-made tree (fake axis embeddings, no LLM).

It registers through the ``hoptree.searchers`` entry point, as a plugin package would; these
tests take it from there (the installed package's metadata), not from a hand-built list."""

from __future__ import annotations

from searchers.registry import SearcherContext, default_registry
from searchers.searcher import Searcher
from tests.scripted_chat import ScriptedChatModel
from tests.tree.test_retrieval import AxisEmbeddings
from tests.tree.test_store import hand_tree
from tree.retrieval import TreeRetriever
from tree.searcher import SPEC


def context() -> SearcherContext:
    retriever = TreeRetriever(hand_tree(), AxisEmbeddings())
    return SearcherContext(chat=ScriptedChatModel(), retrievers={"tree": retriever})


async def test_tree_searcher_returns_nodes_of_several_layers_with_their_layer() -> None:
    searcher = default_registry().create("tree", context())
    assert isinstance(searcher, Searcher) and searcher.name == "tree"
    result = await searcher.search("ships", k=5)
    assert result.hits and result.llm_calls == 0
    layers = {h.passage.metadata["layer"] for h in result.hits}
    assert len(layers) >= 2  # summaries and leaves compete in one ranking
    assert result.attempts[0].operation == "collapsed"
    assert f"layers {sorted(layers)}" == result.attempts[0].note
    assert result.attempts[0].verdict is not None


def test_the_tree_searcher_comes_from_the_entry_point_not_the_builtins() -> None:
    assert "tree" not in default_registry(plugins=False).names()
    registry = default_registry()
    assert registry.get("tree") is SPEC
    assert registry.get("tree").requires == ("tree",)


async def test_a_failing_tree_degrades_to_an_error_result() -> None:
    ctx = context()
    retriever = ctx.retrievers["tree"]

    def boom(*args, **kwargs):
        raise RuntimeError("disk gone")

    retriever.collapsed = boom  # type: ignore[method-assign]
    result = await default_registry().create("tree", ctx).search("ships")
    assert result.stopped == "error" and "disk gone" in (result.error or "")
    assert result.hits == []
