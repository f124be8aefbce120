"""Documents in: PDF, HTML and DOCX files converted to text with their pages and headings.

One function per format, each returning a ``ConvertedDocument`` (its parts carry markdown-ish
text, the page they come from and the heading path they sit under); ``searchers.corpus`` chunks
the parts into passages, so a passage's metadata can say ``page`` and ``headings`` and a citation
can read "Annual report > Risks p. 7".

The converters were chosen by measurement (``benchmarks/ingest_bench.py``, results in
``benchmarks/results/ingest.md``): every candidate recovered all the sentences of clean test
files, so speed, page boundaries, headings and boilerplate decided:

- PDF: **pypdfium2** (Google's PDFium, the engine of Chrome's viewer): page by page, about 6x
  pypdf and 100x pdfplumber; markitdown reads a PDF as one blob through pdfminer, losing pages.
  Headings come from the PDF's outline (bookmarks), the only structure a PDF reliably has.
- HTML: **trafilatura**: the only candidate that drops navigation, cookie banners, sidebars and
  footers (markitdown and a plain ``get_text`` keep all of it, and it would be indexed and cited);
  it writes markdown headings, and its title comes from ``<title>``/``og:title``.
- DOCX: **python-docx**: headings from the paragraph styles, tables row by row, about 10x
  markitdown (which goes through mammoth, HTML and markdownify, and loads magika's model).

Heavy imports happen inside the functions: ``hoptree --help`` must not pay for PDFium or lxml.
A file that cannot be read raises ``DocumentError`` with a ``reason`` (``corrupt``, ``encrypted``,
``no-text``) the build report shows; the rest of a batch is still read.
"""

from __future__ import annotations

import html
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

DocumentFormat = Literal["pdf", "html", "docx"]
# what ``index build`` and ``tree build`` read through this module, by suffix
DOCUMENT_SUFFIXES: dict[str, DocumentFormat] = {
    ".pdf": "pdf",
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".docx": "docx",
}
# binary, encoding: a text file that is binary data, or in no encoding searchers.text_decoding
# can tell
FailureReason = Literal["unsupported", "corrupt", "encrypted", "no-text", "binary", "encoding"]

_PAGE_NUMBER_LINE = re.compile(
    r"^\W*(?:page\s+)?\d{1,5}(?:\s*(?:/|of)\s*\d{1,5})?\W*$", re.IGNORECASE
)
_SOFT_HYPHENS = re.compile("[\x02\u00ad\ufffe]")
_DOT_LEADER = re.compile(r"(?:\s*\.){4,}\s*")
_HYPHEN_END = re.compile(r"(?<=[a-z])-$")
_JUNK_TITLE = re.compile(
    r"^(?:microsoft \w+ - |untitled\b|document\d*$)|\.(?:docx?|pdf|tex|dvi|indd|pptx?|rtf|odt)$",
    re.IGNORECASE,
)
_HTML_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)
_MARKDOWN_H1 = re.compile(r"^# \S", re.MULTILINE)
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # a password-protected .docx is an OLE file


class DocumentError(ValueError):
    """A document that could not be converted; ``reason`` is what the build report counts."""

    def __init__(self, path: Path, reason: FailureReason, detail: str) -> None:
        super().__init__(f"{path}: {detail}")
        self.path = path
        self.reason: FailureReason = reason
        self.detail = detail


@dataclass(frozen=True)
class DocumentPart:
    """A stretch of a document: markdown text (``#`` lines are headings, HTML and DOCX), the
    1-based page it is on (PDF) and the heading path it starts under (PDF outline)."""

    text: str
    page: int | None = None
    headings: tuple[str, ...] = ()


@dataclass
class ConvertedDocument:
    format: DocumentFormat
    title: str | None  # from the file's own metadata; None when it has none
    parts: list[DocumentPart] = field(default_factory=list)
    pages: int | None = None  # PDF only

    @property
    def has_text(self) -> bool:
        return any(part.text.strip() for part in self.parts)


def document_format(path: Path) -> DocumentFormat | None:
    """The document format a file's suffix names, or None."""
    return DOCUMENT_SUFFIXES.get(path.suffix.lower())


def convert(path: Path, fmt: DocumentFormat | None = None) -> ConvertedDocument:
    """The converted document; ``DocumentError`` when it is corrupt, encrypted or has no text."""
    fmt = fmt or document_format(path)
    if fmt is None:
        raise DocumentError(path, "unsupported", f"unsupported file type {path.suffix or '(none)'}")
    converter = {"pdf": convert_pdf, "html": convert_html, "docx": convert_docx}[fmt]
    document = converter(path)
    if not document.has_text:
        detail = (
            "no text layer (a scan? run OCR first)" if fmt == "pdf" else "no text in the document"
        )
        raise DocumentError(path, "no-text", detail)
    return document


# --------------------------------------------------------------------------- PDF


def _outline(pdf: Any) -> list[tuple[int, int, str]]:
    """``(page index, level, title)`` of the outline's entries in reading order; a broken
    outline is no outline (the text is what matters)."""
    entries: list[tuple[int, int, str]] = []
    try:
        for item in pdf.get_toc(max_depth=6):
            title = " ".join(str(item.get_title() or "").split())
            dest = item.get_dest()
            index = dest.get_index() if dest is not None else None
            if title and index is not None:
                entries.append((int(index), int(item.level), title))
    except Exception:  # pdfium's outline walk raises on cyclic or dangling entries
        return []
    return entries


def _push(stack: list[tuple[int, str]], level: int, title: str) -> None:
    while stack and stack[-1][0] >= level:
        stack.pop()
    stack.append((level, title))


def _page_lines(text: str) -> list[str]:
    """A page's lines without page-number lines, a word cut by a hyphen at a line end joined,
    PDFium's soft-hyphen marks (``\\x02``, inside words it has already joined) dropped, and a
    table of contents' dot leaders folded to one "..." (they are most of a TOC page's tokens)."""
    lines: list[str] = []
    text = _SOFT_HYPHENS.sub("", text)
    for raw in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        line = _DOT_LEADER.sub(" ... ", raw.strip().replace("\x00", ""))
        if not line or _PAGE_NUMBER_LINE.match(line):
            lines.append("")
            continue
        if lines and _HYPHEN_END.search(lines[-1]) and line[:1].islower():
            # PDFium marks the hyphens a typesetter added (dropped above), so a "-" left at a
            # line end is the word's own: "well-" + "known" is "well-known"
            lines[-1] = lines[-1] + line
            continue
        lines.append(line)
    return lines


def _pdf_parts(
    page: int,
    lines: list[str],
    stack: list[tuple[int, str]],
    entries: list[tuple[int, int, str]],
) -> list[DocumentPart]:
    """The parts of one page: split where a line is the title of an outline entry that starts
    on it; entries with no such line take effect at the top of the page."""
    pending = [(level, title) for _index, level, title in entries]
    found = {title.casefold() for _level, title in pending} & {
        " ".join(line.split()).casefold() for line in lines
    }
    for level, title in pending:
        if title.casefold() not in found:
            _push(stack, level, title)
    parts: list[DocumentPart] = []
    body: list[str] = []
    for line in lines:
        key = " ".join(line.split()).casefold()
        match = next(((lv, t) for lv, t in pending if t.casefold() == key), None)
        if match is not None:
            if any(b.strip() for b in body):
                parts.append(DocumentPart("\n".join(body), page, tuple(t for _, t in stack)))
            body = []
            _push(stack, *match)
            pending.remove(match)
            continue
        body.append(line)
    if any(b.strip() for b in body):
        parts.append(DocumentPart("\n".join(body), page, tuple(t for _, t in stack)))
    return parts


def _pdf_title(raw: str | None) -> str | None:
    """The Title of the PDF's metadata, unless it is what a tool filled in rather than a title
    ("Microsoft Word - draft3.docx", "untitled", a file name): then the file name serves."""
    title = " ".join((raw or "").split())
    if not title or _JUNK_TITLE.search(title):
        return None
    return title


def convert_pdf(path: Path) -> ConvertedDocument:
    """Text page by page through PDFium; headings from the outline."""
    import pypdfium2 as pdfium

    try:
        pdf = pdfium.PdfDocument(str(path))
    except pdfium.PdfiumError as exc:
        code = getattr(exc, "err_code", None)
        if code == 4:  # FPDF_ERR_PASSWORD; an owner-password-only PDF opens without one
            raise DocumentError(path, "encrypted", "encrypted (needs a password)") from exc
        if code == 6:  # FPDF_ERR_SECURITY
            raise DocumentError(path, "encrypted", "unsupported security handler") from exc
        raise DocumentError(path, "corrupt", f"not a readable PDF ({exc})") from exc
    try:
        metadata = pdf.get_metadata_dict(skip_empty=True)
        outline = _outline(pdf)
        document = ConvertedDocument(
            format="pdf", title=_pdf_title(metadata.get("Title")), pages=len(pdf)
        )
        stack: list[tuple[int, str]] = []
        for index in range(len(pdf)):
            try:
                page = pdf[index]
                textpage = page.get_textpage()
                text = textpage.get_text_bounded()
                textpage.close()
                page.close()
            except pdfium.PdfiumError as exc:
                raise DocumentError(path, "corrupt", f"page {index + 1}: {exc}") from exc
            entries = [e for e in outline if e[0] == index]
            document.parts.extend(_pdf_parts(index + 1, _page_lines(text), stack, entries))
        return document
    finally:
        pdf.close()


# --------------------------------------------------------------------------- HTML


def _html_title(raw: bytes) -> str | None:
    """The page's ``<title>`` without a " | Site name" tail, for a page whose content has no
    top-level heading (one with an ``h1`` is titled by it: ``searchers.corpus``)."""
    match = _HTML_TITLE.search(raw[:65536].decode("utf-8", errors="replace"))
    if match is None:
        return None
    title = " ".join(html.unescape(match.group(1)).split()).split(" | ")[0].strip()
    return title or None


def convert_html(path: Path) -> ConvertedDocument:
    """The page's main content as markdown (boilerplate dropped).

    trafilatura's metadata (title, date, author) is not asked for: it quarters the speed
    (75 against 285 pages/s here, most of it dateparser), and the title is the content's own
    ``h1`` or the ``<title>``."""
    import trafilatura

    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DocumentError(path, "corrupt", f"cannot read ({exc.strerror})") from exc
    markdown = trafilatura.extract(
        raw,
        output_format="markdown",
        include_tables=True,
        include_links=False,
        include_images=False,
        include_comments=False,
        favor_recall=True,
    )
    if not markdown:
        # a page too short for main-content extraction: its whole visible text
        markdown = trafilatura.html2txt(raw) or ""
    title = None if _MARKDOWN_H1.search(markdown) else _html_title(raw)
    return ConvertedDocument(format="html", title=title, parts=[DocumentPart(markdown)])


# --------------------------------------------------------------------------- DOCX


def _docx_heading_level(style_name: str) -> int | None:
    if style_name == "Title":
        return 1
    match = re.fullmatch(r"Heading (\d)", style_name)
    return int(match.group(1)) if match else None


def convert_docx(path: Path) -> ConvertedDocument:
    """Paragraphs and tables in document order as markdown; Title and Heading N styles become
    ``#`` lines (the Title one level above Heading 1 would be, so sections nest under it)."""
    from docx import Document
    from docx.opc.exceptions import PackageNotFoundError
    from docx.table import Table

    try:
        with path.open("rb") as fh:
            head = fh.read(8)
    except OSError as exc:
        raise DocumentError(path, "corrupt", f"cannot read ({exc.strerror})") from exc
    if head == _OLE_MAGIC:
        raise DocumentError(path, "encrypted", "encrypted, or an old binary .doc saved as .docx")
    try:
        document = Document(str(path))
    except (PackageNotFoundError, zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise DocumentError(path, "corrupt", f"not a readable DOCX ({exc})") from exc
    has_title = any(p.style is not None and p.style.name == "Title" for p in document.paragraphs)
    lines: list[str] = []
    for block in document.iter_inner_content():
        if isinstance(block, Table):
            for row in block.rows:
                cells = [" ".join(cell.text.split()) for cell in row.cells]
                if any(cells):
                    lines.append(" | ".join(dict.fromkeys(cells)))  # merged cells repeat
            lines.append("")
            continue
        text = " ".join(block.text.split())
        if not text:
            continue
        level = _docx_heading_level(block.style.name if block.style is not None else "")
        if level is not None:
            level = level if block.style.name == "Title" else level + int(has_title)
            lines.append(f"\n{'#' * min(level, 6)} {text}\n")
        else:
            lines.append(text + "\n")
    title = (document.core_properties.title or "").strip() or None
    return ConvertedDocument(format="docx", title=title, parts=[DocumentPart("\n".join(lines))])
