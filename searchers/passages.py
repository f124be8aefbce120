"""The records that flow between ingest, indexes, retrievers and searchers.

A ``Passage`` is one retrievable unit of the corpus (a paragraph of a dataset, a chunk of a file);
a ``Hit`` is a passage returned for a query, with the retriever's score. Both are plain frozen
dataclasses that serialize to JSON with stable field names (the CLI contract: ``id``, ``title``,
``score``, ``text``), and convert to langchain-core ``Document`` for model-facing code.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypedDict

from langchain_core.documents import Document

from searchers.text import RELATED_WORDS, content_words, split_sentences_loose


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


# A parenthesis holding a span of years (an opening sentence's life dates) answers a query for
# a birth or death date: measured on 2Wiki, "date of death of Thomas Valentine Cooper" ranked
# "... served until his death in 1909" above "Thomas Valentine Cooper (January 16, 1835 -
# December 19, 1909), ..." and the date dropped out of the window.
_LIFE_DATES = re.compile(r"\([^()]*\b\d{3,4}\b[^()]*[-–—][^()]*\d{2,4}[^()]*\)")
_LIFE_WORDS = frozenset({"birth", "born", "death", "died", "date"})


def _prefix(text: str, max_chars: int) -> str:
    """``text``'s beginning, cut at a word before ``max_chars``, the cut marked."""
    return text[:max_chars].rsplit(" ", 1)[0] + " ..."


def _stem(word: str) -> str:
    """Five letters of a word are enough to match its forms ("populous", "population";
    "directed", "director") in a sentence ranking."""
    return word[:5]


def focus_text(
    text: str, max_chars: int, query: str | None = None, title: str | None = None
) -> str:
    """``text`` cut to ``max_chars``. Without a query: its beginning. With one: the sentence
    sharing most words with the query, the opening sentence if it fits, then the next best,
    then the rest in order while they fit, in their original order, gaps marked "...". So the
    sentence that answers a query is not cut off for coming fourth (a 350-character prefix of
    "Tinted Windows (band)" loses its first gig); the prompt shows the title beside it, so the
    subject stays named.

    A passage's ``title`` names its subject, which every sentence is about: the query's words
    that the title holds do not pick a sentence while others do, and a query word also matches
    the words a sentence says it with (``RELATED_WORDS``). Measured on 2Wiki: for "place of
    birth of Ole Michael Ludvigsen Selberg" the sentence naming his sons ("... and Atle
    Selberg") was kept and "He was born in Flora." dropped, 41 characters over the limit.
    Without a title (a question's passages: one-call RAG, the answer step) the ranking is the
    first one, by shared words only: there the question often names a passage's subject and the
    answer stands in its opening sentence, and the title's ranking gained nothing (measured on
    the v4 one-call rows: the answer shown 6 times more and 4 times less)."""
    text = " ".join(text.split())
    if len(text) <= max_chars:
        return text
    sentences = split_sentences_loose(text)
    wanted = content_words(query or "")
    if not wanted or len(sentences) < 2:
        return _prefix(text, max_chars)
    if title is None:
        return _by_shared_words(sentences, wanted, max_chars, text)
    subject = {_stem(w) for w in wanted & content_words(title)}
    relation = {_stem(w) for w in wanted - content_words(title)}
    relation |= {_stem(r) for w in wanted for r in RELATED_WORDS.get(w, ())}
    stems = [{_stem(w) for w in content_words(sentence)} for sentence in sentences]
    for i, sentence in enumerate(sentences):
        if _LIFE_DATES.search(sentence):  # "X (January 16, 1835 – December 19, 1909) was ..."
            stems[i] |= _LIFE_WORDS
    # the relation's words choose, the subject's (every sentence is about it) break ties
    score = {i: (len(relation & stems[i]), len(subject & stems[i])) for i in range(len(stems))}
    scored = sorted(
        (i for i in score if score[i] > (0, 0)), key=lambda i: (-score[i][0], -score[i][1], i)
    )
    if not scored:
        return _prefix(text, max_chars)
    best = scored[0]
    if len(sentences[best]) + 5 > max_chars:
        # the best sentence alone is too long (an infobox without full stops): its beginning
        cut = sentences[best][:max_chars].rsplit(" ", 1)[0]
        return ("" if best == 0 else "... ") + cut + " ..."
    # the best sentence first, then the opening one (it names the subject), then the rest of
    # the matching ones, then any other while room is left
    order = [best, 0, *scored[1:], *range(len(sentences))]
    kept = _kept(sentences, order, max_chars)
    return kept or _prefix(text, max_chars)


def _kept(sentences: list[str], order: list[int], max_chars: int) -> str:
    """The sentences of ``order`` that fit, in their original order, gaps marked "..." ("" when
    none fits whole)."""
    keep: list[int] = []
    used = 0
    for i in dict.fromkeys(order):
        if used + len(sentences[i]) + 5 > max_chars:
            continue
        keep.append(i)
        used += len(sentences[i]) + 5
    if not keep:  # no sentence fits whole
        return ""
    keep.sort()
    parts = [] if keep[0] == 0 else ["..."]
    for pos, i in enumerate(keep):
        if pos and i != keep[pos - 1] + 1:
            parts.append("...")
        parts.append(sentences[i])
    if keep[-1] != len(sentences) - 1:
        parts.append("...")
    return " ".join(parts)


def _by_shared_words(sentences: list[str], wanted: set[str], max_chars: int, text: str) -> str:
    """The first ranking: the sentence sharing most words with the query, the opening one if it
    fits, then the other sentences sharing words, next best first."""
    scored = sorted(
        (i for i in range(len(sentences)) if wanted & content_words(sentences[i])),
        key=lambda i: (-len(wanted & content_words(sentences[i])), i),
    )
    order = [*scored[:1], 0, *scored[1:]]
    kept = _kept(sentences, order, max_chars)
    return kept or _prefix(text, max_chars)


def numbered_passages(
    hits: list[Hit], *, max_chars: int = 400, query: str | None = None, titled: bool = False
) -> str:
    """Hits as a numbered list for a prompt, each trimmed: prompt tokens are the local model's
    main cost (~1 s per 80 tokens here), so no step sees more text than it needs. With a
    query, each passage keeps the sentences that bear on it (``focus_text``); ``titled``: each
    passage's title names its subject (an atomic query's passages), so the query's other words
    choose the sentences."""
    if not hits:
        return "(no passages)"
    return "\n".join(
        f"[{number}] {hit.title}: "
        f"{focus_text(hit.text, max_chars, query, hit.title if titled else None)}"
        for number, hit in enumerate(hits, start=1)
    )
