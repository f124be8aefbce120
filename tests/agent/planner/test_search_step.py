"""The ``search`` node (``agent.planner.search_step``) and the trace it writes
(``agent.planner.trace``), run on their own: a ``PlannerRun`` built by hand around small
searchers, no graph and no model. A searcher that raises or hangs degrades the question and never
fails it; calls are charged to the task's scope whether or not the searcher takes one; every
search is one ``search`` event carrying the run's usage so far."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langgraph.runtime import Runtime

from agent.planner.plan import QUESTION_SEARCH_ID, Plan, ResultKey
from agent.planner.routing import question_task
from agent.planner.search_step import search
from agent.planner.state import PlannerRun, SearchTask
from agent.planner.trace import emit, sub_report
from agent.rules.question import Question
from agent.runtime.usage import UsageTracker
from agent.settings import BudgetSettings, PlannerSettings
from searchers.passages import Hit, Passage
from searchers.searcher import RunScope, SearchResult


def _result(name: str, query: str, llm_calls: int = 0) -> SearchResult:
    hits = [Hit(Passage("p1", "Tinted Windows", "Tinted Windows first played in Tulsa."), 1.0)]
    return SearchResult(name, query, hits, [], None, True, "sufficient", llm_calls, 1.0)


class Scoped:
    """A searcher of today's contract: it is handed the scope its calls are charged to."""

    def __init__(self) -> None:
        self.scopes: list[RunScope] = []

    async def search(self, query: str, *, k: int, scope: RunScope) -> SearchResult:
        self.scopes.append(scope)
        scope.count(1)  # the call it made, charged before it returns
        return _result("scoped", query, llm_calls=1)


class Legacy:
    """A searcher written before scopes: ``search(query, *, k)``; it reports its calls."""

    async def search(self, query: str, *, k: int) -> SearchResult:
        return _result("legacy", query, llm_calls=2)


class Broken:
    async def search(self, query: str, *, k: int, scope: RunScope) -> SearchResult:
        raise RuntimeError("index file is gone")


class Hanging:
    async def search(self, query: str, *, k: int, scope: RunScope) -> SearchResult:
        await asyncio.sleep(30)
        raise AssertionError("never reached: the deadline ends the wait")


def _runtime(searchers: dict[str, Any], *, deadline_s: float = 60.0) -> tuple[Runtime, list]:
    written: list[Any] = []
    run = PlannerRun(
        chat=FakeListChatModel(responses=["unused"]),
        searchers=searchers,
        planner=PlannerSettings(),
        budgets=BudgetSettings(max_llm_calls=6),
        tracker=UsageTracker(),
        deadline_s=deadline_s,
    )
    return Runtime(context=run, stream_writer=written.append), written


def _task(searcher: str, **extra: Any) -> SearchTask:
    task = SearchTask(sub_query_id="q1", query="band of Tinted Windows", searcher=searcher, round=1)
    return SearchTask(**{**task, **extra})  # type: ignore[typeddict-item]


def test_a_search_is_recorded_under_its_query_and_searcher_and_streamed() -> None:
    runtime, written = _runtime({"scoped": Scoped()})
    update = asyncio.run(search(_task("scoped"), runtime))
    assert update["errors"] == []
    plan = Plan.from_json({"question": "q", "parsed": Question.read("q").to_json(), **update})
    record = plan.searches[ResultKey("q1", "scoped")]
    assert record["sub_query_id"] == "q1" and [h["id"] for h in record["hits"]] == ["p1"]
    [event] = runtime.context.events
    assert event.kind == "search" and event.round == 1 and event.data["searcher"] == "scoped"
    assert written == [{"hoptree_event": event}]


def test_calls_are_charged_to_the_task_whether_or_not_the_searcher_takes_a_scope() -> None:
    scoped = Scoped()
    runtime, _ = _runtime({"scoped": scoped, "legacy": Legacy()})
    asyncio.run(search(_task("scoped", max_llm_calls=3), runtime))
    [given] = scoped.scopes
    assert given is not runtime.context.rounds  # a child with the task's allowance
    assert given.max_llm_calls == 3 and given.parent is runtime.context.rounds
    asyncio.run(search(_task("legacy"), runtime))  # counted after the fact: 2 more
    assert runtime.context.rounds.llm_calls == 3
    assert runtime.context.events[-1].data["usage"]["llm_calls"] == 3


def test_a_searcher_that_raises_degrades_the_question_and_says_why() -> None:
    runtime, _ = _runtime({"broken": Broken()})
    update = asyncio.run(search(_task("broken"), runtime))
    assert update["errors"] == [
        "broken on 'band of Tinted Windows': RuntimeError: index file is gone"
    ]
    record = update["searches"][next(iter(update["searches"]))]
    assert record["hits"] == [] and record["error"] == "RuntimeError: index file is gone"


def test_a_searcher_that_hangs_is_cut_at_the_deadline() -> None:
    runtime, _ = _runtime({"hanging": Hanging()}, deadline_s=0.3)
    update = asyncio.run(search(_task("hanging"), runtime))
    [error] = update["errors"]
    assert "no result within" in error and "before the deadline" in error


def test_no_search_starts_once_the_deadline_is_past() -> None:
    scoped = Scoped()
    runtime, _ = _runtime({"scoped": scoped}, deadline_s=0.0)
    runtime.context.started = time.monotonic() - 1.0
    update = asyncio.run(search(question_task("a question?", "scoped", 0), runtime))
    assert scoped.scopes == []  # never called
    assert update["errors"] == ["scoped on 'a question?': skipped: the question's deadline is near"]
    assert next(iter(update["searches"].values()))["sub_query_id"] == QUESTION_SEARCH_ID


def test_emit_adds_the_usage_so_far_and_sub_report_the_public_fields() -> None:
    runtime, written = _runtime({})
    emit(runtime, "verify", {"sufficient": False}, 2, 12.5)
    [event] = runtime.context.events
    assert event.data == {
        "sufficient": False,
        "usage": {"llm_calls": 0, "prompt_tokens": 0, "completion_tokens": 0},
    }
    assert (event.kind, event.round, event.ms) == ("verify", 2, 12.5)
    assert written == [{"hoptree_event": event}]
    sub = {"id": "q2", "query": "birthplace of #1", "needs": ["q1"], "round": 1, "key": "x"}
    assert sub_report(sub) == {"id": "q2", "query": "birthplace of #1", "needs": ["q1"]}  # type: ignore[arg-type]
