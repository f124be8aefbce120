"""Running one pipeline over one question file: resumable, bounded, scored as it goes.

An evaluation of the planner with the local model takes minutes per question, so a run must
survive being killed: every finished question is appended to ``details.jsonl`` at once (one
line, flushed), and a rerun into the same directory skips the ids already there and never runs
one twice. A line cut short by a kill is dropped and that question runs again. ``run.json``
records what the directory measures (dataset by content hash, setting, pipeline, k, model), and
a rerun that would mix in another configuration is refused rather than averaged in (the run
directory, and what it shares with QuALITY runs, is ``evals.run_directory``; scoring a question
and the run itself are here).

``--limit N`` selects the file's first N questions; metrics cover exactly that selection, so
``--limit 2`` then ``--limit 3`` runs one new question and reports three. ``--offset M`` skips
the first M (``--offset 50 --limit 50``: questions 51-100, a slice kept apart from tuning).

The open setting indexes the union of the file's paragraphs once, under
``<data_dir>/eval-indexes/<sha256 of the file>``, and every later run on the same file reuses
it. The distractor setting builds a tiny index per question from its own paragraphs.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from agent.runtime.usage import StepUsage
from evals.aggregate import aggregate
from evals.catalogue import get_pipeline
from evals.corpora import (
    Corpus,
    CorpusSetupError,
    check_distractor_needs,
    distractor_corpus,
    ensure_open_index,
    eval_index_dir,
    open_corpus,
)
from evals.datasets import EvalQuestion, load_questions, resolve_format
from evals.metrics import (
    answer_scores,
    gold_recall,
    hop_recall,
    retrieval_success,
    unmatched_queries,
)
from evals.paired import pipeline_role
from evals.pipelines import (
    EvalContext,
    PipelineError,
    PipelineOutput,
    PipelineSpec,
    SpentError,
    usage_output,
)
from evals.provenance import code_version
from evals.report import (
    METRICS_FILE,
    ReportError,
    load_metrics,
    read_details,
    write_report,
)
from evals.run_directory import (
    RUN_FILE,
    EvalRunError,
    RunConfig,
    RunDirectory,
    append_row,
    dataset_label,
    pipeline_planner,
    planner_overrides,
    planner_values,
    run_fields,
)
from searchers.corpus import file_sha256
from searchers.index_dir import now_iso
from searchers.index_generation import BuildProgress, embedding_dimension
from searchers.registry import SearcherRegistryError

log = logging.getLogger(__name__)

# Opens the progress display of an index build (``agent.indexing.build_progress`` fits).
IndexProgress = Callable[[], AbstractContextManager[BuildProgress]]
# Errors that say the run is set up wrong (not that one question went badly).
SETUP_ERRORS: tuple[type[Exception], ...] = (CorpusSetupError, PipelineError, SearcherRegistryError)


# --------------------------------------------------------------------------- scoring


def _gold_recall(question: EvalQuestion, output: PipelineOutput) -> float | None:
    """By title, as always; by id where titles repeat across paragraphs (MuSiQue) and the
    pipeline reported ids, else a distractor sharing a gold title would count as gold."""
    if not question.titles_identify_paragraphs and output.retrieved_ids:
        return gold_recall(question.supporting_ids, output.retrieved_ids)
    return gold_recall(question.supporting_titles, output.retrieved_titles)


def _hop_fields(question: EvalQuestion, output: PipelineOutput, retrieves: bool) -> dict[str, Any]:
    """``hop_recall`` (None without gold hops, for a pipeline that retrieves nothing, and for
    one that retrieved passages but reported no ids: unknown, not zero) and, when the output
    lists each planned query's passages, ``hop_queries_unmatched``."""
    reported = bool(output.retrieved_ids) or not output.retrieved_titles
    recall = (
        hop_recall(question.gold_hops, output.retrieved_ids) if retrieves and reported else None
    )
    fields: dict[str, Any] = {"hop_recall": recall}
    if retrieves and question.gold_hops and output.query_passage_ids:
        fields["hop_queries_unmatched"] = unmatched_queries(
            question.gold_hops, output.query_passage_ids
        )
    return fields


def score(
    question: EvalQuestion, output: PipelineOutput, *, retrieves: bool = True
) -> dict[str, Any]:
    """The details row of one finished question. A pipeline that ``retrieves`` nothing by
    design gets no retrieval scores (None, "n/a" in tables): a 0 would read as a search that
    failed on every question."""
    scores = answer_scores(output.prediction, question.answers)
    return {
        "id": question.id,
        "question": question.question,
        "type": question.type,
        "answers": question.answers,
        "prediction": output.prediction,
        "em": scores["em"],
        "f1": round(scores["f1"], 4),
        "acc": scores["acc"],
        "retrieval_success": (
            retrieval_success(question.answers, output.contexts) if retrieves else None
        ),
        "gold_recall": _gold_recall(question, output) if retrieves else None,
        **_hop_fields(question, output, retrieves),
        "supporting_titles": question.supporting_titles,
        "retrieved_titles": list(dict.fromkeys(output.retrieved_titles)),
        **run_fields(output),
    }


# --------------------------------------------------------------------------- progress


class RunProgress:
    """The running EM/F1 of every finished question of the selection, on stderr: a bar on a
    terminal, and one plain line per question otherwise, because a run left in the background
    (nohup, CI) must still say how far it got; a bar writes nothing there."""

    def __init__(
        self,
        label: str,
        total: int,
        rows: Sequence[dict[str, Any]],
        enabled: bool,
        lines: bool = False,
    ):
        self.label = label
        self.total = total
        self.em = sum(r["em"] for r in rows)
        self.f1 = sum(r["f1"] for r in rows)
        self.done = len(rows)
        self.lines = lines and not enabled
        self.console = Console(stderr=True, highlight=False, soft_wrap=True)
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=self.console,
            disable=not enabled,
        )
        self.task = self.progress.add_task(self._description(), total=total, completed=self.done)

    def _description(self) -> str:
        if not self.done:
            return f"{self.label}  EM  -   F1  -  "
        return (
            f"{self.label}  EM {100 * self.em / self.done:5.1f}  "
            f"F1 {100 * self.f1 / self.done:5.1f}"
        )

    def add(self, row: dict[str, Any]) -> None:
        self.done += 1
        self.em += row["em"]
        self.f1 += row["f1"]
        self.progress.update(self.task, advance=1, description=self._description())
        if self.lines:
            error = f"  error: {row['error']}" if row.get("error") else ""
            self.console.print(
                f"[{self.done}/{self.total}] {row['id']}  em {row['em']:.0f} f1 {row['f1']:.2f}  "
                f"{row.get('llm_calls', 0)} calls {row.get('seconds', 0):.0f} s  |  "
                f"{self._description()}{error}"
            )

    def __enter__(self) -> RunProgress:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()


# --------------------------------------------------------------------------- the run


def _first_leaf(error: BaseException) -> BaseException:
    """The first real exception inside (nested) exception groups."""
    for _depth in range(100):
        if not isinstance(error, BaseExceptionGroup) or not error.exceptions:
            break
        error = error.exceptions[0]
    return error


def _failed(exc: BaseException, started: float, spent: StepUsage | None = None) -> PipelineOutput:
    error = f"{type(exc).__name__}: {' '.join(str(exc).split())[:500]}"
    return usage_output("", spent or StepUsage(), started, error=error)


async def _prepare_open(
    config: RunConfig,
    ctx: EvalContext,
    spec: PipelineSpec,
    fmt: str,
    sha256: str,
    index_progress: IndexProgress | None,
) -> Corpus:
    if not spec.needs:  # closed book, the oracle: no retriever, so no index to build
        return Corpus(name="none", retrievers={})
    index_dir = config.index
    if index_dir is None:
        index_dir = eval_index_dir(ctx.settings, sha256)
        # The build's bars live only while it runs: the run's own bar comes after.
        with index_progress() if index_progress else contextlib.nullcontext() as bar:
            await asyncio.to_thread(
                ensure_open_index,
                ctx.settings,
                config.dataset,
                fmt,
                index_dir,
                embeddings=ctx.embeddings,
                progress=bar,
            )
    return await asyncio.to_thread(
        open_corpus, ctx.settings, Path(index_dir), spec.needs, embeddings=ctx.embeddings
    )


def check_config(config: RunConfig) -> None:
    """A question-file run's options; ``--tree-option`` belongs to QuALITY runs only."""
    config.check()
    if config.tree_options:
        raise EvalRunError("--tree-option applies to QuALITY runs only")


def select_types(questions: list[EvalQuestion], config: RunConfig) -> list[EvalQuestion]:
    """The questions of ``config.types`` (all when none are named): tuning one shape of
    question (2Wiki's "inference", MuSiQue's "4hop") costs a fraction of the slice."""
    if not config.types:
        return questions
    chosen = [q for q in questions if q.type in config.types]
    if not chosen:
        present = sorted({q.type for q in questions if q.type})
        raise EvalRunError(
            f"no question of type {', '.join(config.types)} in the selection; its types: "
            f"{', '.join(present) or 'none recorded'}"
        )
    return chosen


async def run_eval(
    config: RunConfig,
    ctx: EvalContext,
    *,
    index_progress: IndexProgress | None = None,
) -> dict[str, Any]:
    """Run what is not finished yet, then write ``metrics.json``, ``report.md`` and the chart.
    Returns the metrics. Raises ``EvalRunError``, ``PipelineError``, ``DatasetError`` or
    ``CorpusSetupError`` before any question runs; a question that fails is a row with an
    error (scored zero), not the end of the run."""
    started_at = now_iso()
    wall = time.monotonic()
    # the code this process runs is the checkout as it was when it started (modules are
    # imported by now); ``code_version`` is cached, so a commit made while the run goes on
    # does not relabel its later rows
    code_version()
    check_config(config)
    spec = get_pipeline(config.pipeline)
    if spec.needs_embeddings and ctx.embeddings is None:
        raise PipelineError(f"pipeline {spec.name} needs the embedding model")
    dataset = Path(config.dataset)
    fmt = resolve_format(dataset, config.fmt)
    end = None if config.limit is None else config.offset + config.limit
    questions = select_types(load_questions(dataset, fmt, limit=end)[config.offset :], config)
    sha256 = file_sha256(dataset)
    identity = {
        "dataset_sha256": sha256,
        "dataset": dataset_label(dataset),
        "format": fmt,
        "setting": config.setting,
        "pipeline": spec.name,
        "k": ctx.k,
        "passage_chars": ctx.chars,
        "model": ctx.model_label,
    }
    if pipeline_role(spec.name) == "agent" and spec.reads_planner:
        overrides = planner_overrides(ctx.settings)
        if overrides:
            identity["planner"] = overrides
        identity["planner_settings"] = planner_values(ctx.settings)
        if spec.planner_switches:
            identity["pipeline_planner"] = pipeline_planner(spec.planner_switches)
    run_dir = RunDirectory(config.out)
    run_dir.claim(identity)
    finished = run_dir.finished()
    pending = [q for q in questions if q.id not in finished]

    if pending:
        corpus: Corpus | None = None
        dimension: int | None = None
        if config.setting == "open":
            corpus = await _prepare_open(config, ctx, spec, fmt, sha256, index_progress)
        else:
            check_distractor_needs(spec.needs, ctx.embeddings)
            if "dense" in spec.needs and ctx.embeddings is not None:
                dimension = await asyncio.to_thread(embedding_dimension, ctx.embeddings)
        semaphore = asyncio.Semaphore(config.concurrency)
        done_rows = [finished[q.id] for q in questions if q.id in finished]
        enabled = sys.stderr.isatty() if config.progress is None else config.progress
        lines = config.progress is None and not enabled

        async def answer(question: EvalQuestion) -> PipelineOutput:
            if corpus is not None:
                return await spec.run(ctx, corpus, question)
            with tempfile.TemporaryDirectory(prefix="hoptree-distractor-") as workdir:
                own = await asyncio.to_thread(
                    distractor_corpus,
                    question,
                    spec.needs,
                    Path(workdir),
                    embeddings=ctx.embeddings,
                    dimension=dimension,
                )
                return await spec.run(ctx, own, question)

        with (
            run_dir.open_for_append() as handle,
            RunProgress(spec.name, len(questions), done_rows, enabled, lines) as progress,
        ):

            async def one(question: EvalQuestion) -> None:
                async with semaphore:
                    started = time.monotonic()
                    spent: StepUsage | None = None
                    try:
                        try:
                            output = await answer(question)
                        except SpentError as failure:
                            spent = failure.usage
                            raise failure.cause from None
                    except SETUP_ERRORS:
                        raise  # wrong for every question alike: stop the run
                    except Exception as exc:  # this question failed; the run goes on
                        log.warning("question %s failed: %s", question.id, exc)
                        output = _failed(exc, started, spent)
                    row = score(question, output, retrieves=spec.scores_context)
                    if config.batch:
                        row["batch"] = config.batch
                    append_row(handle, row)
                    finished[question.id] = row
                    progress.add(row)

            try:
                async with asyncio.TaskGroup() as group:  # one failing cancels the others
                    for question in pending:
                        group.create_task(one(question))
            except ExceptionGroup as group_error:
                raise _first_leaf(group_error) from None

    rows = [finished[q.id] for q in questions if q.id in finished]
    return await asyncio.to_thread(
        _write_metrics,
        config,
        rows,
        identity,
        ran_now=len(pending),
        wall_seconds=time.monotonic() - wall,
        started_at=started_at,
        concurrency=config.concurrency,
    )


def _write_metrics(
    config: RunConfig,
    rows: list[dict[str, Any]],
    identity: dict[str, Any],
    *,
    ran_now: int,
    wall_seconds: float,
    started_at: str,
    concurrency: int | None,
    metrics_only: bool = False,
) -> dict[str, Any]:
    """``metrics.json``, ``report.md`` and the chart over ``rows`` (the selection's finished
    questions); ``identity`` is what ``run.json`` records for the run. ``concurrency``: how
    many questions the run answered at once (None when a rescoring cannot know)."""
    metrics = {
        **aggregate(rows),
        "pipeline": identity["pipeline"],
        "dataset": identity["dataset"],
        "dataset_sha256": identity["dataset_sha256"],
        "format": identity["format"],
        "setting": identity["setting"],
        "model": identity["model"],
        "k": identity["k"],
        "passage_chars": identity["passage_chars"],
        "limit": config.limit,
        "offset": config.offset,
        **({"types": list(config.types)} if config.types else {}),
        "concurrency": concurrency,
        "ran_now": ran_now,
        "wall_seconds": round(wall_seconds, 2),
        "started": started_at,
        "finished": now_iso(),
        # A resumed run's ``started`` is this resume; the first row's time says when it began.
        "resumed": ran_now < len(rows),
        "first_row_at": min(
            (str(r["finished_at"]) for r in rows if r.get("finished_at")), default=None
        ),
        "scale": "percent",
        **({"metrics_only": True} if metrics_only else {}),
    }
    out = Path(config.out)
    tmp = out / f".{METRICS_FILE}.tmp"
    tmp.write_text(json.dumps(metrics, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(out / METRICS_FILE)
    write_report(out, metrics, [r for r in rows if r.get("error")])
    return metrics


def _finished_prefix(questions: Sequence[EvalQuestion], finished: dict[str, Any]) -> int:
    """How many of ``questions``, in file order, are finished before the first that is not
    (a run of two questions at once finishes them out of order, so its rows can have holes)."""
    count = 0
    for question in questions:
        if question.id not in finished:
            break
        count += 1
    return count


def write_metrics_only(config: RunConfig) -> dict[str, Any]:
    """``--metrics-only``: rewrite the metrics of a stopped run over its finished rows, running
    nothing and starting no model, so partial rows can be committed with their tables. The
    selection (``--offset``, ``--limit``, ``--type``) must be finished; if it is not, the error
    names the ``--limit`` that covers the longest finished prefix."""
    started_at = now_iso()
    check_config(config)
    spec = get_pipeline(config.pipeline)
    run_dir = RunDirectory(config.out)
    recorded = run_dir.recorded()
    if recorded is None:
        raise EvalRunError(f"{config.out}: no {RUN_FILE}; nothing was run there yet")
    dataset = Path(config.dataset)
    fmt = resolve_format(dataset, config.fmt)
    # what can be told without a model (its label, k and passage budget are the recorded ones)
    here = {
        "dataset_sha256": file_sha256(dataset),
        "format": fmt,
        "setting": config.setting,
        "pipeline": spec.name,
    }
    run_dir.check_same(recorded, here, tuple(here))
    end = None if config.limit is None else config.offset + config.limit
    questions = select_types(load_questions(dataset, fmt, limit=end)[config.offset :], config)
    # read without cutting a torn tail: the run may still be appending to the file
    finished: dict[str, dict[str, Any]] = {}
    if run_dir.details_path.is_file():
        try:
            finished = {row["id"]: row for row in read_details(run_dir.path)}
        except ReportError as exc:
            raise EvalRunError(str(exc)) from exc
    missing = [q for q in questions if q.id not in finished]
    if missing:
        prefix = _finished_prefix(questions, finished)
        hint = (
            f"; the first {prefix} are all finished: --limit {prefix}"
            if prefix and not config.types
            else ""
        )
        raise EvalRunError(
            f"{len(missing)} of the {len(questions)} selected questions are not finished in "
            f"{config.out}{hint}"
        )
    rows = [finished[q.id] for q in questions]
    # the questions ran at the concurrency the run's last metrics recorded, not at this
    # command's (unknown, null, when the run stopped before writing any)
    earlier: dict[str, Any] = {}
    with contextlib.suppress(ReportError):
        earlier = load_metrics(run_dir.path)
    return _write_metrics(
        config,
        rows,
        recorded,
        ran_now=0,
        wall_seconds=0.0,
        started_at=started_at,
        concurrency=earlier.get("concurrency"),
        metrics_only=True,
    )
