"""Reading the sources of an index build: each file's passages, or why it was not read.

``searchers.index_build`` decides what a new generation holds and commits it; this module
gives it, for every source, what the file holds now (``SourceRead``) or a ``FailedSource``.
Whatever goes wrong with one file is that file's failure and the next file is read: the
operating system's refusals (``searchers.source_files``), a document that cannot be converted,
a text file that is binary, a reader that raises anything (an ImportError of a broken install
too). A file that changes while it is read is read again."""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from searchers.corpus import CorpusError, file_sha256, read_file, resolve_format
from searchers.documents import DocumentError
from searchers.index_dir import Owners, now_iso
from searchers.index_generation import BuildProgress
from searchers.passages import Passage
from searchers.source_files import Unreadable, fingerprint, os_error, regular_file

log = logging.getLogger(__name__)

# a file that changes while it is read is read again, at most this many times in all
READ_ATTEMPTS = 3


@dataclass(frozen=True)
class SourceSpec:
    path: Path
    format: str = "auto"
    # named on the command line, not found in a folder: a malformed dataset line is an error
    named: bool = True


SourceChange = Literal["added", "changed", "unchanged", "removed"]


@dataclass
class SourceReport:
    path: str
    name: str
    format: str
    sha256: str
    size: int
    passages: int  # read from the file (after in-file dedupe)
    added: int  # new to the index
    ingested_at: str = field(default_factory=now_iso)
    # against the index before this build: new path, other content, same content (not re-read)
    change: SourceChange = "added"
    removed: int = 0  # passages of its previous content that left the index
    # the encoding a text file was read in (utf-8, windows-1252, utf-16-le, ...); None for
    # documents, whose converters read their own
    encoding: str | None = None


@dataclass(frozen=True)
class FailedSource:
    """A file (or a folder) that was not read, and why; ``detail`` says it for a person. The
    rest of the batch is read; the CLI exits 3. A file that was indexed before keeps its
    previous passages. ``reason``:

    - ``unsupported``: no reader takes its type;
    - ``corrupt``, ``encrypted``, ``no-text``: a document that cannot be converted (no text:
      a PDF without a text layer); ``corrupt`` also for a dataset file of a folder that is
      not JSON lines of a known layout;
    - ``binary``, ``encoding``: a text file that holds binary data, or text in no encoding
      ``searchers.text_decoding`` can tell;
    - ``missing``, ``permission``, ``unreadable``, ``changing``: what the file system did
      (``searchers.source_files``: a dangling link, permission denied, a pipe or a link loop,
      a file that kept changing while it was read);
    - ``error``: its reader raised something else (an ImportError of a broken install too).
    """

    path: str
    reason: str
    detail: str = ""


@dataclass
class SourceRead:
    """One source as this build saw it: its report, the ids it gives (file order) and, when it
    was read (not unchanged), its passages."""

    report: SourceReport
    ids: list[str]
    passages: list[Passage] = field(default_factory=list)


def read_sources(
    sources: Sequence[SourceSpec],
    recorded: dict[str, dict[str, Any]],
    owners: Owners,
    max_tokens: int,
    report_progress: BuildProgress,
) -> tuple[list[SourceRead], list[FailedSource]]:
    """Every source's passages, and the files that could not be read.

    A file whose checksum, format and owners are already recorded is not read again (a PDF's
    conversion is the slow part of a re-sync). All of it is read before anything is written.
    Whatever goes wrong with one file is that file's ``FailedSource`` and the others are still
    read (``_read_one`` says what counts); the one exception is a dataset file named on the
    command line (``SourceSpec.named``) with a malformed line, which fails the build before it
    has touched the disk, as a usage error.
    """
    reads: list[SourceRead] = []
    failed: list[FailedSource] = []
    seen: set[str] = set()
    for done, spec in enumerate(sources, start=1):
        source_path = Path(spec.path)
        key = source_key(source_path)
        if key in seen:  # named twice (a file and its folder): read once
            report_progress("read", done, len(sources))
            continue
        seen.add(key)
        before = recorded.get(key)
        try:
            reads.append(_read_one(spec, key, before, owners, max_tokens))
        except CorpusError as exc:
            if spec.named:
                raise
            failed.append(FailedSource(str(source_path), "corrupt", _without_path(exc, spec.path)))
        except (DocumentError, Unreadable) as exc:
            failed.append(FailedSource(str(source_path), exc.reason, exc.detail))
        except Exception as exc:  # a reader's own failure, ImportError included: one file
            log.debug("reading %s failed", source_path, exc_info=True)
            failed.append(FailedSource(str(source_path), "error", _crash_detail(exc)))
        else:
            report_progress("read", done, len(sources))
            continue
        if before is not None and key in owners:  # keeps what it gave until it reads again
            reads.append(SourceRead(kept_report(before), list(owners[key])))
        report_progress("read", done, len(sources))
    return reads, failed


def _read_one(
    spec: SourceSpec,
    key: str,
    before: dict[str, Any] | None,
    owners: Owners,
    max_tokens: int,
) -> SourceRead:
    """One file, read whole. It must be a regular file (``searchers.source_files``: a pipe is
    never opened) and stay the same while it is read: its fingerprint (inode, size, mtime) is
    taken before the checksum and again after the passages, and a file that changed in between
    is read again, up to ``READ_ATTEMPTS`` times, then named ``changing``. Raises
    ``Unreadable``, ``DocumentError``, ``CorpusError`` or whatever a reader raised."""
    path = Path(spec.path)
    for _attempt in range(READ_ATTEMPTS):
        try:
            status = regular_file(path)
            fmt = resolve_format(path, spec.format)
            sha256 = file_sha256(path)
            if (
                before is not None
                and before.get("sha256") == sha256
                and before.get("format") == fmt
                and key in owners
            ):
                unchanged = SourceReport(
                    path=key,
                    name=path.name,
                    format=fmt,
                    sha256=sha256,
                    size=status.st_size,
                    passages=int(before.get("passages", len(owners[key]))),
                    added=0,
                    ingested_at=str(before.get("ingested_at") or now_iso()),
                    change="unchanged",
                    encoding=before.get("encoding"),
                )
                return SourceRead(unchanged, list(owners[key]))
            read = read_file(path, fmt, max_tokens=max_tokens)
            if fingerprint(regular_file(path)) != fingerprint(status):
                continue
        except OSError as exc:
            raise os_error(path, exc) from exc
        ids = list(dict.fromkeys(p.id for p in read.passages))
        if before is None:
            change: SourceChange = "added"
        elif before.get("sha256") == sha256:
            change = "unchanged"
        else:
            change = "changed"
        report = SourceReport(
            path=key,
            name=path.name,
            format=fmt,
            sha256=sha256,
            size=status.st_size,
            passages=len(ids),
            added=0,
            change=change,
            encoding=read.encoding,
        )
        return SourceRead(report, ids, read.passages)
    raise Unreadable(
        "changing",
        f"it changed while it was read, {READ_ATTEMPTS} times; the next build reads it again",
    )


def source_key(path: Path) -> str:
    """The path a source is recorded under: absolute, links resolved; a link loop (which
    ``Path.resolve`` refuses with a RuntimeError) keeps its absolute, unresolved path."""
    try:
        return str(path.resolve())
    except (OSError, RuntimeError):
        return os.path.abspath(path)


def _without_path(exc: Exception, path: Path) -> str:
    """A ``CorpusError``'s message without the file name the report line already shows:
    ``PATH:3: not JSON`` is ``line 3: not JSON``."""
    message = str(exc).removeprefix(str(path)).lstrip(":").strip()
    line, sep, rest = message.partition(":")
    return f"line {line}: {rest.strip()}" if sep and line.isdigit() else message


def _crash_detail(exc: Exception) -> str:
    """One line for a reader that raised something unexpected; an ImportError says that the
    installation, not the file, is at fault."""
    message = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, ImportError):
        return (
            f"its reader needs a module that is not installed ({message}); reinstall hoptree "
            "with a current pip"
        )
    return f"its reader failed: {type(exc).__name__}: {message}"


def kept_report(entry: dict[str, Any]) -> SourceReport:
    """The recorded entry of a file that could not be read this time (it stays as it was)."""
    fields = {k: entry[k] for k in ("path", "name", "format", "sha256", "size") if k in entry}
    return SourceReport(
        **fields,
        passages=int(entry.get("passages", 0)),
        added=0,
        ingested_at=str(entry.get("ingested_at") or now_iso()),
        change="unchanged",
        encoding=entry.get("encoding"),
    )
