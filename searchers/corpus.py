"""Corpus readers: files and evaluation datasets in, ``Passage`` records out.

Every reader is a generator with stable, content-derived ids, so ingest can be re-run and appended
to by id alone: the same input always yields the same ids, and the index skips ids it already has.

Supported inputs (``detect_format`` picks one from the file; callers may force one):

- ``jsonl``: one passage per line, ``{"id", "title", "text", "metadata"}``; FlashRAG's corpus
  layout ``{"id", "contents": "\\"Title\\"\\ntext"}`` is read too.
- ``hotpotqa``: HotpotQA in the Hugging Face layout (``context{title[], sentences[][]}``) or the
  original one (``context: [[title, [sentences]], ...]``).
- ``flashrag``: FlashRAG question files, ``metadata.context{title[], sentences[][] | content[][]}``
  (HotpotQA and 2WikiMultihopQA).
- ``musique``: MuSiQue-Ans rows, ``paragraphs[{idx, title, paragraph_text, is_supporting}]`` with
  ``question_decomposition``.
- ``text``: plain text and markdown, chunked at sentence boundaries.
- ``pdf``, ``html``, ``docx``: documents, converted by ``searchers.documents`` and chunked like
  markdown; a chunk never spans two PDF pages, and its metadata carries ``page`` (PDF) and
  ``headings`` (all three), which citations show as "Title > Heading p. 7".

For question files the corpus is the union of every question's context paragraphs deduplicated by
title (the "open" setting of the data README): one passage per paragraph, id from the title, so
the evals can map supporting-fact titles to passage ids with ``paragraph_id``. MuSiQue is the
exception: its paragraphs share titles across questions with different text, so they are
deduplicated by (title, text) and their ids come from both (``paragraph_text_id``).

Why one module of this length: every reader shares the id rules, ``CorpusError`` and the format
table, and ``read_passages`` dispatches to all of them, so readers split by format would import
those back from a third module for a hundred-odd lines each.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

from searchers.chunking import (
    DEFAULT_MAX_TOKENS,
    chunk_paragraphs,
    markdown_sections,
    normalize_space,
    text_paragraphs,
)
from searchers.documents import DOCUMENT_SUFFIXES, ConvertedDocument, DocumentError, convert
from searchers.jsonl import json_objects
from searchers.passages import Passage
from searchers.source_filter import SkippedSource, SourceFilterError, walk_folder
from searchers.text_decoding import DecodedText, NotText, decode_text

CorpusFormat = Literal[
    "auto", "jsonl", "hotpotqa", "flashrag", "musique", "text", "pdf", "html", "docx"
]
FORMATS: tuple[str, ...] = get_args(CorpusFormat)
# The formats whose rows are questions carrying their own paragraphs (``read_qa_paragraphs``).
QA_FORMATS: tuple[str, ...] = ("hotpotqa", "flashrag", "musique")
# The formats converted by ``searchers.documents``.
DOCUMENT_FORMATS: tuple[str, ...] = ("pdf", "html", "docx")

TEXT_SUFFIXES = frozenset({".txt", ".text", ".md", ".markdown", ".rst"})
MARKDOWN_SUFFIXES = frozenset({".md", ".markdown"})
JSON_SUFFIXES = frozenset({".jsonl", ".json", ".ndjson"})
# A directory source is walked for these; any other file inside it is reported as not read
# ("unsupported"), not guessed at (index directories, hidden and .hoptreeignore'd files are
# skipped without a word of blame: source_filter).
SUPPORTED_SUFFIXES = TEXT_SUFFIXES | JSON_SUFFIXES | frozenset(DOCUMENT_SUFFIXES)
MAX_DIRECTORY_FILES = 1_000_000
_PEEK_LINES = 50


class CorpusError(ValueError):
    """Input that cannot be read as a corpus; the message names the file and, where it applies,
    the line."""


# Letters NFKD does not decompose into ASCII; without these "Żuławski" would slug to "zuawski".
_TRANSLITERATE = str.maketrans(
    {"ł": "l", "Ł": "L", "ø": "o", "Ø": "O", "đ": "d", "Đ": "D", "ß": "ss", "æ": "ae", "Æ": "AE"}
    | {"œ": "oe", "Œ": "OE", "þ": "th", "Þ": "Th", "ð": "d", "Ð": "D", "ı": "i"}
)


def _slug(text: str, limit: int = 40) -> str:
    """Readable id prefix: ASCII, lowercase, hyphens."""
    folded = unicodedata.normalize("NFKD", text.translate(_TRANSLITERATE))
    ascii_text = folded.encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")
    return slug[:limit].rstrip("-") or "p"


def _digest(*parts: str, size: int = 10) -> str:
    h = hashlib.sha1()
    for part in parts:
        h.update(part.encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()[:size]


def paragraph_id(title: str) -> str:
    """Stable id of a dataset paragraph: readable slug plus a hash of the exact title (the slug
    alone would merge "Ed Wood" and "Ed Wood (film)"-like pairs after transliteration)."""
    return f"{_slug(title)}-{_digest(title)}"


def paragraph_text_id(title: str, text: str) -> str:
    """Stable id of a paragraph whose title does not identify it (MuSiQue: one title, several
    texts across questions): the title's slug, to stay readable, plus a hash of title and text.
    ``text`` must be the normalised text the passage stores, so every reader derives the same
    id from the same paragraph."""
    return f"{_slug(title)}-{_digest(title, text)}"


def chunk_id(source_name: str, title: str, text: str) -> str:
    """Content-addressed id of a file chunk: unchanged chunks keep their id when a file is
    re-ingested, edited chunks get a new one (appended, never silently ignored)."""
    return f"{_slug(Path(source_name).stem, 24)}-{_digest(source_name, title, text, size=12)}"


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# --------------------------------------------------------------------------- format detection


def _first_record(path: Path) -> tuple[int, dict[str, Any]] | None:
    """The first non-blank line of a JSON-lines file, parsed; None if the file has none."""
    try:
        return _first_record_of(path)
    except UnicodeDecodeError as exc:
        raise CorpusError(f"{path}: not UTF-8 text ({exc.reason}); JSON must be UTF-8") from exc


def _first_record_of(path: Path) -> tuple[int, dict[str, Any]] | None:
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if lineno > _PEEK_LINES:
                break
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise CorpusError(
                    f"{path}:{lineno}: not JSON lines ({exc.msg}); a single JSON document or "
                    "another layout needs --format"
                ) from exc
            if not isinstance(record, dict):
                raise CorpusError(f"{path}:{lineno}: expected a JSON object per line")
            return lineno, record
    return None


def format_of_record(record: dict[str, Any]) -> str | None:
    """Which layout a parsed JSON-lines record has, or None."""
    if isinstance(record.get("paragraphs"), list) and "question_decomposition" in record:
        return "musique"
    context = record.get("context")
    if isinstance(context, dict) and "title" in context and "sentences" in context:
        return "hotpotqa"
    if isinstance(context, list) and context and isinstance(context[0], list):
        return "hotpotqa"
    metadata = record.get("metadata")
    if isinstance(metadata, dict) and isinstance(metadata.get("context"), dict):
        return "flashrag"
    if "text" in record or "contents" in record:
        return "jsonl"
    return None


def detect_format(path: Path) -> str:
    """Pick a reader from the suffix, and for JSON files from the first record's fields."""
    suffix = path.suffix.lower()
    if suffix in TEXT_SUFFIXES:
        return "text"
    if suffix in DOCUMENT_SUFFIXES:
        return DOCUMENT_SUFFIXES[suffix]
    if suffix not in JSON_SUFFIXES:
        raise CorpusError(
            f"{path}: cannot tell the format from the suffix {suffix or '(none)'!r}; "
            f"pass --format ({'|'.join(FORMATS)})"
        )
    first = _first_record(path)
    if first is None:
        return "jsonl"  # an empty file: nothing to read whatever the layout
    lineno, record = first
    fmt = format_of_record(record)
    if fmt is None:
        keys = ", ".join(sorted(record)[:8])
        hint = (
            " (questions without context paragraphs have nothing to index)"
            if "question" in record
            else ""
        )
        raise CorpusError(
            f"{path}:{lineno}: unknown record layout (fields: {keys}){hint}; expected a passage "
            "{id,title,text}, a HotpotQA row with context, a FlashRAG row with metadata.context, "
            "or a MuSiQue row with paragraphs and question_decomposition"
        )
    return fmt


@dataclass
class SourceSelection:
    """What ``select_sources`` found: the files to read, in order, and what the folders held
    that is never read as a source (``searchers.source_filter``), for the caller to report:
    the files of a type no reader takes have the reason ``unsupported``. ``named``: the files
    named on the command line (not found in a folder), whose malformed content is an error
    rather than one file of a folder not read."""

    files: list[Path] = field(default_factory=list)
    skipped: list[SkippedSource] = field(default_factory=list)
    named: set[Path] = field(default_factory=set)


def select_sources(sources: Iterable[Path]) -> SourceSelection:
    """Files named on the command line as they are, and folders walked (sorted, supported
    suffixes) without index directories, hidden files and folders, or what a ``.hoptreeignore``
    excludes (``searchers.source_filter.walk_folder``). A named path that exists but is no
    file (a dangling link, a pipe) is kept, for the build to name with its reason; one that
    does not exist at all is a ``CorpusError``."""
    selection = SourceSelection()
    for source in sources:
        if source.is_dir():
            try:
                walk = walk_folder(
                    source,
                    SUPPORTED_SUFFIXES,
                    max_files=MAX_DIRECTORY_FILES,
                    report_unsupported=True,
                )
            except SourceFilterError as exc:
                raise CorpusError(str(exc)) from exc
            selection.files.extend(walk.files)
            selection.skipped.extend(walk.skipped)
        elif os.path.lexists(source):
            selection.files.append(source)
            selection.named.add(source)
        else:
            raise CorpusError(f"{source}: no such file or directory")
    return selection


def expand_sources(sources: Iterable[Path]) -> list[Path]:
    """The files ``select_sources`` reads, without the report of what it skipped."""
    return select_sources(sources).files


# --------------------------------------------------------------------------- readers


def _json_lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    with path.open(encoding="utf-8") as fh:
        yield from json_objects(fh, path, error=CorpusError, expected="expected a JSON object")


def read_jsonl(path: Path) -> Iterator[Passage]:
    """Passages one per line. A missing id is derived from the content, so a hand-written file
    without ids still re-ingests idempotently."""
    for lineno, record in _json_lines(path):
        title = record.get("title")
        text = record.get("text")
        if text is None and isinstance(record.get("contents"), str):
            # FlashRAG corpus layout: the title is the first line, in quotes.
            head, _, rest = record["contents"].partition("\n")
            title = title if title is not None else head.strip().strip('"')
            text = rest
        if not isinstance(text, str):
            raise CorpusError(f"{path}:{lineno}: a passage needs a string 'text' field")
        if title is not None and not isinstance(title, str):
            raise CorpusError(f"{path}:{lineno}: 'title' must be a string")
        metadata = record.get("metadata") or {}
        if not isinstance(metadata, dict):
            raise CorpusError(f"{path}:{lineno}: 'metadata' must be an object")
        raw_id = record.get("id")
        if raw_id is not None and not isinstance(raw_id, str | int):
            raise CorpusError(f"{path}:{lineno}: 'id' must be a string or an integer")
        title = title or ""
        if not text.strip():
            continue
        pid = str(raw_id) if raw_id is not None else chunk_id(path.name, title, text)
        if not pid.strip():
            raise CorpusError(f"{path}:{lineno}: empty 'id'")
        yield Passage(id=pid, title=title, text=text, metadata=dict(metadata))


def _context_pairs(
    path: Path, lineno: int, context: Any, key: str
) -> Iterator[tuple[str, list[str]]]:
    if isinstance(context, list):  # original HotpotQA: [[title, [sentences...]], ...]
        for item in context:
            if not (isinstance(item, list) and len(item) == 2):
                raise CorpusError(f"{path}:{lineno}: context items must be [title, sentences]")
            yield str(item[0]), list(item[1])
        return
    if not isinstance(context, dict):
        raise CorpusError(f"{path}:{lineno}: 'context' must be an object")
    titles = context.get("title")
    bodies = context.get(key)
    if not isinstance(titles, list) or not isinstance(bodies, list) or len(titles) != len(bodies):
        raise CorpusError(f"{path}:{lineno}: context needs equally long 'title' and '{key}' lists")
    for title, sentences in zip(titles, bodies, strict=True):
        if not isinstance(sentences, list):
            raise CorpusError(f"{path}:{lineno}: context '{key}' entries must be lists")
        yield str(title), sentences


def _paragraphs(path: Path, fmt: str) -> Iterator[tuple[int, str, list[str]]]:
    for lineno, record in _json_lines(path):
        if fmt == "hotpotqa":
            if "context" not in record:
                raise CorpusError(f"{path}:{lineno}: a HotpotQA row needs 'context'")
            context, key = record["context"], "sentences"
        else:
            metadata = record.get("metadata")
            if not isinstance(metadata, dict) or "context" not in metadata:
                raise CorpusError(f"{path}:{lineno}: a FlashRAG row needs 'metadata.context'")
            context = metadata["context"]
            key = "content" if isinstance(context, dict) and "content" in context else "sentences"
        for title, sentences in _context_pairs(path, lineno, context, key):
            yield lineno, title, [str(s) for s in sentences]


def musique_paragraphs(record: dict[str, Any], where: str) -> list[tuple[int, str, str]]:
    """``(idx, title, text)`` of one MuSiQue row's paragraphs, text whitespace-normalised and
    empty paragraphs left out. Shared by the open corpus and ``evals.datasets`` so both derive
    the same text, hence the same ``paragraph_text_id``. ``where`` is ``FILE:LINE``."""
    paragraphs = record.get("paragraphs")
    if not isinstance(paragraphs, list):
        raise CorpusError(f"{where}: a MuSiQue row needs a 'paragraphs' list")
    out: list[tuple[int, str, str]] = []
    for item in paragraphs:
        if not isinstance(item, dict):
            raise CorpusError(f"{where}: MuSiQue paragraphs must be objects")
        idx, title, text = item.get("idx"), item.get("title"), item.get("paragraph_text")
        if not isinstance(idx, int) or isinstance(idx, bool):
            raise CorpusError(f"{where}: a MuSiQue paragraph needs an integer 'idx'")
        if not isinstance(title, str) or not isinstance(text, str):
            raise CorpusError(
                f"{where}: a MuSiQue paragraph needs string 'title' and 'paragraph_text'"
            )
        text = normalize_space(text)
        if text:
            out.append((idx, title, text))
    return out


def _read_musique(path: Path) -> Iterator[Passage]:
    """Every MuSiQue paragraph once by (title, text): a title alone would drop the second of
    two different paragraphs that share it (193 titles of the shared dev sample do)."""
    seen: set[tuple[str, str]] = set()
    for lineno, record in _json_lines(path):
        for _idx, title, text in musique_paragraphs(record, f"{path}:{lineno}"):
            if (title, text) in seen:
                continue
            seen.add((title, text))
            yield Passage(
                id=paragraph_text_id(title, text),
                title=title,
                text=text,
                metadata={"source": path.name, "format": "musique"},
            )


def read_qa_paragraphs(path: Path, fmt: str) -> Iterator[Passage]:
    """The open corpus of a question file: every context paragraph once, first title wins
    (MuSiQue: once per distinct title and text).

    Sentences are stripped and joined with single spaces: HotpotQA stores them with a leading
    space, 2Wiki without, and the passage text should not depend on which.
    """
    if fmt not in QA_FORMATS:
        raise ValueError(f"not a question-file format: {fmt}")
    if fmt == "musique":
        yield from _read_musique(path)
        return
    seen: set[str] = set()
    for _lineno, title, sentences in _paragraphs(path, fmt):
        if title in seen:
            continue
        text = normalize_space(" ".join(s.strip() for s in sentences))
        if not text:
            continue
        seen.add(title)
        yield Passage(
            id=paragraph_id(title),
            title=title,
            text=text,
            metadata={"source": path.name, "format": fmt, "sentences": len(sentences)},
        )


def _file_title(path: Path) -> str:
    return normalize_space(re.sub(r"[_]+", " ", path.stem)) or path.name


def read_text(path: Path, *, max_tokens: int = DEFAULT_MAX_TOKENS) -> Iterator[Passage]:
    """Plain text or markdown, chunked at sentence boundaries; in any encoding
    ``searchers.text_decoding`` can tell (``DocumentError`` when it is binary or none fits).

    Markdown chunks are titled by their heading path under the document title (the first
    top-level heading, else the file name), so "Install > From source" stays findable by title.
    """
    return _text_passages(path, read_text_file(path).text, max_tokens)


def read_text_file(path: Path) -> DecodedText:
    """A text file's text and encoding; ``DocumentError`` (``binary`` or ``encoding``) when it
    is not text: per file, like a broken PDF, so one such file does not sink a folder's build."""
    try:
        return decode_text(path.read_bytes())
    except NotText as exc:
        raise DocumentError(path, exc.reason, exc.detail) from exc


def _text_passages(path: Path, text: str, max_tokens: int) -> Iterator[Passage]:
    file_title = _file_title(path)
    if path.suffix.lower() in MARKDOWN_SUFFIXES:
        groups = _markdown_groups(text, file_title)
    else:
        groups = [_Group(file_title, (), text_paragraphs(text))]
    yield from _group_passages(path.name, "text", groups, max_tokens)


@dataclass(frozen=True)
class _Group:
    """Paragraphs that share a title: a markdown section, or a PDF page's stretch under one
    outline heading."""

    title: str
    headings: tuple[str, ...]
    paragraphs: list[str]
    page: int | None = None


def _markdown_groups(
    text: str, file_title: str, doc_title: str | None = None, *, shared_top: bool = False
) -> list[_Group]:
    """Markdown sections titled by their heading path under the document title: ``doc_title``
    (the file's own metadata), else the first top-level heading that has text of its own, else
    (``shared_top``, converted documents) the one heading every section sits under, else
    ``file_title``. Markdown files keep the first rules alone, so their chunk ids stay put."""
    sections = markdown_sections(text)
    first = next((s.headings[0] for s in sections if len(s.headings) == 1), None)
    if first is None and shared_top and doc_title is None:
        tops = {s.headings[0] if s.headings else None for s in sections}
        first = tops.pop() if len(tops) == 1 else None
    doc_title = doc_title or first
    groups = []
    for section in sections:
        headings = list(section.headings)
        if doc_title is not None and headings and headings[0] == doc_title:
            headings = headings[1:]
        title = " > ".join([doc_title or file_title, *headings])
        groups.append(_Group(title, section.headings, section.paragraphs))
    return groups


def _group_passages(
    source_name: str,
    fmt: str,
    groups: Iterable[_Group],
    max_tokens: int,
    extra: dict[str, Any] | None = None,
) -> Iterator[Passage]:
    position = 0
    for group in groups:
        for chunk in chunk_paragraphs(group.paragraphs, max_tokens):
            metadata: dict[str, Any] = {"source": source_name, "format": fmt, "chunk": position}
            if group.headings:
                metadata["headings"] = list(group.headings)
            if group.page is not None:
                metadata["page"] = group.page
            metadata.update(extra or {})
            yield Passage(
                id=chunk_id(source_name, group.title, chunk),
                title=group.title,
                text=chunk,
                metadata=metadata,
            )
            position += 1


def _pdf_groups(document: ConvertedDocument, file_title: str) -> list[_Group]:
    doc_title = document.title or file_title
    groups = []
    for part in document.parts:
        headings = list(part.headings)
        if headings and headings[0] == doc_title:
            headings = headings[1:]
        paragraphs = text_paragraphs(part.text)
        if paragraphs:
            title = " > ".join([doc_title, *headings])
            groups.append(_Group(title, part.headings, paragraphs, part.page))
    return groups


def read_document(
    path: Path, fmt: str | None = None, *, max_tokens: int = DEFAULT_MAX_TOKENS
) -> Iterator[Passage]:
    """A PDF, HTML or DOCX file as passages (``searchers.documents`` converts it); raises
    ``DocumentError`` (with the reason the build report shows) when it cannot be read.

    The whole file is converted before the first passage is yielded, so a file that fails
    half-way yields nothing."""
    fmt = fmt or DOCUMENT_SUFFIXES.get(path.suffix.lower())
    if fmt not in DOCUMENT_FORMATS:
        raise CorpusError(f"{path}: not a document format: {fmt!r}")
    document = convert(path, fmt)  # type: ignore[arg-type]
    file_title = _file_title(path)
    if document.format == "pdf":
        groups = _pdf_groups(document, file_title)
        extra = {"pages": document.pages} if document.pages else None
    else:
        groups = []
        for part in document.parts:
            groups.extend(_markdown_groups(part.text, file_title, document.title, shared_top=True))
        extra = None
    return _group_passages(path.name, document.format, groups, max_tokens, extra)


def resolve_format(path: Path, fmt: str = "auto") -> str:
    """The concrete format to read ``path`` with: ``fmt`` itself, or the detected one."""
    if fmt not in FORMATS:
        raise CorpusError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
    if not path.is_file():
        raise CorpusError(f"{path}: no such file")
    return detect_format(path) if fmt == "auto" else fmt


def read_passages(
    path: Path, fmt: str = "auto", *, max_tokens: int = DEFAULT_MAX_TOKENS
) -> Iterator[Passage]:
    """Passages of one file in the given (or detected) format; ids unique within the file."""
    resolved = resolve_format(path, fmt)
    if resolved == "jsonl":
        return read_jsonl(path)
    if resolved in QA_FORMATS:
        return read_qa_paragraphs(path, resolved)
    if resolved in DOCUMENT_FORMATS:
        return read_document(path, resolved, max_tokens=max_tokens)
    return read_text(path, max_tokens=max_tokens)


@dataclass
class FileRead:
    """All the passages of one file and, for a text file, the encoding it was read in (JSON
    files are UTF-8 by definition; documents carry their own encodings: None)."""

    passages: list[Passage]
    encoding: str | None = None


def read_file(path: Path, fmt: str, *, max_tokens: int = DEFAULT_MAX_TOKENS) -> FileRead:
    """``read_passages`` of a resolved format, read whole, with the text's encoding."""
    if fmt == "text":
        decoded = read_text_file(path)
        return FileRead(list(_text_passages(path, decoded.text, max_tokens)), decoded.encoding)
    passages = list(read_passages(path, fmt, max_tokens=max_tokens))
    return FileRead(passages, None if fmt in DOCUMENT_FORMATS else "utf-8")
