"""The low-level searcher protocol, its trace records, its budget and the run scope.

A searcher (LevelRAG's low-level searcher) takes one atomic query, rewrites and refines it with
the LLM against its own retriever, and returns documents plus a trace of everything it tried. The
trace is part of the product: the planner and the user see which queries were sent, what came
back, and why the searcher stopped.
"""

from __future__ import annotations

import inspect
import math
import time
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol, TypedDict, runtime_checkable

from searchers.passages import Hit, HitRecord

# Why a scope refused a call (``RunScope.check``): a searcher stops with it, and so may the
# planner (``agent.results.PlanStop``), which is why it is a type of its own.
BudgetReason = Literal["budget_llm_calls", "budget_deadline"]

StopReason = Literal[
    "sufficient",  # a verified result was found
    "exhausted",  # every refinement allowed by the depth/rewrite limit was tried
    BudgetReason,
    "error",
]


class BudgetExceeded(RuntimeError):
    def __init__(self, reason: BudgetReason) -> None:
        super().__init__(reason)
        self.reason: BudgetReason = reason


# The one default of an LLM call's timeout (``LLMSettings.timeout_s`` and every dataclass that
# carries a timeout read it): a 1.5B model on two cores takes minutes on a long prompt.
DEFAULT_LLM_TIMEOUT_S = 180.0


# The one default of a stand-alone search's budget (``BudgetSettings.searcher_*`` and
# ``SearchBudget`` read them). Both came with the first settings and the first searcher
# (38a706c, 73a0c29) with no measurement recorded; 30 calls leave room for LevelRAG's 27
# refinements plus the rewrite. A search inside a plan gets far less (``SearchLoop``).
DEFAULT_SEARCH_LLM_CALLS = 30
DEFAULT_SEARCH_DEADLINE_S = 300.0


@dataclass(frozen=True)
class SearchBudget:
    """A searcher's configured limits for one search of one atomic query. Every LLM call also
    has its own timeout. Built from the settings in one place, ``Settings.search_budget()``."""

    max_llm_calls: int = DEFAULT_SEARCH_LLM_CALLS
    deadline_s: float = DEFAULT_SEARCH_DEADLINE_S
    llm_timeout_s: float = DEFAULT_LLM_TIMEOUT_S

    def scope(self, parent: RunScope | None = None) -> RunScope:
        """The scope one search runs in: a sub-scope of the caller's (``parent``, so the
        caller's allowance and deadline bound it too), or a root scope of these limits alone
        when the searcher is used on its own (``hoptree search``, the evals)."""
        if parent is None:
            return RunScope(
                max_llm_calls=self.max_llm_calls,
                deadline_s=self.deadline_s,
                llm_timeout_s=self.llm_timeout_s,
            )
        return parent.child(
            max_llm_calls=self.max_llm_calls,
            deadline_s=self.deadline_s,
            llm_timeout_s=self.llm_timeout_s,
        )


@dataclass(frozen=True)
class SearchLoop:
    """How far a caller narrows every searcher's own loop for each search it runs: the
    planner's lighter searches (``PlannerSettings.search_loop()``), where the planner's rounds
    are the outer refinement loop and a full stand-alone loop under every atomic query would
    multiply the cost.

    It reaches every searcher the same way, built-in or plugin: ``SearcherContext.within(loop)``
    puts it in the context the factories receive (``SearcherContext.loop``; None there means
    the searcher runs its own configured loop, as ``hoptree search`` does) and narrows the
    context's budget to ``max_llm_calls``. Each factory narrows its own config in its own terms
    (the built-ins' ``within(loop)``); a plugin that reads no limit is still held to the calls.
    The limits have no defaults here: their one home is ``PlannerSettings``.
    """

    max_llm_calls: int  # LLM calls per search
    max_depth: int  # feedback levels below the rewritten query
    max_refinements: int  # feedback queries tried
    max_rewrites: int  # LLM rewrites of the query (HyDE's pseudo-documents)


class RunScope:
    """The run contract: what a piece of work (a question, its rounds, one search, the answer)
    may spend, handed down explicitly as an argument, never found through ambient state.

    A scope carries a deadline (on the monotonic clock), an allowance of LLM calls, the timeout
    of one LLM call, and optionally its parent. ``charge()`` is called before every LLM call:
    it checks this scope and every ancestor, so a sub-scope can never spend beyond what an
    enclosing one allows (a searcher's 30 calls inside a question's last 2 get 2), and a call
    it refuses costs nothing. The call is then counted on every level, so the question's count
    is the sum of everything spent beneath it at the moment it is spent, not added up after.

    ``child()`` makes a sub-budget: its own limits apply on top of its parent's, so it can only
    be tighter. Nothing ever changes a scope's limits after it is made; a step that may spend
    more than the steps before it (the answer's reserved call) gets a scope of its own from a
    higher level instead (``agent.planner.state.PlannerRun``).
    """

    def __init__(
        self,
        *,
        max_llm_calls: int | None = None,
        deadline_s: float | None = None,
        llm_timeout_s: float = DEFAULT_LLM_TIMEOUT_S,
        parent: RunScope | None = None,
        started: float | None = None,
    ) -> None:
        """``None`` for a limit means "none of its own" (the parent's still apply)."""
        self.parent = parent
        self.started = time.monotonic() if started is None else started
        self.max_llm_calls = max_llm_calls
        self.deadline = self.started + deadline_s if deadline_s is not None else math.inf
        self.llm_timeout_s = llm_timeout_s
        self.llm_calls = 0  # charged on this scope or any scope beneath it

    def child(
        self,
        max_llm_calls: int | None = None,
        deadline_s: float | None = None,
        llm_timeout_s: float | None = None,
    ) -> RunScope:
        """A sub-scope starting now: ``max_llm_calls`` more calls at most and ``deadline_s``
        seconds at most, each within what this scope (and its ancestors) still allow. Its LLM
        timeout is this scope's unless a shorter one is given."""
        timeout = self.llm_timeout_s if llm_timeout_s is None else llm_timeout_s
        return RunScope(
            max_llm_calls=max_llm_calls,
            deadline_s=deadline_s,
            llm_timeout_s=min(timeout, self.llm_timeout_s),
            parent=self,
        )

    def levels(self) -> Iterator[RunScope]:
        """This scope, then its parent, up to the root."""
        scope: RunScope | None = self
        while scope is not None:
            yield scope
            scope = scope.parent

    @property
    def elapsed_s(self) -> float:
        return time.monotonic() - self.started

    def remaining_s(self) -> float:
        """The time left before the nearest deadline of any level."""
        return max(0.0, min(level.deadline for level in self.levels()) - time.monotonic())

    def out_of_calls(self) -> bool:
        """No level has a call left (the next ``charge`` would raise for calls)."""
        return any(
            level.max_llm_calls is not None and level.llm_calls >= level.max_llm_calls
            for level in self.levels()
        )

    def check(self) -> None:
        """Raise ``BudgetExceeded`` if a call now would pass a limit of any level; the
        outermost level is checked first, each for its deadline, then its calls."""
        now = time.monotonic()
        for level in reversed(list(self.levels())):
            if now >= level.deadline:
                raise BudgetExceeded("budget_deadline")
            if level.max_llm_calls is not None and level.llm_calls >= level.max_llm_calls:
                raise BudgetExceeded("budget_llm_calls")

    def charge(self) -> float:
        """Reserve one LLM call before it is made: check every level, count the call on every
        level, and return the timeout the call may use (this scope's LLM timeout, capped by
        every level's time left)."""
        self.check()
        now = time.monotonic()
        timeout = self.llm_timeout_s
        for level in self.levels():
            level.llm_calls += 1
            timeout = min(timeout, max(level.deadline - now, 0.001))
        return timeout

    def count(self, llm_calls: int) -> None:
        """Count calls made without charging (an old plugin's, reported in its result) on
        every level, after the fact; the only place calls are not charged before they are
        made (``agent.planner.graph.search``)."""
        for level in self.levels():
            level.llm_calls += max(0, llm_calls)

    def __repr__(self) -> str:
        return (
            f"RunScope(llm_calls={self.llm_calls}, max_llm_calls={self.max_llm_calls}, "
            f"remaining_s={self.remaining_s():.1f}, parent={self.parent!r})"
        )


class BudgetMeter(RunScope):
    """Deprecated: a root ``RunScope`` of a ``SearchBudget`` (``budget.scope()``). Kept so a
    plugin written against the meter still imports and runs; it is charged alone, and the
    planner counts the calls its searcher reports after the search."""

    def __init__(self, budget: SearchBudget) -> None:
        warnings.warn(
            "BudgetMeter is deprecated; use SearchBudget.scope() or the scope a searcher is given",
            DeprecationWarning,
            stacklevel=2,
        )
        super().__init__(
            max_llm_calls=budget.max_llm_calls,
            deadline_s=budget.deadline_s,
            llm_timeout_s=budget.llm_timeout_s,
        )
        self.budget = budget


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

    async def search(
        self, query: str, *, k: int = 10, scope: RunScope | None = None
    ) -> SearchResult:
        """Search for one atomic query; never raises for a bad query or a bad LLM reply: a
        failure is a result with ``stopped="error"`` and whatever was found before it.

        ``scope`` is the caller's run scope (the planner's question, for instance): the search
        runs in a sub-scope of it (``SearchBudget.scope(scope)``) and charges every LLM call
        there before making it; without one it runs in a root scope of its own budget. A
        searcher written before scopes (``search(query, *, k)``) still works: the planner
        calls it without one and counts the ``llm_calls`` its result reports afterwards
        (``takes_scope``)."""
        ...


_TAKES_SCOPE: dict[Any, bool] = {}


def takes_scope(searcher: Searcher) -> bool:
    """Whether ``searcher.search`` accepts ``scope=`` (or any keyword). Checked once per
    ``search`` function: the compatibility path for plugins written before run scopes."""
    search = searcher.search
    key = getattr(search, "__func__", search)
    known = _TAKES_SCOPE.get(key)
    if known is None:
        try:
            params = list(inspect.signature(search).parameters.values())
        except (TypeError, ValueError):  # no signature to read: call it as before
            params = []
        known = any(
            (p.name == "scope" and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD))
            or p.kind is p.VAR_KEYWORD
            for p in params
        )
        _TAKES_SCOPE[key] = known
    return known


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
    scope: RunScope,
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
        llm_calls=scope.llm_calls,
        ms=(time.monotonic() - started) * 1000,
        error=error or state.get("error"),
    )
