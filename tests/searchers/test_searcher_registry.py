"""The registry, and adding a searcher the way docs/searcher-plugins.md shows (the example
below is that page's, kept in step by hand: about 30 lines; the page's also takes a scope)."""

from __future__ import annotations

import importlib
import sys
import time
from pathlib import Path

import pytest

from searchers.passages import Passage
from searchers.registry import (
    SearcherContext,
    SearcherRegistry,
    SearcherRegistryError,
    SearcherSpec,
    default_registry,
)
from searchers.searcher import Attempt, Searcher, SearchResult
from searchers.sparse_tantivy import TantivySparseIndex
from tests.scripted_chat import ScriptedChatModel


# --- the example of docs/searcher-plugins.md ----------------------------------------------
class TitleSearcher:
    """Finds passages whose title shares a word with the query; no LLM involved."""

    name = "title"
    description = "matches the query's words against passage titles only"

    def __init__(self, retriever) -> None:
        self.retriever = retriever

    async def search(self, query: str, *, k: int = 10) -> SearchResult:
        started = time.monotonic()
        lucene = " ".join(f"title:{word}" for word in query.split())
        hits = self.retriever.retrieve(lucene, k)
        tried = Attempt(id=0, operation="title", query=lucene, hit_ids=[h.id for h in hits])
        return SearchResult(
            searcher=self.name,
            query=query,
            hits=hits,
            attempts=[tried],
            best_attempt=0,
            sufficient=bool(hits),
            stopped="exhausted",
            llm_calls=0,
            ms=(time.monotonic() - started) * 1000,
        )


TITLE = SearcherSpec(
    name="title",
    description=TitleSearcher.description,
    factory=lambda context: TitleSearcher(context.retrievers["sparse"]),
    requires=("sparse",),
)
# --- end of the example of docs/searcher-plugins.md ---------------------------------------


@pytest.fixture(scope="module")
def sparse(tmp_path_factory: pytest.TempPathFactory) -> TantivySparseIndex:
    index = TantivySparseIndex.create(tmp_path_factory.mktemp("reg") / "idx")
    index.add(
        [
            Passage("a", "Ada Lovelace", "She wrote the first program for the Analytical Engine."),
            Passage("b", "Analytical Engine", "A mechanical computer designed by Charles Babbage."),
            Passage("c", "Lovelace (film)", "A 2013 film about Linda Lovelace, not Ada."),
        ]
    )
    return index


def context(sparse, **kw) -> SearcherContext:
    return SearcherContext(chat=ScriptedChatModel(), retrievers={"sparse": sparse}, **kw)


async def test_a_new_searcher_registers_and_searches(sparse) -> None:
    registry = default_registry(plugins=False)
    registry.register(TITLE)
    assert "title" in registry.names()
    searcher = registry.create("title", context(sparse))
    assert isinstance(searcher, Searcher)
    result = await searcher.search("Analytical Engine?")
    assert [h.id for h in result.hits] == ["b"]  # only the title field was searched
    assert result.attempts[0].query == "title:Analytical title:Engine?"


def test_builtins_and_their_requirements(sparse) -> None:
    registry = default_registry(plugins=False)
    assert {"sparse", "dense", "web"} <= set(registry.names())
    assert all(spec.description for spec in registry.specs())
    assert registry.create("sparse", context(sparse)).name == "sparse"
    with pytest.raises(SearcherRegistryError, match="needs the dense index"):
        registry.create("dense", context(sparse))


def test_unknown_and_duplicate_names() -> None:
    registry = SearcherRegistry([TITLE])
    with pytest.raises(SearcherRegistryError, match="no searcher named 'nope'; known: title"):
        registry.get("nope")
    with pytest.raises(SearcherRegistryError, match="already registered"):
        registry.register(TITLE)
    registry.register(TITLE, replace=True)
    with pytest.raises(SearcherRegistryError, match="identifier"):
        registry.register(SearcherSpec("not a name", "x", TITLE.factory))


def test_a_factory_must_return_a_searcher(sparse) -> None:
    registry = SearcherRegistry([SearcherSpec("bad", "returns junk", lambda ctx: object())])
    with pytest.raises(SearcherRegistryError, match="no Searcher"):
        registry.create("bad", context(sparse))


def install_plugin(root: Path, monkeypatch: pytest.MonkeyPatch, module_body: str, target: str):
    """A real installed distribution (dist-info on sys.path) declaring an entry point."""
    (root / "hoptree_title_plugin.py").write_text(module_body)
    info = root / "hoptree_title_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: hoptree-title-plugin\nVersion: 1.0\n"
    )
    (info / "entry_points.txt").write_text(f"[hoptree.searchers]\ntitle = {target}\n")
    monkeypatch.syspath_prepend(str(root))
    importlib.invalidate_caches()
    monkeypatch.delitem(sys.modules, "hoptree_title_plugin", raising=False)


def test_entry_point_plugins_are_loaded(tmp_path: Path, monkeypatch, sparse) -> None:
    body = (
        "from searchers.registry import SearcherSpec\n"
        "SPEC = SearcherSpec('plugged', 'from a plugin', lambda ctx: None)\n"
    )
    install_plugin(tmp_path, monkeypatch, body, "hoptree_title_plugin:SPEC")
    registry = default_registry()
    assert "plugged" in registry.names()
    assert registry.get("plugged").description == "from a plugin"


def test_a_broken_plugin_is_skipped_with_a_warning(tmp_path: Path, monkeypatch, caplog) -> None:
    install_plugin(
        tmp_path, monkeypatch, "raise ImportError('boom')\n", "hoptree_title_plugin:SPEC"
    )
    registry = default_registry()
    assert "sparse" in registry.names()
    assert "boom" in caplog.text
