"""A run's report and chart, and reading a run directory (its means come from
``evals.aggregate``; comparing several runs is ``evals.compare``).

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


def _draft_lines(metrics: dict[str, Any]) -> list[str]:
    """Draft first's two numbers (``evals.drafts``): how often the plan ran after the draft, and
    how long the first answer took; nothing for a run without drafts."""
    drafted = metrics.get("draft_recorded_n")
    if not drafted:
        return []
    over = _over_recorded(metrics, drafted)
    return [
        "",
        f"Draft first: the router ran the planner after {metrics.get('escalated_n')} of "
        f"{drafted} drafts ({format_value(metrics.get('escalation_rate'), 1)}%){over}; "
        f"the first answer came after {format_value(metrics.get('first_answer_s_median'), 1)} s "
        f"(median), {format_value(metrics.get('first_answer_s_p90'), 1)} s (90th percentile).",
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
    if metrics.get("metrics_only"):
        return (
            f"| rescored | {metrics.get('finished')}, nothing run "
            f"(first question finished {metrics.get('first_row_at') or 'n/a'}) |"
        )
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
    lines += _draft_lines(metrics)
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


# --------------------------------------------------------------------------- reading runs


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


def details_or_none(run_dir: Path) -> list[dict[str, Any]] | None:
    """A run's rows, or None when it has no readable ``details.jsonl``: the means table needs
    only ``metrics.json``, so such a run keeps its row there and only the paired sections go."""
    try:
        return read_details(run_dir)
    except ReportError:
        return None
