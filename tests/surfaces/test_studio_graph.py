"""``langgraph.json`` names a graph factory; the factory builds the planner over the index and
searchers the run's configuration names, and the graph it returns runs the real planner (as a
subgraph, so its steps stream under ``planner:``). The chat model is the routed script behind
a loopback OpenAI-compatible endpoint, reached through the settings as a user's would be.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.studio_graph import OPEN_PLANNERS, make_graph
from searchers.index_dir import IndexDirError
from searchers.registry import SearcherRegistryError
from tests.locations import REPO
from tests.surfaces.test_mcp_cli import endpoint  # noqa: F401 (a fixture)
from tests.surfaces.test_mcp_server import QUESTION, index_dir  # noqa: F401 (index_dir is a fixture)

PLANNER_NODES = {"decompose", "search_sparse", "findings", "verify", "answer"}


def named_factory(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The factory exactly as ``langgraph.json`` names it: a file path and an attribute,
    loaded from the file the way the LangGraph server loads it (as a module of its own)."""
    spec = json.loads((REPO / "langgraph.json").read_text())
    assert list(spec["graphs"]) == ["hoptree"] and spec["dependencies"] == ["."]
    path, attr = spec["graphs"]["hoptree"].split(":")
    name = "studio_graph_as_named"
    module_spec = importlib.util.spec_from_file_location(name, REPO / path)
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    monkeypatch.setitem(sys.modules, name, module)
    module_spec.loader.exec_module(module)
    return getattr(module, attr)


@pytest.fixture
def env(
    endpoint: str,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[None]:
    """Settings as the LangGraph server's environment would give them."""
    for name in list(__import__("os").environ):
        if name.startswith("HOPTREE_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    for name, value in {
        "HOPTREE_DATA_DIR": str(tmp_path / "data"),
        "HOPTREE_LLM__BASE_URL": endpoint,
        "HOPTREE_LLM__MODEL": "scripted",
        "HOPTREE_LLM__API_KEY": "unused",
        "HOPTREE_LLM__MAX_RETRIES": "0",
    }.items():
        monkeypatch.setenv(name, value)
    yield
    OPEN_PLANNERS.close()


def test_langgraph_json_names_the_factory_and_it_builds_the_planner(
    env: None,
    index_dir: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    factory = named_factory(monkeypatch)
    assert factory.__qualname__ == make_graph.__qualname__
    config = {"configurable": {"index_dir": str(index_dir), "searchers": "sparse"}}
    graph = factory(config)
    assert graph.name == "hoptree"
    assert set(graph.get_graph().nodes) == {"__start__", "planner", "__end__"}
    subgraphs = dict(graph.get_subgraphs())
    assert set(subgraphs) == {"planner"}
    assert set(subgraphs["planner"].get_graph().nodes) >= PLANNER_NODES
    schema = graph.get_context_jsonschema()
    assert schema is not None and "index_dir" in schema["properties"]


async def test_the_graph_answers_and_streams_the_planners_steps(
    env: None,
    index_dir: Path,  # noqa: F811
) -> None:
    config = {"configurable": {"index_dir": str(index_dir), "searchers": "sparse"}}
    graph = make_graph(config)
    steps: list[tuple[tuple[str, ...], str]] = []
    final: dict[str, Any] = {}
    async for namespace, update in graph.astream(
        {"question": QUESTION}, config, stream_mode="updates", subgraphs=True
    ):
        for node, value in update.items():
            steps.append((namespace, node))
            if node == "planner":
                final = value
    assert final["short_answer"] == "the Seine"
    assert {c["id"] for c in final["citations"]} == {"paris", "seine"}
    assert [q["query"] for q in final["sub_queries"]] == [
        "city where the Eiffel Tower stands",
        "river that flows through Paris",
    ]
    assert final["degraded"] is False and final["llm_calls"] >= 3
    inner = [node for namespace, node in steps if namespace and namespace[0].startswith("planner")]
    assert {"decompose", "search_sparse", "findings", "answer"} <= set(inner)


async def test_the_index_can_come_from_the_runs_context(
    env: None,
    index_dir: Path,  # noqa: F811
) -> None:
    config = {"configurable": {"searchers": "sparse"}}
    graph = make_graph(config)  # no index named: nothing to check yet
    out = await graph.ainvoke({"question": QUESTION}, config, context={"index_dir": str(index_dir)})
    assert out["short_answer"] == "the Seine"


def test_a_wrong_searcher_or_index_fails_in_the_factory_and_says_which(
    env: None,
    tmp_path: Path,
    index_dir: Path,  # noqa: F811
) -> None:
    with pytest.raises(SearcherRegistryError, match="no searcher named 'nope'; known"):
        make_graph({"configurable": {"index_dir": str(index_dir), "searchers": "sparse,nope"}})
    with pytest.raises(IndexDirError, match="missing"):
        make_graph({"configurable": {"index_dir": str(tmp_path / "missing")}})


def test_the_langgraph_cli_accepts_the_file() -> None:
    config = pytest.importorskip("langgraph_cli.config", reason="langgraph-cli not installed")
    validated = config.validate_config_file(REPO / "langgraph.json")
    assert validated["graphs"] == {"hoptree": "./agent/studio_graph.py:make_graph"}
