"""Why a run's wrong answers are wrong, read from its rows: no model, no re-run.

Each question the run did not get exactly right falls in the first class that fits:

- ``wrong span``: the right fact in other words (F1 > 0, or the gold inside the answer): a
  reader or normalisation matter, not a search one;
- ``gold not retrieved``: a supporting paragraph was not among anything retrieved;
- ``not in the answer's context``: retrieved, but not among the passages the answer step read
  (for vanilla RAG the two are the same list, so this class stays empty);
- ``misread``: every supporting paragraph was in front of the reader, and it answered wrong.

The planner's rows name the passages its answer step read (``planner.sources``); for the
others, what was retrieved is what was read. Questions without supporting titles (unknown)
are counted apart.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

CLASSES = ("wrong span", "gold not retrieved", "not in the answer's context", "misread")


def classify(row: Mapping[str, Any]) -> str | None:
    """The loss class of one details row, or None when the row is right (EM 1)."""
    if row.get("error"):
        return "failed"
    if float(row.get("em") or 0.0) >= 1.0:
        return None
    if float(row.get("f1") or 0.0) > 0.0 or float(row.get("acc") or 0.0) > 0.0:
        return "wrong span"
    gold = set(row.get("supporting_titles") or [])
    if not gold:
        return "unknown"
    retrieved = set(row.get("retrieved_titles") or [])
    if not gold <= retrieved:
        return "gold not retrieved"
    planner = row.get("planner") or {}
    read = set(planner.get("sources") or []) if "sources" in planner else retrieved
    if not gold <= read:
        return "not in the answer's context"
    return "misread"


def losses(rows: Iterable[Mapping[str, Any]]) -> Counter[str]:
    counts: Counter[str] = Counter()
    for row in rows:
        kind = classify(row)
        counts[kind or "right"] += 1
    return counts


def read_rows(run: Path, ids: set[str] | None = None) -> list[dict[str, Any]]:
    path = run / "details.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [r for r in rows if ids is None or r["id"] in ids]


def losses_markdown(runs: Sequence[Path], *, common: bool = True) -> str:
    """A table of loss classes per run, on the questions every run finished (``common``)."""
    all_rows = {run: read_rows(run) for run in runs}
    ids: set[str] | None = None
    if common:
        for rows in all_rows.values():
            these = {r["id"] for r in rows}
            ids = these if ids is None else ids & these
    columns = ["right", *CLASSES, "failed", "unknown"]
    lines = [
        "| run | questions | " + " | ".join(columns) + " |",
        "|---|---:|" + "---:|" * len(columns),
    ]
    for run, rows in all_rows.items():
        kept = [r for r in rows if ids is None or r["id"] in ids]
        counts = losses(kept)
        name = f"{run.parent.name}/{run.name}"
        cells = " | ".join(str(counts.get(c, 0)) for c in columns)
        lines.append(f"| {name} | {len(kept)} | {cells} |")
    return "\n".join(lines) + "\n"
