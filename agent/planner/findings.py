"""The ``summarize`` node: one call per round copies each query's answer span out of its
passages (or one reader call per query, ``PlannerSettings.findings_call="reader"``). A span
counts only when a passage about the query's subject holds it
(``agent.checks.evidence.support``); a supported follow-up replaces the finding it asked again."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.runtime import Runtime
from pydantic import BaseModel, Field

import prompts
from agent.checks.evidence import support
from agent.planner.queries import MAX_QUERIES_PER_CALL
from agent.planner.state import (
    FindingRecord,
    PlannerRun,
    PlannerState,
    SubQuery,
)
from agent.planner.trace import emit
from searchers.fusion import fuse_results
from searchers.passages import Hit, numbered_passages
from searchers.reader import ReaderReply, read_short_answer
from searchers.searcher import BudgetExceeded, RunScope, SearchResult
from searchers.structured_calls import Reply, ask

MAX_FINDING_CHARS = 200


FINDINGS_MAX_TOKENS = 200


class QueryFinding(BaseModel):
    query: int = Field(description="the number of the query")
    answer: str = Field(description="the shortest answering span, copied; empty if not found")
    passages: list[int] = Field(description="numbers of the passages holding it", max_length=6)


class RoundFindings(BaseModel):
    findings: list[QueryFinding] = Field(max_length=MAX_QUERIES_PER_CALL * 2)


def _findings_prompt(
    subs: list[SubQuery], shown: dict[str, list[Hit]], chars: int
) -> tuple[str, dict[int, Hit]]:
    """One prompt for the round's queries, each with its passages; a passage shown under an
    earlier query keeps its number and is not repeated."""
    numbers: dict[str, int] = {}
    by_number: dict[int, Hit] = {}
    blocks: list[str] = []
    for i, sub in enumerate(subs, start=1):
        lines = [f"Query {i}: {sub['query']}", "Passages:"]
        for hit in shown[sub["id"]]:
            if hit.id in numbers:
                lines.append(f"[{numbers[hit.id]}] (shown above)")
                continue
            n = len(numbers) + 1
            numbers[hit.id] = n
            by_number[n] = hit
            text = numbered_passages([hit], max_chars=chars, query=sub["query"], titled=True)
            lines.append(f"[{n}]" + text.removeprefix("[1]"))
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks), by_number


def _record(
    sub: SubQuery, span: str, sources: list[str], *, supported: bool, answered: bool, skipped: bool
) -> FindingRecord:
    """A query's finding as state keeps it: ``summary`` is the span only when supported,
    ``proposed`` what the model said either way (the trace shows both)."""
    return {
        "id": sub["id"],
        "query": sub["query"],
        "summary": span if supported else "",
        "proposed": span,
        "sources": sources,
        "answered": answered,
        "supported": supported,
        "skipped": skipped,
        "superseded_by": None,
    }


def _finding(
    sub: SubQuery, answer: str, cited: list[Hit], shown: list[Hit], *, skipped: bool
) -> FindingRecord:
    """A query's finding from the model's reply; ``answered`` means supported by its passages."""
    span = " ".join(answer.split())[:MAX_FINDING_CHARS]
    sources = support(
        span, [h.to_json() for h in cited], [h.to_json() for h in shown], sub["query"]
    )
    found = bool(sources)
    return _record(sub, span, sources, supported=found, answered=found, skipped=skipped)


async def read_query(
    chat: BaseChatModel, query: str, hits: list[Hit], chars: int, *, scope: RunScope
) -> Reply[ReaderReply]:
    """One query read by one-call RAG's reader over its passages, windowed as the findings
    call windows them (``findings_call="reader"``; ``benchmarks/findings_prompt_ab.py``)."""
    text = numbered_passages(hits, max_chars=chars, query=query, titled=True)
    return await read_short_answer(chat, query, text, scope=scope, step="summarize")


async def _read_each(
    run: PlannerRun, asked: list[SubQuery], shown: dict[str, list[Hit]], errors: list[str]
) -> tuple[dict[int, QueryFinding], dict[int, Hit], bool]:
    """``findings_call="reader"``: each query asked as one-call RAG asks a question, one call
    per query (run at once; the server's slots take them in turn), over its passages windowed
    as the findings call windows them. The replies come back in the batched call's shape: the
    query's number, its span, and every passage it was shown (the support check then finds the
    one that holds the span). A query the budget refuses keeps no answer; ``called`` is true
    when any call was made."""
    chars = run.planner.passage_chars
    by_number: dict[int, Hit] = {}
    numbers: dict[int, list[int]] = {}
    for i, sub in enumerate(asked, start=1):
        numbers[i] = []
        for hit in shown[sub["id"]]:
            by_number[len(by_number) + 1] = hit
            numbers[i].append(len(by_number))

    async def read(sub: SubQuery) -> Reply[ReaderReply] | BudgetExceeded:
        try:
            return await read_query(
                run.chat, sub["query"], shown[sub["id"]], chars, scope=run.rounds
            )
        except BudgetExceeded as exc:
            return exc

    results = await asyncio.gather(*(read(sub) for sub in asked))
    replies: dict[int, QueryFinding] = {}
    called = False
    for i, (sub, result) in enumerate(zip(asked, results, strict=True), start=1):
        if isinstance(result, BudgetExceeded):
            errors.append(f"summarize skipped {sub['id']}: {result.reason}")
            continue
        called = True
        if result.value is None:
            errors.append(f"summarize {sub['id']}: {result.error}")
            continue
        replies[i] = QueryFinding(query=i, answer=result.value.answer, passages=numbers[i][:6])
    return replies, by_number, called


async def summarize(state: PlannerState, runtime: Runtime[PlannerRun]) -> dict[str, Any]:
    """Fuse each of this round's queries' results and copy every answer span out of them in
    one call; earlier rounds keep their findings unless a follow-up's replaces one."""
    run = runtime.context
    cfg = run.planner
    started = time.monotonic()
    searches = state.get("searches", {})
    subs = [state["sub_queries"][qid] for qid in state.get("pending", [])]
    fused: dict[str, list[Hit]] = {}
    for sub in subs:
        records = [r for key, r in searches.items() if key.split("|", 1)[0] == sub["id"]]
        fused[sub["id"]] = fuse_results([SearchResult.from_json(r) for r in records], k=cfg.k)
    shown = {qid: hits[: cfg.summary_passages] for qid, hits in fused.items()}
    errors: list[str] = []
    replies: dict[int, QueryFinding] = {}
    asked = [sub for sub in subs if shown[sub["id"]]]
    by_number: dict[int, Hit] = {}
    called = False
    if cfg.summarize and asked and cfg.findings_call == "reader":
        replies, by_number, called = await _read_each(run, asked, shown, errors)
    elif cfg.summarize and asked:
        text, by_number = _findings_prompt(asked, shown, cfg.passage_chars)
        try:
            reply = await ask(
                run.chat,
                RoundFindings,
                prompts.render("findings", queries=text),
                scope=run.rounds,
                step="summarize",
                max_tokens=FINDINGS_MAX_TOKENS,
            )
            called = True
            if reply.value:
                for item in reply.value.findings:
                    replies.setdefault(item.query, item)
            else:
                errors.append(f"summarize: {reply.error}")
        except BudgetExceeded as exc:
            errors.append(f"summarize skipped: {exc.reason}")
    summaries: dict[str, FindingRecord] = {}
    for sub in subs:
        hits = shown[sub["id"]]
        if not cfg.summarize:  # ablation: the passages are the finding
            ids = [h.id for h in hits]
            summary = _record(sub, "", ids, supported=False, answered=bool(hits), skipped=True)
        else:
            item = replies.get(asked.index(sub) + 1) if sub in asked else None
            cited = [by_number[n] for n in (item.passages if item else []) if n in by_number]
            summary = _finding(sub, item.answer if item else "", cited, hits, skipped=not called)
        summaries[sub["id"]] = summary
    # a supported follow-up replaces the finding of the query it asks again
    for sub in subs:
        old = sub.get("replaces")
        if old and summaries[sub["id"]]["supported"] and old in state.get("summaries", {}):
            summaries[old] = {**state["summaries"][old], "superseded_by": sub["id"]}
    ms = (time.monotonic() - started) * 1000
    for sub in subs:
        emit(runtime, "summarize", summaries[sub["id"]], sub["round"], ms / max(1, len(subs)))
    passages = {h.id: h.to_json() for hits in fused.values() for h in hits}
    return {
        "summaries": summaries,
        "fused": {qid: [h.id for h in hits] for qid, hits in fused.items()},
        "passages": passages,
        "errors": errors,
    }
