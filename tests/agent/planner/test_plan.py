"""The typed ``Plan`` on its own: what "answered", "open", "ready" and "resolved" mean, read from
a state built by hand, with no graph and no model."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent.planner.plan import QUESTION_SEARCH_ID, Plan, ResultKey
from agent.planner.state import (
    FindingRecord,
    SearchEntry,
    SubQuery,
    fresh_question,
    question_of,
)
from agent.rules.query_text import query_key
from agent.rules.question import Question
from searchers.passages import Hit, Passage
from searchers.searcher import SearchResult


def sub(qid: str, query: str, *, needs=(), replaces=None, origin="decompose") -> SubQuery:
    return SubQuery(
        id=qid,
        query=query,
        round=1,
        origin=origin,
        key=query_key(query),
        needs=list(needs),
        replaces=replaces,
    )


def finding(qid: str, answer: str = "", *, skipped=False, superseded_by=None) -> FindingRecord:
    supported = bool(answer)
    return {
        "id": qid,
        "query": qid,
        "finding": answer,
        "proposed": answer,
        "sources": [f"p-{qid}"] if supported else [],
        "answered": supported,
        "supported": supported,
        "skipped": skipped,
        "superseded_by": superseded_by,
    }


def entry(qid: str, searcher: str, *ids: str) -> SearchEntry:
    hits = [
        Hit(Passage(pid, pid.title(), f"text of {pid}"), 1.0 / n) for n, pid in enumerate(ids, 1)
    ]
    result = SearchResult(searcher, "q", hits, [], None, True, "sufficient", 0, 1.0)
    return {"sub_query_id": qid, **result.to_json()}


JAWS = Question.read("Where was the director of Jaws born?")


def state(**fields: Any) -> dict[str, Any]:
    subs = fields.pop("subs", [])
    findings = fields.pop("findings", [])
    return {
        "question": JAWS.text,
        "parsed": JAWS.to_json(),
        "sub_queries": {s["id"]: s for s in subs},
        "findings": {f["id"]: f for f in findings},
        **fields,
    }


CHAIN = [sub("q1", "director of Jaws"), sub("q2", "birthplace of #1", needs=["q1"])]


def test_a_result_key_is_written_and_read_back_by_the_plan_alone() -> None:
    key = ResultKey("q1", "sparse")
    assert key.to_json() == "q1|sparse"
    assert ResultKey.from_json(key.to_json()) == key
    update = Plan.search_update(key, entry("q1", "sparse", "a"))
    assert list(update["searches"]) == ["q1|sparse"]


def test_the_plan_round_trips_through_the_graph_state() -> None:
    raw = state(
        subs=CHAIN,
        findings=[finding("q1", "Steven Spielberg")],
        waiting=["q2"],
        pending=["q1"],
        searches={"q1|sparse": entry("q1", "sparse", "a"), "q0|dense": entry("q0", "dense", "b")},
        fused={"q1": ["a"]},
        passages={},
        shape="chain",
    )
    plan = Plan.from_json(raw)
    assert plan.question == JAWS and plan.question.asks_where
    assert set(plan.searches) == {ResultKey("q1", "sparse"), ResultKey("q0", "dense")}
    assert Plan.from_json(plan.to_json()) == plan
    assert plan.to_json()["searches"] == raw["searches"]


def test_an_empty_or_reset_state_is_an_empty_plan() -> None:
    asked = Question.read("q?")
    plan = Plan.from_json({**fresh_question(asked, None), "sub_queries": None, "findings": None})
    assert plan.question == asked
    assert plan.sub_queries == {} and plan.findings == {}
    assert not plan.resolved() and plan.unanswered() == [] and plan.ready() == ([], [], [])


def test_a_querys_results_are_its_own_and_fused_once() -> None:
    plan = Plan.from_json(
        state(
            searches={
                "q1|sparse": entry("q1", "sparse", "a", "b"),
                "q1|dense": entry("q1", "dense", "b", "c"),
                "q10|sparse": entry("q10", "sparse", "z"),
                f"{QUESTION_SEARCH_ID}|sparse": entry(QUESTION_SEARCH_ID, "sparse", "x"),
            }
        )
    )
    assert [r.searcher for r in plan.results_of("q1")] == ["sparse", "dense"]
    assert next(h.id for h in plan.fused_hits("q1", k=5)) == "b"  # both searchers found it
    assert {h.id for h in plan.fused_hits("q1", k=5)} == {"a", "b", "c"}
    assert [h.id for h in plan.question_hits(k=5)] == ["x"]
    assert plan.fused_hits("q9", k=5) == []


def test_a_query_is_answered_by_its_own_finding_or_a_follow_ups() -> None:
    follow = sub("q3", "who directed Jaws", replaces="q1", origin="supplement")
    plan = Plan.from_json(
        state(subs=[*CHAIN, follow], findings=[finding("q1"), finding("q3", "Spielberg")])
    )
    assert plan.answer_of("q1") == "Spielberg"
    assert plan.unanswered() == []
    replaced = Plan.from_json(
        state(
            subs=[*CHAIN, follow],
            findings=[finding("q1", "Jaws", superseded_by="q3"), finding("q3", "Spielberg")],
        )
    )
    assert replaced.answer_of("q1") == "Spielberg"
    assert [q["id"] for q in replaced.active()] == ["q3"]


def test_an_open_query_blocks_the_hop_that_needs_it() -> None:
    plan = Plan.from_json(state(subs=CHAIN, findings=[finding("q1")], waiting=["q2"]))
    assert [q["id"] for q in plan.unanswered()] == ["q1"]
    assert plan.ready() == ([], ["q2"], ["q2"])
    assert not plan.resolved()


def test_a_hop_goes_out_with_the_answer_it_needs_filled_in() -> None:
    plan = Plan.from_json(
        state(subs=CHAIN, findings=[finding("q1", "Steven Spielberg")], waiting=["q2"])
    )
    ready, still, blocked = plan.ready()
    assert [q["query"] for q in ready] == ["birthplace of Steven Spielberg"]
    assert still == [] and blocked == []


def test_a_hop_waits_while_what_it_needs_is_unsearched_and_not_after_a_skipped_finding() -> None:
    waiting = Plan.from_json(state(subs=CHAIN, findings=[], waiting=["q2"]))
    assert waiting.ready() == ([], ["q2"], [])
    skipped = Plan.from_json(
        state(subs=CHAIN, findings=[finding("q1", skipped=True)], waiting=["q2"])
    )
    ready, _, _ = skipped.ready()
    assert [q["query"] for q in ready] == ["birthplace of (director of Jaws)"]


def test_a_plan_resolves_when_every_query_is_answered_and_none_waits() -> None:
    done = [finding("q1", "Steven Spielberg"), finding("q2", "Cincinnati")]
    plan = Plan.from_json(state(subs=CHAIN, findings=done))
    assert plan.resolved() and plan.whole()
    assert [f.answer for f in plan.supported_findings()] == ["Steven Spielberg", "Cincinnati"]
    assert [(h.id, h.answer) for h in plan.hops()] == [
        ("q1", "Steven Spielberg"),
        ("q2", "Cincinnati"),
    ]
    assert plan.needed("q1") and not plan.needed("q2")
    assert not Plan.from_json(state(subs=CHAIN, findings=done[:1], waiting=["q2"])).resolved()


def test_a_plan_with_a_query_naming_nothing_found_everything_but_is_not_resolved() -> None:
    nameless = [CHAIN[0], sub("q2", "place of birth", needs=["q1"])]
    done = [finding("q1", "Steven Spielberg"), finding("q2", "Cincinnati")]
    plan = Plan.from_json(state(subs=nameless, findings=done))
    assert plan.found_everything() and plan.nameless() == ["place of birth"]
    assert not plan.resolved()
    named = Plan.from_json(state(subs=CHAIN, findings=done))
    assert named.found_everything() and named.nameless() == [] and named.resolved()
    # a query replaced by a follow-up's finding no longer counts, named or not
    replaced = Plan.from_json(
        state(
            subs=[*nameless, sub("q3", "birthplace of Spielberg", replaces="q2")],
            findings=[*done[:1], finding("q2", "x", superseded_by="q3"), finding("q3", "Ohio")],
        )
    )
    assert replaced.nameless() == [] and replaced.resolved()


def test_a_single_query_covers_only_a_single_fact_question() -> None:
    one = state(subs=CHAIN[:1], findings=[finding("q1", "Steven Spielberg")])
    assert not Plan.from_json(one).whole()
    assert Plan.from_json({**one, "shape": "single"}).whole()


def test_follow_ups_are_numbered_after_the_plan() -> None:
    plan = Plan.from_json(state(subs=CHAIN, findings=[finding("q1")]))
    first = plan.follow_up("who directed Jaws", query_key("who directed Jaws"), "q1")
    second = plan.follow_up("Jaws 1975 film", query_key("Jaws 1975 film"), None, added=1)
    assert (first["id"], first["replaces"], first["origin"]) == ("q3", "q1", "supplement")
    assert second["id"] == "q4" and second["replaces"] is None
    assert plan.asked_keys() == {q["key"] for q in CHAIN}


def test_a_plan_of_the_question_itself_is_recognised() -> None:
    plan = Plan.from_json(state())
    asked = sub("q1", "Where was the director of Jaws born?")
    assert plan.is_question_itself([asked])
    assert not plan.is_question_itself(CHAIN)


def test_a_fresh_question_carries_the_question_as_read_and_as_json() -> None:
    asked = Question.read("Who is the maternal grandfather of Elin Sarrow?")
    fresh = fresh_question(asked, "thread-1")
    assert fresh["question"] == asked.text and fresh["thread_id"] == "thread-1"
    assert fresh["parsed"]["relation_plan"] == ["mother of Elin Sarrow", "father of #1"]
    assert json.loads(json.dumps(fresh["parsed"])) == fresh["parsed"]  # checkpointable JSON
    assert question_of(fresh) == asked
    with pytest.raises(KeyError):
        question_of({"question": asked.text})  # a state nobody read the question of


def test_a_round_is_written_by_the_plan_and_the_nodes_queries_stay_as_they_were() -> None:
    waiting = {**CHAIN[1], "round": 0}
    first = Plan.first_round([{**CHAIN[0], "round": 0}], [waiting])
    assert first["round"] == 1 and first["pending"] == ["q1"] and first["waiting"] == ["q2"]
    assert [q["round"] for q in first["sub_queries"].values()] == [1, 0]
    follow = sub("q3", "who directed Jaws", replaces="q1", origin="supplement")
    nxt = Plan.next_round(3, [follow], ["q2"])
    assert nxt == {
        "round": 3,
        "sub_queries": {"q3": {**follow, "round": 3}},
        "pending": ["q3"],
        "waiting": ["q2"],
    }
    assert follow["round"] == 1  # copied, not changed


def test_a_finding_record_keeps_the_span_only_when_supported() -> None:
    kept = Plan.new_finding(
        CHAIN[0], "Spielberg", ["p"], supported=True, answered=True, skipped=False
    )
    assert kept == {**finding("q1", "Spielberg"), "query": "director of Jaws", "sources": ["p"]}
    said = Plan.new_finding(CHAIN[0], "Lucas", [], supported=False, answered=False, skipped=False)
    assert (said["finding"], said["proposed"], said["superseded_by"]) == ("", "Lucas", None)


def test_a_supported_follow_up_supersedes_what_it_asked_again_in_the_update() -> None:
    follow = sub("q3", "who directed Jaws", replaces="q1", origin="supplement")
    plan = Plan.from_json(state(subs=[*CHAIN, follow], findings=[finding("q1")]))
    hits = [Hit(Passage("a", "A", "text of a"), 1.0)]
    update = plan.findings_update([follow], {"q3": finding("q3", "Spielberg")}, {"q3": hits})
    assert update["findings"]["q1"] == {**finding("q1"), "superseded_by": "q3"}
    assert update["fused"] == {"q3": ["a"]} and list(update["passages"]) == ["a"]
    assert plan.findings["q1"]["superseded_by"] is None  # the plan read is not written to
    found_nothing = plan.findings_update([follow], {"q3": finding("q3")}, {"q3": hits})
    assert set(found_nothing["findings"]) == {"q3"}


def test_what_the_judging_call_reads_of_a_finding_is_asked_of_the_plan() -> None:
    unread: FindingRecord = {**finding("q2", skipped=True), "sources": ["p1"], "answered": True}
    plan = Plan.from_json(state(subs=CHAIN, findings=[finding("q1", "Spielberg"), unread]))
    assert plan.own_finding("q1") == "Spielberg" and plan.own_finding("q2") is None
    assert plan.unread_sources("q2") == ["p1"] and plan.unread_sources("q1") == []
    assert plan.own_finding("q9") is None and plan.unread_sources("q9") == []


def test_the_results_sub_queries_are_the_plans_queries_searched_or_not() -> None:
    raw = state(
        subs=CHAIN,
        findings=[finding("q1", "Steven Spielberg")],
        waiting=["q2"],
        searches={"q1|sparse": entry("q1", "sparse", "a")},
        fused={"q1": ["a"]},
    )
    searched, held = Plan.from_json(raw).reports()
    assert (searched.id, searched.summary, searched.answered) == ("q1", "Steven Spielberg", True)
    assert searched.summary_sources == ["p-q1"] and searched.passage_ids == ["a"]
    assert [s["searcher"] for s in searched.searches] == ["sparse"]
    assert (held.id, held.summary, held.answered, held.needs) == ("q2", "", False, ["q1"])
