"""The planner's routing, apart from its nodes: the graph declares every edge a run can take
(so ``get_graph()`` and LangGraph Studio draw the real flow, the fan-out into the search nodes
included), and the routing steps send a plan's pending queries to every searcher or go to the
answer."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from langgraph.types import Send

from agent.planner.graph import build_planner_graph
from agent.planner.routing import (
    after_decompose,
    after_verify,
    destinations,
    search_node,
)
from agent.planner.state import SubQuery
from agent.rules.query_text import query_key
from agent.rules.question import Question
from agent.settings import PlannerSettings

SEARCHERS = ["sparse", "dense"]


def edges(searchers: list[str]) -> set[tuple[str, str]]:
    drawn = build_planner_graph(searchers).get_graph()
    return {(edge.source, edge.target) for edge in drawn.edges}


def test_the_drawn_graph_has_every_edge_a_run_can_take() -> None:
    drawn = edges(SEARCHERS)
    for name in SEARCHERS:
        node = search_node(name)
        assert ("decompose", node) in drawn  # the plan's first round
        assert ("verify", node) in drawn  # the next hops and the follow-ups
        assert (node, "findings") in drawn
    assert {
        ("__start__", "draft"),  # every question starts with the one-call draft
        ("draft", "decompose"),  # the router sends it to the plan
        ("draft", "__end__"),  # or the draft stands
        ("decompose", "answer"),  # nothing to search
        ("findings", "verify"),
        ("verify", "answer"),
        ("answer", "__end__"),
    } <= drawn


def test_only_the_configured_searchers_are_drawn() -> None:
    drawn = edges(["tree"])
    assert ("decompose", "search_tree") in drawn
    assert not any("sparse" in a or "sparse" in b for a, b in drawn)


def test_a_routing_step_may_go_to_any_search_node_or_the_answer() -> None:
    assert destinations(SEARCHERS) == ["search_sparse", "search_dense", "answer"]


def runtime(**planner: Any) -> Any:
    settings = PlannerSettings(
        **{"draft": False, "supplement": True, "findings_call": "batched", **planner}
    )
    run = SimpleNamespace(searchers=dict.fromkeys(SEARCHERS), planner=settings)
    return SimpleNamespace(context=run)


def sub(qid: str, query: str, rnd: int = 1) -> SubQuery:
    return SubQuery(
        id=qid, query=query, round=rnd, origin="decompose", key=query_key(query), needs=[],
        replaces=None,
    )  # fmt: skip


QUESTION = Question.read("Where was the director of Jaws born?")


def planned(*subs: SubQuery, pending: list[str], **fields: Any) -> dict[str, Any]:
    return {
        "question": QUESTION.text,
        "parsed": QUESTION.to_json(),
        "sub_queries": {s["id"]: s for s in subs},
        "pending": pending,
        **fields,
    }


def targets(route: Any) -> list[tuple[str, str, str]]:
    assert isinstance(route, list) and all(isinstance(s, Send) for s in route)
    return [(s.node, s.arg["sub_query_id"], s.arg["query"]) for s in route]


def test_after_decompose_each_ready_query_goes_to_each_searcher_then_the_question() -> None:
    state = planned(sub("q1", "director of Jaws"), sub("q2", "birthplace of #1", 0), pending=["q1"])
    route = after_decompose(state, runtime())  # type: ignore[arg-type]
    assert targets(route) == [
        ("search_sparse", "q1", "director of Jaws"),
        ("search_dense", "q1", "director of Jaws"),
        ("search_sparse", "q0", QUESTION.text),
        ("search_dense", "q0", QUESTION.text),
    ]
    assert all(s.arg["max_llm_calls"] == 0 for s in route[2:])  # type: ignore[index]


def test_the_question_is_not_searched_twice() -> None:
    itself = planned(sub("q1", QUESTION.text), pending=["q1"])
    assert [t[1] for t in targets(after_decompose(itself, runtime()))] == ["q1", "q1"]  # type: ignore[arg-type]


def test_after_decompose_with_nothing_pending_goes_to_the_answer() -> None:
    assert after_decompose(planned(pending=[]), runtime()) == "answer"  # type: ignore[arg-type]


def test_after_verify_sends_the_next_round_or_answers_once_stopped() -> None:
    state = planned(sub("q1", "director of Jaws"), sub("q3", "Jaws director", 2), pending=["q3"])
    route = after_verify({**state, "stopped": ""}, runtime())  # type: ignore[arg-type]
    assert targets(route) == [
        ("search_sparse", "q3", "Jaws director"),
        ("search_dense", "q3", "Jaws director"),
    ]
    assert all(s.arg["round"] == 2 for s in route)  # type: ignore[union-attr]
    stopped = after_verify({**state, "stopped": "sufficient"}, runtime())  # type: ignore[arg-type]
    assert stopped == "answer"
