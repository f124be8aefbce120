"""Merging what several searchers found for one atomic query.

Each searcher returns its own ranking; the planner wants one list, each passage once. Rankings
are fused by reciprocal rank (ranks only, so BM25 and cosine scores need no calibration); a
searcher whose best attempt verified counts double, since its ranking is the one that was checked
against the query. Passages whose text is a duplicate of a better-ranked one (the same paragraph
indexed twice, a chunk overlapping its neighbour) are dropped by a normalized-text key.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from searchers.hybrid import DEFAULT_RRF_K, reciprocal_rank_fusion
from searchers.passages import Hit
from searchers.searcher import SearchResult

VERIFIED_WEIGHT = 2.0
_NON_WORD = re.compile(r"\W+")


def _text_key(hit: Hit) -> str:
    return _NON_WORD.sub(" ", hit.text.casefold()).strip()[:300]


def fuse_results(
    results: Sequence[SearchResult], *, k: int = 10, rrf_k: int = DEFAULT_RRF_K
) -> list[Hit]:
    """One ranking from several searchers' results, best first, duplicates removed."""
    rankings = [(r.searcher, r.hits) for r in results if r.hits]
    if not rankings:
        return []
    weights = [VERIFIED_WEIGHT if r.sufficient else 1.0 for r in results if r.hits]
    fused = reciprocal_rank_fusion(rankings, rrf_k=rrf_k, weights=weights)
    hits: list[Hit] = []
    seen_text: set[str] = set()
    for entry in fused:
        hit = Hit(passage=entry.passage, score=entry.score, retriever="fused")
        key = _text_key(hit)
        if key and key in seen_text:
            continue
        seen_text.add(key)
        hits.append(hit)
        if len(hits) >= k:
            break
    return hits
