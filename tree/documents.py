"""Long documents for the tree: text/markdown files and the shared long-document datasets.

A tree is usually built over whole documents (a book, an article), so most readers return one
``SourceDocument`` per work; a question file is the exception, its paragraphs being the corpus:

- ``.txt`` / ``.md`` (any other extension too): one document per file, id = file stem;
- ``.pdf`` / ``.html`` / ``.docx``: one document per file, id = file stem, converted by
  ``searchers.documents`` (the index's own converters; headings kept as markdown lines);
- ``.jsonl`` QuALITY (one question set per line, ``article`` = the story as HTML lines, repeated
  on every line of the same article): one document per ``article_id``; other JSON lines with a
  ``text`` field are read as ``{"id", "title", "text"}``;
- ``.json`` L-CiteEval NarrativeQA (a list of items, the book in ``context``): one per item ``id``;
- ``.jsonl`` question files (HotpotQA, 2Wiki in FlashRAG layout): one document per context
  paragraph, read exactly as the open eval index reads them, so a tree over a question file has
  the index's passage ids and titles (gold-paragraph recall counts its leaves).

Text is cleaned where the source needs it: HTML to paragraphs, Project Gutenberg header and
license stripped (the license is a third of a short book and would become its own subtree), a
byte-order mark or its Latin-1 mojibake dropped.
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from searchers.corpus import (
    QA_FORMATS,
    CorpusError,
    SourceSelection,
    detect_format,
    read_qa_paragraphs,
)
from searchers.documents import DOCUMENT_SUFFIXES
from searchers.documents import DocumentError as ConversionError
from searchers.documents import convert as convert_document
from searchers.source_files import Unreadable, regular_file
from searchers.source_filter import SourceFilterError, walk_folder

TEXT_SUFFIXES = (".txt", ".md", ".markdown", ".rst", ".text")
DATA_SUFFIXES = (".json", ".jsonl")
CONVERTED_SUFFIXES = tuple(DOCUMENT_SUFFIXES)  # .pdf, .html, .htm, .xhtml, .docx
MAX_FILES = 100_000  # bound on directory expansion (more is an error)


class DocumentError(ValueError):
    """A source that cannot be read as documents; the message names the file and the problem."""


@dataclass(frozen=True)
class UnreadFile:
    """A file of the sources that gave no document, and why (``reason``: ``unsupported``,
    ``corrupt``, ``encrypted``, ``no-text``); ``tree build`` names it and exits 3."""

    path: Path
    reason: str
    detail: str


@dataclass(frozen=True)
class SourceDocument:
    id: str
    title: str
    text: str
    source: str = ""

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()


# --------------------------------------------------------------------------- cleaning

_BLOCK_TAGS = frozenset(
    {"p", "div", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "li", "tr", "pre", "blockquote",
     "section", "article", "table", "ul", "ol", "dd", "dt", "title"}
)  # fmt: skip
_SKIP_TAGS = frozenset({"script", "style", "head"})


class _TextExtractor(HTMLParser):
    """Paragraph text of an HTML page: block tags end paragraphs, head/script/style vanish."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIP_TAGS:
            self._skip += 1
        elif tag in _BLOCK_TAGS:
            self.parts.append("\n\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP_TAGS:
            self._skip = max(0, self._skip - 1)
        elif tag in _BLOCK_TAGS:
            self.parts.append("\n\n")

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(data)


def html_to_text(markup: str) -> str:
    parser = _TextExtractor()
    parser.feed(markup)
    parser.close()
    return "".join(parser.parts)


_LOOKS_HTML = re.compile(r"<(?:!DOCTYPE|html|body|p|br|div|pre)\b", re.I)
_GUTENBERG_START = re.compile(r"^\*\*\*\s*START OF (?:THIS|THE) PROJECT GUTENBERG.*$", re.I | re.M)
_GUTENBERG_END = re.compile(
    r"^(?:\*\*\*\s*END OF (?:THIS|THE) PROJECT GUTENBERG.*|End of (?:the )?Project Gutenberg.*)$",
    re.I | re.M,
)


def strip_gutenberg(text: str) -> str:
    start = _GUTENBERG_START.search(text)
    if start:
        text = text[start.end() :]
    end = _GUTENBERG_END.search(text)
    if end:
        text = text[: end.start()]
    return text


def clean_text(text: str) -> str:
    """Plain text with paragraph breaks as blank lines, whatever the source's markup."""
    text = text.replace("\ufeff", "").replace("ï»¿", "")
    if _LOOKS_HTML.search(text[:5000]):
        text = html_to_text(text)
    else:
        text = html.unescape(text) if "&#" in text or "&amp;" in text else text
    text = strip_gutenberg(text).replace("\r\n", "\n").replace("\r", "\n")
    text = re.sub(r"\n[ \t]*\n(?:[ \t]*\n)+", "\n\n", text)
    return text.strip()


_TITLE_LINE = re.compile(r"^\s*Title:\s*(.+)$", re.M)
_HTML_TITLE = re.compile(r"<title>\s*(.*?)\s*</title>", re.I | re.S)
_MD_HEADING = re.compile(r"^#\s+(.+?)\s*#*\s*$", re.M)


def guess_title(raw: str, fallback: str) -> str:
    for pattern in (_TITLE_LINE, _HTML_TITLE, _MD_HEADING):
        match = pattern.search(raw[:20000])
        if match:
            return re.sub(r"\s+", " ", html.unescape(match.group(1))).strip()[:200]
    return fallback


# --------------------------------------------------------------------------- readers


def _jsonl_documents(path: Path) -> Iterable[SourceDocument]:
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as exc:
                raise DocumentError(f"{path}:{number}: not JSON: {exc}") from exc
            if not isinstance(row, dict):
                raise DocumentError(f"{path}:{number}: expected a JSON object")
            if "article" in row:  # QuALITY
                article = row["article"]
                raw = "".join(article) if isinstance(article, list) else str(article)
                doc_id = str(row.get("article_id") or row.get("unique_id") or f"line{number}")
                title = str(row.get("title") or guess_title(raw, doc_id))
            elif "text" in row or "contents" in row:
                raw = str(row.get("text") or row.get("contents") or "")
                doc_id = str(row.get("id") or f"{path.stem}-{number}")
                title = str(row.get("title") or doc_id)
            else:
                raise DocumentError(
                    f"{path}:{number}: no 'article' (QuALITY) or 'text' field; keys {sorted(row)}"
                )
            yield SourceDocument(id=doc_id, title=title, text=clean_text(raw), source=str(path))


def _question_file_format(path: Path) -> str | None:
    """``hotpotqa``, ``flashrag`` or ``musique`` when the first row is a question with its
    paragraphs (the index's own format detection, so the tree and the index agree on what a
    file is)."""
    try:
        fmt = detect_format(path)
    except (OSError, ValueError):  # CorpusError too: the row-by-row reader names the bad line
        return None
    return fmt if fmt in QA_FORMATS else None


def _question_file_documents(path: Path, fmt: str) -> Iterable[SourceDocument]:
    try:
        for passage in read_qa_paragraphs(path, fmt):
            yield SourceDocument(
                id=passage.id, title=passage.title, text=passage.text, source=str(path)
            )
    except CorpusError as exc:
        raise DocumentError(str(exc)) from exc


def _json_documents(path: Path) -> Iterable[SourceDocument]:
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise DocumentError(f"{path}: not JSON: {exc}") from exc
    items = data.get("data") if isinstance(data, dict) else data
    if isinstance(data, dict) and items is None:
        items = [data]
    if not isinstance(items, list):
        raise DocumentError(f"{path}: expected a list of items with 'context' or 'text'")
    for number, item in enumerate(items):
        if not isinstance(item, dict) or not ("context" in item or "text" in item):
            raise DocumentError(f"{path}[{number}]: an item needs 'context' (L-CiteEval) or 'text'")
        raw = item.get("context") or item.get("text") or ""
        raw = "\n\n".join(map(str, raw)) if isinstance(raw, list) else str(raw)
        doc_id = str(item.get("id") or f"{path.stem}-{number}")
        title = str(item.get("title") or guess_title(raw, doc_id))
        yield SourceDocument(id=doc_id, title=title, text=clean_text(raw), source=str(path))


def _text_document(path: Path) -> SourceDocument:
    try:
        raw = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise DocumentError(f"cannot read {path}: {exc}") from exc
    return SourceDocument(
        id=path.stem, title=guess_title(raw, path.stem), text=clean_text(raw), source=str(path)
    )


def _converted_document(path: Path) -> SourceDocument:
    """A PDF, HTML or DOCX file as one document: its parts' text, a heading line wherever the
    heading path changes (the PDF outline; HTML and DOCX text is markdown already)."""
    converted = convert_document(path)
    blocks: list[str] = []
    headings: tuple[str, ...] = ()
    for part in converted.parts:
        if part.headings and part.headings != headings:
            blocks.append(f"{'#' * min(len(part.headings) + 1, 6)} {part.headings[-1]}")
            headings = part.headings
        blocks.append(part.text.strip())
    text = clean_text("\n\n".join(b for b in blocks if b))
    title = converted.title or guess_title(text, path.stem)
    return SourceDocument(id=path.stem, title=title, text=text, source=str(path))


def select_paths(paths: Sequence[Path]) -> SourceSelection:
    """Files as named, folders walked by the index's own rule (``searchers.source_filter``: no
    index or tree directories, hidden files or ``.hoptreeignore``'d ones), with what was skipped
    and (reason ``unsupported``) what no reader takes."""
    selection = SourceSelection()
    for path in paths:
        path = Path(path)
        if path.is_dir():
            try:
                walk = walk_folder(
                    path,
                    TEXT_SUFFIXES + DATA_SUFFIXES + CONVERTED_SUFFIXES,
                    max_files=MAX_FILES,
                    report_unsupported=True,
                )
            except SourceFilterError as exc:
                raise DocumentError(str(exc)) from exc
            selection.files.extend(walk.files)
            selection.skipped.extend(walk.skipped)
        elif os.path.lexists(path):  # a dangling link or a pipe is named by read_documents
            selection.files.append(path)
        else:
            raise DocumentError(f"no such file or directory: {path}")
    return selection


def expand_paths(paths: Sequence[Path]) -> list[Path]:
    return select_paths(paths).files


def read_documents(
    paths: Sequence[Path], only: Sequence[str] = (), unread: list[UnreadFile] | None = None
) -> list[SourceDocument]:
    """Every document in ``paths``, in order, each id once (a QuALITY article repeated on several
    lines is one document); ``only`` keeps just those ids. Empty documents are dropped.

    With ``unread`` the files that give no document (a folder's unsupported files, a corrupt,
    encrypted or text-less PDF, HTML or DOCX) are appended to it and the rest are read; without
    it the first such document is a ``DocumentError``."""
    documents: dict[str, SourceDocument] = {}
    selection = select_paths(paths)
    if unread is not None:
        unread.extend(
            UnreadFile(s.path, s.reason, s.detail) for s in selection.skipped if s.not_read
        )
    for path in selection.files:
        try:
            regular_file(path)  # a pipe is never opened; a dangling link is named, not fatal
        except Unreadable as exc:
            if unread is None:
                raise DocumentError(f"{path}: {exc.detail}") from exc
            unread.append(UnreadFile(path, exc.reason, exc.detail))
            continue
        suffix = path.suffix.lower()
        if suffix in CONVERTED_SUFFIXES:
            try:
                found: Iterable[SourceDocument] = [_converted_document(path)]
            except ConversionError as exc:
                if unread is None:
                    raise DocumentError(str(exc)) from exc
                unread.append(UnreadFile(path, exc.reason, exc.detail))
                continue
        elif suffix == ".jsonl":
            qa_format = _question_file_format(path)
            found = (
                _question_file_documents(path, qa_format) if qa_format else _jsonl_documents(path)
            )
        elif suffix == ".json":
            found = _json_documents(path)
        else:
            found = [_text_document(path)]
        for doc in found:
            if only and doc.id not in only:
                continue
            previous = documents.get(doc.id)
            if previous is not None and previous.text != doc.text:
                raise DocumentError(
                    f"document id {doc.id!r} appears twice with different text "
                    f"({previous.source} and {doc.source}); rename one file"
                )
            if doc.text.strip():
                documents.setdefault(doc.id, doc)
    missing = [i for i in only if i not in documents]
    if missing:
        raise DocumentError(f"no document with id {', '.join(map(repr, missing))} in the sources")
    return list(documents.values())
