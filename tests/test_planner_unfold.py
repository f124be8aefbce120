"""Folded chains unfolded (``agent.planner.queries.unfold_plan``, ``PlannerSettings.unfold``):
a planned query that nests descriptions ("city that shares a border with the capital of the
state where X was born") is planned as their chain, innermost first. The rule alone first, then
through the planner graph with a scripted model, on and off."""

from __future__ import annotations

import pytest
from langchain_core.messages import BaseMessage

from agent.planner.queries import clean_queries, unfold_plan, unfold_query, unfolded
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

QUESTION = (
    "In what county is the city that shares a border with the capital of the state where "
    "Orrin Vale was born?"
)
FOLDED = "city that shares a border with the capital of the state where Orrin Vale was born"


def test_a_folded_chain_is_written_out_innermost_first() -> None:
    assert unfold_query(FOLDED, QUESTION, 6) == [
        "state where Orrin Vale was born",
        "capital of #0",
        "city that shares a border with #0",
    ]
    question = (
        "Which county borders the county where the most populous city in the state where WQXZ "
        "can be found is located?"
    )
    assert unfold_query(
        "county where the most populous city in the state where WQXZ can be found", question, 6
    ) == ["state where WQXZ can be found", "most populous city in #0", "county where #0"]
    # a participle opens a description too ("the county sharing a border with #2")
    assert unfold_query("seat of the county sharing a border with the #2", "x", 6) == [
        "county sharing a border with the #2",
        "seat of #0",
    ]


@pytest.mark.parametrize(
    "query",
    [
        "capitol of the Battle of Sullivan's Island",  # a title, not a description
        "actor who voices Batman in the Lego Batman movie",
        "state where the band that Jacoby Shaddix is a member of formed",  # the outer verb
        "city where Martin from the region where Erla is located died",
        "other state that sent Tennessee the most tourists in 2013",  # names only a year
        "network which, along with ABC and the network which aired Kestrel Row, is the #3",
        "the state where Orrin Vale was born",  # nothing outside the description
    ],
)
def test_what_is_not_a_folded_chain_is_kept(query: str) -> None:
    assert unfold_query(query, QUESTION, 6) == [query]


def test_the_plan_is_renumbered_and_keeps_no_repeat() -> None:
    queries = [FOLDED, "capital of the state where Orrin Vale was born", "county of #1"]
    texts, needs = unfold_plan(queries, [set(), set(), {0}], QUESTION, 6)
    # the second query is the chain's second part, planned already; "county of #1" built on the
    # folded query, so it builds on its last part
    assert texts == [
        "state where Orrin Vale was born",
        "capital of #1",
        "city that shares a border with #2",
        "county of #3",
    ]
    assert needs == [set(), {0}, {1}, {2}]


def test_a_plan_without_room_or_without_folds_is_unchanged() -> None:
    pairs = clean_queries([FOLDED, "county of #1"], set(), 6)
    assert unfolded(pairs, QUESTION, 2) == pairs  # full: nothing can be added
    # room for one more query: the innermost description alone comes out
    assert [q for q, _ in unfolded(pairs, QUESTION, 3)] == [
        "state where Orrin Vale was born",
        "city that shares a border with the capital of #1",
        "county of #2",
    ]
    plain = clean_queries(["author of The Lantern Atlas", "birthplace of #1"], set(), 6)
    assert unfolded(plain, "Where was the author of The Lantern Atlas born?", 6) == plain


ORRIN = [
    ("orrin", "Orrin Vale", "Orrin Vale was born in the state of Velmora in 1871."),
    ("velmora", "Velmora", "Velmora is a state whose capital is Tessary."),
    ("tessary", "Tessary", "Tessary shares a border with the city of Kell Harbour."),
    ("kell", "Kell Harbour", "Kell Harbour is a port city in Dunmere County."),
]


@pytest.fixture(scope="module")
def orrin(tmp_path_factory: pytest.TempPathFactory) -> TantivySparseIndex:
    return tiny_index(tmp_path_factory, "orrin", ORRIN)


def orrin_chat() -> RoutedChatModel:
    def summarize(messages: list[BaseMessage]) -> str:
        return finding(
            user_text(messages),
            **{
                "state where Orrin Vale": ("Velmora", "Orrin Vale"),
                "capital of Velmora": ("Tessary", "Velmora"),
                "border with Tessary": ("Kell Harbour", "Tessary"),
            },
        )

    def final(messages: list[BaseMessage]) -> str:
        n = number_any(user_text(messages), "Tessary")
        return reply(short_answer="Kell Harbour", answer=f"Kell Harbour [{n}].")

    return RoutedChatModel(
        routes={
            "decompose": reply(queries=[FOLDED]),
            "summarize": summarize,
            "verify": reply(sufficient=False, queries=[]),
            "answer": final,
        }
    )


@pytest.mark.parametrize("on", [True, False])
async def test_the_planner_searches_each_hop_of_a_folded_chain(
    orrin: TantivySparseIndex, on: bool
) -> None:
    planner = PlannerSettings(
        draft=False, supplement=False, findings_call="batched", residual_hop=False, unfold=on
    )
    searcher = KeywordSearcher(orrin)
    result = await agent_with(orrin_chat(), [searcher], planner=planner).ask(QUESTION)
    asked = [q.query for q in result.sub_queries]
    if on:
        assert asked == [
            "state where Orrin Vale was born",
            "capital of Velmora",
            "city that shares a border with Tessary",
        ]
        last = result.sub_queries[-1]
        assert last.needs == ["q2"] and last.summary == "Kell Harbour"
        assert "state where Orrin Vale was born" in searcher.queries
    else:
        assert asked == [FOLDED]
        assert "state where Orrin Vale was born" not in searcher.queries
