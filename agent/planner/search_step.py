"""The ``search`` node: one searcher on one atomic query (or the question as written, for the
draft and for an open plan's answer). Its own module because two nodes run it: the graph's
``search_<name>`` nodes, and the draft, which searches the question on every searcher before any
plan exists."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from langgraph.runtime import Runtime

from agent.planner.plan import Plan, ResultKey
from agent.planner.state import PlannerRun, SearchEntry, SearchTask
from agent.planner.trace import emit
from searchers.searcher import SearchResult, takes_scope


async def search(task: SearchTask, runtime: Runtime[PlannerRun]) -> dict[str, Any]:
    """One searcher on one atomic query. A searcher that raises, hangs or overruns the deadline
    degrades the answer (the trace says so); it never fails the question.

    The searcher gets the rounds' scope (a child with the task's allowance when it has one),
    charged before each of its LLM calls; one written before scopes (``takes_scope``) is called
    without it and the calls its result reports are counted afterwards."""
    run = runtime.context
    started = time.monotonic()
    name, query = task["searcher"], task["query"]
    searcher = run.searchers[name]
    time_left = run.search_time_left()
    error: str | None = None
    result: SearchResult | None = None
    allowance = task.get("max_llm_calls")
    scope = run.rounds
    if allowance is not None:  # a sub-scope: nothing spent beyond the task's allowance
        scope = scope.child(max_llm_calls=allowance, deadline_s=time_left)
    scoped = takes_scope(searcher)
    if time_left <= 0:
        error = "skipped: the question's deadline is near"
    else:
        call = (
            searcher.search(query, k=run.planner.k, scope=scope)
            if scoped
            else searcher.search(query, k=run.planner.k)
        )
        try:
            result = await asyncio.wait_for(call, timeout=time_left)
        except TimeoutError:
            error = f"no result within the {time_left:.0f}s left before the deadline"
        except Exception as exc:  # a plugin's bug must not end the question
            error = f"{type(exc).__name__}: {str(exc)[:300]}"
    if result is None:
        result = SearchResult.failed(name, query, error or "no result", started)
    elif not scoped:
        scope.count(result.llm_calls)
    record: SearchEntry = {"sub_query_id": task["sub_query_id"], **result.to_json()}
    emit(runtime, "search", record, task["round"], result.ms)
    errors = [f"{name} on {query!r}: {result.error}"] if result.error else []
    return {
        **Plan.search_update(ResultKey(task["sub_query_id"], name), record),
        "errors": errors,
    }
