"""The low-level searcher protocol, its trace records and its budget.

A searcher (LevelRAG's low-level searcher) takes one atomic query, rewrites and refines it with
the LLM against its own retriever, and returns documents plus a trace of everything it tried. The
trace is part of the product: the planner and the user see which queries were sent, what came
back, and why the searcher stopped.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol, TypedDict, runtime_checkable

from searchers.passages import Hit, HitRecord

StopReason = Literal[
    "sufficient",  # a verified result was found
    "exhausted",  # every refinement allowed by the depth/rewrite limit was tried
    "budget_llm_calls",
    "budget_deadline",
    "error",
]


class BudgetExceeded(RuntimeError):
    def __init__(self, reason: StopReason) -> None:
        super().__init__(reason)
        self.reason: StopReason = reason


# The one default of an LLM call's timeout (``LLMSettings.timeout_s`` and every dataclass that
# carries a timeout read it): a 1.5B model on two cores takes minutes on a long prompt.
DEFAULT_LLM_TIMEOUT_S = 180.0


@dataclass(frozen=True)
class SearchBudget:
    """Limits for one search of one atomic query. Every LLM call also has its own timeout."""

    max_llm_calls: int = 30
    deadline_s: float = 300.0
    llm_timeout_s: float = DEFAULT_LLM_TIMEOUT_S


class BudgetMeter:
    """Counts LLM calls and watches the deadline; ``charge`` before each call, never after.

    A meter charged inside ``outer_budget(other)`` also charges ``other`` first: that is how
    the planner's ``max_llm_calls`` becomes a hard cap over its searchers' calls too, checked
    before each of them rather than added up after a search returns.
    """

    def __init__(self, budget: SearchBudget) -> None:
        self.budget = budget
        self.started = time.monotonic()
        self.llm_calls = 0

    @property
    def elapsed_s(self) -> float:
        return time.monotonic() - self.started

    def remaining_s(self) -> float:
        return max(0.0, self.budget.deadline_s - self.elapsed_s)

    def check(self) -> None:
        if self.elapsed_s >= self.budget.deadline_s:
            raise BudgetExceeded("budget_deadline")
        if self.llm_calls >= self.budget.max_llm_calls:
            raise BudgetExceeded("budget_llm_calls")

    def charge(self) -> float:
        """Reserve one LLM call; returns the timeout that call may use."""
        scope = _OUTER.get()
        if scope is not None and scope.meter is self:
            scope = None  # the outer meter itself is being charged
        if scope is not None:
            scope.meter.check()
        self.check()
        self.llm_calls += 1
        timeout = min(self.budget.llm_timeout_s, max(self.remaining_s(), 0.001))
        if scope is not None:
            scope.meter.llm_calls += 1
            scope.charged += 1
            timeout = min(timeout, max(scope.meter.remaining_s(), 0.001))
        return timeout


@dataclass
class OuterScope:
    """The enclosing meter of the calls made inside one ``outer_budget`` block, and how many of
    them it was charged for (so a caller can add calls a plugin counted some other way)."""

    meter: BudgetMeter
    charged: int = 0


_OUTER: ContextVar[OuterScope | None] = ContextVar("hoptree_outer_budget", default=None)


@contextlib.contextmanager
def outer_budget(meter: BudgetMeter) -> Iterator[OuterScope]:
    """Charge every ``BudgetMeter`` used in this block (tasks started in it too: they copy the
    context) to ``meter`` as well, before the call is made."""
    scope = OuterScope(meter)
    token = _OUTER.set(scope)
    try:
        yield scope
    finally:
        _OUTER.reset(token)


@dataclass
class Verdict:
    """Whether a retrieval answers the query, and the evidence the decision rests on."""

    sufficient: bool
    llm_says: bool | None = None
    coverage: float | None = None  # share of the query's key terms found in the hits
    reason: str = ""
    answer: str | None = None  # the span the model extracted, when the rule asks for one


@dataclass
class Attempt:
    """One query a searcher sent to its retriever (a node of the refinement tree)."""

    id: int
    operation: str  # "original" | "rewrite" | "extend" | "emphasize" | "filter" | "hyde" | ...
    query: str  # what the engine received: rendered Lucene, the pseudo-document, ...
    parent: int | None = None
    depth: int = 0
    hit_ids: list[str] = field(default_factory=list)
    verdict: Verdict | None = None
    ms: float = 0.0
    note: str = ""


class SearchRecord(TypedDict):
    """A search result as JSON (``SearchResult.to_json``): the planner's state keeps these (its
    checkpoints must serialise) and the API and trace show them."""

    searcher: str
    query: str
    hits: list[HitRecord]
    attempts: list[dict[str, Any]]  # ``Attempt`` fields
    best_attempt: int | None
    sufficient: bool
    stopped: StopReason
    llm_calls: int
    ms: float
    error: str | None


@dataclass
class SearchResult:
    searcher: str
    query: str
    hits: list[Hit]
    attempts: list[Attempt]
    best_attempt: int | None
    sufficient: bool
    stopped: StopReason
    llm_calls: int
    ms: float
    error: str | None = None

    @classmethod
    def failed(cls, searcher: str, query: str, error: str, started: float) -> SearchResult:
        """The result of a search that raised, hung or was never run: nothing found, and why."""
        return cls(
            searcher=searcher,
            query=query,
            hits=[],
            attempts=[],
            best_attempt=None,
            sufficient=False,
            stopped="error",
            llm_calls=0,
            ms=(time.monotonic() - started) * 1000,
            error=error,
        )

    def to_json(self) -> SearchRecord:
        return {
            "searcher": self.searcher,
            "query": self.query,
            "hits": [hit.to_json() for hit in self.hits],
            "attempts": [asdict(a) for a in self.attempts],
            "best_attempt": self.best_attempt,
            "sufficient": self.sufficient,
            "stopped": self.stopped,
            "llm_calls": self.llm_calls,
            "ms": round(self.ms, 1),
            "error": self.error,
        }

    @classmethod
    def from_json(cls, data: SearchRecord | dict[str, Any]) -> SearchResult:
        """The inverse of ``to_json``: the planner's state holds results as JSON records (its
        checkpoints must serialise), and fusing a query's results needs them back."""
        attempts = []
        for raw in data.get("attempts") or []:
            verdict = raw.get("verdict")
            attempts.append(
                Attempt(**{**raw, "verdict": Verdict(**verdict) if verdict is not None else None})
            )
        return cls(
            searcher=str(data["searcher"]),
            query=str(data["query"]),
            hits=[Hit.from_json(h) for h in data.get("hits") or []],
            attempts=attempts,
            best_attempt=data.get("best_attempt"),
            sufficient=bool(data.get("sufficient")),
            stopped=data.get("stopped", "exhausted"),
            llm_calls=int(data.get("llm_calls", 0)),
            ms=float(data.get("ms", 0.0)),
            error=data.get("error"),
        )


@runtime_checkable
class Searcher(Protocol):
    """What the planner needs of a low-level searcher."""

    name: str
    description: str

    async def search(self, query: str, *, k: int = 10) -> SearchResult:
        """Search for one atomic query; never raises for a bad query or a bad LLM reply: a
        failure is a result with ``stopped="error"`` and whatever was found before it."""
        ...


def best_attempt(attempts: list[Attempt]) -> Attempt | None:
    """Sufficient beats insufficient, then the model's yes, then coverage, then the earliest:
    a refinement loop returns its best try, not its last."""

    def rank(a: Attempt) -> tuple[bool, bool, float, bool, int]:
        v = a.verdict
        return (
            bool(v and v.sufficient),
            bool(v and v.llm_says),
            (v.coverage or 0.0) if v else 0.0,
            bool(a.hit_ids),
            -a.id,
        )

    return max(attempts, key=rank) if attempts else None


def finish_refinement(state: Mapping[str, Any]) -> dict[str, Any]:
    """The last node of every refinement subgraph: a loop that ran out of ideas says so."""
    return {"stopped": state.get("stopped") or "exhausted"}


async def run_refinement(
    searcher: str,
    query: str,
    graph: Any,
    context: Any,
    meter: BudgetMeter,
    *,
    recursion_limit: int,
) -> SearchResult:
    """Run a compiled refinement subgraph and turn its final state (``attempts``, ``hits`` keyed
    by attempt id, ``stopped``, ``error``) into a result. A crash inside the graph degrades to
    an error result: the planner records it and goes on with the other searchers."""
    started = time.monotonic()
    error: str | None = None
    state: Mapping[str, Any] = {}
    try:
        state = await graph.ainvoke(
            {"query": query}, context=context, config={"recursion_limit": recursion_limit}
        )
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
    attempts: list[Attempt] = list(state.get("attempts", []))
    best = best_attempt(attempts)
    return SearchResult(
        searcher=searcher,
        query=query,
        hits=list(state.get("hits", {}).get(best.id, [])) if best else [],
        attempts=attempts,
        best_attempt=best.id if best else None,
        sufficient=bool(best and best.verdict and best.verdict.sufficient),
        stopped="error" if error else state.get("stopped", "exhausted"),
        llm_calls=meter.llm_calls,
        ms=(time.monotonic() - started) * 1000,
        error=error or state.get("error"),
    )
