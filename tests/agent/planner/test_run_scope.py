"""The run contract (``searchers.searcher.RunScope``): a scope is charged before every LLM call,
checks itself and every ancestor, counts the call on all of them, and hands back the timeout the
call may use; a child is a sub-budget that can only be tighter than its parent."""

from __future__ import annotations

import asyncio
import time
import warnings

import pytest
from pydantic import BaseModel

from agent.planner.state import PlannerRun
from agent.runtime.usage import UsageTracker
from agent.settings import BudgetSettings, LLMSettings, PlannerSettings
from searchers.searcher import (
    DEFAULT_LLM_TIMEOUT_S,
    BudgetExceeded,
    BudgetMeter,
    RunScope,
    SearchBudget,
    SearchResult,
    takes_scope,
)
from searchers.structured_calls import ask
from tests.scripted_chat import ScriptedChatModel


class Keywords(BaseModel):
    query: str


def test_a_child_cannot_spend_beyond_its_parents_allowance() -> None:
    parent = RunScope(max_llm_calls=2, deadline_s=60)
    child = parent.child(max_llm_calls=30)
    child.charge()
    child.charge()
    with pytest.raises(BudgetExceeded) as refused:
        child.charge()
    assert refused.value.reason == "budget_llm_calls"
    assert (child.llm_calls, parent.llm_calls) == (2, 2)
    assert child.out_of_calls() and parent.out_of_calls()


def test_a_child_is_bounded_by_its_own_allowance_too() -> None:
    parent = RunScope(max_llm_calls=10, deadline_s=60)
    first, second = parent.child(max_llm_calls=1), parent.child(max_llm_calls=1)
    first.charge()
    with pytest.raises(BudgetExceeded):
        first.charge()
    second.charge()  # a sibling has its own allowance; the parent counts both
    assert parent.llm_calls == 2 and not parent.out_of_calls()


def test_every_level_counts_the_calls_beneath_it() -> None:
    root = RunScope(max_llm_calls=10)
    rounds = root.child(max_llm_calls=9)
    search = rounds.child(max_llm_calls=3)
    search.charge()
    rounds.charge()
    assert (search.llm_calls, rounds.llm_calls, root.llm_calls) == (1, 2, 2)


def test_the_nearest_deadline_wins() -> None:
    parent = RunScope(deadline_s=100, llm_timeout_s=50)
    near = parent.child(deadline_s=5)
    assert near.charge() == pytest.approx(5, abs=0.5)  # its own deadline, nearer than 50 s
    assert parent.child(deadline_s=1000).charge() == 50  # the LLM timeout, nearer than both
    tight = RunScope(deadline_s=3, llm_timeout_s=50)
    assert tight.child(deadline_s=1000).charge() == pytest.approx(3, abs=0.5)  # the parent's
    assert tight.child(deadline_s=1000).remaining_s() <= 3


def test_a_passed_deadline_at_any_level_refuses_the_call() -> None:
    parent = RunScope(max_llm_calls=10, deadline_s=0)
    child = parent.child(max_llm_calls=5, deadline_s=1000)
    with pytest.raises(BudgetExceeded) as refused:
        child.charge()
    assert refused.value.reason == "budget_deadline"
    assert (child.llm_calls, parent.llm_calls) == (0, 0)
    assert RunScope(deadline_s=60).child(deadline_s=0).remaining_s() == 0


def test_a_child_timeout_is_never_longer_than_its_parents() -> None:
    parent = RunScope(llm_timeout_s=20)
    assert parent.child().llm_timeout_s == 20
    assert parent.child(llm_timeout_s=300).llm_timeout_s == 20
    assert parent.child(llm_timeout_s=5).llm_timeout_s == 5


def test_a_refused_call_costs_nothing_and_is_never_made() -> None:
    chat = ScriptedChatModel(replies=['{"query": "Paris"}'])
    root = RunScope(max_llm_calls=1)
    scope = root.child(max_llm_calls=5)
    reply = asyncio.run(ask(chat, Keywords, [], scope=scope, step="sparse_rewrite"))
    assert reply.value == Keywords(query="Paris")
    with pytest.raises(BudgetExceeded):
        asyncio.run(ask(chat, Keywords, [], scope=scope, step="sparse_rewrite"))
    assert len(chat.calls) == 1  # charged before the call: the refused one never went out
    assert (scope.llm_calls, root.llm_calls) == (1, 1)


def run_of(
    max_llm_calls: int, deadline_s: float = 60, llm_timeout_s: float = 30, ago_s: float = 0
) -> PlannerRun:
    """A question's run context, started ``ago_s`` seconds ago."""
    return PlannerRun(
        chat=ScriptedChatModel(),
        searchers={},
        planner=PlannerSettings(draft=False, supplement=True, findings_call="batched"),
        budgets=BudgetSettings(max_llm_calls=max_llm_calls),
        tracker=UsageTracker(),
        llm_timeout_s=llm_timeout_s,
        deadline_s=deadline_s,
        started=time.monotonic() - ago_s,
    )


def test_the_answer_keeps_its_call_when_the_rounds_spent_everything() -> None:
    run = run_of(max_llm_calls=3)
    search = run.rounds.child(max_llm_calls=30)
    search.charge()
    run.rounds.charge()
    with pytest.raises(BudgetExceeded):
        search.charge()
    assert run.rounds.out_of_calls()
    answer = run.answer_scope()
    answer.charge()
    assert run.scope.llm_calls == 3  # the question's count: rounds and answer
    with pytest.raises(BudgetExceeded):
        answer.charge()  # one call, not what the root has left


def test_the_answer_has_one_call_even_when_the_rounds_spent_little() -> None:
    run = run_of(max_llm_calls=12)
    run.rounds.charge()
    answer = run.answer_scope()
    answer.charge()
    with pytest.raises(BudgetExceeded):
        answer.charge()
    assert run.scope.llm_calls == 2


def test_the_answer_gets_a_full_llm_timeout_at_the_deadline() -> None:
    run = run_of(max_llm_calls=3, deadline_s=60, llm_timeout_s=30, ago_s=60)  # all used
    assert run.remaining_s() == 0
    with pytest.raises(BudgetExceeded) as refused:
        run.rounds.charge()
    assert refused.value.reason == "budget_deadline"
    assert run.answer_scope().charge() == pytest.approx(30, abs=0.5)


def test_the_answer_scope_takes_the_time_left_when_it_is_longer() -> None:
    run = run_of(max_llm_calls=3, deadline_s=600, llm_timeout_s=30)
    answer = run.answer_scope()
    assert answer.remaining_s() == pytest.approx(600, abs=1)
    assert answer.charge() == 30


def test_a_searcher_runs_in_a_sub_scope_of_its_budget() -> None:
    budget = SearchBudget(max_llm_calls=4, deadline_s=100, llm_timeout_s=10)
    alone = budget.scope()
    assert (alone.parent, alone.max_llm_calls, alone.llm_timeout_s) == (None, 4, 10)
    outer = RunScope(max_llm_calls=2, deadline_s=50, llm_timeout_s=30)
    inside = budget.scope(outer)
    assert inside.parent is outer and inside.max_llm_calls == 4
    inside.charge()
    inside.charge()
    with pytest.raises(BudgetExceeded):
        inside.charge()  # the caller's 2, not the searcher's 4


def test_one_default_llm_timeout() -> None:
    assert LLMSettings().timeout_s == DEFAULT_LLM_TIMEOUT_S
    assert SearchBudget().llm_timeout_s == DEFAULT_LLM_TIMEOUT_S
    assert RunScope().llm_timeout_s == DEFAULT_LLM_TIMEOUT_S


class Old:
    name = "old"
    description = "written before run scopes"

    async def search(self, query: str, *, k: int = 10) -> SearchResult:
        raise NotImplementedError


class New(Old):
    async def search(
        self, query: str, *, k: int = 10, scope: RunScope | None = None
    ) -> SearchResult:
        raise NotImplementedError


class Loose(Old):
    async def search(self, query: str, **options: object) -> SearchResult:
        raise NotImplementedError


def test_takes_scope_reads_the_signature() -> None:
    assert not takes_scope(Old())
    assert takes_scope(New())
    assert takes_scope(Loose())


def test_the_deprecated_meter_still_charges() -> None:
    with pytest.warns(DeprecationWarning):
        meter = BudgetMeter(SearchBudget(max_llm_calls=1))
    chat = ScriptedChatModel(replies=['{"query": "Paris"}'])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        reply = asyncio.run(ask(chat, Keywords, [], meter=meter, step="sparse_rewrite"))
    assert reply.value is not None and meter.llm_calls == 1
    with pytest.raises(BudgetExceeded):
        meter.charge()
    assert meter.budget.max_llm_calls == 1


def test_elapsed_is_measured_from_the_start() -> None:
    started = time.monotonic() - 5
    assert RunScope(started=started).elapsed_s >= 5
