"""The planner graph's state, its reducers, and the per-run context the nodes share.

State holds only JSON-shaped values, because a thread's state is checkpointed to SQLite between
questions; models, searchers and budgets travel in the run context, never persisted. The
question is read once (``fresh_question``): the state keeps its text and its ``Question`` as a
record (``parsed``, read back with ``question_of``). Keyed maps merge on write so parallel
``Send`` branches each add their own entry; writing ``None`` resets one (a new question on an old
thread starts clean, keeping the conversation history).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, NotRequired

from langchain_core.language_models import BaseChatModel
from typing_extensions import TypedDict

from agent.results import PlanStop, ShownSource, TraceEvent
from agent.rules.question import Question, QuestionRecord
from agent.runtime.usage import UsageTracker
from agent.settings import DEFAULT_DEADLINE_S, BudgetSettings, PlannerSettings
from searchers.passages import HitRecord
from searchers.searcher import DEFAULT_LLM_TIMEOUT_S, RunScope, Searcher, SearchRecord

# The time searching leaves the answer step: a share of the question's deadline, at most two
# minutes (no measurement chose them; the answer's call has its own scope, ``answer_scope``).
ANSWER_RESERVE_SHARE = 0.15
ANSWER_RESERVE_MAX_S = 120.0


def merge_keyed(left: dict[str, Any] | None, right: dict[str, Any] | None) -> dict[str, Any]:
    """Merge maps written by parallel branches; ``None`` resets (a new question)."""
    if right is None:
        return {}
    return {**(left or {}), **right}


def append_or_reset(left: list[Any] | None, right: list[Any] | None) -> list[Any]:
    if right is None:
        return []
    return [*(left or []), *right]


class SubQuery(TypedDict):
    id: str  # "q1", "q2", ... in the order planned
    query: str  # as searched: a dependent query has its #n filled in once it is sent
    round: int  # the round it was searched in; 0 while it waits for the answers it needs
    origin: str  # "decompose" | "supplement"
    key: str  # normalized form, for "never ask the same thing twice"
    needs: list[str]  # ids of earlier queries whose answers it uses ("birth year of #1")
    replaces: str | None  # the unanswered query this follow-up asks again


class FindingRecord(TypedDict):
    """What the findings step keeps for one query (``PlannerState.findings``)."""

    id: str
    query: str
    finding: str  # the supported span, "" when unsupported
    proposed: str  # what the model said either way (the trace shows both)
    sources: list[str]  # ids of the passages that hold the span
    answered: bool  # the model gave an answer
    supported: bool  # the answer is a span of a passage about the query's subject
    skipped: bool  # no findings call was made (``PlannerSettings.summarize`` off)
    superseded_by: str | None  # a follow-up whose supported finding replaced this one


class SearchEntry(SearchRecord):
    """One (atomic query, searcher) result in ``PlannerState.searches``."""

    sub_query_id: str


class PlannerState(TypedDict, total=False):
    question: str  # the question's text, as asked (and as the history and the trace show it)
    parsed: QuestionRecord  # the ``Question`` read from it once (``fresh_question``)
    thread_id: str | None
    history: list[dict[str, str]]  # earlier turns of this thread: question, short_answer
    round: int
    shape: str  # the question's shape (``Question.shape``), written when it is planned
    sub_queries: Annotated[dict[str, SubQuery], merge_keyed]
    pending: list[str]  # sub-query ids searched in the current round
    waiting: list[str]  # planned sub-query ids not yet searched: they need an earlier answer
    searches: Annotated[dict[str, SearchEntry], merge_keyed]  # "q1|sparse" -> result
    fused: Annotated[dict[str, list[str]], merge_keyed]  # sub-query id -> passage ids, best first
    passages: Annotated[dict[str, HitRecord], merge_keyed]  # passage id -> hit
    findings: Annotated[dict[str, FindingRecord], merge_keyed]  # sub-query id -> finding
    verdicts: list[dict[str, Any]]
    errors: Annotated[list[str], append_or_reset]
    stopped: PlanStop | Literal[""]  # why searching stopped; "" while it goes on
    short_answer: str
    answer: str
    citations: list[dict[str, Any]]  # Citation.to_json(), made by the answer step
    sources: list[ShownSource]
    citation_check: dict[str, Any]  # how many sentences of the cited answer were kept/dropped
    # the one-call draft (``agent.planner.draft``): its answer, citations, shown passages and
    # the router's signals and decision; {} without one
    draft: dict[str, Any]
    final_choice: dict[str, Any]  # after a draft: which answer the person got, and why


class SearchTask(TypedDict):
    """What one ``Send`` to the search node carries: one atomic query for one searcher."""

    sub_query_id: str
    query: str
    searcher: str
    round: int
    # LLM calls this search may make; absent = what the question's rounds allow. The question
    # itself is searched with 0: its searchers' first, as-written retrieval, no rewrite.
    max_llm_calls: NotRequired[int]


def fresh_question(question: Question, thread_id: str | None) -> PlannerState:
    """The input for a new question: the question as read, every per-question field reset,
    history kept."""
    return {
        "question": question.text,
        "parsed": question.to_json(),
        "thread_id": thread_id,
        "round": 0,
        "shape": "",
        "sub_queries": None,  # type: ignore[typeddict-item]
        "pending": [],
        "waiting": [],
        "searches": None,  # type: ignore[typeddict-item]
        "fused": None,  # type: ignore[typeddict-item]
        "passages": None,  # type: ignore[typeddict-item]
        "findings": None,  # type: ignore[typeddict-item]
        "verdicts": [],
        "errors": None,  # type: ignore[typeddict-item]
        "stopped": "",
        "short_answer": "",
        "answer": "",
        "citations": [],
        "sources": [],
        "citation_check": {},
        "draft": {},
        "final_choice": {},
    }


def question_of(state: Mapping[str, Any]) -> Question:
    """The question a state holds, as ``fresh_question`` read it (its record, not its words)."""
    return Question.from_json(state["parsed"])


@dataclass
class PlannerRun:
    """Per-run context: the models and searchers, the budgets, and the event sink.

    The run contract of one question is three ``RunScope``s, none of them ever changed
    (ARCHITECTURE.md, "The run contract"): ``scope``, the question's root (every call,
    ``AskResult.llm_calls``; the deadline plus one LLM timeout); ``rounds``, its child for
    everything before the answer (``max_llm_calls - 1`` calls, the deadline); and
    ``answer_scope()``, its other child, the one call kept for the answer.
    """

    chat: BaseChatModel
    searchers: dict[str, Searcher]
    planner: PlannerSettings
    budgets: BudgetSettings
    tracker: UsageTracker
    llm_timeout_s: float = DEFAULT_LLM_TIMEOUT_S
    deadline_s: float = DEFAULT_DEADLINE_S
    started: float = field(default_factory=time.monotonic)
    events: list[TraceEvent] = field(default_factory=list)
    scope: RunScope = field(init=False)
    rounds: RunScope = field(init=False)

    def __post_init__(self) -> None:
        self.scope = RunScope(  # no allowance of its own: its children's add up to the cap
            deadline_s=self.deadline_s + self.llm_timeout_s,
            llm_timeout_s=self.llm_timeout_s,
            started=self.started,
        )
        self.rounds = RunScope(
            max_llm_calls=max(0, self.budgets.max_llm_calls - 1),
            deadline_s=self.deadline_s,
            llm_timeout_s=self.llm_timeout_s,
            parent=self.scope,
            started=self.started,
        )

    def answer_scope(self) -> RunScope:
        """The answer's one call: a child of the root, so it is there however much the rounds
        spent, and given the time left or one LLM timeout, whichever is longer (an answer
        started at the deadline still gets its full call; the root's grace covers it)."""
        return self.scope.child(
            max_llm_calls=1, deadline_s=max(self.remaining_s(), self.llm_timeout_s)
        )

    def remaining_s(self) -> float:
        """The time left before the question's deadline (the rounds' scope's)."""
        return self.rounds.remaining_s()

    def search_time_left(self) -> float:
        """Searching stops early enough to leave the answer step a share of the deadline."""
        reserve = min(ANSWER_RESERVE_MAX_S, ANSWER_RESERVE_SHARE * self.deadline_s)
        return self.remaining_s() - reserve
