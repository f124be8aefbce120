"""The QuALITY pipelines: five ways to find context in one article, one way to read it.

- ``leaves``: dense retrieval (FAISS, the index's embeddings) over the article's leaf chunks;
- ``bm25``: BM25 (tantivy) over the same chunks, the query reduced to plain words;
- ``tree-gmm``, ``tree-leiden``: RAPTOR's collapsed-tree retrieval (leaves and summaries ranked
  together by cosine) over the article's tree clustered with GMM or Leiden;
- ``full``: the planner over the sparse, dense and tree (Leiden) searchers; the passages it
  gathered (those its answer step chose first, then the rest by rank) are the context.

Every pipeline queries with the question and its options (the options name what the question
is about), fills the same token budget (``EvalContext.context_tokens``, default 2,000 as in
RAPTOR) with the skip-and-continue rule of the collapsed tree, and hands the packed passages to
the same ``choice_answer`` reader: only retrieval differs. Each output records where its
context came from (node id, layer, tokens), so the share of context taken from summary layers
(layer > 0) can be reported per question and per run.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agent.results import AskResult
from agent.runtime.usage import StepUsage
from evals.pipelines import (
    EvalContext,
    PipelineError,
    planner_agent,
    planner_record,
    planner_settings,
    planner_usage,
    with_usage,
)
from evals.quality.corpora import ArticleCorpus
from evals.quality.data import LETTERS, ChoiceQuestion
from evals.quality.reader import ChoiceReading, read_choice
from searchers.passages import Hit, Passage
from tree.retrieval import TreeRetriever, pack_by_budget
from tree.tokens import approx_token_count

CANDIDATES = 1024  # more leaves than any QuALITY article has (~50-150): rank them all
PLANNER_SEARCHERS = ("sparse", "dense", "tree")
PLANNER_CLUSTERING = "leiden"  # enhanced RAPTOR's better tree, and the smaller one to build


@dataclass
class ChoiceOutput:
    chosen: int | None  # 1-based; None: the reader named no option (then ``error`` says why)
    context: list[dict[str, Any]] = field(default_factory=list)  # id, layer, tokens, retriever
    reply: str = ""  # the reader's raw text when it was parsed by hand or not at all
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    llm_cache_hits: int = 0
    cache_hit_prompt_tokens: int = 0
    seconds: float = 0.0
    error: str | None = None
    warnings: list[str] = field(default_factory=list)
    planner: dict[str, Any] | None = None

    @property
    def letter(self) -> str:
        return LETTERS[self.chosen - 1] if self.chosen else ""


QualityRun = Callable[[EvalContext, ArticleCorpus, ChoiceQuestion], Awaitable[ChoiceOutput]]


@dataclass(frozen=True)
class QualityPipeline:
    name: str
    description: str
    needs: tuple[str, ...]  # "sparse", "dense", "tree"
    run: QualityRun
    clustering: str | None = None  # which tree "tree" means


def retrieval_query(question: ChoiceQuestion) -> str:
    return "\n".join([question.question, *question.options])


def bm25_terms(text: str) -> str:
    """Plain lower-case words: an option that says "NOT" or holds a quote must not turn the
    BM25 baseline into a Lucene query with operators."""
    return " ".join(word.lower() for word in re.findall(r"\w+", text))


def hit_tokens(hit: Hit) -> int:
    """Tokens by the tree's own counter (its nodes carry them; leaves of the index too)."""
    tokens = hit.passage.metadata.get("tokens")
    return int(tokens) if isinstance(tokens, int) else approx_token_count(hit.text)


def pack_hits(hits: Sequence[Hit], budget: int) -> list[Hit]:
    """The collapsed tree's packing rule applied to any ranked hits (deduplicated by id)."""
    unique = list({h.id: h for h in reversed(hits)}.values())[::-1]
    packed = pack_by_budget(
        [(i, h.score) for i, h in enumerate(unique)], [hit_tokens(h) for h in unique], budget
    )
    return [unique[i] for i, _ in packed]


def context_record(hits: Sequence[Hit]) -> list[dict[str, Any]]:
    return [
        {
            "id": h.id,
            "layer": int(h.passage.metadata.get("layer") or 0),
            "tokens": hit_tokens(h),
            "retriever": h.retriever,
        }
        for h in hits
    ]


async def _read(
    ctx: EvalContext,
    question: ChoiceQuestion,
    hits: Sequence[Hit],
    started: float,
    *,
    before: StepUsage | None = None,
    warnings: Sequence[str] = (),
    planner: dict[str, Any] | None = None,
) -> ChoiceOutput:
    """The reader over ``hits``; ``before`` is what the pipeline spent finding them."""

    async def body() -> ChoiceReading:
        return await read_choice(
            ctx.chat,
            question.question,
            question.options,
            [h.text for h in hits],
            timeout_s=ctx.settings.llm.timeout_s,
        )

    reading, usage = await with_usage(body)
    if before is not None:
        usage.add(before)
    return ChoiceOutput(
        chosen=reading.chosen,
        context=context_record(hits),
        reply=reading.raw,
        llm_calls=usage.calls + usage.errors,
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
        llm_cache_hits=usage.cache_hits,
        cache_hit_prompt_tokens=usage.cache_hit_prompt_tokens,
        seconds=time.monotonic() - started,
        error=reading.error,
        warnings=list(warnings),
        planner=planner,
    )


def _index_pipeline(kind: str) -> QualityRun:
    async def run(ctx: EvalContext, corpus: ArticleCorpus, q: ChoiceQuestion) -> ChoiceOutput:
        started = time.monotonic()
        query = retrieval_query(q)
        if kind == "sparse":
            query = bm25_terms(query)
        ranked = await asyncio.to_thread(corpus.retrievers[kind].retrieve, query, CANDIDATES)
        return await _read(ctx, q, pack_hits(ranked, ctx.context_tokens), started)

    return run


async def _collapsed_tree(
    ctx: EvalContext, corpus: ArticleCorpus, q: ChoiceQuestion
) -> ChoiceOutput:
    started = time.monotonic()
    tree = corpus.retrievers["tree"]
    assert isinstance(tree, TreeRetriever)
    hits = await asyncio.to_thread(
        tree.collapsed, retrieval_query(q), token_budget=ctx.context_tokens
    )
    return await _read(ctx, q, hits, started)


def planner_question(q: ChoiceQuestion) -> str:
    """The planner sees the options too: it may plan a search for each."""
    options = " ".join(f"({LETTERS[i]}) {o}" for i, o in enumerate(q.options))
    return f"{q.question}\nOptions: {options}"


def planner_hits(result: AskResult) -> list[Hit]:
    """Every passage the planner's searches fused, the answer step's choice first, then each
    atomic query's fused passages in rank order; tree hits keep their layer."""
    found: dict[str, Hit] = {}
    for sub in result.sub_queries:
        for search in sub.searches:
            for record in search.get("hits", []):
                found.setdefault(str(record["id"]), Hit.from_json(record))
    order = [str(s["id"]) for s in result.sources]
    order += [pid for sub in result.sub_queries for pid in sub.passage_ids]
    hits = []
    for pid in dict.fromkeys(order):
        hit = found.get(pid)
        if hit is None:  # a source without its search record: keep its text
            source = next((s for s in result.sources if str(s["id"]) == pid), None)
            if source is None:
                continue
            hit = Hit(Passage(pid, str(source.get("title", "")), str(source.get("text", ""))), 0.0)
        hits.append(hit)
    return hits


async def _planner(ctx: EvalContext, corpus: ArticleCorpus, q: ChoiceQuestion) -> ChoiceOutput:
    started = time.monotonic()
    planner = planner_settings(ctx, PLANNER_SEARCHERS)
    agent = corpus.cache.get("planner")
    if agent is None:  # one agent per article: its searchers hold that article's retrievers
        agent = planner_agent(ctx, corpus, PLANNER_SEARCHERS, planner)
        corpus.cache["planner"] = agent
    result, _ = await with_usage(lambda: agent.ask(planner_question(q)))
    hits = pack_hits(planner_hits(result), ctx.context_tokens)
    spent = planner_usage(result)  # the agent counts its own calls
    return await _read(
        ctx,
        q,
        hits,
        started,
        before=spent,
        warnings=result.errors,
        planner=planner_record(result),
    )


QUALITY_PIPELINES: dict[str, QualityPipeline] = {
    spec.name: spec
    for spec in [
        QualityPipeline(
            "leaves", "dense retrieval over the article's leaf chunks", ("dense",),
            _index_pipeline("dense"),
        ),
        QualityPipeline(
            "bm25", "BM25 over the article's leaf chunks", ("sparse",), _index_pipeline("sparse")
        ),
        QualityPipeline(
            "tree-gmm", "collapsed RAPTOR tree, GMM clustering (leaves + summaries)", ("tree",),
            _collapsed_tree, clustering="gmm",
        ),
        QualityPipeline(
            "tree-leiden", "collapsed RAPTOR tree, Leiden clustering (leaves + summaries)",
            ("tree",), _collapsed_tree, clustering="leiden",
        ),
        QualityPipeline(
            "full", "the planner over the sparse, dense and tree (Leiden) searchers",
            PLANNER_SEARCHERS, _planner, clustering=PLANNER_CLUSTERING,
        ),
    ]
}  # fmt: skip


def get_quality_pipeline(name: str) -> QualityPipeline:
    try:
        return QUALITY_PIPELINES[name]
    except KeyError:
        raise PipelineError(
            f"unknown pipeline {name!r} for a QuALITY file; known: {', '.join(QUALITY_PIPELINES)}"
        ) from None
