"""What draft first changes about a run, read from its rows: how often the router sent the
question on to the planner, and how soon the first answer came.

Issue 53 answers every question with a one-call draft before the planner may run. Its worth
shows in two numbers that F1 does not carry: the escalation rate (the share of drafted
questions whose router decision ran the plan; the rest cost one call) and the time a user waits
for the first answer, a median and a 90th percentile, because a few escalated questions make
the mean say little. A run without drafts answers once, so its first answer is its final one and
its row's seconds are that time: that is what a draft-first run is set against in a comparison.
Rows written before ``first_answer_s`` existed, and rows of other pipelines, carry no draft, and
a run whose rows carry none gets no draft measures at all, so its tables read as they did.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np


def _planner(row: Mapping[str, Any]) -> Mapping[str, Any]:
    planner = row.get("planner")
    return planner if isinstance(planner, Mapping) else {}


def draft_of(row: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The draft a row's planner record holds (``evals.pipelines.draft_record``), or None."""
    draft = _planner(row).get("draft")
    return draft if isinstance(draft, Mapping) else None


def has_drafts(rows: Sequence[Mapping[str, Any]]) -> bool:
    return any(draft_of(r) is not None for r in rows)


def escalated(row: Mapping[str, Any]) -> bool | None:
    """Whether the router ran the plan after this row's draft; None for a row without a draft."""
    draft = draft_of(row)
    if draft is None:
        return None
    decision = draft.get("decision")
    return bool(decision.get("escalate")) if isinstance(decision, Mapping) else False


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        return None
    return float(value)


def first_answer_seconds(row: Mapping[str, Any]) -> float | None:
    """When the row's first answer came: ``first_answer_s`` where the draft recorded it, the
    row's seconds otherwise (no draft, or a question that failed before its draft: the user
    waited the whole time for nothing sooner)."""
    first = _number(_planner(row).get("first_answer_s"))
    return first if first is not None else _number(row.get("seconds"))


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (linear between the closest ranks, numpy's default); None for no
    values."""
    return float(np.percentile(np.asarray(values, dtype=float), q)) if values else None


def first_answer_times(rows: Sequence[Mapping[str, Any]]) -> tuple[float | None, float | None]:
    """The median and 90th percentile of ``first_answer_seconds`` over ``rows``."""
    times = [t for t in map(first_answer_seconds, rows) if t is not None]
    return percentile(times, 50), percentile(times, 90)


def _round(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def draft_means(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The draft measures of a run for ``metrics.json``; nothing for a run without drafts. The
    escalation rate is a percentage (the metrics' scale) of the rows that hold a draft, and how
    many those are is given beside it; the first-answer times cover every row."""
    decisions = [d for d in map(escalated, rows) if d is not None]
    if not decisions:
        return {}
    median, p90 = first_answer_times(rows)
    return {
        "draft_recorded_n": len(decisions),
        "escalated_n": sum(decisions),
        "escalation_rate": round(100.0 * sum(decisions) / len(decisions), 2),
        "first_answer_s_median": _round(median, 2),
        "first_answer_s_p90": _round(p90, 2),
    }
