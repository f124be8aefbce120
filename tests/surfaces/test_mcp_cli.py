"""The real ``hoptree mcp`` command in a child process, driven by the official MCP client over
stdio (the way desktop and IDE agents start it) and over streamable HTTP, exactly as the
client configuration of docs/mcp.md runs it. The child builds everything from settings: its chat
model is an OpenAI-compatible endpoint on 127.0.0.1 that answers from a routed script
(tests/routed_endpoint.py), its searchers and retrievers are the real ones over a real index.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from langchain_core.messages import BaseMessage
from mcp import Client, StdioServerParameters

from tests.child_env import child_environment
from tests.planner_scripts import two_hop_chat, user_text
from tests.routed_endpoint import routed_endpoint
from tests.surfaces.test_mcp_server import (  # noqa: F401 (index_dir is a fixture)
    QUESTION,
    TOOLS,
    error_text,
    index_dir,
    structured,
)

STARTUP_S = 600  # the child imports torch and loads the embedding model on a busy machine


def hoptree_command() -> list[str]:
    """The installed ``hoptree`` script docs/mcp.md names, or the module when not installed."""
    script = Path(sys.executable).with_name("hoptree")
    return [str(script)] if script.exists() else [sys.executable, "-m", "agent.cli"]


def rewrite(messages: list[BaseMessage]) -> str:
    """A keyword rewrite, in case the sparse searcher's probe of the query as written is
    judged insufficient: the query's own words."""
    query = user_text(messages).split("Query:", 1)[-1].strip()
    return json.dumps({"query": query})


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    chat = two_hop_chat()
    chat.routes["rewrite"] = rewrite
    with routed_endpoint(chat) as url:
        yield url


def child_env(endpoint: str, data_dir: Path) -> dict[str, str]:
    clean = child_environment()
    return {
        **clean,
        "HOPTREE_DATA_DIR": str(data_dir),
        "HOPTREE_LLM__BASE_URL": endpoint,
        "HOPTREE_LLM__MODEL": "scripted",
        "HOPTREE_LLM__API_KEY": "unused",
        "HOPTREE_LLM__MAX_RETRIES": "0",
        "HOPTREE_LLM__TIMEOUT_S": "60",
        "HOPTREE_PLANNER__SEARCHERS": "sparse",
    }


def check_ask(result: Any) -> None:
    out = structured(result)
    assert out["short_answer"] == "the Seine", out
    assert {(c["id"], c["title"]) for c in out["citations"]} == {
        ("paris", "Paris"),
        ("seine", "Seine"),
    }
    assert out["sub_queries"][0]["query"] == "city where the Eiffel Tower stands"
    assert out["llm_calls"] >= 3 and out["degraded"] is False


async def test_stdio_the_readme_command_answers_searches_and_retrieves(
    index_dir: Path,  # noqa: F811
    endpoint: str,
    tmp_path: Path,
) -> None:
    command, *args = hoptree_command()
    params = StdioServerParameters(
        command=command,
        args=[*args, "mcp", "--index", str(index_dir)],
        env=child_env(endpoint, tmp_path / "data"),
        cwd=str(tmp_path),
    )
    progress: list[str | None] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(message)

    async with Client(params, read_timeout_seconds=STARTUP_S) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        asked = await client.call_tool("ask", {"question": QUESTION}, progress_callback=on_progress)
        hits = await client.call_tool("retrieve", {"query": "the Seine river", "k": 3})
        searched = await client.call_tool(
            "search", {"query": "Eiffel Tower", "searcher": "sparse", "k": 2}
        )
        listed = await client.call_tool("list_searchers", {})
        cited = await client.call_tool("read_passage", {"passage_id": "paris"})
        malformed = await client.call_tool("retrieve", {"query": "Seine", "k": "many"})
        still = await client.call_tool("retrieve", {"query": "Danube", "retriever": "sparse"})
    assert names == TOOLS | {"add_document", "remove_document"}  # over a real index
    check_ask(asked)
    # the draft reaches the MCP client as a progress message before the plan starts
    draft_at = next(i for i, m in enumerate(progress) if m and m.startswith("draft answer after"))
    assert progress.index("planning the search (searchers: sparse)") > draft_at
    assert any(m and m.startswith("sparse searched") for m in progress)
    assert structured(hits)["retriever"] == "hybrid" and len(structured(hits)["hits"]) == 3
    assert "seine" in [h["id"] for h in structured(hits)["hits"]]
    found = structured(searched)
    assert found["searcher"] == "sparse" and found["hits"][0]["id"] == "paris"
    assert found["attempts"][0]["operation"] == "original"
    by_name = {s["name"]: s for s in structured(listed)["searchers"]}
    assert {"sparse", "dense", "web", "tree"} <= set(by_name)
    assert by_name["sparse"]["in_planner"] and not by_name["dense"]["in_planner"]
    assert structured(cited)["text"].startswith("Paris is the capital")
    assert "k" in error_text(malformed)
    assert structured(still)["hits"][0]["id"] == "danube"


async def test_stdio_a_cancelled_ask_gives_its_run_slot_back(
    index_dir: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    """One run at a time (``MAX_CONCURRENCY=1``); the first ``ask`` hangs in its first LLM
    call until the client cancels it. The second ``ask`` can only run if the server ended the
    first one's tool call and gave its slot back."""
    entered, release = threading.Event(), threading.Event()
    chat = two_hop_chat()
    decompose = chat.routes["decompose"]

    def hanging_once(messages: list[BaseMessage]) -> str:
        if not entered.is_set():
            entered.set()
            release.wait(120)  # bounded: the stub's thread is freed at the end either way
        return decompose(messages) if callable(decompose) else decompose

    chat.routes["decompose"] = hanging_once
    with routed_endpoint(chat) as url:
        command, *args = hoptree_command()
        env = {**child_env(url, tmp_path / "data"), "HOPTREE_SERVER__MAX_CONCURRENCY": "1"}
        params = StdioServerParameters(
            command=command, args=[*args, "mcp", "--index", str(index_dir)], env=env
        )
        try:
            async with Client(params, read_timeout_seconds=STARTUP_S) as client:
                async with anyio.create_task_group() as group:

                    async def first() -> None:
                        await client.call_tool("ask", {"question": QUESTION})
                        raise AssertionError("the cancelled call returned")

                    group.start_soon(first)
                    with anyio.fail_after(STARTUP_S):
                        while not entered.is_set():  # the run is inside its first LLM call
                            await anyio.sleep(0.05)
                    group.cancel_scope.cancel()
                second = await client.call_tool("ask", {"question": QUESTION})
        finally:
            release.set()
    check_ask(second)


def test_http_the_readme_url_serves_the_tools_until_ctrl_c(
    index_dir: Path,  # noqa: F811
    endpoint: str,
    tmp_path: Path,
) -> None:
    proc = subprocess.Popen(
        [*hoptree_command(), "mcp", "--index", str(index_dir), "--http", "--port", "0"],
        cwd=tmp_path,
        env=child_env(endpoint, tmp_path / "data"),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # the child prints the URL once it is listening
        assert "hoptree MCP server at http://127.0.0.1:" in line, proc.stderr
        url = line.split(" at ", 1)[1].split()[0]
        assert url.endswith("/mcp")

        async def session() -> tuple[Any, Any]:
            async with Client(url, read_timeout_seconds=STARTUP_S) as client:
                asked = await client.call_tool("ask", {"question": QUESTION})
                hits = await client.call_tool(
                    "retrieve", {"query": "Tolkien", "retriever": "sparse"}
                )
                return asked, hits

        asked, hits = anyio.run(session)
        check_ask(asked)
        assert structured(hits)["hits"][0]["id"] == "tolkien"
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--http", "--host", "0.0.0.0"], "refusing to serve on '0.0.0.0' without an API key"),
        (["--port", "9000"], "--host and --port need --http"),
    ],
)
def test_refused_before_any_model_starts(
    index_dir: Path,  # noqa: F811
    tmp_path: Path,
    args: list[str],
    says: str,
) -> None:
    proc = subprocess.run(
        [*hoptree_command(), "mcp", "--index", str(index_dir), *args],
        cwd=tmp_path,
        env={**child_env("http://127.0.0.1:9/v1", tmp_path / "data")},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert says in " ".join(proc.stderr.split())


@pytest.mark.parametrize("make", ["missing", "empty"])
def test_no_index_is_one_clear_line_and_status_2(tmp_path: Path, make: str) -> None:
    target = tmp_path / "idx"
    if make == "empty":
        target.mkdir()  # a directory, but no index in it: found when the backend opens
    proc = subprocess.run(
        [*hoptree_command(), "mcp", "--index", str(target)],
        cwd=tmp_path,
        env=child_env("http://127.0.0.1:9/v1", tmp_path / "data"),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
    )
    said = " ".join(proc.stderr.split())
    assert proc.returncode == 2, proc.stderr
    assert "no index directory at" in said or "no index at" in said
    assert "Traceback" not in proc.stderr and proc.stdout == ""
