"""LevelRAG's dense searcher as a LangGraph subgraph: HyDE with feedback.

    start -(original_first)-> probe(the query alone) --(insufficient)--> write
      \\----------------------------------------------------------------> write
    write -> probe --(sufficient / rewrites used up / budget)--> finish
               ^        |
               \\--------/ (insufficient: write a new pseudo-document from what came back)

The LLM writes a passage that would answer the atomic query; we search with the mean of the
query's and the passage's embeddings (HyDE keeps the query in the mix so a hallucinated passage
cannot drag the search off topic), verify, and if the hits do not answer, write a new passage
informed by them. The result is the best verified attempt, not the last.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Literal, Protocol

import numpy as np
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Command
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

import prompts
from searchers.passages import Hit, numbered_passages
from searchers.repetition import drop_repetition
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
from searchers.searcher_configs import DenseSearcherConfig
from searchers.structured_calls import ask
from searchers.verification import judge_attempt

MAX_PSEUDO_DOC_CHARS = 1500


class PseudoDocument(BaseModel):
    passage: str = Field(description="a short encyclopedia-style passage answering the query")


class VectorRetriever(Protocol):
    name: str

    def retrieve_vector(self, vector: np.ndarray, k: int = 10) -> list[Hit]: ...


@dataclass
class DenseRun:
    chat: BaseChatModel
    embeddings: Embeddings
    retriever: VectorRetriever
    config: DenseSearcherConfig
    scope: RunScope  # this search's: a sub-scope of the caller's, or a root of its budget


class DenseState(TypedDict, total=False):
    query: str
    pseudo: str | None  # the passage to search with next; None = the query alone
    attempts: list[Attempt]
    hits: dict[int, list[Hit]]
    written: int
    stopped: StopReason
    error: str | None


def _vector(embeddings: Embeddings, query: str, pseudo: str | None) -> np.ndarray:
    texts = [query] if pseudo is None else [query, pseudo]
    vectors = np.asarray(embeddings.embed_documents(texts), dtype=np.float32)
    mean = vectors.mean(axis=0)
    norm = float(np.linalg.norm(mean))
    return mean / norm if norm > 0 else mean


async def start(
    state: DenseState, runtime: Runtime[DenseRun]
) -> Command[Literal["probe", "write"]]:
    """The query alone first (when configured, or when no pseudo-document may be written),
    else straight to the pseudo-document."""
    cfg = runtime.context.config
    if cfg.original_first or cfg.max_rewrites == 0:
        return Command(goto="probe", update={"pseudo": None})
    return Command(goto="write")


async def write(state: DenseState, runtime: Runtime[DenseRun]) -> Command[Literal["probe"]]:
    run, cfg = runtime.context, runtime.context.config
    attempts = state.get("attempts", [])
    if attempts:
        last = attempts[-1]
        shown = state["hits"][last.id][: cfg.feedback_top]
        feedback = numbered_passages(shown, max_chars=cfg.passage_chars, query=state["query"])
    else:
        feedback = "(none yet)"
    written = state.get("written", 0) + 1
    try:
        reply = await ask(
            run.chat,
            PseudoDocument,
            prompts.render("hyde", query=state["query"], feedback=feedback),
            scope=run.scope,
            step="hyde",
            max_tokens=cfg.pseudo_max_tokens,
        )
    except BudgetExceeded as exc:
        if attempts:
            return Command(goto="finish", update={"stopped": exc.reason})
        return Command(goto="probe", update={"pseudo": None, "stopped": exc.reason})
    passage = reply.value.passage if reply.value else ""
    text = drop_repetition(" ".join(passage.split()), cut=reply.cut)[:MAX_PSEUDO_DOC_CHARS]
    if not text:
        # no pseudo-document: search with the query alone rather than not at all
        update = {"pseudo": None, "written": written, "error": reply.error or "empty passage"}
        return Command(goto="probe", update=update)
    return Command(goto="probe", update={"pseudo": text, "written": written})


async def probe(
    state: DenseState, runtime: Runtime[DenseRun]
) -> Command[Literal["write", "finish"]]:
    run, cfg = runtime.context, runtime.context.config
    attempts = list(state.get("attempts", []))
    pseudo = state.get("pseudo")
    started = time.monotonic()
    vector = await asyncio.to_thread(_vector, run.embeddings, state["query"], pseudo)
    hits = await asyncio.to_thread(run.retriever.retrieve_vector, vector, cfg.k)
    attempt = Attempt(
        id=len(attempts),
        operation="hyde" if pseudo else "original",
        query=pseudo or state["query"],
        parent=attempts[-1].id if attempts else None,
        depth=len(attempts),
        hit_ids=[h.id for h in hits],
    )
    stopped = state.get("stopped")
    if stopped is None:
        stopped = await judge_attempt(attempt, run.chat, state["query"], hits, run.scope, cfg)
    attempt.ms = (time.monotonic() - started) * 1000
    attempts.append(attempt)
    update = {"attempts": attempts, "hits": {**state.get("hits", {}), attempt.id: hits}}
    if stopped is not None:
        return Command(goto="finish", update={**update, "stopped": stopped})
    if attempt.verdict is not None and attempt.verdict.sufficient:
        return Command(goto="finish", update={**update, "stopped": "sufficient"})
    if state.get("written", 0) < cfg.max_rewrites:
        return Command(goto="write", update=update)
    return Command(goto="finish", update=update)


def build_dense_graph():
    graph = StateGraph(DenseState, context_schema=DenseRun)
    graph.add_node("start", start)
    graph.add_node("write", write)
    graph.add_node("probe", probe)
    graph.add_node("finish", finish_refinement)
    graph.add_edge(START, "start")
    graph.add_edge("finish", END)
    return graph.compile(name="dense_searcher", checkpointer=False)  # never the planner's


class DenseSearcher:
    name = "dense"
    description = (
        "writes a hypothetical answer passage (HyDE) and searches by meaning, with feedback"
    )

    def __init__(
        self,
        chat: BaseChatModel,
        embeddings: Embeddings,
        retriever: VectorRetriever,
        *,
        config: DenseSearcherConfig | None = None,
        budget: SearchBudget | None = None,
    ) -> None:
        self.chat = chat
        self.embeddings = embeddings
        self.retriever = retriever
        self.config = config or DenseSearcherConfig()
        self.budget = budget or SearchBudget()
        self.graph = build_dense_graph()

    async def search(
        self, query: str, *, k: int | None = None, scope: RunScope | None = None
    ) -> SearchResult:
        config = self.config if k is None else self.config.model_copy(update={"k": k})
        mine = self.budget.scope(scope)
        run = DenseRun(self.chat, self.embeddings, self.retriever, config, mine)
        limit = 4 * (config.max_rewrites + 2) + 10  # write + probe per rewrite, with headroom
        return await run_refinement(self.name, query, self.graph, run, mine, recursion_limit=limit)
