"""Where hoptree's default stands on the answer path, per slice: the draft, the final answer and
the best one call on the same questions, how often the router planned and how often the plan
changed the answer, and the seconds. Read from recorded rows: no model call.

Issue 65 asks for these figures on every tuning slice, on the documentation set and on the
fresh report slices, in ``benchmarks/results/answer-path.json``. Each slice names its default
run (``draft-first``, the default of the code it was recorded at) and its one-call runs (``bm25``,
``hybrid``; an ``oracle`` where one was run, for the headroom). Every figure is on the questions
all of them answered, paired by id:

- ``draft_f1``: the draft's own short answer (``planner.draft.short_answer``) scored as the final
  answer is; ``default_f1``: the final answer;
- ``best_one_call``: the one-call run with the higher F1 on these questions, ``one_call_f1`` its
  F1; ``delta``, ``ci_low``, ``ci_high``: default minus it, with the paired 95% bootstrap interval
  (percentage points), ``wins``/``losses`` the default's; ``draft``: the same for the draft;
  ``one_call_won``: the questions that one call scored above the default, by why
  (``evals.peer_wins``: the plan changed a right draft, a wrong span, a gold paragraph only the
  one call read, a misreading);
- ``planned``: questions the router sent to the plan; ``changed``: questions whose final answer
  is not the draft's (normalised); ``planned_unchanged``: planned, and the answer not changed
  (the issue asks for the plan on at most half of the questions it does not change);
- ``median_s``: the final answer's seconds, ``first_answer_median_s``: the draft's
  (``planner.first_answer_s``). Seconds are the run's own: two questions at once on most runs,
  with other work on the machine on some, so they compare within a run only; a run that
  replayed another's calls from an experiment LLM cache has none (``SliceRuns.replayed``).

A slice whose one-call run is missing is reported with what it has, and says so.

The picture (``answer-path.png``) draws, for each slice, the draft and the default against the
best one call, each with its interval, beside the issue's bar (a lower end of -2).

    python benchmarks/answer_path.py   # writes benchmarks/results/answer-path.{json,md,png}
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evals.compare import draw_interval
from evals.drafts import draft_of, escalated, first_answer_seconds
from evals.metrics import best_f1
from evals.paired import headroom_captured, paired_diff
from evals.peer_scores import rows_of
from evals.peer_wins import CLASSES, classify_win
from searchers.text import normalize_answer_folded

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "evals" / "results"
OUT = ROOT / "benchmarks" / "results" / "answer-path.json"


@dataclass(frozen=True)
class SliceRuns:
    """One slice: its group (tuning, documentation, fresh report) and its runs under
    ``evals/results``."""

    group: str
    default: str
    one_calls: Mapping[str, str]  # pipeline -> run folder
    oracle: str | None = None
    note: str = ""
    # the default run replayed calls another run made (an experiment LLM cache): its seconds
    # are what the replay took, not what the questions cost, so none is reported
    replayed: bool = False


# the tuning slices' default: questions 1-20 run again with today's default (v13; until the
# thirty-first session the answers of 0b9d867, evals/results/v9/replay, with the JSON readers)
TODAY = (
    "1-20, today's default (the draft and each hop read by the free reader; v13, two at a "
    "time, LLM cache off; with the JSON readers, v9/replay/before-0b9d867/<slice>/draft-first)"
)
# the former report slices' default: its first 50 questions with the free draft reader
FORMER = (
    "the former report slice (read while the planner was designed), first 50: today's default, "
    "the draft and each hop read by the free reader (v12; with the hops read by the JSON "
    "reader, v11/<slice>/draft-first-free; the draft too, v11/<slice>/draft-first-json)"
)
# the fresh report slices (read by nobody while hoptree was designed): today's default
FRESH = (
    "today's default (the draft and each hop read by the free reader; with the hops read by "
    "the JSON reader, peers/fresh/<slice>/draft-first-hop-reader; the draft too, "
    "draft-first-json), on every question its one calls answered"
)
SLICES: dict[str, SliceRuns] = {
    "tune/hotpotqa": SliceRuns(
        "tuning",
        "v13/tune/hotpotqa/draft-first",
        {"bm25": "v4/tune/hotpotqa/bm25", "hybrid": "v4/tune/hotpotqa/hybrid"},
        note=TODAY,
    ),
    "tune/2wiki": SliceRuns(
        "tuning",
        "v13/tune/2wiki/draft-first",
        {"bm25": "v4/tune/2wiki/bm25", "hybrid": "v4/tune/2wiki/hybrid"},
        "v4/tune/2wiki/oracle",
        TODAY,
    ),
    "tune/musique": SliceRuns(
        "tuning",
        "v13/tune/musique/draft-first",
        {"bm25": "v4/tune/musique/bm25", "hybrid": "v4/tune/musique/hybrid"},
        "v4/tune/musique/oracle",
        TODAY,
    ),
    "hotpotqa_b": SliceRuns(
        "tuning",
        "v12/hotpotqa_b/draft-first-hop-free",
        {"bm25": "v4/hotpotqa_b/bm25", "hybrid": "v4/hotpotqa_b/hybrid"},
        "v4/hotpotqa_b/oracle",
        FORMER,
        replayed=True,
    ),
    "2wiki": SliceRuns(
        "tuning",
        "v12/2wiki/draft-first-hop-free",
        {"bm25": "v4/2wiki/bm25", "hybrid": "v4/2wiki/hybrid"},
        "v4/2wiki/oracle",
        FORMER,
        replayed=True,
    ),
    "musique": SliceRuns(
        "tuning",
        "v12/musique/draft-first-hop-free",
        {"bm25": "v4/musique/bm25", "hybrid": "v4/musique/hybrid"},
        "v4/musique/oracle",
        FORMER,
        replayed=True,
    ),
    "docs/apache-httpd": SliceRuns(
        "documentation",
        "v13/docs-apache-httpd/draft-first",
        {"bm25": "docs/apache-httpd/bm25", "hybrid": "docs/apache-httpd/hybrid"},
        note="all 49: today's default (v13; questions 1-20 with the free draft reader and the "
        "JSON hop reader, v11/docs-apache-httpd/draft-first-free)",
    ),
    "fresh/hotpotqa": SliceRuns(
        "fresh report",
        "peers/fresh/hotpotqa/draft-first",
        {"bm25": "peers/fresh/hotpotqa/bm25", "hybrid": "peers/fresh/hotpotqa/hybrid"},
        "peers/fresh/hotpotqa/oracle",
        FRESH,
    ),
    "fresh/2wiki": SliceRuns(
        "fresh report",
        "peers/fresh/2wiki/draft-first",
        {"bm25": "peers/fresh/2wiki/bm25", "hybrid": "peers/fresh/2wiki/hybrid"},
        "peers/fresh/2wiki/oracle",
        FRESH,
    ),
    "fresh/musique": SliceRuns(
        "fresh report",
        "peers/fresh/musique/draft-first",
        {"bm25": "peers/fresh/musique/bm25", "hybrid": "peers/fresh/musique/hybrid"},
        "peers/fresh/musique/oracle",
        FRESH,
    ),
}


def draft_answer(row: Mapping[str, Any]) -> str | None:
    """The draft's short answer, or None for a row without a draft (a failed run)."""
    draft = draft_of(row)
    return None if draft is None else str(draft.get("short_answer") or "")


def planned(row: Mapping[str, Any]) -> bool:
    """The router sent the question on to the plan (``evals.drafts.escalated``)."""
    return escalated(row) is True


def changed(row: Mapping[str, Any]) -> bool:
    """The final answer is not the draft's (normalised, so "the Beatles" is "Beatles")."""
    draft = draft_answer(row) or ""
    return normalize_answer_folded(draft) != normalize_answer_folded(str(row.get("prediction", "")))


def _median(values: Sequence[float]) -> float | None:
    return round(statistics.median(values), 2) if values else None


def _f1(rows: Mapping[str, Mapping[str, Any]], ids: Sequence[str]) -> dict[str, float]:
    return {i: float(rows[i].get("f1") or 0.0) for i in ids}


def _mean(scores: Mapping[str, float]) -> float:
    return round(100.0 * sum(scores.values()) / len(scores), 1)


def _seconds(rows: Sequence[Mapping[str, Any]]) -> tuple[float | None, float | None]:
    """Median seconds of the final answer and of the first (the draft's)."""
    final = [float(r.get("seconds") or 0.0) for r in rows]
    first = [t for t in map(first_answer_seconds, rows) if t is not None]
    return _median(final), _median(first)


def _against(run: Mapping[str, float], reference: Mapping[str, float]) -> dict[str, Any]:
    d = paired_diff(run, reference)
    return {
        "delta": round(d.mean, 1) + 0.0,
        "ci_low": round(d.low, 1) + 0.0,
        "ci_high": round(d.high, 1) + 0.0,
        "wins": d.wins,
        "losses": d.losses,
    }


def _won(
    default: Mapping[str, Mapping[str, Any]],
    one_call: Mapping[str, Mapping[str, Any]],
    ids: Sequence[str],
) -> dict[str, int]:
    """The questions the one call scored above the default, by why (``evals.peer_wins``)."""
    kinds = [classify_win(default[i], one_call[i]) for i in ids]
    return {kind: kinds.count(kind) for kind in CLASSES if kind in kinds}


def slice_figures(runs: SliceRuns, results: Path = RESULTS) -> dict[str, Any] | None:
    """The figures of one slice on the questions its default and every one-call run answered;
    None when the default run is missing or shares no question with them."""
    default = {
        i: r for i, r in rows_of(results / runs.default).items() if draft_answer(r) is not None
    }
    recorded = {name: rows_of(results / path) for name, path in runs.one_calls.items()}
    one_calls = {name: rows for name, rows in recorded.items() if rows}
    ids = sorted(set(default).intersection(*(set(rows) for rows in one_calls.values())))
    if not ids:
        return None
    rows = [default[i] for i in ids]
    final = _f1(default, ids)
    draft = {
        i: best_f1(draft_answer(default[i]) or "", default[i].get("answers") or []) for i in ids
    }
    median_s, first_s = (None, None) if runs.replayed else _seconds(rows)
    one_call_f1 = {name: _mean(_f1(scored, ids)) for name, scored in one_calls.items()}
    out: dict[str, Any] = {
        "group": runs.group,
        "n": len(ids),
        "draft_f1": _mean(draft),
        "default_f1": _mean(final),
        "best_one_call": None,
        "one_call_f1": None,
        "delta": None,
        "ci_low": None,
        "ci_high": None,
        "planned": sum(planned(r) for r in rows),
        "changed": sum(changed(r) for r in rows),
        "planned_unchanged": sum(planned(r) and not changed(r) for r in rows),
        "median_s": median_s,
        "first_answer_median_s": first_s,
        "one_calls": one_call_f1,
        "missing_one_calls": sorted(set(recorded) - set(one_calls)),
        "runs": {"default": runs.default, **{k: runs.one_calls[k] for k in one_calls}},
    }
    if one_calls:
        best = max(one_call_f1, key=lambda name: (one_call_f1[name], name))
        reference = _f1(one_calls[best], ids)
        out.update(best_one_call=best, one_call_f1=one_call_f1[best], **_against(final, reference))
        out["draft"] = _against(draft, reference)
        out["one_call_won"] = _won(default, one_calls[best], ids)
    oracle = rows_of(results / runs.oracle) if runs.oracle else {}
    if oracle and out["one_call_f1"] is not None and set(ids) <= set(oracle):
        out["oracle_f1"] = _mean(_f1(oracle, ids))
        captured = headroom_captured(out["default_f1"], out["one_call_f1"], out["oracle_f1"])
        out["headroom_captured"] = None if captured is None else round(captured, 1)
        out["runs"]["oracle"] = runs.oracle
    if runs.note:
        out["note"] = runs.note
    return out


def _cell(value: Any) -> str:
    return "" if value is None else str(value)


def markdown(figures: Mapping[str, Mapping[str, Any]]) -> str:
    lines = [
        "# The answer path: draft, default and the best one call",
        "",
        "From recorded rows (`python benchmarks/answer_path.py`, no model call). Δ is default",
        "minus the best one call on the same questions, with the paired 95% bootstrap interval",
        "and hoptree's wins/losses; *draft Δ* the draft minus the same one call. *Planned*: the",
        "router sent the question to the plan; *changed*: the final answer is not the draft's.",
        "Seconds are each run's own (mostly two questions at once; see each run's `report.md`)",
        "and compare only within a run; none is given for a run that replayed another's calls.",
        "",
        "| slice | group | n | draft | default | best one call | Δ default [95% CI] W/L "
        "| draft Δ [95% CI] | planned | changed | planned, unchanged | median s | first answer s "
        "| headroom |",
        "|---|---|---:|---:|---:|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, f in figures.items():
        best = f"{f['best_one_call']} {f['one_call_f1']}" if f["best_one_call"] else "(none run)"
        delta = (
            f"{f['delta']:+.1f} [{f['ci_low']:+.1f}, {f['ci_high']:+.1f}] {f['wins']}/{f['losses']}"
            if f["delta"] is not None
            else ""
        )
        d = f.get("draft")
        draft_delta = f"{d['delta']:+.1f} [{d['ci_low']:+.1f}, {d['ci_high']:+.1f}]" if d else ""
        headroom = f.get("headroom_captured")
        lines.append(
            f"| {name} | {f['group']} | {f['n']} | {f['draft_f1']} | {f['default_f1']} | {best} "
            f"| {delta} | {draft_delta} | {f['planned']} | {f['changed']} "
            f"| {f['planned_unchanged']}/{f['n'] - f['changed']} "
            f"| {_cell(f['median_s'])} | {_cell(f['first_answer_median_s'])} "
            f"| {'' if headroom is None else f'{headroom}%'} |"
        )
    won = [
        f"- {name}: " + "; ".join(f"{kind} {n}" for kind, n in f["one_call_won"].items())
        for name, f in figures.items()
        if f.get("one_call_won")
    ]
    if won:
        lines += [
            "",
            "Where the best one call scored above the default, by why (`evals/peer_wins.py`: "
            "the first class that fits):",
            "",
            *won,
        ]
    lines += ["", "Runs (under `evals/results/`):", ""]
    for name, f in figures.items():
        runs = ", ".join(f"{k} `{v}`" for k, v in f["runs"].items())
        extra = f"; not run: {', '.join(f['missing_one_calls'])}" if f["missing_one_calls"] else ""
        note = f" ({f['note']})" if f.get("note") else ""
        lines.append(f"- {name}{note}: {runs}{extra}")
    return "\n".join(lines) + "\n"


# the bar for the draft and the default against the best one call: the lower end of the
# paired interval at -2 or above
BAR = -2.0


def figure(figures: Mapping[str, Mapping[str, Any]]) -> Any | None:
    """Each slice's draft (hollow) and default (filled) minus its best one call, with the paired
    95% intervals, green where the lower end meets ``BAR``, red where it does not; None when no
    slice has a one-call run to be set against."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    shown = [(name, f) for name, f in figures.items() if f.get("delta") is not None]
    if not shown:
        return None
    drawing = Figure(figsize=(7.5, 1.2 + 0.5 * len(shown)))
    FigureCanvasAgg(drawing)
    axes = drawing.add_subplot()
    places = list(range(len(shown)))[::-1]  # the first slice on top
    for place, (_, f) in zip(places, shown, strict=True):
        arms = [(f, place - 0.15, "default")]
        if f.get("draft"):
            arms.append((f["draft"], place + 0.15, "draft"))
        for arm, y, kind in arms:
            low, mean, high = float(arm["ci_low"]), float(arm["delta"]), float(arm["ci_high"])
            color = "tab:green" if low >= BAR else "tab:red"
            hollow = kind == "draft"
            draw_interval(axes, y, low, mean, high, color=color, hollow=hollow, capsize=3)
    axes.axvline(0.0, color="grey", linewidth=1)
    axes.axvline(BAR, color="grey", linewidth=0.8, linestyle=":")
    labels = [f"{name} (n={f['n']}, vs {f['best_one_call']})" for name, f in shown]
    axes.set_yticks(places, labels, fontsize=7)
    axes.set_ylim(-0.7, len(shown) - 0.3)
    axes.tick_params(axis="x", labelsize=7)
    axes.set_xlabel(
        "F1 points minus the best one call (paired 95% CI): default filled, draft hollow",
        fontsize=8,
    )
    axes.set_title("The answer path against the best one call, per slice", fontsize=10)
    drawing.tight_layout()
    return drawing


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    figures = {}
    for name, runs in SLICES.items():
        f = slice_figures(runs, args.results)
        if f is None:
            print(f"{name}: no rows yet ({runs.default})", file=sys.stderr)
            continue
        figures[name] = f
    args.out.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    text = markdown(figures)
    args.out.with_suffix(".md").write_text(text, encoding="utf-8")
    drawing = figure(figures)
    if drawing is not None:
        drawing.savefig(args.out.with_suffix(".png"), dpi=110)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
