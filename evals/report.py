"""Reports and charts of evaluation runs (their means come from ``evals.aggregate``).

A run directory holds ``details.jsonl`` (one row per question), ``metrics.json`` (the means),
``report.md`` and ``metrics.png``. Scores in ``metrics.json`` and the reports are percentages
(0-100, as papers print them); per question rows keep the raw 0/1 and F1 in [0, 1]. Charts are
drawn with matplotlib's object API on the Agg canvas: no pyplot global state, no display needed,
safe beside a running event loop.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evals.aggregate import aggregate
from evals.paired import (
    PairedComparison,
    RunRows,
    analyse,
    mean_defined,
    paired_markdown,
)

# metric key -> label, in the order tables and charts show them
SCORE_LABELS = {
    "em": "EM",
    "f1": "F1",
    "acc": "Acc",
    "retrieval_success": "Retrieval success",
}
COST_LABELS = {
    "llm_calls_per_question": "LLM calls/q",
    "prompt_tokens_per_question": "prompt tokens/q",
    "seconds_per_question": "s/q",
}
METRICS_FILE = "metrics.json"
DETAILS_FILE = "details.jsonl"
REPORT_FILE = "report.md"
PLOT_FILE = "metrics.png"


class ReportError(ValueError):
    """A run directory that cannot be read for a report or a comparison."""


def _over_recorded(metrics: dict[str, Any], recorded: int) -> str:
    """Where only some rows carry a field (a run resumed across its introduction), the means
    say over how many questions they are."""
    return "" if recorded == metrics.get("n") else f" (over the {recorded} questions recorded)"


def _planner_lines(metrics: dict[str, Any]) -> list[str]:
    recorded = metrics.get("planner_recorded_n")
    if not recorded:
        return []
    over = _over_recorded(metrics, recorded)
    stops = ", ".join(f"{why} {n}" for why, n in (metrics.get("planner_stopped") or {}).items())
    return [
        "",
        f"Planner: {format_value(metrics.get('planner_rounds_per_question'))} rounds and "
        f"{format_value(metrics.get('planner_queries_per_question'))} atomic queries a question, "
        f"{format_value(metrics.get('planner_followups_per_question'))} of them follow-ups{over}. "
        f"Stopped: {stops}.",
    ]


def _limit(value: Any) -> str:
    return "none, the whole file" if value is None else str(value)


def format_value(value: Any, digits: int = 2) -> str:
    """A table cell: "n/a" for a missing value, floats to ``digits`` places."""
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _cache_lines(metrics: dict[str, Any]) -> list[str]:
    """The LLM cache's share of a run. Calls served from the cache cost no tokens and almost no
    time, so a run that repeats another's calls looks cheaper than it is; these lines say by
    how much."""
    recorded = metrics.get("llm_cache_recorded_n") or 0
    if not recorded:
        return []
    over = _over_recorded(metrics, recorded)
    return [
        "",
        "LLM calls served from the cache: "
        f"{format_value(metrics.get('llm_cache_hits_per_question'))} "
        "a question; prompt tokens with those calls counted: "
        f"{format_value(metrics.get('prompt_tokens_without_cache_per_question'), 0)} "
        f"a question{over}. "
        "The tokens and seconds above are what this run spent.",
    ]


# --------------------------------------------------------------------------- one run


def run_colors(count: int) -> list[tuple[float, ...]]:
    """One distinct colour per run. Matplotlib's default cycle has ten, and the whole suite on
    one file is eleven runs, so the last bar took the first one's colour."""
    from matplotlib import colormaps

    if count <= 10:
        return [tuple(c) for c in colormaps["tab10"].colors[:count]]
    if count <= 20:
        return [tuple(c) for c in colormaps["tab20"].colors[:count]]
    turbo = colormaps["turbo"]
    return [tuple(turbo(i / (count - 1))) for i in range(count)]


def plot_scores(runs: Sequence[tuple[str, dict[str, Any]]], path: Path, title: str) -> Path:
    """Grouped bars: one group per score, one bar per run (a single run is one bar each)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    keys = list(SCORE_LABELS)
    width = 0.8 / max(1, len(runs))
    figure = Figure(figsize=(max(6.0, 1.2 * len(keys) * max(1, len(runs)) ** 0.5 + 3), 4.2))
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    for index, ((label, metrics), color) in enumerate(
        zip(runs, run_colors(len(runs)), strict=True)
    ):
        values = [metrics.get(key) or 0.0 for key in keys]
        offsets = [i - 0.4 + width * (index + 0.5) for i in range(len(keys))]
        bars = axes.bar(offsets, values, width, label=label, color=color)
        axes.bar_label(bars, labels=[format_value(metrics.get(k), 1) for k in keys], fontsize=7)
    axes.set_xticks(range(len(keys)), [SCORE_LABELS[k] for k in keys])
    axes.set_ylim(0, 108)
    axes.set_ylabel("percent")
    axes.set_title(title, fontsize=10)
    if len(runs) > 1:  # below the axes: bars at 100 leave no free corner inside
        axes.legend(
            fontsize=8,
            loc="upper center",
            bbox_to_anchor=(0.5, -0.08),
            ncol=min(len(runs), 4),
            frameon=False,
        )
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    return path


def _timing_row(metrics: dict[str, Any]) -> str:
    """A resumed run spans sessions; its last start alone would hide when the first rows ran."""
    if metrics.get("resumed"):
        return (
            f"| resumed / finished | {metrics.get('started')} / {metrics.get('finished')} "
            f"(first question finished {metrics.get('first_row_at') or 'n/a'}) |"
        )
    return f"| started / finished | {metrics.get('started')} / {metrics.get('finished')} |"


def _code_cell(metrics: dict[str, Any]) -> str:
    versions = metrics.get("code_versions") or {}
    if not versions:
        return "not recorded"
    recorded = sum(versions.values())
    text = ", ".join(f"`{v}` ({n})" for v, n in versions.items())
    missing = int(metrics.get("n") or 0) - recorded
    return text + (f", not recorded ({missing})" if missing > 0 else "")


def _over(metrics: dict[str, Any], key: str, what: str) -> str:
    """How many questions a retrieval score averages over; a pipeline that retrieves nothing
    has no such score, and "over 0 questions" would read like a failed run."""
    if metrics.get(key) is None and not metrics.get(f"{key}_n"):
        return " (the pipeline retrieves nothing)"
    return f" (over {metrics.get(f'{key}_n', 0)} {what})"


def report_markdown(metrics: dict[str, Any], plot_name: str | None = PLOT_FILE) -> str:
    name = Path(str(metrics.get("dataset", ""))).name
    lines = [
        f"# Evaluation: `{metrics.get('pipeline')}` on `{name}`",
        "",
        "| run | |",
        "|---|---|",
        f"| dataset | `{name}` ({metrics.get('format')}, sha256 "
        f"`{str(metrics.get('dataset_sha256', ''))[:12]}`) |",
        f"| setting | {metrics.get('setting')} |",
        f"| pipeline | `{metrics.get('pipeline')}` |",
        f"| model | {metrics.get('model') or 'n/a'} |",
        f"| code | {_code_cell(metrics)} |",
        f"| questions | {metrics.get('n')} (limit {_limit(metrics.get('limit'))}), "
        f"{metrics.get('errors', 0)} failed |",
        _timing_row(metrics),
        "",
        "| metric | value |",
        "|---|---|",
    ]
    for key, label in SCORE_LABELS.items():
        note = ""
        if key == "retrieval_success":
            note = _over(metrics, "retrieval_success", "questions with a span answer")
        lines.append(f"| {label} | {format_value(metrics.get(key))}{note} |")
    lines.append(
        f"| Gold-paragraph recall | {format_value(metrics.get('gold_recall'))}"
        f"{_over(metrics, 'gold_recall', 'questions')} |"
    )
    lines += ["", "| cost per question | mean | median |", "|---|---|---|"]
    for label, key in (
        ("LLM calls", "llm_calls"),
        ("prompt tokens", "prompt_tokens"),
        ("completion tokens", "completion_tokens"),
        ("seconds", "seconds"),
    ):
        mean, middle = metrics.get(f"{key}_per_question"), metrics.get(f"{key}_median")
        lines.append(f"| {label} | {format_value(mean)} | {format_value(middle)} |")
    lines += _cache_lines(metrics)
    lines += _planner_lines(metrics)
    by_type = metrics.get("by_type") or {}
    if by_type:
        lines += ["", "| question type | n | EM | F1 |", "|---|---|---|---|"]
        for kind, group in by_type.items():
            em, f1 = format_value(group["em"]), format_value(group["f1"])
            lines.append(f"| {kind} | {group['n']} | {em} | {f1} |")
    if plot_name:
        lines += ["", f"![EM, F1, accuracy and retrieval success]({plot_name})"]
    lines += [
        "",
        "Scores are percentages. EM and F1 follow the official HotpotQA script (normalized "
        "answers; F1 is zero when yes/no/noanswer meets anything else), best over gold "
        "aliases. Acc: a normalized gold answer occurs in the prediction (LevelRAG). Retrieval "
        "success: a gold answer occurs, on word boundaries, in the context the generator was "
        "shown; yes/no questions are left out of it. Tokens count what this run spent: "
        "answers served from the LLM cache cost none.",
        "",
    ]
    return "\n".join(lines)


def write_report(out: Path, metrics: dict[str, Any], errors: Sequence[dict[str, Any]] = ()) -> Path:
    """``report.md`` and ``metrics.png`` in ``out``; a few failed questions listed at the end."""
    plot_scores(
        [(str(metrics.get("pipeline")), metrics)],
        out / PLOT_FILE,
        f"{metrics.get('pipeline')} on {Path(str(metrics.get('dataset', ''))).name} "
        f"({metrics.get('setting')}, n={metrics.get('n')})",
    )
    text = report_markdown(metrics)
    if errors:
        text += "\n## Failed questions (first 10)\n\n"
        for row in errors[:10]:
            message = " ".join(str(row.get("error", "")).split())[:300]
            text += f"- `{row.get('id')}`: {message}\n"
    path = out / REPORT_FILE
    path.write_text(text, encoding="utf-8")
    return path


# --------------------------------------------------------------------------- several runs


def load_metrics(run_dir: Path) -> dict[str, Any]:
    path = Path(run_dir) / METRICS_FILE
    if not path.is_file():
        raise ReportError(f"{run_dir}: no {METRICS_FILE} (not a finished eval run directory)")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ReportError(f"{path}: unreadable ({exc})") from exc
    if not isinstance(data, dict) or "pipeline" not in data:
        raise ReportError(f"{path}: not an eval metrics file")
    return data


def parse_details(raw: bytes, path: Path) -> tuple[dict[str, dict[str, Any]], int]:
    """The rows of a ``details.jsonl`` by question id (the first row per id wins), and the length
    of a torn tail: bytes after the last newline, left by a run killed mid-write. The runner cuts
    that tail off before it appends; readers ignore it. Any other bad line is an error, so a
    damaged file is never scored as if it were shorter."""
    keep = raw.rfind(b"\n") + 1
    rows: dict[str, dict[str, Any]] = {}
    for lineno, line in enumerate(raw[:keep].decode("utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ReportError(f"{path}:{lineno}: malformed row ({exc.msg})") from exc
        if not isinstance(row, dict) or not isinstance(row.get("id"), str):
            raise ReportError(f"{path}:{lineno}: a row needs a string 'id'")
        rows.setdefault(row["id"], row)
    return rows, len(raw) - keep


def read_details(run_dir: Path) -> list[dict[str, Any]]:
    """The finished rows of a run, without touching the file (a run may still be appending)."""
    path = Path(run_dir) / DETAILS_FILE
    if not path.is_file():
        raise ReportError(f"{run_dir}: no {DETAILS_FILE}")
    rows, _torn = parse_details(path.read_bytes(), path)
    return list(rows.values())


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


def details_or_none(run_dir: Path) -> list[dict[str, Any]] | None:
    """A run's rows, or None when it has no readable ``details.jsonl``: the means table needs
    only ``metrics.json``, so such a run keeps its row there and only the paired sections go."""
    try:
        return read_details(run_dir)
    except ReportError:
        return None


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
    """The pipeline name, or ``pipeline (dir)`` where two runs share a pipeline."""
    pipelines = [str(m.get("pipeline")) for _, m in runs]
    return [
        p if pipelines.count(p) == 1 else f"{p} ({d.name})"
        for p, (d, _) in zip(pipelines, runs, strict=True)
    ]


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
# shown after gold recall once some run's rows record it (planner rows since hop recall exists)
HOP_RECALL_COLUMN = ("hop_recall", "Hop recall")


def compare_columns(runs: Sequence[tuple[Path, dict[str, Any]]]) -> list[tuple[str, str]]:
    """The comparison's columns: hop recall joins them only when some run recorded it, so a
    comparison of runs from before it existed reads exactly as it did."""
    columns = list(COMPARE_COLUMNS)
    if any(m.get("hop_recall_n") for _, m in runs):
        at = columns.index(("gold_recall", "Gold recall")) + 1
        columns.insert(at, HOP_RECALL_COLUMN)
    return columns


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
            if key == "dataset":
                value = Path(str(value)).name
            cells.append(format_value(value))
        rows.append(cells)
    return rows


def comparison_warnings(runs: Sequence[tuple[Path, dict[str, Any]]]) -> list[str]:
    """Differences that make a comparison unfair, said out loud rather than hidden."""
    warnings = []
    for key, what in (("dataset_sha256", "datasets"), ("setting", "settings"), ("n", "sizes")):
        values = {str(m.get(key)) for _, m in runs}
        if len(values) > 1:
            warnings.append(f"the runs differ in {what}: {', '.join(sorted(values))}")
    labels = run_labels(runs)
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
        # green or red where the interval excludes zero, blue where it does not
        color = "tab:green" if diff.low > 0 else "tab:red" if diff.high < 0 else "tab:blue"
        error = [[diff.mean - diff.low], [diff.high - diff.mean]]
        axes.errorbar([diff.mean], [place], xerr=error, fmt="o", color=color, capsize=4)
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
