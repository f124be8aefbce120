"""The planner's budgets and failures through the graph: the LLM-call cap over the searchers'
calls, the round limit, a searcher that raises or hangs, an old plugin's reported calls, and
the lighter search loops the planner runs."""

from __future__ import annotations

import pytest
from langchain_core.messages import BaseMessage

from searchers.sparse_tantivy import TantivySparseIndex
from tests.planner_scripts import (
    QUESTION,
    CallingSearcher,
    ExplodingSearcher,
    KeywordSearcher,
    ReportingSearcher,
    SlowSearcher,
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


async def test_the_budget_stops_a_model_that_never_says_sufficient(index) -> None:
    counter = iter(range(1000))

    def endless(messages: list[BaseMessage]) -> str:
        return reply(sufficient=False, queries=[f"another angle number {next(counter)} on Paris"])

    chat = RoutedChatModel(
        routes={
            "decompose": reply(queries=["Paris river"]),
            "summarize": lambda m: finding(user_text(m)),  # never finds anything
            "verify": endless,
            "rag_answer": reply(answer="Seine"),
        }
    )
    result = await agent_with(
        chat, [KeywordSearcher(index)], max_rounds=20, max_llm_calls=9, max_sub_queries=64
    ).ask("Which river flows through Paris?")
    assert result.stopped == "budget_llm_calls"
    assert result.llm_calls == len(chat.seen) <= 9  # a hard cap, the answer's call included
    assert result.degraded and "the LLM call budget ran out" in result.answer
    assert chat.count("rag_answer") == 1  # nothing found: one-call RAG's reader answers
    assert result.short_answer == "Seine"


async def test_max_llm_calls_is_a_hard_cap_over_the_searchers_calls(index) -> None:
    chat = RoutedChatModel(
        routes={
            "decompose": reply(queries=["Eiffel Tower city", "Seine river", "Hobbit author"]),
            "rewrite": reply(query="Paris"),
            "summarize": lambda m: finding(user_text(m)),
            "verify": reply(sufficient=False, queries=["more"]),
            "rag_answer": reply(answer="Paris"),
        }
    )
    searcher = CallingSearcher(index, chat, calls=5)
    result = await agent_with(chat, [searcher], max_llm_calls=7).ask("Where is the tower?")
    # 1 decompose + 5 searcher calls fill the 6 the rounds may spend; the answer has its own
    assert result.llm_calls == len(chat.seen) == 7
    assert chat.count("rag_answer") == 1 and chat.count("summarize") == 0
    assert chat.count("rewrite") == 5


async def test_max_rounds_bounds_a_model_that_never_says_sufficient(index) -> None:
    counter = iter(range(1000))
    chat = RoutedChatModel(
        routes={
            "decompose": reply(queries=["Paris river"]),
            "summarize": lambda m: finding(user_text(m)),
            "verify": lambda m: reply(sufficient=False, queries=[f"angle {next(counter)} Seine"]),
            "answer": reply(short_answer="Seine", answer="The Seine [1]."),
        }
    )
    result = await agent_with(chat, [KeywordSearcher(index)], max_rounds=3).ask("Paris river?")
    assert result.stopped == "max_rounds"
    assert len(result.verdicts) == 3
    assert chat.count("verify") == 2


async def test_a_searcher_that_raises_degrades_the_answer(index) -> None:
    chat = two_hop_chat()
    result = await agent_with(chat, [KeywordSearcher(index), ExplodingSearcher()]).ask(
        "Which river flows through the city where the Eiffel Tower stands?"
    )
    assert result.short_answer == "the Seine"
    failed = [s for q in result.sub_queries for s in q.searches if s["searcher"] == "exploding"]
    assert failed and all(s["stopped"] == "error" for s in failed)
    assert "index file vanished" in failed[0]["error"]
    assert any("exploding" in e and "vanished" in e for e in result.errors)
    # the answer says so in one line, and the result says why
    assert result.degraded and result.degraded_reasons == result.errors
    assert result.answer.splitlines()[-1].startswith("(Degraded answer: exploding on ")


async def test_a_hanging_searcher_is_cut_at_the_deadline(index) -> None:
    chat = two_hop_chat()
    slow = SlowSearcher()
    agent = agent_with(chat, [KeywordSearcher(index), slow], deadline_s=4.0, max_rounds=1)
    result = await agent.ask("Which river flows through the city where the Eiffel Tower stands?")
    assert slow.cancelled >= 1  # cut at the deadline, not waited out
    assert any("slow" in e and "deadline" in e for e in result.errors)
    # one round: the second hop never went out, and one-call RAG's reader answered
    assert result.short_answer == "Seine" and chat.count("rag_answer") == 1


async def test_an_old_plugins_calls_are_counted_after_its_search(index) -> None:
    chat = two_hop_chat()
    searcher = ReportingSearcher(index, calls=2)
    result = await agent_with(chat, [searcher]).ask(QUESTION)
    assert searcher.queries  # called the old way, without a scope
    assert result.llm_calls == len(chat.seen) + 2 * len(searcher.queries)
    assert result.short_answer == "the Seine"


async def test_the_answer_keeps_its_call_when_the_searches_spent_the_rounds(index) -> None:
    """An old plugin's reported calls spend the rounds' scope: no findings call is made, and
    the answer still has the call kept for it."""
    chat = two_hop_chat()
    searcher = ReportingSearcher(index, calls=20)
    result = await agent_with(chat, [searcher], max_llm_calls=6).ask(QUESTION)
    assert chat.count("decompose") == 1 and chat.count("summarize") == 0
    assert chat.count("rag_answer") == 1  # nothing found: one-call RAG's reader answers
    assert result.llm_calls == len(chat.seen) + 20 * len(searcher.queries)
    assert result.stopped == "budget_llm_calls"
