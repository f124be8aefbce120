"""The ``verify`` node: routes without a call while it can (ready hops go out, all queries
supported means the evidence suffices); otherwise one call judges and names the follow-ups,
and follow-ups that ask what a finding already answers are dropped. Every loop has a budget."""

from __future__ import annotations

import re
import time
from typing import Any, Literal

from langgraph.runtime import Runtime
from langgraph.types import Command
from pydantic import BaseModel, Field

import prompts
from agent.planner.queries import (
    MAX_QUERIES_PER_CALL,
    active_queries,
    clean_queries,
    ready_queries,
    sends,
    similar_queries,
    unanswered_queries,
)
from agent.planner.state import (
    PlannerRun,
    PlannerState,
    SubQuery,
    query_key,
)
from agent.planner.trace import emit, sub_report
from searchers.passages import focus_text
from searchers.searcher import BudgetExceeded
from searchers.structured_calls import ask

VERIFY_MAX_TOKENS = 160
# A plan's hops go out one round each, so a 4-hop chain needs 4 rounds; ``max_rounds`` bounds
# the follow-up rounds, and planned hops may run this many rounds past it (the LLM-call cap and
# the deadline still bound them). Measured on MuSiQue before this: 6 of 10 questions stopped on
# max_rounds with planned hops unsearched.
HOP_EXTRA_ROUNDS = 2


_ECHO = re.compile(r"\s*->.*$|\bNOT FOUND\b")


class NextStep(BaseModel):
    sufficient: bool
    queries: list[str] = Field(
        description="new search queries for what is missing; none if sufficient",
        max_length=MAX_QUERIES_PER_CALL,
    )


def _findings_text(state: PlannerState, chars: int) -> str:
    """What the merged verify/supplement call reads: each query with its supported answer or
    NOT FOUND (with summaries ablated, its passages trimmed around the query)."""
    lines = []
    passages = state.get("passages", {})
    for sub in active_queries(state):
        summary = state["summaries"][sub["id"]]
        if summary.get("skipped") and not summary.get("summary") and summary["sources"]:
            lines.append(f"- {sub['query']} -> passages:")
            for pid in summary["sources"]:
                if pid in passages:
                    text = focus_text(
                        passages[pid]["text"], chars, sub["query"], passages[pid]["title"]
                    )
                    lines.append(f"    {passages[pid]['title']}: {text}")
            continue
        said = summary["summary"] if summary.get("supported") else "NOT FOUND"
        lines.append(f"- {sub['query']} -> {said}")
    return "\n".join(lines)


def _needed(sub_id: str, subs: dict[str, SubQuery]) -> bool:
    """Whether a planned query's answer is filled into another query (``#1``)."""
    return any(sub_id in q.get("needs", []) for q in subs.values())


def _follow_ups(raw: list[str], state: PlannerState, room: int) -> tuple[list[SubQuery], list[str]]:
    """New follow-up queries and the ones dropped: already asked, or asking what a supported
    finding already answers. Each follow-up names the open query it asks again, if any."""
    subs = state.get("sub_queries", {})
    summaries = state.get("summaries", {})
    asked = {q["key"] for q in subs.values()}
    answered = [subs[q] for q, s in summaries.items() if s.get("supported")]
    open_queries = unanswered_queries(state)
    kept: list[SubQuery] = []
    dropped: list[str] = []
    start = len(subs)
    # the model sometimes echoes the findings' format back ("q -> answer", "NOT FOUND")
    raw = [_ECHO.sub("", str(q)) for q in raw]
    for query, key in clean_queries(raw, set(asked), MAX_QUERIES_PER_CALL):
        if any(similar_queries(query, a["query"]) for a in answered) or len(kept) >= room:
            dropped.append(query)
            continue
        target = max(
            open_queries,
            key=lambda o: len(set(query_key(o["query"]).split()) & set(key.split())),
            default=None,
        )
        overlap = target and set(query_key(target["query"]).split()) & set(key.split())
        if target and similar_queries(query, state["question"]) and _needed(target["id"], subs):
            # the question asked again stands in for no hop that others wait on: its answer
            # filled into "first performance in #1" would make the city the band (measured on
            # the demo question: "Tulsa, Oklahoma" became the band of two waiting hops)
            overlap = set()
        kept.append(
            SubQuery(
                id=f"q{start + len(kept) + 1}",
                query=query,
                round=0,
                origin="supplement",
                key=key,
                needs=[],
                replaces=target["id"] if target and overlap else None,
            )
        )
    proposed = {" ".join(str(q).split()) for q in raw} - {q["query"] for q in kept}
    dropped += sorted(p for p in proposed if p and p not in dropped)
    return kept, dropped


def _stop_reason(state: PlannerState, run: PlannerRun, rnd: int, *, hops: bool = False) -> str:
    """Why no further round may run, or "". Planned queries that wait for an answer are
    already counted in ``max_sub_queries``: sending them (``hops``) adds none."""
    if rnd >= run.budgets.max_rounds + (HOP_EXTRA_ROUNDS if hops else 0):
        return "max_rounds"
    if run.rounds.out_of_calls():
        return "budget_llm_calls"
    if run.search_time_left() <= 0:
        return "deadline"
    if not hops and len(state.get("sub_queries", {})) >= run.budgets.max_sub_queries:
        return "max_sub_queries"
    return ""


async def verify(state: PlannerState, runtime: Runtime[PlannerRun]) -> Command[Literal["answer"]]:
    """Decide the next step, spending a call only when a query is still open.

    1. Queries that waited for an answer now known go out with it filled in (no call).
    2. Every query has a supported finding: the evidence suffices (no call). The model's own
       "sufficient" is never asked here: the local model says yes to almost anything.
    3. Otherwise one call judges the findings and names the follow-ups; a follow-up asking
       for what a supported finding already answers is not sent. A planned hop whose earlier
       hop found nothing waits for the follow-up that answers it (``ready_queries``); when no
       follow-up can be asked, it is never searched and the chain stays open.
    """
    run = runtime.context
    cfg = run.planner
    started = time.monotonic()
    rnd = state.get("round", 1)
    ready, still_waiting, blocked = ready_queries(state)
    open_queries = unanswered_queries(state)
    subs = state.get("sub_queries", {})
    verdict: dict[str, Any] = {
        "round": rnd,
        "llm_says": None,
        "open": [q["query"] for q in open_queries],
        "missing": "; ".join(q["query"] for q in open_queries)[:300],
        # planned hops held back: a query they build on found nothing (yet)
        "blocked": [subs[qid]["query"] for qid in blocked],
    }
    errors: list[str] = []
    new: list[SubQuery] = []
    dropped: list[str] = []
    stopped = ""
    limit_reason = _stop_reason(state, run, rnd)
    hop_limit = _stop_reason(state, run, rnd, hops=True)
    if ready and not hop_limit:
        new = ready
        verdict.update(sufficient=False, reason="the answers a planned query needs are known")
    elif ready:
        stopped = hop_limit
        verdict.update(sufficient=False, reason="planned queries left unsearched")
    elif cfg.summarize and not open_queries:
        stopped = "sufficient"
        verdict.update(sufficient=True, reason="every atomic query has a supported finding")
    elif not cfg.supplement:
        stopped = "no_supplement"
        verdict.update(sufficient=False, reason="supplement disabled")
    elif limit_reason:
        stopped = limit_reason
        verdict.update(sufficient=False, reason="open queries, but a limit was reached")
    else:
        # one follow-up per open query: more only multiplies searches and findings
        room = min(
            run.budgets.max_sub_queries - len(state.get("sub_queries", {})),
            max(1, len(open_queries)),
        )
        limit = max(1, min(MAX_QUERIES_PER_CALL, room))
        try:
            reply = await ask(
                run.chat,
                NextStep,
                prompts.render(
                    "verify",
                    question=state["question"],
                    findings=_findings_text(state, cfg.passage_chars),
                    max_queries=limit,
                ),
                scope=run.rounds,
                step="verify",
                max_tokens=VERIFY_MAX_TOKENS,
            )
        except BudgetExceeded as exc:
            reply = None
            stopped = exc.reason
            verdict.update(sufficient=False, reason=exc.reason)
        if reply is not None:
            if reply.value is None:
                errors.append(f"verify: {reply.error}")
                stopped = "no_new_queries"
                verdict.update(sufficient=False, reason="the judgement failed")
            else:
                says = reply.value.sufficient
                verdict["llm_says"] = says
                if says and not cfg.summarize:  # with no findings, the model's word is all
                    stopped = "sufficient"
                    verdict.update(sufficient=True, reason="the model judged the passages")
                else:
                    new, dropped = _follow_ups(reply.value.queries, state, room)
                    verdict.update(
                        sufficient=False,
                        reason="open queries: the model named follow-ups"
                        if new
                        else "open queries, and no new follow-up",
                    )
                    if not new:
                        stopped = "no_new_queries"
    verdict["stopped"] = stopped
    verdict["follow_ups"] = [q["query"] for q in new]
    emit(runtime, "verify", verdict, rnd, (time.monotonic() - started) * 1000)
    update: dict[str, Any] = {
        "verdicts": [*state.get("verdicts", []), verdict],
        "errors": errors,
    }
    if stopped or not new:
        return Command(goto="answer", update={**update, "stopped": stopped or "no_new_queries"})
    nxt = rnd + 1
    for sub in new:
        sub["round"] = nxt
    emit(
        runtime,
        "supplement",
        {
            "sub_queries": [sub_report(q) | {"replaces": q.get("replaces")} for q in new],
            "origin": "hop" if ready else "follow_up",
            "dropped": dropped,
            "errors": [],
        },
        nxt,
        0.0,
    )
    update.update(
        round=nxt,
        sub_queries={q["id"]: q for q in new},
        pending=[q["id"] for q in new],
        waiting=still_waiting if ready else state.get("waiting", []),
    )
    return Command(goto=sends(new, run), update=update)
