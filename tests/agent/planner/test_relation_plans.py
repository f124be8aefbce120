"""The decompose step plans a family relation with one reading from its definition, with no
decompose call (``Question.relation_plan``, ``agent.rules.relations``; the rule itself is
``tests/agent/rules/test_relations.py``); everything else is still the model's to plan."""

from __future__ import annotations

import pytest
from langchain_core.messages import BaseMessage

from agent.settings import PlannerSettings
from agent.trace_lines import progress_line
from searchers.sparse_tantivy import TantivySparseIndex
from tests.planner_scripts import (
    KeywordSearcher,
    agent_with,
    finding,
    number_any,
    reply,
    tiny_index,
    user_text,
)
from tests.routed_chat import RoutedChatModel

FAMILY = [
    ("elin", "Elin Sarrow", "Elin Sarrow is a Swedish painter. Her mother is Maja Lind."),
    ("maja", "Maja Lind", "Maja Lind was a weaver from Ystad, the daughter of Henrik Lind."),
    ("henrik", "Henrik Lind", "Henrik Lind was a shipwright in Ystad."),
    ("tova", "Tova Sarrow", "Tova Sarrow is a Swedish painter and the cousin of Elin Sarrow."),
]
QUESTION = "Who is the maternal grandfather of Elin Sarrow?"


@pytest.fixture(scope="module")
def family(tmp_path_factory: pytest.TempPathFactory) -> TantivySparseIndex:
    return tiny_index(tmp_path_factory, "family", FAMILY)


def family_chat() -> RoutedChatModel:
    def summarize(messages: list[BaseMessage]) -> str:
        return finding(
            user_text(messages),
            **{
                "mother of Elin": ("Maja Lind", "Elin Sarrow"),
                "father of Maja": ("Henrik Lind", "Maja Lind"),
            },
        )

    def final(messages: list[BaseMessage]) -> str:
        n = number_any(user_text(messages), "Maja Lind")
        return reply(short_answer="Maja Lind", answer=f"Henrik Lind is Maja Lind's father [{n}].")

    return RoutedChatModel(
        routes={
            "decompose": reply(queries=["mother of Elin Sarrow"]),  # the model's short plan
            "summarize": summarize,
            "verify": reply(sufficient=False, queries=[]),
            "answer": final,
        }
    )


async def test_the_relation_plan_runs_as_a_chain_without_a_decompose_call(family) -> None:
    chat = family_chat()
    searcher = KeywordSearcher(family)
    result = await agent_with(chat, [searcher]).ask(QUESTION)
    assert chat.count("decompose") == 0
    event = next(e for e in result.trace if e.kind == "decompose")
    assert event.data["planned_by"] == "relation" and event.data["shape"] == "inference"
    assert "by the relation's definition" in (progress_line(event) or "")
    # the second hop went out with the first one's finding filled in
    assert [q.query for q in result.sub_queries] == ["mother of Elin Sarrow", "father of Maja Lind"]
    assert [q.summary for q in result.sub_queries] == ["Maja Lind", "Henrik Lind"]
    assert "father of Maja Lind" in searcher.queries
    # the chain resolved: its short answer is the last hop's finding, not the reader's bridge
    assert result.stopped == "sufficient"
    assert result.short_answer == "Henrik Lind"


async def test_no_decompose_means_no_relation_plan_either(family) -> None:
    """LevelRAG's no-decompose ablation: the question is the only atomic query, whatever its
    wording."""
    chat = family_chat()
    planner = PlannerSettings(
        draft=False, supplement=True, findings_call="batched", decompose=False
    )
    result = await agent_with(chat, [KeywordSearcher(family)], planner=planner).ask(QUESTION)
    assert chat.count("decompose") == 0
    assert [q.query for q in result.sub_queries] == [QUESTION]
