"""Running one QuALITY pipeline over a question file: article by article, resumable, scored.

The same run directory as every evaluation (``evals.run_directory.RunDirectory``): ``run.json`` says
what it measures, ``details.jsonl`` gets one flushed line per finished question, and a rerun
skips the ids already there, so a killed run resumes without repeating a question. Questions
run article by article: the article's corpus (leaf index, and the tree the pipeline searches) is
prepared first, which for a tree pipeline means building the tree the first time (minutes to an
hour on the local model; resumable, and reused by every later run). The tree's size and cost go
to ``trees.json``; ``metrics.json`` holds accuracy, HARD accuracy, the summary share of the
context and the trees' totals; ``report.md`` and ``metrics.png`` show them.

A question whose reader names no option is a row with an ``error`` (scored wrong), not the end
of the run; a corpus that cannot be prepared (no embedding model, a tree build held by another
process) stops the run before its questions, to be resumed.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from pathlib import Path
from typing import Any

from rich.console import Console

from evals.corpora import CorpusSetupError
from evals.pipelines import EvalContext, SpentError
from evals.quality.corpora import (
    LEAF_EMBEDDING,
    ArticleCorpus,
    TreeLog,
    check_tree_options,
    parse_tree_options,
    prepare_article,
    tree_config,
)
from evals.quality.data import LETTERS, Article, ChoiceQuestion, load_articles, select_questions
from evals.quality.pipelines import ChoiceOutput, QualityPipeline, get_quality_pipeline
from evals.quality.report import TREES_FILE, rescore, tree_totals, write_run_report
from evals.report import METRICS_FILE
from evals.run_directory import (
    EvalRunError,
    RunConfig,
    RunDirectory,
    append_row,
    dataset_label,
    run_fields,
)
from searchers.corpus import file_sha256
from searchers.index_dir import now_iso
from tree.build import BuildEvent, ProgressFn

log = logging.getLogger(__name__)

SETTING = "article"  # each article is its own corpus
# What a QuALITY run directory measures; a rerun must agree on all of these.
IDENTITY_KEYS = (
    "dataset_sha256", "format", "pipeline", "context_tokens", "model", "tree", "leaf_embedding",
)  # fmt: skip


def check_config(config: RunConfig) -> None:
    """Options of ``hoptree eval run`` that mean nothing here are refused, not ignored."""
    config.check()
    if config.setting != "open":
        raise EvalRunError("QuALITY runs search each article on its own; --setting does not apply")
    if config.index is not None:
        raise EvalRunError("QuALITY runs build an index per article; --index does not apply")
    if config.types:
        raise EvalRunError("QuALITY questions have no type; --type does not apply")
    tree_options(config)


def tree_options(config: RunConfig) -> dict[str, Any]:
    """The run's ``--tree-option`` settings, checked against its pipeline's clustering."""
    spec = get_quality_pipeline(config.pipeline)
    try:
        options = parse_tree_options(config.tree_options)
        if options and spec.clustering is None:
            raise EvalRunError(f"pipeline {spec.name} builds no tree; --tree-option does not apply")
        if spec.clustering is not None:
            check_tree_options(spec.clustering, options)
    except CorpusSetupError as exc:
        raise EvalRunError(str(exc)) from exc
    return options


def choice_row(question: ChoiceQuestion, output: ChoiceOutput) -> dict[str, Any]:
    """The details row of one question. ``em``/``f1``/``acc`` all hold correctness, so the
    shared aggregation, ``eval compare`` and the per-``type`` means (hard/easy) apply as is."""
    correct = int(output.chosen == question.gold)
    context_tokens = sum(int(c["tokens"]) for c in output.context)
    summary = [c for c in output.context if int(c["layer"]) > 0]
    return {
        "id": question.id,
        "article_id": question.article_id,
        "question": question.question,
        "options": list(question.options),
        "answers": [question.gold_letter],
        "gold": question.gold,
        "prediction": output.letter,
        "chosen": output.chosen,
        "correct": correct,
        "hard": question.hard,
        "type": question.kind,
        "em": correct,
        "f1": float(correct),
        "acc": correct,
        "retrieval_success": None,
        "gold_recall": None,
        "context": output.context,
        "context_tokens": context_tokens,
        "summary_nodes": len(summary),
        "summary_tokens": sum(int(c["tokens"]) for c in summary),
        "summary_share": (
            round(sum(int(c["tokens"]) for c in summary) / context_tokens, 4)
            if context_tokens
            else None
        ),
        "reply": output.reply,
        **run_fields(output),
    }


def _failed(exc: BaseException, started: float, spent: Any = None) -> ChoiceOutput:
    return ChoiceOutput(
        chosen=None,
        llm_calls=(spent.calls + spent.errors) if spent is not None else 0,
        prompt_tokens=spent.prompt_tokens if spent is not None else 0,
        completion_tokens=spent.completion_tokens if spent is not None else 0,
        seconds=time.monotonic() - started,
        error=f"{type(exc).__name__}: {' '.join(str(exc).split())[:500]}",
    )


class QualityProgress:
    """One line per finished question on stderr (a long run lives in the background, where a
    bar writes nothing), with the running accuracy; and a line per tree-building step."""

    def __init__(self, label: str, total: int, rows: list[dict[str, Any]], enabled: bool):
        self.label, self.total, self.enabled = label, total, enabled
        self.done = len(rows)
        self.correct = sum(int(r["correct"]) for r in rows)
        self.hard = [int(r["correct"]) for r in rows if r.get("hard") is True]
        self.console = Console(stderr=True, highlight=False, soft_wrap=True)

    def note(self, message: str) -> None:
        if self.enabled:
            self.console.print(f"[{time.strftime('%H:%M:%S')}] {message}")

    def add(self, row: dict[str, Any]) -> None:
        self.done += 1
        self.correct += int(row["correct"])
        if row.get("hard") is True:
            self.hard.append(int(row["correct"]))
        hard = f"{100 * sum(self.hard) / len(self.hard):.1f}" if self.hard else "-"
        mark = "right" if row["correct"] else ("no option" if row["chosen"] is None else "wrong")
        gold = LETTERS[int(row["gold"]) - 1]
        self.note(
            f"{self.label} [{self.done}/{self.total}] {row['id']}: gold {gold}, chose "
            f"{row['prediction'] or '-'} ({mark}); {row['llm_calls']} calls "
            f"{row['seconds']:.0f} s | accuracy {100 * self.correct / self.done:.1f}, HARD {hard}"
        )

    def tree_events(self, article: Article, clustering: str) -> ProgressFn:
        def on_event(event: BuildEvent) -> None:
            where = f"{self.label}: {article.id} tree ({clustering})"
            if event.stage == "cluster":
                self.note(f"{where}: clustering {event.total} nodes of layer {event.layer}")
            elif (
                event.stage == "summaries"
                and event.done
                and (event.done == event.total or event.done % 5 == 0)
            ):
                self.note(f"{where}: layer {event.layer} summaries {event.done}/{event.total}")
            elif event.stage == "layer":
                self.note(f"{where}: layer {event.layer} done, {event.done} nodes")

        return on_event


async def _run_article(
    spec: QualityPipeline,
    ctx: EvalContext,
    corpus: ArticleCorpus,
    questions: list[ChoiceQuestion],
    semaphore: asyncio.Semaphore,
    record: Any,
) -> None:
    async def one(question: ChoiceQuestion) -> None:
        async with semaphore:
            started = time.monotonic()
            try:
                output = await spec.run(ctx, corpus, question)
            except SpentError as failure:
                log.warning("question %s failed: %s", question.id, failure.cause)
                output = _failed(failure.cause, started, failure.usage)
            except Exception as exc:  # this question failed; the run goes on
                log.warning("question %s failed: %s", question.id, exc)
                output = _failed(exc, started)
            record(choice_row(question, output))

    async with asyncio.TaskGroup() as group:
        for question in questions:
            group.create_task(one(question))


async def run_quality(
    config: RunConfig, ctx: EvalContext, *, progress: bool | None = None
) -> dict[str, Any]:
    """Run what is not finished, then write ``metrics.json``, ``report.md`` and the chart;
    returns the metrics. ``progress``: lines on stderr (default: as ``config.progress`` says,
    else on)."""
    started_at = now_iso()
    wall = time.monotonic()
    check_config(config)
    spec = get_quality_pipeline(config.pipeline)
    dataset = Path(config.dataset)
    articles = load_articles(dataset)
    questions = select_questions(articles, config.offset, config.limit)
    sha256 = file_sha256(dataset)
    options = tree_options(config)
    tree = tree_config(ctx.settings, spec.clustering, options).shape() if spec.clustering else None
    identity = {
        "dataset_sha256": sha256,
        "dataset": dataset_label(dataset),
        "format": "quality",
        "setting": SETTING,
        "pipeline": spec.name,
        "context_tokens": ctx.context_tokens,
        "model": ctx.model_label,
        "tree": tree,
        # dense pipelines: what a leaf's vector embeds (runs before it embedded the title too)
        "leaf_embedding": LEAF_EMBEDDING if "dense" in spec.needs else None,
    }
    out = Path(config.out)
    run_dir = RunDirectory(out)
    run_dir.claim(identity, IDENTITY_KEYS)
    finished = run_dir.finished()
    pending = [q for q in questions if q.id not in finished]
    trees = TreeLog.open(out / TREES_FILE)
    enabled = progress if progress is not None else config.progress is not False
    done_rows = [finished[q.id] for q in questions if q.id in finished]
    lines = QualityProgress(spec.name, len(questions), done_rows, enabled)

    if pending:
        semaphore = asyncio.Semaphore(config.concurrency)
        with run_dir.open_for_append() as handle:

            def record(row: dict[str, Any]) -> None:
                append_row(handle, row)
                finished[row["id"]] = row
                lines.add(row)

            for article in articles:
                todo = [q for q in pending if q.article_id == article.id]
                if not todo:
                    continue
                lines.note(f"{spec.name}: article {article.id} ({article.title}), {len(todo)} q")
                corpus = await prepare_article(
                    ctx.settings,
                    ctx.chat,
                    ctx.embeddings,
                    article,
                    spec.needs,
                    clustering=spec.clustering,
                    tree_options=options,
                    context_tokens=ctx.context_tokens,
                    progress=lines.tree_events(article, spec.clustering or ""),
                )
                if corpus.tree_stats is not None:
                    trees.add(corpus.tree_stats)
                try:
                    await _run_article(spec, ctx, corpus, todo, semaphore, record)
                except ExceptionGroup as group_error:  # one() catches per question
                    raise group_error.exceptions[0] from None

    rows = [finished[q.id] for q in questions if q.id in finished]
    selected = {q.article_id for q in questions}
    tree_entries = [e for e in trees.entries.values() if str(e["article_id"]) in selected]
    metrics = {
        **rescore(rows),
        "pipeline": spec.name,
        "dataset": identity["dataset"],
        "dataset_sha256": sha256,
        "format": "quality",
        "setting": SETTING,
        "model": ctx.model_label,
        "context_tokens": ctx.context_tokens,
        "clustering": spec.clustering,
        "tree_options": options,
        "trees": tree_totals(tree_entries),
        "limit": config.limit,
        "offset": config.offset,
        "concurrency": config.concurrency,
        "ran_now": len(pending),
        "wall_seconds": round(time.monotonic() - wall, 2),
        "started": started_at,
        "finished": now_iso(),
        "resumed": len(pending) < len(rows),
        "scale": "percent",
    }
    tmp = out / f".{METRICS_FILE}.tmp"
    tmp.write_text(json.dumps(metrics, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(out / METRICS_FILE)
    await asyncio.to_thread(
        write_run_report, out, metrics, tree_entries, [r for r in rows if r.get("error")]
    )
    return metrics
