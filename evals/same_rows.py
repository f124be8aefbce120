"""Did a refactor change any answer? Two recordings of the same questions, row by row.

A change meant to keep behaviour (a refactor, a deletion of settings no pipeline used) is proven
by replay: the questions are run by the code before it into a fresh LLM cache
(``HOPTREE_LLM__CACHE_FILE``), then by the code after it against that cache. If every call of
the second run is a cache hit, every prompt the new code wrote is byte-identical to one the old
code wrote; and the rows must then agree on everything but the clock and the token accounting
(a cached call reads no prompt). This compares the two: for each run folder present on both
sides (``<side>/<slice>/<pipeline>/details.jsonl``) it pairs rows by question id and reports
rows missing on one side, rows that differ (the first differing fields, by path), rows whose
calls read a different number of prompt tokens (from the model or the cache,
``prompt_tokens_read``) and the second side's calls and cache hits.

    python -m evals.same_rows evals/results/v9/replay/before-0b9d867 \\
        evals/results/v9/replay/after-<commit>

Exit status 0 when every paired folder has the same questions, equal rows and only cache hits.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evals.aggregate import prompt_tokens_read

# fields that measure the clock, the machine or the token accounting, at any depth of a row
IGNORED = frozenset(
    {
        "seconds",
        "finished_at",
        "batch",
        "code",
        "prompt_ms",
        "decode_ms",
        "first_answer_s",
        "ms",
        "llm_cache_hits",
        "cache_hit_prompt_tokens",
        "cached_prompt_tokens",
        "steps",
        "prompt_tokens",
        "completion_tokens",
    }
)


def comparable(value: Any) -> Any:
    """``value`` without the ``IGNORED`` fields, at any depth."""
    if isinstance(value, Mapping):
        return {k: comparable(v) for k, v in value.items() if k not in IGNORED}
    if isinstance(value, list):
        return [comparable(v) for v in value]
    return value


def differences(a: Any, b: Any, path: str = "") -> Iterator[str]:
    """The paths where ``a`` and ``b`` differ ("planner.sub_queries[1].finding")."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        for key in sorted({*a, *b}, key=str):
            where = f"{path}.{key}" if path else str(key)
            if key not in a or key not in b:
                yield where
            else:
                yield from differences(a[key], b[key], where)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            yield from differences(x, y, f"{path}[{i}]")
    elif a != b:
        yield path or "(row)"


@dataclass
class FolderReport:
    """One run folder on both sides."""

    part: str
    paired: int = 0
    only_before: list[str] = field(default_factory=list)
    only_after: list[str] = field(default_factory=list)
    differing: dict[str, list[str]] = field(default_factory=dict)  # id -> differing paths
    tokens_differ: list[str] = field(default_factory=list)  # ids: other prompt tokens read
    calls: int = 0  # the second side's model calls
    cache_hits: int = 0

    @property
    def same(self) -> bool:
        return not (self.only_before or self.only_after or self.differing or self.tokens_differ)

    @property
    def all_hits(self) -> bool:
        return self.calls == self.cache_hits

    def line(self) -> str:
        verdict = "same" if self.same else "DIFFERENT"
        hits = f"{self.cache_hits} of {self.calls} calls cache hits"
        extra = ""
        if self.only_before or self.only_after:
            extra += f"; only before {len(self.only_before)}, only after {len(self.only_after)}"
        if self.tokens_differ:
            extra += f"; prompt tokens read differ in {len(self.tokens_differ)}"
        for qid, paths in list(self.differing.items())[:5]:
            extra += f"; {qid}: {', '.join(paths[:4])}"
        return f"{self.part}: {self.paired} rows paired, {verdict}, {hits}{extra}"


def _rows(path: Path) -> dict[str, dict[str, Any]]:
    return {row["id"]: row for row in map(json.loads, path.read_text().splitlines()) if row}


def compare_folder(before: Path, after: Path, part: str) -> FolderReport:
    old, new = _rows(before / "details.jsonl"), _rows(after / "details.jsonl")
    report = FolderReport(part)
    report.only_before = sorted(set(old) - set(new))
    report.only_after = sorted(set(new) - set(old))
    for qid in sorted(set(old) & set(new)):
        report.paired += 1
        report.calls += int(new[qid].get("llm_calls") or 0)
        report.cache_hits += int(new[qid].get("llm_cache_hits") or 0)
        paths = list(differences(comparable(old[qid]), comparable(new[qid])))
        if paths:
            report.differing[qid] = paths
        if prompt_tokens_read(old[qid]) != prompt_tokens_read(new[qid]):
            report.tokens_differ.append(qid)
    return report


def compare(before: Path, after: Path) -> list[FolderReport]:
    """Every run folder (one holding ``details.jsonl``) found under both sides."""
    parts = sorted(
        str(p.parent.relative_to(before))
        for p in before.rglob("details.jsonl")
        if (after / p.parent.relative_to(before) / "details.jsonl").is_file()
    )
    return [compare_folder(before / part, after / part, part) for part in parts]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("before", type=Path, help="the old code's recording")
    parser.add_argument("after", type=Path, help="the new code's replay of it")
    args = parser.parse_args(argv)
    reports = compare(args.before, args.after)
    if not reports:
        print(f"no run folder is under both {args.before} and {args.after}", file=sys.stderr)
        return 2
    for report in reports:
        print(report.line())
    rows = sum(r.paired for r in reports)
    ok = all(r.same and r.all_hits for r in reports)
    print(f"{rows} rows in {len(reports)} folders: {'unchanged' if ok else 'CHANGED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
