"""The ``verify`` node: what the plan does next, without a call while it can (``verify`` lists
the steps in order). Every loop has a budget."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any, Literal

from langgraph.runtime import Runtime
from pydantic import BaseModel, Field

import prompts
from agent.planner.plan import Plan
from agent.planner.queries import MAX_QUERIES_PER_CALL, clean_queries
from agent.planner.state import PlannerRun, PlannerState, SubQuery
from agent.planner.trace import emit, sub_report
from agent.results import PlanStop
from agent.rules.query_text import query_key, similar_queries
from agent.settings import PlannerSettings
from searchers.passages import focus_text
from searchers.searcher import BudgetExceeded
from searchers.structured_calls import ask

VERIFY_MAX_TOKENS = 160
# A plan's hops go out one round each, so a 4-hop chain needs 4 rounds; ``max_rounds`` bounds
# the follow-up rounds, and planned hops may run this many rounds past it.
HOP_EXTRA_ROUNDS = 2


_ECHO = re.compile(r"\s*->.*$|\bNOT FOUND\b")


class NextStep(BaseModel):
    sufficient: bool
    queries: list[str] = Field(
        description="new search queries for what is missing; none if sufficient",
        max_length=MAX_QUERIES_PER_CALL,
    )


def _findings_text(plan: Plan, chars: int) -> str:
    """What the merged verify/supplement call reads: each query with its supported answer or
    NOT FOUND (with the findings step ablated, its passages trimmed around the query)."""
    lines = []
    passages = plan.passages
    for sub in plan.active():
        unread = plan.unread_sources(sub["id"])
        if unread:
            lines.append(f"- {sub['query']} -> passages:")
            for pid in unread:
                if pid in passages:
                    text = focus_text(
                        passages[pid]["text"], chars, sub["query"], passages[pid]["title"]
                    )
                    lines.append(f"    {passages[pid]['title']}: {text}")
            continue
        said = plan.own_finding(sub["id"])
        lines.append(f"- {sub['query']} -> {'NOT FOUND' if said is None else said}")
    return "\n".join(lines)


def _target(query: str, key: str, plan: Plan, open_queries: list[SubQuery]) -> str | None:
    """The open query a follow-up asks again: the one sharing most of its words, if any. The
    question asked again stands in for no hop that others wait on: its answer filled into
    "first performance in #1" would make the city the band."""
    words = set(key.split())
    target = max(
        open_queries,
        key=lambda o: len(set(query_key(o["query"]).split()) & words),
        default=None,
    )
    if target is None or not set(query_key(target["query"]).split()) & words:
        return None
    if similar_queries(query, plan.question.text) and plan.needed(target["id"]):
        return None
    return target["id"]


def _follow_ups(raw: list[str], plan: Plan, room: int) -> tuple[list[SubQuery], list[str]]:
    """New follow-up queries and the ones dropped: already asked, or asking what a supported
    finding already answers. Each follow-up names the open query it asks again, if any."""
    answered = plan.answered()
    open_queries = plan.unanswered()
    kept: list[SubQuery] = []
    dropped: list[str] = []
    # the model sometimes echoes the findings' format back ("q -> answer", "NOT FOUND")
    raw = [_ECHO.sub("", str(q)) for q in raw]
    for query, key in clean_queries(raw, plan.asked_keys(), MAX_QUERIES_PER_CALL):
        if any(similar_queries(query, a["query"]) for a in answered) or len(kept) >= room:
            dropped.append(query)
            continue
        replaces = _target(query, key, plan, open_queries)
        kept.append(plan.follow_up(query, key, replaces, added=len(kept)))
    proposed = {" ".join(str(q).split()) for q in raw} - {q["query"] for q in kept}
    dropped += sorted(p for p in proposed if p and p not in dropped)
    return kept, dropped


def _stop_reason(
    plan: Plan, run: PlannerRun, rnd: int, *, hops: bool = False
) -> PlanStop | Literal[""]:
    """Why no further round may run, or "". Planned queries that wait for an answer are
    already counted in ``max_sub_queries``: sending them (``hops``) adds none."""
    if rnd >= run.budgets.max_rounds + (HOP_EXTRA_ROUNDS if hops else 0):
        return "max_rounds"
    if run.rounds.out_of_calls():
        return "budget_llm_calls"
    if run.search_time_left() <= 0:
        return "deadline"
    if not hops and len(plan.sub_queries) >= run.budgets.max_sub_queries:
        return "max_sub_queries"
    return ""


@dataclass(frozen=True)
class Judge:
    """Who may say the evidence suffices, chosen once from the settings: the findings (every
    query has a supported one: no call), or, with the findings step ablated (LevelRAG's
    no-summarize), the model's own word on the passages, since there are no findings to
    check."""

    by_findings: bool

    @classmethod
    def of(cls, cfg: PlannerSettings) -> Judge:
        return cls(by_findings=cfg.summarize)

    def settled(self, open_queries: list[SubQuery]) -> bool:
        """The plan suffices without a call."""
        return self.by_findings and not open_queries

    def takes_the_models_word(self, says: bool) -> bool:
        """The judging call's "sufficient" ends the run (never when findings can be checked:
        the local model says yes to almost anything)."""
        return says and not self.by_findings


@dataclass
class Decision:
    """What verify decided: stop (``stopped`` says why) or search ``new`` queries next."""

    sufficient: bool
    reason: str
    stopped: PlanStop | Literal[""] = ""  # "" goes on: the verdict's "stopped" says so too
    new: list[SubQuery] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    llm_says: bool | None = None
    errors: list[str] = field(default_factory=list)


def _decide_without_call(
    plan: Plan, run: PlannerRun, rnd: int, ready: list[SubQuery], open_queries: list[SubQuery]
) -> Decision | None:
    """The decisions that need no call, in order: ready hops go out (while the hop limits
    allow), every finding supported suffices, and the switches and limits stop the run. None
    when the findings must be judged."""
    hop_limit = _stop_reason(plan, run, rnd, hops=True)
    if ready and not hop_limit:
        return Decision(False, "the answers a planned query needs are known", new=ready)
    if ready:
        return Decision(False, "planned queries left unsearched", stopped=hop_limit)
    if Judge.of(run.planner).settled(open_queries):
        return Decision(True, "every atomic query has a supported finding", stopped="sufficient")
    if not run.planner.supplement:
        return Decision(False, "supplement disabled", stopped="no_supplement")
    limit_reason = _stop_reason(plan, run, rnd)
    if limit_reason:
        return Decision(False, "open queries, but a limit was reached", stopped=limit_reason)
    return None


async def _judge(plan: Plan, run: PlannerRun, open_queries: list[SubQuery]) -> Decision:
    """One call judges the findings and names follow-ups (one per open query: more only
    multiplies searches and findings); those asking what a finding answers are dropped."""
    room = min(run.budgets.max_sub_queries - len(plan.sub_queries), max(1, len(open_queries)))
    limit = max(1, min(MAX_QUERIES_PER_CALL, room))
    try:
        reply = await ask(
            run.chat,
            NextStep,
            prompts.render(
                "verify",
                question=plan.question.text,
                findings=_findings_text(plan, run.planner.passage_chars),
                max_queries=limit,
            ),
            scope=run.rounds,
            step="verify",
            max_tokens=VERIFY_MAX_TOKENS,
        )
    except BudgetExceeded as exc:
        return Decision(False, exc.reason, stopped=exc.reason)
    if reply.value is None:
        return Decision(
            False,
            "the judgement failed",
            stopped="no_new_queries",
            errors=[f"verify: {reply.error}"],
        )
    says = reply.value.sufficient
    if Judge.of(run.planner).takes_the_models_word(says):
        return Decision(True, "the model judged the passages", "sufficient", llm_says=says)
    new, dropped = _follow_ups(reply.value.queries, plan, room)
    if new:
        reason = "open queries: the model named follow-ups"
        return Decision(False, reason, new=new, dropped=dropped, llm_says=says)
    reason = "open queries, and no new follow-up"
    return Decision(False, reason, "no_new_queries", dropped=dropped, llm_says=says)


def _verdict(
    rnd: int, decision: Decision, open_queries: list[SubQuery], blocked: list[SubQuery]
) -> dict[str, Any]:
    """The round's verdict as the trace and the result report it (its keys in this order)."""
    return {
        "round": rnd,
        "llm_says": decision.llm_says,
        "open": [q["query"] for q in open_queries],
        "missing": "; ".join(q["query"] for q in open_queries)[:300],
        # planned hops held back: a query they build on found nothing (yet)
        "blocked": [q["query"] for q in blocked],
        "sufficient": decision.sufficient,
        "reason": decision.reason,
        "stopped": decision.stopped,
        "follow_ups": [q["query"] for q in decision.new],
    }


async def verify(state: PlannerState, runtime: Runtime[PlannerRun]) -> dict[str, Any]:
    """Decide the next step, spending a call only when a query is still open.

    1. Queries that waited for an answer now known go out with it filled in (no call).
    2. Every query has a supported finding: the evidence suffices (no call). The model's own
       "sufficient" is never asked here: the local model says yes to almost anything.
    3. Otherwise one call judges the findings and names the follow-ups; a follow-up asking
       for what a supported finding already answers is not sent. A planned hop whose earlier
       hop found nothing waits for the follow-up that answers it (``Plan.ready``); when no
       follow-up can be asked, it is never searched and the chain stays open.

    Where the run goes next is ``routing.after_verify``: the answer once ``stopped`` is set,
    else the new pending queries.
    """
    run = runtime.context
    started = time.monotonic()
    plan = Plan.from_json(state)
    rnd = state.get("round", 1)
    ready, still_waiting, blocked = plan.ready()
    open_queries = plan.unanswered()
    decision = _decide_without_call(plan, run, rnd, ready, open_queries)
    if decision is None:
        decision = await _judge(plan, run, open_queries)
    verdict = _verdict(rnd, decision, open_queries, [plan.sub_queries[q] for q in blocked])
    emit(runtime, "verify", verdict, rnd, (time.monotonic() - started) * 1000)
    update: dict[str, Any] = {
        "verdicts": [*state.get("verdicts", []), verdict],
        "errors": decision.errors,
    }
    if decision.stopped or not decision.new:
        return {**update, "stopped": decision.stopped or "no_new_queries"}
    return {**update, **_next_round(runtime, plan, rnd, decision, ready, still_waiting)}


def _next_round(
    runtime: Runtime[PlannerRun],
    plan: Plan,
    rnd: int,
    decision: Decision,
    ready: list[SubQuery],
    still_waiting: list[str],
) -> dict[str, Any]:
    """The state update that sends ``decision.new`` in the next round (``Plan.next_round``),
    reported as the round's ``next_round`` event (its ``origin``: the planned hops or the
    follow-ups)."""
    nxt = rnd + 1
    emit(
        runtime,
        "next_round",
        {
            "sub_queries": [sub_report(q) | {"replaces": q.get("replaces")} for q in decision.new],
            "origin": "hop" if ready else "follow_up",
            "dropped": decision.dropped,
            "errors": [],
        },
        nxt,
        0.0,
    )
    # ready hops leave the others waiting; follow-ups leave every planned hop where it was
    return Plan.next_round(nxt, decision.new, still_waiting if ready else plan.waiting)
