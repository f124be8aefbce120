"""LevelRAG's high-level searcher as a LangGraph graph, built to read passages, not summaries.

    decompose --Send per (atomic query, searcher)--> search_<name> --> findings --> verify
                                                       ^                                |
                                                       \\------------ Send -------------/
                                                                                       v
                                                                                     answer

- ``decompose`` (one call) plans atomic queries; a query that needs an earlier one's answer
  says so with ``#1`` and waits for it.
- ``search``: every (query, searcher) pair runs in parallel, each searcher a compiled subgraph
  with its own refinement loop. Inside the planner a searcher first tries the query as written
  and spends LLM calls only when that fails the coverage check.
- ``findings`` (one call per round, all of the round's queries together) copies each query's
  answer span out of its passages; a span that does not occur in them is "not found".
- ``verify`` routes with no call while it can: queries waiting for an answer that is now known
  go out with it filled in; when every query has a supported finding the evidence suffices.
  Only when one has none does it make one call that both judges and names the follow-ups.
- ``answer`` (one reserved call) reads raw passages chosen from everything found, with the
  findings as one-line notes, and its cited answer is checked sentence by sentence.

Why this shape: docs/architecture.md ("Why the planner is the way it is"). ``max_llm_calls`` is
a hard cap checked before every call, the searchers' included.
"""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph

from agent.planner.answer import answer
from agent.planner.decompose import decompose
from agent.planner.draft import draft
from agent.planner.findings import read_findings
from agent.planner.routing import (
    DECOMPOSE,
    after_decompose,
    after_draft,
    after_verify,
    destinations,
    search_node,
)
from agent.planner.search_step import search
from agent.planner.state import PlannerRun, PlannerState
from agent.planner.verify import HOP_EXTRA_ROUNDS, verify


def build_planner_graph(searchers: list[str], checkpointer: Any = None):
    """The graph for these searchers: one search node per searcher name, and every edge the
    run can take declared here (the routing steps with their destinations, ``routing``), so
    the compiled graph and its drawing show the real flow."""
    graph = StateGraph(PlannerState, context_schema=PlannerRun)
    graph.add_node("draft", draft)
    graph.add_node(DECOMPOSE, decompose)
    for name in searchers:
        graph.add_node(search_node(name), search)
        graph.add_edge(search_node(name), "findings")
    graph.add_node("findings", read_findings)
    graph.add_node("verify", verify)
    graph.add_node("answer", answer)
    graph.add_edge(START, "draft")
    graph.add_conditional_edges("draft", after_draft, [DECOMPOSE, END])
    graph.add_conditional_edges("decompose", after_decompose, destinations(searchers))
    graph.add_edge("findings", "verify")
    graph.add_conditional_edges("verify", after_verify, destinations(searchers))
    graph.add_edge("answer", END)
    return graph.compile(name="planner", checkpointer=checkpointer)


def recursion_limit(max_rounds: int) -> int:
    """Supersteps per round: search, findings, verify; plus draft, decompose and answer, and the
    rounds planned hops may run past ``max_rounds`` (``verify.HOP_EXTRA_ROUNDS``)."""
    return 3 * (max_rounds + HOP_EXTRA_ROUNDS) + 10
