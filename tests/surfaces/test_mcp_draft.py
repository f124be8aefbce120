"""Draft first over MCP, with the official MCP client in process: the draft reaches the client
as a progress notification naming its short answer and its cited sources, before the plan's
steps, and the ``ask`` tool's structured result carries ``draft``, ``final_choice`` and
``first_answer_s``, valid against the tool's output schema. The real planner over a real index;
the chat model is the routed script (tests/draft_scripts.py). Each test fails with the draft
switched off."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema  # the MCP SDK's own dependency: what its client validates tool results with
from mcp import Client

from agent.serve.mcp_server import build_mcp_server
from agent.settings import PlannerSettings, Settings
from tests.draft_scripts import QUESTION, draft_chat
from tests.surfaces.test_mcp_server import backend_over, index_dir, structured  # noqa: F401 (a fixture)


async def ask_with_progress(server: Any) -> tuple[Any, list[str], dict[str, Any]]:
    progress: list[str] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(message or "")

    async with Client(server) as client:
        schema = {t.name: t for t in (await client.list_tools()).tools}["ask"].output_schema
        result = await client.call_tool(
            "ask", {"question": QUESTION}, progress_callback=on_progress
        )
    assert schema is not None
    return result, progress, schema


async def ask_drafted(
    index: Path, embeddings: Any, settings: Settings, draft: str, planner: PlannerSettings
) -> tuple[dict[str, Any], list[str], dict[str, Any]]:
    """The question asked over MCP with the draft's reader answering ``draft``: the tool's
    structured result, validated against its output schema (the draft's fields are in it),
    the progress messages and the schema."""
    chat = draft_chat(draft)
    backend = backend_over(index, embeddings, settings, chat=chat, planner=planner)
    result, progress, schema = await ask_with_progress(build_mcp_server(backend))
    out = structured(result)
    jsonschema.validate(out, schema)
    return out, progress, schema


async def test_the_draft_is_a_progress_message_and_in_the_structured_result(
    index_dir: Path,  # noqa: F811
    embeddings,
    settings: Settings,
) -> None:
    out, progress, schema = await ask_drafted(
        index_dir, embeddings, settings, "Paris", PlannerSettings()
    )
    assert out["short_answer"] == "the Seine"
    draft = out["draft"]
    assert draft["short_answer"] == "Paris" and draft["answer"].endswith("in Paris [1].")
    assert [(c["n"], c["id"], c["title"]) for c in draft["citations"]] == [(1, "paris", "Paris")]
    assert draft["decision"] == {"escalate": True, "reason": "shape: chain", "policy": "fitted"}
    assert out["final_choice"] == {"source": "plan", "reason": "supported chain over one read"}
    assert out["first_answer_s"] is not None and out["first_answer_s"] <= out["seconds"]
    # the draft's progress message: its answer and its sources, before the plan's first step
    line = next(m for m in progress if m.startswith("draft answer after"))
    assert "'Paris', cites [1] Paris; a plan will check it (shape: chain)" in line
    assert progress.index(line) < progress.index("planning the search (searchers: keywords)")
    assert {"draft", "final_choice", "first_answer_s"} <= set(schema["properties"])


async def test_a_draft_that_stands_is_the_tools_answer(
    index_dir: Path,  # noqa: F811
    embeddings,
    settings: Settings,
) -> None:
    out, progress, _ = await ask_drafted(
        index_dir, embeddings, settings, "Seine", PlannerSettings(router="never")
    )
    assert out["short_answer"] == "Seine" and out["sub_queries"] == []
    assert out["final_choice"] == {"source": "draft", "reason": "policy: never plan"}
    assert out["draft"]["answer"] == out["answer"]
    assert [c["id"] for c in out["draft"]["citations"]] == [c["id"] for c in out["citations"]]
    assert any("'Seine', cites [" in m and "it stands (policy: never plan)" in m for m in progress)
    assert not any(m.startswith("planning the search") for m in progress)
