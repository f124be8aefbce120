"""The MCP tools' results as typed records: each becomes the tool's ``outputSchema``, so an MCP
client (and the model behind it) knows every field before it calls.

They are projections of the records the rest of hoptree already hands out (``AskResult``,
``SearchResult``, ``Hit``), with the same field names as ``hoptree ask --json`` and the HTTP
API, trimmed to what an agent calling a tool needs: a cited answer points at passages by id and
title, and the ``read_passage`` tool (or the ``hoptree://passage/{id}`` resource) fetches the
text of the ones it wants to read. ``CitationOut``, ``SubQueryOut`` and ``AskOutput`` are made
from ``Citation``'s, ``SubQueryReport``'s and ``AskResult``'s own fields (``projection``), and
``ask_output`` reads the result's one record (``AskResult.to_json``), so a field added to them
reaches MCP, schema and value, without a second definition to keep in step.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import MISSING, fields
from typing import Any, Literal, get_type_hints

from pydantic import BaseModel, Field, create_model

from agent.results import FINDING_NAMES, AskResult, Citation, SubQueryReport
from searchers.passages import Hit, Passage, page_of
from searchers.searcher import SearchResult


def projection(
    record: type[Any],
    name: str,
    *,
    omit: Collection[str],
    notes: Mapping[str, str],
    types: Mapping[str, Any] | None = None,
    rename: Mapping[str, str] | None = None,
    required: Collection[str] = (),
) -> type[BaseModel]:
    """A pydantic model of a dataclass's fields but ``omit``, with their types, defaults and
    order, each described by ``notes`` where the tool's schema needs a word. ``types`` gives a
    field the tool's own record in place of the dataclass's (a ``Citation`` becomes a
    ``CitationOut``); ``rename`` a field its name on the wire (``notes`` use that name);
    ``required`` fields are required although the dataclass gives them a default (every
    result has them; a client may count on them)."""
    hints = {**get_type_hints(record), **(types or {})}
    names = rename or {}

    def spec(f: Any) -> Any:
        wire = names.get(f.name, f.name)
        note = notes.get(wire)
        if wire in required or (f.default is MISSING and f.default_factory is MISSING):
            return Field(..., description=note)
        if f.default_factory is not MISSING:
            return Field(default_factory=f.default_factory, description=note)
        return Field(f.default, description=note)

    return create_model(
        name,
        **{
            names.get(f.name, f.name): (hints[f.name], spec(f))
            for f in fields(record)
            if f.name not in omit
        },
    )


# a citation without its text: read_passage fetches the passages an agent wants to read
CitationOut = projection(
    Citation,
    "CitationOut",
    omit={"text"},
    notes={
        "n": "the [n] mark in the cited answer",
        "id": "passage id: read it with read_passage",
        "page": "the PDF page the passage is from",
    },
)


class DraftDecisionOut(BaseModel):
    escalate: bool = Field(description="true: the plan ran after the draft")
    reason: str = Field(description="why the router planned, or let the draft stand")
    policy: str = Field(description="the router's policy: fitted, always, never (none: no draft)")


class DraftOut(BaseModel):
    """The one-call draft the person saw within seconds, before any plan (draft first)."""

    short_answer: str | None = Field(None, description="absent when no draft could be written")
    answer: str | None = Field(None, description="the draft's cited answer with [n] marks")
    citations: list[CitationOut] = Field(default_factory=list)
    seconds: float | None = Field(None, description="seconds from the question to the draft")
    signals: dict[str, Any] = Field(
        default_factory=dict, description="what the router read: shape, supported, empty, ..."
    )
    decision: DraftDecisionOut
    error: str | None = Field(None, description="why no draft could be written")


class FinalChoiceOut(BaseModel):
    source: Literal["draft", "plan"] = Field(description="which answer is the final one")
    reason: str


# The ``ask`` tool's result: the result's own record (``AskResult.to_json``) but what a tool
# caller needs no more of: the verdicts, cache counts, per-step profile and citation check are
# the trace's and the eval's; the shown passages' text is ``read_passage``'s; the errors are
# summed up in ``degraded_reasons``. Any other field of ``AskResult`` is in it.
MCP_OMITS = frozenset(
    {
        "verdicts",
        "llm_cache_hits",
        "cache_hit_prompt_tokens",
        "cache_hit_completion_tokens",
        "errors",
        "sources",
        "citation_check",
        "usage_by_step",
        "trace",
    }
)
# A query of the plan: where it stands, in the words of findings (``FINDING_NAMES``), without
# its searches (the trace's) and its chain's bookkeeping.
MCP_SUB_QUERY_OMITS = frozenset(
    {
        "origin",
        "searches",
        "summary_sources",
        "summary_skipped",
        "proposed",
        "needs",
        "replaces",
        "superseded_by",
    }
)

SubQueryOut = projection(
    SubQueryReport,
    "SubQueryOut",
    omit=MCP_SUB_QUERY_OMITS,
    rename=FINDING_NAMES,
    required={"passage_ids", "finding", "answered"},
    notes={
        "query": "the atomic query as searched",
        "finding": "the answer span its passages hold; empty when unsupported",
        "passage_ids": "the passages found for it, best first",
    },
)

AskOutput = projection(
    AskResult,
    "AskOutput",
    omit=MCP_OMITS,
    types={
        "citations": list[CitationOut],  # type: ignore[valid-type]  # a made model
        "sub_queries": list[SubQueryOut],  # type: ignore[valid-type]
        "stopped": str,  # the values are ``PlanStop``'s; an ``AgentLike`` may say more
        "draft": DraftOut | None,
        "final_choice": FinalChoiceOut | None,
    },
    required={"degraded", "degraded_reasons"},
    notes={
        "short_answer": "a span of the evidence, or yes/no",
        "answer": "the long answer with [n] citation marks",
        "sub_queries": "the plan: one entry per atomic query",
        "stopped": "why searching stopped (sufficient, max_rounds, ...)",
        "degraded": "a step failed or a budget cut the search short",
        "searchers": "the searchers the planner sent its queries to",
        "draft": "the one-call draft answer that came first; null with the draft off",
        "final_choice": "when the plan ran after a draft: which answer won and why",
        "first_answer_s": "seconds from the question to the first cited answer (the draft's)",
    },
)


class HitOut(BaseModel):
    id: str
    title: str
    score: float
    text: str
    page: int | None = Field(default=None, description="the PDF page the passage is from")


class AttemptOut(BaseModel):
    id: int
    operation: str = Field(description="original, rewrite, extend, emphasize, filter, hyde, ...")
    query: str = Field(description="what the engine received")
    parent: int | None = None
    hit_ids: list[str]
    sufficient: bool | None = Field(None, description="the verdict; None when not verified")
    note: str = ""


class SearchOutput(BaseModel):
    searcher: str
    query: str
    hits: list[HitOut]
    attempts: list[AttemptOut] = Field(description="every query tried, as a refinement tree")
    best_attempt: int | None
    sufficient: bool
    stopped: str
    llm_calls: int
    error: str | None = None


class RetrieveOutput(BaseModel):
    query: str
    retriever: str
    k: int
    hits: list[HitOut]


class SearcherInfo(BaseModel):
    name: str
    description: str
    requires: list[str] = Field(description="the indexes it needs (sparse, dense, tree)")
    in_planner: bool = Field(description="the planner of `ask` fans out to it")


class SearchersOutput(BaseModel):
    searchers: list[SearcherInfo]
    retrievers: list[str] = Field(description="what `retrieve` accepts")


class PassageOut(BaseModel):
    id: str
    title: str
    text: str
    metadata: dict[str, Any] = Field(default_factory=dict)


def ask_output(result: AskResult) -> BaseModel:
    """The ``ask`` tool's result (an ``AskOutput``): the result's record (``AskResult.to_json``)
    with its queries in the words of findings; what ``AskOutput`` leaves out is dropped as it
    is read."""
    record = result.to_json(with_trace=False, omit=MCP_OMITS)
    record["sub_queries"] = [q.finding_json() for q in result.sub_queries]
    return AskOutput.model_validate(record)


def hits_out(hits: list[Hit]) -> list[HitOut]:
    return [
        HitOut(id=h.id, title=h.title, score=h.score, text=h.text, page=page_of(h.passage.metadata))
        for h in hits
    ]


def search_output(result: SearchResult) -> SearchOutput:
    return SearchOutput(
        searcher=result.searcher,
        query=result.query,
        hits=hits_out(result.hits),
        attempts=[
            AttemptOut(
                id=a.id,
                operation=a.operation,
                query=a.query,
                parent=a.parent,
                hit_ids=a.hit_ids,
                sufficient=a.verdict.sufficient if a.verdict is not None else None,
                note=a.note,
            )
            for a in result.attempts
        ],
        best_attempt=result.best_attempt,
        sufficient=result.sufficient,
        stopped=result.stopped,
        llm_calls=result.llm_calls,
        error=result.error,
    )


def passage_output(passage: Passage) -> PassageOut:
    return PassageOut(
        id=passage.id, title=passage.title, text=passage.text, metadata=passage.metadata or {}
    )
