"""LevelRAG's sparse searcher as a LangGraph subgraph: rewrite the atomic query into Lucene
keywords, then refine breadth-first with three feedback operations until a retrieval verifies.

    start -(original_first)-> probe(query as written) --(insufficient)--> rewrite
      \\-----------------------------------------------------------------> rewrite
    rewrite -> probe --(sufficient / nothing left / budget)--> finish
                 |  \\--(queue empty, nodes to expand)--> expand -> probe
                 \\--(insufficient, queue not empty)--> probe (next in the queue)

Every query is a ``LuceneQuery``; the LLM only names keywords, the edits (extend = add a quoted
keyword, emphasize = raise its boost, filter = exclude it) happen on the model, and only rendered
strings the engine parses are sent. Equivalent queries are tried once. The result is the best
verified attempt, not the last one tried.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Command
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

import prompts
from searchers.lucene import (
    LuceneQuery,
    emphasize,
    exclude,
    extend,
    is_empty,
    parse_lucene,
    query_key,
    render_query_string,
)
from searchers.passages import Hit, numbered_passages
from searchers.searcher import (
    Attempt,
    BudgetExceeded,
    RunScope,
    SearchBudget,
    SearchResult,
    StopReason,
    finish_refinement,
    run_refinement,
)
from searchers.searcher_configs import SparseSearcherConfig
from searchers.structured_calls import ask
from searchers.verification import judge_attempt

MAX_KEYWORD_CHARS = 80
MAX_KEYWORD_WORDS = 6


class LuceneRewrite(BaseModel):
    query: str = Field(description="keywords in Lucene syntax")


class Keyword(BaseModel):
    keyword: str = Field(description="one keyword or short phrase")


class SparseRetriever(Protocol):
    """What the sparse searcher needs of a backend (tantivy or Elasticsearch)."""

    name: str

    def retrieve_query(self, query: LuceneQuery, k: int = 10) -> list[Hit]: ...


@dataclass
class _Pending:
    query: LuceneQuery
    operation: str
    parent: int | None
    depth: int
    expandable: bool = True  # feedback refines the rewritten query, not the raw one


@dataclass
class SparseRun:
    """Per-search context: the graph is compiled once, each search brings its own of these."""

    chat: BaseChatModel
    retriever: SparseRetriever
    config: SparseSearcherConfig
    scope: RunScope  # this search's: a sub-scope of the caller's, or a root of its budget
    render: Callable[[LuceneQuery], str] = render_query_string


class SparseState(TypedDict, total=False):
    query: str
    frontier: list[_Pending]
    attempts: list[Attempt]
    hits: dict[int, list[Hit]]
    to_expand: list[tuple[_Pending, int]]  # tried, insufficient, children not yet asked for
    seen: set[str]
    refinements: int
    rewritten: bool  # the rewrite node has run
    stopped: StopReason
    error: str | None


def _clean_keyword(raw: str) -> str | None:
    """LLM keywords arrive as anything from "" to a paragraph of prose: keep a short phrase."""
    text = " ".join(raw.replace('"', " ").split())
    if not text or len(text) > MAX_KEYWORD_CHARS * 4:
        return None
    words = text.split()[:MAX_KEYWORD_WORDS]
    text = " ".join(words)[:MAX_KEYWORD_CHARS]
    return text or None


async def start(
    state: SparseState, runtime: Runtime[SparseRun]
) -> Command[Literal["probe", "rewrite"]]:
    """The query as written first (when configured), else straight to the rewrite."""
    if not runtime.context.config.original_first:
        return Command(goto="rewrite")
    original = parse_lucene(state["query"]).query
    if is_empty(original):
        return Command(goto="rewrite")
    root = _Pending(original, "original", None, 0, expandable=False)
    return Command(goto="probe", update={"frontier": [root]})


async def rewrite(
    state: SparseState, runtime: Runtime[SparseRun]
) -> Command[Literal["probe", "finish"]]:
    run = runtime.context
    fallback = parse_lucene(state["query"]).query
    try:
        reply = await ask(
            run.chat,
            LuceneRewrite,
            prompts.render("sparse_rewrite", query=state["query"]),
            scope=run.scope,
            step="sparse_rewrite",
        )
    except BudgetExceeded as exc:
        root = _Pending(fallback, "original", None, 0)
        update = {"frontier": [root], "stopped": exc.reason, "rewritten": True}
        return Command(goto="probe", update=update)
    rewritten = parse_lucene(reply.value.query).query if reply.value else None
    if rewritten is None or is_empty(rewritten):
        note = reply.error or "the rewrite had no searchable keyword"
        root = _Pending(fallback, "original", None, 0)
        return Command(goto="probe", update={"frontier": [root], "error": note, "rewritten": True})
    root = _Pending(rewritten, "rewrite", None, 0)
    return Command(goto="probe", update={"frontier": [root], "rewritten": True})


def _after_frontier(state: SparseState, to_expand: list) -> str:
    """Where to go when the queue is empty: the rewrite if it has not run, then feedback."""
    if not state.get("rewritten"):
        return "rewrite"
    return "expand" if to_expand else "finish"


async def probe(
    state: SparseState, runtime: Runtime[SparseRun]
) -> Command[Literal["expand", "probe", "rewrite", "finish"]]:
    run, cfg = runtime.context, runtime.context.config
    frontier = list(state.get("frontier", []))
    seen = set(state.get("seen", set()))
    attempts = list(state.get("attempts", []))
    pending: _Pending | None = None
    while frontier:  # bounded: the frontier only shrinks here
        candidate = frontier.pop(0)
        key = query_key(candidate.query)
        if key not in seen and not is_empty(candidate.query):
            seen.add(key)
            pending = candidate
            break
    if pending is None:
        nxt = _after_frontier(state, list(state.get("to_expand", [])))
        return Command(goto=nxt, update={"frontier": [], "seen": seen})

    started = time.monotonic()
    hits = await asyncio.to_thread(run.retriever.retrieve_query, pending.query, cfg.k)
    attempt = Attempt(
        id=len(attempts),
        operation=pending.operation,
        query=run.render(pending.query),
        parent=pending.parent,
        depth=pending.depth,
        hit_ids=[h.id for h in hits],
    )
    stopped = state.get("stopped")
    if stopped is None:
        stopped = await judge_attempt(attempt, run.chat, state["query"], hits, run.scope, cfg)
    attempt.ms = (time.monotonic() - started) * 1000
    attempts.append(attempt)
    to_expand = list(state.get("to_expand", []))
    if pending.expandable and pending.depth < cfg.max_depth:
        to_expand.append((pending, attempt.id))
    update = {
        "frontier": frontier,
        "seen": seen,
        "attempts": attempts,
        "hits": {**state.get("hits", {}), attempt.id: hits},
        "to_expand": to_expand,
    }
    if stopped is not None:
        return Command(goto="finish", update={**update, "stopped": stopped})
    if attempt.verdict is not None and attempt.verdict.sufficient:
        return Command(goto="finish", update={**update, "stopped": "sufficient"})
    if frontier:
        return Command(goto="probe", update=update)
    return Command(goto=_after_frontier(state, to_expand), update=update)


def _extend_prompt(query: str, search: str, passages: str) -> list[BaseMessage]:
    return prompts.render("sparse_extend", query=query, search=search, passages=passages)


def _emphasize_prompt(query: str, search: str, passages: str) -> list[BaseMessage]:
    return prompts.render("sparse_emphasize", query=query, search=search, passages=passages)


def _filter_prompt(query: str, search: str, passages: str) -> list[BaseMessage]:
    return prompts.render("sparse_filter", query=query, search=search, passages=passages)


# LevelRAG's three feedback operations, tried in this order for every insufficient node.
FEEDBACK = (
    ("extend", extend, _extend_prompt),
    ("emphasize", emphasize, _emphasize_prompt),
    ("filter", exclude, _filter_prompt),
)


async def expand(
    state: SparseState, runtime: Runtime[SparseRun]
) -> Command[Literal["probe", "finish"]]:
    """Make the three feedback children of the oldest tried-and-insufficient node.

    Expansion is lazy: a node's children are asked for only once every query already queued
    has been tried, so the queries run in breadth-first order while a search that succeeds
    early never pays for the children it would not have used.
    """
    run, cfg = runtime.context, runtime.context.config
    (parent, attempt_id), *to_expand = state["to_expand"]
    refinements = state.get("refinements", 0)
    if refinements >= cfg.max_refinements:
        return Command(goto="finish", update={"to_expand": []})
    attempt = state["attempts"][attempt_id]
    hits = state["hits"][attempt_id][: cfg.feedback_top]
    passages = numbered_passages(hits, max_chars=cfg.passage_chars, query=state["query"])
    seen = state.get("seen", set())
    frontier = list(state.get("frontier", []))
    notes: list[str] = []
    for operation, edit, render_prompt in FEEDBACK:
        if refinements >= cfg.max_refinements:
            break
        try:
            reply = await ask(
                run.chat,
                Keyword,
                render_prompt(state["query"], attempt.query, passages),
                scope=run.scope,
                step=f"sparse_{operation}",
            )
        except BudgetExceeded as exc:
            update = {"frontier": frontier, "to_expand": to_expand, "stopped": exc.reason}
            return Command(goto="finish", update=update)
        keyword = _clean_keyword(reply.value.keyword) if reply.value else None
        if keyword is None:
            notes.append(reply.error or f"{operation}: no usable keyword")
            continue
        child = edit(parent.query, keyword)
        if child == parent.query or query_key(child) in seen:
            notes.append(f"{operation} {keyword!r}: no new query")
            continue
        frontier.append(_Pending(child, operation, attempt_id, parent.depth + 1))
        refinements += 1
    if notes:
        attempt.note = "; ".join(notes)
    update = {"frontier": frontier, "to_expand": to_expand, "refinements": refinements}
    return Command(goto="probe", update=update)


def build_sparse_graph():
    graph = StateGraph(SparseState, context_schema=SparseRun)
    graph.add_node("start", start)
    graph.add_node("rewrite", rewrite)
    graph.add_node("probe", probe)
    graph.add_node("expand", expand)
    graph.add_node("finish", finish_refinement)
    graph.add_edge(START, "start")
    graph.add_edge("finish", END)
    return graph.compile(name="sparse_searcher", checkpointer=False)  # never the planner's


class SparseSearcher:
    name = "sparse"
    description = "rewrites the query into Lucene keywords and refines it (extend/emphasize/filter)"

    def __init__(
        self,
        chat: BaseChatModel,
        retriever: SparseRetriever,
        *,
        config: SparseSearcherConfig | None = None,
        budget: SearchBudget | None = None,
        render: Callable[[LuceneQuery], str] = render_query_string,
    ) -> None:
        self.chat = chat
        self.retriever = retriever
        self.config = config or SparseSearcherConfig()
        self.budget = budget or SearchBudget()
        self.render = render
        self.graph = build_sparse_graph()

    async def search(
        self, query: str, *, k: int | None = None, scope: RunScope | None = None
    ) -> SearchResult:
        config = self.config if k is None else _with_k(self.config, k)
        mine = self.budget.scope(scope)
        run = SparseRun(self.chat, self.retriever, config, mine, self.render)
        return await run_refinement(
            self.name, query, self.graph, run, mine, recursion_limit=_recursion_limit(config)
        )


def _with_k(config: SparseSearcherConfig, k: int) -> SparseSearcherConfig:
    return config.model_copy(update={"k": k})


def _recursion_limit(config: SparseSearcherConfig) -> int:
    """Each refinement costs at most two supersteps (probe + expand); leave headroom."""
    return 2 * (config.max_refinements + 1) * 2 + 10
