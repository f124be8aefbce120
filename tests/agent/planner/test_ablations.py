"""The findings step's ways to read and LevelRAG's ablations (no-decompose, no-summarize,
no-supplement) through the graph: each switch changes the calls made, not the evidence."""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import BaseMessage

from agent.settings import PlannerSettings
from searchers.sparse_tantivy import TantivySparseIndex
from tests.planner_scripts import (
    DATA,
    QUESTION,
    KeywordSearcher,
    ablated,
    agent_with,
    finding,
    passages_index,
    reply,
    two_hop_chat,
    user_text,
)


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> TantivySparseIndex:
    return passages_index(tmp_path_factory)


async def test_each_query_can_be_read_as_one_call_rag_reads_a_question(index) -> None:
    """``findings_call="reader"``: no findings call; each atomic query is asked alone with the
    reader's prompt over its own shown passages (one call per query), its span goes through
    the same support check, and the chain resolves as with the batched call. A span its
    passages do not hold is not a finding."""

    def reader(messages: list[BaseMessage]) -> str:
        question = user_text(messages).split("\n", 1)[0]
        if "Eiffel Tower stands" in question:
            return reply(answer="Paris")
        return reply(answer="Seine" if "through Paris" in question else "Loire")

    chat = two_hop_chat()
    chat.routes["rag_answer"] = reader
    planner = PlannerSettings(draft=False, supplement=True, findings_call="reader")
    result = await agent_with(chat, [KeywordSearcher(index)], planner).ask(QUESTION)
    assert [q.summary for q in result.sub_queries] == ["Paris", "Seine"]
    assert all(q.answered for q in result.sub_queries) and result.stopped == "sufficient"
    asked = [text for route, text in chat.seen if route == "rag_answer"]
    assert chat.count("summarize") == 0 and len(asked) == 2
    assert asked[0].startswith("Question: city where the Eiffel Tower stands\n")
    assert "] Paris:" in asked[0].split("Passages:")[1]  # its own windowed passages
    assert result.llm_calls == len(chat.seen) == 4  # decompose, two readers, answer
    assert result.usage_by_step["summarize"]["calls"] == 2

    # a reply its passages do not hold stays unsupported: the hop is open
    chat = two_hop_chat()
    chat.routes["rag_answer"] = lambda m: reply(answer="Loire")
    result = await agent_with(chat, [KeywordSearcher(index)], planner).ask(QUESTION)
    assert not result.sub_queries[0].answered and result.sub_queries[0].proposed == "Loire"


async def test_no_decompose_searches_the_question_itself(index) -> None:
    chat = two_hop_chat()
    result = await ablated(chat, index, decompose=False).ask("Where does the Seine flow?")
    assert chat.count("decompose") == 0
    assert result.sub_queries[0].query == "Where does the Seine flow?"


async def test_no_supplement_runs_the_plan_and_asks_no_follow_up(index) -> None:
    chat = two_hop_chat()
    chat.routes["summarize"] = lambda m: finding(user_text(m), Eiffel=("Paris", "Paris"))
    result = await ablated(chat, index, supplement=False).ask(QUESTION)
    # the planned hop still runs (it is part of the plan); the open query gets no follow-up
    assert [q.round for q in result.sub_queries] == [1, 2]
    assert chat.count("verify") == 0
    assert result.stopped == "no_supplement" and len(result.sub_queries) == 2


async def test_no_summarize_hands_the_fused_passages_to_the_answer(index) -> None:
    chat = two_hop_chat()
    result = await ablated(chat, index, summarize=False, supplement=False).ask(
        "Which river flows through the city where the Eiffel Tower stands?"
    )
    assert chat.count("summarize") == 0
    assert all(q.summary_skipped and q.summary_sources for q in result.sub_queries)
    # with no answers to fill in, a dependent query goes out at once with #1 spelled out
    assert [q.round for q in result.sub_queries] == [1, 1]
    assert result.sub_queries[1].query == (
        "river that flows through (city where the Eiffel Tower stands)"
    )
    (answer_prompt,) = [text for route, text in chat.seen if route == "answer"]
    titles = {
        json.loads(line)["id"]: json.loads(line)["title"]
        for line in DATA.read_text().split("\n")
        if line.strip()
    }
    for sub in result.sub_queries:  # each query's best passage is shown to the answer step
        assert f"{titles[sub.summary_sources[0]]}:" in answer_prompt
    assert "Notes:\n(none)" in answer_prompt


async def test_no_summarize_lets_verify_read_the_fused_passages(index) -> None:
    """The ablation removes the condensing, not the evidence: verify must not judge blind."""
    chat = two_hop_chat()
    result = await ablated(chat, index, summarize=False).ask(
        "Which river flows through the city where the Eiffel Tower stands?"
    )
    (verify_prompt,) = [text for route, text in chat.seen if route == "verify"]
    findings = verify_prompt.split("Findings:")[1]
    for sub in result.sub_queries:
        assert f"- {sub.query} -> passages:" in findings
    # the Paris passage shown under the first query, trimmed to the planner's passage size
    shown = [line for line in findings.splitlines() if line.startswith("    ")]
    assert shown and all(
        len(line)
        < 4
        + 200
        + PlannerSettings(draft=False, supplement=True, findings_call="batched").passage_chars
        for line in shown
    )
    assert any("Eiffel" in line for line in shown)
