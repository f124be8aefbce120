"""Which files of a folder source are read: the one rule ``index build`` and ``tree build`` share.

A folder named as a source is walked and three kinds of things below it are never read, whatever
their suffix:

- **hoptree's own stores**: a folder holding an index manifest (``manifest.json`` with
  ``"format": "hoptree-index"``), the debris of an index build that never committed (``.lock``
  beside ``gen-NNNNNN`` folders), or a tree store (``CURRENT`` naming a ``v-NNNNNN`` folder, or
  ``.lock`` beside ``journal.jsonl`` or version folders), with everything below it; so an index
  kept inside the folder it indexes (``index build notes --index notes/idx``, ``index build .
  --index .hoptree``) never reads itself;
- **hidden** files and folders (a name starting with "."), below the folder given: a hidden folder
  named on the command line is still walked;
- files and folders matched by a ``.hoptreeignore`` in the folder given or any folder below it,
  in gitignore syntax (pathspec's ``GitIgnoreSpec``), patterns relative to the folder holding the
  ignore file; a deeper ignore file's matching line wins over a shallower one's, ``!`` re-includes,
  and as in git nothing below an ignored folder can be re-included.

None of this is an error: each skip is returned as a ``SkippedSource`` (a folder once, not every
file below it; a file only when its suffix would have been read), for the caller to report.
With ``report_unsupported`` a file the rule lets through but whose suffix no reader takes is
returned too, as ``unsupported``: ``index build`` names every file of a folder it did not read
(and a ``.hoptreeignore`` line is how to say "these are not meant to be read").
A symbolic link to a folder is not followed (``link``: no loops, no folder read twice), and what
cannot be walked is never an error either: a folder the system will not list, or whose ignore
file cannot be read, is skipped with everything below it (``permission``, ``unreadable``;
``NOT_READ`` tells the caller which skips are files that were meant to be read). Files named on
the command line are not filtered; the callers read them as asked.

The store layouts are written by ``searchers.index_build`` and ``tree.store``; their names are
repeated here because ``searchers.index_dir`` imports ``searchers.corpus``, which imports this
module (a test pins them to the originals).
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pathspec import GitIgnoreSpec

from searchers.source_files import os_error

IGNORE_FILE = ".hoptreeignore"

# searchers.index_dir: MANIFEST, FORMAT_NAME, LOCK_FILE, GENERATION_PREFIX
INDEX_MANIFEST = "manifest.json"
INDEX_FORMAT = "hoptree-index"
STORE_LOCK = ".lock"
_GENERATION = re.compile(r"gen-\d+")
# tree.store: CURRENT_FILE, JOURNAL_FILE, VERSION_PREFIX (``.tmp-v-...`` while a version is written)
TREE_POINTER = "CURRENT"
TREE_JOURNAL = "journal.jsonl"
_TREE_VERSION = re.compile(r"(?:\.tmp-)?v-\d+.*")

MAX_MANIFEST_BYTES = 64 << 20  # a manifest is a few KB; a larger manifest.json is someone else's

SkipReason = Literal[
    "index", "hidden", "ignored", "link", "unsupported", "permission", "unreadable", "missing"
]
# the skips that are files or folders the user meant to be read: a build names them as not read
# (and exits 3); the others (stores, hidden, ignored, folder links) are deliberate
NOT_READ: frozenset[str] = frozenset({"unsupported", "permission", "unreadable", "missing"})


class SourceFilterError(ValueError):
    """A folder source that cannot be walked: an unreadable ignore file, too many files."""


@dataclass(frozen=True)
class SkippedSource:
    """A file or folder below a folder source that was not read, and why (``detail`` says it
    for a person: which store, or which ignore file and line)."""

    path: Path
    reason: SkipReason
    detail: str = ""

    @property
    def not_read(self) -> bool:
        """A file or folder that was meant to be read and was not (``NOT_READ``)."""
        return self.reason in NOT_READ

    def describe(self) -> str:
        return f"{self.path}: {self.detail or self.reason}"

    def to_json(self) -> dict[str, Any]:
        return {"path": str(self.path), "reason": self.reason, "detail": self.detail}


@dataclass
class FolderWalk:
    """The files of a folder source to read (sorted), and what was left out."""

    files: list[Path] = field(default_factory=list)
    skipped: list[SkippedSource] = field(default_factory=list)


def store_kind(folder: Path, dirs: Collection[str], names: Collection[str]) -> str | None:
    """``"index"`` or ``"tree"`` when ``folder`` (whose sub-folders are ``dirs`` and files
    ``names``) is one of hoptree's own stores, else None."""
    if INDEX_MANIFEST in names and _is_index_manifest(folder / INDEX_MANIFEST):
        return "index"
    if STORE_LOCK in names and any(_GENERATION.fullmatch(d) for d in dirs):
        return "index"  # a first build that has not committed (or was killed)
    versions = any(_TREE_VERSION.fullmatch(d) for d in dirs)
    if TREE_POINTER in names and versions and _pointer_names(folder / TREE_POINTER, dirs):
        return "tree"
    if STORE_LOCK in names and (versions or TREE_JOURNAL in names):
        return "tree"
    return None


def _is_index_manifest(path: Path) -> bool:
    try:
        status = path.stat()
        if not stat.S_ISREG(status.st_mode) or status.st_size > MAX_MANIFEST_BYTES:
            return False  # a named pipe would block the open
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get("format") == INDEX_FORMAT


def _pointer_names(path: Path, dirs: Collection[str]) -> bool:
    try:
        if not path.is_file():
            return False
        with path.open(encoding="utf-8") as fh:
            name = fh.read(256).strip()
    except (OSError, ValueError):
        return False
    return name in dirs


@dataclass(frozen=True)
class _IgnoreFile:
    base: Path  # the folder holding it: patterns are relative to it
    path: Path
    spec: GitIgnoreSpec


def _load_ignore(folder: Path) -> _IgnoreFile:
    """The folder's ignore file; ``SourceFilterError`` (saying why, for the walk's report) when
    it cannot be read or parsed."""
    path = folder / IGNORE_FILE
    try:
        if not path.is_file():  # a pipe would block the read; a dangling link is unreadable
            raise SourceFilterError(f"its {IGNORE_FILE} is not a regular file")
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as exc:
        raise SourceFilterError(f"its {IGNORE_FILE} cannot be read ({exc.strerror})") from exc
    try:
        spec = GitIgnoreSpec.from_lines(lines)
    except ValueError as exc:  # pathspec refuses a few malformed patterns
        raise SourceFilterError(f"its {IGNORE_FILE} has a pattern pathspec refuses: {exc}") from exc
    return _IgnoreFile(base=folder, path=path, spec=spec)


def _ignored_by(chain: tuple[_IgnoreFile, ...], path: Path, is_dir: bool) -> str | None:
    """``"FILE: PATTERN"`` of the line that ignores ``path``, or None when no line does or the
    last matching one (deepest file, then last line) re-includes it."""
    verdict: tuple[_IgnoreFile, int, bool] | None = None
    for ignore in chain:
        rel = path.relative_to(ignore.base).as_posix() + ("/" if is_dir else "")
        result = ignore.spec.check_file(rel)
        if result.include is not None and result.index is not None:
            verdict = (ignore, result.index, result.include)
    if verdict is None or not verdict[2]:
        return None
    ignore, index, _ = verdict
    pattern = getattr(ignore.spec.patterns[index], "pattern", None)
    return f"{ignore.path}: {pattern}" if pattern is not None else str(ignore.path)


def walk_folder(
    folder: Path, suffixes: Collection[str], *, max_files: int, report_unsupported: bool = False
) -> FolderWalk:
    """The files below ``folder`` with one of ``suffixes`` (lower case, with the dot) that the
    rule lets through, sorted; more than ``max_files`` of them is a ``SourceFilterError``.
    ``report_unsupported``: the other files the rule lets through are ``skipped`` as
    ``unsupported`` (hidden and ignored ones stay unreported).

    Nothing a folder holds stops the walk: a folder that cannot be listed (permission denied,
    a path too long) is skipped as ``permission`` or ``unreadable``, and so is a folder whose
    ``.hoptreeignore`` cannot be read or parsed, with everything below it (reading it without
    its ignore file could index what the user meant to keep out). A symbolic link to a folder
    is skipped as ``link`` (not followed: no loops, no second copy of a folder)."""
    folder = Path(folder)
    walk = FolderWalk()
    chains: dict[str, tuple[_IgnoreFile, ...]] = {}

    def unlisted(exc: OSError) -> None:
        path = Path(exc.filename) if exc.filename is not None else folder
        why = os_error(path, exc, listing=True)
        walk.skipped.append(SkippedSource(path, why.reason, why.detail))

    for root, dirs, names in os.walk(folder, onerror=unlisted):
        here = Path(root)
        kind = store_kind(here, dirs, names)
        if kind is not None:
            walk.skipped.append(SkippedSource(here, "index", f"a hoptree {kind} directory"))
            dirs[:] = []
            continue
        chain = chains.pop(root, ())
        if IGNORE_FILE in names:
            try:
                chain = (*chain, _load_ignore(here))
            except SourceFilterError as exc:
                detail = f"{exc}; nothing below it is read"
                walk.skipped.append(SkippedSource(here, "unreadable", detail))
                dirs[:] = []
                continue
        dirs[:] = _kept_folders(here, root, dirs, chain, chains, walk)
        for name in names:
            _sort_file(here / name, suffixes, chain, report_unsupported, walk)
        if len(walk.files) > max_files:
            raise SourceFilterError(f"{folder}: more than {max_files} files")
    walk.files.sort()
    walk.skipped.sort(key=lambda s: s.path)
    return walk


def _kept_folders(
    here: Path,
    root: str,
    dirs: list[str],
    chain: tuple[_IgnoreFile, ...],
    chains: dict[str, tuple[_IgnoreFile, ...]],
    walk: FolderWalk,
) -> list[str]:
    """The sub-folders of ``here`` to walk; the others go to ``walk.skipped`` with why."""
    kept: list[str] = []
    for name in sorted(dirs):
        path = here / name
        if name.startswith("."):
            walk.skipped.append(SkippedSource(path, "hidden", "a hidden folder"))
        elif (line := _ignored_by(chain, path, is_dir=True)) is not None:
            walk.skipped.append(SkippedSource(path, "ignored", f"ignored by {line}"))
        elif os.path.islink(path):
            detail = "a symbolic link to a folder (not followed; name the folder itself)"
            walk.skipped.append(SkippedSource(path, "link", detail))
        else:
            kept.append(name)
            chains[os.path.join(root, name)] = chain
    return kept


def _sort_file(
    path: Path,
    suffixes: Collection[str],
    chain: tuple[_IgnoreFile, ...],
    report_unsupported: bool,
    walk: FolderWalk,
) -> None:
    """A file of the walk into ``walk.files`` or, with its reason, ``walk.skipped``."""
    name = path.name
    if Path(name).suffix.lower() not in suffixes:
        if (
            report_unsupported
            and not name.startswith(".")
            and name != IGNORE_FILE
            and _ignored_by(chain, path, is_dir=False) is None
        ):
            detail = f"unsupported file type {Path(name).suffix or '(no suffix)'}"
            walk.skipped.append(SkippedSource(path, "unsupported", detail))
        return  # not a source type
    if name.startswith("."):
        walk.skipped.append(SkippedSource(path, "hidden", "a hidden file"))
    elif (line := _ignored_by(chain, path, is_dir=False)) is not None:
        walk.skipped.append(SkippedSource(path, "ignored", f"ignored by {line}"))
    else:
        walk.files.append(path)
