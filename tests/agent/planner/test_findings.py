"""The ``findings`` node called directly, off the graph: a round's spans read in one call, the
records written through the plan (``Plan.new_finding``, ``Plan.findings_update``), a supported
follow-up replacing the finding it asked again, and the step ablated."""

from __future__ import annotations

import copy
from typing import Any

from agent.planner.findings import read_findings
from agent.planner.state import SearchEntry
from agent.settings import PlannerSettings
from searchers.passages import Hit, Passage
from searchers.searcher import SearchResult
from tests.agent.planner.test_plan import finding, state, sub
from tests.planner_scripts import finding as finding_reply
from tests.planner_scripts import node_runtime, user_text
from tests.routed_chat import RoutedChatModel

JAWS = Passage("jaws", "Jaws", "Jaws is a 1975 thriller film directed by Steven Spielberg.")
SHARK = Passage("shark", "Great white shark", "The great white shark lives in coastal waters.")


def searched(qid: str, *passages: Passage) -> SearchEntry:
    hits = [Hit(p, 1.0 / n) for n, p in enumerate(passages, 1)]
    result = SearchResult("sparse", qid, hits, [], None, True, "sufficient", 0, 1.0)
    return {"sub_query_id": qid, **result.to_json()}


def round_of(*subs: Any, pending: list[str], **fields: Any) -> Any:
    """A planner state whose ``pending`` queries were searched this round (typed loosely: the
    node takes it as the graph's ``PlannerState``)."""
    searches = {f"{q}|sparse": searched(q, JAWS, SHARK) for q in pending}
    return {**state(subs=list(subs), **fields), "pending": pending, "searches": searches}


def spans(**by_query: tuple[str, str]) -> RoutedChatModel:
    return RoutedChatModel(routes={"summarize": lambda m: finding_reply(user_text(m), **by_query)})


async def test_a_rounds_spans_are_read_and_kept_only_where_a_passage_holds_them() -> None:
    before = round_of(sub("q1", "director of Jaws"), pending=["q1"])
    model = spans(Jaws=("Steven Spielberg", "Jaws"))
    runtime = node_runtime(model)
    update = await read_findings(before, runtime)
    assert [route for route, _ in model.seen] == ["summarize"]
    record = update["findings"]["q1"]
    assert record["finding"] == "Steven Spielberg" and record["supported"]
    assert record["sources"] == ["jaws"] and record["superseded_by"] is None
    assert update["fused"] == {"q1": ["jaws", "shark"]}
    assert set(update["passages"]) == {"jaws", "shark"} and update["errors"] == []
    (event,) = runtime.context.events  # the trace shows the record the state keeps
    assert event.kind == "finding" and event.data["finding"] == "Steven Spielberg"


async def test_a_supported_follow_up_replaces_the_finding_it_asked_again() -> None:
    q1 = sub("q1", "film directed by the man")
    q2 = sub("q2", "director of Jaws", replaces="q1", origin="supplement")
    before = round_of(q1, q2, pending=["q2"], findings=[finding("q1")])
    kept = copy.deepcopy(before)
    update = await read_findings(before, node_runtime(spans(Jaws=("Steven Spielberg", "Jaws"))))
    assert update["findings"]["q2"]["supported"]
    assert update["findings"]["q1"] == {**finding("q1"), "superseded_by": "q2"}
    assert before == kept  # the earlier record is replaced in the update, not changed in place
    unsupported = await read_findings(before, node_runtime(spans()))
    assert set(unsupported["findings"]) == {"q2"}  # nothing found: q1 stands as it was


async def test_with_the_step_ablated_the_passages_are_the_finding_and_no_call_is_made() -> None:
    model = spans()
    ablated = PlannerSettings(draft=False, supplement=True, summarize=False)
    before = round_of(sub("q1", "director of Jaws"), pending=["q1"])
    update = await read_findings(before, node_runtime(model, ablated))
    assert model.seen == []
    record = update["findings"]["q1"]
    assert record["skipped"] and record["answered"] and not record["supported"]
    assert record["finding"] == "" and record["sources"] == ["jaws", "shark"]


LONG = Passage(
    "jaws-long",
    "Jaws (film)",
    "Jaws is a 1975 American thriller film. "
    + "It was a summer hit. " * 20
    + "The film was directed by Steven Spielberg.",
)


async def test_the_free_reader_reads_a_hop_over_its_passages_whole() -> None:
    """``findings_call="free"``: one free-reader call per query, its passages whole in the
    system message (the JSON reader's 350-character window around the query would cut the
    director off here), the query alone as the user's, a free-text reply kept as the span."""
    seen: list[list[Any]] = []

    def reply(messages: list[Any]) -> str:
        seen.append(messages)
        return "Steven Spielberg." if "directed by Steven Spielberg" in messages[0].content else ""

    model = RoutedChatModel(routes={"rag_answer": reply})
    planner = PlannerSettings(draft=False, supplement=True, findings_call="free")
    before = round_of(sub("q1", "director of Jaws"), pending=["q1"])
    before["searches"] = {"q1|sparse": searched("q1", LONG, SHARK)}
    update = await read_findings(before, node_runtime(model, planner))
    (messages,) = seen
    assert "Document 1 (Title: Jaws (film))" in messages[0].content
    assert "Document 2 (Title: Great white shark)" in messages[0].content
    assert "director of Jaws" in messages[-1].content and "Spielberg" not in messages[-1].content
    record = update["findings"]["q1"]
    assert record["finding"] == "Steven Spielberg" and record["supported"]
    assert record["sources"] == ["jaws-long"]
