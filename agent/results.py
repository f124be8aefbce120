"""What the planner hands back: the answer, its citations, the plan tree and the trace events.

These records are the contract between the planner graph, the Python API, the CLI, the HTTP API
and the trace page. They are plain dataclasses with ``to_json``: stable field names, nothing that
needs the graph to be read. A cited passage is made here once, from its hit record
(``Citation.of``), and every front end hands out that record.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal, TypedDict, get_args

from searchers.passages import HitRecord, page_of, source_label
from searchers.searcher import BudgetReason

EventKind = Literal[
    "started",  # the question was accepted
    "decompose",  # atomic queries planned
    "search",  # one searcher finished one atomic query (its refinements included)
    "finding",  # one atomic query's finding: the answer span copied from its passages
    "verify",  # the findings were judged: stop, send waiting queries, or ask follow-ups
    "next_round",  # atomic queries sent in a new round (its planned hops, or follow-ups)
    "draft",  # the one-call draft was written and the router decided whether to plan
    "answer",  # the final answer was written
    "error",  # something failed; the run may go on degraded
    "result",  # the final result (streams end with it)
]


# Why the planner stopped searching (``AskResult.stopped``, the state's ``stopped``, each
# verdict's ``stopped``): written by ``agent.planner.verify`` (and by the draft when it stands),
# read by the answer step, ``degradation`` and every surface. The strings are the wire values.
PlanStop = Literal[
    "sufficient",  # every query has a supported finding (findings ablated: the model said so)
    "draft",  # the draft stood: the router ran no plan
    "no_supplement",  # queries stay open and follow-ups are switched off
    "no_new_queries",  # queries stay open and the judging call named no new follow-up
    "max_rounds",  # the rounds' limit (planned hops may run ``HOP_EXTRA_ROUNDS`` past it)
    "max_sub_queries",  # the plan holds as many queries as it may
    "deadline",  # too little time left for another round (the answer's share is kept)
    BudgetReason,  # the judging call itself was refused: calls ("budget_llm_calls") or time
]
PLAN_STOPS: tuple[PlanStop, ...] = get_args(PlanStop)


def answered_stop(stopped: PlanStop | Literal[""]) -> PlanStop:
    """Why a run that reached its answer stopped: verify's reason, or "sufficient" when verify
    never ran (nothing was sent to search, so nothing was left to look for)."""
    return stopped or "sufficient"


@dataclass
class TraceEvent:
    """One step of a run, as streamed to clients and kept in the result."""

    kind: EventKind
    data: dict[str, Any] = field(default_factory=dict)
    round: int = 0
    ms: float = 0.0
    at: float = field(default_factory=time.time)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "round": self.round,
            "ms": round(self.ms, 1),
            "at": round(self.at, 3),
            "data": self.data,
        }


class ShownSource(TypedDict):
    """A passage the answer step was shown as [n] (``AskResult.sources``; the cited ones are
    its ``Citation``s): the whole passage and, as ``shown``, the text the prompt held, trimmed
    around the question. The evaluation's contexts are the shown texts."""

    n: int
    id: str
    title: str
    text: str
    shown: str


def shown_source(hit: HitRecord, n: int, shown: str) -> ShownSource:
    """The passage shown as [n], from its hit record."""
    return {"n": n, "id": hit["id"], "title": hit["title"], "text": hit["text"], "shown": shown}


@dataclass
class Citation:
    """Source [n] of the cited answer: the passage the answer step showed as [n], whole, with
    the url and the PDF page its metadata gives.

    It is made once, by the answer step, from the passage's hit record (``of``), so the page is
    read where the passage is at hand. The planner's state holds its ``to_json`` (a thread's
    state is checkpointed as JSON) and the result reads it back (``from_json``); ``AskResult``,
    the HTTP API, the chat answer's "Sources:" list, the CLI and MCP's ``CitationOut`` (these
    fields but the text) all hand out this record."""

    n: int
    id: str
    title: str
    text: str
    url: str | None = None
    # the PDF page the passage was read from; None for other sources and for indexes built
    # before passages carried pages
    page: int | None = None

    @classmethod
    def of(cls, hit: HitRecord, n: int) -> Citation:
        """The citation of the passage shown as [n]."""
        metadata = hit.get("metadata") or {}
        return cls(
            n=n,
            id=hit["id"],
            title=hit["title"],
            text=hit["text"],
            url=metadata.get("url"),
            page=page_of(metadata),
        )

    @property
    def label(self) -> str:
        """What a person reads as the source: "title p. 7", or the title."""
        return source_label(self.title or self.id, self.page)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Citation:
        """The inverse of ``to_json``; a record written before citations had pages loads."""
        return cls(**data)


# The words a query's finding goes by on MCP and in the eval rows: ``SubQueryReport`` keeps
# LevelRAG's "summary", the HTTP API's and ``hoptree ask --json``'s keys since the first planner.
FINDING_NAMES = {
    "summary": "finding",
    "summary_sources": "finding_sources",
    "summary_skipped": "finding_skipped",
}


@dataclass
class SubQueryReport:
    """One atomic query of the plan: who searched it, what they found, what it answered."""

    id: str
    query: str
    round: int
    origin: Literal["decompose", "supplement"]
    searches: list[dict[str, Any]] = field(default_factory=list)  # SearchResult.to_json()
    passage_ids: list[str] = field(default_factory=list)  # fused, deduplicated
    summary: str = ""  # the finding: an answer span its passages hold ("" when unsupported)
    summary_sources: list[str] = field(default_factory=list)  # passage ids that hold it
    answered: bool = False  # the finding is supported by its passages
    summary_skipped: bool = False  # no findings call read it (no passages, ablation, budget)
    proposed: str = ""  # what the model wrote, supported or not
    needs: list[str] = field(default_factory=list)  # queries whose answers it was filled with
    replaces: str | None = None  # the open query this follow-up asked again
    superseded_by: str | None = None  # a later query's supported finding replaced this one

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def finding_json(self) -> dict[str, Any]:
        """``to_json`` in the words of findings (``FINDING_NAMES``): MCP's and the eval rows'."""
        return {FINDING_NAMES.get(k, k): v for k, v in self.to_json().items()}


@dataclass(frozen=True)
class DraftDecision:
    """The router's word on a draft: plan (``escalate``) or let the draft stand, and why."""

    escalate: bool
    reason: str
    policy: str  # the router's policy; "none" when no draft could be written

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, kw_only=True)
class Draft:
    """The one-call draft (``agent.planner.draft``): what the person saw within seconds, the
    router's decision on it, and what answering with it later needs without a call.

    The planner's state keeps ``to_record()`` (checkpoints are plain JSON) and every step reads
    it back with ``from_state``; ``to_json()`` is what a person sees (the ``draft`` event,
    ``AskResult.draft``): the reader's passages, its settling and its span are left out. A
    draft that could not be written (the call failed, nothing was found) has no
    ``short_answer``, an ``error`` and a decision to plan."""

    short_answer: str | None = None
    answer: str = ""  # the cited long answer, with [n] marks
    citations: list[Citation] = field(default_factory=list)
    seconds: float | None = None  # from the question to the draft
    signals: dict[str, Any] = field(default_factory=dict)  # ``escalation.Signals.as_dict``
    decision: DraftDecision | None = None
    error: str | None = None
    # not shown: the passages it was read from (hits) and shown as [n] (sources), the citation
    # check's report, whether its short answer is a span of them, and the span as written
    hits: list[HitRecord] = field(default_factory=list)
    sources: list[ShownSource] = field(default_factory=list)
    citation_check: dict[str, Any] = field(default_factory=dict)
    supported: bool = False
    written: str = ""

    @property
    def is_written(self) -> bool:
        """A draft was written: it has a short answer to stand on or to compare with."""
        return self.short_answer is not None

    @property
    def stands(self) -> bool:
        """The router let the draft stand: it is the answer and no plan runs."""
        return self.decision is not None and not self.decision.escalate

    def to_json(self) -> dict[str, Any]:
        """The draft as a person sees it."""
        out: dict[str, Any] = {}
        if self.is_written:
            out = {
                "short_answer": self.short_answer,
                "answer": self.answer,
                "citations": [c.to_json() for c in self.citations],
                "seconds": None if self.seconds is None else round(self.seconds, 2),
                "signals": dict(self.signals),
            }
        if self.decision is not None:
            out["decision"] = self.decision.to_json()
        if self.error is not None:
            out["error"] = self.error
        return out

    def to_record(self) -> dict[str, Any]:
        """Everything, for the planner's state."""
        return {
            **self.to_json(),
            "seconds": self.seconds,
            "hits": list(self.hits),
            "sources": list(self.sources),
            "citation_check": dict(self.citation_check),
            "supported": self.supported,
            "written": self.written,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Draft:
        """A draft from ``to_record`` or ``to_json`` (what a surface received)."""
        decision = data.get("decision")
        return cls(
            short_answer=data.get("short_answer"),
            answer=data.get("answer", ""),
            citations=[Citation.from_json(c) for c in data.get("citations", [])],
            seconds=data.get("seconds"),
            signals=dict(data.get("signals") or {}),
            decision=DraftDecision(**decision) if decision else None,
            error=data.get("error"),
            hits=list(data.get("hits", [])),
            sources=list(data.get("sources", [])),
            citation_check=dict(data.get("citation_check") or {}),
            supported=bool(data.get("supported", False)),
            written=str(data.get("written") or data.get("short_answer") or ""),
        )

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> Draft | None:
        """The draft the planner's state holds; None when the draft step wrote none (switched
        off, or a follow-up question)."""
        record = state.get("draft")
        return cls.from_json(record) if record else None


# A field whose seconds every surface gives to the hundredth (``AskResult.to_json``).
HUNDREDTHS = {"round": 2}


def _json_value(value: Any, digits: int | None) -> Any:
    """One field's JSON: a record by its own ``to_json``, a list item by item, a number rounded
    when its field says so."""
    if isinstance(value, list):
        return [_json_value(item, None) for item in value]
    if hasattr(value, "to_json"):
        return value.to_json()
    if digits is not None and value is not None:
        return round(value, digits)
    return value


@dataclass(kw_only=True)
class AskResult:
    """One answered question: the one record every surface hands out, or a part of it.

    ``to_json`` is the one conversion: every field, in this order, as JSON. The HTTP API and
    ``hoptree ask --json`` send it whole; the chat completion's ``hoptree`` extras
    (``agent.serve.openai_api``) and MCP's ``ask`` result (``agent.serve.mcp_schemas``, whose
    schema is made from these fields) leave some fields out; an eval row's ``planner`` record
    (``evals.pipelines.planner_record``) too. So a field added here reaches every surface unless
    a surface names it as one it leaves out."""

    question: str
    answer: str  # the cited long answer, with [n] marks
    short_answer: str  # what EM/F1 score
    citations: list[Citation]
    sub_queries: list[SubQueryReport]
    verdicts: list[dict[str, Any]]  # one per round: sufficient?, why, what is missing
    stopped: PlanStop  # why searching stopped
    llm_calls: int
    prompt_tokens: int
    completion_tokens: int
    # calls served from the LLM cache (counted in llm_calls, not in the tokens) and what they
    # cost when first made: the tokens above are what this question spent
    llm_cache_hits: int = 0
    cache_hit_prompt_tokens: int = 0
    cache_hit_completion_tokens: int = 0
    seconds: float = field(metadata=HUNDREDTHS)
    thread_id: str | None = None
    errors: list[str] = field(default_factory=list)
    # the passages the answer step was shown, numbered as [n] there (citations are a subset)
    sources: list[ShownSource] = field(default_factory=list)
    # the lexical check of the cited answer: sentences kept, re-cited, dropped; whether the
    # short answer is a span of the passages shown
    citation_check: dict[str, Any] = field(default_factory=dict)
    # a step timed out, failed, fell back or was skipped, or a budget cut the search short:
    # the answer is what could be found with less (``degraded_reasons`` say what)
    degraded: bool = False
    degraded_reasons: list[str] = field(default_factory=list)
    # per planner step (decompose, summarize, verify, answer...): calls, tokens, and the
    # server's prompt and decode milliseconds where it reports them; the profile of a question
    usage_by_step: dict[str, dict[str, Any]] = field(default_factory=dict)
    # the searchers the planner fanned out to (settings, --searcher, or the index's default:
    # sparse, dense and tree when it has one), so a result says what it was searched with
    searchers: list[str] = field(default_factory=list)
    # draft first (``PlannerSettings.draft``): the one-call draft as it reached the person
    # (answer, short_answer, citations, seconds since the question, the router's signals and
    # decision), and, when the plan ran, which answer won and why; None without a draft
    draft: Draft | None = None
    final_choice: dict[str, Any] | None = None
    # seconds from the question to the first cited answer the person saw: the draft's, or the
    # final answer's when there was no draft
    first_answer_s: float | None = field(default=None, metadata=HUNDREDTHS)
    # every step as it happened (last: the largest, and the one most surfaces leave out)
    trace: list[TraceEvent] = field(default_factory=list)

    def to_json(self, *, with_trace: bool = True, omit: Collection[str] = ()) -> dict[str, Any]:
        """The result as JSON, field by field in their order (``omit`` and, without
        ``with_trace``, the trace left out): the one conversion every surface reads."""
        left_out = {*omit, *(() if with_trace else ("trace",))}
        return {
            f.name: _json_value(getattr(self, f.name), f.metadata.get("round"))
            for f in fields(self)
            if f.name not in left_out
        }


# Stop reasons that mean the search was cut short, not finished.
CUT_SHORT: dict[PlanStop, str] = {
    "budget_llm_calls": "the LLM call budget ran out",
    "budget_deadline": "the deadline came",
    "deadline": "the deadline came",
}
MAX_NOTE_CHARS = 160


def degradation(errors: list[str], stopped: PlanStop | Literal[""]) -> list[str]:
    """Why an answer is degraded: every step that failed, timed out, fell back or was skipped
    (the run's errors), and a budget that cut the search short."""
    reasons = list(dict.fromkeys(errors))
    if stopped in CUT_SHORT:
        reasons.append(f"searching stopped early: {CUT_SHORT[stopped]}")
    return reasons


def degraded_note(reasons: list[str]) -> str:
    """The one short line a degraded answer carries, so a reader of the text alone knows."""
    if not reasons:
        return ""
    first = reasons[0] if len(reasons[0]) <= MAX_NOTE_CHARS else reasons[0][:MAX_NOTE_CHARS] + "…"
    more = f" (and {len(reasons) - 1} more)" if len(reasons) > 1 else ""
    return f"(Degraded answer: {first}{more}.)"
