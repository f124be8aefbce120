"""The ``decompose`` node: one call plans the atomic queries (a family relation with one
reading is planned by rule, ``agent.planner.relations``); dependent ones wait for the answers
they need (``#1``), independent ones go out at once, one ``Send`` per searcher."""

from __future__ import annotations

import time
from typing import Any, Literal

from langgraph.runtime import Runtime
from langgraph.types import Command
from pydantic import BaseModel, Field

import prompts
from agent.planner.queries import (
    MAX_QUERIES_PER_CALL,
    clean_queries,
    conversation_text,
    kept_queries,
    plan_sub_queries,
    question_sends,
    sends,
    spelled_out,
)
from agent.planner.relations import relation_plan
from agent.planner.shapes import Shape, plan_examples, question_shape
from agent.planner.state import (
    PlannerRun,
    PlannerState,
    query_key,
)
from agent.planner.trace import emit, sub_report
from searchers.searcher import BudgetExceeded
from searchers.structured_calls import ask


class QueryPlan(BaseModel):
    queries: list[str] = Field(max_length=MAX_QUERIES_PER_CALL)


async def _plan(
    runtime: Runtime[PlannerRun], state: PlannerState, limit: int, shape: Shape
) -> tuple[list[str], list[str]]:
    """The decomposition call: (queries, errors); a failure falls back to the question. The
    prompt shows worked plans of the question's shape only (``agent.planner.shapes``)."""
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


async def decompose(
    state: PlannerState, runtime: Runtime[PlannerRun]
) -> Command[Literal["answer"]]:
    run = runtime.context
    started = time.monotonic()
    question = state["question"]
    emit(
        runtime,
        "started",
        {
            "question": question,
            "thread_id": state.get("thread_id"),
            "searchers": list(run.searchers),
        },
        0,
        0.0,
    )
    limit = min(MAX_QUERIES_PER_CALL, run.budgets.max_sub_queries)
    errors: list[str] = []
    raw: list[str] = []
    shape = question_shape(question)
    planning = run.planner.decompose
    by_rule = relation_plan(question) if planning and run.planner.relation_plans else None
    if by_rule:
        # the relation's definition is the plan: no call, and no filter meant for a model's
        # copies ("mother of #1" is not a word of "maternal grandmother", and is right)
        raw = by_rule
        pairs = clean_queries(raw, set(), limit)
    else:
        if planning:
            raw, errors = await _plan(runtime, state, limit, shape)
        pairs = kept_queries(raw, question, limit)
    kept = {q for q, _ in pairs}
    # not an error: repeated queries and copies of the prompt's pattern are expected noise
    dropped = [str(q) for q in raw if " ".join(str(q).split()) not in kept]
    pairs = pairs or clean_queries([question], set(), 1)
    ready, waiting = plan_sub_queries(pairs, 0, "decompose")
    if not run.planner.summarize:
        # no findings, so no answers to fill in: every query goes out now, #n spelled out
        planned = {q["id"]: q for q in sorted(ready + waiting, key=lambda q: int(q["id"][1:]))}
        ready, waiting = [spelled_out(q, planned) for q in planned.values()], []
    for sub in ready:
        sub["round"] = 1
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
    update: dict[str, Any] = {
        "round": 1,
        "shape": shape,
        "sub_queries": {q["id"]: q for q in ready + waiting},
        "pending": [q["id"] for q in ready],
        "waiting": [q["id"] for q in waiting],
        "errors": errors,
    }
    planned_question = [q["key"] for q in ready + waiting] == [query_key(question)]
    extra = (
        question_sends(question, run)
        if run.planner.question_search and ready and not planned_question
        else []
    )
    return Command(goto=[*sends(ready, run), *extra] or "answer", update=update)
