"""BM25 sparse index on tantivy: the default single-machine backend of the sparse retriever."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from searchers.lucene import LuceneQuery
from searchers.passages import Hit, Passage


class TantivySparseIndex:
    """Satisfies ``searchers.retrieval.Retriever``. Skeleton: implementation lands shortly."""

    name = "sparse"

    @classmethod
    def create(cls, path: Path) -> TantivySparseIndex:
        raise NotImplementedError

    @classmethod
    def open(cls, path: Path) -> TantivySparseIndex:
        raise NotImplementedError

    def add(
        self, passages: Iterable[Passage], *, progress: Callable[[int], None] | None = None
    ) -> int:
        raise NotImplementedError

    def retrieve(self, query: str, k: int = 10) -> list[Hit]:
        raise NotImplementedError

    def retrieve_query(self, query: LuceneQuery, k: int = 10) -> list[Hit]:
        raise NotImplementedError

    def get(self, passage_id: str) -> Passage | None:
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError

    def ids(self) -> set[str]:
        raise NotImplementedError
