"""Comparing evaluation runs (``hoptree eval compare``): the means side by side, the warnings
that make a comparison unfair, and, when the runs answered the same file, the paired sections
(``evals.paired``: gains, headroom, per type, cost against the first run) and the gains chart.
Settings directories (``<setting>/<slice>/<pipeline>``) pool their runs of one path into one
paired analysis. One run's report and the reading of run directories are ``evals.report``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evals.aggregate import aggregate
from evals.drafts import first_answer_times
from evals.paired import (
    PairedComparison,
    RunRows,
    analyse,
    mean_defined,
    paired_markdown,
)
from evals.report import (
    COST_LABELS,
    METRICS_FILE,
    SCORE_LABELS,
    ReportError,
    details_or_none,
    format_value,
    load_metrics,
    plot_scores,
    read_details,
)


def on_common_questions(
    runs: Sequence[tuple[Path, dict[str, Any]]],
) -> list[tuple[Path, dict[str, Any]]]:
    """Every run re-scored on the questions all of them finished, so a 30-question planner run
    and a 100-question baseline are compared on the same 30 rather than side by side on
    different sets. The runs must share a dataset file."""
    hashes = {str(m.get("dataset_sha256")) for _, m in runs}
    if len(hashes) > 1:
        raise ReportError("--common needs runs over one dataset file; these differ")
    details = [read_details(path) for path, _ in runs]
    common = set.intersection(*[{r["id"] for r in rows} for rows in details]) if details else set()
    if not common:
        raise ReportError("the runs have no finished question in common")
    rescored = []
    for (path, metrics), rows in zip(runs, details, strict=True):
        kept = [r for r in rows if r["id"] in common]
        rescored.append((path, {**metrics, **aggregate(kept), "common_questions": True}))
    return rescored


def one_dataset_file(runs: Sequence[tuple[Path, dict[str, Any]]]) -> bool:
    """The runs answered the same file (same sha256), so their questions can be paired by id."""
    hashes = {m.get("dataset_sha256") for _, m in runs}
    return len(hashes) == 1 and bool(next(iter(hashes)))


def paired_comparison(
    runs: Sequence[tuple[Path, dict[str, Any]]],
    details: Sequence[list[dict[str, Any]] | None],
    *,
    resamples: int,
    seed: int,
) -> tuple[PairedComparison | None, str | None]:
    """The paired analysis of ``runs`` (rows in ``details``, None where unreadable) or why there
    is none worth saying. Runs over different files, or a single run, have nothing to pair:
    that gives neither an analysis nor a reason, and the comparison reads as it always did."""
    if len(runs) < 2 or not one_dataset_file(runs):
        return None, None
    labels = run_labels(runs)
    missing = [label for label, rows in zip(labels, details, strict=True) if rows is None]
    if missing:
        return None, f"no paired statistics: no readable details.jsonl for {', '.join(missing)}"
    compared = [
        RunRows(label, str(metrics.get("pipeline")), {r["id"]: r for r in rows or []})
        for label, (_, metrics), rows in zip(labels, runs, details, strict=True)
    ]
    try:
        return analyse(compared, resamples=resamples, seed=seed), None
    except ValueError as exc:
        return None, f"no paired statistics: {exc}"


def run_labels(runs: Sequence[tuple[Path, dict[str, Any]]]) -> list[str]:
    """The pipeline name, or ``pipeline (dir)`` where two runs share a pipeline. Where that
    still repeats (``with-hyde/hotpotqa/draft-first`` beside ``without-hyde/hotpotqa/draft-first``:
    one pipeline, one directory name), the parenthesis holds what tells the paths apart instead
    (``draft-first (with-hyde)``, ``draft-first (without-hyde)``): labels that were distinct
    already are kept, since committed reports name runs by them."""
    pipelines = [str(m.get("pipeline")) for _, m in runs]
    labels = [
        p if pipelines.count(p) == 1 else f"{p} ({d.name})"
        for p, (d, _) in zip(pipelines, runs, strict=True)
    ]
    for label in dict.fromkeys(labels):
        at = [i for i, other in enumerate(labels) if other == label]
        if len(at) < 2:
            continue
        parts = path_differences([runs[i][0] for i in at])
        for i, part in zip(at, parts, strict=True):
            labels[i] = f"{pipelines[i]} ({part})"
    return labels


def _parts(path: Path) -> tuple[str, ...]:
    """A path's parts as given, without ``.`` or a trailing slash (never made absolute: a label
    in a committed report must not name the machine that made it)."""
    return Path(os.path.normpath(path)).parts


def path_differences(paths: Sequence[Path]) -> list[str]:
    """What tells ``paths`` apart: each one without the leading and trailing parts all of them
    share (``a/with-hyde/x/run``, ``a/without-hyde/x/run``: ``with-hyde``, ``without-hyde``).
    Where that leaves one empty (``a/run`` beside ``a/b/run``), the shortest trailing parts that
    differ (``run``, ``b/run``); the same directory given twice gets ``#2``, ``#3``."""
    split = [_parts(p) for p in paths]
    shortest = min(len(parts) for parts in split)
    lead = 0
    while lead < shortest and len({parts[lead] for parts in split}) == 1:
        lead += 1
    tail = 0
    while tail < shortest - lead and len({parts[len(parts) - 1 - tail] for parts in split}) == 1:
        tail += 1
    middles = ["/".join(parts[lead : len(parts) - tail]) for parts in split]
    if all(middles) and len(set(middles)) == len(middles):
        return middles
    longest = max(len(parts) for parts in split)
    for depth in range(1, longest + 1):
        ends = ["/".join(parts[-depth:]) for parts in split]
        if len(set(ends)) == len(ends):
            return ends
    seen: dict[str, int] = {}
    numbered = []
    for parts in split:
        name = "/".join(parts)
        seen[name] = seen.get(name, 0) + 1
        numbered.append(name if seen[name] == 1 else f"{name} #{seen[name]}")
    return numbered


COMPARE_COLUMNS = [
    ("dataset", "dataset"),
    ("setting", "setting"),
    ("n", "n"),
    *SCORE_LABELS.items(),
    ("gold_recall", "Gold recall"),
    *COST_LABELS.items(),
    ("llm_cache_hits_per_question", "cache hits/q"),
    ("prompt_tokens_without_cache_per_question", "prompt tokens/q, cache counted"),
]
# columns that only rows written since the LLM cache's share was recorded carry
CACHE_COLUMNS = {"llm_cache_hits_per_question", "prompt_tokens_without_cache_per_question"}
DRAFT_KEYS = {"escalation_rate", "first_answer_s_median", "first_answer_s_p90"}
# shown after gold recall once some run's rows record it (planner rows since hop recall exists)
HOP_RECALL_COLUMN = ("hop_recall", "Hop recall")


# shown once some compared run answered draft first (issue 53): how often its router ran the
# plan, and when the first answer came (a run without drafts: its seconds, its only answer)
DRAFT_COLUMNS = [
    ("escalation_rate", "escalated %"),
    ("first_answer_s_median", "first answer s"),
    ("first_answer_s_p90", "first answer s p90"),
]


def compare_columns(runs: Sequence[tuple[Path, dict[str, Any]]]) -> list[tuple[str, str]]:
    """The comparison's columns: hop recall joins them only when some run recorded it, and the
    draft columns only when some run drafted, so a comparison of runs from before either existed
    reads exactly as it did."""
    columns = list(COMPARE_COLUMNS)
    if any(m.get("hop_recall_n") for _, m in runs):
        at = columns.index(("gold_recall", "Gold recall")) + 1
        columns.insert(at, HOP_RECALL_COLUMN)
    if any(m.get("draft_recorded_n") for _, m in runs):
        columns += DRAFT_COLUMNS
    return columns


def with_first_answer(metrics: dict[str, Any], rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """``metrics`` with the median and 90th percentile of the time to the first answer over
    ``rows`` (``evals.drafts.first_answer_seconds``: a run without drafts answers once, so its
    seconds). Read from the rows, so a run without drafts, or rows re-scored on the common
    questions, get them all the same; without rows ``metrics`` is left as it is."""
    if not rows:
        return metrics
    median, p90 = first_answer_times(rows)
    return {
        **metrics,
        "first_answer_s_median": None if median is None else round(median, 2),
        "first_answer_s_p90": None if p90 is None else round(p90, 2),
    }


def _draft_cell(metrics: dict[str, Any], key: str) -> str:
    """A draft column's cell: "-" for the escalation rate of a run that drafted nothing, and
    the time to the first answer in seconds (a run without drafts: its own seconds; its median
    from ``metrics.json`` when its rows are unreadable)."""
    if key == "escalation_rate":
        if not metrics.get("draft_recorded_n"):
            return "-"
        return format_value(metrics.get(key), 1)
    value = metrics.get(key)
    if value is None and key == "first_answer_s_median":
        value = metrics.get("seconds_median")
    return "-" if value is None else format_value(float(value), 1)


def with_hop_recall(metrics: dict[str, Any], rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """``metrics`` with the mean hop recall of ``rows`` (percent) over the rows that define it,
    and how many those are. Read from the rows, so a run whose ``metrics.json`` predates the
    field, or rows re-scored on the common questions, get it all the same."""
    if not any("hop_recall" in r for r in rows):
        return metrics
    mean, defined = mean_defined(rows, "hop_recall")
    return {**metrics, "hop_recall": mean, "hop_recall_n": defined}


def _cache_cell(metrics: dict[str, Any], key: str) -> str:
    """A cache column's cell: n/a where no row recorded it, and over how many questions where
    only some did (a run resumed across the change), rather than a mean that looks whole."""
    recorded = metrics.get("llm_cache_recorded_n") or 0
    if not recorded:
        return "n/a"
    cell = format_value(metrics.get(key), 2 if key == "llm_cache_hits_per_question" else 0)
    return cell if recorded == metrics.get("n") else f"{cell} ({recorded} of {metrics.get('n')})"


def _hop_recall_cell(metrics: dict[str, Any]) -> str:
    """Hop recall is undefined where a question has no recorded hops, so the cell says over how
    many questions its mean is when that is not all of them."""
    defined = metrics.get("hop_recall_n") or 0
    if not defined:
        return "n/a"
    cell = format_value(metrics.get("hop_recall"))
    return cell if defined == metrics.get("n") else f"{cell} ({defined} of {metrics.get('n')})"


def comparison_rows(runs: Sequence[tuple[Path, dict[str, Any]]]) -> list[list[str]]:
    rows = []
    for label, (_, metrics) in zip(run_labels(runs), runs, strict=True):
        cells = [label]
        for key, _ in compare_columns(runs):
            value = metrics.get(key)
            if key in CACHE_COLUMNS:
                cells.append(_cache_cell(metrics, key))
                continue
            if key == "hop_recall":
                cells.append(_hop_recall_cell(metrics))
                continue
            if key in DRAFT_KEYS:
                cells.append(_draft_cell(metrics, key))
                continue
            if key == "dataset":
                value = Path(str(value)).name
            cells.append(format_value(value))
        rows.append(cells)
    return rows


def comparison_warnings(runs: Sequence[tuple[Path, dict[str, Any]]]) -> list[str]:
    """Differences that make a comparison unfair, said out loud rather than hidden."""
    labels = run_labels(runs)
    warnings = [
        _rescored_note(label, m)
        for label, (_, m) in zip(labels, runs, strict=True)
        if "rescored_from" in m
    ]
    for key, what in (("dataset_sha256", "datasets"), ("setting", "settings"), ("n", "sizes")):
        values = {str(m.get(key)) for _, m in runs}
        if len(values) > 1:
            warnings.append(f"the runs differ in {what}: {', '.join(sorted(values))}")
    versions = {
        label: sorted(m.get("code_versions") or {})
        for label, (_, m) in zip(labels, runs, strict=True)
    }
    mixed = [f"{label} ({', '.join(v)})" for label, v in versions.items() if len(v) > 1]
    if mixed:
        warnings.append(f"rows of one run come from several commits: {'; '.join(mixed)}")
    distinct = {v[0] for v in versions.values() if len(v) == 1}
    if len(distinct) > 1:
        made = "; ".join(f"{label}: {v[0]}" for label, v in versions.items() if len(v) == 1)
        warnings.append(f"the runs were made with different code ({made})")
    cached = [label for label, (_, m) in zip(labels, runs, strict=True)
              if (m.get("llm_cache_hits_per_question") or 0) > 0]  # fmt: skip
    if cached:
        warnings.append(
            f"{', '.join(cached)} took calls from the LLM cache: their prompt tokens and seconds "
            "are what they spent, less than running alone would cost (see the cache columns)"
        )
    return warnings


def comparison_markdown(
    runs: Sequence[tuple[Path, dict[str, Any]]], paired: PairedComparison | None = None
) -> str:
    """The means table and its warnings; below them the paired sections when the runs share a
    dataset file (``paired``, from ``evals.paired.analyse``)."""
    header = ["run", *[label for _, label in compare_columns(runs)]]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in comparison_rows(runs)]
    notes = comparison_warnings(runs)
    if notes:
        lines += ["", *[f"Note: {n}." for n in notes]]
    text = "\n".join(lines) + "\n"
    if paired is not None:
        text += "\n" + paired_markdown(paired)
    return text


def gains_plot_path(plot: Path) -> Path:
    """Where the gains chart goes beside the bar chart: ``<stem>-gains.png``."""
    return plot.with_name(f"{plot.stem}-gains.png")


def interval_color(low: float, high: float) -> str:
    """Green or red where a paired interval excludes zero (above, below), blue where it spans
    it: the colour of every interval the project draws."""
    return "tab:green" if low > 0 else "tab:red" if high < 0 else "tab:blue"


def draw_interval(
    axes: Any,
    y: float,
    low: float,
    mean: float,
    high: float,
    *,
    color: str,
    hollow: bool = False,
    capsize: float = 4,
) -> None:
    """One paired difference at height ``y``: its mean as a point (``hollow``: white inside),
    its interval as a horizontal error bar."""
    error = [[mean - low], [high - mean]]
    face = "white" if hollow else color
    axes.errorbar(
        [mean], [y], xerr=error, fmt="o", color=color, markerfacecolor=face, capsize=capsize
    )


def plot_gains(comparison: PairedComparison, path: Path, title: str) -> Path | None:
    """Each agent run's paired F1 gain over the reference with its bootstrap interval as an
    error bar, a line at zero (the reference) and, when there is one, at the oracle's gain (the
    ceiling): how much of the distance each run covers, and how sure that is. None when no
    agent run is compared against a reference."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    shown = [(label, d["f1"]) for label, d in comparison.gains.items()
             if comparison.role(label) == "agent"]  # fmt: skip
    if not shown:
        return None
    figure = Figure(figsize=(7.0, 1.4 + 0.45 * len(shown)))
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    places = list(range(len(shown)))[::-1]  # the first run on top
    for place, (_, diff) in zip(places, shown, strict=True):
        color = interval_color(diff.low, diff.high)
        draw_interval(axes, place, diff.low, diff.mean, diff.high, color=color)
        axes.annotate(
            f"{diff.mean:+.1f} ({diff.wins}/{diff.losses}/{diff.ties})",
            (diff.mean, place),
            textcoords="offset points",
            xytext=(0, 7),
            ha="center",
            fontsize=7,
        )
    axes.axvline(0.0, color="grey", linewidth=1)
    oracle = comparison.oracle
    if oracle is not None and oracle in comparison.gains:
        ceiling = comparison.gains[oracle]["f1"].mean
        axes.axvline(ceiling, color="black", linestyle="--", linewidth=1)
        axes.annotate(
            f"{oracle} {ceiling:+.1f}",
            (ceiling, 1.0),
            xycoords=("data", "axes fraction"),
            textcoords="offset points",
            xytext=(-3, -10),
            ha="right",
            fontsize=7,
        )
    axes.set_yticks(places, [label for label, _ in shown])
    axes.set_ylim(-0.7, len(shown) - 0.3)
    axes.set_xlabel(f"F1 gain over {comparison.reference} (points, 95% bootstrap CI; W/L/T on F1)")
    axes.set_title(title, fontsize=10)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    return path


def over_every_row(
    metrics: dict[str, Any], rows: Sequence[dict[str, Any]] | None
) -> dict[str, Any]:
    """``metrics`` re-scored over every row of ``details.jsonl`` when it covers fewer: a run
    made one question at a time (``--offset i --limit 1`` into one directory, so that two
    settings can be interleaved question by question) keeps in ``metrics.json`` only its last
    invocation's selection, which is what the runner means ``metrics.json`` to be (``--limit 5``
    in a directory of 50 rows reports 5), but not what a comparison of the directory means.
    ``rescored_from`` keeps the ``n`` ``metrics.json`` had, for the note that says so."""
    if not rows or len(rows) <= int(metrics.get("n") or 0):
        return metrics
    return {**metrics, **aggregate(rows), "rescored_from": metrics.get("n")}


def _rescored_note(label: str, metrics: dict[str, Any]) -> str:
    selection = " ".join(
        f"--{key} {metrics[key]}" for key in ("offset", "limit") if metrics.get(key) is not None
    )
    said = f" (its last run's selection, {selection})" if selection else ""
    return (
        f"{label}: metrics.json covers {metrics['rescored_from']} of the {metrics['n']} rows of "
        f"details.jsonl{said}; its row above is re-scored over all {metrics['n']}"
    )


@dataclass(frozen=True)
class Comparison:
    """What ``hoptree eval compare`` shows: each run's metrics (hop recall and the time to the
    first answer added from its rows), and the paired analysis when the runs answered one file,
    or why there is none. ``pooled``: when settings directories were compared, the paths below
    them whose runs the paired analysis pools (``load_pooled``)."""

    runs: list[tuple[Path, dict[str, Any]]]
    paired: PairedComparison | None
    why_not: str | None
    pooled: tuple[str, ...] = ()
    left_out: tuple[str, ...] = ()

    def pooled_note(self) -> str | None:
        if not self.pooled or self.paired is None:
            return None
        settings = ", ".join(f"`{r.label}`" for r in self.paired.runs)
        return (
            f"The paired statistics pool {settings} over the runs below each of them: "
            f"{', '.join(f'`{p}`' for p in self.pooled)}; a question is paired with itself in "
            "the run of the same path (the same dataset file), and the bootstrap resamples the "
            f"{len(self.paired.ids)} questions together."
        )

    def markdown(self) -> str:
        text = comparison_markdown(self.runs, None)
        if self.paired is None:
            return text
        note = self.pooled_note()
        return text + "\n" + (f"{note}\n\n" if note else "") + paired_markdown(self.paired)

    def warnings(self) -> list[str]:
        """What makes the comparison unfair, then why it has no paired statistics."""
        left = (
            [f"left out, not below every settings directory: {', '.join(self.left_out)}"]
            if self.left_out
            else []
        )
        return [
            *comparison_warnings(self.runs),
            *left,
            *([self.why_not] if self.why_not else []),
        ]


def _load_runs(
    runs: Sequence[Path], *, common: bool
) -> tuple[list[tuple[Path, dict[str, Any]]], list[list[dict[str, Any]] | None]]:
    loaded = [(Path(run), load_metrics(Path(run))) for run in runs]
    details = [details_or_none(path) for path, _ in loaded]
    if not common:
        loaded = [
            (path, over_every_row(metrics, rows))
            for (path, metrics), rows in zip(loaded, details, strict=True)
        ]
    else:  # every run re-scored on these questions: hop recall follows them
        loaded = on_common_questions(loaded)
        shared = set.intersection(*[{r["id"] for r in rows or []} for rows in details])
        details = [[r for r in rows if r["id"] in shared] if rows else rows for rows in details]
    loaded = [
        (path, with_first_answer(with_hop_recall(metrics, rows or []), rows or []))
        for (path, metrics), rows in zip(loaded, details, strict=True)
    ]
    return loaded, details


def settings_runs(setting: Path) -> dict[str, Path]:
    """The run directories below a settings directory, by their path below it
    (``hotpotqa/draft-first``)."""
    return {
        found.parent.relative_to(setting).as_posix(): found.parent
        for found in sorted(Path(setting).rglob(METRICS_FILE))
    }


def is_settings_directory(path: Path) -> bool:
    """A directory that is no run itself but holds runs below it: one setting of a timing run
    slice by slice (``one-at-a-time/without-hyde``, holding ``hotpotqa/draft-first``, ...)."""
    path = Path(path)
    return path.is_dir() and not (path / METRICS_FILE).is_file() and bool(settings_runs(path))


def load_comparison(runs: Sequence[Path], *, common: bool, resamples: int, seed: int) -> Comparison:
    """Read the runs' metrics and rows; with ``common`` re-score every run, hop recall included,
    on the questions all of them finished, else a run whose ``metrics.json`` covers fewer rows
    than it holds over all of them (``over_every_row``). Settings directories instead of runs
    are pooled (``load_pooled``). Raises ``ReportError`` for a run it cannot read."""
    settings = [is_settings_directory(Path(run)) for run in runs]
    if runs and all(settings):
        if common:
            raise ReportError("--common compares runs; settings directories pool them")
        return load_pooled([Path(run) for run in runs], resamples=resamples, seed=seed)
    if any(settings):
        raise ReportError("compare run directories, or settings directories, not both")
    loaded, details = _load_runs(runs, common=common)
    paired, why_not = paired_comparison(loaded, details, resamples=resamples, seed=seed)
    return Comparison(loaded, paired, why_not)


def load_pooled(settings: Sequence[Path], *, resamples: int, seed: int) -> Comparison:
    """Settings directories compared over every run below them: the means table shows each run
    (the runs below each setting, path by path), and the paired analysis pools the settings'
    runs of the same path into one run per setting, each question keyed by its id and path, so
    "is B faster than A" is answered over every slice at once, with one bootstrap interval.
    Runs of a path found below only some settings are left out (and named)."""
    if len(settings) < 2:
        raise ReportError("pooling needs two settings directories")
    found = [settings_runs(s) for s in settings]
    paths = sorted(set.intersection(*[set(f) for f in found]))
    if not paths:
        raise ReportError("the settings directories hold no run below the same path")
    left_out = tuple(sorted(set().union(*found) - set(paths)))
    flat = [found[i][p] for p in paths for i in range(len(settings))]
    loaded, details = _load_runs(flat, common=False)
    by_run = dict(zip(flat, zip(loaded, details, strict=True), strict=True))
    labels = path_differences(settings)
    pooled: list[RunRows] = []
    why_not = None
    for label, runs in zip(labels, found, strict=True):
        rows: dict[str, dict[str, Any]] = {}
        pipelines = set()
        for p in paths:
            (_, metrics), run_rows = by_run[runs[p]]
            pipelines.add(str(metrics.get("pipeline")))
            if run_rows is None:
                why_not = f"no paired statistics: no readable details.jsonl in {runs[p]}"
            rows |= {f"{r['id']} ({p})": r for r in run_rows or []}
        pooled.append(RunRows(label, pipelines.pop() if len(pipelines) == 1 else "pooled", rows))
    for p in paths:
        if not one_dataset_file([by_run[f[p]][0] for f in found]):
            why_not = f"no paired statistics: the runs below {p} answered different files"
    paired = None
    if why_not is None:
        try:
            paired = analyse(pooled, resamples=resamples, seed=seed)
        except ValueError as exc:
            why_not = f"no paired statistics: {exc}"
    return Comparison(loaded, paired, why_not, pooled=tuple(paths), left_out=left_out)


def write_comparison_plots(comparison: Comparison, plot: Path) -> list[Path]:
    """The grouped bar chart at ``plot`` and, when the runs are paired, the gains chart beside
    it (``gains_plot_path``); returns the files written."""
    runs = comparison.runs
    labelled = list(zip(run_labels(runs), [m for _, m in runs], strict=True))
    datasets = sorted({Path(str(m.get("dataset"))).name for _, m in runs})
    title = f"{len(runs)} runs on {', '.join(datasets)}"
    plot_scores(labelled, plot, title)
    written = [plot]
    paired = comparison.paired
    if paired is not None:
        drawn = plot_gains(
            paired, gains_plot_path(plot), f"{title}, {len(paired.ids)} shared questions"
        )
        if drawn is not None:
            written.append(drawn)
    return written
