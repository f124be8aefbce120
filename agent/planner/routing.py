"""Where the planner goes next: the graph's routing, declared, not hidden in what nodes return.

The decompose and verify nodes write the plan; the functions here read it and send each pending
query to every searcher's node, or go to the answer. The graph's builder declares each with its
possible destinations (``destinations``), so the compiled graph and LangGraph Studio draw every
edge the run can take. No LLM call here.
"""

from __future__ import annotations

from collections.abc import Iterable

from langgraph.graph import END
from langgraph.runtime import Runtime
from langgraph.types import Send

from agent.planner.plan import QUESTION_SEARCH_ID, Plan
from agent.planner.state import PlannerRun, PlannerState, SearchTask, SubQuery
from agent.results import Draft

ANSWER = "answer"
DECOMPOSE = "decompose"


def search_node(searcher: str) -> str:
    """Each enabled searcher is its own node of the graph ("search_sparse", ...)."""
    return f"search_{searcher}"


def destinations(searchers: Iterable[str]) -> list[str]:
    """Where a routing step may go: every search node, or the answer."""
    return [*(search_node(name) for name in searchers), ANSWER]


def sends(new: list[SubQuery], searchers: Iterable[str]) -> list[Send]:
    """One search per (query, searcher), query by query."""
    names = list(searchers)
    return [
        Send(
            search_node(name),
            SearchTask(sub_query_id=q["id"], query=q["query"], searcher=name, round=q["round"]),
        )
        for q in new
        for name in names
    ]


def question_task(question: str, searcher: str, rnd: int) -> SearchTask:
    """The question itself, searched as written by ``searcher`` with no LLM call: one-call
    RAG's retrieval (the draft's passages, and an open plan's answer's)."""
    return SearchTask(
        sub_query_id=QUESTION_SEARCH_ID,
        query=question,
        searcher=searcher,
        round=rnd,
        max_llm_calls=0,
    )


def question_sends(question: str, searchers: Iterable[str]) -> list[Send]:
    """The question on every searcher beside the plan's first round, when no draft searched
    it (``question_task``)."""
    return [Send(search_node(name), question_task(question, name, 1)) for name in searchers]


def _pending(plan: Plan) -> list[SubQuery]:
    return [plan.sub_queries[qid] for qid in plan.pending]


def after_decompose(state: PlannerState, runtime: Runtime[PlannerRun]) -> list[Send] | str:
    """The plan's first round: its ready queries on every searcher, and the question as
    written beside them (no call: the answer of an open plan reads it) unless the draft has
    searched it or the plan is the question itself; the answer when nothing was planned."""
    run = runtime.context
    plan = Plan.from_json(state)
    ready = _pending(plan)
    planned = list(plan.sub_queries.values())
    searched = bool(plan.results_of(QUESTION_SEARCH_ID))  # by the draft: never twice
    extra = (
        question_sends(plan.question.text, run.searchers)
        if ready and not searched and not plan.is_question_itself(planned)
        else []
    )
    return [*sends(ready, run.searchers), *extra] or ANSWER


def after_draft(state: PlannerState) -> str:
    """The plan, unless the draft stands (the router said so: ``agent.planner.draft``); with
    no draft (switched off, or it failed) the plan runs as it always did."""
    draft = Draft.from_state(state)
    return END if draft is not None and draft.stands else DECOMPOSE


def after_verify(state: PlannerState, runtime: Runtime[PlannerRun]) -> list[Send] | str:
    """The next round's queries on every searcher, or the answer once verify stopped."""
    if state.get("stopped"):
        return ANSWER
    return sends(_pending(Plan.from_json(state)), runtime.context.searchers) or ANSWER
