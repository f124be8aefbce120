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
        line = ""
        with open(self.path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                try:
                    record = json.loads(line)
                    kind = record["kind"]
                except (ValueError, KeyError, TypeError):
                    self.torn_lines += 1
                    continue
                self.records_read += 1
                if kind == "summary":
                    self.summaries[record["key"]] = record
                elif kind == "clusters":
                    self.clusterings[record["key"]] = record["clusters"]
        if self.torn_lines:
            log.warning("ignored %d unreadable line(s) in %s", self.torn_lines, self.path)
        self._open_tail = bool(line) and not line.endswith("\n")

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
