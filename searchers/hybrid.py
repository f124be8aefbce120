"""Hybrid retrieval by reciprocal-rank fusion (Cormack et al., 2009) over any retrievers.

RRF uses ranks only, so it needs no score calibration between BM25 (unbounded) and cosine
(-1..1), and it works over any mix of backends (tantivy, FAISS, Elasticsearch). A passage's fused
score is the sum over the rankings that contain it of ``weight / (rrf_k + rank)``, rank from 1.
Each retriever is asked for more than ``k`` hits (``depth``), since a passage ranked just outside
one list's top ``k`` can still win on the sum.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from searchers.passages import Hit, Passage
from searchers.retrieval import Retriever

DEFAULT_RRF_K = 60


@dataclass
class FusedHit:
    """One passage after fusion: its RRF score and its 1-based rank in each input ranking."""

    passage: Passage
    score: float
    ranks: dict[str, int] = field(default_factory=dict)


def reciprocal_rank_fusion(
    rankings: Sequence[tuple[str, Sequence[Hit]]],
    *,
    rrf_k: int = DEFAULT_RRF_K,
    weights: Sequence[float] | None = None,
) -> list[FusedHit]:
    """Fuse named rankings into one, best first, each passage id once.

    Within one ranking a repeated id counts at its best rank only. Ties on the fused score break
    on the best single rank, then on first appearance, so the output is deterministic.
    """
    if rrf_k < 0:
        raise ValueError(f"rrf_k must be >= 0, got {rrf_k}")
    if weights is not None and len(weights) != len(rankings):
        raise ValueError(f"{len(weights)} weights for {len(rankings)} rankings")
    fused: dict[str, FusedHit] = {}
    order: dict[str, int] = {}
    labels: set[str] = set()
    for index, (name, hits) in enumerate(rankings):
        weight = 1.0 if weights is None else float(weights[index])
        label = name if name not in labels else f"{name}#{index}"  # two retrievers, one name
        labels.add(label)
        seen: set[str] = set()
        for rank, hit in enumerate(hits, start=1):
            if hit.id in seen:
                continue
            seen.add(hit.id)
            entry = fused.get(hit.id)
            if entry is None:
                entry = fused[hit.id] = FusedHit(passage=hit.passage, score=0.0)
                order[hit.id] = len(order)
            entry.score += weight / (rrf_k + rank)
            entry.ranks[label] = rank
    return sorted(
        fused.values(),
        key=lambda e: (-e.score, min(e.ranks.values()), order[e.passage.id]),
    )


class HybridRetriever:
    """Satisfies ``searchers.retrieval.Retriever``; hits carry ``retriever="hybrid"``, the RRF
    sum as score, and ``metadata["rrf_ranks"]`` = {retriever name: rank} for the trace."""

    name = "hybrid"

    def __init__(
        self,
        retrievers: Sequence[Retriever],
        *,
        rrf_k: int = DEFAULT_RRF_K,
        depth: int | None = None,
        weights: Sequence[float] | None = None,
    ) -> None:
        if not retrievers:
            raise ValueError("hybrid retrieval needs at least one retriever")
        if weights is not None and len(weights) != len(retrievers):
            raise ValueError(f"{len(weights)} weights for {len(retrievers)} retrievers")
        if depth is not None and depth < 1:
            raise ValueError(f"depth must be >= 1, got {depth}")
        self.retrievers = list(retrievers)
        self.rrf_k = rrf_k
        self.depth = depth
        self.weights = list(weights) if weights is not None else None

    def depth_for(self, k: int) -> int:
        """How many hits to ask each retriever for: ``depth`` if set, else ``2k``."""
        return max(k, self.depth if self.depth is not None else 2 * k)

    def retrieve(self, query: str, k: int = 10) -> list[Hit]:
        if k <= 0 or not query.strip():
            return []
        depth = self.depth_for(k)
        rankings = [(r.name, r.retrieve(query, depth)) for r in self.retrievers]
        fused = reciprocal_rank_fusion(rankings, rrf_k=self.rrf_k, weights=self.weights)
        return [_to_hit(entry, self.name) for entry in fused[:k]]

    def get(self, passage_id: str) -> Passage | None:
        for retriever in self.retrievers:
            passage = retriever.get(passage_id)
            if passage is not None:
                return passage
        return None

    def __len__(self) -> int:
        """The largest member's size: the union is not known without reading every index, and
        in one index directory all members hold the same passages."""
        return max(len(r) for r in self.retrievers)


def _to_hit(entry: FusedHit, name: str) -> Hit:
    p = entry.passage
    metadata = {**p.metadata, "rrf_ranks": dict(entry.ranks)}
    return Hit(
        passage=Passage(id=p.id, title=p.title, text=p.text, metadata=metadata),
        score=entry.score,
        retriever=name,
    )
