"""QuALITY results of one run: its means (accuracy overall and on HARD questions, where the
reader's context came from), the totals of its trees, and its report and chart. Comparing runs
(``hoptree eval quality-report``) is ``evals.quality.compare``. Scores are percentages; charts
use matplotlib's object API on the Agg canvas, as ``evals.report`` does.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evals.aggregate import aggregate
from evals.report import ReportError, format_value, run_colors

TREES_FILE = "trees.json"


def pct(value: float | None) -> float | None:
    """A share in [0, 1] as a percentage, two decimals; None stays None."""
    return None if value is None else round(100.0 * value, 2)


def mean_of(values: Sequence[float]) -> float | None:
    """The mean, or None for no values."""
    return sum(values) / len(values) if values else None


def fmt(value: Any, digits: int = 1) -> str:
    """A table cell (``evals.report.format_value``), one decimal unless told otherwise."""
    return format_value(value, digits)


# --------------------------------------------------------------------------- one run's means


def quality_means(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Accuracy overall and on HARD questions, unanswered questions, and where the context
    came from: the share of its tokens (and of its passages) from summary layers, and the
    share of questions whose context held any summary."""
    hard = [r for r in rows if r.get("hard") is True]
    easy = [r for r in rows if r.get("hard") is False]
    with_context = [r for r in rows if r.get("context")]
    tokens = sum(int(r.get("context_tokens") or 0) for r in with_context)
    summary_tokens = sum(int(r.get("summary_tokens") or 0) for r in with_context)
    nodes = sum(len(r["context"]) for r in with_context)
    summary_nodes = sum(int(r.get("summary_nodes") or 0) for r in with_context)
    return {
        "accuracy": pct(mean_of([r["correct"] for r in rows])),
        "accuracy_hard": pct(mean_of([r["correct"] for r in hard])),
        "hard_n": len(hard),
        "accuracy_easy": pct(mean_of([r["correct"] for r in easy])),
        "easy_n": len(easy),
        "unanswered": sum(1 for r in rows if r.get("chosen") is None),
        "articles": len({r.get("article_id") for r in rows}),
        "summary_share": pct(summary_tokens / tokens) if tokens else None,
        "summary_node_share": pct(summary_nodes / nodes) if nodes else None,
        "questions_with_summary": (
            pct(mean_of([float(bool(r.get("summary_nodes"))) for r in with_context]))
            if with_context
            else None
        ),
        "context_tokens_per_question": (
            round(tokens / len(with_context), 1) if with_context else None
        ),
    }


def rescore(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    return {**aggregate(rows), **quality_means(rows)}


def tree_name(entry: dict[str, Any]) -> str:
    """``gmm``, ``leiden``, or a variant such as ``leiden [base_resolution=3]`` (entries written
    before variants existed name only their clustering)."""
    return str(entry.get("tree") or entry.get("clustering"))


def entry_key(entry: dict[str, Any]) -> str:
    """One tree stats entry per article and tree."""
    return f"{entry.get('article_id')}/{tree_name(entry)}"


def variant_label(options: Mapping[str, Any]) -> str:
    """Options (a tree's, a context budget) as a short, stable label (``""`` for none)."""
    return ", ".join(f"{key}={options[key]}" for key in sorted(options))


def tree_totals(entries: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per tree (clustering method or variant): articles, summary nodes (total and per
    article), LLM calls and tokens of the summaries, and build seconds over the builds that
    timed themselves whole."""
    totals: dict[str, dict[str, Any]] = {}
    for clustering in sorted({tree_name(e) for e in entries}):
        group = [e for e in entries if tree_name(e) == clustering]
        timed = [e for e in group if e.get("build_timing_complete") and e.get("build_seconds")]
        nodes = [int(e.get("summary_nodes") or 0) for e in group]
        totals[clustering] = {
            "articles": len(group),
            "leaves": sum(int(e.get("leaves") or 0) for e in group),
            "summary_nodes": sum(nodes),
            "summary_nodes_per_article": round(statistics.fmean(nodes), 2) if nodes else None,
            "mean_children": (
                round(statistics.fmean(float(e.get("mean_children") or 0) for e in group), 2)
                if group
                else None
            ),
            "compression": (  # summary tokens over the tokens they cover (RAPTOR: 0.28)
                round(statistics.fmean(float(e.get("compression") or 0) for e in group), 3)
                if group
                else None
            ),
            "llm_calls": sum(int(e.get("llm_calls") or 0) for e in group),
            "prompt_tokens": sum(int(e.get("prompt_tokens") or 0) for e in group),
            "completion_tokens": sum(int(e.get("completion_tokens") or 0) for e in group),
            "build_seconds": round(sum(float(e["build_seconds"]) for e in timed), 1),
            "build_seconds_per_article": (
                round(statistics.fmean(float(e["build_seconds"]) for e in timed), 1)
                if timed
                else None
            ),
            "timed_builds": len(timed),
        }
    return totals


def read_trees(run_dir: Path) -> list[dict[str, Any]]:
    path = Path(run_dir) / TREES_FILE
    if not path.is_file():
        return []
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ReportError(f"{path}: unreadable ({exc})") from exc
    return [e for e in data if isinstance(e, dict)] if isinstance(data, list) else []


# --------------------------------------------------------------------------- one run's report


def plot_bars(
    groups: Sequence[str],
    series: Sequence[tuple[str, Sequence[float | None]]],
    axes: Any,
    title: str,
    ylabel: str = "percent",
) -> None:
    """Grouped bars on ``axes``: one group per label of ``groups``, one bar per series."""
    width = 0.8 / max(1, len(series))
    for index, ((label, values), color) in enumerate(
        zip(series, run_colors(len(series)), strict=True)
    ):
        offsets = [i - 0.4 + width * (index + 0.5) for i in range(len(groups))]
        bars = axes.bar(offsets, [v or 0.0 for v in values], width, label=label, color=color)
        axes.bar_label(bars, labels=[fmt(v) for v in values], fontsize=7)
    axes.set_xticks(range(len(groups)), list(groups), fontsize=8)
    axes.set_ylabel(ylabel)
    axes.set_title(title, fontsize=10)
    if len(series) > 1:
        axes.legend(fontsize=8, frameon=False)


def save_figure(figure: Any, path: Path) -> Path:
    """Lay out ``figure`` and write it to ``path`` as a PNG."""
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    return path


def plot_run(metrics: dict[str, Any], path: Path) -> Path:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(6.0, 4.0))
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    keys = [
        ("accuracy", "Accuracy"),
        ("accuracy_hard", "HARD acc."),
        ("summary_share", "Summary share"),
    ]
    plot_bars(
        [label for _, label in keys],
        [(str(metrics.get("pipeline")), [metrics.get(k) for k, _ in keys])],
        axes,
        f"{metrics.get('pipeline')} on {Path(str(metrics.get('dataset', ''))).name} "
        f"(n={metrics.get('n')})",
    )
    axes.set_ylim(0, 108)
    return save_figure(figure, path)


def tree_rows(entries: Sequence[dict[str, Any]]) -> list[str]:
    lines = [
        "| article | tree | leaves | layers | summary nodes | children/parent | "
        "summary/children tokens | LLM calls | build s |",
        "|---|---|---:|---|---:|---:|---:|---:|---:|",
    ]
    for e in sorted(entries, key=lambda e: (str(e["article_id"]), tree_name(e))):
        seconds = fmt(e.get("build_seconds"), 0)
        if not e.get("build_timing_complete"):
            seconds += " (resumed or cached)"
        lines.append(
            f"| {e['article_id']} {str(e.get('title', ''))[:28]} | {tree_name(e)} | "
            f"{e.get('leaves')} | {e.get('layers')} | {e.get('summary_nodes')} | "
            f"{fmt(e.get('mean_children'), 2)} | {fmt(e.get('compression'), 3)} | "
            f"{e.get('llm_calls')} | {seconds} |"
        )
    return lines


def run_markdown(metrics: dict[str, Any], trees: Sequence[dict[str, Any]]) -> str:
    name = Path(str(metrics.get("dataset", ""))).name
    lines = [
        f"# QuALITY: `{metrics.get('pipeline')}` on `{name}`",
        "",
        "| run | |",
        "|---|---|",
        f"| dataset | `{name}` (sha256 `{str(metrics.get('dataset_sha256', ''))[:12]}`) |",
        f"| pipeline | `{metrics.get('pipeline')}` |",
        f"| model | {metrics.get('model') or 'n/a'} |",
        f"| questions | {metrics.get('n')} over {metrics.get('articles')} article(s), "
        f"{metrics.get('errors', 0)} failed |",
        f"| reader context | {metrics.get('context_tokens')} tokens, the same for every pipeline |",
        "",
        "| metric | value |",
        "|---|---|",
        f"| Accuracy | {fmt(metrics.get('accuracy'))} |",
        f"| HARD accuracy | {fmt(metrics.get('accuracy_hard'))} ({metrics.get('hard_n')} "
        "questions) |",
        f"| non-HARD accuracy | {fmt(metrics.get('accuracy_easy'))} ({metrics.get('easy_n')}) |",
        f"| unanswered (reply named no option) | {metrics.get('unanswered')} |",
        f"| context tokens from summary layers | {fmt(metrics.get('summary_share'))}% |",
        f"| context passages from summary layers | {fmt(metrics.get('summary_node_share'))}% |",
        f"| questions whose context held a summary | "
        f"{fmt(metrics.get('questions_with_summary'))}% |",
        "",
        "| cost per question | mean | median |",
        "|---|---|---|",
    ]
    for label, key in (
        ("LLM calls", "llm_calls"),
        ("prompt tokens", "prompt_tokens"),
        ("seconds", "seconds"),
    ):
        lines.append(
            f"| {label} | {fmt(metrics.get(f'{key}_per_question'), 2)} | "
            f"{fmt(metrics.get(f'{key}_median'), 2)} |"
        )
    if trees:
        lines += ["", "## Trees", "", *tree_rows(trees)]
        lines += [
            "",
            "LLM calls are what the summaries cost when they were written (a cached rebuild "
            "reports them too); build seconds are the run that finished the tree.",
        ]
    lines += [
        "",
        "![accuracy, HARD accuracy, summary share](metrics.png)",
        "",
        "Accuracy: the reader chose the gold option. HARD: QuALITY's flag (most annotators "
        "under time pressure got the question wrong). A reply that names no option counts as "
        "wrong and is listed as a failed question.",
        "",
    ]
    return "\n".join(lines)


def write_run_report(
    out: Path, metrics: dict[str, Any], trees: Sequence[dict[str, Any]], errors: Sequence[dict]
) -> Path:
    plot_run(metrics, out / "metrics.png")
    text = run_markdown(metrics, trees)
    if errors:
        text += "\n## Failed questions (first 10)\n\n"
        for row in errors[:10]:
            text += f"- `{row.get('id')}`: {' '.join(str(row.get('error', '')).split())[:300]}\n"
    path = out / "report.md"
    path.write_text(text, encoding="utf-8")
    return path
