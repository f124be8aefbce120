"""The result records on their own (``agent.results``): the planner's stop reasons, which of
them flag an answer degraded, and the reason a finished run reports."""

from __future__ import annotations

from agent.results import CUT_SHORT, PLAN_STOPS, answered_stop, degradation


def test_the_stop_reasons_are_the_wire_values_the_planner_always_wrote() -> None:
    assert set(PLAN_STOPS) == {
        "sufficient",
        "draft",
        "no_supplement",
        "no_new_queries",
        "max_rounds",
        "max_sub_queries",
        "deadline",
        "budget_llm_calls",
        "budget_deadline",
    }
    assert set(CUT_SHORT) <= set(PLAN_STOPS)


def test_a_run_that_reached_its_answer_keeps_verifys_reason_or_found_enough() -> None:
    assert answered_stop("max_rounds") == "max_rounds"
    assert answered_stop("") == "sufficient"  # verify never ran: nothing was searched


def test_only_a_budget_or_the_deadline_degrades_an_answer_by_its_stop() -> None:
    assert degradation(["verify: bad reply", "verify: bad reply"], "no_new_queries") == [
        "verify: bad reply"
    ]
    assert degradation([], "budget_llm_calls") == [
        "searching stopped early: the LLM call budget ran out"
    ]
    assert degradation([], "deadline") == ["searching stopped early: the deadline came"]
    assert all(degradation([], stop) == [] for stop in PLAN_STOPS if stop not in CUT_SHORT)
    assert degradation([], "") == []
