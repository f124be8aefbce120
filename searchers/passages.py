"""The records that flow between ingest, indexes, retrievers and searchers.

A ``Passage`` is one retrievable unit of the corpus (a paragraph of a dataset, a chunk of a file);
a ``Hit`` is a passage returned for a query, with the retriever's score. Both are plain frozen
dataclasses that serialize to JSON with stable field names (the CLI contract: ``id``, ``title``,
``score``, ``text``), and convert to langchain-core ``Document`` for model-facing code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from langchain_core.documents import Document


@dataclass(frozen=True)
class Passage:
    id: str
    title: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "text": self.text, "metadata": self.metadata}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Passage:
        return cls(
            id=str(data["id"]),
            title=str(data.get("title") or ""),
            text=str(data.get("text") or ""),
            metadata=dict(data.get("metadata") or {}),
        )

    def to_document(self) -> Document:
        return Document(
            id=self.id, page_content=self.text, metadata={**self.metadata, "title": self.title}
        )


@dataclass(frozen=True)
class Hit:
    passage: Passage
    score: float
    retriever: str = ""

    @property
    def id(self) -> str:
        return self.passage.id

    @property
    def title(self) -> str:
        return self.passage.title

    @property
    def text(self) -> str:
        return self.passage.text

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.passage.id,
            "title": self.passage.title,
            "score": self.score,
            "text": self.passage.text,
            "retriever": self.retriever,
            "metadata": self.passage.metadata,
        }

    def to_document(self) -> Document:
        doc = self.passage.to_document()
        doc.metadata.update(score=self.score, retriever=self.retriever)
        return doc


def numbered_passages(hits: list[Hit], *, max_chars: int = 400) -> str:
    """Hits as a numbered list for a prompt, each trimmed: prompt tokens are the local model's
    main cost (~1 s per 80 tokens here), so no step sees more text than it needs."""
    if not hits:
        return "(no passages)"
    lines = []
    for number, hit in enumerate(hits, start=1):
        text = " ".join(hit.text.split())
        if len(text) > max_chars:
            text = text[:max_chars].rsplit(" ", 1)[0] + " ..."
        lines.append(f"[{number}] {hit.title}: {text}")
    return "\n".join(lines)
