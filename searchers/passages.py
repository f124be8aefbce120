"""The records that flow between ingest, indexes, retrievers and searchers.

A ``Passage`` is one retrievable unit of the corpus (a paragraph of a dataset, a chunk of a file);
a ``Hit`` is a passage returned for a query, with the retriever's score. Both are plain frozen
dataclasses that serialize to JSON with stable field names (the CLI contract: ``id``, ``title``,
``score``, ``text``), and convert to langchain-core ``Document`` for model-facing code.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypedDict

from langchain_core.documents import Document

from searchers.text import content_words, split_sentences_loose


def page_of(metadata: Mapping[str, Any] | None) -> int | None:
    """The 1-based page a passage was read from (PDF), or None: older indexes and other formats
    have no ``page`` in their metadata, and a malformed one is no page rather than an error."""
    page = (metadata or {}).get("page")
    return page if isinstance(page, int) and not isinstance(page, bool) and page > 0 else None


def source_label(title: str, page: int | None) -> str:
    """How a passage is named to a person: its title (the document and heading path), and
    " p. 7" when it comes from a page of a PDF."""
    return f"{title} p. {page}" if page is not None else title


@dataclass(frozen=True)
class Passage:
    id: str
    title: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def label(self) -> str:
        """The title with the page, as citations show it ("Report > Risks p. 7")."""
        return source_label(self.title, page_of(self.metadata))

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


class HitRecord(TypedDict):
    """A hit as JSON (``Hit.to_json``): what the planner's state, the API and the trace carry."""

    id: str
    title: str
    score: float
    text: str
    retriever: str
    metadata: dict[str, Any]


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

    @property
    def label(self) -> str:
        return self.passage.label

    def to_json(self) -> HitRecord:
        return {
            "id": self.passage.id,
            "title": self.passage.title,
            "score": self.score,
            "text": self.passage.text,
            "retriever": self.retriever,
            "metadata": self.passage.metadata,
        }

    @classmethod
    def from_json(cls, data: HitRecord | dict[str, Any]) -> Hit:
        """The inverse of ``to_json`` (the planner's state keeps hits as JSON records)."""
        return cls(
            passage=Passage.from_json(data),
            score=float(data.get("score", 0.0)),
            retriever=str(data.get("retriever") or ""),
        )

    def to_document(self) -> Document:
        doc = self.passage.to_document()
        doc.metadata.update(score=self.score, retriever=self.retriever)
        return doc


def focus_text(text: str, max_chars: int, query: str | None = None) -> str:
    """``text`` cut to ``max_chars``. Without a query: its beginning. With one: the sentence
    sharing most words with the query, the opening sentence if it fits, then the next best, in
    their original order, gaps marked "...". So the sentence that answers a query is not cut
    off for coming fourth (a 350-character prefix of "Tinted Windows (band)" loses its first
    gig); the prompt shows the title beside it, so the subject stays named."""
    text = " ".join(text.split())
    if len(text) <= max_chars:
        return text
    sentences = split_sentences_loose(text)
    wanted = content_words(query or "")
    if not wanted or len(sentences) < 2:
        return text[:max_chars].rsplit(" ", 1)[0] + " ..."
    scored = sorted(
        (i for i in range(len(sentences)) if wanted & content_words(sentences[i])),
        key=lambda i: (-len(wanted & content_words(sentences[i])), i),
    )
    # the best sentence first, then the opening one (it names the subject), then the rest
    order = [*scored[:1], 0, *scored[1:]]
    keep: list[int] = []
    used = 0
    for i in dict.fromkeys(order):
        if used + len(sentences[i]) + 5 > max_chars:
            continue
        keep.append(i)
        used += len(sentences[i]) + 5
    if not keep:  # no sentence fits whole
        return text[:max_chars].rsplit(" ", 1)[0] + " ..."
    keep.sort()
    parts = [] if keep[0] == 0 else ["..."]
    for pos, i in enumerate(keep):
        if pos and i != keep[pos - 1] + 1:
            parts.append("...")
        parts.append(sentences[i])
    if keep[-1] != len(sentences) - 1:
        parts.append("...")
    return " ".join(parts)


def numbered_passages(hits: list[Hit], *, max_chars: int = 400, query: str | None = None) -> str:
    """Hits as a numbered list for a prompt, each trimmed: prompt tokens are the local model's
    main cost (~1 s per 80 tokens here), so no step sees more text than it needs. With a
    query, each passage keeps the sentences that bear on it (``focus_text``)."""
    if not hits:
        return "(no passages)"
    return "\n".join(
        f"[{number}] {hit.title}: {focus_text(hit.text, max_chars, query)}"
        for number, hit in enumerate(hits, start=1)
    )
