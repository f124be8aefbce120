"""LevelRAG's three feedback operations on the query model, plus deduplication keys."""

from __future__ import annotations

from searchers.lucene.model import LuceneQuery


def extend(query: LuceneQuery, keyword: str) -> LuceneQuery:
    """Add ``keyword`` as a quoted SHOULD clause. Skeleton."""
    raise NotImplementedError


def emphasize(query: LuceneQuery, keyword: str, factor: float = 2.0) -> LuceneQuery:
    """Boost ``keyword`` (multiplying an existing boost by ``factor``). Skeleton."""
    raise NotImplementedError


def exclude(query: LuceneQuery, keyword: str) -> LuceneQuery:
    """Add ``keyword`` as a MUST_NOT clause. Skeleton."""
    raise NotImplementedError


def query_key(query: LuceneQuery) -> str:
    """Normalized form for deduplicating equivalent queries. Skeleton."""
    raise NotImplementedError
