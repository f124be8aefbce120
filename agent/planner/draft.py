"""The ``draft`` node: a cited answer in seconds, before any plan (issue 53).

The question as written is searched by every searcher with no LLM call, and one-call RAG's
reader reads the first ``answer_sources`` hits (one call); the draft is settled and checked as
the answer step's answer is (``answer.compose``) and reaches the person at once as a ``draft``
event. The router (``agent.checks.escalation.decide``) then says whether it stands (the run
ends) or the plan runs, reusing the draft's searches; the answer step decides which answer wins
(``answer.answer``). A draft that cannot be written is no draft: the plan runs.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from langgraph.runtime import Runtime

from agent.checks.citations import SourceText
from agent.checks.escalation import Decision, answer_logprobs, decide, draft_signals
from agent.planner.answer import AgentRunError, AnswerMode, Composed, compose
from agent.planner.plan import Plan
from agent.planner.routing import question_task
from agent.planner.search_step import search
from agent.planner.state import PlannerRun, PlannerState, question_of
from agent.planner.trace import emit
from agent.results import Draft, DraftDecision
from agent.rules.question import Question
from agent.settings import RouterSettings
from searchers.searcher import BudgetExceeded


async def _question_searches(
    question: str, runtime: Runtime[PlannerRun]
) -> tuple[dict[str, Any], list[str]]:
    """The question as written on every searcher at once, no LLM call (``QUESTION_SEARCH_ID``):
    the draft's passages, and the plan's first round's question search, done once."""
    tasks = [question_task(question, name, 0) for name in runtime.context.searchers]
    updates = await asyncio.gather(*(search(task, runtime) for task in tasks))
    searches: dict[str, Any] = {}
    errors: list[str] = []
    for update in updates:
        searches.update(update["searches"])
        errors.extend(update["errors"])
    return searches, errors


def written_draft(
    composed: Composed, seconds: float, signals: dict[str, Any], decision: DraftDecision
) -> Draft:
    """The draft the reader wrote: enough to answer with it later without a call."""
    return Draft(
        short_answer=composed.short,
        answer=composed.text,
        citations=list(composed.citations),
        seconds=seconds,
        signals=signals,
        decision=decision,
        hits=list(composed.sources),
        sources=list(composed.shown),
        citation_check=dict(composed.report),
        supported=composed.grounded,
        written=composed.report.get("short_answer_written", composed.short),
    )


async def draft(state: PlannerState, runtime: Runtime[PlannerRun]) -> dict[str, Any]:
    """Search the question, read it once, decide whether to plan (module doc). A no-op when
    the draft is switched off (``PlannerSettings.draft``) or the thread's question is a
    follow-up of an earlier one (its words refer to a conversation the draft cannot read)."""
    run = runtime.context
    cfg = run.planner
    if not cfg.draft or state.get("history"):
        return {}
    started = time.monotonic()
    question = question_of(state)
    searches, errors = await _question_searches(question.text, runtime)
    plan = Plan.from_json({**state, "searches": searches})
    hits = [hit.to_json() for hit in plan.question_hits(cfg.k)[: cfg.answer_sources]]
    update: dict[str, Any] = {"searches": searches, "errors": errors}
    if not hits:
        return {**update, "draft": _no_draft(runtime, "no passage matched the question", started)}
    mode = AnswerMode("draft", hits, question.text, False, reader=True, step="draft")
    try:
        composed = await compose(run, plan, mode, run.rounds, logprobs=True)
    except (AgentRunError, BudgetExceeded) as exc:
        return {**update, "draft": _no_draft(runtime, f"no draft: {exc}", started)}
    if composed.errors:  # the call failed and a fallback wrote it: not a draft to stand on
        return {**update, "draft": _no_draft(runtime, composed.errors[0], started)}
    seconds = time.monotonic() - run.started  # to the draft, as the person gets it
    record, decision = _routed(composed, question, float(hits[0]["score"]), seconds, cfg.router)
    ms = (time.monotonic() - started) * 1000
    emit(runtime, "draft", {**record.to_json(), "final": record.stands}, 0, ms)
    update["draft"] = record.to_record()
    if decision.escalate:
        return update
    # the draft stands: it is the answer, and the run ends here (``routing.after_draft``)
    turn = {"question": question.text, "short_answer": composed.short}
    report = {**composed.report, "answered_as": "draft"}
    emit(runtime, "answer", {**composed.event(), "check": report}, 0, 0.0)
    return {
        **update,
        **composed.fields(),
        "citation_check": report,
        "stopped": "draft",
        "final_choice": {"source": "draft", "reason": decision.reason},
        "history": [*state.get("history", []), turn][-10:],
    }


def _routed(
    composed: Composed, question: Question, top_score: float, seconds: float, policy: RouterSettings
) -> tuple[Draft, Decision]:
    """The written draft with the router's signals and decision (no call)."""
    texts = [SourceText(s["n"], s["title"], s["shown"]) for s in composed.shown]
    written = composed.report.get("short_answer_written", composed.short)
    signals = draft_signals(
        question,
        composed.short,
        texts,
        logprobs=answer_logprobs(composed.token_logprobs, written),
        top_score=top_score,
    )
    decision = decide(signals, policy)
    verdict = DraftDecision(decision.escalate, decision.reason, policy.policy)
    return written_draft(composed, seconds, signals.as_dict(), verdict), decision


def _no_draft(runtime: Runtime[PlannerRun], why: str, started: float) -> dict[str, Any]:
    """No draft could be written: the plan runs (the router is not asked), and the trace says
    why."""
    record = Draft(error=why, decision=DraftDecision(True, why, "none"))
    ms = (time.monotonic() - started) * 1000
    emit(runtime, "draft", {**record.to_json(), "final": False}, 0, ms)
    return record.to_record()
