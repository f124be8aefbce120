"""The ``decompose`` node through the graph: what the planning call is shown, how its reply is
cleaned, and what goes out first (the question as written beside the plan)."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import BaseMessage

from agent.rules.question import Question
from searchers.sparse_tantivy import TantivySparseIndex
from tests.planner_scripts import (
    QUESTION,
    ChargingSearcher,
    KeywordSearcher,
    agent_with,
    finding,
    passages_index,
    reply,
    two_hop_chat,
    user_text,
)
from tests.routed_chat import RoutedChatModel


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> TantivySparseIndex:
    return passages_index(tmp_path_factory)


async def test_duplicate_sub_queries_are_dropped(index) -> None:
    chat = RoutedChatModel(
        routes={
            "decompose": reply(
                queries=["Who wrote The Hobbit?", "who wrote the hobbit", "The Hobbit: who wrote?"]
            ),
            "summarize": lambda m: finding(user_text(m)),
            "verify": reply(
                sufficient=False, queries=["Hobbit wrote who", "  WHO wrote THE Hobbit  "]
            ),
            "answer": reply(short_answer="Tolkien", answer="J. R. R. Tolkien wrote it [1]."),
        }
    )
    searcher = KeywordSearcher(index)
    result = await agent_with(chat, [searcher]).ask("Who wrote The Hobbit?")
    assert [q.query for q in result.sub_queries] == ["Who wrote The Hobbit?"]
    assert searcher.queries == ["Who wrote The Hobbit?"]
    assert result.stopped == "no_new_queries"
    assert result.verdicts[-1]["follow_ups"] == []


async def test_unparseable_planner_output_falls_back_and_is_recorded(index) -> None:
    chat = RoutedChatModel(
        routes={
            "decompose": "Sure! Here are some queries: 1. Eiffel",
            "summarize": "{not json",
            "answer": reply(short_answer="unknown", answer="I could not find it."),
            "verify": reply(sufficient=False, queries=[]),
        }
    )
    searcher = KeywordSearcher(index)
    result = await agent_with(chat, [searcher]).ask("Where is the Eiffel Tower?")
    assert searcher.queries == ["Where is the Eiffel Tower?"]  # the question itself
    assert any(e.startswith("decompose:") for e in result.errors)
    assert any(e.startswith("summarize:") for e in result.errors)
    assert not result.sub_queries[0].answered
    assert result.short_answer == "unknown"


def test_the_progress_line_counts_the_queries_that_wait() -> None:
    from agent.results import TraceEvent
    from agent.trace_lines import progress_line

    event = TraceEvent(
        "decompose",
        {
            "sub_queries": [{"id": "q1", "query": "city of the Eiffel Tower"}],
            "waiting": [{"id": "q2", "query": "river of #1", "needs": ["q1"]}],
        },
    )
    assert progress_line(event) == (
        "planned 2 atomic queries (1 wait for an earlier answer): "
        "city of the Eiffel Tower; river of #1"
    )
    event.data["shape"] = "bridge_comparison"
    assert progress_line(event).startswith("planned 2 atomic queries (1 wait for an earlier "
                                           "answer) [bridge comparison]: city")  # fmt: skip
    answered = TraceEvent("answer", {"check": {"sentences": 1, "kept": 1, "chain_end": "Seine"}})
    assert progress_line(answered).endswith("; the chain ends at 'Seine'")


async def test_the_decompose_prompt_shows_plans_of_the_questions_shape(index) -> None:
    chat = two_hop_chat()
    planned = chat.routes["decompose"]
    systems: list[str] = []

    def decompose(messages: list[BaseMessage]) -> str:
        systems.append(str(messages[0].content))
        return str(planned)

    chat.routes["decompose"] = decompose
    result = await agent_with(chat, [KeywordSearcher(index)]).ask(QUESTION)
    decompose_event = next(e for e in result.trace if e.kind == "decompose")
    assert decompose_event.data["shape"] == "composition"
    [system] = systems
    assert "a chain:" in system and "place of birth of #1" in system
    assert "a comparison" not in system  # only the question's own shape is shown


async def test_the_question_is_searched_as_written_with_no_llm_call(index) -> None:
    """Beside the plan, the question itself goes to every searcher with an allowance of no
    LLM call: its as-written retrieval is one-call RAG's, and costs nothing of the budget."""
    chat = two_hop_chat()
    searcher = ChargingSearcher(index)
    result = await agent_with(chat, [searcher]).ask(QUESTION)
    assert searcher.allowed == {
        "city where the Eiffel Tower stands": True,
        QUESTION: False,
        "river that flows through Paris": True,
    }
    assert QUESTION not in [q.query for q in result.sub_queries]  # no finding is asked of it


async def test_the_hop_after_a_bare_name_is_searched_by_the_name(index) -> None:
    chat = two_hop_chat()
    chat.routes["decompose"] = reply(
        queries=["Eiffel Tower", "city where #1 stands", "river that flows through #2"]
    )
    searcher = KeywordSearcher(index)
    result = await agent_with(chat, [searcher]).ask(QUESTION)
    assert [q.query for q in result.sub_queries] == [
        "city where Eiffel Tower stands",
        "river that flows through Paris",
    ]
    assert "Eiffel Tower" not in searcher.queries
    assert result.stopped == "sufficient" and "Seine" in result.short_answer


async def test_the_node_sends_the_first_round_and_holds_the_hops_that_wait() -> None:
    """Called directly: the plan's update (``Plan.first_round``) searches the ready queries in
    round 1 and keeps the hop that needs an answer in the plan with round 0."""
    from agent.planner.decompose import decompose
    from tests.planner_scripts import node_runtime

    chat = RoutedChatModel(
        routes={"decompose": reply(queries=["director of Jaws", "birthplace of #1"])}
    )
    asked = Question.read("Where was the director of Jaws born?")
    state: Any = {"question": asked.text, "parsed": asked.to_json(), "history": []}
    update = await decompose(state, node_runtime(chat))
    assert update["round"] == 1 and update["pending"] == ["q1"] and update["waiting"] == ["q2"]
    q1, q2 = update["sub_queries"]["q1"], update["sub_queries"]["q2"]
    assert (q1["query"], q1["round"]) == ("director of Jaws", 1)
    assert (q2["query"], q2["round"], q2["needs"]) == ("birthplace of #1", 0, ["q1"])
    assert update["errors"] == [] and isinstance(update["shape"], str)
