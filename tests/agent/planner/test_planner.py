"""The planner agent as a whole (``HoptreeAgent``): questions refused before any call, a
stream closed early, threads that remember, and a graph node per searcher. The planner's
components are tested in their own modules beside this one (`tests/agent/planner/`)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agent.hoptree_agent import HoptreeAgent
from agent.rules.question import QuestionError
from agent.settings import PlannerSettings
from searchers.sparse_tantivy import TantivySparseIndex
from tests.planner_scripts import (
    ExplodingSearcher,
    KeywordSearcher,
    SlowSearcher,
    agent_with,
    passages_index,
    two_hop_chat,
)


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> TantivySparseIndex:
    return passages_index(tmp_path_factory)


async def test_bad_questions_are_refused_before_any_call(index) -> None:
    chat = two_hop_chat()
    agent = agent_with(chat, [KeywordSearcher(index)])
    for bad in ("", "   \n\t ", "x" * 2001):
        with pytest.raises(QuestionError):
            await agent.ask(bad)
    assert chat.seen == []


async def test_closing_the_stream_cancels_the_run(index) -> None:
    slow = SlowSearcher()
    agent = agent_with(two_hop_chat(), [slow])
    stream = agent.stream("Which river flows through Paris?")
    kinds = []
    async for event in stream:
        kinds.append(event.kind)
        if event.kind == "decompose":
            break
    await asyncio.sleep(0.3)  # the run goes on in its own task: the search starts and hangs
    await stream.aclose()
    for _ in range(50):
        if slow.cancelled:
            break
        await asyncio.sleep(0.05)
    assert slow.cancelled >= 1
    assert kinds == ["started", "decompose"]


async def test_a_thread_remembers_the_previous_question(index, tmp_path: Path) -> None:
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    chat = two_hop_chat()
    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "threads.sqlite")) as saver:
        agent = HoptreeAgent(
            chat,
            {"keywords": KeywordSearcher(index)},
            planner=PlannerSettings(
                draft=False, supplement=True
            ),  # the planner's prompts are what is tested
            checkpointer=saver,
            llm_timeout_s=5,
        )
        first = await agent.ask("Which river flows through Paris?", thread_id="t1")
        second = await agent.ask("How long is it?", thread_id="t1")
        other = await agent.ask("How long is it?", thread_id="t2")
    decompose_prompts = [text for route, text in chat.seen if route == "decompose"]
    assert "Which river flows through Paris?" not in decompose_prompts[0].split("Question:")[0]
    assert "Q: Which river flows through Paris? A: the Seine" in decompose_prompts[1]
    assert "Earlier in this conversation" not in decompose_prompts[2]
    # per-question state starts clean on the same thread
    assert [q.id for q in second.sub_queries] == [q.id for q in first.sub_queries]
    assert second.thread_id == "t1" and other.thread_id == "t2"


def test_each_enabled_searcher_is_a_node_of_the_graph(index) -> None:
    agent = agent_with(two_hop_chat(), [KeywordSearcher(index), ExplodingSearcher()])
    nodes = set(agent._graph.get_graph().nodes)
    assert {"search_keywords", "search_exploding", "findings", "verify"} <= nodes
