"""The retriever protocol: a raw index lookup with no LLM in it (LevelRAG's "retriever").

Sparse, dense and hybrid retrievers, on tantivy/FAISS or on Elasticsearch, all satisfy it, so the
searchers, the CLI and the evals never care which backend answers. Retrieval is synchronous and
CPU- or network-bound; async callers run it in a thread.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from searchers.passages import Hit, Passage


class RetrievalError(RuntimeError):
    """A retriever that cannot answer (missing index, unreachable cluster); never a bad query:
    malformed queries are repaired or escaped, not raised."""


@runtime_checkable
class Retriever(Protocol):
    name: str

    def retrieve(self, query: str, k: int = 10) -> list[Hit]:
        """Best ``k`` hits for ``query``, best first, each passage at most once."""
        ...

    def get(self, passage_id: str) -> Passage | None:
        """The stored passage with this id, or None."""
        ...

    def __len__(self) -> int:
        """Number of passages searchable."""
        ...
