"""The RAPTOR collapsed-tree searcher: nodes of every layer (leaves and summaries) ranked
together, taken until the token budget is full. No LLM loop: RAPTOR's gain comes from the
summaries already in the index, so one retrieval is the search; coverage alone says whether it
looks sufficient (the planner decides what to do with that).

Registered through the ``hoptree.searchers`` entry point (``SPEC``), the way a plugin package
registers its searchers: ``searchers`` sits below ``tree`` and does not import it."""

from __future__ import annotations

import asyncio
import time

from searchers.registry import SearcherContext, SearcherSpec
from searchers.searcher import Attempt, RunScope, Searcher, SearchResult, Verdict
from searchers.verification import VerificationRule, coverage
from tree.retrieval import TreeRetriever


class TreeSearcher:
    name = "tree"
    description = "retrieves RAPTOR tree nodes of every layer (summaries and leaves) by similarity"

    def __init__(self, retriever: TreeRetriever, *, rule: VerificationRule | None = None) -> None:
        self.retriever = retriever
        self.rule = rule or VerificationRule(kind="coverage")

    async def search(
        self, query: str, *, k: int = 10, scope: RunScope | None = None
    ) -> SearchResult:
        """One retrieval; ``scope`` is accepted for the protocol (no LLM call to charge)."""
        started = time.monotonic()
        try:
            hits = await asyncio.to_thread(self.retriever.collapsed, query, max_nodes=k)
        except Exception as exc:  # a broken tree degrades the answer, it does not end it
            return SearchResult.failed(self.name, query, f"{type(exc).__name__}: {exc}", started)
        cov = coverage(query, hits)
        layers = sorted({int(h.passage.metadata.get("layer", 0)) for h in hits})
        attempt = Attempt(
            id=0,
            operation="collapsed",
            query=query,
            hit_ids=[h.id for h in hits],
            verdict=Verdict(self.rule.decide(cov, None), coverage=cov, reason="coverage rule"),
            ms=(time.monotonic() - started) * 1000,
            note=f"layers {layers}",
        )
        return SearchResult(
            searcher=self.name,
            query=query,
            hits=hits,
            attempts=[attempt],
            best_attempt=0,
            sufficient=bool(attempt.verdict and attempt.verdict.sufficient),
            stopped="sufficient" if attempt.verdict and attempt.verdict.sufficient else "exhausted",
            llm_calls=0,
            ms=attempt.ms,
        )


def _create(context: SearcherContext) -> Searcher:
    return TreeSearcher(context.retrievers["tree"])


SPEC = SearcherSpec(TreeSearcher.name, TreeSearcher.description, _create, requires=("tree",))
