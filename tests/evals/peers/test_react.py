"""``peer-react``: LangChain's ReAct agent run through ``run_eval`` against a scripted endpoint
that answers with OpenAI tool calls. Its search tool hands the model hoptree's passages
(recorded, scored); it stops when the model answers without a tool call (also at once, with no
search), and at the recursion limit when the model never stops searching; every call reaches the
run's URL at temperature 0 with the output cap; nothing is fetched from outside."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent.settings import Settings
from evals.peers import PEERS
from evals.peers.react import MAX_MODEL_CALLS, SYSTEM_PROMPT, presented
from tests.peer_endpoint import run_peer, tool_call

pytest.importorskip("langchain.agents", reason="langchain is not installed ('hoptree[peers]')")

# per topic: the searches the scripted model makes, then its final text
SCRIPT = {
    "Eiffel": (["Eiffel Tower city", "river through Paris"], "Answer: Seine"),
    "Bilbo": (["The Hobbit first published"], "  1936\n"),
    "Danube": ([], "yes"),  # answers at once, no tool call
}


def _topic(body: dict[str, Any]) -> str:
    question = next(m["content"] for m in body["messages"] if m["role"] == "user")
    return next(t for t in SCRIPT if t in question)


def _reply(body: dict[str, Any]) -> str | dict[str, Any]:
    searches, final = SCRIPT[_topic(body)]
    done = sum(m["role"] == "tool" for m in body["messages"])
    if done < len(searches):
        return tool_call("search", {"query": searches[done]}, call_id=f"call-{done}")
    return final


async def test_react_agent_searches_hoptrees_passages_until_it_answers(
    settings: Settings, embeddings: Any, tmp_path: Path
) -> None:
    run = await run_peer("peer-react", _reply, settings, embeddings, tmp_path / "run", limit=3)
    # a call per search and one to answer: 3, 2 and 1
    run.check_plumbing(calls=6, max_tokens=settings.llm.max_tokens)
    by_topic = run.by_topic(SCRIPT)
    for topic, row in by_topic.items():
        searches, final = SCRIPT[topic]
        assert row["error"] is None and row["warnings"] == []
        assert row["peer"]["queries"] == searches  # the tool's calls reached hoptree's retriever
        assert row["peer"]["searches"] == len(searches)
        assert row["llm_calls"] == len(searches) + 1
        assert row["peer"]["raw"] == final
    assert [by_topic[t]["prediction"] for t in SCRIPT] == ["Seine", "1936", "yes"]
    assert [by_topic[t]["em"] for t in SCRIPT] == [1, 0, 1]
    eiffel = by_topic["Eiffel"]
    assert {"Eiffel Tower", "Seine"} <= set(eiffel["retrieved_titles"])
    assert by_topic["Danube"]["retrieved_titles"] == []  # answered without searching
    bodies = run.endpoint.bodies()
    for body in bodies:
        assert body["max_completion_tokens"] == settings.llm.max_tokens  # LangChain's name
        assert [t["function"]["name"] for t in body["tools"]] == ["search"]
        assert body["messages"][0] == {"role": "system", "content": SYSTEM_PROMPT}
    # what the tool returned to the model: hoptree's passages, title then text
    eiffel_last = [b for b in bodies if _topic(b) == "Eiffel"][-1]
    shown = "\n".join(m["content"] for m in eiffel_last["messages"] if m["role"] == "tool")
    for title in eiffel["retrieved_titles"]:
        assert f"{title}\n" in shown


async def test_react_agent_that_never_stops_searching_ends_at_the_limit_without_answer(
    settings: Settings, embeddings: Any, tmp_path: Path
) -> None:
    def reply(body: dict[str, Any]) -> dict[str, Any]:
        done = sum(m["role"] == "tool" for m in body["messages"])
        return tool_call("search", {"query": f"Seine query {done}"}, call_id=f"call-{done}")

    run = await run_peer("peer-react", reply, settings, embeddings, tmp_path / "run", limit=1)
    run.check_plumbing(calls=MAX_MODEL_CALLS, max_tokens=settings.llm.max_tokens)
    (row,) = run.rows
    assert row["llm_calls"] == MAX_MODEL_CALLS
    assert row["prediction"] == "" and row["f1"] == 0
    assert len(row["peer"]["queries"]) == MAX_MODEL_CALLS - 1
    assert any("recursion limit" in w for w in row["warnings"])


def test_the_answer_is_taken_as_the_agent_presents_it() -> None:
    assert presented("  Answer:  the\n Seine ") == "the Seine"
    assert presented("Final answer: 1937") == "1937"
    assert presented("The answer is the Seine.") == "The answer is the Seine."
    assert PEERS["peer-react"].install.modules == ("langchain", "langgraph")
