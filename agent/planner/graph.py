"""LevelRAG's high-level searcher as a LangGraph graph, built to read passages, not summaries.

    decompose --Send per (atomic query, searcher)--> search_<name> --> summarize --> verify
                                                       ^                                |
                                                       \\------------ Send -------------/
                                                                                       v
                                                                                     answer

- ``decompose`` (one call) plans atomic queries; a query that needs an earlier one's answer
  says so with ``#1`` and waits for it.
- ``search``: every (query, searcher) pair runs in parallel, each searcher a compiled subgraph
  with its own refinement loop. Inside the planner a searcher first tries the query as written
  and spends LLM calls only when that fails the coverage check.
- ``summarize`` (one call per round, all of the round's queries together) copies each query's
  answer span out of its passages; a span that does not occur in them is "not found".
- ``verify`` routes with no call while it can: queries waiting for an answer that is now known
  go out with it filled in; when every query has a supported finding the evidence suffices.
  Only when one has none does it make one call that both judges and names the follow-ups.
- ``answer`` (one reserved call) reads raw passages chosen from everything found, with the
  findings as one-line notes, and its cited answer is checked sentence by sentence.

Why this shape (round 1 measured 25 calls a question and F1 below one-call RAG although the
gold paragraphs were in its context 95% of the time): a 1.5B model drops and invents facts when
it summarizes, and the planner then followed its inventions; every call costs seconds.
``max_llm_calls`` is a hard cap checked before every call, the searchers' included.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from agent.planner.answer import answer
from agent.planner.decompose import decompose
from agent.planner.findings import summarize
from agent.planner.queries import search_node
from agent.planner.state import (
    PlannerRun,
    PlannerState,
    SearchEntry,
    SearchTask,
)
from agent.planner.trace import emit
from agent.planner.verify import HOP_EXTRA_ROUNDS, verify
from searchers.searcher import BudgetMeter, SearchBudget, SearchResult, outer_budget


async def search(task: SearchTask, runtime: Runtime[PlannerRun]) -> dict[str, Any]:
    """One searcher on one atomic query. A searcher that raises, hangs or overruns the deadline
    degrades the answer (the trace says so); it never fails the question. Its LLM calls are
    charged to the question's meter before each is made (``outer_budget``)."""
    run = runtime.context
    started = time.monotonic()
    name, query = task["searcher"], task["query"]
    searcher = run.searchers[name]
    time_left = run.search_time_left()
    error: str | None = None
    result: SearchResult | None = None
    charged = 0
    allowance = task.get("max_llm_calls")
    if time_left <= 0:
        error = "skipped: the question's deadline is near"
    else:
        meter = run.budget_meter
        if allowance is not None:  # its own, smaller meter: nothing charged beyond it
            meter = BudgetMeter(SearchBudget(allowance, time_left, run.llm_timeout_s))
        with outer_budget(meter) as scope:
            try:
                result = await asyncio.wait_for(
                    searcher.search(query, k=run.planner.k), timeout=time_left
                )
            except TimeoutError:
                error = f"no result within the {time_left:.0f}s left before the deadline"
            except Exception as exc:  # a plugin's bug must not end the question
                error = f"{type(exc).__name__}: {str(exc)[:300]}"
            charged = scope.charged
    if result is None:
        result = SearchResult.failed(name, query, error or "no result", started)
    # a plugin that calls its model without a BudgetMeter is counted after the fact
    # (a task with its own allowance was charged to its own meter: add what it spent)
    run.budget_meter.llm_calls += (
        max(0, result.llm_calls - charged) if allowance is None else result.llm_calls
    )
    record: SearchEntry = {"sub_query_id": task["sub_query_id"], **result.to_json()}
    emit(runtime, "search", record, task["round"], result.ms)
    errors = [f"{name} on {query!r}: {result.error}"] if result.error else []
    return {
        "searches": {f"{task['sub_query_id']}|{name}": record},
        "errors": errors,
    }


def build_planner_graph(searchers: list[str], checkpointer: Any = None):
    """The graph for these searchers: one search node per searcher name, so the compiled
    graph (and its drawing) shows which searchers the planner fans out to."""
    graph = StateGraph(PlannerState, context_schema=PlannerRun)
    graph.add_node("decompose", decompose)
    for name in searchers:
        graph.add_node(search_node(name), search)
        graph.add_edge(search_node(name), "summarize")
    graph.add_node("summarize", summarize)
    graph.add_node("verify", verify)
    graph.add_node("answer", answer)
    graph.add_edge(START, "decompose")
    graph.add_edge("summarize", "verify")
    graph.add_edge("answer", END)
    return graph.compile(name="planner", checkpointer=checkpointer)


def recursion_limit(max_rounds: int) -> int:
    """Supersteps per round: search, summarize, verify; plus decompose and answer, and the
    rounds planned hops may run past ``max_rounds`` (``planner_verify.HOP_EXTRA_ROUNDS``)."""
    return 3 * (max_rounds + HOP_EXTRA_ROUNDS) + 10
