"""The ``decompose`` node: one call plans the atomic queries (a family relation with one
reading is planned by rule, ``Question.relation_plan``, ``agent.rules.relations``); dependent
ones wait for the answers they need (``#1``), independent ones go out at once, one ``Send`` per
searcher (``agent.planner.routing``)."""

from __future__ import annotations

import time
from typing import Any

from langgraph.runtime import Runtime
from pydantic import BaseModel, Field

import prompts
from agent.planner.examples import plan_examples
from agent.planner.plan import Plan
from agent.planner.queries import (
    MAX_QUERIES_PER_CALL,
    clean_queries,
    conversation_text,
    kept_queries,
    plan_sub_queries,
    residual_hop,
    spell_out,
)
from agent.planner.state import PlannerRun, PlannerState, SubQuery, question_of
from agent.planner.trace import emit, sub_report
from agent.rules.question import Question, Shape
from searchers.searcher import BudgetExceeded
from searchers.structured_calls import ask


class QueryPlan(BaseModel):
    queries: list[str] = Field(max_length=MAX_QUERIES_PER_CALL)


async def _plan(
    runtime: Runtime[PlannerRun], state: PlannerState, limit: int, shape: Shape
) -> tuple[list[str], list[str]]:
    """The decomposition call: (queries, errors); a failure falls back to the question. The
    prompt shows worked plans of the question's shape only (``agent.planner.examples``)."""
    run = runtime.context
    try:
        reply = await ask(
            run.chat,
            QueryPlan,
            prompts.render(
                "decompose",
                question=state["question"],
                max_queries=limit,
                examples=plan_examples(shape),
                conversation=conversation_text(state.get("history", [])),
            ),
            scope=run.rounds,
            step="decompose",
        )
    except BudgetExceeded as exc:
        return [], [f"decompose skipped: {exc.reason}"]
    if reply.value:
        return reply.value.queries, []
    return [], [f"decompose: {reply.error}; searching the question as is"]


def _planned_queries(
    raw: list[str], question: Question, limit: int, *, by_rule: bool
) -> list[tuple[str, str]]:
    """The (query, key) pairs kept of a plan: a relation's plan as defined (no filter meant
    for a model's copies: "mother of #1" is not a word of "maternal grandmother", and is
    right), a model's cleaned and on the question's topic."""
    return clean_queries(raw, set(), limit) if by_rule else kept_queries(raw, question, limit)


def _all_at_once(
    ready: list[SubQuery], waiting: list[SubQuery]
) -> tuple[list[SubQuery], list[SubQuery]]:
    """The findings step ablated (LevelRAG's no-summarize): there are no answers to fill in,
    so every query goes out now, its ``#n`` spelled out with the words of the query it
    names."""
    planned = {q["id"]: q for q in sorted(ready + waiting, key=lambda q: int(q["id"][1:]))}
    return [spell_out(q, planned) for q in planned.values()], []


async def decompose(state: PlannerState, runtime: Runtime[PlannerRun]) -> dict[str, Any]:
    """Plan the question's atomic queries; where they go is ``routing.after_decompose``."""
    run = runtime.context
    started = time.monotonic()
    question = question_of(state)
    emit(
        runtime,
        "started",
        {
            "question": question.text,
            "thread_id": state.get("thread_id"),
            "searchers": list(run.searchers),
        },
        0,
        0.0,
    )
    limit = min(MAX_QUERIES_PER_CALL, run.budgets.max_sub_queries)
    shape = question.shape
    planning = run.planner.decompose
    relation = question.relation_plan if planning else None
    by_rule = list(relation) if relation is not None else None
    errors: list[str] = []
    raw: list[str] = by_rule or []
    if planning and not by_rule:
        raw, errors = await _plan(runtime, state, limit, shape)
    pairs = _planned_queries(raw, question, limit, by_rule=bool(by_rule))
    kept = {q for q, _ in pairs}
    if not by_rule:
        pairs = residual_hop(pairs, question.text, limit)
    # not an error: repeated queries and copies of the prompt's pattern are expected noise
    dropped = [str(q) for q in raw if " ".join(str(q).split()) not in kept]
    pairs = pairs or clean_queries([question.text], set(), 1)  # nothing kept: the question
    ready, waiting = plan_sub_queries(pairs, 0, "decompose")  # waiting: hops needing an answer
    if not run.planner.summarize:
        ready, waiting = _all_at_once(ready, waiting)
    emit(
        runtime,
        "decompose",
        {
            "shape": shape,
            "planned_by": "relation" if by_rule else "model" if planning else None,
            "sub_queries": [sub_report(q) for q in ready],
            "waiting": [sub_report(q) for q in waiting],
            "dropped": dropped,
            "errors": errors,
        },
        1,
        (time.monotonic() - started) * 1000,
    )
    return {**Plan.first_round(ready, waiting), "shape": shape, "errors": errors}
