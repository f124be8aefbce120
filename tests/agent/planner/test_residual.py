"""The residual last hop (``agent.planner.queries.residual_hop``,
``PlannerSettings.residual_hop``): when the plan resolves a description the question writes and
no later query builds on it, the question itself, that description replaced by ``#n``, is
asked last. The rule alone first, then through the planner graph with a scripted model, on and
off."""

from __future__ import annotations

import pytest
from langchain_core.messages import BaseMessage

from agent.planner.queries import clean_queries, residual_hop
from agent.settings import PlannerSettings
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

QUESTION = "Where did the author of The Lantern Atlas think Venus was in relation to the sun?"


def planned(queries: list[str], question: str = QUESTION, limit: int = 6) -> list[str]:
    return [q for q, _ in residual_hop(clean_queries(queries, set(), limit), question, limit)]


def test_a_bridge_nothing_builds_on_gets_the_question_as_its_last_hop() -> None:
    assert planned(["author of The Lantern Atlas", "Venus"]) == [
        "author of The Lantern Atlas",
        "Venus",
        "Where did the #1 think Venus was in relation to the sun?",
    ]
    # quotes and case aside: the question's closing quote goes with the span it closes
    question = 'Which role did the host of "Harbour Lights" play in Red Hood?'
    assert planned(["host of 'Harbour Lights'", "Red Hood"], question)[-1] == (
        "Which role did the #1 play in Red Hood?"
    )


@pytest.mark.parametrize(
    ("queries", "question"),
    [
        # a chain already built on its bridge, by #n or by repeating its words
        (["author of The Lantern Atlas", "opinion of #1 on Venus"], QUESTION),
        (
            ["author of The Lantern Atlas", "where the author of The Lantern Atlas put Venus"],
            QUESTION,
        ),
        # a bare name, a title, a description of nothing named, two words: no bridge
        (["The Lantern Atlas"], "Who wrote The Lantern Atlas and when?"),
        (["young and restless", "performer of Sings Arlen"],
         "who did the performer of Sings Arlen play on young and restless?"),
        (["professional sports team"],
         "Which professional sports team plays where Jim Arlen had the idea for arena football?"),
        (["Arlen's author"], "Where did Arlen's author live?"),
        # a clause of the question, not a noun phrase ("the ..."), and nothing left to ask
        (["part of the Arlen rivalry"], "Who was part of the Arlen rivalry, and when?"),
        (["movie that Ada Arlen made after Fargo"], "Name a movie that Ada Arlen made after Fargo"),
        (["capital of Arlen"], "capital of Arlen?"),
    ],
)  # fmt: skip
def test_no_residual_hop_where_nothing_is_left_unlinked(queries: list[str], question: str) -> None:
    kept = planned(queries, question)
    if queries[0] == "young and restless":  # the description is the one used, not the title
        assert kept[-1] == "who did the #2 play on young and restless?"
    else:
        assert kept == [q for q, _ in clean_queries(queries, set(), 6)]


def test_a_full_plan_or_a_repeat_adds_nothing() -> None:
    full = ["author of The Lantern Atlas", "Venus", "sun", "orbit of Venus", "a b c", "d e f"]
    assert planned(full) == full
    twice = [
        "author of The Lantern Atlas",
        "Where did the #1 think Venus was in relation to the sun?",
    ]
    assert planned(twice) == twice  # built on already


ATLAS = [
    ("atlas", "The Lantern Atlas", "The Lantern Atlas is a star book written by Ilse Varnow."),
    ("ilse", "Ilse Varnow", "Ilse Varnow held that Venus lay below the sun, nearer the earth."),
    ("venus", "Venus", "Venus is the second planet from the sun."),
]


@pytest.fixture(scope="module")
def atlas(tmp_path_factory: pytest.TempPathFactory) -> TantivySparseIndex:
    return tiny_index(tmp_path_factory, "atlas", ATLAS)


def atlas_chat() -> RoutedChatModel:
    def summarize(messages: list[BaseMessage]) -> str:
        return finding(
            user_text(messages),
            **{
                "author of The Lantern": ("Ilse Varnow", "The Lantern Atlas"),
                "Where did the Ilse Varnow": ("below the sun", "Ilse Varnow"),
            },
        )

    def final(messages: list[BaseMessage]) -> str:
        n = number_any(user_text(messages), "Ilse Varnow")
        return reply(short_answer="below the sun", answer=f"Below the sun [{n}].")

    return RoutedChatModel(
        routes={
            "decompose": reply(queries=["author of The Lantern Atlas", "Venus"]),
            "summarize": summarize,
            "verify": reply(sufficient=False, queries=[]),
            "answer": final,
        }
    )


async def test_the_planner_asks_the_residual_hop_with_the_bridge_filled_in(
    atlas: TantivySparseIndex,
) -> None:
    planner = PlannerSettings(draft=False, supplement=False, findings_call="batched")
    searcher = KeywordSearcher(atlas)
    result = await agent_with(atlas_chat(), [searcher], planner=planner).ask(QUESTION)
    asked = [q.query for q in result.sub_queries]
    residual = "Where did the Ilse Varnow think Venus was in relation to the sun?"
    assert asked == ["author of The Lantern Atlas", "Venus", residual]
    assert residual in searcher.queries
    hop = next(q for q in result.sub_queries if q.query == residual)
    assert hop.needs == ["q1"] and hop.summary == "below the sun"
