"""QuALITY results: a run's means, its report, and the comparison of runs (``hoptree eval
quality-report``).

What the comparison must answer (issue 25): does the tree help on long documents here, and does
Leiden beat GMM at fewer summary nodes? So it shows accuracy and HARD accuracy per pipeline on
the questions every run finished, the share of the reader's context that came from summary
layers, the trees' cost per clustering method (summary nodes, LLM calls, build time), the gains
of each tree over the same leaves without it beside what the papers report, and one chart.
Scores are percentages; charts use matplotlib's object API on the Agg canvas, as
``evals.report`` does.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evals.aggregate import aggregate
from evals.pipelines import DEFAULT_CONTEXT_TOKENS
from evals.report import ReportError, format_value, load_metrics, read_details, run_colors

TREES_FILE = "trees.json"
# What the papers report, as issue 25 quotes them: the relative gains are the comparison, a
# 1.5B reader will not reach their absolute numbers.
PAPERS = [
    ("RAPTOR (Sarthi et al.): tree minus the same retriever without it, QuALITY", "+2 to +6.7"),
    ("Enhanced RAPTOR (Liu et al.): Leiden minus GMM on the same leaves, QuALITY", "+10.3"),
    ("Enhanced RAPTOR: summary nodes, Leiden vs GMM", "34 vs 141 (-76%)"),
]
PIPELINE_ORDER = ("leaves", "bm25", "tree-gmm", "tree-leiden", "full")


def _pct(value: float | None) -> float | None:
    return None if value is None else round(100.0 * value, 2)


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _fmt(value: Any, digits: int = 1) -> str:
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
        "accuracy": _pct(_mean([r["correct"] for r in rows])),
        "accuracy_hard": _pct(_mean([r["correct"] for r in hard])),
        "hard_n": len(hard),
        "accuracy_easy": _pct(_mean([r["correct"] for r in easy])),
        "easy_n": len(easy),
        "unanswered": sum(1 for r in rows if r.get("chosen") is None),
        "articles": len({r.get("article_id") for r in rows}),
        "summary_share": _pct(summary_tokens / tokens) if tokens else None,
        "summary_node_share": _pct(summary_nodes / nodes) if nodes else None,
        "questions_with_summary": (
            _pct(_mean([float(bool(r.get("summary_nodes"))) for r in with_context]))
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
        axes.bar_label(bars, labels=[_fmt(v) for v in values], fontsize=7)
    axes.set_xticks(range(len(groups)), list(groups), fontsize=8)
    axes.set_ylabel(ylabel)
    axes.set_title(title, fontsize=10)
    if len(series) > 1:
        axes.legend(fontsize=8, frameon=False)


def _save(figure: Any, path: Path) -> Path:
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
    return _save(figure, path)


def _tree_rows(entries: Sequence[dict[str, Any]]) -> list[str]:
    lines = [
        "| article | tree | leaves | layers | summary nodes | children/parent | "
        "summary/children tokens | LLM calls | build s |",
        "|---|---|---:|---|---:|---:|---:|---:|---:|",
    ]
    for e in sorted(entries, key=lambda e: (str(e["article_id"]), tree_name(e))):
        seconds = _fmt(e.get("build_seconds"), 0)
        if not e.get("build_timing_complete"):
            seconds += " (resumed or cached)"
        lines.append(
            f"| {e['article_id']} {str(e.get('title', ''))[:28]} | {tree_name(e)} | "
            f"{e.get('leaves')} | {e.get('layers')} | {e.get('summary_nodes')} | "
            f"{_fmt(e.get('mean_children'), 2)} | {_fmt(e.get('compression'), 3)} | "
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
        f"| Accuracy | {_fmt(metrics.get('accuracy'))} |",
        f"| HARD accuracy | {_fmt(metrics.get('accuracy_hard'))} ({metrics.get('hard_n')} "
        "questions) |",
        f"| non-HARD accuracy | {_fmt(metrics.get('accuracy_easy'))} ({metrics.get('easy_n')}) |",
        f"| unanswered (reply named no option) | {metrics.get('unanswered')} |",
        f"| context tokens from summary layers | {_fmt(metrics.get('summary_share'))}% |",
        f"| context passages from summary layers | {_fmt(metrics.get('summary_node_share'))}% |",
        f"| questions whose context held a summary | "
        f"{_fmt(metrics.get('questions_with_summary'))}% |",
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
            f"| {label} | {_fmt(metrics.get(f'{key}_per_question'), 2)} | "
            f"{_fmt(metrics.get(f'{key}_median'), 2)} |"
        )
    if trees:
        lines += ["", "## Trees", "", *_tree_rows(trees)]
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


# --------------------------------------------------------------------------- several runs


def _ordered(runs: Sequence[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    """The paper's order by pipeline, each variant or second run after its pipeline's run."""
    rank = {name: i for i, name in enumerate(PIPELINE_ORDER)}
    return sorted(runs, key=lambda run: (rank.get(str(run[1].get("pipeline")), 99), run[0]))


def variant_label(options: Mapping[str, Any]) -> str:
    """Options (a tree's, a context budget) as a short, stable label (``""`` for none)."""
    return ", ".join(f"{key}={options[key]}" for key in sorted(options))


def run_options(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """What sets a run apart from its pipeline's defaults: its tree options, and its context
    budget when that is not the default (a smaller budget isolates what summaries displace)."""
    options = dict(metrics.get("tree_options") or {})
    budget = metrics.get("context_tokens")
    if budget is not None and int(budget) != DEFAULT_CONTEXT_TOKENS:
        options["context_tokens"] = int(budget)
    return options


def run_label(metrics: dict[str, Any]) -> str:
    """A run's pipeline, with a variant's options (tree options, context budget) in brackets."""
    variant = variant_label(run_options(metrics))
    pipeline = str(metrics.get("pipeline"))
    return f"{pipeline} [{variant}]" if variant else pipeline


def load_quality_runs(
    run_dirs: Sequence[Path], *, common: bool = True
) -> tuple[list[tuple[str, dict[str, Any]]], list[dict[str, Any]], int]:
    """(label and metrics per run, tree stats of every run, questions compared). With
    ``common`` every run is re-scored on the questions all of them finished."""
    loaded = []
    for run_dir in run_dirs:
        metrics = load_metrics(Path(run_dir))
        if metrics.get("format") != "quality":
            raise ReportError(f"{run_dir}: not a QuALITY run (format {metrics.get('format')!r})")
        loaded.append((Path(run_dir), metrics, read_details(Path(run_dir))))
    if not loaded:
        raise ReportError("no run directories given")
    if len({str(m.get("dataset_sha256")) for _, m, _ in loaded}) > 1:
        raise ReportError("the runs are over different dataset files")
    ids = [{r["id"] for r in rows} for _, _, rows in loaded]
    keep = set.intersection(*ids) if common else set.union(*ids)
    if not keep:
        raise ReportError("the runs have no finished question in common")
    pipelines = [run_label(m) for _, m, _ in loaded]
    runs = []
    used: set[str] = set()
    for (path, metrics, rows), pipeline in zip(loaded, pipelines, strict=True):
        # two runs of one pipeline: the one in the directory named for it keeps the plain name
        plain = pipelines.count(pipeline) == 1 or path.name == pipeline
        label = pipeline if plain and pipeline not in used else f"{pipeline} ({path.name})"
        if label in used:
            raise ReportError(f"two runs would be labelled {label!r}: give them other directories")
        used.add(label)
        kept = [r for r in rows if r["id"] in keep]
        outcomes = {r["id"]: bool(r.get("correct")) for r in kept}
        per_question = {
            "outcomes": outcomes,
            "article_of": {r["id"]: str(r.get("article_id")) for r in kept},
            "hard_ids": sorted(r["id"] for r in kept if r.get("hard") is True),
            "summary_share_of": {r["id"]: float(r.get("summary_share") or 0.0) for r in kept},
        }
        runs.append((label, {**metrics, **rescore(kept), **per_question}))
    articles = {str(r.get("article_id")) for _, _, rows in loaded for r in rows if r["id"] in keep}
    trees: dict[str, dict[str, Any]] = {}
    for path, _, _ in loaded:  # the trees of the articles compared, not of every article run
        for entry in read_trees(path):
            if str(entry.get("article_id")) not in articles:
                continue
            trees[entry_key(entry)] = entry
    return _ordered(runs), list(trees.values()), len(keep)


def _gain(runs: dict[str, dict[str, Any]], a: str, b: str, key: str) -> str:
    if a not in runs or b not in runs:
        return "n/a"
    x, y = runs[a].get(key), runs[b].get(key)
    return "n/a" if x is None or y is None else f"{x - y:+.1f}"


def sign_test_p(wins: int, losses: int) -> float:
    """Two-sided exact sign test over the questions two pipelines disagree on: the chance of a
    split at least this uneven if each were equally likely to be the one that is right."""
    n = wins + losses
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(wins, losses) + 1)) / 2**n
    return min(1.0, 2 * tail)


def _disagreements(
    first: Mapping[str, Any], second: Mapping[str, Any]
) -> tuple[list[str], list[str], list[str]]:
    """(questions only ``first`` gets right, only ``second`` gets right, all they share), from
    two runs' metrics."""
    a, b = first.get("outcomes") or {}, second.get("outcomes") or {}
    shared = sorted(a.keys() & b.keys())
    return (
        [q for q in shared if a[q] and not b[q]],
        [q for q in shared if b[q] and not a[q]],
        shared,
    )


def _paired(runs: dict[str, dict[str, Any]], a: str, b: str) -> str:
    """Questions ``a`` gets right and ``b`` wrong, the reverse, and the sign test's p: with a
    few dozen questions a gain of several points can be one or two questions."""
    if a not in runs or b not in runs:
        return "n/a"
    only_a, only_b, _ = _disagreements(runs[a], runs[b])
    wins, losses = len(only_a), len(only_b)
    return f"{wins} / {losses} (p {sign_test_p(wins, losses):.2f})"


def article_accuracy(metrics: Mapping[str, Any]) -> dict[str, float]:
    """A run's accuracy (percent) on each article, from its per-question outcomes."""
    outcomes, article_of = metrics.get("outcomes") or {}, metrics.get("article_of") or {}
    per: dict[str, list[bool]] = {}
    for qid, right in outcomes.items():
        per.setdefault(str(article_of.get(qid)), []).append(bool(right))
    return {article: 100.0 * sum(marks) / len(marks) for article, marks in per.items()}


def _leaf_tokens(metrics: Mapping[str, Any]) -> str:
    """The mean tokens of leaves in a run's context: what a smaller leaves-only budget should
    match to show what the summaries add."""
    tokens, share = metrics.get("context_tokens_per_question"), metrics.get("summary_share")
    if tokens is None:
        return "n/a"
    return f"{tokens * (1 - (share or 0.0) / 100):,.0f} tokens"


def _articles_split(runs: dict[str, dict[str, Any]], a: str, b: str) -> str:
    """On how many articles ``a`` scores above, level with and below ``b``: a gain carried by
    one article reads differently from one every article shares."""
    if a not in runs or b not in runs:
        return "n/a"
    first, second = article_accuracy(runs[a]), article_accuracy(runs[b])
    shared = first.keys() & second.keys()
    above = sum(1 for x in shared if first[x] > second[x])
    below = sum(1 for x in shared if first[x] < second[x])
    return f"{above} / {len(shared) - above - below} / {below}"


def _flip_summaries(runs: dict[str, dict[str, Any]], tree: str, other: str) -> str | None:
    """A table row: how much of the tree's context came from summaries on the questions only
    the tree got right, on those only ``other`` got right, and on all. If summaries carry the
    tree's gain, its wins hold more of them than its losses do."""
    if tree not in runs or other not in runs:
        return None
    share = runs[tree].get("summary_share_of") or {}
    cells = []
    for ids in _disagreements(runs[tree], runs[other]):
        shares = [share.get(q, 0.0) for q in ids]
        with_any = sum(1 for x in shares if x > 0)
        mean = _pct(_mean(shares)) if shares else None
        cells.append(f"{_fmt(mean)}% ({with_any} of {len(ids)})" if ids else "n/a")
    return f"| {tree} vs {other} | " + " | ".join(cells) + " |"


def _article_rows(
    runs: Sequence[tuple[str, dict[str, Any]]], trees: Sequence[dict[str, Any]]
) -> list[str]:
    """Accuracy per article and pipeline, with each article's question counts."""
    titles = {str(e["article_id"]): str(e.get("title", "")) for e in trees}
    first = runs[0][1]
    article_of = first.get("article_of") or {}
    counts: dict[str, int] = {}
    hard: dict[str, int] = {}
    hard_ids = set(first.get("hard_ids") or ())
    for qid, article in article_of.items():
        counts[article] = counts.get(article, 0) + 1
        hard[article] = hard.get(article, 0) + (qid in hard_ids)
    scores = [article_accuracy(m) for _, m in runs]
    lines = [
        "| article | questions (HARD) | " + " | ".join(label for label, _ in runs) + " |",
        "|---|---:|" + "---:|" * len(runs),
    ]
    for article in sorted(counts):
        cells = " | ".join(_fmt(score.get(article), 0) for score in scores)
        name = f"{article} {titles.get(article, '')[:28]}".strip()
        lines.append(f"| {name} | {counts[article]} ({hard[article]}) | {cells} |")
    return lines


def comparison_markdown(
    runs: Sequence[tuple[str, dict[str, Any]]], trees: Sequence[dict[str, Any]], questions: int
) -> str:
    lines = [
        f"# QuALITY: {len(runs)} pipelines on the same {questions} questions",
        "",
        "| pipeline | n | accuracy | HARD accuracy (n) | context from summaries | "
        "LLM calls/q | s/q | failed |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for label, m in runs:
        lines.append(
            f"| {label} | {m.get('n')} | {_fmt(m.get('accuracy'))} | "
            f"{_fmt(m.get('accuracy_hard'))} ({m.get('hard_n')}) | "
            f"{_fmt(m.get('summary_share'))}% | {_fmt(m.get('llm_calls_per_question'), 2)} | "
            f"{_fmt(m.get('seconds_per_question'))} | {m.get('errors', 0)} |"
        )
    by_name = {label: m for label, m in runs}
    lines += [
        "",
        "## What the tree adds (points of accuracy)",
        "",
        "| comparison | here: accuracy | here: HARD | right only in the first / only in the "
        "second (sign test) | articles above / level / below | papers |",
        "|---|---:|---:|---:|---:|---|",
    ]
    pairs = [
        ("tree-gmm", "leaves", PAPERS[0][1]),
        ("tree-leiden", "leaves", PAPERS[0][1]),
        ("tree-gmm", "bm25", PAPERS[0][1]),
        ("tree-leiden", "bm25", PAPERS[0][1]),
        ("tree-leiden", "tree-gmm", PAPERS[1][1]),
    ]
    if "full" in by_name:
        pairs += [("full", "leaves", "(not in the papers)"), ("full", "tree-leiden", "(ditto)")]
    for label, m in runs:  # a variant or a second run against its pipeline's plain run
        base = str(m.get("pipeline"))
        if label == base:
            continue
        options = run_options(m)
        if options:
            pairs.append((label, base, "(a variant)"))
            if base != "leaves":
                pairs.append((label, "leaves", "(a variant)"))
            elif "context_tokens" in options:  # the leaves a tree keeps, on their own
                pairs += [
                    (tree, label, f"(leaves alone; {tree}'s fill {_leaf_tokens(by_name[tree])})")
                    for tree in ("tree-gmm", "tree-leiden")
                    if tree in by_name
                ]
        else:
            pairs.append((label, base, "(another run of the pipeline)"))
    for a, b, paper in pairs:
        lines.append(
            f"| {a} minus {b} | {_gain(by_name, a, b, 'accuracy')} | "
            f"{_gain(by_name, a, b, 'accuracy_hard')} | {_paired(by_name, a, b)} | "
            f"{_articles_split(by_name, a, b)} | {paper} |"
        )
    flips = []
    for label, m in runs:  # every tree run, variants included, against the leaves
        if m.get("pipeline") in ("tree-gmm", "tree-leiden"):
            row = _flip_summaries(by_name, label, "leaves")
            if row:
                flips.append(row)
    if flips:
        lines += [
            "",
            "## Summaries in the questions that flip",
            "",
            "Share of the tree's context tokens from summaries (questions with any summary):",
            "",
            "| tree vs retriever | right only with the tree | right only without it | "
            "all questions |",
            "|---|---:|---:|---:|",
            *flips,
        ]
    lines += [
        "",
        "## Accuracy per article",
        "",
        *_article_rows(runs, trees),
    ]
    totals = tree_totals(trees)
    if totals:
        lines += [
            "",
            "## Trees per clustering method (and variant)",
            "",
            "| tree | articles | leaves | summary nodes | per article | children/parent | "
            "summary/children tokens | LLM calls | prompt + completion tokens | "
            "build s (timed builds) |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for clustering, t in totals.items():
            lines.append(
                f"| {clustering} | {t['articles']} | {t['leaves']} | {t['summary_nodes']} | "
                f"{_fmt(t['summary_nodes_per_article'])} | {_fmt(t['mean_children'], 2)} | "
                f"{_fmt(t['compression'], 3)} | {t['llm_calls']} | "
                f"{t['prompt_tokens']} + {t['completion_tokens']} | "
                f"{_fmt(t['build_seconds'], 0)} ({t['timed_builds']}) |"
            )
        if "gmm" in totals and "leiden" in totals and totals["gmm"]["summary_nodes"]:
            both = {str(e["article_id"]) for e in trees if tree_name(e) == "gmm"} & {
                str(e["article_id"]) for e in trees if tree_name(e) == "leiden"
            }
            paired = [
                e
                for e in trees
                if str(e["article_id"]) in both and tree_name(e) in ("gmm", "leiden")
            ]
            pair_totals = tree_totals(paired)
            gmm, leiden = (
                pair_totals["gmm"]["summary_nodes"],
                pair_totals["leiden"]["summary_nodes"],
            )
            reduction = 100.0 * (1 - leiden / gmm) if gmm else None
            lines += [
                "",
                f"On the {len(both)} article(s) with both trees Leiden has {leiden} summary "
                f"nodes against GMM's {gmm} ({_fmt(reduction)}% fewer; "
                f"{PAPERS[2][0].split(': ')[0]} reports {PAPERS[2][1]}).",
            ]
        lines += ["", *_tree_rows(trees)]
    lines += [
        "",
        "Papers, as issue 25 quotes them: "
        + "; ".join(f"{what}: {value}" for what, value in PAPERS)
        + ". A 1.5B reader will not reach their absolute accuracy; compare the gains.",
        "",
        "Every pipeline reads its passages with the same `choice_answer` prompt within the same "
        "token budget; 'context from summaries' is the share of those tokens from tree layers "
        "above the leaves (RAPTOR reports 18.5-57% of retrieved nodes). Build seconds count only "
        "builds that wrote every summary themselves (no resume, no cache).",
        "",
    ]
    return "\n".join(lines)


def plot_comparison(
    runs: Sequence[tuple[str, dict[str, Any]]], trees: Sequence[dict[str, Any]], path: Path
) -> Path:
    """Left: accuracy and HARD accuracy per pipeline. Right: summary nodes per article for each
    clustering method (when trees were recorded)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    totals = tree_totals(trees)
    panels = 2 if totals else 1
    figure = Figure(figsize=(5.5 + 4.5 * (panels - 1) + 0.5 * len(runs), 4.2))
    FigureCanvasAgg(figure)
    left = figure.add_subplot(1, panels, 1)
    # a variant's options or a second run's directory on its own line, under the pipeline
    labels = [label.replace(" [", "\n[").replace(" (", "\n(") for label, _ in runs]
    plot_bars(
        labels,
        [
            ("accuracy", [m.get("accuracy") for _, m in runs]),
            ("HARD accuracy", [m.get("accuracy_hard") for _, m in runs]),
            ("context from summaries", [m.get("summary_share") for _, m in runs]),
        ],
        left,
        f"QuALITY, {runs[0][1].get('n')} questions per pipeline",
    )
    left.set_ylim(0, 108)
    if totals:
        right = figure.add_subplot(1, panels, 2)
        articles = sorted({str(e["article_id"]) for e in trees})
        nodes = {(str(e["article_id"]), tree_name(e)): e.get("summary_nodes") for e in trees}
        plot_bars(
            articles,
            [(c, [nodes.get((a, c)) for a in articles]) for c in totals],
            right,
            "summary nodes per article",
            ylabel="nodes",
        )
    return _save(figure, path)


def write_comparison(
    run_dirs: Sequence[Path],
    *,
    markdown: Path | None = None,
    plot: Path | None = None,
    common: bool = True,
) -> str:
    runs, trees, questions = load_quality_runs(run_dirs, common=common)
    text = comparison_markdown(runs, trees, questions)
    if markdown is not None:
        markdown.parent.mkdir(parents=True, exist_ok=True)
        markdown.write_text(text, encoding="utf-8")
    if plot is not None:
        plot_comparison(runs, trees, plot)
    return text
