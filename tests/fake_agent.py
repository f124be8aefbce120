"""A scripted agent for testing the HTTP API and the trace page. It is not the planner: it replays
one fixed, plausible run (two rounds, two searchers, a refinement, a verdict, a cited answer) with
the exact event shapes the planner emits, and records what the server did to it.

Knobs: ``latency_s`` (sleep before each event after ``started``), ``fail_after`` (fail after that
many events: ``fail_mode="raise"`` raises ``AgentError`` like a dead chat endpoint,
``fail_mode="event"`` ends the stream with a final ``error`` event instead, ``fail_mode="crash"``
raises a ``RuntimeError`` like a bug), ``hold_after`` (hand over that many events, then wait for
the ``resume`` event: a test can look at what a client has while the run is provably unfinished,
with no timing involved). The server runs on its own thread and loop in tests, so the records are
guarded by a lock and cancellation is a ``threading.Event`` a test can wait on.

``ScriptedRunAgent`` adds ``run`` (trace events, then the typed ``AskResult``) as the planner has
it, for the code paths that prefer ``run`` over ``stream``.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any, Literal

from agent.results import AskResult, Citation, SubQueryReport, TraceEvent
from agent.service import AgentError

QUESTION = "Which river flows through the city where the Eiffel Tower stands?"

PASSAGES: dict[str, dict[str, str]] = {
    "eiffel-tower-3f2a": {
        "title": "Eiffel Tower",
        "text": "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, "
        "France. It is named after the engineer Gustave Eiffel, whose company designed and "
        "built the tower from 1887 to 1889.",
    },
    "champ-de-mars-12aa": {
        "title": "Champ de Mars",
        "text": "The Champ de Mars is a large public greenspace in Paris, France, located in the "
        "seventh arrondissement, between the Eiffel Tower to the northwest and the École "
        "Militaire to the southeast.",
    },
    "paris-91bc": {
        "title": "Paris",
        "text": "Paris is the capital and largest city of France. It lies on the river Seine, in "
        "the centre of the Île-de-France region, and is a major railway, highway and "
        "air-transport hub.",
    },
    "seine-77d0": {
        "title": "Seine",
        "text": "The Seine is a 777-kilometre-long river in northern France. It rises at "
        "Source-Seine, flows through Paris and into the English Channel at Le Havre.",
    },
}


def _hit(pid: str, score: float, retriever: str) -> dict[str, Any]:
    p = PASSAGES[pid]
    return {
        "id": pid,
        "title": p["title"],
        "score": score,
        "text": p["text"],
        "retriever": retriever,
        "metadata": {},
    }


def _attempt(
    id_: int,
    operation: str,
    query: str,
    hit_ids: list[str],
    *,
    parent: int | None = None,
    depth: int = 0,
    sufficient: bool,
    llm_says: bool | None,
    coverage: float,
    reason: str,
    answer: str | None = None,
) -> dict[str, Any]:
    return {
        "id": id_,
        "operation": operation,
        "query": query,
        "parent": parent,
        "depth": depth,
        "hit_ids": hit_ids,
        "verdict": {
            "sufficient": sufficient,
            "llm_says": llm_says,
            "coverage": coverage,
            "reason": reason,
            "answer": answer,
        },
        "ms": 180.0,
        "note": "",
    }


def _search(
    sub_query_id: str,
    searcher: str,
    query: str,
    attempts: list[dict[str, Any]],
    hits: list[tuple[str, float]],
    llm_calls: int,
) -> dict[str, Any]:
    best = next((a["id"] for a in attempts if a["verdict"]["sufficient"]), attempts[0]["id"])
    sufficient = any(a["verdict"]["sufficient"] for a in attempts)
    return {
        "sub_query_id": sub_query_id,
        "searcher": searcher,
        "query": query,
        "hits": [_hit(pid, score, searcher) for pid, score in hits],
        "attempts": attempts,
        "best_attempt": best,
        "sufficient": sufficient,
        "stopped": "sufficient" if sufficient else "exhausted",
        "llm_calls": llm_calls,
        "ms": 420.0,
        "error": None,
    }


Q1 = "In which city does the Eiffel Tower stand?"
Q2 = "Which river flows through Paris?"
ANSWER = (
    "The Eiffel Tower stands on the Champ de Mars in Paris [1], and the river that flows "
    "through Paris is the Seine [2][3]."
)
CITED = ["eiffel-tower-3f2a", "seine-77d0", "paris-91bc"]


def scripted_events(question: str, thread_id: str | None) -> list[TraceEvent]:
    """The run, minus the final ``result`` (built from these by ``scripted_result``)."""
    search_q1_sparse = _search(
        "q1",
        "sparse",
        Q1,
        [
            _attempt(
                0,
                "rewrite",
                "eiffel tower city",
                ["champ-de-mars-12aa", "eiffel-tower-3f2a"],
                sufficient=False,
                llm_says=False,
                coverage=0.67,
                reason="the hits place the tower on the Champ de Mars but the city is unclear",
            ),
            _attempt(
                1,
                "extend",
                'eiffel tower city "Paris"',
                ["eiffel-tower-3f2a", "paris-91bc"],
                parent=0,
                depth=1,
                sufficient=True,
                llm_says=True,
                coverage=1.0,
                reason="the first passage names Paris",
                answer="Paris",
            ),
        ],
        [("eiffel-tower-3f2a", 12.4), ("paris-91bc", 9.1), ("champ-de-mars-12aa", 8.7)],
        llm_calls=3,
    )
    search_q1_dense = _search(
        "q1",
        "dense",
        Q1,
        [
            _attempt(
                0,
                "hyde",
                "The Eiffel Tower is a landmark on the Champ de Mars in Paris, the capital of "
                "France.",
                ["eiffel-tower-3f2a", "champ-de-mars-12aa"],
                sufficient=True,
                llm_says=True,
                coverage=1.0,
                reason="answers the query",
                answer="Paris",
            )
        ],
        [("eiffel-tower-3f2a", 0.82), ("champ-de-mars-12aa", 0.71)],
        llm_calls=2,
    )
    search_q2_sparse = _search(
        "q2",
        "sparse",
        Q2,
        [
            _attempt(
                0,
                "rewrite",
                'river "Paris"',
                ["seine-77d0", "paris-91bc"],
                sufficient=True,
                llm_says=True,
                coverage=1.0,
                reason="the Seine flows through Paris",
                answer="the Seine",
            )
        ],
        [("seine-77d0", 11.0), ("paris-91bc", 10.2)],
        llm_calls=2,
    )
    search_q2_dense = _search(
        "q2",
        "dense",
        Q2,
        [
            _attempt(
                0,
                "hyde",
                "The Seine is the river that flows through Paris on its way to the English "
                "Channel.",
                ["seine-77d0", "paris-91bc"],
                sufficient=True,
                llm_says=True,
                coverage=1.0,
                reason="answers the query",
                answer="the Seine",
            )
        ],
        [("seine-77d0", 0.88), ("paris-91bc", 0.74)],
        llm_calls=2,
    )
    return [
        TraceEvent(
            "started", {"question": question, "thread_id": thread_id, "searchers": SEARCHERS}
        ),
        TraceEvent("decompose", {"sub_queries": [{"id": "q1", "query": Q1}]}, round=1),
        TraceEvent("search", search_q1_sparse, round=1, ms=420.0),
        TraceEvent("search", search_q1_dense, round=1, ms=390.0),
        TraceEvent(
            "finding",
            {
                "id": "q1",
                "query": Q1,
                "finding": "The Eiffel Tower stands on the Champ de Mars in Paris, France.",
                "sources": ["eiffel-tower-3f2a"],
                "answered": True,
                "skipped": False,
            },
            round=1,
        ),
        TraceEvent(
            "verify",
            {
                "sufficient": False,
                "missing": ["which river flows through Paris"],
                "reason": "the city is known (Paris) but no summary names its river",
            },
            round=1,
        ),
        TraceEvent("next_round", {"sub_queries": [{"id": "q2", "query": Q2}]}, round=2),
        TraceEvent("search", search_q2_sparse, round=2, ms=300.0),
        TraceEvent("search", search_q2_dense, round=2, ms=310.0),
        TraceEvent(
            "finding",
            {
                "id": "q2",
                "query": Q2,
                "finding": "The Seine flows through Paris.",
                "sources": ["seine-77d0", "paris-91bc"],
                "answered": True,
                "skipped": True,
            },
            round=2,
        ),
        TraceEvent(
            "verify",
            {
                "sufficient": True,
                "missing": [],
                "reason": "both hops are answered: Eiffel Tower -> Paris -> Seine",
            },
            round=2,
        ),
        TraceEvent("answer", {"short_answer": "the Seine", "answer": ANSWER}, round=2),
    ]


SEARCHERS = ["sparse", "dense"]


def scripted_result(
    question: str, thread_id: str | None, trace: list[TraceEvent], seconds: float
) -> AskResult:
    citations = [
        Citation(n=i, id=pid, title=PASSAGES[pid]["title"], text=PASSAGES[pid]["text"])
        for i, pid in enumerate(CITED, start=1)
    ]
    searches = [e.data for e in trace if e.kind == "search"]
    sub_queries = [
        SubQueryReport(
            id=qid,
            query=query,
            round=round_,
            origin=origin,
            searches=[s for s in searches if s["sub_query_id"] == qid],
            passage_ids=sources,
            summary=summary,
            summary_sources=sources,
            answered=True,
        )
        for qid, query, round_, origin, summary, sources in (
            (
                "q1",
                Q1,
                1,
                "decompose",
                "The Eiffel Tower stands on the Champ de Mars in Paris, France.",
                ["eiffel-tower-3f2a"],
            ),
            (
                "q2",
                Q2,
                2,
                "supplement",
                "The Seine flows through Paris.",
                ["seine-77d0", "paris-91bc"],
            ),
        )
    ]
    return AskResult(
        question=question,
        answer=ANSWER,
        short_answer="the Seine",
        citations=citations,
        sub_queries=sub_queries,
        verdicts=[e.data for e in trace if e.kind == "verify"],
        stopped="sufficient",
        llm_calls=14,
        prompt_tokens=5120,
        completion_tokens=384,
        seconds=seconds,
        thread_id=thread_id,
        trace=list(trace),
        citation_check={
            "sentences": 3,
            "kept": 2,
            "recited": 0,
            "dropped": 1,
            "dropped_sentences": ["The Seine is 2,000 km long [2]."],
        },
    )


@dataclass
class ScriptedAgent:
    """An ``AgentLike`` that replays the scripted run. Test scaffolding, not the product."""

    latency_s: float = 0.0
    fail_after: int | None = None
    fail_mode: Literal["raise", "event", "crash"] = "raise"
    fail_message: str = "chat endpoint http://127.0.0.1:9/v1 unreachable: connection refused"
    hold_after: int | None = None
    resume: threading.Event = field(default_factory=threading.Event)
    searcher_names: list[str] = field(default_factory=lambda: list(SEARCHERS))
    model_label: str = "scripted (test double, no model)"
    # records
    calls: list[dict[str, Any]] = field(default_factory=list)
    active: int = 0
    max_active: int = 0
    completed: int = 0
    cancellations: int = 0
    cancelled: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def wait_active(self, n: int, timeout_s: float = 5.0) -> bool:
        """Wait (bounded) until ``n`` runs are in flight; for tests that fill the slots."""
        ends = time.monotonic() + timeout_s
        while time.monotonic() < ends:
            with self._lock:
                if self.active >= n:
                    return True
            time.sleep(0.01)
        return False

    async def _wait_resume(self, timeout_s: float = 30.0) -> None:
        """Wait for ``resume`` without blocking the server's loop (and stay cancellable); bounded,
        so a test that never resumes cannot hang the run past its own failure."""
        ends = time.monotonic() + timeout_s
        while not self.resume.is_set() and time.monotonic() < ends:
            await asyncio.sleep(0.01)

    async def stream(
        self, question: str, *, thread_id: str | None = None, deadline_s: float | None = None
    ) -> AsyncIterator[TraceEvent]:
        with self._lock:
            self.calls.append(
                {"question": question, "thread_id": thread_id, "deadline_s": deadline_s}
            )
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        started = time.monotonic()
        trace: list[TraceEvent] = []
        finished = False  # the last event was handed over: closing now is not a cancellation
        try:
            for n, event in enumerate(scripted_events(question, thread_id)):
                if self.hold_after is not None and n == self.hold_after:
                    await self._wait_resume()
                if self.fail_after is not None and n >= self.fail_after:
                    if self.fail_mode == "raise":
                        raise AgentError(self.fail_message)
                    if self.fail_mode == "crash":
                        raise RuntimeError(self.fail_message)
                    finished = True
                    yield TraceEvent("error", {"error": self.fail_message, "where": "decompose"})
                    return
                if n and self.latency_s:
                    await asyncio.sleep(self.latency_s)
                trace.append(event)
                yield event
            result = scripted_result(question, thread_id, trace, time.monotonic() - started)
            with self._lock:
                self.completed += 1
            finished = True
            yield TraceEvent("result", result.to_json(), round=2)
        except (asyncio.CancelledError, GeneratorExit):
            if finished:
                raise
            with self._lock:
                self.cancellations += 1
            self.cancelled.set()
            raise
        finally:
            with self._lock:
                self.active -= 1

    async def ask(
        self, question: str, *, thread_id: str | None = None, deadline_s: float | None = None
    ) -> AskResult:
        trace: list[TraceEvent] = []
        async with aclosing(
            self.stream(question, thread_id=thread_id, deadline_s=deadline_s)
        ) as events:
            async for event in events:
                if event.kind == "result":
                    result = scripted_result(question, thread_id, trace, 0.0)
                    result.seconds = event.data["seconds"]
                    return result
                if event.kind == "error":
                    raise AgentError(event.data["error"])
                trace.append(event)
        raise AgentError("the scripted run ended without a result")


@dataclass
class ScriptedRunAgent(ScriptedAgent):
    """The scripted run with ``run`` as well, like the planner: trace events, then the typed
    ``AskResult`` (trace and plan included), so a caller needs no JSON round trip."""

    runs: int = 0

    async def run(
        self, question: str, *, thread_id: str | None = None, deadline_s: float | None = None
    ) -> AsyncIterator[TraceEvent | AskResult]:
        with self._lock:
            self.runs += 1
        trace: list[TraceEvent] = []
        async with aclosing(
            self.stream(question, thread_id=thread_id, deadline_s=deadline_s)
        ) as events:
            async for event in events:
                if event.kind == "result":
                    yield scripted_result(question, thread_id, trace, event.data["seconds"])
                    return
                trace.append(event)
                yield event
