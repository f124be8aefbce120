"""The Python API: an agent built from settings over an index directory.

    async with open_agent(settings, index_dir, threads=True) as agent:
        result = await agent.ask("Which city hosted the first gig of ...?")
        async for event in agent.stream("...", thread_id="t1"):
            ...  # TraceEvent(kind="decompose" | "search" | ... | "result")

``AgentLike`` is what the CLI and the HTTP API need of an agent, so they can be tested against
the real planner with a scripted chat model as well as against the local model.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol, runtime_checkable

from agent.results import AskResult, TraceEvent


class AgentError(RuntimeError):
    """A run that could not produce an answer at all (e.g. the chat endpoint is down)."""


@runtime_checkable
class AgentLike(Protocol):
    searcher_names: list[str]
    model_label: str

    async def ask(
        self, question: str, *, thread_id: str | None = None, deadline_s: float | None = None
    ) -> AskResult:
        """Run the planner to its answer. Raises ``QuestionError`` for an empty or oversized
        question, ``AgentError`` when no answer could be produced."""
        ...

    def stream(
        self, question: str, *, thread_id: str | None = None, deadline_s: float | None = None
    ) -> AsyncIterator[TraceEvent]:
        """Trace events as they happen; the last one has ``kind="result"`` and the
        ``AskResult.to_json()`` as its data (or ``kind="error"`` with ``data["error"]`` when
        the run failed). Cancelling the iteration cancels the run."""
        ...
