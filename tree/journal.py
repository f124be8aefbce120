"""The build journal: what a killed build had finished, so the next run does not pay again.

An append-only JSON-lines file; every record is flushed and fsync'd before the build moves on,
so whatever the journal says is done survived the crash. Records are content-keyed and carry no
state beyond themselves, which is why the journal needs no header or schema negotiation:

- ``summary``: the summary for a cluster's passages (key = ``Summarizer.key``: model, prompt
  parameters and the passages' text), with its fallback flag and usage;
- ``clusters``: the clustering of one layer (key = clusterer parameters, layer and node ids, in
  order), so a resumed build regrows the same tree even if clustering were not bit-reproducible;
- ``layer``: a finished layer, for humans reading the file.

A record from another configuration simply never matches. A torn last line (the kill came in
the middle of a write) is ignored, and the next record starts on a line of its own. The journal
is deleted when the tree is committed.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


class BuildJournal:
    """In memory when ``path`` is None (tests, one-shot builds)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self.summaries: dict[str, dict[str, Any]] = {}
        self.clusterings: dict[str, list[list[str]]] = {}
        self.records_read = 0
        self.torn_lines = 0
        self._open_tail = False  # the file ends inside a record: close it before appending
        if self.path is not None and self.path.is_file():
            self._read()

    def _read(self) -> None:
        assert self.path is not None
        last = ""
        for record, line in _lines(self.path):
            last = line
            if record is None:
                self.torn_lines += 1
                continue
            self.records_read += 1
            if record["kind"] == "summary":
                self.summaries[record["key"]] = record
            elif record["kind"] == "clusters":
                self.clusterings[record["key"]] = record["clusters"]
        if self.torn_lines:
            log.warning("ignored %d unreadable line(s) in %s", self.torn_lines, self.path)
        self._open_tail = bool(last) and not last.endswith("\n")

    def _append(self, record: dict[str, Any]) -> None:
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps(record, ensure_ascii=False) + "\n"
        if self._open_tail:  # else the first new record would share the torn line, and die with it
            line = "\n" + line
            self._open_tail = False
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())

    def record_summary(self, key: str, record: dict[str, Any]) -> None:
        entry = {"kind": "summary", "key": key, **record}
        self.summaries[key] = entry
        self._append(entry)

    def record_clusters(self, key: str, clusters: list[list[str]]) -> None:
        self.clusterings[key] = clusters
        self._append({"kind": "clusters", "key": key, "clusters": clusters})

    def record_layer(self, group: str, layer: int, nodes: int) -> None:
        self._append({"kind": "layer", "group": group, "layer": layer, "nodes": nodes})

    def remove(self) -> None:
        if self.path is not None:
            self.path.unlink(missing_ok=True)


def _identity(record: dict[str, Any]) -> tuple[Any, ...]:
    if record.get("kind") == "layer":
        return ("layer", record.get("group"), record.get("layer"))
    return (record.get("kind"), record.get("key"))


def _lines(path: Path) -> Iterator[tuple[dict[str, Any] | None, str]]:
    """Each line of a journal file with its record, or None where the line is no record (torn
    by a kill, or not a journal record at all)."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            try:
                record = json.loads(line)
            except ValueError:
                record = None
            yield (record if isinstance(record, dict) and "kind" in record else None), line


def _records(path: Path) -> list[tuple[tuple[Any, ...], str]]:
    """The readable records of a journal file, each with the exact line it came from."""
    if not path.is_file():
        return []
    return [(_identity(r), line.rstrip("\n")) for r, line in _lines(path) if r is not None]


def merge_journal(source: Path, target: Path) -> int:
    """Append to ``target`` the records of ``source`` it lacks, and say how many.

    A journal lives beside its tree, in a cache a new machine does not have; a build of hours
    outlives one machine only if its journal is copied somewhere kept (a results folder under
    version control) and copied back before the build resumes. Records are content-keyed, so
    the union of two journals of one build is again a journal of that build. Never merge into
    a journal a running build is appending to: the two writers' lines could interleave."""
    source, target = Path(source), Path(target)
    have = {identity for identity, _ in _records(target)}
    missing = []
    for identity, line in _records(source):
        if identity not in have:
            have.add(identity)
            missing.append(line)
    if not missing:
        return 0
    target.parent.mkdir(parents=True, exist_ok=True)
    needs_newline = target.is_file() and target.stat().st_size > 0
    if needs_newline:
        with open(target, "rb") as fh:
            fh.seek(-1, os.SEEK_END)
            needs_newline = fh.read(1) != b"\n"
    with open(target, "a", encoding="utf-8") as fh:
        fh.write(("\n" if needs_newline else "") + "\n".join(missing) + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    return len(missing)
