"""The planner's trace events: every node reports what it did as a ``TraceEvent`` on the
LangGraph stream, which the CLI, the SSE endpoints, MCP progress and the trace page all read."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from agent.planner.state import PlannerRun, SubQuery
from agent.results import EventKind, TraceEvent


def emit(
    runtime: Runtime[PlannerRun], kind: EventKind, data: dict[str, Any], rnd: int, ms: float
) -> None:
    """Record a trace event and stream it; usage totals ride along so every step shows cost."""
    run = runtime.context
    total = run.tracker.total()
    data = {
        **data,
        "usage": {
            "llm_calls": run.scope.llm_calls,
            "prompt_tokens": total.prompt_tokens,
            "completion_tokens": total.completion_tokens,
        },
    }
    event = TraceEvent(kind=kind, data=data, round=rnd, ms=ms)
    run.events.append(event)
    runtime.stream_writer({"hoptree_event": event})


def sub_report(sub: SubQuery) -> dict[str, Any]:
    """A planned query as the trace reports it."""
    return {"id": sub["id"], "query": sub["query"], "needs": sub.get("needs", [])}
