"""The ``findings`` node: one reader call per query takes its answer span out of its passages
(``PlannerSettings.findings_call="free"``, the default: the draft's free reader over them
whole; ``"reader"``: one-call RAG's JSON reader over windows), or one call a round for all
(``"batched"``, LevelRAG's, in ``full``). A span counts only when a passage about the query's
subject holds it (``agent.checks.evidence.support``); a supported follow-up replaces the
finding it asked again. The records are the plan's to write (``Plan.new_finding``,
``Plan.findings_update``)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.runtime import Runtime
from pydantic import BaseModel, Field

import prompts
from agent.checks.evidence import support
from agent.planner.plan import Plan
from agent.planner.queries import MAX_QUERIES_PER_CALL
from agent.planner.state import FindingRecord, PlannerRun, PlannerState, SubQuery
from agent.planner.trace import emit
from searchers.passages import Hit, focus_text, numbered_passages
from searchers.reader import WHOLE_CHARS, ReaderReply, read_free_answer, read_short_answer
from searchers.searcher import BudgetExceeded, RunScope
from searchers.structured_calls import Reply, ask

MAX_FINDING_CHARS = 200
FINDINGS_MAX_TOKENS = 200

# The findings calls' usage step (``hoptree_step``): LevelRAG's word, kept because eval rows'
# ``steps``, ``AskResult.usage_by_step`` and the planner profiles are keyed by it.
FINDINGS_STEP = "summarize"


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


def _finding(
    sub: SubQuery, answer: str, cited: list[Hit], shown: list[Hit], *, skipped: bool
) -> FindingRecord:
    """A query's finding from the model's reply; ``answered`` means supported by its passages."""
    span = " ".join(answer.split())[:MAX_FINDING_CHARS]
    sources = support(
        span, [h.to_json() for h in cited], [h.to_json() for h in shown], sub["query"]
    )
    found = bool(sources)
    return Plan.new_finding(sub, span, sources, supported=found, answered=found, skipped=skipped)


async def read_query(
    chat: BaseChatModel,
    query: str,
    hits: list[Hit],
    chars: int,
    *,
    scope: RunScope,
    free: bool = False,
) -> Reply[ReaderReply]:
    """One query read by one-call RAG's reader over its passages, windowed as the findings
    call windows them (``findings_call="reader"``; ``benchmarks/results/findings-prompt.md``);
    or, ``free``, by the draft's free reader over the passages whole (``findings_call="free"``):
    on MuSiQue's tuning hops it read 46.7% right against 38.9% and restated the hop's subject
    4 times in 90 against 17 (``benchmarks/results/hop-reading.md``)."""
    if free:
        documents = [(h.passage.title, focus_text(h.passage.text, WHOLE_CHARS, query))
                     for h in hits]  # fmt: skip
        return await read_free_answer(chat, query, documents, scope=scope, step=FINDINGS_STEP)
    text = numbered_passages(hits, max_chars=chars, query=query, titled=True)
    return await read_short_answer(chat, query, text, scope=scope, step=FINDINGS_STEP)


async def _read_each(
    run: PlannerRun, asked: list[SubQuery], shown: dict[str, list[Hit]], errors: list[str]
) -> tuple[dict[int, QueryFinding], dict[int, Hit], bool]:
    """``findings_call="reader"``: each query asked as one-call RAG asks a question, one call
    per query (run at once; the server's slots take them in turn), over its passages windowed
    as the findings call windows them (``"free"``: the free reader, over them whole). The
    replies come back in the batched call's shape: the query's number, its span, and every
    passage it was shown (the support check then finds the one that holds the span). A query
    the budget refuses keeps no answer; ``called`` is true when any call was made."""
    chars = run.planner.passage_chars
    free = run.planner.findings_call == "free"
    by_number: dict[int, Hit] = {}
    numbers: dict[int, list[int]] = {}
    for i, sub in enumerate(asked, start=1):
        numbers[i] = []
        for hit in shown[sub["id"]]:
            by_number[len(by_number) + 1] = hit
            numbers[i].append(len(by_number))

    async def read(sub: SubQuery) -> Reply[ReaderReply] | BudgetExceeded:
        try:
            return await read_query(run.chat, sub["query"], shown[sub["id"]], chars,
                                    scope=run.rounds, free=free)  # fmt: skip
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


def _findings_of(
    subs: list[SubQuery],
    shown: dict[str, list[Hit]],
    replies: dict[int, QueryFinding],
    by_number: dict[int, Hit],
    *,
    called: bool,
) -> dict[str, FindingRecord]:
    """Each query's finding from the replies to the queries that had passages to read (numbered
    in that order); a query with no reply, or none asked, keeps an empty one."""
    asked = [sub for sub in subs if shown[sub["id"]]]
    findings: dict[str, FindingRecord] = {}
    for sub in subs:
        hits = shown[sub["id"]]
        item = replies.get(asked.index(sub) + 1) if sub in asked else None
        cited = [by_number[n] for n in (item.passages if item else []) if n in by_number]
        answer = item.answer if item else ""
        findings[sub["id"]] = _finding(sub, answer, cited, hits, skipped=not called)
    return findings


async def _call_findings(
    run: PlannerRun, asked: list[SubQuery], shown: dict[str, list[Hit]], errors: list[str]
) -> tuple[dict[int, QueryFinding], dict[int, Hit], bool]:
    """The findings call: every query of the round in one prompt, one reply per query."""
    text, by_number = _findings_prompt(asked, shown, run.planner.passage_chars)
    replies: dict[int, QueryFinding] = {}
    try:
        reply = await ask(
            run.chat,
            RoundFindings,
            prompts.render("findings", queries=text),
            scope=run.rounds,
            step=FINDINGS_STEP,
            max_tokens=FINDINGS_MAX_TOKENS,
        )
    except BudgetExceeded as exc:
        errors.append(f"summarize skipped: {exc.reason}")
        return replies, by_number, False
    if reply.value:
        for item in reply.value.findings:
            replies.setdefault(item.query, item)
    else:
        errors.append(f"summarize: {reply.error}")
    return replies, by_number, True


async def _model_findings(
    run: PlannerRun, subs: list[SubQuery], shown: dict[str, list[Hit]], errors: list[str]
) -> dict[str, FindingRecord]:
    """The findings step as configured: one call for the round (``findings_call="batched"``)
    or one reader call per query (``"reader"``, ``"free"``), over the queries that have
    passages."""
    asked = [sub for sub in subs if shown[sub["id"]]]
    replies: dict[int, QueryFinding] = {}
    by_number: dict[int, Hit] = {}
    called = False
    if asked and run.planner.findings_call in ("reader", "free"):
        replies, by_number, called = await _read_each(run, asked, shown, errors)
    elif asked:
        replies, by_number, called = await _call_findings(run, asked, shown, errors)
    return _findings_of(subs, shown, replies, by_number, called=called)


async def _passages_as_findings(
    run: PlannerRun, subs: list[SubQuery], shown: dict[str, list[Hit]], errors: list[str]
) -> dict[str, FindingRecord]:
    """The findings step ablated (``PlannerSettings.summarize`` off): no call, the passages are
    the finding."""
    return {
        sub["id"]: Plan.new_finding(
            sub,
            "",
            [h.id for h in shown[sub["id"]]],
            supported=False,
            answered=bool(shown[sub["id"]]),
            skipped=True,
        )
        for sub in subs
    }


async def read_findings(state: PlannerState, runtime: Runtime[PlannerRun]) -> dict[str, Any]:
    """Fuse each of this round's queries' results (``Plan.fused_hits``) and copy every answer
    span out of them; earlier rounds keep their findings unless a follow-up's replaces one."""
    run = runtime.context
    cfg = run.planner
    started = time.monotonic()
    plan = Plan.from_json(state)
    subs = [plan.sub_queries[qid] for qid in plan.pending]
    fused = {sub["id"]: plan.fused_hits(sub["id"], cfg.k) for sub in subs}
    shown = {qid: hits[: cfg.summary_passages] for qid, hits in fused.items()}
    errors: list[str] = []
    step = _model_findings if cfg.summarize else _passages_as_findings
    findings = await step(run, subs, shown, errors)
    ms = (time.monotonic() - started) * 1000
    for sub in subs:
        emit(runtime, "finding", dict(findings[sub["id"]]), sub["round"], ms / max(1, len(subs)))
    # a supported follow-up's finding replaces the one it asked again (``Plan.superseded``)
    return {**plan.findings_update(subs, findings, fused), "errors": errors}
