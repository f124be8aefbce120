"""Render the query model to each engine's dialect."""

from __future__ import annotations

from searchers.lucene.model import LuceneQuery


def render_tantivy(query: LuceneQuery) -> str:
    """String for tantivy's ``Index.parse_query``. Skeleton: implementation lands shortly."""
    raise NotImplementedError


def render_query_string(query: LuceneQuery) -> str:
    """String for Elasticsearch ``query_string``. Skeleton: implementation lands shortly."""
    raise NotImplementedError
