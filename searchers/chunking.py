"""Sentence-preserving chunking for plain-text and markdown sources.

Retrieval units should be about a paragraph (100-200 tokens): long enough to carry a fact with its
context, short enough that the embedding model (MiniLM reads at most 256 word pieces) sees all of
it and the reader is not handed noise. Chunks end at sentence boundaries so no fact is cut in half.

Token counts are estimated with a word/punctuation regex rather than a model tokenizer: this
package must not load models, and the estimate tracks word-piece counts closely enough for sizing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from searchers.text import normalize_space, split_sentences

DEFAULT_MAX_TOKENS = 150

_TOKEN = re.compile(r"\w+|[^\w\s]", re.UNICODE)
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


def count_tokens(text: str) -> int:
    """Approximate model tokens: words and punctuation marks."""
    return len(_TOKEN.findall(text))


def _split_long(sentence: str, max_tokens: int) -> list[str]:
    """A "sentence" longer than a chunk (a table row, a list without punctuation) is cut at word
    boundaries; otherwise the embedding model would silently truncate it."""
    words = sentence.split(" ")
    parts: list[str] = []
    current: list[str] = []
    size = 0
    for word in words:
        n = count_tokens(word)
        if current and size + n > max_tokens:
            parts.append(" ".join(current))
            current, size = [], 0
        current.append(word)
        size += n
    if current:
        parts.append(" ".join(current))
    return parts


@dataclass(frozen=True)
class _Unit:
    text: str
    tokens: int
    new_paragraph: bool


def _units(paragraphs: list[str], max_tokens: int) -> Iterator[_Unit]:
    for paragraph in paragraphs:
        first = True
        for sentence in split_sentences(paragraph):
            pieces = (
                _split_long(sentence, max_tokens)
                if count_tokens(sentence) > max_tokens
                else [sentence]
            )
            for piece in pieces:
                yield _Unit(piece, count_tokens(piece), first)
                first = False


def chunk_paragraphs(paragraphs: list[str], max_tokens: int = DEFAULT_MAX_TOKENS) -> list[str]:
    """Greedy packing of whole sentences into chunks of at most ``max_tokens``.

    Paragraph breaks are kept as blank lines inside a chunk so a reader still sees the structure.
    A short tail (under a quarter of the budget) joins the previous chunk, up to 4/3 of the
    budget, so no chunk is a lone fragment (150 -> chunks of 38..200 tokens).
    """
    if max_tokens < 8:
        raise ValueError(f"max_tokens must be at least 8, got {max_tokens}")
    chunks: list[list[_Unit]] = []
    current: list[_Unit] = []
    size = 0
    for unit in _units(paragraphs, max_tokens):
        if current and size + unit.tokens > max_tokens:
            chunks.append(current)
            current, size = [], 0
        current.append(unit)
        size += unit.tokens
    if current:
        tail_size = size
        if chunks and tail_size < max_tokens // 4:
            previous = sum(u.tokens for u in chunks[-1])
            if previous + tail_size <= max_tokens * 4 // 3:
                chunks[-1].extend(current)
                current = []
        if current:
            chunks.append(current)
    return [_join(chunk) for chunk in chunks]


def _join(units: list[_Unit]) -> str:
    out: list[str] = []
    for i, unit in enumerate(units):
        if i:
            out.append("\n\n" if unit.new_paragraph else " ")
        out.append(unit.text)
    return "".join(out)


def text_paragraphs(text: str) -> list[str]:
    """Blank-line separated blocks, each with its internal line breaks folded."""
    blocks = re.split(r"\n\s*\n", text.replace("\r\n", "\n"))
    return [normalize_space(b) for b in blocks if b.strip()]


@dataclass(frozen=True)
class Section:
    """A markdown section: its heading path (outermost first) and its body paragraphs."""

    headings: tuple[str, ...]
    paragraphs: list[str]


def markdown_sections(text: str) -> list[Section]:
    """Split markdown at ATX headings (``#`` .. ``######``), ignoring ``#`` inside code fences.

    Each section remembers the chain of headings above it, so a chunk can be titled by where it
    sits in the document rather than only by the file name.
    """
    sections: list[Section] = []
    stack: list[tuple[int, str]] = []
    body: list[str] = []
    in_fence = False

    def flush() -> None:
        paragraphs = text_paragraphs("\n".join(body))
        if paragraphs:
            sections.append(Section(tuple(h for _, h in stack), paragraphs))
        body.clear()

    for line in text.replace("\r\n", "\n").split("\n"):
        if _FENCE.match(line):
            in_fence = not in_fence
            body.append(line)
            continue
        heading = None if in_fence else _HEADING.match(line)
        if heading is None:
            body.append(line)
            continue
        flush()
        level = len(heading.group(1))
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, heading.group(2).strip()))
    flush()
    return sections
