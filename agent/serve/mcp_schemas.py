"""The MCP tools' results as typed records: each becomes the tool's ``outputSchema``, so an MCP
client (and the model behind it) knows every field before it calls.

They are projections of the records the rest of hoptree already hands out (``AskResult``,
``SearchResult``, ``Hit``), with the same field names as ``hoptree ask --json`` and the HTTP
API, trimmed to what an agent calling a tool needs: a cited answer points at passages by id and
title, and the ``read_passage`` tool (or the ``hoptree://passage/{id}`` resource) fetches the
text of the ones it wants to read. ``CitationOut`` is made from ``Citation``'s own fields, so a
field added to the citation reaches MCP without a second definition to keep in step.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import MISSING, fields
from typing import Any, Literal, get_type_hints

from pydantic import BaseModel, Field, create_model

from agent.results import AskResult, Citation
from searchers.passages import Hit, Passage, page_of
from searchers.searcher import SearchResult


def projection(
    record: type[Any], name: str, *, omit: Collection[str], notes: Mapping[str, str]
) -> type[BaseModel]:
    """A pydantic model of a dataclass's fields but ``omit``, with their types, defaults and
    order, each described by ``notes`` where the tool's schema needs a word."""
    types = get_type_hints(record)
    return create_model(
        name,
        **{
            f.name: (
                types[f.name],
                Field(... if f.default is MISSING else f.default, description=notes.get(f.name)),
            )
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


class SubQueryOut(BaseModel):
    id: str
    query: str = Field(description="the atomic query as searched")
    round: int
    finding: str = Field(description="the answer span its passages hold; empty when unsupported")
    answered: bool
    passage_ids: list[str] = Field(description="the passages found for it, best first")


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


class AskOutput(BaseModel):
    question: str
    short_answer: str = Field(description="a span of the evidence, or yes/no")
    answer: str = Field(description="the long answer with [n] citation marks")
    citations: list[CitationOut]
    sub_queries: list[SubQueryOut] = Field(description="the plan: one entry per atomic query")
    llm_calls: int
    prompt_tokens: int
    completion_tokens: int
    stopped: str = Field(description="why searching stopped (sufficient, max_rounds, ...)")
    degraded: bool = Field(description="a step failed or a budget cut the search short")
    degraded_reasons: list[str]
    thread_id: str | None = None
    seconds: float
    searchers: list[str] = Field(
        default_factory=list, description="the searchers the planner sent its queries to"
    )
    draft: DraftOut | None = Field(
        None, description="the one-call draft answer that came first; null with the draft off"
    )
    final_choice: FinalChoiceOut | None = Field(
        None, description="when the plan ran after a draft: which answer won and why"
    )
    first_answer_s: float | None = Field(
        None, description="seconds from the question to the first cited answer (the draft's)"
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


def ask_output(result: AskResult) -> AskOutput:
    return AskOutput(
        question=result.question,
        short_answer=result.short_answer,
        answer=result.answer,
        citations=[CitationOut.model_validate(c.to_json()) for c in result.citations],
        sub_queries=[
            SubQueryOut(
                id=q.id,
                query=q.query,
                round=q.round,
                finding=q.summary,
                answered=q.answered,
                passage_ids=q.passage_ids,
            )
            for q in result.sub_queries
        ],
        llm_calls=result.llm_calls,
        prompt_tokens=result.prompt_tokens,
        completion_tokens=result.completion_tokens,
        stopped=result.stopped,
        degraded=result.degraded,
        degraded_reasons=result.degraded_reasons,
        thread_id=result.thread_id,
        seconds=round(result.seconds, 2),
        searchers=list(result.searchers),
        draft=None if result.draft is None else DraftOut.model_validate(result.draft),
        final_choice=None
        if result.final_choice is None
        else FinalChoiceOut.model_validate(result.final_choice),
        first_answer_s=None if result.first_answer_s is None else round(result.first_answer_s, 2),
    )


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
