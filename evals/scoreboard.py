"""One line per slice of a suite: what the agent gains over the best one-call RAG run, with its
paired interval, and how much of the way to the oracle that is.

Each slice's ``compare_common.md`` holds the whole analysis (``evals.paired``), one file per
slice; the question a reader brings to a suite is shorter: on each slice, does the planner beat
one-call RAG for sure, what share of the reachable gain does it capture, does it follow the
chain, what does it cost, and which of the suite's targets are met. The rows are read as they
are, so a run still growing is scored on the questions every compared run has finished, and the
line says how many that is.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evals.paired import (
    PairedComparison,
    PairedDiff,
    RunRows,
    analyse,
    format_gain,
    format_wlt,
    markdown_table,
    mean_defined,
    pipeline_role,
)
from evals.report import details_or_none


@dataclass(frozen=True)
class Targets:
    """What a suite asks of its agent on one slice (issue 33's bar for the chains suite)."""

    headroom: float = 50.0  # percent of the gap from the best one-call run to the oracle
    hop_recall: float | None = None  # percent of gold hops some atomic query retrieved
    calls: float = 6.0  # median LLM calls a question
    prompt_tokens: float = 2_500.0  # median prompt tokens a question


@dataclass(frozen=True)
class SliceScore:
    """The agent against the slice's baselines on the questions all of them finished."""

    slice: str
    agent: str
    finished: Mapping[str, int]  # run -> finished questions (before pairing)
    limit: int  # the slice's size
    comparison: PairedComparison
    hop_recall: float | None  # the agent's, percent, on the paired questions
    median_calls: float | None
    median_prompt_tokens: float | None

    @property
    def n(self) -> int:
        return len(self.comparison.ids)

    @property
    def gain(self) -> PairedDiff | None:
        return self.comparison.vs_best.get(self.agent)

    @property
    def headroom(self) -> float | None:
        return self.comparison.headroom.get(self.agent)


def _median(rows: Sequence[Mapping[str, Any]], key: str) -> float | None:
    values = [float(r[key]) for r in rows if isinstance(r.get(key), int | float)]
    return float(statistics.median(values)) if values else None


def slice_score(
    root: Path, slice_name: str, pipelines: Sequence[str], limit: int, agent: str = "full"
) -> SliceScore | None:
    """The score of ``agent`` on one slice folder, or None when it cannot be paired: no rows
    for the agent or for any one-call run, or no question they all finished."""
    runs: list[RunRows] = []
    finished: dict[str, int] = {}
    for pipeline in pipelines:
        rows = details_or_none(root / slice_name / pipeline)
        if not rows:
            continue
        finished[pipeline] = len(rows)
        if pipeline != agent and pipeline_role(pipeline) == "agent":
            # an ablation is compared in the slice's compare tables; pairing it here would
            # shrink the agent's line to the questions a growing ablation has reached
            continue
        runs.append(RunRows(pipeline, pipeline, {str(r["id"]): r for r in rows}))
    if agent not in finished or not any(r.role == "one-call" for r in runs):
        return None
    try:
        comparison = analyse(runs)
    except ValueError:  # nothing in common yet
        return None
    agent_rows = next(r.rows for r in comparison.runs if r.label == agent)
    paired = [agent_rows[qid] for qid in comparison.ids]
    hop_recall, _n = mean_defined(paired, "hop_recall")
    return SliceScore(
        slice=slice_name,
        agent=agent,
        finished=finished,
        limit=limit,
        comparison=comparison,
        hop_recall=hop_recall,
        median_calls=_median(paired, "llm_calls"),
        median_prompt_tokens=_median(paired, "prompt_tokens"),
    )


def _cell(text: str, value: float | None, ok: bool | None) -> str:
    """A judged cell ends in ✓ or ✗; a cell with no target or no value is left as it is."""
    if ok is None or value is None:
        return text
    return f"{text} {'✓' if ok else '✗'}"


def _number(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None else f"{value:,.{digits}f}"


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}%"


def score_cells(score: SliceScore, targets: Targets | None) -> list[str]:
    """The scoreboard's cells for one slice; with ``targets``, each judged cell ends in ✓ or ✗."""
    c = score.comparison
    best, oracle, gain, room = c.best_one_call, c.oracle, score.gain, score.headroom
    questions = f"{score.n}/{score.limit}"
    t = targets
    calls, tokens, hops = score.median_calls, score.median_prompt_tokens, score.hop_recall
    return [
        score.slice,
        questions,
        f"{best} {c.f1[best]:.1f}" if best else "n/a",
        f"{c.f1[score.agent]:.1f}",
        f"{c.f1[oracle]:.1f}" if oracle else "n/a",
        _cell(format_gain(gain), gain.low, t and gain.low > 0) if gain else "n/a",
        format_wlt(gain) if gain else "",
        _cell(_percent(room), room, t and room is not None and room >= t.headroom),
        _cell(
            _percent(hops),
            hops,
            None if t is None or t.hop_recall is None else (hops or 0.0) >= t.hop_recall,
        ),
        _cell(_number(calls, 0), calls, t and calls is not None and calls <= t.calls),
        _cell(_number(tokens, 0), tokens, t and tokens is not None and tokens <= t.prompt_tokens),
    ]


HEADER = [
    "slice",
    "paired",
    "best one-call",
    "agent",
    "oracle",
    "ΔF1 [95% CI]",
    "W/L/T",
    "headroom",
    "hop recall",
    "calls",
    "prompt tok",
]


def growing_runs(scores: Sequence[SliceScore]) -> list[str]:
    """ "2wiki: full 9, hybrid 40 of 163 finished" for each slice with a run not yet whole."""
    growing = []
    for score in scores:
        short = [f"{p} {n}" for p, n in score.finished.items() if n < score.limit]
        if short:
            growing.append(f"{score.slice}: {', '.join(short)} of {score.limit} finished")
    return growing


def scoreboard_markdown(
    scores: Sequence[SliceScore], targets: Mapping[str, Targets], suite: str
) -> str:
    """The scoreboard as a markdown page: the table, then what the marks judge."""
    if not scores:
        return (
            f"# Scoreboard of suite {suite}\n\nNo slice has an agent run and a one-call run yet.\n"
        )
    agent = scores[0].agent
    lines = [
        f"# Scoreboard of suite {suite}",
        "",
        f"`{agent}` against the best one-call RAG run of each slice (`bm25`, `dense` or "
        "`hybrid`, the highest F1 on the paired questions), on the questions every run of the "
        "slice finished; paired bootstrap interval of the mean F1 difference (10,000 "
        "resamples, seed 0); headroom captured = (agent - best one-call) / (oracle - best "
        "one-call) on mean F1.",
        "",
        *markdown_table(HEADER, [score_cells(s, targets.get(s.slice)) for s in scores]),
    ]
    growing = growing_runs(scores)
    lines += [
        "",
        "Columns: questions paired (every run of the slice finished them) of the slice; mean F1 "
        "of the best one-call run, the agent and the oracle on them; the agent minus the best "
        "one-call run; the agent's hop recall (gold hops some atomic query retrieved) and its "
        "median LLM calls and prompt tokens a question.",
    ]
    if growing:
        lines += ["", "Runs still growing: " + "; ".join(growing) + "."]
    judged = [(name, t) for name, t in targets.items() if any(s.slice == name for s in scores)]
    if judged:
        lines += ["", "✓ / ✗: the suite's targets for the slice:"]
        for name, t in judged:
            hop = f", hop recall ≥ {t.hop_recall:.0f}%" if t.hop_recall is not None else ""
            lines.append(
                f"- {name}: interval above zero, headroom captured ≥ {t.headroom:.0f}%{hop}, "
                f"median calls ≤ {t.calls:.0f}, median prompt tokens ≤ {t.prompt_tokens:,.0f}"
            )
    return "\n".join(lines) + "\n"
