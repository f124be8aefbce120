"""A family relation with one reading is planned from its definition, with no decompose call
(``agent.planner.relations``); everything else is still the model's to plan."""

from __future__ import annotations

import pytest
from langchain_core.messages import BaseMessage

from agent.planner.relations import relation_plan
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


@pytest.mark.parametrize(
    ("question", "plan"),
    [
        ("Who is the maternal grandmother of Elin Sarrow?",
         ["mother of Elin Sarrow", "mother of #1"]),
        ("Who is the maternal grandfather of Elin Sarrow?",
         ["mother of Elin Sarrow", "father of #1"]),
        ("Who was Tomas Elvard's paternal grandmother?",
         ["father of Tomas Elvard", "mother of #1"]),
        ("Who is Ilse Varnow, Countess Of Kessel's father-in-law?",
         ["spouse of Ilse Varnow, Countess Of Kessel", "father of #1"]),
        ("Who is the mother in law of Dorian Maslow?", ["spouse of Dorian Maslow", "mother of #1"]),
        ("Who is Jonas Brede's child-in-law?", ["child of Jonas Brede", "spouse of #1"]),
        ("Who is the stepchild of Jonas Brede?", ["spouse of Jonas Brede", "child of #1"]),
        ("Who was the stepmother of Amber Kessel (1790–1840)?",
         ["father of Amber Kessel (1790–1840)", "spouse of #1"]),
        ("Who is Agnes' husband?", ["spouse of Agnes"]),
        ("who was the father of Catherine of Varn", ["father of Catherine of Varn"]),
        ("Who is the wife of Piet van der Aa?", ["spouse of Piet van der Aa"]),
    ],
)  # fmt: skip
def test_a_relation_with_one_reading_is_planned_by_its_definition(
    question: str, plan: list[str]
) -> None:
    assert relation_plan(question) == plan


@pytest.mark.parametrize(
    "question",
    [
        "Who is the grandfather of Elin Sarrow?",  # which side?
        "Who is the uncle of Elin Sarrow?",  # a parent's brother, or an aunt's husband?
        "Who is Elin Sarrow's brother-in-law?",
        "Who is the father of the director of film Amber Gate?",  # a chain through a film
        "Who is the mother of Tova's co-star in Harbour Lights?",  # a description, not a name
        "Who is Elin Sarrow's father's mother?",  # a relation of a relation
        "Where was the mother of Elin Sarrow born?",  # asks a place, not the person
        "Who is the maternal grandfather of ?",
        "Who is the father of elin sarrow?",  # not written as a name
    ],
)
def test_anything_else_is_left_to_the_model(question: str) -> None:
    assert relation_plan(question) is None


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


async def test_relation_plans_off_leaves_the_plan_to_the_model(family) -> None:
    chat = family_chat()
    planner = PlannerSettings(
        draft=False, supplement=True, findings_call="batched", relation_plans=False
    )
    result = await agent_with(chat, [KeywordSearcher(family)], planner=planner).ask(QUESTION)
    assert chat.count("decompose") == 1
    event = next(e for e in result.trace if e.kind == "decompose")
    assert event.data["planned_by"] == "model"
    assert [q.query for q in result.sub_queries][:1] == ["mother of Elin Sarrow"]
    assert "father of Maja Lind" not in [q.query for q in result.sub_queries]


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
