"""The planner's own phrasing of gold hops, from a run's recorded rows (issue 51).

``hop_reading.py`` reads each gold hop as the gold labels phrase it; the planner asks the same
hop in its own words ("capital of #1" searched as "capital of Sullivan's Island, South
Carolina"), and a reader that reads clean hops may still miss the planner's. The gap is
measured on the same hops: a recorded query stands for the gold hop that
``planning.judge`` matches it to (the hop's subject named, or linked to the query of the hop it
needs), the rule the planning benchmark scores plans with, so both benchmarks agree on which
query asks which hop.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from planning import decompose_queries, gold_steps, judge, recorded_plan, recorded_rows

from evals.datasets import EvalQuestion

RESULTS = Path(__file__).resolve().parents[1] / "evals" / "results" / "v4"
# split -> the recorded ``full`` run whose planner queries phrase its hops
ROWS: dict[str, Path] = {
    "musique_tune": RESULTS / "tune" / "musique" / "full" / "details.jsonl",
    "musique_report": RESULTS / "musique" / "full" / "details.jsonl",
    "2wiki_report": RESULTS / "2wiki" / "full" / "details.jsonl",
}
_REF = re.compile(r"#\d")


def searched(sub: dict[str, Any]) -> bool:
    """Whether a recorded query was searched: a query left waiting on an answer that never
    came keeps round 0 and its ``#n``, and has no text as searched."""
    return int(sub.get("round") or 0) > 0 and not _REF.search(str(sub.get("query", "")))


def planner_hops(question: EvalQuestion, row: dict[str, Any]) -> dict[int, dict[str, Any]]:
    """1-based gold hop -> the recorded decompose query matched to it (searched or not), with
    ``asked``: whether the query also holds a word of the hop's relation (``planning.judge``:
    a query linked to the right hop may still ask another relation of it)."""
    subs = decompose_queries(row)
    verdict = judge(gold_steps(question), recorded_plan(subs))
    return {
        n: {**subs[m], "asked": asked}
        for n, (m, asked) in enumerate(zip(verdict.matched, verdict.asked, strict=True), start=1)
        if m is not None
    }


def rows_by_question(path: Path) -> dict[str, dict[str, Any]]:
    return {row["id"]: row for row in recorded_rows(path)}
