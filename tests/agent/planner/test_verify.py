"""The ``verify`` node called directly, off the graph: what the judging call reads, the ready
hops and follow-ups it sends (written through the plan, ``Plan.next_round``) and why it stops
(``agent.results.PlanStop``)."""

from __future__ import annotations

import copy
from typing import Any

from agent.planner.plan import Plan
from agent.planner.state import FindingRecord
from agent.planner.verify import _findings_text, verify
from agent.settings import PlannerSettings
from tests.agent.planner.test_plan import CHAIN, finding, state, sub
from tests.planner_scripts import node_runtime, reply
from tests.routed_chat import RoutedChatModel

SPIELBERG = finding("q1", "Steven Spielberg")


def planned(*findings: FindingRecord, rnd: int = 1, **fields: Any) -> Any:
    """A planner state of ``CHAIN`` in round ``rnd`` (typed loosely: the node takes it as the
    graph's ``PlannerState``)."""
    return {**state(subs=CHAIN, findings=list(findings), **fields), "round": rnd}


def chat(**routes: str) -> RoutedChatModel:
    return RoutedChatModel(routes=routes)


def test_the_judging_call_reads_each_query_with_its_finding_or_not_found() -> None:
    plan = Plan.from_json(planned(SPIELBERG, finding("q2")))
    assert _findings_text(plan, 200) == (
        "- director of Jaws -> Steven Spielberg\n- birthplace of #1 -> NOT FOUND"
    )


def test_with_the_findings_step_ablated_it_reads_the_passages_instead() -> None:
    unread: FindingRecord = {**finding("q1", skipped=True), "sources": ["jaws"], "answered": True}
    passage = {"id": "jaws", "title": "Jaws", "text": "Jaws was directed by Steven Spielberg."}
    plan = Plan.from_json(state(subs=CHAIN[:1], findings=[unread], passages={"jaws": passage}))
    assert _findings_text(plan, 200) == (
        "- director of Jaws -> passages:\n    Jaws: Jaws was directed by Steven Spielberg."
    )


async def test_a_ready_hop_goes_out_next_round_without_a_call() -> None:
    before = planned(SPIELBERG, waiting=["q2"])
    before["sub_queries"]["q2"]["round"] = 0
    kept = copy.deepcopy(before)
    model = chat()
    update = await verify(before, node_runtime(model))
    assert model.seen == [] and "stopped" not in update
    assert update["round"] == 2 and update["pending"] == ["q2"] and update["waiting"] == []
    sent = update["sub_queries"]["q2"]
    assert sent["query"] == "birthplace of Steven Spielberg" and sent["round"] == 2
    assert before == kept  # the node's input is not written to
    assert update["verdicts"][-1]["stopped"] == ""  # the round went on


async def test_an_open_query_is_asked_again_by_a_follow_up() -> None:
    model = chat(verify=reply(sufficient=False, queries=["birthplace of Steven Spielberg"]))
    update = await verify(planned(SPIELBERG, finding("q2"), rnd=2), node_runtime(model))
    (follow,) = update["sub_queries"].values()
    asked = sub("q3", "birthplace of Steven Spielberg", replaces="q2", origin="supplement")
    assert follow == {**asked, "round": 3}  # sent in the next round
    assert {k: update[k] for k in ("round", "pending", "waiting")} == {
        "round": 3,
        "pending": ["q3"],
        "waiting": [],
    }


async def test_why_it_stops_is_one_of_the_plans_stop_reasons() -> None:
    done = planned(SPIELBERG, finding("q2", "Cincinnati"))
    assert (await verify(done, node_runtime(chat())))["stopped"] == "sufficient"
    open_plan = planned(SPIELBERG, finding("q2"))
    off = PlannerSettings(draft=False, supplement=False, findings_call="batched")
    stopped = await verify(open_plan, node_runtime(chat(), off))
    assert stopped["stopped"] == "no_supplement"
    assert stopped["verdicts"][-1]["stopped"] == "no_supplement"
    no_calls = await verify(open_plan, node_runtime(chat(), max_llm_calls=1))
    assert no_calls["stopped"] == "budget_llm_calls"
    silent = chat(verify=reply(sufficient=False, queries=[]))
    assert (await verify(open_plan, node_runtime(silent)))["stopped"] == "no_new_queries"
