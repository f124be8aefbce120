"""The MCP server driven by the official MCP client: in process for the tools' schemas, results
and errors, and over streamable HTTP against a real server on 127.0.0.1 for progress,
cancellation and the API key. The planner is the real one; its chat model is scripted (routed
by prompt, see tests/routed_chat.py) and the index is a real tantivy + FAISS directory.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.mcpserver import MCPServer

from agent.cli.mcp import MCP_PATH, mcp_http_app
from agent.hoptree_agent import HoptreeAgent
from agent.indexing import build, open_retriever
from agent.serve.mcp_backend import McpBackend
from agent.serve.mcp_server import MAX_SEARCH_K, build_mcp_server
from agent.settings import BudgetSettings, PlannerSettings, ServerSettings, Settings, load_settings
from searchers.index_dir import IndexDir
from searchers.registry import SearcherContext, SearcherRegistry, SearcherSpec
from searchers.searcher import Searcher, SearchResult
from tests.live_server import serving
from tests.planner_scripts import DATA, KeywordSearcher, two_hop_chat
from tests.routed_chat import RoutedChatModel

QUESTION = "Which river flows through the city where the Eiffel Tower stands?"
KEY = "mcp-test-key"
TOOLS = {"ask", "search", "retrieve", "list_searchers", "read_passage"}


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory, embeddings) -> Path:
    root = tmp_path_factory.mktemp("mcp")
    build(load_settings(data_dir=root / "data"), [DATA], root / "idx", embeddings=embeddings)
    return root / "idx"


def backend_over(
    index_dir: Path,
    embeddings,
    settings: Settings,
    searcher: Searcher | None = None,
    *,
    chat: RoutedChatModel | None = None,
    planner: PlannerSettings | None = None,
    **kw: Any,
) -> McpBackend:
    """The real planner over the scripted two-hop chat (or ``chat``), the draft off unless
    ``planner`` says otherwise; ``search`` gets a registry with one LLM-free searcher,
    ``retrieve`` the index's real retrievers."""
    sparse = IndexDir.open(index_dir).sparse()
    planner_searcher = searcher or KeywordSearcher(sparse)
    chat = chat or two_hop_chat()
    agent = HoptreeAgent(
        chat,
        {planner_searcher.name: planner_searcher},
        planner=planner or PlannerSettings(draft=False, supplement=True, findings_call="batched"),
        budgets=BudgetSettings(),
        llm_timeout_s=10,
    )
    registry = SearcherRegistry(
        [SearcherSpec("keywords", KeywordSearcher.description, lambda _: KeywordSearcher(sparse))]
    )
    return McpBackend(
        agent=agent,
        registry=registry,
        make_searcher=lambda name: registry.create(name, SearcherContext(chat=chat)),
        make_retriever=lambda kind: open_retriever(
            settings, index_dir, kind, embeddings=embeddings
        ),
        **kw,
    )


@pytest.fixture
def server(index_dir: Path, embeddings, settings: Settings) -> MCPServer:
    return build_mcp_server(backend_over(index_dir, embeddings, settings))


def structured(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    return result.structured_content


def error_text(result: Any) -> str:
    assert result.is_error, result.structured_content
    return " ".join(getattr(part, "text", "") for part in result.content)


class WaitingSearcher:
    """Its search says it has started, then waits until it is cancelled; the server runs on
    another thread, so both signals are thread-safe."""

    name = "waiting"
    description = "waits until cancelled"

    def __init__(self) -> None:
        self.started = threading.Event()
        self.cancelled = threading.Event()

    async def search(self, query: str, *, k: int = 10) -> SearchResult:
        self.started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            self.cancelled.set()
            raise
        raise AssertionError("unreachable")


async def until(flag: threading.Event, limit_s: float = 30) -> None:
    """Wait for a flag set on the server's thread (bounded; a failure is the timeout)."""
    with anyio.fail_after(limit_s):
        while not flag.is_set():
            await anyio.sleep(0.02)


# --------------------------------------------------------------------------- in process


async def test_the_tools_and_their_limits_are_in_the_schemas(server: MCPServer) -> None:
    async with Client(server) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == TOOLS
    ask = tools["ask"].input_schema["properties"]
    assert ask["question"]["maxLength"] == 2000 and ask["question"]["minLength"] == 1
    assert tools["ask"].input_schema["required"] == ["question"]
    k = tools["search"].input_schema["properties"]["k"]
    assert (k["minimum"], k["maximum"]) == (1, MAX_SEARCH_K)
    retriever = json.dumps(tools["retrieve"].input_schema)
    assert all(kind in retriever for kind in ('"sparse"', '"dense"', '"hybrid"'))
    out = tools["ask"].output_schema
    assert out is not None
    assert {"short_answer", "answer", "citations", "sub_queries", "llm_calls", "degraded"} <= set(
        out["properties"]
    )
    assert all(t.annotations and t.annotations.read_only_hint for t in tools.values())


async def test_ask_gives_the_cited_answer_and_reports_the_trace_as_progress(
    server: MCPServer,
) -> None:
    progress: list[tuple[float, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, message))

    async with Client(server) as client:
        result = await client.call_tool(
            "ask", {"question": QUESTION}, progress_callback=on_progress
        )
    out = structured(result)
    assert out["short_answer"] == "the Seine"
    assert [(c["n"], c["id"], c["title"]) for c in out["citations"]] == [
        (1, "paris", "Paris"),
        (2, "seine", "Seine"),
    ]
    assert [q["query"] for q in out["sub_queries"]] == [
        "city where the Eiffel Tower stands",
        "river that flows through Paris",
    ]
    assert out["llm_calls"] == 4 and out["degraded"] is False
    assert out["searchers"] == ["keywords"]
    text = result.content[0].text
    assert text.startswith("The Eiffel Tower stands in Paris [1]") and "Sources:" in text
    # the same one-line wording as `hoptree ask` and the chat stream, numbered in order
    messages = [m for _, m in progress]
    assert messages[0] == "planning the search (searchers: keywords)"
    assert messages[1].startswith("planned 2 atomic queries")
    assert any("keywords searched" in m for m in messages if m)
    assert messages[-1].startswith("answer written; citation check kept")
    assert [v for v, _ in progress] == list(range(1, len(progress) + 1))


async def test_search_retrieve_list_and_read_passage(server: MCPServer) -> None:
    async with Client(server) as client:
        listed = structured(await client.call_tool("list_searchers", {}))
        searched = structured(
            await client.call_tool(
                "search", {"query": "Eiffel Tower", "searcher": "keywords", "k": 2}
            )
        )
        sparse = structured(
            await client.call_tool(
                "retrieve", {"query": "Seine river", "retriever": "sparse", "k": 3}
            )
        )
        hybrid = structured(await client.call_tool("retrieve", {"query": "the Seine river"}))
        passage = structured(await client.call_tool("read_passage", {"passage_id": "seine"}))
        resource = await client.read_resource("hoptree://passage/paris")
    assert listed["searchers"] == [
        {
            "name": "keywords",
            "description": KeywordSearcher.description,
            "requires": [],
            "in_planner": True,
        }
    ]
    assert listed["retrievers"] == ["sparse", "dense", "hybrid"]
    assert searched["searcher"] == "keywords" and searched["hits"][0]["id"] == "paris"
    assert len(searched["hits"]) <= 2
    assert searched["attempts"][0]["operation"] == "original"
    assert sparse["retriever"] == "sparse" and sparse["hits"][0]["id"] == "seine"
    assert {"id", "title", "score", "text"} <= set(sparse["hits"][0])
    assert hybrid["retriever"] == "hybrid" and hybrid["k"] == 10
    assert "seine" in [h["id"] for h in hybrid["hits"]]
    assert passage["title"] == "Seine" and passage["metadata"] == {"kind": "river"}
    assert json.loads(resource.contents[0].text)["title"] == "Paris"


@pytest.mark.parametrize(
    ("tool", "arguments", "says"),
    [
        ("ask", {}, "question"),  # the required argument is missing
        ("ask", {"question": "x" * 2001}, "at most 2000 characters"),
        ("ask", {"question": "   "}, "the question is empty"),
        ("ask", {"question": 42}, "question"),
        ("ask", {"question": QUESTION, "thread_id": "no spaces allowed"}, "thread_id"),
        ("ask", {"question": QUESTION, "thread_id": "t1"}, "keeps no threads"),
        ("search", {"query": "Paris", "k": 0}, "greater than or equal to 1"),
        ("search", {"query": "Paris", "k": MAX_SEARCH_K + 1}, "less than or equal to 100"),
        ("search", {"query": "Paris", "searcher": "nope"}, "no searcher named 'nope'; known"),
        ("retrieve", {"query": "Paris", "retriever": "fuzzy"}, "retriever"),
        ("retrieve", {"query": ""}, "at least 1 character"),
        ("read_passage", {"passage_id": "no-such-passage"}, "no passage with id"),
    ],
)
async def test_bad_input_is_a_tool_error_that_says_what_is_wrong(
    server: MCPServer, tool: str, arguments: dict[str, Any], says: str
) -> None:
    async with Client(server) as client:
        result = await client.call_tool(tool, arguments)
        assert says in error_text(result)
        # and the server goes on serving
        assert structured(await client.call_tool("list_searchers", {}))["searchers"]


async def test_an_unknown_tool_and_a_missing_passage_resource_are_errors(
    server: MCPServer,
) -> None:
    async with Client(server) as client:
        unknown = await client.call_tool("delete_index", {})
        assert unknown.is_error and "delete_index" in error_text(unknown)
        with pytest.raises(Exception, match="no passage with id 'nothing'"):
            await client.read_resource("hoptree://passage/nothing")


# --------------------------------------------------------------------------- over HTTP


@contextmanager
def live_mcp(backend: McpBackend, **server_settings: Any) -> Iterator[str]:
    """The streamable-HTTP app under uvicorn on 127.0.0.1 (a free port) in its own thread;
    yields the MCP endpoint URL. Start and stop are bounded."""
    settings = ServerSettings(host="127.0.0.1", port=0, **server_settings)
    with serving(mcp_http_app(backend, settings), settings, "MCP test server") as url:
        yield url + MCP_PATH


def with_key(url: str, key: str = KEY) -> Any:
    headers = {"Authorization": f"Bearer {key}"}
    return streamable_http_client(url, http_client=httpx2.AsyncClient(headers=headers, timeout=60))


async def test_over_http_ask_answers_with_progress_and_retrieve_finds_hits(
    index_dir: Path, embeddings, settings: Settings
) -> None:
    backend = backend_over(index_dir, embeddings, settings)
    messages: list[str | None] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        messages.append(message)

    with live_mcp(backend) as url:
        async with Client(url, read_timeout_seconds=120) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            asked = await client.call_tool(
                "ask", {"question": QUESTION}, progress_callback=on_progress
            )
            hits = await client.call_tool("retrieve", {"query": "Danube", "retriever": "sparse"})
            bad = await client.call_tool("retrieve", {"query": "Danube", "k": 5000})
    assert names == TOOLS
    out = structured(asked)
    assert out["short_answer"] == "the Seine"
    assert {c["id"] for c in out["citations"]} == {"paris", "seine"}
    assert messages and messages[0] == "planning the search (searchers: keywords)"
    assert structured(hits)["hits"][0]["id"] == "danube"
    assert "less than or equal to 1000" in error_text(bad)


async def test_over_http_a_cancelled_ask_stops_the_planner_and_the_server_goes_on(
    index_dir: Path, embeddings, settings: Settings
) -> None:
    waiting = WaitingSearcher()
    backend = backend_over(index_dir, embeddings, settings, searcher=waiting)
    seen: list[str | None] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        seen.append(message)

    with live_mcp(backend) as url:
        async with Client(url, read_timeout_seconds=120) as client:
            async with anyio.create_task_group() as group:

                async def call() -> None:
                    await client.call_tool(
                        "ask", {"question": QUESTION}, progress_callback=on_progress
                    )
                    raise AssertionError("the cancelled call returned")

                group.start_soon(call)
                await until(waiting.started)  # the planner is searching now
                group.cancel_scope.cancel()  # the client gives up on the call
            await until(waiting.cancelled)  # ... and the server cancels the planner's search
            after = await client.call_tool("retrieve", {"query": "Seine", "retriever": "sparse"})
    assert seen[0] == "planning the search (searchers: waiting)"
    assert structured(after)["hits"][0]["id"] == "seine"


async def test_over_http_an_api_key_is_required_when_set(
    index_dir: Path, embeddings, settings: Settings
) -> None:
    backend = backend_over(index_dir, embeddings, settings)
    with live_mcp(backend, api_key=KEY) as url:
        async with httpx.AsyncClient(timeout=30) as plain:
            body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
            missing = await plain.post(url, json=body)
            wrong = await plain.post(url, json=body, headers={"Authorization": "Bearer nope"})
        async with Client(with_key(url), read_timeout_seconds=60) as client:
            listed = structured(await client.call_tool("list_searchers", {}))
    assert missing.status_code == 401 and "needs an API key" in missing.text
    assert wrong.status_code == 401 and "wrong API key" in wrong.text
    assert missing.headers["www-authenticate"] == "Bearer"
    assert listed["searchers"][0]["name"] == "keywords"


async def test_add_and_remove_document_tools_change_what_retrieve_finds(
    tmp_path: Path, embeddings, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    import agent.indexing
    from agent.serve.documents import DocumentStore

    monkeypatch.setattr(agent.indexing, "_embeddings", lambda _settings: embeddings)
    index = tmp_path / "idx"
    build(settings, [DATA], index, embeddings=embeddings)
    backend = backend_over(index, embeddings, settings, documents=DocumentStore(settings, index))
    old = "The Zorblat river flows through Quenton city."
    new = "The Zorblat river flows through Pellam town."

    async def zorblat(client: Client) -> list[str]:
        out = structured(
            await client.call_tool("retrieve", {"query": "Zorblat river", "retriever": "sparse"})
        )
        return [h["text"] for h in out["hits"] if "Zorblat" in h["text"]]

    async with Client(build_mcp_server(backend)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == TOOLS | {"add_document", "remove_document"}
        assert tools["remove_document"].annotations.destructive_hint
        added = structured(await client.call_tool("add_document", {"name": "z.txt", "text": old}))
        assert added["added"] == 1
        assert await zorblat(client) == [old]
        replaced = structured(
            await client.call_tool("add_document", {"name": "z.txt", "text": new})
        )
        assert (replaced["added"], replaced["removed"]) == (1, 1)
        assert await zorblat(client) == [new]  # the open retriever followed the new generation
        bad = await client.call_tool("add_document", {"name": "../z.txt", "text": new})
        assert bad.is_error and "plain file name" in bad.content[0].text
        removed = structured(await client.call_tool("remove_document", {"source": "z.txt"}))
        assert removed["removed"] == 1
        assert await zorblat(client) == []
        unknown = await client.call_tool("remove_document", {"source": "z.txt"})
        assert unknown.is_error and "not a source" in unknown.content[0].text
