"""Draft first against today's planner on the report slices, from committed rows: no model call.

Issue 53 starts every question with a one-call draft and runs the planner only where the
router escalates (the ``draft-first`` pipeline). Whether that keeps the planner's F1 and saves
its time is a paired question: on each report slice the draft-first run's rows are paired with
the ``full`` run's rows by question id, and the F1 difference gets the paired 95% bootstrap
interval every comparison of the project uses (``evals.paired.paired_diff``). Beside it: the
median seconds a question before and after, the share of questions the router escalated, and
the time to the first answer (``evals.drafts``). The issue's own first-answer target is taken
on HotpotQA ``_a`` questions 1-30 (the ``first-answer`` stage of the chains suite), a run of its
own, because the report slices' seconds were recorded on a machine shared with other runs.

The issue's targets, judged in the markdown's met/missed column:

- HotpotQA ``_b``: ΔF1 ≥ 0 and the interval's lower end ≥ -2; median seconds at least 40% lower;
- 2Wiki and MuSiQue: the lower end ≥ -2; median seconds not higher;
- first answer (HotpotQA ``_a`` 1-30): median ≤ 10 s, 90th percentile ≤ 15 s.

A run folder that is missing, or holds fewer rows than its slice, is reported with what it
has and how many questions that is (``n`` and a ``missing`` note), never filled in; a target
over such a slice is judged on those rows and the note says so. Rerun it after each session's
rows land: it reads them as they are, and rewrites both files.

    python benchmarks/draft_first.py   # writes benchmarks/results/draft-first.json and .md
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

from agent.checks.chains import chain_end
from agent.rules.asked import asks_when
from evals.drafts import escalated, first_answer_times
from evals.metrics import best_f1
from evals.paired import DEFAULT_RESAMPLES, DEFAULT_SEED, paired_diff
from evals.replay import row_plan
from evals.report import ReportError, read_details
from evals.suite import (
    CHAINS_SUITE,
    DRAFT_FOLDER,
    DRAFT_TUNE_FOLDER,
    FIRST_ANSWER,
    FIRST_ANSWER_FOLDER,
)

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "evals" / "results"
OUT = ROOT / "benchmarks" / "results" / "draft-first.json"
SLICES = ("hotpotqa_b", "2wiki", "musique")
BEFORE = str(RESULTS / "v4" / "{slice}" / "full")
AFTER = str(RESULTS / DRAFT_FOLDER / "{slice}" / "draft-first")
FIRST = RESULTS / FIRST_ANSWER_FOLDER / FIRST_ANSWER / "draft-first"
# the first draft-first runs, with the first router (comparisons, choices and unsure drafts
# planned; confident chains kept their draft): the record the current router is paired with
EARLIER = str(RESULTS / "v5" / "{slice}" / "draft-first")
# the current router's runs before the residual last hop (v6), paired with the current ones
BEFORE_RESIDUAL = str(RESULTS / "v6" / "{slice}" / "draft-first")
# the findings step inside draft-first, A/B'd on tuning slices (their first N questions): the
# reader reading each hop (the default) against one batched call a round (v4's ``full``)
FINDINGS_AB = {"tune/musique": 30, "tune/2wiki": 20}
FINDINGS_ARMS = (
    str(RESULTS / DRAFT_TUNE_FOLDER / "{slice}" / "draft-first"),
    str(RESULTS / DRAFT_TUNE_FOLDER / "{slice}" / "draft-first-batched"),
)
FIRST_QUESTIONS = CHAINS_SUITE.slices[FIRST_ANSWER].limit  # 30

# issue 53's bar
MIN_LOW = -2.0  # points of F1: the paired interval's lower end, every report slice
HOTPOT_SPEEDUP = 0.6  # HotpotQA's median seconds at most 60% of today's (40% lower)
FIRST_MEDIAN_S = 10.0
FIRST_P90_S = 15.0


def shown(path: Path) -> str:
    """A path as the results print it: relative to the checkout where it lies inside it, so no
    machine's folders end up in a committed file."""
    try:
        return path.resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return path.as_posix()


def rows_of(run: Path) -> dict[str, dict[str, Any]] | None:
    """A run folder's finished rows by question id, or None where it has none readable."""
    try:
        return {str(r["id"]): r for r in read_details(run)}
    except ReportError:
        return None


def _median(values: Sequence[float]) -> float | None:
    return round(float(statistics.median(values)), 2) if values else None


def _round(value: float | None, digits: int = 2) -> float | None:
    return None if value is None else round(value, digits)


def _seconds(rows: Sequence[Mapping[str, Any]]) -> list[float]:
    return [float(r["seconds"]) for r in rows if isinstance(r.get("seconds"), int | float)]


def _mean_f1(rows: Sequence[Mapping[str, Any]]) -> float:
    return round(100.0 * statistics.fmean(float(r.get("f1") or 0.0) for r in rows), 2)


def compare_slice(
    before: Path,
    after: Path,
    questions: int,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> dict[str, Any]:
    """The draft-first run ``after`` against the ``full`` run ``before`` (``compare_rows``)."""
    return compare_rows(
        rows_of(before), rows_of(after), before, after, questions, resamples=resamples, seed=seed
    )


Rows = dict[str, dict[str, Any]]


def compare_rows(
    old: Rows | None,
    new: Rows | None,
    before: Path,
    after: Path,
    questions: int,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    labels: tuple[str, str] = ("full", "draft-first"),
) -> dict[str, Any]:
    """The draft-first rows ``new`` (of run ``after``) against the rows ``old`` of run
    ``before`` (``full``, or ``labels`` says what) on the questions both finished: ΔF1 (after
    minus before, points) with its paired interval, wins and losses, the median seconds of
    each, the share escalated and the first-answer times of ``after``. None: the run has no
    readable rows."""
    notes = []
    for label, run, rows in ((labels[0], before, old), (labels[1], after, new)):
        if rows is None:
            notes.append(f"no {label} rows at {shown(run)}")
        elif len(rows) < questions:
            notes.append(f"{label} has {len(rows)} of {questions} questions")
    ids = sorted((old or {}).keys() & (new or {}).keys())
    result: dict[str, Any] = {
        "before": shown(before),
        "after": shown(after),
        "questions": questions,
        "n": len(ids),
    }
    if old is not None and new is not None and not ids and len(old) and len(new):
        notes.append("the two runs share no question")
    if not ids:
        empty = ("f1_before", "f1_after", "f1_delta", "ci_low", "ci_high", "wins", "losses")
        empty += ("ties", "median_s_before", "median_s_after", "escalated")
        empty += ("first_answer_median_s", "first_answer_p90_s")
        return {**result, **dict.fromkeys(empty), "missing": "; ".join(notes)}
    paired_old = [old[i] for i in ids]  # type: ignore[index]
    paired_new = [new[i] for i in ids]  # type: ignore[index]
    diff = paired_diff(
        {i: float(new[i].get("f1") or 0.0) for i in ids},  # type: ignore[index]
        {i: float(old[i].get("f1") or 0.0) for i in ids},  # type: ignore[index]
        resamples=resamples,
        seed=seed,
    )
    decisions = [d for d in map(escalated, paired_new) if d is not None]
    median, p90 = first_answer_times(paired_new)
    result |= {
        "f1_before": _mean_f1(paired_old),
        "f1_after": _mean_f1(paired_new),
        "f1_delta": round(diff.mean, 2),
        "ci_low": round(diff.low, 2),
        "ci_high": round(diff.high, 2),
        "wins": diff.wins,
        "losses": diff.losses,
        "ties": diff.ties,
        "median_s_before": _median(_seconds(paired_old)),
        "median_s_after": _median(_seconds(paired_new)),
        "escalated": round(sum(decisions) / len(decisions), 4) if decisions else None,
        "first_answer_median_s": _round(median),
        "first_answer_p90_s": _round(p90),
    }
    if not decisions:
        notes.append("the draft-first rows record no draft")
    if notes:
        result["missing"] = "; ".join(notes)
    return result


# the final choice's reason when a resolved chain's written answer was not grounded
UNSUPPORTED_CHAIN = "chain answer unsupported"


def chain_end_replayed(row: Mapping[str, Any]) -> dict[str, Any]:
    """The row as the code after e7a6100 answers it, no call: a resolved chain's supported end
    now grounds the short answer (``short_answer.settle_short_answer``), so a chain whose
    answer was held unsupported, and lost to the draft, answers with its end. Rows the change
    does not reach come back as they are."""
    choice = (row.get("planner") or {}).get("final_choice") or {}
    if not str(choice.get("reason", "")).startswith(UNSUPPORTED_CHAIN):
        return dict(row)
    end = chain_end(row_plan(row).hops(), asks_when=asks_when(str(row.get("question", ""))))
    if end is None:
        return dict(row)
    answers = [str(a) for a in row.get("answers") or []]
    return {**row, "prediction": end, "f1": best_f1(end, answers), "replayed": True}


def replay_rows(
    old: Rows | None,
    new: Rows | None,
    before: Path,
    after: Path,
    questions: int,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> dict[str, Any]:
    """``new`` replayed with ``chain_end_replayed`` and compared as ``compare_rows`` compares,
    with how many rows the replay changed: an estimate of a run of the current code, labelled
    so."""
    replayed = None if new is None else {i: chain_end_replayed(r) for i, r in new.items()}
    result = compare_rows(old, replayed, before, after, questions, resamples=resamples, seed=seed)
    result["changed"] = sum(1 for r in (replayed or {}).values() if r.get("replayed"))
    return result


def first_answer(run: Path, questions: int = FIRST_QUESTIONS) -> dict[str, Any]:
    """The time to the first answer over a draft-first run's rows (the issue's HotpotQA ``_a``
    1-30), with how many rows that is."""
    rows = rows_of(run)
    found = list((rows or {}).values())
    median, p90 = first_answer_times(found)
    result: dict[str, Any] = {
        "run": shown(run),
        "questions": questions,
        "n": len(found),
        "first_answer_median_s": _round(median),
        "first_answer_p90_s": _round(p90),
    }
    if rows is None:
        result["missing"] = f"no draft-first rows at {shown(run)}"
    elif len(found) < questions:
        result["missing"] = f"draft-first has {len(found)} of {questions} questions"
    return result


# --------------------------------------------------------------------------- the targets


@dataclass(frozen=True)
class Target:
    what: str
    value: str
    met: bool | None  # None: no data to judge


def _judge(value: float | None, ok: bool) -> bool | None:
    return None if value is None else ok


def slice_targets(key: str, s: Mapping[str, Any]) -> list[Target]:
    """Issue 53's targets on one report slice, judged on its paired rows."""
    low, delta = s.get("ci_low"), s.get("f1_delta")
    before, after = s.get("median_s_before"), s.get("median_s_after")
    ratio = after / before if after is not None and before else None
    speed = "n/a" if ratio is None else f"{after:.1f} s vs {before:.1f} s ({ratio - 1:+.0%})"
    targets = []
    if key == "hotpotqa_b":
        targets.append(
            Target(
                "ΔF1 ≥ 0",
                _signed(delta),
                _judge(delta, delta is not None and delta >= 0),
            )
        )
    targets.append(
        Target(
            f"CI lower end ≥ {MIN_LOW:+.0f}",
            _signed(low),
            _judge(low, low is not None and low >= MIN_LOW),
        )
    )
    if key == "hotpotqa_b":
        ok = ratio is not None and ratio <= HOTPOT_SPEEDUP
        targets.append(Target("median s at least 40% lower", speed, _judge(ratio, ok)))
    else:
        ok = ratio is not None and ratio <= 1.0
        targets.append(Target("median s not higher", speed, _judge(ratio, ok)))
    return targets


def first_targets(first: Mapping[str, Any]) -> list[Target]:
    median, p90 = first.get("first_answer_median_s"), first.get("first_answer_p90_s")
    return [
        Target(
            f"first answer median ≤ {FIRST_MEDIAN_S:.0f} s",
            _secs(median),
            _judge(median, median is not None and median <= FIRST_MEDIAN_S),
        ),
        Target(
            f"first answer p90 ≤ {FIRST_P90_S:.0f} s",
            _secs(p90),
            _judge(p90, p90 is not None and p90 <= FIRST_P90_S),
        ),
    ]


def _targets_json(targets: Sequence[Target]) -> list[dict[str, Any]]:
    return [{"target": t.what, "value": t.value, "met": t.met} for t in targets]


# --------------------------------------------------------------------------- the report


def _signed(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.1f}"


def _interval(s: Mapping[str, Any]) -> str:
    """A comparison's ΔF1 with its paired interval, as every table here writes it."""
    return f"{_signed(s['f1_delta'])} [{_signed(s['ci_low'])}, {_signed(s['ci_high'])}]"


def _number(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _secs(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f} s"


def _verdict(met: bool | None) -> str:
    return "no data" if met is None else "met" if met else "missed"


def build(
    before: str = BEFORE,
    after: str = AFTER,
    first: Path = FIRST,
    *,
    earlier: str | None = EARLIER,
    before_residual: str | None = BEFORE_RESIDUAL,
    findings: tuple[str, str] | None = FINDINGS_ARMS,
    slices: Sequence[str] = SLICES,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    progress: bool = True,
) -> dict[str, Any]:
    """The results for every slice (``before`` and ``after`` are folder patterns holding
    ``{slice}``) and the first-answer run; with ``earlier`` (a pattern too), ``after`` paired
    with the earlier router's draft-first run of each slice as well (and with
    ``before_residual``, the current router's runs before the residual hop); with ``findings`` (the
    reader and batched arms' patterns), the findings-call A/B on the tuning slices."""
    results: dict[str, Any] = {}
    replays: dict[str, Any] = {}
    earlier_router: dict[str, Any] = {}
    residual: dict[str, Any] = {}
    for key in slices:
        questions = CHAINS_SUITE.slices[key].limit
        full, drafted = Path(before.format(slice=key)), Path(after.format(slice=key))
        old, new = rows_of(full), rows_of(drafted)  # each run read once
        kw: dict[str, Any] = {"resamples": resamples, "seed": seed}
        entry = compare_rows(old, new, full, drafted, questions, **kw)
        entry["targets"] = _targets_json(slice_targets(key, entry))
        results[key] = entry
        replays[key] = replay_rows(old, new, full, drafted, questions, **kw)
        if earlier:
            first_run = Path(earlier.format(slice=key))
            labels = ("first router", "draft-first")
            earlier_router[key] = compare_rows(
                rows_of(first_run), new, first_run, drafted, questions, labels=labels, **kw
            )
        if before_residual:
            v6 = Path(before_residual.format(slice=key))
            labels = ("before the residual hop", "draft-first")
            residual[key] = compare_rows(rows_of(v6), new, v6, drafted, questions, labels=labels,
                                         **kw)  # fmt: skip
        if progress:
            note = f" ({entry['missing']})" if entry.get("missing") else ""
            print(f"{key}: {entry['n']} paired questions{note}", file=sys.stderr, flush=True)
    results["chain_end_replay"] = replays
    if findings:
        results["findings_ab"] = findings_ab(findings, resamples=resamples, seed=seed)
    if earlier:
        results["earlier_router"] = earlier_router
    if before_residual:
        results["before_residual"] = residual
    timing = first_answer(first)
    results["first_answer"] = {**timing, "targets": _targets_json(first_targets(timing))}
    results["first_answer_median_s"] = timing["first_answer_median_s"]
    results["first_answer_p90_s"] = timing["first_answer_p90_s"]
    if progress:
        note = f" ({timing['missing']})" if timing.get("missing") else ""
        print(f"first answer: {timing['n']} questions{note}", file=sys.stderr, flush=True)
    return results


def findings_ab(
    arms: tuple[str, str] = FINDINGS_ARMS,
    slices: Mapping[str, int] = FINDINGS_AB,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> dict[str, Any]:
    """The batched findings arm against the reader arm (``arms``: folder patterns) on each
    tuning slice of ``slices`` (key: questions), and pooled over them (ids prefixed by the
    slice, so MuSiQue's and 2Wiki's questions stay apart). ΔF1: batched minus reader."""
    labels = ("reader findings", "batched findings")
    kw: dict[str, Any] = {"resamples": resamples, "seed": seed, "labels": labels}
    out: dict[str, Any] = {}
    pooled: tuple[Rows, Rows] = ({}, {})
    for key, questions in slices.items():
        reader, batched = (Path(a.format(slice=key)) for a in arms)
        old, new = rows_of(reader), rows_of(batched)
        out[key] = compare_rows(old, new, reader, batched, questions, **kw)
        for rows, into in ((old, pooled[0]), (new, pooled[1])):
            into.update({f"{key}/{i}": row for i, row in (rows or {}).items()})
    if len(slices) > 1:
        where = (Path(arms[0].format(slice="tune")), Path(arms[1].format(slice="tune")))
        out["pooled"] = compare_rows(*pooled, *where, sum(slices.values()), **kw)
    return out


def findings_ab_lines(ab: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The findings-call A/B inside draft-first (``findings_ab``), tuning slices."""
    if not any(r.get("n") for r in ab.values()):
        return []
    lines = [
        "",
        "## The findings call inside draft-first (tuning slices)",
        "",
        "On the report slices, plans that `full` (one batched findings call a round) had "
        "resolved stayed open under draft-first (the reader reading each hop). Both arms on "
        "the tuning slices' first questions, same code, LLM cache off, two slots: "
        "`evals/results/v6/tune/<slice>/draft-first` (reader) and `.../draft-first-batched`. "
        "ΔF1: batched minus reader, paired.",
        "",
        "| slice | paired | F1 reader | F1 batched | ΔF1 [95% CI] | W/L "
        "| median s reader | median s batched |",
        "|---|---:|---:|---:|---|---:|---:|---:|",
    ]
    for key, r in ab.items():
        if not r.get("n") or r.get("f1_delta") is None:
            lines.append(f"| {key} | 0 | n/a | n/a | n/a | n/a | n/a | n/a |")
            continue
        interval = _interval(r)
        lines.append(
            f"| {key} | {r['n']}/{r['questions']} | {_number(r['f1_before'])} | "
            f"{_number(r['f1_after'])} | {interval} | {r['wins']}/{r['losses']} | "
            f"{_number(r['median_s_before'])} | {_number(r['median_s_after'])} |"
        )
    return lines


def paired_runs_lines(
    section: Mapping[str, Mapping[str, Any]],
    slices: Sequence[str],
    *,
    title: str,
    text: str,
    names: tuple[str, str],
) -> list[str]:
    """A section pairing the current draft-first runs with earlier ones (``names``: the two
    runs' column names, earlier first)."""
    if not section:
        return []
    lines = [
        "",
        f"## {title}",
        "",
        text,
        "",
        f"| slice | paired | F1 {names[0]} | F1 {names[1]} | ΔF1 [95% CI] | W/L "
        f"| median s {names[0]} | median s {names[1]} | escalated ({names[1]}) |",
        "|---|---:|---:|---:|---|---:|---:|---:|---:|",
    ]
    for key in slices:
        s = section.get(key)
        if not s or s["f1_delta"] is None:
            lines.append(f"| {key} | 0 | n/a | n/a | n/a | n/a | n/a | n/a | n/a |")
            continue
        interval = _interval(s)
        share = "n/a" if s["escalated"] is None else f"{100 * s['escalated']:.0f}%"
        lines.append(
            f"| {key} | {s['n']}/{s['questions']} | {_number(s['f1_before'])} | "
            f"{_number(s['f1_after'])} | {interval} | {s['wins']}/{s['losses']} | "
            f"{_number(s['median_s_before'])} | {_number(s['median_s_after'])} | {share} |"
        )
    return lines


def earlier_router_lines(
    earlier: Mapping[str, Mapping[str, Any]], slices: Sequence[str]
) -> list[str]:
    """The current draft-first runs paired with the first router's (``EARLIER``)."""
    return paired_runs_lines(
        earlier,
        slices,
        title="Against the first router",
        text="The first draft-first runs (`evals/results/v5/<slice>/draft-first`, at 55a7059) "
        "planned comparisons, choices and unsure drafts only; a chain whose draft was sure "
        f"kept it. The current runs (`{DRAFT_FOLDER}`) plan every chain too "
        "(`HOPTREE_PLANNER__ROUTER_SHAPES`). ΔF1: current minus first, paired.",
        names=("first router", "current"),
    )


def before_residual_lines(
    residual: Mapping[str, Mapping[str, Any]], slices: Sequence[str]
) -> list[str]:
    """The current draft-first runs paired with the same router's before the residual last
    hop (``BEFORE_RESIDUAL``)."""
    return paired_runs_lines(
        residual,
        slices,
        title="Before the residual last hop",
        text="The current router's runs before the residual last hop "
        "(`evals/results/v6/<slice>/draft-first`, e7a6100) against the current runs "
        f"(`{DRAFT_FOLDER}`, bf9d1b8): `HOPTREE_PLANNER__RESIDUAL_HOP` on, and a resolved "
        "chain's end grounding its answer (54a43ce; the replay section above estimates that "
        "fix alone). ΔF1: current minus before, paired.",
        names=("before", "current"),
    )


def replay_lines(replay: Mapping[str, Mapping[str, Any]], slices: Sequence[str]) -> list[str]:
    """The replay estimate of the chain-end grounding fix (``chain_end_replayed``)."""
    if not any(r.get("n") for r in replay.values()):
        return []
    lines = [
        "",
        "## Replay estimate: a resolved chain's end grounds its answer",
        "",
        "After these runs, a resolved chain's supported end grounds the short answer even when "
        "the answer step's passage window missed the span; before, such a chain's answer was "
        "held unsupported and the draft stood (final choice: *chain answer unsupported*). The "
        "rows replayed with the chain's end in those cases, no call, paired with `full`: an "
        "estimate, not a run. Runs made with the fix (54a43ce, in `v7`) change no row; on "
        "`v6`'s rows, made before it, the replay changed 5 2Wiki rows and 1 MuSiQue row.",
        "",
        "| slice | paired | rows changed | F1 replayed | ΔF1 vs full [95% CI] | W/L |",
        "|---|---:|---:|---:|---|---:|",
    ]
    for key in slices:
        r = replay.get(key) or {}
        if not r.get("n") or r.get("f1_delta") is None:
            lines.append(f"| {key} | 0 | n/a | n/a | n/a | n/a |")
            continue
        interval = _interval(r)
        lines.append(
            f"| {key} | {r['n']} | {r['changed']} | {_number(r['f1_after'])} | {interval} | "
            f"{r['wins']}/{r['losses']} |"
        )
    return lines


def markdown(results: Mapping[str, Any], slices: Sequence[str] = SLICES) -> str:
    lines = [
        "# Draft first against today's planner (issue 53)",
        "",
        "Written by `python benchmarks/draft_first.py` from the committed rows (no model call). "
        f"Each report slice's `draft-first` run (`evals/results/{DRAFT_FOLDER}/<slice>/"
        "draft-first`) is "
        "paired by question id with today's `full` run (`evals/results/v4/<slice>/full`). ΔF1: "
        "draft-first minus full, points, paired 95% bootstrap interval (`evals/paired.py`); "
        "W/L: questions draft-first scored more / less. Seconds: the rows' medians. Escalated: "
        "the share of drafts after which the router ran the planner. First answer: when the "
        "draft (or, escalated, the answer the run sent first) came, median / 90th percentile.",
        "",
        "| slice | paired | F1 full | F1 draft-first | ΔF1 [95% CI] | W/L | median s full "
        "| median s draft-first | escalated | first answer median / p90 s |",
        "|---|---:|---:|---:|---|---:|---:|---:|---:|---:|",
    ]
    for key in slices:
        s = results[key]
        paired = f"{s['n']}/{s['questions']}"
        if s["f1_delta"] is None:
            lines.append(f"| {key} | {paired} | n/a | n/a | n/a | n/a | n/a | n/a | n/a | n/a |")
            continue
        interval = _interval(s)
        share = "n/a" if s["escalated"] is None else f"{100 * s['escalated']:.0f}%"
        first = f"{_number(s['first_answer_median_s'])} / {_number(s['first_answer_p90_s'])}"
        lines.append(
            f"| {key} | {paired} | {_number(s['f1_before'])} | {_number(s['f1_after'])} | "
            f"{interval} | {s['wins']}/{s['losses']} | {_number(s['median_s_before'])} | "
            f"{_number(s['median_s_after'])} | {share} | {first} |"
        )
    timing = results["first_answer"]
    lines += [
        "",
        f"Time to the first answer on HotpotQA `_a` 1-{timing['questions']} "
        f"(`{timing['run']}`, {timing['n']} questions): median "
        f"{_secs(timing['first_answer_median_s'])}, 90th percentile "
        f"{_secs(timing['first_answer_p90_s'])}.",
        "",
        "## Issue 53's targets",
        "",
        "| slice | target | value | met/missed |",
        "|---|---|---|---|",
    ]
    for key in slices:
        for t in results[key]["targets"]:
            lines.append(f"| {key} | {t['target']} | {t['value']} | {_verdict(t['met'])} |")
    for t in timing["targets"]:
        lines.append(
            f"| HotpotQA `_a` 1-{timing['questions']} | {t['target']} | {t['value']} | "
            f"{_verdict(t['met'])} |"
        )
    lines += earlier_router_lines(results.get("earlier_router") or {}, slices)
    lines += before_residual_lines(results.get("before_residual") or {}, slices)
    lines += replay_lines(results.get("chain_end_replay") or {}, slices)
    lines += findings_ab_lines(results.get("findings_ab") or {})
    notes = [(key, results[key].get("missing")) for key in slices]
    notes.append(("first answer", timing.get("missing")))
    missing = [f"- {key}: {note}" for key, note in notes if note]
    if missing:
        lines += [
            "",
            "Not whole yet (judged on the rows that exist, never filled in):",
            "",
            *missing,
        ]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--before",
        default=BEFORE,
        help="today's full run of a slice, {slice} standing for its key "
        "(default: evals/results/v4/{slice}/full)",
    )
    parser.add_argument(
        "--after",
        default=AFTER,
        help="the draft-first run of a slice, {slice} standing for its key "
        f"(default: evals/results/{DRAFT_FOLDER}/{{slice}}/draft-first)",
    )
    parser.add_argument(
        "--first-answer",
        type=Path,
        default=FIRST,
        help=f"the draft-first run on HotpotQA _a 1-{FIRST_QUESTIONS} (default: {shown(FIRST)})",
    )
    parser.add_argument(
        "--earlier",
        default=EARLIER,
        help="the first router's draft-first run of a slice, {slice} standing for its key, "
        "paired with --after too ('' leaves the section out)",
    )
    parser.add_argument(
        "--out", type=Path, default=OUT, help="the JSON file; the markdown goes beside it (.md)"
    )
    parser.add_argument("--resamples", type=int, default=DEFAULT_RESAMPLES)
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    args = parser.parse_args(argv)
    for pattern in (args.before, args.after, args.earlier or "{slice}"):
        if "{slice}" not in pattern:
            parser.error(f"{pattern}: a folder pattern needs {{slice}}")
    results = build(
        args.before,
        args.after,
        args.first_answer,
        earlier=args.earlier or None,
        resamples=args.resamples,
        seed=args.seed,
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    text = markdown(results)
    args.out.with_suffix(".md").write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
