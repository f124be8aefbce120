"""Parse Lucene strings written by a small LLM, repairing what is malformed instead of raising."""

from __future__ import annotations

from collections.abc import Collection

from searchers.lucene.model import ParsedQuery

DEFAULT_FIELDS: tuple[str, ...] = ("title", "text")


def parse_lucene(text: str, *, fields: Collection[str] = DEFAULT_FIELDS) -> ParsedQuery:
    """Parse ``text``; never raises. Skeleton: implementation lands shortly."""
    raise NotImplementedError
