"""Comparing QuALITY runs (``hoptree eval quality-report``).

What the comparison must answer (issue 25): does the tree help on long documents here, and does
Leiden beat GMM at fewer summary nodes? So it shows accuracy and HARD accuracy per pipeline on
the questions every run finished, the share of the reader's context that came from summary
layers, the trees' cost per clustering method (summary nodes, LLM calls, build time), the gains
of each tree over the same leaves without it beside what the papers report, and one chart.
One run's means, tree totals and report are ``evals.quality.report``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evals.pipelines import DEFAULT_CONTEXT_TOKENS
from evals.quality.report import (
    entry_key,
    fmt,
    mean_of,
    pct,
    plot_bars,
    read_trees,
    rescore,
    save_figure,
    tree_name,
    tree_rows,
    tree_totals,
    variant_label,
)
from evals.report import ReportError, load_metrics, read_details

# What the papers report, as issue 25 quotes them: the relative gains are the comparison, a
# 1.5B reader will not reach their absolute numbers.
PAPERS = [
    ("RAPTOR (Sarthi et al.): tree minus the same retriever without it, QuALITY", "+2 to +6.7"),
    ("Enhanced RAPTOR (Liu et al.): Leiden minus GMM on the same leaves, QuALITY", "+10.3"),
    ("Enhanced RAPTOR: summary nodes, Leiden vs GMM", "34 vs 141 (-76%)"),
]
PIPELINE_ORDER = ("leaves", "bm25", "tree-gmm", "tree-leiden", "full")


def _ordered(runs: Sequence[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    """The paper's order by pipeline, each variant or second run after its pipeline's run."""
    rank = {name: i for i, name in enumerate(PIPELINE_ORDER)}
    return sorted(runs, key=lambda run: (rank.get(str(run[1].get("pipeline")), 99), run[0]))


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


def articles_split(runs: dict[str, dict[str, Any]], a: str, b: str) -> str:
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
        mean = pct(mean_of(shares)) if shares else None
        cells.append(f"{fmt(mean)}% ({with_any} of {len(ids)})" if ids else "n/a")
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
        cells = " | ".join(fmt(score.get(article), 0) for score in scores)
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
            f"| {label} | {m.get('n')} | {fmt(m.get('accuracy'))} | "
            f"{fmt(m.get('accuracy_hard'))} ({m.get('hard_n')}) | "
            f"{fmt(m.get('summary_share'))}% | {fmt(m.get('llm_calls_per_question'), 2)} | "
            f"{fmt(m.get('seconds_per_question'))} | {m.get('errors', 0)} |"
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
            f"{articles_split(by_name, a, b)} | {paper} |"
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
                f"{fmt(t['summary_nodes_per_article'])} | {fmt(t['mean_children'], 2)} | "
                f"{fmt(t['compression'], 3)} | {t['llm_calls']} | "
                f"{t['prompt_tokens']} + {t['completion_tokens']} | "
                f"{fmt(t['build_seconds'], 0)} ({t['timed_builds']}) |"
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
                f"nodes against GMM's {gmm} ({fmt(reduction)}% fewer; "
                f"{PAPERS[2][0].split(': ')[0]} reports {PAPERS[2][1]}).",
            ]
        lines += ["", *tree_rows(trees)]
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
    return save_figure(figure, path)


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
